/* Which nodes node animation moves (docs/formats/dem.md, "Node animation"): the
 * writers whose formats animate only joints (.dem) turn the nodes that move
 * rigid meshes into joints, and must leave models without such animation
 * exactly as they were. */
#include <math.h>

#include "meshfs/scene.h"

/* Tolerance for "a key equals the rest value": float rounding of a value
 * an exporter copied from the node's own matrix, not a motion. */
#define SAME_EPS 1e-6

static int vec_same(const float a[3], const float b[3])
{
    for (int i = 0; i < 3; i++)
        if (!(fabs((double)a[i] - b[i]) <= SAME_EPS * fmax(1.0, fabs((double)b[i]))))
            return 0;
    return 1;
}

/* q and -q are one rotation. */
static int quat_same(const float a[4], const float b[4])
{
    double dp = 0, dm = 0;
    for (int i = 0; i < 4; i++) {
        dp = fmax(dp, fabs((double)a[i] - b[i]));
        dm = fmax(dm, fabs((double)a[i] + b[i]));
    }
    return fmin(dp, dm) <= SAME_EPS;
}

/* Whether channel c puts its node anywhere but at its rest local matrix. */
static int channel_moves(const mfs_channel *c, const mfs_mat4 *rest)
{
    float t[3], q[4], s[3];
    if (mfs_mat4_decompose(rest, t, q, s) < 0)
        return c->n_pos || c->n_rot || c->n_scale;
    for (uint32_t k = 0; k < c->n_pos; k++)
        if (!vec_same(c->pos[k].v, t))
            return 1;
    for (uint32_t k = 0; k < c->n_rot; k++)
        if (!quat_same(c->rot[k].q, q))
            return 1;
    for (uint32_t k = 0; k < c->n_scale; k++)
        if (!vec_same(c->scale[k].v, s))
            return 1;
    return 0;
}

uint32_t mfs_scene_moved_nodes(const mfs_scene *s, unsigned char *moved)
{
    uint32_t animated = 0;
    for (uint32_t n = 0; n < s->n_nodes; n++)
        moved[n] = 0;
    for (uint32_t a = 0; a < s->n_animations; a++)
        for (uint32_t c = 0; c < s->animations[a].n_channels; c++) {
            const mfs_channel *ch = &s->animations[a].channels[c];
            if (ch->node < 0 || (uint32_t)ch->node >= s->n_nodes || moved[ch->node])
                continue;
            if (channel_moves(ch, &s->nodes[ch->node].local)) {
                moved[ch->node] = 1;
                animated++;
            }
        }
    /* pre-order: a parent is settled before its children */
    for (uint32_t n = 0; n < s->n_nodes; n++)
        if (!moved[n] && s->nodes[n].parent >= 0 && moved[s->nodes[n].parent])
            moved[n] = 1;
    return animated;
}

/* The skeleton the skinned writers share (docs/formats/gmf.md "Skeleton",
 * docs/formats/vrt.md "Bone order"): one rule, so .gmf bone ids and .vrt
 * bone indices name the same joints in the same order. */
#include "meshfs/scene.h"

int mfs_mesh_is_skinned(const mfs_mesh *m)
{
    for (uint32_t b = 0; b < m->n_bones; b++)
        if (m->bones[b].node >= 0)
            return 1;
    return 0;
}

void mfs_scene_depths(const mfs_scene *s, uint32_t *depth)
{
    /* pre-order: a parent's depth is known before its children's */
    for (uint32_t n = 0; n < s->n_nodes; n++)
        depth[n] = s->nodes[n].parent < 0 ? 0 : depth[s->nodes[n].parent] + 1;
}

int32_t mfs_scene_lca(const mfs_scene *s, const uint32_t *depth, int32_t a, int32_t b)
{
    while (depth[a] > depth[b])
        a = s->nodes[a].parent;
    while (depth[b] > depth[a])
        b = s->nodes[b].parent;
    while (a != b) {
        a = s->nodes[a].parent;
        b = s->nodes[b].parent;
    }
    return a;
}

uint32_t mfs_scene_mark_skeleton(const mfs_scene *s, const uint32_t *depth,
                                 const unsigned char *use, int32_t *mark)
{
    int32_t top = -1;
    for (uint32_t n = 0; n < s->n_nodes; n++)
        mark[n] = -1;
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        if (use && !use[i])
            continue;
        const mfs_mesh *m = &s->meshes[i];
        for (uint32_t b = 0; b < m->n_bones; b++) {
            int32_t n = m->bones[b].node;
            if (n < 0)
                continue;
            mark[n] = 0;
            top = top < 0 ? n : mfs_scene_lca(s, depth, top, n);
        }
    }
    if (top < 0)
        return 0;
    /* the nodes between each joint and the top are joints too: a bone's
     * parent chain must be unbroken for the skeleton to pose it */
    for (uint32_t n = 0; n < s->n_nodes; n++) {
        if (mark[n] != 0 || (int32_t)n == top)
            continue;
        for (int32_t p = s->nodes[n].parent; p != top && p >= 0 && mark[p] < 0;
             p = s->nodes[p].parent)
            mark[p] = 0;
    }
    uint32_t count = 0;
    for (uint32_t n = 0; n < s->n_nodes; n++)
        count += mark[n] == 0;
    return count;
}

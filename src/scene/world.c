/* Model-space placement derived from the node tree. */
#include <float.h>
#include <stdlib.h>

#include "meshfs/scene.h"

void mfs_scene_world(const mfs_scene *s, mfs_mat4 *world)
{
    /* Pre-order guarantees a parent's world matrix is ready first. */
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const mfs_node *n = &s->nodes[i];
        if (n->parent < 0)
            world[i] = n->local;
        else
            mfs_mat4_mul(&world[i], &world[n->parent], &n->local);
    }
}

void mfs_scene_mesh_nodes(const mfs_scene *s, int32_t *out)
{
    for (uint32_t i = 0; i < s->n_meshes; i++)
        out[i] = -1;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++) {
            uint32_t m = s->nodes[i].meshes[k];
            if (m < s->n_meshes && out[m] < 0)
                out[m] = (int32_t)i;
        }
}

static void grow(const mfs_mesh *m, const mfs_mat4 *w, float min[3], float max[3], int *any,
                 int triangles_only)
{
    if (triangles_only && m->prim != MFS_PRIM_TRIANGLES)
        return;
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        float p[3];
        mfs_mat4_point(w, m->positions[v], p);
        for (int k = 0; k < 3; k++) {
            if (p[k] < min[k])
                min[k] = p[k];
            if (p[k] > max[k])
                max[k] = p[k];
        }
        *any = 1;
    }
}

int mfs_scene_bounds(const mfs_scene *s, int triangles_only, float min[3], float max[3])
{
    mfs_mat4 *world = malloc(sizeof(mfs_mat4) * (s->n_nodes ? s->n_nodes : 1));
    int32_t *mn = malloc(sizeof(int32_t) * (s->n_meshes ? s->n_meshes : 1));
    int any = 0;
    if (!world || !mn)
        goto out;
    mfs_scene_world(s, world);
    mfs_scene_mesh_nodes(s, mn);
    for (int k = 0; k < 3; k++) {
        min[k] = FLT_MAX;
        max[k] = -FLT_MAX;
    }
    /* every placement of every mesh; a mesh no node places, where it is */
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
            grow(&s->meshes[s->nodes[i].meshes[k]], &world[i], min, max, &any, triangles_only);
    mfs_mat4 id;
    mfs_mat4_identity(&id);
    for (uint32_t i = 0; i < s->n_meshes; i++)
        if (mn[i] < 0)
            grow(&s->meshes[i], &id, min, max, &any, triangles_only);
out:
    free(world);
    free(mn);
    return any;
}

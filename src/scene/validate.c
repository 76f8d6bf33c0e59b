/* The invariants writers rely on, checked once after import so that no
 * writer has to defend against an inconsistent scene. */
#include <math.h>

#include "meshfs/scene.h"

static int check_mesh(const mfs_scene *s, uint32_t mi, mfs_err *err)
{
    const mfs_mesh *m = &s->meshes[mi];
    const char *nm = m->name ? m->name : "";
    if (!m->name)
        return mfs_errf(err, "mesh %u has no name", mi);
    if (m->prim < MFS_PRIM_POINTS || m->prim > MFS_PRIM_TRIANGLES)
        return mfs_errf(err, "mesh '%s': bad primitive type %d", nm, (int)m->prim);
    if (m->material >= (int32_t)s->n_materials || m->material < -1)
        return mfs_errf(err, "mesh '%s': material %d out of range", nm, m->material);
    if (m->n_vertices && !m->positions)
        return mfs_errf(err, "mesh '%s': vertices without positions", nm);
    if (m->n_faces && !m->indices)
        return mfs_errf(err, "mesh '%s': faces without indices", nm);
    if (m->uv[1] && !m->uv[0])
        return mfs_errf(err, "mesh '%s': UV set 1 without set 0", nm);
    if ((m->tangents == NULL) != (m->bitangents == NULL))
        return mfs_errf(err, "mesh '%s': tangents and bitangents must come together", nm);
    uint64_t ni = (uint64_t)m->n_faces * (uint64_t)m->prim;
    for (uint64_t i = 0; i < ni; i++)
        if (m->indices[i] >= m->n_vertices)
            return mfs_errf(err, "mesh '%s': index %u out of range (%u vertices)", nm,
                            m->indices[i], m->n_vertices);
    for (uint32_t v = 0; v < m->n_vertices; v++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(m->positions[v][k]))
                return mfs_errf(err, "mesh '%s': vertex %u is not finite", nm, v);
    /* every other attribute a writer copies into a file must be finite too */
    struct { const float *p; int n; const char *what; } attr[] = {
        {m->normals ? &m->normals[0][0] : NULL, 3, "normal"},
        {m->tangents ? &m->tangents[0][0] : NULL, 3, "tangent"},
        {m->bitangents ? &m->bitangents[0][0] : NULL, 3, "bitangent"},
        {m->uv[0] ? &m->uv[0][0][0] : NULL, 2, "texture coordinate"},
        {m->uv[1] ? &m->uv[1][0][0] : NULL, 2, "second texture coordinate"},
        {m->colors ? &m->colors[0][0] : NULL, 4, "colour"},
    };
    for (size_t a = 0; a < sizeof attr / sizeof attr[0]; a++)
        for (uint64_t i = 0; attr[a].p && i < (uint64_t)m->n_vertices * attr[a].n; i++)
            if (!isfinite(attr[a].p[i]))
                return mfs_errf(err, "mesh '%s': %s of vertex %llu is not finite", nm, attr[a].what,
                                (unsigned long long)(i / attr[a].n));
    for (uint32_t b = 0; b < m->n_bones; b++) {
        const mfs_bone *bo = &m->bones[b];
        if (!bo->name)
            return mfs_errf(err, "mesh '%s': bone %u has no name", nm, b);
        if (bo->node < -1 || bo->node >= (int32_t)s->n_nodes)
            return mfs_errf(err, "mesh '%s': bone '%s' node out of range", nm, bo->name);
        for (uint32_t w = 0; w < bo->n_weights; w++)
            if (bo->weights[w].vertex >= m->n_vertices)
                return mfs_errf(err, "mesh '%s': bone '%s' weights vertex %u of %u", nm,
                                bo->name, bo->weights[w].vertex, m->n_vertices);
    }
    return 0;
}

int mfs_scene_validate(const mfs_scene *s, mfs_err *err)
{
    if (s->n_nodes == 0)
        return mfs_errf(err, "scene has no root node");
    if (s->nodes[0].parent != -1)
        return mfs_errf(err, "node 0 is not the root");
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const mfs_node *n = &s->nodes[i];
        if (!n->name)
            return mfs_errf(err, "node %u has no name", i);
        if (i > 0 && (n->parent < 0 || (uint32_t)n->parent >= i))
            return mfs_errf(err, "node '%s': parent %d does not precede it", n->name, n->parent);
        for (uint32_t c = 0; c < n->n_children; c++) {
            uint32_t k = n->children[c];
            if (k >= s->n_nodes || k <= i || s->nodes[k].parent != (int32_t)i)
                return mfs_errf(err, "node '%s': child %u inconsistent", n->name, k);
        }
        for (uint32_t m = 0; m < n->n_meshes; m++)
            if (n->meshes[m] >= s->n_meshes)
                return mfs_errf(err, "node '%s': mesh %u out of range", n->name, n->meshes[m]);
    }
    for (uint32_t i = 0; i < s->n_meshes; i++)
        if (check_mesh(s, i, err) < 0)
            return -1;
    for (uint32_t i = 0; i < s->n_materials; i++)
        if (!s->materials[i].name)
            return mfs_errf(err, "material %u has no name", i);
    for (uint32_t i = 0; i < s->n_animations; i++) {
        const mfs_animation *a = &s->animations[i];
        if (!a->name)
            return mfs_errf(err, "animation %u has no name", i);
        if (!(a->ticks_per_second > 0) || !(a->duration >= 0))
            return mfs_errf(err, "animation '%s': bad timing", a->name);
        for (uint32_t c = 0; c < a->n_channels; c++)
            if (a->channels[c].node < 0 || a->channels[c].node >= (int32_t)s->n_nodes)
                return mfs_errf(err, "animation '%s': channel %u node out of range", a->name, c);
    }
    return 0;
}

/* Clean-ups every importer applies to the scene it built (assimp's copy,
 * the native glTF/OBJ readers), so that writers can rely on them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "meshfs/scene.h"

/* Per-vertex weights sum to 1 in the scene (the formats say so, and files
 * often do not: exporters round, some leave sums of 0.97 or 1.2).  Weights
 * that are not finite or not positive are dropped first. */
int mfs_mesh_normalise_weights(mfs_mesh *m, mfs_err *err)
{
    /* A bone that names no node cannot move anything (and FGE's reader
     * would dereference the missing node): drop it, so that its weights go
     * to the bones that remain. */
    uint32_t kept = 0;
    for (uint32_t b = 0; b < m->n_bones; b++) {
        if (m->bones[b].node >= 0) {
            m->bones[kept++] = m->bones[b];
        } else {
            free(m->bones[b].name);
            free(m->bones[b].weights);
        }
    }
    m->n_bones = kept;
    if (!m->n_bones)
        return 0;
    double *sum = calloc(m->n_vertices ? m->n_vertices : 1, sizeof *sum);
    if (!sum)
        return mfs_errf(err, "out of memory");
    for (uint32_t b = 0; b < m->n_bones; b++) {
        mfs_bone *bo = &m->bones[b];
        uint32_t k = 0;
        for (uint32_t w = 0; w < bo->n_weights; w++) {
            mfs_weight wt = bo->weights[w];
            if (!(wt.weight > 0) || !isfinite(wt.weight) || wt.vertex >= m->n_vertices)
                continue;
            bo->weights[k++] = wt;
            sum[wt.vertex] += wt.weight;
        }
        bo->n_weights = k;
    }
    for (uint32_t b = 0; b < m->n_bones; b++)
        for (uint32_t w = 0; w < m->bones[b].n_weights; w++) {
            mfs_weight *wt = &m->bones[b].weights[w];
            wt->weight = (float)(wt->weight / sum[wt->vertex]);
        }
    free(sum);
    return 0;
}

/* Meshes without a name get their node's name (or "mesh<N>") so that every
 * format that keys on mesh names has something stable to write. */
int mfs_scene_name_meshes(mfs_scene *s, mfs_err *err)
{
    int32_t *placed = malloc(sizeof(int32_t) * (s->n_meshes ? s->n_meshes : 1));
    if (!placed)
        return mfs_errf(err, "out of memory");
    mfs_scene_mesh_nodes(s, placed);
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        mfs_mesh *m = &s->meshes[i];
        if (m->name && m->name[0])
            continue;
        char buf[64];
        const char *nm = placed[i] >= 0 ? s->nodes[placed[i]].name : "";
        if (!nm[0]) {
            snprintf(buf, sizeof buf, "mesh%u", i);
            nm = buf;
        }
        char *d = mfs_strdup(nm);
        if (!d) {
            free(placed);
            return mfs_errf(err, "out of memory");
        }
        free(m->name);
        m->name = d;
    }
    free(placed);
    return 0;
}

int mfs_scene_finish(mfs_scene *s, mfs_err *err)
{
    if (mfs_scene_names_utf8(s, err) < 0 || mfs_scene_name_meshes(s, err) < 0)
        return -1;
    return mfs_scene_validate(s, err);
}

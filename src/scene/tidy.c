/* Clean-ups every importer applies to the scene it built (assimp's copy,
 * the native glTF/OBJ readers), so that writers can rely on them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Orphans: every node index checked first, so a scene validate would
 * refuse is left for it to name. */
int mfs_scene_place_orphans(mfs_scene *s, mfs_err *err)
{
    if (s->n_nodes == 0 || s->n_meshes == 0)
        return 0;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
            if (s->nodes[i].meshes[k] >= s->n_meshes)
                return 0;
    int32_t *placed = malloc(sizeof(int32_t) * s->n_meshes);
    if (!placed)
        return mfs_errf(err, "out of memory");
    mfs_scene_mesh_nodes(s, placed);
    uint32_t orphans = 0, first = 0;
    for (uint32_t i = s->n_meshes; i-- > 0;)
        if (placed[i] < 0)
            orphans++, first = i;
    char note[256];
    if (orphans == 0) {
        free(placed);
        return 0;
    }
    if (orphans == s->n_meshes) {
        /* nothing placed: the root places them all, in scene order */
        mfs_node *root = &s->nodes[0];
        uint32_t *m = realloc(root->meshes, sizeof *m * (root->n_meshes + orphans));
        if (!m) {
            free(placed);
            return mfs_errf(err, "out of memory");
        }
        root->meshes = m;
        for (uint32_t i = 0; i < s->n_meshes; i++)
            root->meshes[root->n_meshes++] = i;
        snprintf(note, sizeof note, "no node places the model's %u mesh%s: placed at the root", orphans,
                 orphans == 1 ? "" : "es");
    } else {
        snprintf(note, sizeof note,
                 "%u mesh%s that no node places left out, as assimp's exporters leave them (the first: "
                 "'%.64s')",
                 orphans, orphans == 1 ? "" : "es", s->meshes[first].name ? s->meshes[first].name : "");
        /* renumber: placed[i] becomes mesh i's new index */
        uint32_t n = 0;
        for (uint32_t i = 0; i < s->n_meshes; i++) {
            if (placed[i] < 0) {
                mfs_mesh_clear(&s->meshes[i]);
                continue;
            }
            if (n != i)
                s->meshes[n] = s->meshes[i];
            placed[i] = (int32_t)n++;
        }
        s->n_meshes = n;
        for (uint32_t i = 0; i < s->n_nodes; i++)
            for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
                s->nodes[i].meshes[k] = (uint32_t)placed[s->nodes[i].meshes[k]];
    }
    free(placed);
    if (mfs_scene_note(s, note) < 0)
        return mfs_errf(err, "out of memory");
    return (int)orphans;
}

int mfs_scene_extend_durations(mfs_scene *s, mfs_err *err)
{
    int n = 0;
    for (uint32_t a = 0; a < s->n_animations; a++) {
        mfs_animation *an = &s->animations[a];
        double last = an->duration;
        for (uint32_t c = 0; c < an->n_channels; c++) {
            const mfs_channel *ch = &an->channels[c];
            for (uint32_t k = 0; k < ch->n_pos; k++)
                last = ch->pos[k].time > last ? ch->pos[k].time : last;
            for (uint32_t k = 0; k < ch->n_rot; k++)
                last = ch->rot[k].time > last ? ch->rot[k].time : last;
            for (uint32_t k = 0; k < ch->n_scale; k++)
                last = ch->scale[k].time > last ? ch->scale[k].time : last;
        }
        if (!(last > an->duration) || !isfinite(last))
            continue;
        char note[200];
        snprintf(note, sizeof note,
                 "animation '%.64s': keys run to %g ticks, past its duration of %g: the duration "
                 "extended",
                 an->name ? an->name : "", last, an->duration);
        an->duration = last;
        n++;
        if (mfs_scene_note(s, note) < 0)
            return mfs_errf(err, "out of memory");
    }
    return n;
}

static int same_offset(const mfs_mat4 *a, const mfs_mat4 *b)
{
    for (int i = 0; i < 16; i++) {
        float x = a->m[i], y = b->m[i];
        if (!(fabsf(x - y) <= 1e-5f * fmaxf(1.0f, fmaxf(fabsf(x), fabsf(y)))))
            return 0;
    }
    return 1;
}

/* One vertex's weights of one bone summed into its first. */
static int sum_per_vertex(mfs_bone *bo, uint32_t n_vertices)
{
    int64_t *first = malloc(sizeof *first * (n_vertices ? n_vertices : 1));
    if (!first)
        return -1;
    for (uint32_t w = 0; w < bo->n_weights; w++)
        first[bo->weights[w].vertex] = -1;
    uint32_t k = 0;
    for (uint32_t w = 0; w < bo->n_weights; w++) {
        mfs_weight wt = bo->weights[w];
        if (first[wt.vertex] >= 0) {
            bo->weights[first[wt.vertex]].weight += wt.weight;
            continue;
        }
        first[wt.vertex] = k;
        bo->weights[k++] = wt;
    }
    bo->n_weights = k;
    free(first);
    return 0;
}

int mfs_mesh_merge_bones(mfs_scene *s, mfs_mesh *m, mfs_err *err)
{
    for (uint32_t a = 0; a < m->n_bones; a++) {
        mfs_bone *x = &m->bones[a];
        uint32_t merged = 1;
        for (uint32_t b = a + 1; b < m->n_bones;) {
            mfs_bone *y = &m->bones[b];
            if (strcmp(x->name, y->name) || x->node != y->node || !same_offset(&x->offset, &y->offset)) {
                b++;
                continue;
            }
            mfs_weight *w = realloc(x->weights, sizeof *w * (x->n_weights + y->n_weights + 1));
            if (!w)
                return mfs_errf(err, "out of memory");
            memcpy(w + x->n_weights, y->weights, sizeof *w * y->n_weights);
            x->weights = w;
            x->n_weights += y->n_weights;
            free(y->name);
            free(y->weights);
            memmove(y, y + 1, sizeof *y * (m->n_bones - b - 1));
            m->n_bones--;
            merged++;
        }
        if (merged == 1)
            continue;
        if (sum_per_vertex(x, m->n_vertices) < 0)
            return mfs_errf(err, "out of memory");
        char note[200];
        snprintf(note, sizeof note, "mesh '%.64s': %u bones named '%.64s' merged into one", m->name,
                 merged, x->name);
        if (mfs_scene_note(s, note) < 0)
            return mfs_errf(err, "out of memory");
    }
    return 0;
}

int mfs_scene_finish(mfs_scene *s, mfs_err *err)
{
    if (mfs_scene_names_utf8(s, err) < 0 || mfs_scene_place_orphans(s, err) < 0 ||
        mfs_scene_extend_durations(s, err) < 0 || mfs_scene_name_meshes(s, err) < 0)
        return -1;
    for (uint32_t i = 0; i < s->n_meshes; i++)
        if (mfs_mesh_merge_bones(s, &s->meshes[i], err) < 0)
            return -1;
    return mfs_scene_validate(s, err);
}

/* glTF animations into the scene's: channels per node, STEP and
 * CUBICSPLINE samplers resampled to linear keys (native_gltf.c's head
 * comment; native_gltf.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native_gltf.h"

/* ---- animations ---- */

typedef struct track {
    const cgltf_animation_sampler *smp[3]; /* translation, rotation, scale */
} track;

/* A CUBICSPLINE sampler as the spec evaluates it (glTF 2.0, appendix C):
 * Hermite between keys with the tangents scaled by the key interval,
 * rotations normalised; times in milliseconds. */
typedef struct cubic_track {
    const float *t, *v;
    size_t n, comps;
    int path; /* 0 translation, 1 rotation, 2 scale */
} cubic_track;

static void cubic_pose(void *ctx, double ms, float tr[3], float q[4], float sc[3])
{
    const cubic_track *c = ctx;
    double sec = ms / 1000.0;
    size_t i = 0, hi = c->n > 1 ? c->n - 1 : 0; /* the interval [t[i], t[i+1]) holding sec */
    while (hi - i > 1) {
        size_t mid = (i + hi) / 2;
        if (sec >= c->t[mid])
            i = mid;
        else
            hi = mid;
    }
    float val[4];
    const float *p0 = &c->v[(3 * i + 1) * c->comps];
    if (c->n == 1) {
        memcpy(val, p0, sizeof(float) * c->comps);
    } else {
        const float *b0 = &c->v[(3 * i + 2) * c->comps];           /* out-tangent of i */
        const float *a1 = &c->v[(3 * (i + 1)) * c->comps];         /* in-tangent of i+1 */
        const float *p1 = &c->v[(3 * (i + 1) + 1) * c->comps];
        double dt = (double)c->t[i + 1] - c->t[i];
        double u = dt > 0 ? (sec - c->t[i]) / dt : 0;
        u = u < 0 ? 0 : u > 1 ? 1 : u;
        double u2 = u * u, u3 = u2 * u;
        double h00 = 2 * u3 - 3 * u2 + 1, h10 = u3 - 2 * u2 + u, h01 = -2 * u3 + 3 * u2, h11 = u3 - u2;
        for (size_t k = 0; k < c->comps; k++)
            val[k] = (float)(h00 * p0[k] + h10 * dt * b0[k] + h01 * p1[k] + h11 * dt * a1[k]);
    }
    tr[0] = tr[1] = tr[2] = 0;
    q[0] = q[1] = q[2] = 0, q[3] = 1;
    sc[0] = sc[1] = sc[2] = 1;
    if (c->path == 1) {
        double len = 0;
        for (int k = 0; k < 4; k++)
            len += (double)val[k] * val[k];
        if (len > 0 && isfinite(len))
            for (int k = 0; k < 4; k++)
                q[k] = (float)(val[k] / sqrt(len));
    } else {
        memcpy(c->path == 0 ? tr : sc, val, sizeof(float) * 3);
    }
}

/* The keys of a CUBICSPLINE sampler (t, v unpacked; both freed here). */
static size_t cubic_keys(float *t, float *v, size_t n, int path, double size, double **times, float **vals)
{
    size_t comps = path == 1 ? 4 : 3, k = 0;
    double *kt = malloc(sizeof *kt * n);
    mfs_channel c;
    memset(&c, 0, sizeof c);
    cubic_track ct = {t, v, n, comps, path};
    mfs_err err;
    int ok = kt != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        kt[k] = (double)(float)(t[i] * 1000.0f);
        if (k == 0 || kt[k] > kt[k - 1]) /* the spec wants rising times */
            k++;
    }
    ok = ok && k && mfs_channel_follow(&c, kt, k, cubic_pose, &ct, size, &err) == 0;
    double *ot = ok ? malloc(sizeof *ot * c.n_pos) : NULL;
    float *ov = ok ? malloc(sizeof *ov * c.n_pos * comps) : NULL;
    size_t m = 0;
    if (ot && ov) {
        for (m = 0; m < c.n_pos; m++) {
            ot[m] = c.pos[m].time;
            const float *src = path == 0 ? c.pos[m].v : path == 1 ? c.rot[m].q : c.scale[m].v;
            memcpy(&ov[m * comps], src, sizeof(float) * comps);
        }
    } else {
        free(ot), free(ov);
        ot = NULL, ov = NULL;
    }
    free(c.pos), free(c.rot), free(c.scale);
    free(kt), free(t), free(v);
    *times = ot;
    *vals = ov;
    return m;
}

/* Keys of one sampler in the scene's model (linear between keys, times in
 * milliseconds).  LINEAR as is; STEP as pairs of keys just before each
 * change; CUBICSPLINE at its keys and between them wherever linear keys
 * would leave the curve by more than MFS_FOLLOW_TOLERANCE of the model's
 * size (mfs_channel_follow).  Returns the key count, 0 if unreadable;
 * *times and *vals are malloc'ed. */
static size_t sampler_keys(const cgltf_animation_sampler *sm, int path, double size, double **times,
                           float **vals)
{
    const cgltf_accessor *in = sm->input, *out = sm->output;
    size_t n = in->count, comps = path == 1 ? 4 : 3;
    int cubic = sm->interpolation == cgltf_interpolation_type_cubic_spline;
    if (!n || cgltf_num_components(in->type) != 1 || cgltf_num_components(out->type) != comps ||
        out->count < (cubic ? 3 * n : n))
        return 0;
    float *t = mfs_gltf_unpack(in, 1), *v = mfs_gltf_unpack(out, comps);
    if (cubic && t && v)
        return cubic_keys(t, v, n, path, size, times, vals);
    size_t cap = 2 * n;
    double *ot = malloc(sizeof *ot * cap);
    float *ov = malloc(sizeof *ov * cap * comps);
    if (!t || !v || !ot || !ov) {
        free(t), free(v), free(ot), free(ov);
        return 0;
    }
    size_t k = 0;
#define PUT(time, src)                                                                             \
    do {                                                                                           \
        ot[k] = (double)(float)((float)(time) * 1000.0f);                                          \
        memcpy(&ov[k * comps], (src), sizeof(float) * comps);                                      \
        k++;                                                                                       \
    } while (0)
    if (sm->interpolation == cgltf_interpolation_type_step) {
        for (size_t i = 0; i < n; i++) {
            if (i > 0) {
                /* hold the previous value until a microsecond before */
                double prev = ot[k - 1], at = (double)(float)(t[i] * 1000.0f);
                double before = at - 1e-3 > prev ? at - 1e-3 : (prev + at) / 2;
                ot[k] = before;
                memcpy(&ov[k * comps], &v[(i - 1) * comps], sizeof(float) * comps);
                k++;
            }
            PUT(t[i], &v[i * comps]);
        }
    } else {
        for (size_t i = 0; i < n; i++)
            PUT(t[i], &v[i * comps]);
    }
#undef PUT
    free(t);
    free(v);
    *times = ot;
    *vals = ov;
    return k;
}

static int cmp_vec(const void *a, const void *b)
{
    double x = ((const mfs_vec_key *)a)->time, y = ((const mfs_vec_key *)b)->time;
    return (x > y) - (x < y);
}

static int cmp_quat(const void *a, const void *b)
{
    double x = ((const mfs_quat_key *)a)->time, y = ((const mfs_quat_key *)b)->time;
    return (x > y) - (x < y);
}

static int fill_channel(mfs_channel *c, const cgltf_node *gn, const track *tr, double size, double *dur)
{
    for (int path = 0; path < 3; path++) {
        size_t comps = path == 1 ? 4 : 3;
        double *t = NULL;
        float *v = NULL;
        size_t n = tr->smp[path] ? sampler_keys(tr->smp[path], path, size, &t, &v) : 0;
        const float *rest = path == 0 ? (gn->has_translation ? gn->translation : NULL)
                          : path == 1 ? (gn->has_rotation ? gn->rotation : NULL)
                                      : (gn->has_scale ? gn->scale : NULL);
        /* A node with a negative scale factor and no rotation: its
         * rotation is the identity (glTF 2.0, 5.25), and it must be said
         * so.  Left to mfs_channel_sample, the rotation would come from
         * decomposing the rest matrix, which keeps the scale positive but
         * for one mirror on x: next to a scale key of (1, -1, 1) that
         * turns the node 180 degrees about z, and next to (-1, -1, 1),
         * itself a half turn, it cancels the turn. */
        static const float unrotated[4] = {0, 0, 0, 1};
        int negative = gn->has_scale ? (gn->scale[0] < 0) + (gn->scale[1] < 0) + (gn->scale[2] < 0) : 0;
        if (path == 1 && !rest && !gn->has_matrix && negative > 0)
            rest = unrotated;
        if (!n && rest) {
            /* assimp's one key at 0 for an unanimated part */
            t = malloc(sizeof *t);
            v = malloc(sizeof *v * comps);
            if (!t || !v) {
                free(t), free(v);
                return -1;
            }
            t[0] = 0;
            memcpy(v, rest, sizeof *v * comps);
            n = 1;
        }
        if (n && t[n - 1] > *dur && tr->smp[path])
            *dur = t[n - 1];
        if (path == 1) {
            c->rot = calloc(n + 1, sizeof *c->rot);
            if (!c->rot) {
                free(t), free(v);
                return -1;
            }
            for (size_t i = 0; i < n; i++) {
                const float *q = &v[4 * i];
                double l = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] +
                                (double)q[3] * q[3]);
                mfs_quat_key *k = &c->rot[c->n_rot++];
                k->time = t[i];
                if (!(l > 1e-12) || !isfinite(l)) {
                    k->q[0] = k->q[1] = k->q[2] = 0, k->q[3] = 1;
                } else {
                    for (int j = 0; j < 4; j++)
                        k->q[j] = (float)(q[j] / l);
                }
            }
            qsort(c->rot, c->n_rot, sizeof *c->rot, cmp_quat);
        } else {
            mfs_vec_key *keys = calloc(n + 1, sizeof *keys);
            if (!keys) {
                free(t), free(v);
                return -1;
            }
            for (size_t i = 0; i < n; i++) {
                keys[i].time = t[i];
                memcpy(keys[i].v, &v[3 * i], sizeof keys[i].v);
            }
            qsort(keys, n, sizeof *keys, cmp_vec);
            if (path == 0)
                c->pos = keys, c->n_pos = (uint32_t)n;
            else
                c->scale = keys, c->n_scale = (uint32_t)n;
        }
        free(t);
        free(v);
    }
    return 0;
}

int mfs_gltf_fill_animations(build *b)
{
    const cgltf_data *d = b->d;
    mfs_scene *s = b->s;
    double size = mfs_scene_size(s);
    s->animations = calloc(d->animations_count + 1, sizeof *s->animations);
    track *tr = calloc(d->nodes_count + 1, sizeof *tr);
    if (!s->animations || !tr) {
        free(tr);
        return mfs_errf(b->err, "out of memory");
    }
    for (size_t ai = 0; ai < d->animations_count; ai++) {
        const cgltf_animation *ga = &d->animations[ai];
        mfs_animation *a = &s->animations[s->n_animations++];
        a->name = mfs_strdup(ga->name ? ga->name : "");
        a->ticks_per_second = 1000.0;
        memset(tr, 0, sizeof *tr * (d->nodes_count + 1));
        uint32_t nch = 0;
        double morph_end = 0;
        for (size_t ci = 0; ci < ga->channels_count; ci++) {
            const cgltf_animation_channel *ch = &ga->channels[ci];
            const cgltf_animation_sampler *sm = ch->sampler;
            if (!sm || !sm->input || !sm->output || !ch->target_node || sm->input->count > sm->output->count)
                continue;
            int path = ch->target_path == cgltf_animation_path_type_translation ? 0
                     : ch->target_path == cgltf_animation_path_type_rotation    ? 1
                     : ch->target_path == cgltf_animation_path_type_scale       ? 2 : -1;
            if (path < 0) {
                /* morph weights: nothing in the scene moves, but the
                 * animation lasts as long as they do (as assimp counts it) */
                float last;
                if (ch->target_path == cgltf_animation_path_type_weights && sm->input->count &&
                    cgltf_accessor_read_float(sm->input, sm->input->count - 1, &last, 1) &&
                    (double)(float)(last * 1000.0f) > morph_end)
                    morph_end = (double)(float)(last * 1000.0f);
                continue;
            }
            track *t = &tr[ch->target_node - d->nodes];
            if (!t->smp[0] && !t->smp[1] && !t->smp[2])
                nch++;
            t->smp[path] = sm;
        }
        a->channels = calloc(nch + 1, sizeof *a->channels);
        if (!a->name || !a->channels) {
            free(tr);
            return mfs_errf(b->err, "out of memory");
        }
        double dur = morph_end;
        for (size_t ni = 0; ni < d->nodes_count; ni++) {
            if (!tr[ni].smp[0] && !tr[ni].smp[1] && !tr[ni].smp[2])
                continue;
            if (b->node_at[ni] < 0)
                continue; /* a node outside the scene moves nothing */
            mfs_channel *c = &a->channels[a->n_channels++];
            c->node = b->node_at[ni];
            if (fill_channel(c, &d->nodes[ni], &tr[ni], size, &dur) < 0) {
                free(tr);
                return mfs_errf(b->err, "out of memory");
            }
        }
        a->duration = dur;
    }
    free(tr);
    return 0;
}

/* Keys that follow a path (docs/import.md, "Keys that follow the source"):
 * importers whose source curves are not linear keys (an FBX transform chain
 * composed from several animated factors, a glTF CUBICSPLINE sampler)
 * evaluate those curves here and keep a key wherever the scene's linear /
 * slerp interpolation would leave them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/scene.h"

/* Halvings of one key interval at most (1024 keys between two source keys). */
#define MAX_DEPTH 10
/* Keys added at most per source key, over the whole channel, so that a
 * hostile curve (a CUBICSPLINE with tangents of 1e30) cannot make a small
 * file gigabytes of keys: past it, the rest is kept at the source keys. */
#define MAX_ADDED_PER_KEY 64
#define MAX_ADDED_MIN 4096

typedef struct pkey {
    double time;
    float t[3], q[4], s[3];
} pkey;

typedef struct refine {
    mfs_pose_fn fn;
    void *ctx;
    double size, tol;
    pkey *k;
    size_t n, cap;
    size_t added, max_added;
    int oom;
} refine;

static void eval(refine *r, double time, const pkey *prev, pkey *out)
{
    out->time = time;
    r->fn(r->ctx, time, out->t, out->q, out->s);
    /* neighbouring keys on one hemisphere, so slerp takes the same arc */
    if (prev && prev->q[0] * out->q[0] + prev->q[1] * out->q[1] + prev->q[2] * out->q[2] +
                        prev->q[3] * out->q[3] < 0)
        for (int i = 0; i < 4; i++)
            out->q[i] = -out->q[i];
}

static void push(refine *r, const pkey *k)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        pkey *nk = realloc(r->k, sizeof *nk * cap);
        if (!nk) {
            r->oom = 1;
            return;
        }
        r->k = nk;
        r->cap = cap;
    }
    r->k[r->n++] = *k;
}

/* How far the scene's interpolation between a and b strays from the path at
 * time `at`, in model units: translation error, plus the rotation error and
 * scale error each times the model's size (the most they move a vertex). */
static double stray(refine *r, const pkey *a, const pkey *b, double at)
{
    pkey want;
    eval(r, at, a, &want);
    mfs_vec_key v[2] = {{a->time, {a->t[0], a->t[1], a->t[2]}}, {b->time, {b->t[0], b->t[1], b->t[2]}}};
    mfs_vec_key sv[2] = {{a->time, {a->s[0], a->s[1], a->s[2]}}, {b->time, {b->s[0], b->s[1], b->s[2]}}};
    mfs_quat_key qv[2] = {{a->time, {a->q[0], a->q[1], a->q[2], a->q[3]}},
                          {b->time, {b->q[0], b->q[1], b->q[2], b->q[3]}}};
    float t[3], s[3], q[4];
    mfs_track_sample_vec(v, 2, at, t);
    mfs_track_sample_vec(sv, 2, at, s);
    mfs_track_sample_quat(qv, 2, at, q);
    double dt = 0, ds = 0, dm = 0, dp = 0;
    for (int i = 0; i < 3; i++) {
        dt += ((double)t[i] - want.t[i]) * ((double)t[i] - want.t[i]);
        ds = fmax(ds, fabs((double)s[i] - want.s[i]));
    }
    /* the angle between the rotations from the chord between the unit
     * quaternions, |q - w| = 2 sin(angle / 4): unlike acos of their dot
     * product, it does not turn float rounding (a dot of 0.99999994) into
     * a turn of 0.0007 radians */
    for (int i = 0; i < 4; i++) {
        dm += ((double)q[i] - want.q[i]) * ((double)q[i] - want.q[i]);
        dp += ((double)q[i] + want.q[i]) * ((double)q[i] + want.q[i]);
    }
    double chord = sqrt(fmin(dm, dp));
    double angle = 4 * asin(fmin(1.0, chord / 2));
    return sqrt(dt) + r->size * (angle + ds);
}

/* Keys strictly between a and b, in time order. */
static void split(refine *r, const pkey *a, const pkey *b, int depth)
{
    if (depth >= MAX_DEPTH || r->oom || r->added >= r->max_added || !(b->time > a->time))
        return;
    double span = b->time - a->time;
    int off = 0;
    for (int i = 1; i <= 3 && !off; i++)
        off = stray(r, a, b, a->time + span * i / 4) > r->tol;
    if (!off)
        return;
    pkey mid;
    eval(r, a->time + span / 2, a, &mid);
    split(r, a, &mid, depth + 1);
    push(r, &mid);
    r->added++;
    split(r, &mid, b, depth + 1);
}

int mfs_channel_follow(mfs_channel *out, const double *times, size_t n, mfs_pose_fn fn, void *ctx,
                       double size, mfs_err *err)
{
    refine r = {.fn = fn, .ctx = ctx, .size = size > 0 ? size : 1.0};
    r.tol = MFS_FOLLOW_TOLERANCE * r.size;
    r.max_added = n > (SIZE_MAX - MAX_ADDED_MIN) / MAX_ADDED_PER_KEY ? SIZE_MAX : n * MAX_ADDED_PER_KEY + MAX_ADDED_MIN;
    pkey prev, cur;
    for (size_t i = 0; i < n && !r.oom; i++) {
        eval(&r, times[i], i ? &prev : NULL, &cur);
        if (i)
            split(&r, &prev, &cur, 0);
        push(&r, &cur);
        prev = cur;
    }
    memset(out, 0, sizeof *out);
    if (r.oom || r.n > UINT32_MAX) {
        free(r.k);
        return mfs_errf(err, "out of memory");
    }
    out->pos = malloc(sizeof *out->pos * (r.n + 1));
    out->rot = malloc(sizeof *out->rot * (r.n + 1));
    out->scale = malloc(sizeof *out->scale * (r.n + 1));
    if (!out->pos || !out->rot || !out->scale) {
        free(out->pos), free(out->rot), free(out->scale), free(r.k);
        memset(out, 0, sizeof *out);
        return mfs_errf(err, "out of memory");
    }
    for (size_t i = 0; i < r.n; i++) {
        const pkey *k = &r.k[i];
        out->pos[i] = (mfs_vec_key){k->time, {k->t[0], k->t[1], k->t[2]}};
        out->rot[i] = (mfs_quat_key){k->time, {k->q[0], k->q[1], k->q[2], k->q[3]}};
        out->scale[i] = (mfs_vec_key){k->time, {k->s[0], k->s[1], k->s[2]}};
    }
    out->n_pos = out->n_rot = out->n_scale = (uint32_t)r.n;
    free(r.k);
    return 0;
}

double mfs_scene_size(const mfs_scene *s)
{
    float mn[3], mx[3];
    if (!mfs_scene_bounds(s, 0, mn, mx))
        return 1.0;
    double d = fmax(mx[0] - mn[0], fmax(mx[1] - mn[1], mx[2] - mn[2]));
    return d > 0 && isfinite(d) ? d : 1.0;
}

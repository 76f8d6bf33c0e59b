/* Sampling animation channels, shared by the writers that resample
 * (gmf frames, dem sequences) so both agree on what a pose is. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "meshfs/scene.h"

_Static_assert(offsetof(mfs_vec_key, time) == 0 && offsetof(mfs_quat_key, time) == 0,
               "keys start with their time");

/* Index of the last key with time <= t, by binary search; n >= 1.  Both
 * key types start with their time, so one search serves both. */
static size_t last_key(const void *keys, size_t stride, uint32_t n, double t)
{
    const char *base = keys;
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        double tm;
        memcpy(&tm, base + mid * stride, sizeof tm);
        if (tm <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void sample_vec(const mfs_vec_key *k, uint32_t n, double t, float out[3])
{
    if (t <= k[0].time || n == 1) {
        for (int i = 0; i < 3; i++)
            out[i] = k[0].v[i];
        return;
    }
    size_t a = last_key(k, sizeof *k, n, t);
    if (a + 1 >= n) {
        for (int i = 0; i < 3; i++)
            out[i] = k[n - 1].v[i];
        return;
    }
    double span = k[a + 1].time - k[a].time;
    double f = span > 0 ? (t - k[a].time) / span : 0;
    for (int i = 0; i < 3; i++)
        out[i] = (float)(k[a].v[i] + (k[a + 1].v[i] - k[a].v[i]) * f);
}

static void slerp(const float a[4], const float b[4], double f, float out[4])
{
    double d = (double)a[0] * b[0] + (double)a[1] * b[1] + (double)a[2] * b[2] + (double)a[3] * b[3];
    double sb = 1;
    if (d < 0) { /* shortest arc */
        d = -d;
        sb = -1;
    }
    double wa, wb;
    if (d > 0.9995) {
        wa = 1 - f;
        wb = f;
    } else {
        double th = acos(d), s = sin(th);
        wa = sin((1 - f) * th) / s;
        wb = sin(f * th) / s;
    }
    double r[4], l = 0;
    for (int i = 0; i < 4; i++) {
        r[i] = wa * a[i] + wb * sb * b[i];
        l += r[i] * r[i];
    }
    l = sqrt(l);
    for (int i = 0; i < 4; i++)
        out[i] = (float)(l > 0 ? r[i] / l : (i == 3));
}

static void sample_quat(const mfs_quat_key *k, uint32_t n, double t, float out[4])
{
    if (t <= k[0].time || n == 1) {
        for (int i = 0; i < 4; i++)
            out[i] = k[0].q[i];
        return;
    }
    size_t a = last_key(k, sizeof *k, n, t);
    if (a + 1 >= n) {
        for (int i = 0; i < 4; i++)
            out[i] = k[n - 1].q[i];
        return;
    }
    double span = k[a + 1].time - k[a].time;
    slerp(k[a].q, k[a + 1].q, span > 0 ? (t - k[a].time) / span : 0, out);
}

void mfs_channel_sample(const mfs_channel *c, double t, const mfs_mat4 *rest, mfs_mat4 *out)
{
    float tr[3], q[4], sc[3];
    if (mfs_mat4_decompose(rest, tr, q, sc) < 0) {
        tr[0] = rest->m[3];
        tr[1] = rest->m[7];
        tr[2] = rest->m[11];
        q[0] = q[1] = q[2] = 0;
        q[3] = 1;
        sc[0] = sc[1] = sc[2] = 1;
    }
    if (c->n_pos)
        sample_vec(c->pos, c->n_pos, t, tr);
    if (c->n_rot)
        sample_quat(c->rot, c->n_rot, t, q);
    if (c->n_scale)
        sample_vec(c->scale, c->n_scale, t, sc);
    mfs_mat4_compose(out, tr, q, sc);
}

void mfs_scene_pose(const mfs_scene *s, const mfs_animation *a, double t, mfs_mat4 *local)
{
    for (uint32_t i = 0; i < s->n_nodes; i++)
        local[i] = s->nodes[i].local;
    if (!a)
        return;
    for (uint32_t c = 0; c < a->n_channels; c++) {
        const mfs_channel *ch = &a->channels[c];
        if (ch->node >= 0 && (uint32_t)ch->node < s->n_nodes)
            mfs_channel_sample(ch, t, &s->nodes[ch->node].local, &local[ch->node]);
    }
}

void mfs_track_sample_vec(const mfs_vec_key *k, uint32_t n, double t, float out[3])
{
    sample_vec(k, n, t, out);
}

void mfs_track_sample_quat(const mfs_quat_key *k, uint32_t n, double t, float out[4])
{
    sample_quat(k, n, t, out);
}

/* What every format reader reads with (reader.h): findings, cursor,
 * geometry checks.  No reader is called from here. */
#include "reader.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/util.h"

/* ---- a reading ---- */

void mfs_rd_begin(mfs_rd *r, mfs_summary *sum, int check, mfs_err *err)
{
    memset(sum, 0, sizeof *sum);
    mfs_err_clear(err);
    memset(r, 0, sizeof *r);
    r->check = check;
    r->sum = sum;
    r->err = err;
}

int mfs_rd_finish(mfs_rd *r, int rc, const char *name)
{
    const mfs_summary *s = r->sum;
    if (rc == 0 && r->check && s->n_violations) {
        if (s->n_violations > 1)
            rc = mfs_errf(r->err, "%s (and %u more check failures)", r->first_violation,
                          s->n_violations - 1);
        else
            rc = mfs_errf(r->err, "%s", r->first_violation);
    }
    if (rc)
        mfs_err_prefix(r->err, "%s", name);
    return rc;
}

/* ---- findings ---- */

static void add_warning(mfs_summary *s, const char *fmt, va_list ap)
{
    if (s->n_warnings < MFS_SUMMARY_MAX_WARN)
        vsnprintf(s->warnings[s->n_warnings], MFS_SUMMARY_WARN_LEN, fmt, ap);
    s->n_warnings++;
}

void mfs_rd_warn(mfs_rd *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_warning(r->sum, fmt, ap);
    va_end(ap);
}

void mfs_rd_violation(mfs_rd *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (r->check) {
        if (r->sum->n_violations == 0)
            vsnprintf(r->first_violation, sizeof r->first_violation, fmt, ap);
    } else {
        add_warning(r->sum, fmt, ap);
    }
    va_end(ap);
    r->sum->n_violations++;
}

void mfs_rd_mat_mul(float r[16], const float a[16], const float b[16])
{
    float t[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float s = 0.0f;
            for (int k = 0; k < 4; k++)
                s += a[i * 4 + k] * b[k * 4 + j];
            t[i * 4 + j] = s;
        }
    memcpy(r, t, sizeof t);
}

void mfs_rd_point(mfs_rd *r, const float p[3])
{
    mfs_summary *s = r->sum;
    if (!mfs_rd_finite3(p))
        return; /* reported by the reader; a NaN would poison the box */
    if (!s->has_bounds) {
        memcpy(s->min, p, sizeof s->min);
        memcpy(s->max, p, sizeof s->max);
        s->has_bounds = 1;
        return;
    }
    for (int i = 0; i < 3; i++) {
        if (p[i] < s->min[i])
            s->min[i] = p[i];
        if (p[i] > s->max[i])
            s->max[i] = p[i];
    }
}

int mfs_rd_finite3(const float p[3])
{
    return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
}

int mfs_rd_affine_row(float a, float b, float c, float d)
{
    const float eps = 1e-5f;
    return fabsf(a) <= eps && fabsf(b) <= eps && fabsf(c) <= eps && fabsf(d - 1.0f) <= eps;
}

int mfs_rd_normal_class(const float n[3], double *len)
{
    double l = sqrt((double)n[0] * n[0] + (double)n[1] * n[1] + (double)n[2] * n[2]);
    *len = l;
    if (n[0] == 0.0f && n[1] == 0.0f && n[2] == 0.0f)
        return 1;
    return fabs(l - 1.0) <= 1e-3 ? 0 : 2;
}

/* ---- cursor ---- */

int mfs_cur_need(mfs_rd *r, const mfs_cur *c, uint64_t bytes, const char *what)
{
    if (bytes <= mfs_cur_left(c))
        return 0;
    return mfs_errf(r->err, "offset %zu: %s needs %llu bytes but only %zu remain", c->off, what,
                    (unsigned long long)bytes, mfs_cur_left(c));
}

int mfs_cur_u32(mfs_rd *r, mfs_cur *c, uint32_t *v, const char *what)
{
    if (mfs_cur_need(r, c, 4, what))
        return -1;
    *v = mfs_ld_u32(c->p + c->off);
    c->off += 4;
    return 0;
}

int mfs_cur_i32(mfs_rd *r, mfs_cur *c, int32_t *v, const char *what)
{
    if (mfs_cur_need(r, c, 4, what))
        return -1;
    *v = mfs_ld_i32(c->p + c->off);
    c->off += 4;
    return 0;
}

int mfs_cur_count(mfs_rd *r, mfs_cur *c, uint64_t unit, const char *what, uint32_t *count)
{
    size_t at = c->off;
    int32_t v;
    if (mfs_cur_i32(r, c, &v, what))
        return -1;
    if (v < 0)
        return mfs_errf(r->err, "offset %zu: negative count of %s (%ld)", at, what, (long)v);
    /* v < 2^31 and unit is a small struct size: no overflow in 64 bits. */
    if ((uint64_t)v * unit > mfs_cur_left(c))
        return mfs_errf(r->err, "offset %zu: declares %ld %s but only %zu bytes remain", at,
                        (long)v, what, mfs_cur_left(c));
    *count = (uint32_t)v;
    return 0;
}

void mfs_cur_floats(mfs_cur *c, float *out, unsigned k)
{
    for (unsigned i = 0; i < k; i++)
        out[i] = mfs_ld_f32(c->p + c->off + 4 * i);
    c->off += 4 * (size_t)k;
}

int mfs_rd_grow(mfs_rd *r, void **arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / sz)
            return mfs_errf(r->err, "out of memory");
        n *= 2;
    }
    void *p = realloc(*arr, n * sz);
    if (!p)
        return mfs_errf(r->err, "out of memory (%zu bytes)", n * sz);
    *arr = p;
    *cap = n;
    return 0;
}

void mfs_rd_name(char *dst, size_t cap, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && s[i] && k + 1 < cap; i++)
        dst[k++] = s[i];
    dst[k] = '\0';
}

void mfs_rd_anim_name(mfs_rd *r, const char *s, size_t n)
{
    mfs_summary *sum = r->sum;
    if (sum->n_anim_names >= MFS_SUMMARY_MAX_ANIMS)
        return;
    mfs_rd_name(sum->anim_names[sum->n_anim_names++], MFS_SUMMARY_NAME_LEN, s, n);
}

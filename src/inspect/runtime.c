/* Readers for the FBXConverter runtime files (.vrt, .tri, .sph), from
 * research/dem_vrt.md: a 12-byte VboHeader/EboHeader then raw elements, and
 * a 32-byte BoundingSphere.  A .tri has no vertex count of its own, so its
 * indices (and a .sph's radius) are checked against the sibling .vrt. */
#define MFS_INSPECT_READER
#include "meshfs/inspect.h"

#include <math.h>
#include <string.h>

#include "meshfs/bytes.h"

#define HEADER_BYTES 12
#define VRT_FLOATS 8 /* x y z u v nx ny nz */
#define SPH_BYTES 32

/* The elements after a checked header. */
typedef struct rt_body {
    const uint8_t *data;
    uint32_t elements; /* numberOfElement as declared (all present) */
} rt_body;

/* Header checks shared by .vrt and .tri.  Structural problems are errors;
 * disagreements that still leave the data readable are violations. */
static int rt_header(mfs_rd *r, const uint8_t *p, size_t n, unsigned per, const char *unit,
                     rt_body *body)
{
    if (n < HEADER_BYTES)
        return mfs_errf(r->err, "file is %zu bytes, shorter than the 12-byte header", n);
    int32_t raw = mfs_ld_i32(p), elem = mfs_ld_i32(p + 4), num = mfs_ld_i32(p + 8);
    if (elem != 4)
        return mfs_errf(r->err, "offset 4: sizeOfElement is %ld, expected 4", (long)elem);
    if (num < 0)
        return mfs_errf(r->err, "offset 8: negative numberOfElement (%ld)", (long)num);
    uint64_t need = (uint64_t)num * 4;
    if (need > n - HEADER_BYTES)
        return mfs_errf(r->err, "offset 8: declares %ld elements (%llu bytes) but only %zu "
                        "bytes remain", (long)num, (unsigned long long)need, n - HEADER_BYTES);
    if ((int64_t)raw != (int64_t)need)
        mfs_rd_violation(r, "offset 0: rawSizeInBytes %ld disagrees with 4 x numberOfElement "
                         "= %llu", (long)raw, (unsigned long long)need);
    if (n - HEADER_BYTES > need)
        mfs_rd_violation(r, "offset %llu: %llu bytes after the last element",
                         (unsigned long long)(HEADER_BYTES + need),
                         (unsigned long long)(n - HEADER_BYTES - need));
    if (num % per)
        mfs_rd_violation(r, "numberOfElement %ld is not a multiple of %u (%s)", (long)num, per,
                         unit);
    body->data = p + HEADER_BYTES;
    body->elements = (uint32_t)num;
    return 0;
}

static void vrt_vertex(const rt_body *b, uint32_t i, float v[VRT_FLOATS])
{
    for (int k = 0; k < VRT_FLOATS; k++)
        v[k] = mfs_ld_f32(b->data + 4 * ((size_t)i * VRT_FLOATS + k));
}

int mfs_read_vrt(mfs_rd *r, const uint8_t *p, size_t n)
{
    rt_body b;
    if (rt_header(r, p, n, VRT_FLOATS, "floats per vertex", &b))
        return -1;
    uint32_t nv = b.elements / VRT_FLOATS;
    r->sum->meshes = 1;
    r->sum->vertices = nv;
    mfs_tally nonfinite = {0}, badnormal = {0}, zeronormal = {0};
    for (uint32_t i = 0; i < nv; i++) {
        float v[VRT_FLOATS];
        vrt_vertex(&b, i, v);
        for (int k = 0; k < VRT_FLOATS; k++)
            if (!isfinite(v[k])) {
                mfs_tally_add(&nonfinite, i, k);
                break;
            }
        mfs_rd_point(r, v);
        double len;
        int c = mfs_rd_normal_class(v + 5, &len);
        if (c == 1)
            mfs_tally_add(&zeronormal, i, 0);
        else if (c == 2)
            mfs_tally_add(&badnormal, i, len);
    }
    if (nonfinite.n)
        mfs_rd_violation(r, "%llu vertices have NaN or infinite values (first: vertex %llu)",
                         (unsigned long long)nonfinite.n, (unsigned long long)nonfinite.first);
    if (badnormal.n)
        mfs_rd_violation(r, "%llu normals are not unit length (first: vertex %llu, length %g)",
                         (unsigned long long)badnormal.n, (unsigned long long)badnormal.first,
                         badnormal.value);
    if (zeronormal.n)
        mfs_rd_warn(r, "%llu normals are zero (first: vertex %llu)",
                    (unsigned long long)zeronormal.n, (unsigned long long)zeronormal.first);
    return 0;
}

/* Reads the sibling's header only as far as needed, without letting its own
 * findings into this file's summary.  0 and *b set, or -1 (warned). */
static int sibling_vertices(mfs_rd *r, const uint8_t *vrt, size_t vrt_n, const char *vrt_name,
                            const char *what, rt_body *b)
{
    if (!vrt) {
        mfs_rd_warn(r, "sibling %s is missing: %s not checked against vertices", vrt_name,
                    what);
        return -1;
    }
    mfs_summary scratch;
    mfs_err serr;
    mfs_rd sr = {.check = 0, .sum = &scratch, .err = &serr};
    memset(&scratch, 0, sizeof scratch);
    if (rt_header(&sr, vrt, vrt_n, VRT_FLOATS, "floats per vertex", b)) {
        mfs_rd_warn(r, "sibling %s unreadable (%s): %s not checked against vertices", vrt_name,
                    serr.msg, what);
        return -1;
    }
    return 0;
}

int mfs_read_tri(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name)
{
    rt_body b;
    if (rt_header(r, p, n, 3, "indices per triangle", &b))
        return -1;
    r->sum->meshes = 1;
    r->sum->triangles = b.elements / 3;
    rt_body vb;
    if (sibling_vertices(r, vrt, vrt_n, vrt_name, "indices", &vb))
        return 0;
    uint32_t nv = vb.elements / VRT_FLOATS;
    mfs_tally out = {0};
    for (uint32_t i = 0; i < b.elements; i++) {
        uint32_t ix = mfs_ld_u32(b.data + 4 * (size_t)i);
        if (ix >= nv)
            mfs_tally_add(&out, i, ix);
    }
    if (out.n)
        mfs_rd_violation(r, "%llu indices out of range (first: index %llu = %.0f; %s has %lu "
                         "vertices)", (unsigned long long)out.n, (unsigned long long)out.first,
                         out.value, vrt_name, (unsigned long)nv);
    return 0;
}

/* Distances are computed in double from float data written by an
 * incremental (Ritter) fit: allow the rounding of one float step. */
static int outside_sphere(const float c[3], float radius, const float p[3], double *dist)
{
    double dx = (double)p[0] - c[0], dy = (double)p[1] - c[1], dz = (double)p[2] - c[2];
    *dist = sqrt(dx * dx + dy * dy + dz * dz);
    return *dist > (double)radius * (1.0 + 1e-5) + 1e-6;
}

static void sph_against_vrt(mfs_rd *r, const uint8_t *vrt, size_t vrt_n, const char *vrt_name)
{
    rt_body vb;
    if (sibling_vertices(r, vrt, vrt_n, vrt_name, "sphere", &vb))
        return;
    const mfs_summary *s = r->sum;
    uint32_t nv = vb.elements / VRT_FLOATS;
    mfs_tally out = {0};
    for (uint32_t i = 0; i < nv; i++) {
        float v[VRT_FLOATS];
        double d;
        vrt_vertex(&vb, i, v);
        if (outside_sphere(s->center, s->radius, v, &d))
            mfs_tally_add(&out, i, d);
    }
    if (out.n)
        mfs_rd_violation(r, "%llu vertices of %s lie outside the sphere (first: vertex %llu at "
                         "distance %.9g > radius %.9g)", (unsigned long long)out.n, vrt_name,
                         (unsigned long long)out.first, out.value, (double)s->radius);
}

int mfs_read_sph(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name)
{
    if (n < SPH_BYTES)
        return mfs_errf(r->err, "file is %zu bytes, a .sph is %d", n, SPH_BYTES);
    if (n > SPH_BYTES)
        mfs_rd_violation(r, "offset %d: %zu bytes after the sphere", SPH_BYTES, n - SPH_BYTES);
    mfs_summary *s = r->sum;
    for (int i = 0; i < 3; i++)
        s->center[i] = mfs_ld_f32(p + 4 * i);
    float w = mfs_ld_f32(p + 12);
    s->radius = mfs_ld_f32(p + 16);
    s->has_sphere = 1;
    if (w != 1.0f)
        mfs_rd_violation(r, "offset 12: centre w is %g, expected 1.0", (double)w);
    if (!mfs_rd_finite3(s->center) || !isfinite(s->radius) || s->radius < 0.0f)
        mfs_rd_violation(r, "sphere centre (%g %g %g) radius %g is not finite and non-negative",
                         (double)s->center[0], (double)s->center[1], (double)s->center[2],
                         (double)s->radius);
    for (int i = 20; i < SPH_BYTES; i++)
        if (p[i]) {
            mfs_rd_violation(r, "offset %d: padding byte is 0x%02x, expected 0", i, p[i]);
            break;
        }
    if (mfs_rd_finite3(s->center) && isfinite(s->radius) && s->radius >= 0.0f) {
        float lo[3], hi[3];
        for (int i = 0; i < 3; i++) {
            lo[i] = s->center[i] - s->radius;
            hi[i] = s->center[i] + s->radius;
        }
        mfs_rd_point(r, lo);
        mfs_rd_point(r, hi);
        sph_against_vrt(r, vrt, vrt_n, vrt_name);
    }
    return 0;
}

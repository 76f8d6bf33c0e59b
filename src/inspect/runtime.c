/* Readers for the FBXConverter runtime files (.vrt, .tri, .sph), read the
 * way the LGE engine reads them (research/dem_vrt.md, docs/formats/vrt.md,
 * sph.md): a 12-byte VboHeader/EboHeader then raw elements, vertices
 * strided by the engine's 64-byte VertexData, and a 48-byte BoundingSphere
 * copied straight into the object.  A .tri has no vertex count of its own,
 * so its indices (and a .sph's radius) are checked against the sibling
 * .vrt. */
#include "readers.h"

#include <math.h>

#include "meshfs/util.h"

#define HEADER_BYTES 12
#define VRT_WORDS 16      /* x y z u v nx ny nz, w0..w3 (f32), b0..b3 (u32) */
#define VRT_PLAIN_WORDS 8 /* the document's x y z u v nx ny nz (vrt_layout=plain) */
#define VRT_SKIN 4
/* skinnedTextureLight.vs.glsl: inverse_bind_poses[100], bones.m[100] */
#define VRT_MAX_JOINTS 100
/* Weights are floats renormalised to 1; a writer's rounding is ~1e-7. */
#define VRT_WEIGHT_TOL 1e-4

/* BoundingSphere : Align16 { Vect center; float radius; }, Vect : Align16 */
#define SPH_BYTES 48
#define SPH_CENTER 16
#define SPH_RADIUS 32

/* The elements after a checked header. */
typedef struct rt_body {
    const uint8_t *data;
    uint32_t elements; /* numberOfElement as declared (all present) */
} rt_body;

/* Header checks shared by .vrt and .tri.  Structural problems are errors;
 * disagreements that still leave the data readable are violations. */
static int rt_header(mfs_rd *r, const uint8_t *p, size_t n, rt_body *body)
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
    body->data = p + HEADER_BYTES;
    body->elements = (uint32_t)num;
    return 0;
}

/* ---- .vrt: which layout the bytes hold ---- */

/* How the vertices are read.  The engine always strides 64 bytes; a file
 * that only makes sense as the document's 32-byte vertices
 * (vrt_layout=plain) is read that way so its summary is right, and the
 * reason is reported as a violation (the engine would misread it). */
typedef struct vrt_layout {
    unsigned words;   /* VRT_WORDS or VRT_PLAIN_WORDS */
    uint32_t n;       /* vertices */
    int plain_by_size, plain_by_skin;
    /* the 64-byte reading's skin fields */
    uint64_t badskin;                        /* vertices with any problem below */
    mfs_tally badrange, badsum, badindex;
    uint32_t max_joint;                      /* 1 + highest index with a weight; 0 if none */
} vrt_layout;

static const uint8_t *vrt_record(const rt_body *b, unsigned words, uint32_t i)
{
    return b->data + 4 * (size_t)i * words;
}

static void vrt_floats(const uint8_t *rec, float v[VRT_PLAIN_WORDS])
{
    for (int k = 0; k < VRT_PLAIN_WORDS; k++)
        v[k] = mfs_ld_f32(rec + 4 * k);
}

/* The skin fields of a 64-byte record: weights in [0, 1] summing to 1, or
 * all zero (a vertex no bone moves); every index inside the shader's joint
 * arrays, even under a zero weight (the shader still fetches it). */
static void vrt_skin(vrt_layout *l, const uint8_t *rec, uint32_t i)
{
    double sum = 0;
    int range = -1, index = -1;
    for (int k = 0; k < VRT_SKIN; k++) {
        float w = mfs_ld_f32(rec + 32 + 4 * k);
        uint32_t b = mfs_ld_u32(rec + 48 + 4 * k);
        if (!(w >= 0.0f && w <= 1.0f)) {
            if (range < 0)
                range = k;
            continue;
        }
        sum += w;
        if (b >= VRT_MAX_JOINTS) {
            if (index < 0)
                index = k;
        } else if (w > 0.0f && b + 1 > l->max_joint) {
            l->max_joint = b + 1;
        }
    }
    int badsum = range < 0 && sum != 0.0 && fabs(sum - 1.0) > VRT_WEIGHT_TOL;
    if (range >= 0)
        mfs_tally_add(&l->badrange, i, mfs_ld_f32(rec + 32 + 4 * range));
    if (badsum)
        mfs_tally_add(&l->badsum, i, sum);
    if (index >= 0)
        mfs_tally_add(&l->badindex, i, mfs_ld_u32(rec + 48 + 4 * index));
    l->badskin += range >= 0 || badsum || index >= 0;
}

/* 1 if every 32-byte record has finite values and a unit normal.  (Zero
 * normals are not accepted here: read at a 32-byte stride, the skin half
 * of a 64-byte vertex whose b1..b3 are 0 has one.) */
static int vrt_plain_clean(const rt_body *b)
{
    if (b->elements % VRT_PLAIN_WORDS)
        return 0;
    for (uint32_t i = 0; i < b->elements / VRT_PLAIN_WORDS; i++) {
        float v[VRT_PLAIN_WORDS];
        double len;
        vrt_floats(vrt_record(b, VRT_PLAIN_WORDS, i), v);
        for (int k = 0; k < VRT_PLAIN_WORDS; k++)
            if (!isfinite(v[k]))
                return 0;
        if (mfs_rd_normal_class(v + 5, &len) != 0)
            return 0;
    }
    return 1;
}

static void vrt_decide(const rt_body *b, vrt_layout *l)
{
    memset(l, 0, sizeof *l);
    l->words = VRT_WORDS;
    if (b->elements % VRT_WORDS) {
        if (b->elements % VRT_PLAIN_WORDS == 0) {
            l->words = VRT_PLAIN_WORDS;
            l->plain_by_size = 1;
        }
        l->n = b->elements / l->words;
        return;
    }
    l->n = b->elements / VRT_WORDS;
    for (uint32_t i = 0; i < l->n; i++)
        vrt_skin(l, vrt_record(b, VRT_WORDS, i), i);
    if (l->badskin && vrt_plain_clean(b)) {
        l->words = VRT_PLAIN_WORDS;
        l->n = b->elements / VRT_PLAIN_WORDS;
        l->plain_by_skin = 1;
        l->max_joint = 0;
    }
}

static void vrt_report_layout(mfs_rd *r, const rt_body *b, const vrt_layout *l)
{
    unsigned long long bytes = 4ull * b->elements;
    if (l->plain_by_size)
        mfs_rd_violation(r, "%llu bytes of vertices is not a multiple of 64, the engine's "
                         "VertexData (x y z u v nx ny nz, 4 weights, 4 bone indices): %lu "
                         "32-byte vertices of vrt_layout=plain, which the engine would read "
                         "as %llu 64-byte ones", bytes, (unsigned long)l->n, bytes / 64);
    else if (b->elements % VRT_WORDS)
        mfs_rd_violation(r, "%llu bytes of vertices is not a multiple of 64, the engine's "
                         "VertexData (x y z u v nx ny nz, 4 weights, 4 bone indices)", bytes);
    else if (l->plain_by_skin)
        mfs_rd_violation(r, "the skin fields of %llu vertices are unusable read with the "
                         "engine's 64-byte stride, but the file reads cleanly as %lu 32-byte "
                         "vertices of vrt_layout=plain, which the engine would misread",
                         (unsigned long long)l->badskin, (unsigned long)l->n);
    else {
        if (l->badrange.n)
            mfs_rd_violation(r, "%llu vertices have a skin weight outside [0, 1] (first: "
                             "vertex %llu, weight %g)", (unsigned long long)l->badrange.n,
                             (unsigned long long)l->badrange.first, l->badrange.value);
        if (l->badsum.n)
            mfs_rd_violation(r, "%llu vertices have skin weights summing to neither 1 nor 0 "
                             "(first: vertex %llu, sum %.9g)", (unsigned long long)l->badsum.n,
                             (unsigned long long)l->badsum.first, l->badsum.value);
        if (l->badindex.n)
            mfs_rd_violation(r, "%llu vertices have a bone index beyond the %d joints of the "
                             "engine's skinning shader (first: vertex %llu, index %.0f)",
                             (unsigned long long)l->badindex.n, VRT_MAX_JOINTS,
                             (unsigned long long)l->badindex.first, l->badindex.value);
    }
}

int mfs_read_vrt(mfs_rd *r, const uint8_t *p, size_t n)
{
    rt_body b;
    if (rt_header(r, p, n, &b))
        return -1;
    vrt_layout l;
    vrt_decide(&b, &l);
    vrt_report_layout(r, &b, &l);
    r->sum->meshes = 1;
    r->sum->vertices = l.n;
    r->sum->bones = l.max_joint;
    mfs_tally nonfinite = {0}, badnormal = {0}, zeronormal = {0};
    for (uint32_t i = 0; i < l.n; i++) {
        float v[VRT_PLAIN_WORDS];
        vrt_floats(vrt_record(&b, l.words, i), v);
        for (int k = 0; k < VRT_PLAIN_WORDS; k++)
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

/* Reads the sibling's header and layout only as far as needed, without
 * letting its own findings into this file's summary.  0 with *b and *l
 * set, or -1 (warned). */
static int sibling_vertices(mfs_rd *r, const uint8_t *vrt, size_t vrt_n, const char *vrt_name,
                            const char *what, rt_body *b, vrt_layout *l)
{
    if (!vrt) {
        mfs_rd_warn(r, "sibling %s is missing: %s not checked against vertices", vrt_name,
                    what);
        return -1;
    }
    mfs_summary scratch;
    mfs_err serr;
    mfs_rd sr;
    mfs_rd_begin(&sr, &scratch, 0, &serr);
    if (rt_header(&sr, vrt, vrt_n, b)) {
        mfs_rd_warn(r, "sibling %s unreadable (%s): %s not checked against vertices", vrt_name,
                    serr.msg, what);
        return -1;
    }
    vrt_decide(b, l);
    return 0;
}

int mfs_read_tri(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name)
{
    rt_body b;
    if (rt_header(r, p, n, &b))
        return -1;
    if (b.elements % 3)
        mfs_rd_violation(r, "numberOfElement %lu is not a multiple of 3 (indices per triangle)",
                         (unsigned long)b.elements);
    r->sum->meshes = 1;
    r->sum->triangles = b.elements / 3;
    rt_body vb;
    vrt_layout l;
    if (sibling_vertices(r, vrt, vrt_n, vrt_name, "indices", &vb, &l))
        return 0;
    mfs_tally out = {0};
    for (uint32_t i = 0; i < b.elements; i++) {
        uint32_t ix = mfs_ld_u32(b.data + 4 * (size_t)i);
        if (ix >= l.n)
            mfs_tally_add(&out, i, ix);
    }
    if (out.n)
        mfs_rd_violation(r, "%llu indices out of range (first: index %llu = %.0f; %s has %lu "
                         "vertices)", (unsigned long long)out.n, (unsigned long long)out.first,
                         out.value, vrt_name, (unsigned long)l.n);
    return 0;
}

/* ---- .sph ---- */

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
    vrt_layout l;
    if (sibling_vertices(r, vrt, vrt_n, vrt_name, "sphere", &vb, &l))
        return;
    const mfs_summary *s = r->sum;
    mfs_tally out = {0};
    for (uint32_t i = 0; i < l.n; i++) {
        float v[VRT_PLAIN_WORDS];
        double d;
        vrt_floats(vrt_record(&vb, l.words, i), v);
        if (outside_sphere(s->center, s->radius, v, &d))
            mfs_tally_add(&out, i, d);
    }
    if (out.n)
        mfs_rd_violation(r, "%llu vertices of %s lie outside the sphere (first: vertex %llu at "
                         "distance %.9g > radius %.9g)", (unsigned long long)out.n, vrt_name,
                         (unsigned long long)out.first, out.value, (double)s->radius);
}

/* Bytes that must be zero: the Align16 base (0-15) and the padding after
 * the radius (36-47). */
static void sph_zeros(mfs_rd *r, const uint8_t *p, int from, int to, const char *what)
{
    for (int i = from; i < to; i++)
        if (p[i]) {
            mfs_rd_violation(r, "offset %d: byte 0x%02x in %s, expected 0", i, p[i], what);
            return;
        }
}

int mfs_read_sph(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name)
{
    if (n < SPH_BYTES)
        return mfs_errf(r->err, "file is %zu bytes, a .sph is %d (the engine's BoundingSphere: "
                        "16-byte Align16 base, centre x y z w at 16, radius at 32, padding)", n,
                        SPH_BYTES);
    if (n > SPH_BYTES)
        mfs_rd_violation(r, "offset %d: %zu bytes after the sphere", SPH_BYTES, n - SPH_BYTES);
    mfs_summary *s = r->sum;
    for (int i = 0; i < 3; i++)
        s->center[i] = mfs_ld_f32(p + SPH_CENTER + 4 * i);
    float w = mfs_ld_f32(p + SPH_CENTER + 12);
    s->radius = mfs_ld_f32(p + SPH_RADIUS);
    s->has_sphere = 1;
    sph_zeros(r, p, 0, SPH_CENTER, "the Align16 base (bytes 0-15)");
    if (w != 1.0f)
        mfs_rd_violation(r, "offset %d: centre w is %g, expected 1.0", SPH_CENTER + 12, (double)w);
    if (!mfs_rd_finite3(s->center) || !isfinite(s->radius) || s->radius < 0.0f)
        mfs_rd_violation(r, "sphere centre (%g %g %g) radius %g is not finite and non-negative",
                         (double)s->center[0], (double)s->center[1], (double)s->center[2],
                         (double)s->radius);
    sph_zeros(r, p, SPH_RADIUS + 4, SPH_BYTES, "the padding (bytes 36-47)");
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

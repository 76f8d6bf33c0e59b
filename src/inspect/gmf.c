/* Reader for the Leadwerks block tree: .gmf and .mdl (seed 001 and
 * research/gmf.md).  Every block is
 *   int32 tag; int32 nkids; int32 size; payload[size]; kids[nkids]
 * with size covering the block's own payload only.  Version 1 is the GMF
 * layout, version 2 adds a NUL-terminated name at the end of each
 * ANIMATIONKEYS block.  Matrices are row-vector (translation at 12..14),
 * local to the enclosing limb: global = local x parentGlobal.  Left-handed,
 * +Y up.
 *
 * Placement is read the way Leadwerks' legacy loader reads it (research
 * gmf.md, "What a real loader keeps of limb matrices"): a NODE or MESH
 * contributes only its translation (floats 12..14), a BONE nothing, so a
 * surface sits at its vertices plus the translations summed down to it.
 * The bounds are that placement.  Where full matrices would put a surface
 * elsewhere, or a NODE/MESH matrix carries rotation or scale, the reader
 * says so: a violation in a .gmf, a warning in a .mdl (mfs_rd.mdl), whose
 * Leadwerks 3/4 engine composes full matrices. */
#include "readers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/util.h"

enum {
    T_FILE = 1, T_NODE, T_MESH, T_BONE, T_VERTEXARRAY, T_INDICEARRAY, T_PROPERTIES,
    T_ANIMATIONKEYS, T_AABB, T_SURFACE, T_NEWTONCOLLISIONTREE,
};
enum { K_POSITION = 1, K_NORMAL, K_TEXCOORD, K_COLOR, K_TANGENT, K_BINORMAL, K_BONEINDICE,
       K_BONEWEIGHT };
enum { C_UBYTE = 2, C_USHORT = 4, C_INT = 6, C_UINT = 7, C_FLOAT = 8 };
enum { M_TRIANGLE_STRIP = 5, M_TRIANGLE_FAN = 6, M_TRIANGLES = 7, M_QUAD_STRIP = 8, M_QUADS = 9,
       M_POLYGON = 10 };

#define HDR 12
#define MAT_BYTES 64
/* Leadwerks' own tools truncate each of the 4 weight bytes, losing < 1
 * each: sums of 252..254 are theirs, anything else is wrong. */
#define WEIGHT_SUM 255
#define WEIGHT_SUM_MIN 252

typedef struct g_array {
    uint32_t kind, type, elements, count;
    const uint8_t *data;
    size_t at;   /* block offset, for messages */
    int usable;  /* the layout its kind requires */
} g_array;

typedef struct g_index {
    uint32_t mode, type, count;
    const uint8_t *data;
    size_t at;
} g_index;

typedef struct g_surface {
    size_t at;
    g_array *arrays;
    size_t n_arrays, cap_arrays;
    g_index *indices;
    size_t n_indices, cap_indices;
} g_surface;

typedef struct g_seq {
    const char *name; /* NULL in v1 */
    size_t name_n;
} g_seq;

typedef struct g_limb {
    float global[16]; /* full-matrix placement */
    float engine[3];  /* Leadwerks' placement: a translation */
    g_seq *seqs;
    size_t n_seqs, cap_seqs;
} g_limb;

typedef struct gmf {
    mfs_rd *r;
    const uint8_t *p;
    size_t n;
    int version;
    uint64_t limbs, bones, surfaces;
    int max_bone_index; /* -1: no BONEINDICE seen */
    size_t max_bone_at;
    unsigned mislabeled_colors;
    uint64_t truncated_weights;
    /* placement: NODE/MESH matrices with rotation or scale; surfaces that
     * full matrices would put elsewhere, and by how much at most */
    uint64_t turned_limbs, moved_surfaces;
    size_t turned_at, moved_at;
    double moved_max;
    /* sequences: the limb with the most names the summary */
    uint64_t seq_limbs, seq_limbs_at_max, seq_name_mismatch;
    size_t seq_max;
    g_seq *seq_best;
    size_t cap_best;
} gmf;

/* What a block's kids see of their parents. */
typedef struct g_ctx {
    g_limb *limb;       /* enclosing MESH/NODE/BONE, NULL at file level */
    g_surface *surface; /* set for the kids of a SURFACE */
} g_ctx;

static const char *tag_name(uint32_t tag)
{
    static const char *const names[] = {"block", "FILE", "NODE", "MESH", "BONE", "VERTEXARRAY",
                                        "INDICEARRAY", "PROPERTIES", "ANIMATIONKEYS", "AABB",
                                        "SURFACE", "NEWTONCOLLISIONTREE"};
    return tag <= T_NEWTONCOLLISIONTREE ? names[tag] : "unknown block";
}

static unsigned comp_bytes(uint32_t type)
{
    static const unsigned sz[] = {0, 1, 1, 2, 2, 2, 4, 4, 4, 8};
    return type < sizeof sz / sizeof sz[0] ? sz[type] : 0;
}


static void load_mat(const uint8_t *p, float m[16])
{
    for (int i = 0; i < 16; i++)
        m[i] = mfs_ld_f32(p + 4 * i);
}

/* The 3x3 part is identity: importer noise (1e-7) allowed. */
static int axes_identity(const float m[16])
{
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            if (fabsf(m[r * 4 + c] - (r == c ? 1.0f : 0.0f)) > 1e-5f)
                return 0;
    return 1;
}

/* Row-vector affine matrices have a right column of 0 0 0 1. */
static int right_column_ok(const float m[16])
{
    return mfs_rd_affine_row(m[3], m[7], m[11], m[15]);
}

/* ---- payloads ---- */

static int limb_payload(gmf *g, uint32_t tag, size_t at, const uint8_t *pl, size_t size,
                        const g_ctx *ctx, g_limb *limb)
{
    size_t want = tag == T_BONE ? MAT_BYTES + 4 : MAT_BYTES;
    if (size < want)
        return mfs_errf(g->r->err, "offset %zu: %s payload is %zu bytes, needs %zu", at,
                        tag_name(tag), size, want);
    if (size > want)
        mfs_rd_violation(g->r, "offset %zu: %s payload is %zu bytes, expected %zu", at,
                         tag_name(tag), size, want);
    float local[16];
    load_mat(pl, local);
    if (!right_column_ok(local))
        mfs_rd_violation(g->r, "offset %zu: %s matrix right column is (%.9g %.9g %.9g %.9g), "
                         "not (0 0 0 1)", at, tag_name(tag), (double)local[3], (double)local[7],
                         (double)local[11], (double)local[15]);
    if (ctx->limb)
        mfs_rd_mat_mul(limb->global, local, ctx->limb->global);
    else
        memcpy(limb->global, local, sizeof local);
    for (int i = 0; i < 3; i++)
        limb->engine[i] = (ctx->limb ? ctx->limb->engine[i] : 0.0f) +
                          (tag == T_BONE ? 0.0f : local[12 + i]);
    if (tag != T_BONE && !axes_identity(local) && g->turned_limbs++ == 0)
        g->turned_at = at;
    g->limbs++;
    if (tag == T_BONE) {
        int32_t id = mfs_ld_i32(pl + MAT_BYTES);
        if ((uint64_t)(int64_t)id != g->bones)
            mfs_rd_violation(g->r, "offset %zu: BONE id %ld, but it is bone %llu in file order",
                             at, (long)id, (unsigned long long)g->bones);
        g->bones++;
    }
    return 0;
}

static int file_payload(gmf *g, size_t at, const uint8_t *pl, size_t size, unsigned depth,
                        int32_t nkids)
{
    if (depth > 0) {
        mfs_rd_violation(g->r, "offset %zu: FILE block nested inside another block", at);
        return 0;
    }
    if (size < 4)
        return mfs_errf(g->r->err, "offset %zu: FILE payload is %zu bytes, needs 4", at, size);
    if (size > 4)
        mfs_rd_violation(g->r, "offset %zu: FILE payload is %zu bytes, expected 4", at, size);
    int32_t v = mfs_ld_i32(pl);
    if (v != 1 && v != 2)
        return mfs_errf(g->r->err, "offset %zu: version %ld (Leadwerks reads 1 and 2)", at + HDR,
                        (long)v);
    g->version = v;
    g->r->sum->version = v;
    if (nkids != 1)
        mfs_rd_warn(g->r, "FILE block has %ld children (Leadwerks files have exactly one)",
                    (long)nkids);
    return 0;
}

static int properties_payload(gmf *g, size_t at, const uint8_t *pl, size_t size, int root)
{
    if (size < 4)
        return mfs_errf(g->r->err, "offset %zu: PROPERTIES payload is %zu bytes, needs 4", at,
                        size);
    int32_t count = mfs_ld_i32(pl);
    if (count < 0 || (uint64_t)count * 2 > size - 4)
        return mfs_errf(g->r->err, "offset %zu: PROPERTIES declares %ld pairs but only %zu bytes "
                        "remain in the block", at, (long)count, size - 4);
    size_t off = 4;
    int64_t broken = 0, first_broken = 0;
    for (int64_t i = 0; i < 2 * (int64_t)count; i++) {
        const uint8_t *nul = memchr(pl + off, 0, size - off);
        if (!nul)
            return mfs_errf(g->r->err, "offset %zu: PROPERTIES string %lld is not terminated "
                            "inside the block", at + HDR + off, (long long)i);
        size_t len = (size_t)(nul - (pl + off));
        if ((memchr(pl + off, '\r', len) || memchr(pl + off, '\n', len)) && broken++ == 0)
            first_broken = i;
        if (root && i % 2 == 0 && len == 4 && memcmp(pl + off, "name", 4) == 0 &&
            !g->r->sum->name[0]) {
            const uint8_t *v = nul + 1;
            const uint8_t *vend = memchr(v, 0, size - off - len - 1);
            if (vend)
                mfs_rd_name(g->r->sum->name, sizeof g->r->sum->name, (const char *)v,
                            (size_t)(vend - v));
        }
        off += len + 1;
    }
    /* MemReader::ReadLine stops at NUL, LF or CR (research/gmf.md Q1): the
     * loader cuts such a string there and misreads the pairs after it. */
    if (broken)
        mfs_rd_violation(g->r, "offset %zu: PROPERTIES string %lld holds a CR or LF (Leadwerks "
                         "reads strings up to NUL, CR or LF; %lld such strings)", at,
                         (long long)first_broken, (long long)broken);
    if (off != size)
        mfs_rd_violation(g->r, "offset %zu: %zu bytes after the last property", at, size - off);
    return 0;
}

static int animkeys_payload(gmf *g, size_t at, const uint8_t *pl, size_t size, g_limb *limb)
{
    if (size < 4)
        return mfs_errf(g->r->err, "offset %zu: ANIMATIONKEYS payload is %zu bytes, needs 4", at,
                        size);
    int32_t frames = mfs_ld_i32(pl);
    if (frames < 0 || (uint64_t)frames * MAT_BYTES > size - 4)
        return mfs_errf(g->r->err, "offset %zu: ANIMATIONKEYS declares %ld frames but only %zu "
                        "bytes remain in the block", at, (long)frames, size - 4);
    mfs_tally bad = {0};
    for (int32_t f = 0; f < frames; f++) {
        float m[16];
        load_mat(pl + 4 + (size_t)f * MAT_BYTES, m);
        if (!right_column_ok(m))
            mfs_tally_add(&bad, (uint64_t)f, 0);
    }
    if (bad.n)
        mfs_rd_violation(g->r, "offset %zu: %llu animation frames have a right column other "
                         "than (0 0 0 1) (first: frame %llu)", at, (unsigned long long)bad.n,
                         (unsigned long long)bad.first);
    size_t off = 4 + (size_t)frames * MAT_BYTES;
    g_seq seq = {NULL, 0};
    if (g->version == 2) {
        const uint8_t *nul = off < size ? memchr(pl + off, 0, size - off) : NULL;
        if (!nul)
            mfs_rd_violation(g->r, "offset %zu: version 2 ANIMATIONKEYS without a "
                             "NUL-terminated name", at);
        else {
            seq.name = (const char *)pl + off;
            seq.name_n = (size_t)(nul - (pl + off));
            off += seq.name_n + 1;
        }
    }
    if (off != size)
        mfs_rd_violation(g->r, "offset %zu: %zu bytes after the animation %s", at, size - off,
                         g->version == 2 ? "name" : "frames");
    if (!limb) {
        mfs_rd_violation(g->r, "offset %zu: ANIMATIONKEYS outside a MESH, NODE or BONE", at);
        return 0;
    }
    if (mfs_rd_grow(g->r, (void **)&limb->seqs, &limb->cap_seqs, limb->n_seqs + 1, sizeof seq))
        return -1;
    limb->seqs[limb->n_seqs++] = seq;
    return 0;
}

/* Checks the declared layout against the block size.  The Leadwerks 3.0
 * files label 4-byte colours as float x3: tolerated, read by size. */
static int vertexarray_payload(gmf *g, size_t at, const uint8_t *pl, size_t size, g_ctx *ctx)
{
    if (size < 16)
        return mfs_errf(g->r->err, "offset %zu: VERTEXARRAY payload is %zu bytes, needs 16", at,
                        size);
    int32_t count = mfs_ld_i32(pl);
    g_array a = {mfs_ld_u32(pl + 4), mfs_ld_u32(pl + 8), mfs_ld_u32(pl + 12), 0, pl + 16, at, 1};
    unsigned cb = comp_bytes(a.type);
    if (count < 0)
        return mfs_errf(g->r->err, "offset %zu: VERTEXARRAY has a negative vertex count (%ld)",
                        at, (long)count);
    if (cb == 0)
        return mfs_errf(g->r->err, "offset %zu: VERTEXARRAY has unknown component type %lu", at,
                        (unsigned long)a.type);
    if (a.elements < 1 || a.elements > 4)
        return mfs_errf(g->r->err, "offset %zu: VERTEXARRAY has %lu elements per vertex "
                        "(1..4)", at, (unsigned long)a.elements);
    a.count = (uint32_t)count;
    uint64_t want = (uint64_t)a.count * a.elements * cb, have = size - 16;
    if (have != want && a.kind == K_COLOR && have == (uint64_t)a.count * 4) {
        g->mislabeled_colors++;
        a.type = C_UBYTE, a.elements = 4;
    } else if (have < want) {
        return mfs_errf(g->r->err, "offset %zu: VERTEXARRAY declares %lu vertices x %lu x %u "
                        "bytes (%llu) but its size leaves %llu", at, (unsigned long)a.count,
                        (unsigned long)a.elements, cb, (unsigned long long)want,
                        (unsigned long long)have);
    } else if (have > want) {
        mfs_rd_violation(g->r, "offset %zu: VERTEXARRAY size exceeds its %llu data bytes by "
                         "%llu", at, (unsigned long long)want, (unsigned long long)(have - want));
    }
    int f3 = a.type == C_FLOAT && a.elements == 3;
    switch (a.kind) {
    case K_POSITION: case K_NORMAL: case K_TANGENT: case K_BINORMAL: a.usable = f3; break;
    case K_TEXCOORD: a.usable = a.type == C_FLOAT && a.elements == 2; break;
    case K_COLOR: break;
    case K_BONEINDICE: case K_BONEWEIGHT: a.usable = a.type == C_UBYTE && a.elements == 4; break;
    default:
        mfs_rd_violation(g->r, "offset %zu: unknown vertex array kind %lu", at,
                         (unsigned long)a.kind);
    }
    if (!a.usable)
        mfs_rd_violation(g->r, "offset %zu: vertex array kind %lu stored as type %lu x %lu, "
                         "not the layout Leadwerks reads", at, (unsigned long)a.kind,
                         (unsigned long)a.type, (unsigned long)a.elements);
    if (!ctx->surface) {
        mfs_rd_violation(g->r, "offset %zu: VERTEXARRAY outside a SURFACE", at);
        return 0;
    }
    g_surface *s = ctx->surface;
    if (mfs_rd_grow(g->r, (void **)&s->arrays, &s->cap_arrays, s->n_arrays + 1, sizeof a))
        return -1;
    s->arrays[s->n_arrays++] = a;
    return 0;
}

static int indicearray_payload(gmf *g, size_t at, const uint8_t *pl, size_t size, g_ctx *ctx)
{
    if (size < 12)
        return mfs_errf(g->r->err, "offset %zu: INDICEARRAY payload is %zu bytes, needs 12", at,
                        size);
    int32_t count = mfs_ld_i32(pl);
    g_index ix = {mfs_ld_u32(pl + 4), mfs_ld_u32(pl + 8), 0, pl + 12, at};
    if (count < 0)
        return mfs_errf(g->r->err, "offset %zu: INDICEARRAY has a negative count (%ld)", at,
                        (long)count);
    unsigned cb = ix.type == C_UBYTE ? 1 : ix.type == C_USHORT ? 2
                : (ix.type == C_INT || ix.type == C_UINT) ? 4 : 0;
    if (cb == 0)
        return mfs_errf(g->r->err, "offset %zu: INDICEARRAY has index type %lu (Leadwerks reads "
                        "4 = unsigned short and 7 = unsigned int)", at, (unsigned long)ix.type);
    if (ix.type != C_USHORT && ix.type != C_UINT)
        mfs_rd_violation(g->r, "offset %zu: INDICEARRAY index type %lu (Leadwerks reads 4 and 7)",
                         at, (unsigned long)ix.type);
    ix.count = (uint32_t)count;
    uint64_t want = (uint64_t)ix.count * cb, have = size - 12;
    if (have < want)
        return mfs_errf(g->r->err, "offset %zu: INDICEARRAY declares %lu indices (%llu bytes) "
                        "but its size leaves %llu", at, (unsigned long)ix.count,
                        (unsigned long long)want, (unsigned long long)have);
    if (have > want)
        mfs_rd_violation(g->r, "offset %zu: INDICEARRAY size exceeds its %llu data bytes by "
                         "%llu", at, (unsigned long long)want, (unsigned long long)(have - want));
    if (ix.mode < 1 || ix.mode > M_POLYGON)
        mfs_rd_violation(g->r, "offset %zu: unknown primitive mode %lu", at,
                         (unsigned long)ix.mode);
    if (ix.mode == M_TRIANGLES && ix.count % 3)
        mfs_rd_violation(g->r, "offset %zu: %lu triangle indices, not a multiple of 3", at,
                         (unsigned long)ix.count);
    if (!ctx->surface) {
        mfs_rd_violation(g->r, "offset %zu: INDICEARRAY outside a SURFACE", at);
        return 0;
    }
    g_surface *s = ctx->surface;
    if (mfs_rd_grow(g->r, (void **)&s->indices, &s->cap_indices, s->n_indices + 1, sizeof ix))
        return -1;
    s->indices[s->n_indices++] = ix;
    return 0;
}

/* ---- surfaces ---- */

static uint32_t index_at(const g_index *ix, uint32_t i)
{
    switch (ix->type) {
    case C_UBYTE: return ix->data[i];
    case C_USHORT: return mfs_ld_u16(ix->data + 2 * (size_t)i);
    default: return mfs_ld_u32(ix->data + 4 * (size_t)i);
    }
}

static uint64_t triangles_of(const g_index *ix)
{
    uint64_t n = ix->count;
    switch (ix->mode) {
    case M_TRIANGLES: return n / 3;
    case M_TRIANGLE_STRIP: case M_TRIANGLE_FAN: case M_POLYGON: return n >= 3 ? n - 2 : 0;
    case M_QUADS: return n / 4 * 2;
    case M_QUAD_STRIP: return n >= 4 ? (n - 2) / 2 * 2 : 0;
    default: return 0;
    }
}

static void surface_indices(gmf *g, const g_surface *s, uint32_t nv)
{
    for (size_t k = 0; k < s->n_indices; k++) {
        const g_index *ix = &s->indices[k];
        g->r->sum->triangles += triangles_of(ix);
        mfs_tally out = {0};
        for (uint32_t i = 0; i < ix->count; i++) {
            uint32_t v = index_at(ix, i);
            if (v >= nv)
                mfs_tally_add(&out, i, v);
        }
        if (out.n)
            mfs_rd_violation(g->r, "offset %zu: %llu indices out of range (first: index %llu = "
                             "%.0f, surface has %lu vertices)", ix->at,
                             (unsigned long long)out.n, (unsigned long long)out.first, out.value,
                             (unsigned long)nv);
    }
}

/* Bounds grow by Leadwerks' placement; the full-matrix one is compared. */
static void surface_positions(gmf *g, const g_array *a, const g_limb *limb, size_t surf_at)
{
    const float *m = limb->global, *e = limb->engine;
    mfs_tally bad = {0};
    double moved = 0;
    for (uint32_t i = 0; i < a->count; i++) {
        const uint8_t *q = a->data + 12 * (size_t)i;
        float v[3] = {mfs_ld_f32(q), mfs_ld_f32(q + 4), mfs_ld_f32(q + 8)}, p[3];
        if (!mfs_rd_finite3(v)) {
            mfs_tally_add(&bad, i, 0);
            continue;
        }
        double d2 = 0, f2 = 0;
        for (int j = 0; j < 3; j++) {
            double full = (double)v[0] * m[j] + (double)v[1] * m[4 + j] +
                          (double)v[2] * m[8 + j] + m[12 + j];
            p[j] = v[j] + e[j];
            d2 += (full - p[j]) * (full - p[j]);
            f2 += full * full;
        }
        /* float sums of translations against a matrix product: 1e-4 plus
         * a relative 1e-5 is rounding, more is placement */
        double d = sqrt(d2);
        if (d > 1e-4 + 1e-5 * sqrt(f2) && d > moved)
            moved = d;
        mfs_rd_point(g->r, p);
    }
    if (moved > 0) {
        if (g->moved_surfaces++ == 0)
            g->moved_at = surf_at;
        if (moved > g->moved_max)
            g->moved_max = moved;
    }
    if (bad.n)
        mfs_rd_violation(g->r, "offset %zu: %llu positions are NaN or infinite (first: %llu)",
                         a->at, (unsigned long long)bad.n, (unsigned long long)bad.first);
}

static void surface_normals(gmf *g, const g_array *a)
{
    mfs_tally bad = {0}, zero = {0};
    for (uint32_t i = 0; i < a->count; i++) {
        const uint8_t *q = a->data + 12 * (size_t)i;
        float v[3] = {mfs_ld_f32(q), mfs_ld_f32(q + 4), mfs_ld_f32(q + 8)};
        double len;
        int c = mfs_rd_normal_class(v, &len);
        if (c == 1)
            mfs_tally_add(&zero, i, 0);
        else if (c == 2)
            mfs_tally_add(&bad, i, len);
    }
    if (bad.n)
        mfs_rd_violation(g->r, "offset %zu: %llu normals are not unit length (first: %llu, "
                         "length %g)", a->at, (unsigned long long)bad.n,
                         (unsigned long long)bad.first, bad.value);
    if (zero.n)
        mfs_rd_warn(g->r, "offset %zu: %llu normals are zero (first: %llu)", a->at,
                    (unsigned long long)zero.n, (unsigned long long)zero.first);
}

static void surface_skin(gmf *g, const g_array *ids, const g_array *wts)
{
    if (ids) {
        for (size_t i = 0; i < (size_t)ids->count * 4; i++)
            if ((int)ids->data[i] > g->max_bone_index) {
                g->max_bone_index = ids->data[i];
                g->max_bone_at = ids->at;
            }
    }
    if (!wts)
        return;
    mfs_tally bad = {0};
    for (uint32_t i = 0; i < wts->count; i++) {
        const uint8_t *w = wts->data + 4 * (size_t)i;
        unsigned sum = (unsigned)w[0] + w[1] + w[2] + w[3];
        if (sum == WEIGHT_SUM)
            continue;
        if (sum >= WEIGHT_SUM_MIN && sum < WEIGHT_SUM)
            g->truncated_weights++;
        else
            mfs_tally_add(&bad, i, sum);
    }
    if (bad.n)
        mfs_rd_violation(g->r, "offset %zu: %llu vertices' weight bytes do not sum to 255 "
                         "(first: vertex %llu, sum %.0f)", wts->at, (unsigned long long)bad.n,
                         (unsigned long long)bad.first, bad.value);
}

/* Finds the first usable array of a kind; complains about a second one. */
static const g_array *find_array(gmf *g, const g_surface *s, uint32_t kind, const char *what)
{
    const g_array *found = NULL;
    for (size_t i = 0; i < s->n_arrays; i++) {
        if (s->arrays[i].kind != kind)
            continue;
        if (found) {
            mfs_rd_violation(g->r, "offset %zu: SURFACE has a second %s array", s->at, what);
            break;
        }
        found = &s->arrays[i];
    }
    return found;
}

static void finish_surface(gmf *g, const g_surface *s, const g_limb *limb)
{
    const g_array *pos = find_array(g, s, K_POSITION, "POSITION");
    const g_array *nrm = find_array(g, s, K_NORMAL, "NORMAL");
    const g_array *ids = find_array(g, s, K_BONEINDICE, "BONEINDICE");
    const g_array *wts = find_array(g, s, K_BONEWEIGHT, "BONEWEIGHT");
    uint32_t nv = pos ? pos->count : 0;
    if (!pos)
        mfs_rd_violation(g->r, "offset %zu: SURFACE has no POSITION array", s->at);
    unsigned texcoords = 0;
    for (size_t i = 0; i < s->n_arrays; i++) {
        if (s->arrays[i].count != nv)
            mfs_rd_violation(g->r, "offset %zu: vertex array has %lu vertices, the surface %lu",
                             s->arrays[i].at, (unsigned long)s->arrays[i].count,
                             (unsigned long)nv);
        texcoords += s->arrays[i].kind == K_TEXCOORD;
    }
    if (texcoords > 2)
        mfs_rd_warn(g->r, "offset %zu: SURFACE has %u TEXCOORD arrays (GMF stores up to two)",
                    s->at, texcoords);
    if (!ids != !wts)
        mfs_rd_violation(g->r, "offset %zu: SURFACE has %s without %s", s->at,
                         ids ? "BONEINDICE" : "BONEWEIGHT", ids ? "BONEWEIGHT" : "BONEINDICE");
    g->r->sum->vertices += nv;
    if (pos && pos->usable)
        surface_positions(g, pos, limb, s->at);
    if (nrm && nrm->usable && nrm->count == nv)
        surface_normals(g, nrm);
    surface_skin(g, ids && ids->usable && ids->count == nv ? ids : NULL,
                 wts && wts->usable && wts->count == nv ? wts : NULL);
    surface_indices(g, s, nv);
}

/* ---- sequences ---- */

static int same_name(const g_seq *a, const g_seq *b)
{
    if (!a->name || !b->name)
        return !a->name && !b->name;
    return a->name_n == b->name_n && memcmp(a->name, b->name, a->name_n) == 0;
}

static int finish_limb_seqs(gmf *g, const g_limb *limb)
{
    if (limb->n_seqs == 0)
        return 0;
    g->seq_limbs++;
    if (limb->n_seqs == g->seq_max) {
        g->seq_limbs_at_max++;
        for (size_t i = 0; i < limb->n_seqs; i++)
            if (!same_name(&limb->seqs[i], &g->seq_best[i])) {
                g->seq_name_mismatch++;
                break;
            }
        return 0;
    }
    if (limb->n_seqs < g->seq_max)
        return 0;
    if (mfs_rd_grow(g->r, (void **)&g->seq_best, &g->cap_best, limb->n_seqs, sizeof(g_seq)))
        return -1;
    memcpy(g->seq_best, limb->seqs, limb->n_seqs * sizeof(g_seq));
    g->seq_max = limb->n_seqs;
    g->seq_limbs_at_max = 1;
    return 0;
}

/* ---- the walk ---- */

static int block(gmf *g, size_t *off, unsigned depth, g_ctx *ctx);

static int kids(gmf *g, size_t *off, unsigned depth, int32_t nkids, g_ctx *ctx)
{
    for (int32_t i = 0; i < nkids; i++)
        if (block(g, off, depth + 1, ctx))
            return -1;
    return 0;
}

static int payload(gmf *g, uint32_t tag, size_t at, const uint8_t *pl, size_t size,
                   unsigned depth, int32_t nkids, g_ctx *ctx, g_ctx *kctx)
{
    switch (tag) {
    case T_FILE:
        return file_payload(g, at, pl, size, depth, nkids);
    case T_NODE: case T_MESH: case T_BONE:
        return limb_payload(g, tag, at, pl, size, ctx, kctx->limb);
    case T_SURFACE:
        if (size)
            mfs_rd_violation(g->r, "offset %zu: SURFACE payload is %zu bytes, expected 0", at,
                             size);
        if (!ctx->limb)
            mfs_rd_violation(g->r, "offset %zu: SURFACE outside a MESH or NODE", at);
        g->surfaces++;
        return 0;
    case T_VERTEXARRAY:
        return vertexarray_payload(g, at, pl, size, ctx);
    case T_INDICEARRAY:
        return indicearray_payload(g, at, pl, size, ctx);
    case T_PROPERTIES:
        return properties_payload(g, at, pl, size, ctx->limb && g->limbs == 1);
    case T_ANIMATIONKEYS:
        return animkeys_payload(g, at, pl, size, ctx->limb);
    case T_AABB: case T_NEWTONCOLLISIONTREE:
        return 0; /* defined, never seen in real files: skipped by size */
    default:
        mfs_rd_warn(g->r, "offset %zu: unknown block tag %lu skipped (%zu bytes)", at,
                    (unsigned long)tag, size);
        return 0;
    }
}

static int block(gmf *g, size_t *off, unsigned depth, g_ctx *ctx)
{
    size_t at = *off;
    if (depth >= MFS_INSPECT_MAX_DEPTH)
        return mfs_errf(g->r->err, "offset %zu: blocks nested deeper than %d levels", at,
                        MFS_INSPECT_MAX_DEPTH);
    if (g->n - at < HDR)
        return mfs_errf(g->r->err, "offset %zu: block header needs 12 bytes but only %zu "
                        "remain", at, g->n - at);
    uint32_t tag = mfs_ld_u32(g->p + at);
    int32_t nkids = mfs_ld_i32(g->p + at + 4), size = mfs_ld_i32(g->p + at + 8);
    size_t left = g->n - at - HDR;
    if (size < 0 || (size_t)size > left)
        return mfs_errf(g->r->err, "offset %zu: %s declares a payload of %ld bytes but only %zu "
                        "remain", at, tag_name(tag), (long)size, left);
    left -= (size_t)size;
    if (nkids < 0 || (uint64_t)nkids * HDR > left)
        return mfs_errf(g->r->err, "offset %zu: %s declares %ld child blocks but only %zu bytes "
                        "remain", at, tag_name(tag), (long)nkids, left);

    g_limb limb = {{0}, {0}, NULL, 0, 0};
    g_surface surf = {at, NULL, 0, 0, NULL, 0, 0};
    int is_limb = tag == T_NODE || tag == T_MESH || tag == T_BONE;
    g_ctx kctx = {is_limb ? &limb : ctx->limb, tag == T_SURFACE ? &surf : NULL};
    int rc = payload(g, tag, at, g->p + at + HDR, (size_t)size, depth, nkids, ctx, &kctx);
    *off = at + HDR + (size_t)size;
    if (rc == 0)
        rc = kids(g, off, depth, nkids, &kctx);
    if (rc == 0 && tag == T_SURFACE && ctx->limb)
        finish_surface(g, &surf, ctx->limb);
    if (rc == 0 && is_limb)
        rc = finish_limb_seqs(g, &limb);
    free(limb.seqs);
    free(surf.arrays);
    free(surf.indices);
    return rc;
}

/* ---- whole file ---- */

/* Leadwerks' own tools write rotation and scale into limbs (5 of the 8 real
 * .mdl files in shared/testdata/real/mdl have a MESH matrix with rotation or
 * scale), which their own engine composes: in a .mdl it is a warning.  A
 * .gmf is read by the legacy loader, which keeps only translations and so
 * draws such a file misplaced: a violation.  docs/formats/gmf.md,
 * "Placement". */
static void placement_finding(gmf *g)
{
    char limbs[80] = "", surfs[112] = "";
    if (g->turned_limbs)
        snprintf(limbs, sizeof limbs, " %llu NODE/MESH matrices rotate/scale (first: offset "
                 "%zu)%s", (unsigned long long)g->turned_limbs, g->turned_at,
                 g->moved_surfaces ? ";" : "");
    if (g->moved_surfaces)
        snprintf(surfs, sizeof surfs, " %llu surfaces up to %.6g off full-matrix placement "
                 "(first: offset %zu)", (unsigned long long)g->moved_surfaces, g->moved_max,
                 g->moved_at);
    if (g->r->mdl)
        mfs_rd_warn(g->r, "placement (Leadwerks keeps only NODE/MESH translations, no BONE "
                    "matrix; bounds follow it):%s%s", limbs, surfs);
    else
        mfs_rd_violation(g->r, "placement (the legacy .gmf loader keeps only NODE/MESH "
                         "translations, no BONE matrix; bounds follow it):%s%s",
                         limbs, surfs);
}

static void finish_file(gmf *g)
{
    mfs_summary *s = g->r->sum;
    s->meshes = g->surfaces;
    s->bones = g->bones;
    s->nodes = g->limbs;
    s->animations = g->seq_max;
    for (size_t i = 0; i < g->seq_max && g->version == 2; i++)
        mfs_rd_anim_name(g->r, g->seq_best[i].name ? g->seq_best[i].name : "",
                         g->seq_best[i].name_n);
    if (g->max_bone_index >= 0 && (uint64_t)g->max_bone_index >= g->bones)
        mfs_rd_violation(g->r, "offset %zu: BONEINDICE names bone %d but the file has %llu "
                         "bones", g->max_bone_at, g->max_bone_index,
                         (unsigned long long)g->bones);
    if (g->mislabeled_colors)
        mfs_rd_warn(g->r, "%u COLOR arrays are labelled with another layout but hold 4 bytes "
                    "per vertex (as in Leadwerks 3.0 files): read by their size",
                    g->mislabeled_colors);
    if (g->truncated_weights)
        mfs_rd_warn(g->r, "%llu vertices' weight bytes sum to 252..254 (truncation, as in "
                    "Leadwerks' own files)", (unsigned long long)g->truncated_weights);
    if (g->turned_limbs || g->moved_surfaces)
        placement_finding(g);
    if (g->seq_limbs > g->seq_limbs_at_max)
        mfs_rd_warn(g->r, "%llu of %llu animated limbs carry fewer than %zu sequences",
                    (unsigned long long)(g->seq_limbs - g->seq_limbs_at_max),
                    (unsigned long long)g->seq_limbs, g->seq_max);
    if (g->seq_name_mismatch)
        mfs_rd_warn(g->r, "%llu limbs name their sequences differently from the first",
                    (unsigned long long)g->seq_name_mismatch);
}

int mfs_read_gmf(mfs_rd *r, const uint8_t *p, size_t n)
{
    if (n < HDR + 4)
        return mfs_errf(r->err, "file is %zu bytes, shorter than a 16-byte FILE block", n);
    if (mfs_ld_u32(p) != T_FILE)
        return mfs_errf(r->err, "offset 0: first block has tag %lu, expected FILE (1)",
                        (unsigned long)mfs_ld_u32(p));
    gmf g = {.r = r, .p = p, .n = n, .max_bone_index = -1};
    g_ctx top = {NULL, NULL};
    size_t off = 0;
    int rc = block(&g, &off, 0, &top);
    if (rc == 0) {
        if (off != n)
            mfs_rd_violation(r, "offset %zu: %zu bytes after the FILE block", off, n - off);
        finish_file(&g);
    }
    free(g.seq_best);
    return rc;
}

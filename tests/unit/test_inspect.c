/* Tests for the strict readers (src/inspect/).  Every sample is built byte by
 * byte here from the format documents (seeds, research/), never through the
 * writers, so the readers stay an independent second opinion. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "meshfs/util.h"
#include "meshfs/inspect.h"

/* ---- a byte builder ---- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_u32(buf *b, uint32_t v)
{
    uint8_t x[4];
    mfs_st_u32(x, v);
    put(b, x, 4);
}

static void put_i32(buf *b, int32_t v) { put_u32(b, (uint32_t)v); }

static void put_u16(buf *b, uint16_t v)
{
    uint8_t x[2];
    mfs_st_u16(x, v);
    put(b, x, 2);
}

static void put_f32(buf *b, float f)
{
    uint8_t x[4];
    mfs_st_f32(x, f);
    put(b, x, 4);
}

static void put_fs(buf *b, int n, const float *f)
{
    for (int i = 0; i < n; i++)
        put_f32(b, f[i]);
}

static void put_txt(buf *b, const char *s) { put(b, s, strlen(s)); }
static void put_cstr(buf *b, const char *s) { put(b, s, strlen(s) + 1); }

static void patch_i32(buf *b, size_t at, int32_t v) { mfs_st_u32(b->p + at, (uint32_t)v); }
static void patch_f32(buf *b, size_t at, float v) { mfs_st_f32(b->p + at, v); }

static const float IDENT[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};

/* Runs a buffer through the reader from an exact-size heap copy, so a read
 * past the end is caught by the address sanitizer. */
static int inspect(const char *name, const uint8_t *p, size_t n, int check, mfs_summary *s,
                   mfs_err *err)
{
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    if (n)
        memcpy(copy, p, n);
    int rc = mfs_inspect_buffer(name, copy, n, check, s, err);
    free(copy);
    return rc;
}

static void assert_contains(const char *hay, const char *needle)
{
    assert_non_null(hay);
    if (!strstr(hay, needle))
        fail_msg("'%s' does not contain '%s'", hay, needle);
}

static int has_warning(const mfs_summary *s, const char *needle)
{
    for (unsigned i = 0; i < s->n_warnings && i < MFS_SUMMARY_MAX_WARN; i++)
        if (strstr(s->warnings[i], needle))
            return 1;
    return 0;
}

static void assert_box(const float *got, float x, float y, float z)
{
    assert_true(got[0] == x && got[1] == y && got[2] == z);
}

/* Every proper prefix of a valid sample from `from` bytes on must fail
 * cleanly. */
static void prefixes_fail_from(const char *name, const buf *b, int check, size_t from)
{
    for (size_t k = from; k < b->n; k++) {
        mfs_summary s;
        mfs_err err;
        if (inspect(name, b->p, k, check, &s, &err) == 0)
            fail_msg("%s: prefix of %zu of %zu bytes was accepted", name, k, b->n);
        assert_true(strncmp(err.msg, name, strlen(name)) == 0);
    }
}

static void all_prefixes_fail(const char *name, const buf *b, int check)
{
    prefixes_fail_from(name, b, check, 0);
}

/* ======================================================================
 * .fmd: "FMD001" + gzip(payload); payload per seed 000.
 */

/* Payload offsets worked out by hand (see fmd_payload): */
#define FMD_NV_AT 75      /* mesh 0 vertex count */
#define FMD_FACE0_AT 119  /* first face index */
#define FMD_NN_AT 159     /* normal count */
#define FMD_N0_AT 163     /* first normal */
#define FMD_W0_AT 215     /* first bone weight (vertex id, weight) */
#define FMD_PAYLOAD 454

static void put_str32(buf *b, const char *s)
{
    put_i32(b, (int32_t)strlen(s));
    put_txt(b, s);
}

/* One mesh "tri": (0,0,0) (1,0,0) (0,2,0), face 0 1 2, uv, normals +Z, one
 * bone "root" weighting every vertex 1.0.  Nodes: "root" (identity) with
 * child `child` translated by (1,2,3) (column-vector: m[3], m[7], m[11]).
 * The offsets noted hold for child "tri". */
static void fmd_payload_child(buf *b, const char *child)
{
    put_fs(b, 16, IDENT);              /* root matrix: 0..64 */
    put_i32(b, 1);                     /* meshes: 64 */
    put_str32(b, "tri");               /* 68..75 */
    put_i32(b, 3);                     /* vertices: 75 */
    const float v[9] = {0, 0, 0, 1, 0, 0, 0, 2, 0};
    put_fs(b, 9, v);                   /* 79..115 */
    put_i32(b, 1);                     /* faces: 115 */
    put_u32(b, 0), put_u32(b, 1), put_u32(b, 2); /* 119..131 */
    put_i32(b, 3);                     /* texcoords: 131 */
    const float uv[6] = {0, 0, 1, 0, 0, 1};
    put_fs(b, 6, uv);                  /* 135..159 */
    put_i32(b, 3);                     /* normals: 159 */
    const float n[9] = {0, 0, 1, 0, 0, 1, 0, 0, 1};
    put_fs(b, 9, n);                   /* 163..199 */
    put_i32(b, 1);                     /* bones: 199 */
    put_str32(b, "root");              /* 203..211 */
    put_i32(b, 3);                     /* weights: 211 */
    for (int i = 0; i < 3; i++)
        put_i32(b, i), put_f32(b, 1.0f); /* 215..239 */
    put_fs(b, 16, IDENT);              /* offset: 239..303 */
    put_str32(b, "root");              /* node: 303..311 */
    put_fs(b, 16, IDENT);              /* 311..375 */
    put_i32(b, 1);                     /* 375 */
    put_str32(b, child);               /* 379..386 */
    const float t[16] = {1, 0, 0, 1, 0, 1, 0, 2, 0, 0, 1, 3, 0, 0, 0, 1};
    put_fs(b, 16, t);                  /* 386..450 */
    put_i32(b, 0);                     /* 450..454 */
}

static void fmd_payload(buf *b)
{
    fmd_payload_child(b, "tri");
}

static void gzip_into(buf *out, const uint8_t *p, size_t n)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    uLong bound = deflateBound(&zs, (uLong)n);
    uint8_t *tmp = malloc(bound);
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    zs.next_out = tmp;
    zs.avail_out = (uInt)bound;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    put(out, tmp, zs.total_out);
    deflateEnd(&zs);
    free(tmp);
}

static void fmd_file(buf *out, const buf *payload)
{
    put_txt(out, "FMD001");
    gzip_into(out, payload->p, payload->n);
}

static int fmd_run(const buf *payload, int check, mfs_summary *s, mfs_err *err)
{
    buf f = {0};
    fmd_file(&f, payload);
    int rc = inspect("t.fmd", f.p, f.n, check, s, err);
    free(f.p);
    return rc;
}

static void test_fmd_valid(void **state)
{
    (void)state;
    buf p = {0};
    fmd_payload(&p);
    assert_int_equal(p.n, FMD_PAYLOAD);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(fmd_run(&p, 1, &s, &err), 0);
    assert_string_equal(s.format, "fmd");
    assert_int_equal(s.version, 1);
    assert_int_equal(s.meshes, 1);
    assert_int_equal(s.vertices, 3);
    assert_int_equal(s.triangles, 1);
    assert_int_equal(s.bones, 1);
    assert_int_equal(s.nodes, 2);
    assert_int_equal(s.animations, 0);
    assert_int_equal(s.n_warnings, 0);
    assert_true(s.has_bounds);
    /* FGE draws the stored vertices: node "tri"'s (1,2,3) is not applied */
    assert_box(s.min, 0, 0, 0);
    assert_box(s.max, 1, 2, 0);
    /* FGE is right-handed Z-up: (x, y, z) -> canonical (x, z, -y) */
    assert_box(s.cmin, 0, 0, -2);
    assert_box(s.cmax, 1, 0, 0);
    free(p.p);
}

/* What FGE draws (research/fmd.md): node matrices move no vertex, whatever
 * the node names; only nodes named marker_center* (case-sensitive prefix)
 * do, by minus their summed model-space translation. */
static void test_fmd_drawn_bounds(void **state)
{
    (void)state;
    buf p = {0};
    fmd_payload(&p);
    patch_f32(&p, 311 + 4 * 3, 5.0f); /* root node: translation x 5 */
    mfs_summary s;
    mfs_err err;
    assert_int_equal(fmd_run(&p, 1, &s, &err), 0);
    assert_box(s.min, 0, 0, 0);
    assert_box(s.max, 1, 2, 0);
    assert_int_equal(s.n_warnings, 0);
    free(p.p);

    /* child at root (5,0,0) * (1,2,3): model-space (6,2,3), so FGE moves
     * every vertex by (-6,-2,-3) */
    p = (buf){0};
    fmd_payload_child(&p, "marker_center_of_mass");
    patch_f32(&p, 311 + 4 * 3, 5.0f);
    assert_int_equal(fmd_run(&p, 1, &s, &err), 0);
    assert_box(s.min, -6, -2, -3);
    assert_box(s.max, -5, 0, -3);
    free(p.p);

    p = (buf){0};
    fmd_payload_child(&p, "Marker_Center"); /* FGE's StartsWithFast is case-sensitive */
    assert_int_equal(fmd_run(&p, 1, &s, &err), 0);
    assert_box(s.min, 0, 0, 0);
    assert_box(s.max, 1, 2, 0);
    free(p.p);
}

static void test_fmd_truncated(void **state)
{
    (void)state;
    buf p = {0}, f = {0};
    fmd_payload(&p);
    fmd_file(&f, &p);
    /* the compressed file cut anywhere */
    all_prefixes_fail("t.fmd", &f, 0);
    /* the payload cut anywhere, each cut re-compressed */
    for (size_t k = 0; k < p.n; k++) {
        buf cut = {0};
        put(&cut, p.p, k);
        mfs_summary s;
        mfs_err err;
        if (fmd_run(&cut, 0, &s, &err) == 0)
            fail_msg("payload prefix of %zu bytes accepted", k);
        assert_contains(err.msg, "t.fmd: inflated payload");
        free(cut.p);
    }
    mfs_summary s;
    mfs_err err;
    buf cut = {0};
    put(&cut, p.p, FMD_FACE0_AT - 4); /* ends where the face count starts */
    assert_int_equal(fmd_run(&cut, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.fmd: inflated payload: mesh 0: offset 115: faces needs 4 "
                                 "bytes but only 0 remain");
    free(cut.p);
    free(p.p);
    free(f.p);
}

static void test_fmd_bad_counts(void **state)
{
    (void)state;
    buf p = {0};
    fmd_payload(&p);
    mfs_summary s;
    mfs_err err;
    patch_i32(&p, FMD_NV_AT, 0x7fffffff);
    assert_int_equal(fmd_run(&p, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.fmd: inflated payload: mesh 0: offset 75: declares "
                                 "2147483647 vertices but only 375 bytes remain");
    patch_i32(&p, FMD_NV_AT, -1);
    assert_int_equal(fmd_run(&p, 0, &s, &err), -1);
    assert_contains(err.msg, "negative count of vertices (-1)");
    patch_i32(&p, FMD_NV_AT, (int32_t)0x80000000u);
    assert_int_equal(fmd_run(&p, 0, &s, &err), -1);
    assert_contains(err.msg, "negative count of vertices (-2147483648)");
    patch_i32(&p, FMD_NV_AT, 3);
    patch_i32(&p, 64, 1000); /* meshes */
    assert_int_equal(fmd_run(&p, 0, &s, &err), -1);
    assert_contains(err.msg, "offset 64: declares 1000 meshes but only 386 bytes remain");
    free(p.p);
}

static void test_fmd_bad_magic_and_gzip(void **state)
{
    (void)state;
    buf p = {0}, f = {0};
    fmd_payload(&p);
    fmd_file(&f, &p);
    mfs_summary s;
    mfs_err err;
    f.p[0] = 'X';
    assert_int_equal(inspect("t.fmd", f.p, f.n, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.fmd: bad magic 'XMD' (expected FMD001)");
    f.p[0] = 'F';
    f.p[5] = '2'; /* FMD002: readable, but not a version the format defines */
    assert_int_equal(inspect("t.fmd", f.p, f.n, 0, &s, &err), 0);
    assert_int_equal(s.version, 2);
    assert_int_equal(inspect("t.fmd", f.p, f.n, 1, &s, &err), -1);
    assert_contains(err.msg, "version 002");
    f.p[5] = '1';
    f.p[6] = 0x78; /* a zlib header where gzip belongs */
    assert_int_equal(inspect("t.fmd", f.p, f.n, 0, &s, &err), -1);
    assert_contains(err.msg, "corrupt gzip stream");
    free(p.p);
    free(f.p);
}

static void test_fmd_trailing(void **state)
{
    (void)state;
    buf p = {0};
    fmd_payload(&p);
    put_u32(&p, 0);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(fmd_run(&p, 0, &s, &err), 0);
    assert_true(has_warning(&s, "4 bytes after the node tree"));
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.fmd: payload offset 454: 4 bytes after the node tree");
    p.n -= 4;
    /* bytes after the gzip stream */
    buf f = {0};
    fmd_file(&f, &p);
    put_txt(&f, "junk");
    assert_int_equal(inspect("t.fmd", f.p, f.n, 1, &s, &err), -1);
    assert_contains(err.msg, "4 bytes after the end of the gzip stream");
    free(p.p);
    free(f.p);
}

/* A small file inflating past 64x its size is refused, not allocated. */
static void test_fmd_bomb(void **state)
{
    (void)state;
    size_t n = 4u << 20;
    uint8_t *zeros = calloc(n, 1);
    buf f = {0};
    put_txt(&f, "FMD001");
    gzip_into(&f, zeros, n);
    free(zeros);
    assert_true(f.n < 16384);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(inspect("t.fmd", f.p, f.n, 0, &s, &err), -1);
    assert_contains(err.msg, "inflates to more than 1048576 bytes");
    free(f.p);
}

static void test_fmd_deep_nesting(void **state)
{
    (void)state;
    buf p = {0};
    put_fs(&p, 16, IDENT);
    put_i32(&p, 0); /* no meshes */
    for (int i = 0; i < 300; i++) {
        put_str32(&p, "n");
        put_fs(&p, 16, IDENT);
        put_i32(&p, i == 299 ? 0 : 1);
    }
    mfs_summary s;
    mfs_err err;
    assert_int_equal(fmd_run(&p, 0, &s, &err), -1);
    assert_contains(err.msg, "node tree nested deeper than 256 levels");
    free(p.p);
}

static void test_fmd_check_violations(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    buf p = {0};
    fmd_payload(&p);
    patch_i32(&p, FMD_FACE0_AT, 3); /* index == vertex count */
    assert_int_equal(fmd_run(&p, 0, &s, &err), 0);
    assert_int_equal(s.n_violations, 1);
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.fmd: mesh 'tri': 1 face indices out of range (first: index "
                                 "0 = 3, 3 vertices)");
    patch_i32(&p, FMD_FACE0_AT, 0);

    patch_f32(&p, FMD_N0_AT + 8, 2.0f); /* normal (0,0,2) */
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "1 normals are not unit length (first: 0, length 2)");
    patch_f32(&p, FMD_N0_AT + 8, 0.0f); /* zero normal: a warning only */
    assert_int_equal(fmd_run(&p, 1, &s, &err), 0);
    assert_true(has_warning(&s, "1 normals are zero"));
    patch_f32(&p, FMD_N0_AT + 8, 1.0f);

    patch_f32(&p, FMD_W0_AT + 4, 0.5f); /* vertex 0 weight 0.5 */
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "weights of 1 vertices do not sum to 1 (first: vertex 0, sum 0.5)");
    patch_f32(&p, FMD_W0_AT + 4, 1.0f);
    patch_i32(&p, FMD_W0_AT, 7); /* weight names vertex 7 */
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "bone weights name a vertex out of range");
    patch_i32(&p, FMD_W0_AT, 0);

    patch_i32(&p, 131, 2); /* 2 texcoords for 3 vertices: shift the rest */
    memmove(p.p + 135 + 16, p.p + 135 + 24, p.n - 135 - 24);
    p.n -= 8;
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "mesh 'tri': 2 texture coordinates for 3 vertices");
    free(p.p);

    /* a bone without a node of its name */
    p = (buf){0};
    fmd_payload(&p);
    memcpy(p.p + 207, "toor", 4);
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "bone 'toor' has no node of the same name");
    free(p.p);

    /* a transposed matrix (translation in the bottom row) */
    p = (buf){0};
    fmd_payload(&p);
    patch_f32(&p, 386 + 4 * 3, 0.0f);
    patch_f32(&p, 386 + 4 * 12, 1.0f);
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "node matrix: bottom row is (1 0 0 1), not (0 0 0 1)");
    free(p.p);
}

/* One mesh record: (0,0,0) (1,0,0) (0,2,0), face 0 1 2, uv, normals +Z;
 * with `bone`, one bone "root" weighting every vertex 1.0.  nv 0 writes a
 * record without vertices or faces. */
static void fmd_mesh_rec(buf *b, const char *name, int nv, int bone)
{
    static const float v[9] = {0, 0, 0, 1, 0, 0, 0, 2, 0};
    static const float uv[6] = {0, 0, 1, 0, 0, 1};
    static const float n[9] = {0, 0, 1, 0, 0, 1, 0, 0, 1};
    put_str32(b, name);
    put_i32(b, nv);
    put_fs(b, 3 * nv, v);
    put_i32(b, nv ? 1 : 0);
    if (nv)
        put_u32(b, 0), put_u32(b, 1), put_u32(b, 2);
    put_i32(b, nv);
    put_fs(b, 2 * nv, uv);
    put_i32(b, nv);
    put_fs(b, 3 * nv, n);
    put_i32(b, bone);
    if (bone) {
        put_str32(b, "root");
        put_i32(b, nv);
        for (int i = 0; i < nv; i++)
            put_i32(b, i), put_f32(b, 1.0f);
        put_fs(b, 16, IDENT);
    }
}

/* Two mesh records, then one node "root". */
static void fmd_two_meshes(buf *b, const char *a, int a_nv, int a_bone, const char *c, int c_nv,
                           int c_bone)
{
    put_fs(b, 16, IDENT);
    put_i32(b, 2);
    fmd_mesh_rec(b, a, a_nv, a_bone);
    fmd_mesh_rec(b, c, c_nv, c_bone);
    put_str32(b, "root");
    put_fs(b, 16, IDENT);
    put_i32(b, 0);
}

/* research/fmd.md section 1, "Bone weights as consumed": FGE attaches the
 * bones of the file's mesh i with model.Meshes[i].Bones.Add, and
 * model.Meshes holds only the visible meshes.  A hidden mesh
 * (collision*, marker_, norender_) before a skinned mesh puts its bones on
 * another mesh, or past the end of the list (the load fails); bones on a
 * hidden mesh land on visible mesh i or past the end.  Section 3:
 * GetBounds() takes Meshes.First(m => m.IsVisible).Vertices[0], so the first
 * visible mesh needs a vertex. */
static void test_fmd_fge_mesh_pairing(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    buf p = {0};

    /* visible skinned mesh first, hidden mesh after: what meshfs writes */
    fmd_two_meshes(&p, "body", 3, 1, "collisionconvex_hull", 3, 0);
    assert_int_equal(fmd_run(&p, 1, &s, &err), 0);
    free(p.p);

    /* hidden first: body's bones would go to model.Meshes[1], which does
     * not exist */
    p = (buf){0};
    fmd_two_meshes(&p, "Marker_a", 3, 0, "body", 3, 1);
    assert_int_equal(fmd_run(&p, 0, &s, &err), 0);
    assert_int_equal(s.n_violations, 1);
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "mesh 'body' (record 1) has bones, but FGE gives record 1's bones "
                             "to visible mesh 1");
    free(p.p);

    /* bones on a hidden mesh: FGE gives them to visible mesh 0 */
    p = (buf){0};
    fmd_two_meshes(&p, "body", 3, 0, "norender_x", 3, 1);
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "mesh 'norender_x' (record 1) has bones");
    free(p.p);

    /* the first visible mesh has no vertex, a later one has */
    p = (buf){0};
    fmd_two_meshes(&p, "empty", 0, 0, "body", 3, 0);
    assert_int_equal(fmd_run(&p, 0, &s, &err), 0);
    assert_int_equal(fmd_run(&p, 1, &s, &err), -1);
    assert_contains(err.msg, "first visible mesh 'empty' has no vertex");
    free(p.p);

    /* a hidden empty mesh first is fine */
    p = (buf){0};
    fmd_two_meshes(&p, "collisioncomplex_x", 0, 0, "body", 3, 0);
    assert_int_equal(fmd_run(&p, 1, &s, &err), 0);
    free(p.p);
}

/* ======================================================================
 * .gmf: Leadwerks block tree (seed 001, research/gmf.md).
 */

/* Starts a block; returns where its size goes. */
static size_t blk(buf *b, uint32_t tag, int32_t nkids)
{
    put_u32(b, tag);
    put_i32(b, nkids);
    size_t at = b->n;
    put_u32(b, 0);
    return at;
}

static void blk_end(buf *b, size_t at) { mfs_st_u32(b->p + at, (uint32_t)(b->n - at - 4)); }

static void gmf_props(buf *b, const char *key, const char *value)
{
    size_t at = blk(b, 7, 0);
    put_i32(b, 1);
    put_cstr(b, key);
    put_cstr(b, value);
    blk_end(b, at);
}

static void gmf_animkeys(buf *b, int frames, const char *name)
{
    size_t at = blk(b, 8, 0);
    put_i32(b, frames);
    for (int i = 0; i < frames; i++)
        put_fs(b, 16, IDENT);
    if (name)
        put_cstr(b, name);
    blk_end(b, at);
}

static void gmf_array(buf *b, uint32_t kind, uint32_t type, uint32_t el, int32_t n,
                      const void *data, size_t bytes)
{
    size_t at = blk(b, 5, 0);
    put_i32(b, n);
    put_u32(b, kind);
    put_u32(b, type);
    put_u32(b, el);
    put(b, data, bytes);
    blk_end(b, at);
}

static void gmf_floats(buf *b, uint32_t kind, const float *f, int n, int el)
{
    uint8_t raw[64 * 4];
    for (int i = 0; i < n * el; i++)
        mfs_st_f32(raw + 4 * i, f[i]);
    gmf_array(b, kind, 8, (uint32_t)el, n, raw, (size_t)n * el * 4);
}

/* Offsets worked out by hand from the block sizes below (see test_gmf_valid):
 * FILE 16, MESH 76, PROPERTIES 26, ANIMATIONKEYS 21, MESH 76, PROPERTIES 26,
 * SURFACE 12, POSITION 64, NORMAL 64, BONEINDICE 40, BONEWEIGHT 40,
 * INDICEARRAY 30, BONE 80, PROPERTIES 24, ANIMATIONKEYS 149 = 744 bytes. */
#define GMF_BYTES 744
#define GMF_CHILD_MESH_AT 139
#define GMF_SURFACE_AT 241
#define GMF_POSITION_AT 253
#define GMF_WEIGHT_AT 421
#define GMF_INDEX_AT 461

/* Root MESH "root" (translation (0,0,1) at m[12..14]) with a
 * 0-frame "walk" placeholder, a child MESH "leaf" translated by (1,0,0)
 * holding one triangle surface, and BONE 0 "b0" with a 2-frame "walk". */
static void gmf_sample(buf *b, int version)
{
    const char *walk = version == 2 ? "walk" : NULL;
    size_t file = blk(b, 1, 1);
    put_i32(b, version);
    blk_end(b, file);

    const float root[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1};
    size_t mesh = blk(b, 3, 4);
    put_fs(b, 16, root);
    blk_end(b, mesh);
    gmf_props(b, "name", "root");
    gmf_animkeys(b, 0, walk);

    const float leaf[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1};
    size_t child = blk(b, 3, 2);
    put_fs(b, 16, leaf);
    blk_end(b, child);
    gmf_props(b, "name", "leaf");
    size_t surf = blk(b, 10, 5);
    blk_end(b, surf);
    const float pos[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    const float nrm[9] = {0, 0, 1, 0, 0, 1, 0, 0, 1};
    gmf_floats(b, 1, pos, 3, 3);
    gmf_floats(b, 2, nrm, 3, 3);
    const uint8_t ids[12] = {0}, wts[12] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0};
    gmf_array(b, 7, 2, 4, 3, ids, 12);
    gmf_array(b, 8, 2, 4, 3, wts, 12);
    size_t ix = blk(b, 6, 0);
    put_i32(b, 3);
    put_u32(b, 7); /* GMF_TRIANGLES */
    put_u32(b, 4); /* GMF_UNSIGNED_SHORT */
    put_u16(b, 0), put_u16(b, 1), put_u16(b, 2);
    blk_end(b, ix);

    size_t bone = blk(b, 4, 2);
    put_fs(b, 16, IDENT);
    put_i32(b, 0);
    blk_end(b, bone);
    gmf_props(b, "name", "b0");
    gmf_animkeys(b, 2, walk);
}

static void test_gmf_valid(void **state)
{
    (void)state;
    buf b = {0};
    gmf_sample(&b, 2);
    assert_int_equal(b.n, GMF_BYTES);
    assert_int_equal(mfs_ld_u32(b.p + GMF_CHILD_MESH_AT), 3);
    assert_int_equal(mfs_ld_u32(b.p + GMF_SURFACE_AT), 10);
    assert_int_equal(mfs_ld_u32(b.p + GMF_POSITION_AT + 8), 52); /* 16 + 3 x 12 */
    assert_int_equal(mfs_ld_u32(b.p + GMF_INDEX_AT + 8), 18);    /* 12 + 3 x 2 */
    mfs_summary s;
    mfs_err err;
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), 0);
    assert_string_equal(s.format, "gmf");
    assert_int_equal(s.version, 2);
    assert_string_equal(s.name, "root");
    assert_int_equal(s.meshes, 1);
    assert_int_equal(s.vertices, 3);
    assert_int_equal(s.triangles, 1);
    assert_int_equal(s.bones, 1);
    assert_int_equal(s.nodes, 3);
    assert_int_equal(s.animations, 1);
    assert_int_equal(s.n_anim_names, 1);
    assert_string_equal(s.anim_names[0], "walk");
    assert_int_equal(s.n_warnings, 0);
    /* Leadwerks sums NODE/MESH translations: p + (1,0,0) + (0,0,1) (a
     * rotated or scaled limb: test_gmf.c, test_placement_inspected) */
    assert_box(s.min, 1, 0, 1);
    assert_box(s.max, 2, 1, 1);
    assert_box(s.cmin, 1, 0, -1); /* left-handed: z negated */
    assert_box(s.cmax, 2, 1, -1);
    /* .mdl is the same format */
    assert_int_equal(inspect("t.mdl", b.p, b.n, 1, &s, &err), 0);
    assert_string_equal(s.format, "gmf");
    free(b.p);

    b = (buf){0};
    gmf_sample(&b, 1);
    assert_int_equal(b.n, GMF_BYTES - 10); /* no "walk\0" names */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), 0);
    assert_int_equal(s.version, 1);
    assert_int_equal(s.animations, 1);
    assert_int_equal(s.n_anim_names, 0);
    free(b.p);
}

static void test_gmf_truncated(void **state)
{
    (void)state;
    buf b = {0};
    gmf_sample(&b, 2);
    all_prefixes_fail("t.gmf", &b, 0);
    mfs_summary s;
    mfs_err err;
    /* cut inside POSITION, late enough that SURFACE's 5 kids x 12 bytes fit */
    assert_int_equal(inspect("t.gmf", b.p, GMF_POSITION_AT + 12 + 50, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.gmf: offset 253: VERTEXARRAY declares a payload of 52 bytes "
                                 "but only 50 remain");
    free(b.p);
}

static void test_gmf_bad_counts(void **state)
{
    (void)state;
    buf b = {0};
    gmf_sample(&b, 2);
    mfs_summary s;
    mfs_err err;
    patch_i32(&b, GMF_POSITION_AT + 12, 0x7fffffff); /* vertex count */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.gmf: offset 253: VERTEXARRAY declares 2147483647 vertices x "
                                 "3 x 4 bytes (25769803764) but its size leaves 36");
    patch_i32(&b, GMF_POSITION_AT + 12, -3);
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_contains(err.msg, "negative vertex count (-3)");
    patch_i32(&b, GMF_POSITION_AT + 12, 3);
    patch_i32(&b, GMF_SURFACE_AT + 4, 100000); /* SURFACE kids */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_contains(err.msg, "offset 241: SURFACE declares 100000 child blocks but only 491 "
                             "bytes remain");
    patch_i32(&b, GMF_SURFACE_AT + 4, -1);
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_contains(err.msg, "SURFACE declares -1 child blocks");
    patch_i32(&b, GMF_SURFACE_AT + 4, 5);
    patch_i32(&b, GMF_SURFACE_AT + 8, 0x40000000); /* size */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_contains(err.msg, "SURFACE declares a payload of 1073741824 bytes but only 491 "
                             "remain");
    free(b.p);
}

static void test_gmf_bad_magic_and_version(void **state)
{
    (void)state;
    buf b = {0};
    gmf_sample(&b, 2);
    mfs_summary s;
    mfs_err err;
    patch_i32(&b, 0, 3);
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.gmf: offset 0: first block has tag 3, expected FILE (1)");
    patch_i32(&b, 0, 1);
    patch_i32(&b, 12, 3);
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.gmf: offset 12: version 3 (Leadwerks reads 1 and 2)");
    free(b.p);
}

static void test_gmf_deep_nesting(void **state)
{
    (void)state;
    buf b = {0};
    size_t f = blk(&b, 1, 1);
    put_i32(&b, 1);
    blk_end(&b, f);
    for (int i = 0; i < 300; i++) {
        size_t at = blk(&b, 2, i == 299 ? 0 : 1);
        put_fs(&b, 16, IDENT);
        blk_end(&b, at);
    }
    mfs_summary s;
    mfs_err err;
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    assert_contains(err.msg, "blocks nested deeper than 256 levels");
    free(b.p);
}

/* research/gmf.md Q1: the loader reads PROPERTIES strings with
 * MemReader::ReadLine, which stops at NUL, LF or CR, so keys and values
 * must not contain CR or LF (the string is cut there and the pairs after
 * it are misread). */
static void test_gmf_property_crlf(void **state)
{
    (void)state;
    static const char *const bad[] = {"l\rf", "l\nf"};
    for (int k = 0; k < 2; k++) {
        buf b = {0};
        gmf_sample(&b, 1);
        uint8_t *at = memmem(b.p, b.n, "leaf", 5);
        assert_non_null(at);
        memcpy(at, bad[k], 3); /* same length: sizes stay exact */
        mfs_summary s;
        mfs_err err;
        assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), 0);
        assert_int_equal(s.n_violations, 1);
        assert_int_equal(inspect("t.mdl", b.p, b.n, 1, &s, &err), -1);
        assert_contains(err.msg, "PROPERTIES string 1 holds a CR or LF");
        free(b.p);
    }
}

static void test_gmf_check(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    buf b = {0};
    gmf_sample(&b, 2);
    put_u32(&b, 0);
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), 0);
    assert_true(has_warning(&s, "offset 744: 4 bytes after the FILE block"));
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.gmf: offset 744: 4 bytes after the FILE block");
    b.n -= 4;

    b.p[GMF_INDEX_AT + 24 + 4] = 3; /* third index = vertex count */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), -1);
    assert_contains(err.msg, "offset 461: 1 indices out of range (first: index 2 = 3, surface "
                             "has 3 vertices)");
    b.p[GMF_INDEX_AT + 24 + 4] = 2;

    b.p[GMF_WEIGHT_AT + 28] = 200; /* vertex 0 weights sum 200 */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), -1);
    assert_contains(err.msg, "1 vertices' weight bytes do not sum to 255 (first: vertex 0, sum "
                             "200)");
    b.p[GMF_WEIGHT_AT + 28] = 253; /* truncation as Leadwerks' tools do: tolerated */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), 0);
    assert_true(has_warning(&s, "sum to 252..254"));
    b.p[GMF_WEIGHT_AT + 28] = 255;

    b.p[GMF_WEIGHT_AT - 40 + 28] = 1; /* bone index 1 with one bone */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), -1);
    assert_contains(err.msg, "BONEINDICE names bone 1 but the file has 1 bones");
    b.p[GMF_WEIGHT_AT - 40 + 28] = 0;

    patch_f32(&b, GMF_CHILD_MESH_AT + 12 + 4 * 3, 1.0f); /* translation in the right column */
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), -1);
    assert_contains(err.msg, "MESH matrix right column is (1 0 0 1), not (0 0 0 1)");
    free(b.p);

    /* a v1 file with v2 animation names: trailing bytes in ANIMATIONKEYS */
    b = (buf){0};
    gmf_sample(&b, 2);
    patch_i32(&b, 12, 1);
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), -1);
    assert_contains(err.msg, "5 bytes after the animation frames");
    free(b.p);
}

/* A MESH turned 90 degrees about Z.  The legacy loader that reads .gmf
 * keeps only its translation (research/gmf.md, "What a real loader keeps of
 * limb matrices"), so it draws the surface misplaced: a --check failure.
 * Leadwerks 3/4 composes the full matrix of a .mdl, and its own tools write
 * such limbs: a warning only.  The bounds are the translation-only
 * placement either way. */
static void test_gmf_rotated_limb_gmf_vs_mdl(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    buf b = {0};
    gmf_sample(&b, 2);
    const float turn[12] = {0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1, 0};
    for (int i = 0; i < 12; i++)
        patch_f32(&b, GMF_CHILD_MESH_AT + 12 + 4 * i, turn[i]);
    /* full matrices: vertex (1,0,0) at (1,1,1), the legacy loader's (2,0,1) */
    const char *finding = "1 NODE/MESH matrices rotate/scale (first: offset 139); 1 surfaces "
                          "up to 1.41421 off full-matrix placement (first: offset 241)";
    char want[400];

    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), -1);
    snprintf(want, sizeof want, "t.gmf: placement (the legacy .gmf loader keeps only NODE/MESH "
             "translations, no BONE matrix; bounds follow it): %s", finding);
    assert_string_equal(err.msg, want);
    assert_int_equal(s.n_violations, 1);
    assert_box(s.min, 1, 0, 1);
    assert_box(s.max, 2, 1, 1);

    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), 0); /* without --check */
    assert_int_equal(s.n_violations, 1);
    assert_int_equal(s.n_warnings, 1);
    assert_string_equal(s.warnings[0], want + strlen("t.gmf: "));

    for (int upper = 0; upper < 2; upper++) {
        const char *name = upper ? "T.MDL" : "t.mdl";
        assert_int_equal(inspect(name, b.p, b.n, 1, &s, &err), 0);
        assert_int_equal(s.n_violations, 0);
        assert_int_equal(s.n_warnings, 1);
        snprintf(want, sizeof want, "placement (Leadwerks keeps only NODE/MESH translations, no "
                 "BONE matrix; bounds follow it): %s", finding);
        assert_string_equal(s.warnings[0], want);
        assert_box(s.min, 1, 0, 1);
        assert_box(s.max, 2, 1, 1);
    }

    /* told by its magic: no .mdl name, so the legacy loader's rule */
    assert_int_equal(inspect("t.bin", b.p, b.n, 1, &s, &err), -1);
    assert_contains(err.msg, "t.bin: placement (the legacy .gmf loader");
    free(b.p);
}

/* The Leadwerks 3.0 files label 4-byte colours as float x3. */
static void test_gmf_mislabeled_color(void **state)
{
    (void)state;
    buf b = {0};
    size_t f = blk(&b, 1, 1);
    put_i32(&b, 1);
    blk_end(&b, f);
    size_t m = blk(&b, 3, 1);
    put_fs(&b, 16, IDENT);
    blk_end(&b, m);
    size_t surf = blk(&b, 10, 3);
    blk_end(&b, surf);
    const float pos[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    gmf_floats(&b, 1, pos, 3, 3);
    const uint8_t rgba[12] = {0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255};
    gmf_array(&b, 4, 8, 3, 3, rgba, 12); /* says float x 3, holds 4 bytes each */
    size_t ix = blk(&b, 6, 0);
    put_i32(&b, 3);
    put_u32(&b, 7);
    put_u32(&b, 7); /* GMF_UNSIGNED_INT */
    put_u32(&b, 2), put_u32(&b, 1), put_u32(&b, 0);
    blk_end(&b, ix);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), 0);
    assert_int_equal(s.vertices, 3);
    assert_int_equal(s.triangles, 1);
    assert_true(has_warning(&s, "1 COLOR arrays are labelled with another layout"));
    /* the same size mismatch on a POSITION array is an error */
    mfs_st_u32(b.p + 16 + 76 + 12 + 8, 40);
    assert_int_equal(inspect("t.gmf", b.p, b.n, 0, &s, &err), -1);
    free(b.p);
}

/* ======================================================================
 * .dem: text (seed 002, research/dem_vrt.md) plus meshfs's weight range.
 */

static const char DEM_SAMPLE[] =
    "DEM 10\n"
    "model tri\n"
    "joints 1\n"
    "meshes 1\n"
    "sequences 1\n"
    "j root -1 0.0 0.0 0.0 0.0 0.0 0.0\n"
    "mesh Tri\n"
    "mat stone\n"
    "verts 3\n"
    "v 0 0.0 0.0 0.0 0.0 0.0 1.0 0.0 0.0 1.0 1.0 1.0 0 1\n"
    "v 1 1.0 0.0 0.0 0.0 0.0 1.0 1.0 0.0 1.0 1.0 1.0 1 1\n"
    "v 2 0.0 2.0 3.0 0.0 0.0 1.0 0.0 1.0 1.0 1.0 1.0 2 2\n"
    "tris 1\n"
    "t 0 0 1 2\n"
    "weights 4\n"
    "w 0 0 1.0 0.0 0.0 0.0\n"
    "w 1 0 1.0 1.0 0.0 0.0\n"
    "w 2 0 0.25 0.0 2.0 3.0\n"
    "w 3 0 0.75 0.0 2.0 3.0\n"
    "sequence wave_hello\n"
    "rate 24\n"
    "components 9\n"
    "joints 1\n"
    "j root -1 0 9\n"
    "bounds 2\n"
    "b 0.0 0.0 0.0 1.0 2.0 3.0\n"
    "b 0.0 0.0 0.0 1.0 2.0 3.0\n"
    "events 1\n"
    "e 0 1 step\n"
    "frames 2\n"
    "f 0 0 0.0 0.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"
    "f 1 0 0.0 0.0 0.0 0.0 0.0 0.5 1.0 1.0 1.0\n";

static int dem_run(const char *text, int check, mfs_summary *s, mfs_err *err)
{
    return inspect("t.dem", (const uint8_t *)text, strlen(text), check, s, err);
}

/* The sample with one line replaced (or removed when with is ""). */
static char *dem_edit(const char *line, const char *with)
{
    const char *at = strstr(DEM_SAMPLE, line);
    assert_non_null(at);
    size_t n = strlen(DEM_SAMPLE), k = strlen(line), w = strlen(with);
    char *out = malloc(n - k + w + 1);
    memcpy(out, DEM_SAMPLE, (size_t)(at - DEM_SAMPLE));
    memcpy(out + (at - DEM_SAMPLE), with, w);
    strcpy(out + (at - DEM_SAMPLE) + w, at + k);
    return out;
}

static void dem_expect_fail(const char *line, const char *with, const char *msg)
{
    char *t = dem_edit(line, with);
    mfs_summary s;
    mfs_err err;
    if (dem_run(t, 1, &s, &err) == 0)
        fail_msg("edit '%s' -> '%s' passed --check", line, with);
    assert_contains(err.msg, msg);
    free(t);
}

static void test_dem_valid(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    assert_int_equal(dem_run(DEM_SAMPLE, 1, &s, &err), 0);
    assert_string_equal(s.format, "dem");
    assert_int_equal(s.version, 10);
    assert_string_equal(s.name, "tri");
    assert_int_equal(s.meshes, 1);
    assert_int_equal(s.vertices, 3);
    assert_int_equal(s.triangles, 1);
    assert_int_equal(s.bones, 1);
    assert_int_equal(s.nodes, 0);
    assert_int_equal(s.animations, 1);
    assert_int_equal(s.n_anim_names, 1);
    assert_string_equal(s.anim_names[0], "wave_hello");
    assert_int_equal(s.n_warnings, 0);
    assert_box(s.min, 0, 0, 0);
    assert_box(s.max, 1, 2, 3);
    /* Blender Z-up (x, y, z) -> canonical (x, z, -y) */
    assert_box(s.cmin, 0, 0, -2);
    assert_box(s.cmax, 1, 3, 0);
}

static void test_dem_truncated(void **state)
{
    (void)state;
    buf b = {0};
    put_txt(&b, DEM_SAMPLE);
    /* A cut inside a line fails (a broken field or no final LF).  A cut at
     * a line end may leave a complete model (a skeleton without meshes, a
     * sequence without keys), but not while a count lacks its lines. */
    mfs_summary s;
    mfs_err err;
    for (size_t k = 0; k < b.n; k++) {
        int rc = inspect("t.dem", b.p, k, 1, &s, &err);
        if (k > 0 && b.p[k - 1] != '\n' && rc == 0)
            fail_msg("prefix of %zu bytes (mid-line) accepted", k);
    }
    const char *open_counts[] = {"verts 3\n", "tris 1\n", "weights 4\n", "frames 2\n",
                                 "f 0 0 0.0 0.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"};
    for (int i = 0; i < 5; i++) {
        size_t k = (size_t)(strstr(DEM_SAMPLE, open_counts[i]) - DEM_SAMPLE) +
                   strlen(open_counts[i]);
        assert_int_equal(inspect("t.dem", b.p, k, 1, &s, &err), -1);
        assert_true(strstr(err.msg, "declares") || strstr(err.msg, "'f' lines, found"));
    }
    free(b.p);
}

/* The early README form: DEM_10, 3-int t lines, and a tris count that
 * disagrees with its lines: read; each of the three a check failure (the
 * first two because the author's loader cannot take them). */
static void test_dem_count_mismatch(void **state)
{
    (void)state;
    const char *early = "DEM_10\n"
                        "meshes 1\n"
                        "mesh Cube\n"
                        "mat cube\n"
                        "verts 3\n"
                        "v 0 0.0 0.0 0.0 0.0 0.0 1.0 0.0 0.0 1.0 1.0 1.0\n"
                        "v 1 1.0 0.0 0.0 0.0 0.0 1.0 1.0 0.0 1.0 1.0 1.0\n"
                        "v 2 0.0 1.0 0.0 0.0 0.0 1.0 0.0 1.0 1.0 1.0 1.0\n"
                        "tris 1\n"
                        "t 1 2 0\n"
                        "t 2 1 0\n";
    mfs_summary s;
    mfs_err err;
    assert_int_equal(dem_run(early, 0, &s, &err), 0);
    assert_int_equal(s.triangles, 2);
    assert_int_equal(s.vertices, 3);
    assert_true(has_warning(&s, "line 1: header 'DEM_10' is the older form of 'DEM 10'"));
    assert_true(has_warning(&s, "line 10: 't' line without a polygon index"));
    assert_true(has_warning(&s, "mesh 'Cube': tris declares 1 but 2 't' lines follow (line 9)"));
    assert_true(has_warning(&s, "2 lines in all with 't' lines without a polygon index "
                                "(first: line 10)"));
    assert_int_equal(s.n_violations, 3);
    assert_int_equal(dem_run(early, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.dem: line 1: header 'DEM_10' is the older form of 'DEM 10', "
                                 "which the loader does not recognise (it reads only 'DEM 10') "
                                 "(and 2 more check failures)");
}

static void test_dem_errors(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    assert_int_equal(dem_run("", 0, &s, &err), -1);
    assert_contains(err.msg, "expected the header 'DEM 10'");
    assert_int_equal(dem_run("OBJ 1\n", 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.dem: line 1: expected the header 'DEM 10'");
    char *t = dem_edit("verts 3\n", "verts -3\n");
    assert_int_equal(dem_run(t, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.dem: line 9: 'verts' needs a non-negative count, not '-3'");
    free(t);
    /* a huge count is only compared with the lines, never allocated */
    t = dem_edit("verts 3\n", "verts 2147483648\n");
    assert_int_equal(dem_run(t, 0, &s, &err), 0);
    assert_true(has_warning(&s, "verts declares 2147483648 but 3 'v' lines follow"));
    free(t);
    t = dem_edit("v 1 1.0 0.0 0.0", "v 1 1.0 x 0.0");
    assert_int_equal(dem_run(t, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.dem: line 11: field 3 'x' is not a number");
    free(t);
    t = dem_edit("t 0 0 1 2\n", "t 0 0\n");
    assert_int_equal(dem_run(t, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.dem: line 14: 't' needs 3 or 4 integers, has 2");
    free(t);
    t = dem_edit("tris 1\n", "");
    assert_int_equal(dem_run(t, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.dem: line 13: 't' line outside its section");
    free(t);
}

static void test_dem_check(void **state)
{
    (void)state;
    dem_expect_fail("t 0 0 1 2\n", "t 0 0 1 3\n", "vertex index 3 out of range (3 vertices)");
    dem_expect_fail("w 3 0 0.75", "w 3 0 0.5", "weights of 1 vertices do not sum to 1 (first: "
                                               "vertex 2, sum 0.75)");
    dem_expect_fail("2 2\n", "2 3\n", "1 vertices reference weights past the 4 present");
    dem_expect_fail("w 1 0 1.0", "w 1 1 1.0", "weight names joint 1 but the model has 1 joints");
    dem_expect_fail("v 1 1.0 0.0 0.0 0.0 0.0 1.0", "v 1 1.0 0.0 0.0 0.0 0.0 2.0",
                    "1 normals are not unit length (first: line 11, length 2)");
    dem_expect_fail("v 1 1.0", "v 5 1.0", "line 11: vertex index 5, expected 1");
    dem_expect_fail("meshes 1\n", "meshes 2\n", "meshes declares 2 but 1 'mesh' line follow");
    dem_expect_fail("frames 2\n", "frames 3\n", "frames 3 x joints 1 needs 3 'f' lines, found 2");
    dem_expect_fail("e 0 1 step", "e 0 7 step", "line 29: sequence 'wave_hello': event at frame 7, past the 2 frames");
    dem_expect_fail("j root -1 0.0", "j root 0 0.0", "joint 0 has parent 0");
    dem_expect_fail("j root -1 0.0 0.0 0.0 0.0 0.0 0.0", "j root -1 0.0 0.0 0.0 0.0 0.8 0.8",
                    "line 6: joint rotation (0 0.8 0.8) is longer than a unit quaternion");
    dem_expect_fail("f 1 0 0.0 0.0 0.0 0.0 0.0 0.5", "f 1 0 0.0 0.0 0.0 1.0 0.0 0.5",
                    "1 'f' lines have a frame or joint out of range or non-finite values or a "
                    "rotation longer than a unit quaternion");
    dem_expect_fail("rate 24\n", "rate 24\nlod 2\n", "unknown keyword 'lod'");
    dem_expect_fail("mat stone\n", "mat stone\r\n", "line 8 ends with CR (LF only)");
}

/* ======================================================================
 * .fmi: text sidecar (research/fmd.md section 2).
 */

static int fmi_run(const char *text, int check, mfs_summary *s, mfs_err *err)
{
    return inspect("t.fmi", (const uint8_t *)text, strlen(text), check, s, err);
}

static void test_fmi(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    const char *ok = "model=vehicles/car\nbody=UNKNOWN\nBody:::normal=car_n\nwheel=UNKNOWN\n"
                     "wheel:::Specular=car_s\n";
    assert_int_equal(fmi_run(ok, 1, &s, &err), 0);
    assert_string_equal(s.format, "fmi");
    assert_string_equal(s.name, "vehicles/car");
    assert_int_equal(s.meshes, 2); /* body and wheel: FGE compares lower-cased */
    assert_int_equal(s.vertices, 0);
    assert_false(s.has_bounds);

    struct {
        const char *text, *msg;
    } bad[] = {
        {"\xEF\xBB\xBFmodel=car\nbody=UNKNOWN\n", "starts with a UTF-8 BOM"},
        {"model=car\r\nbody=UNKNOWN\r\n", "line 1 ends with CR (LF only)"},
        {"model=car\nbody=a=b\n", "line 2: needs exactly one '=' (FGE skips it): body=a=b"},
        {"model=car\nbody:::glow=x\n", "line 2: unknown texture type 'glow'"},
        {"model=car\nbody=UNKNOWN", "the last line does not end with LF"},
        {"model=car\nmodel=bus\n", "line 2: second model= line"},
        {"model=car\nbody=\xff\n", "offset 15: byte 0xff is not UTF-8 text"},
        {"model=car\n=x\n", "line 2: empty mesh name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(fmi_run(bad[i].text, 0, &s, &err), 0);
        assert_int_equal(fmi_run(bad[i].text, 1, &s, &err), -1);
        assert_contains(err.msg, bad[i].msg);
    }
    /* without model= FGE loads the .fmd beside the .fmi: fine */
    assert_int_equal(fmi_run("body=UNKNOWN\n", 1, &s, &err), 0);
    assert_int_equal(s.n_warnings, 0);
    assert_string_equal(s.name, "");
    assert_int_equal(s.meshes, 1);
}

/* ======================================================================
 * .vrt / .tri / .sph (research/dem_vrt.md).
 */

static void runtime_header(buf *b, uint32_t elements)
{
    put_u32(b, elements * 4);
    put_u32(b, 4);
    put_u32(b, elements);
}

/* One of the engine's 64-byte VertexData: x y z u v nx ny nz, weights
 * w0..w3 (f32), bone indices b0..b3 (u32). */
static void vrt_vertex(buf *b, const float f[8], const float w[4], const uint32_t ix[4])
{
    put_fs(b, 8, f);
    put_fs(b, 4, w);
    for (int k = 0; k < 4; k++)
        put_u32(b, ix[k]);
}

/* 3 vertices: bone 0 alone; bones 2 and 1 (0.75, 0.25); static */
static void vrt_sample(buf *b)
{
    const float v[3][8] = {{0, 0, 0, 0, 0, 0, 0, 1}, {3, 0, 0, 1, 0, 0, 0, 1},
                           {0, 4, -1, 0, 1, 0, 1, 0}};
    const float w[3][4] = {{1, 0, 0, 0}, {0.75f, 0.25f, 0, 0}, {0, 0, 0, 0}};
    const uint32_t ix[3][4] = {{0, 0, 0, 0}, {2, 1, 0, 0}, {0, 0, 0, 0}};
    runtime_header(b, 48);
    for (int i = 0; i < 3; i++)
        vrt_vertex(b, v[i], w[i], ix[i]);
}

/* The same 3 vertices in the document's 32-byte layout (vrt_layout=plain);
 * n = 2 keeps the first two. */
static void vrt_plain_sample(buf *b, int n)
{
    const float v[24] = {0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 0, 1, 0, 0, 0, 1,
                         0, 4, -1, 0, 1, 0, 1, 0};
    runtime_header(b, (uint32_t)n * 8);
    put_fs(b, n * 8, v);
}

static void tri_sample(buf *b, uint32_t last)
{
    runtime_header(b, 3);
    put_u32(b, 0), put_u32(b, 1), put_u32(b, last);
}

/* centre (1.5, 2, 0): distances 2.5, 2.5 and 2.69 to (0,0,0) (3,0,0) (0,4,-1).
 * The engine's 48-byte BoundingSphere: 16 zero bytes (its Align16 base),
 * centre x y z w at 16, radius at 32, 12 zero bytes. */
static void sph_sample(buf *b, float radius)
{
    const float c[5] = {1.5f, 2.0f, 0.0f, 1.0f, radius};
    for (int i = 0; i < 16; i++)
        put(b, "", 1);
    put_fs(b, 5, c);
    for (int i = 0; i < 12; i++)
        put(b, "", 1);
}

static void test_runtime_valid(void **state)
{
    (void)state;
    buf v = {0}, t = {0}, s3 = {0};
    vrt_sample(&v);
    tri_sample(&t, 2);
    sph_sample(&s3, 2.7f);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), 0);
    assert_string_equal(s.format, "vrt");
    assert_int_equal(s.meshes, 1);
    assert_int_equal(s.vertices, 3);
    assert_int_equal(s.bones, 3); /* highest bone index used: 2 */
    assert_int_equal(s.n_warnings, 0);
    assert_box(s.min, 0, 0, -1);
    assert_box(s.max, 3, 4, 0);
    assert_box(s.cmin, 0, 0, -1);

    assert_int_equal(mfs_inspect_buffer_with_vrt("t.tri", t.p, t.n, v.p, v.n, 1, &s, &err), 0);
    assert_int_equal(s.triangles, 1);
    assert_int_equal(s.n_warnings, 0);
    /* without the sibling: read, with a warning saying so */
    assert_int_equal(mfs_inspect_buffer("t.tri", t.p, t.n, 1, &s, &err), 0);
    assert_true(has_warning(&s, "is missing: indices not checked against vertices"));

    assert_int_equal(mfs_inspect_buffer_with_vrt("t.sph", s3.p, s3.n, v.p, v.n, 1, &s, &err),
                     0);
    assert_true(s.has_sphere);
    assert_true(s.radius == 2.7f);
    assert_box(s.center, 1.5f, 2.0f, 0.0f);
    assert_box(s.min, 1.5f - 2.7f, 2.0f - 2.7f, -2.7f);
    free(v.p);
    free(t.p);
    free(s3.p);
}

static void test_runtime_corrupt(void **state)
{
    (void)state;
    buf v = {0}, t = {0}, s3 = {0};
    vrt_sample(&v);
    tri_sample(&t, 3);
    sph_sample(&s3, 2.0f);
    all_prefixes_fail("t.vrt", &v, 0);
    all_prefixes_fail("t.tri", &t, 0);
    all_prefixes_fail("t.sph", &s3, 0);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(mfs_inspect_buffer_with_vrt("t.tri", t.p, t.n, v.p, v.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.tri: 1 indices out of range (first: index 2 = 3; sibling "
                                 ".vrt has 3 vertices)");
    assert_int_equal(mfs_inspect_buffer_with_vrt("t.sph", s3.p, s3.n, v.p, v.n, 1, &s, &err),
                     -1);
    assert_contains(err.msg, "3 vertices of sibling .vrt lie outside the sphere (first: vertex 0 "
                             "at distance 2.5 > radius 2)");

    mfs_st_u32(v.p + 8, 0x40000000u); /* numberOfElement */
    assert_int_equal(inspect("t.vrt", v.p, v.n, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.vrt: offset 8: declares 1073741824 elements (4294967296 "
                                 "bytes) but only 192 bytes remain");
    mfs_st_u32(v.p + 8, 0xffffffffu);
    assert_int_equal(inspect("t.vrt", v.p, v.n, 0, &s, &err), -1);
    assert_contains(err.msg, "negative numberOfElement (-1)");
    mfs_st_u32(v.p + 8, 48);
    mfs_st_u32(v.p + 4, 2);
    assert_int_equal(inspect("t.vrt", v.p, v.n, 0, &s, &err), -1);
    assert_contains(err.msg, "sizeOfElement is 2, expected 4");
    mfs_st_u32(v.p + 4, 4);
    mfs_st_u32(v.p, 100); /* rawSizeInBytes */
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_contains(err.msg, "rawSizeInBytes 100 disagrees with 4 x numberOfElement = 192");
    mfs_st_u32(v.p, 192);
    put_u32(&v, 0);
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_contains(err.msg, "offset 204: 4 bytes after the last element");
    v.n -= 4;
    mfs_st_f32(v.p + 12 + 4 * 7, 0.5f); /* normal (0,0,0.5) */
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_contains(err.msg, "1 normals are not unit length (first: vertex 0, length 0.5)");

    mfs_st_f32(s3.p + 28, 0.0f); /* w */
    assert_int_equal(inspect("t.sph", s3.p, s3.n, 1, &s, &err), -1);
    assert_contains(err.msg, "offset 28: centre w is 0, expected 1.0");
    mfs_st_f32(s3.p + 28, 1.0f);
    s3.p[47] = 1;
    assert_int_equal(inspect("t.sph", s3.p, s3.n, 1, &s, &err), -1);
    assert_contains(err.msg, "offset 47: byte 0x01 in the padding (bytes 36-47), expected 0");
    s3.p[47] = 0;
    s3.p[3] = 1;
    assert_int_equal(inspect("t.sph", s3.p, s3.n, 1, &s, &err), -1);
    assert_contains(err.msg, "offset 3: byte 0x01 in the Align16 base (bytes 0-15), expected 0");
    free(v.p);
    free(t.p);
    free(s3.p);
}

/* The engine's reading (research/dem_vrt.md): Mesh takes rawSizeInBytes /
 * 64 vertices, the skinning shader 4 weights and 4 indices below 100, and
 * BoundingSphere is 48 bytes. */
static void test_runtime_engine_layout(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    buf v = {0};
    /* 3 plain vertices, 96 bytes: not a whole number of 64-byte ones */
    vrt_plain_sample(&v, 3);
    assert_int_equal(inspect("p.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "p.vrt: 96 bytes of vertices is not a multiple of 64, the "
                                 "engine's VertexData (x y z u v nx ny nz, 4 weights, 4 bone "
                                 "indices): 3 32-byte vertices of vrt_layout=plain, which the "
                                 "engine would read as 1 64-byte ones");
    /* without --check: read as what it is, with the finding as a warning */
    assert_int_equal(inspect("p.vrt", v.p, v.n, 0, &s, &err), 0);
    assert_int_equal(s.vertices, 3);
    assert_int_equal(s.bones, 0);
    assert_box(s.max, 3, 4, 0);
    assert_true(has_warning(&s, "not a multiple of 64"));
    /* a .tri beside it indexes the 3 plain vertices */
    buf t = {0};
    tri_sample(&t, 2);
    assert_int_equal(mfs_inspect_buffer_with_vrt("t.tri", t.p, t.n, v.p, v.n, 1, &s, &err), 0);
    free(v.p);

    /* 2 plain vertices, 64 bytes: one engine vertex whose weights are
     * (3, 0, 0, 1); read as 32-byte vertices the file is clean */
    memset(&v, 0, sizeof v);
    vrt_plain_sample(&v, 2);
    assert_int_equal(inspect("p.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "p.vrt: the skin fields of 1 vertices are unusable read with "
                                 "the engine's 64-byte stride, but the file reads cleanly as 2 "
                                 "32-byte vertices of vrt_layout=plain, which the engine would "
                                 "misread");
    assert_int_equal(inspect("p.vrt", v.p, v.n, 0, &s, &err), 0);
    assert_int_equal(s.vertices, 2);
    free(v.p);

    /* skin fields of the 64-byte sample broken one at a time (vertex 1:
     * weights at 12 + 64 + 32, indices at 12 + 64 + 48) */
    memset(&v, 0, sizeof v);
    vrt_sample(&v);
    const size_t w1 = 12 + 64 + 32, b1 = 12 + 64 + 48;
    mfs_st_f32(v.p + w1 + 4, 0.5f); /* 0.75 + 0.5 */
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.vrt: 1 vertices have skin weights summing to neither 1 nor "
                                 "0 (first: vertex 1, sum 1.25)");
    mfs_st_f32(v.p + w1 + 4, -0.25f);
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.vrt: 1 vertices have a skin weight outside [0, 1] (first: "
                                 "vertex 1, weight -0.25)");
    mfs_st_f32(v.p + w1 + 4, 0.25f);
    mfs_st_u32(v.p + b1 + 12, 100); /* under a zero weight: still fetched */
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.vrt: 1 vertices have a bone index beyond the 100 joints of "
                                 "the engine's skinning shader (first: vertex 1, index 100)");
    mfs_st_u32(v.p + b1 + 12, 99);
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), 0);
    assert_int_equal(s.bones, 3); /* 99 sits under a zero weight */
    /* neither 64- nor 32-byte vertices: 3 engine vertices and 4 words */
    free(v.p);
    memset(&v, 0, sizeof v);
    runtime_header(&v, 52);
    for (int i = 0; i < 52; i++)
        put_u32(&v, 0);
    assert_int_equal(inspect("t.vrt", v.p, v.n, 1, &s, &err), -1);
    assert_string_equal(err.msg, "t.vrt: 208 bytes of vertices is not a multiple of 64, the "
                                 "engine's VertexData (x y z u v nx ny nz, 4 weights, 4 bone "
                                 "indices)");
    assert_int_equal(inspect("t.vrt", v.p, v.n, 0, &s, &err), 0);
    assert_int_equal(s.vertices, 3);
    free(v.p);

    /* the old 32-byte sphere (centre at 0, radius at 16) is refused */
    buf old = {0};
    const float c[5] = {1.5f, 2.0f, 0.0f, 1.0f, 2.7f};
    put_fs(&old, 5, c);
    for (int i = 0; i < 12; i++)
        put(&old, "", 1);
    assert_int_equal(inspect("t.sph", old.p, old.n, 0, &s, &err), -1);
    assert_string_equal(err.msg, "t.sph: file is 32 bytes, a .sph is 48 (the engine's "
                                 "BoundingSphere: 16-byte Align16 base, centre x y z w at 16, "
                                 "radius at 32, padding)");
    free(old.p);
    free(t.p);
}

static void write_file(const char *dir, const char *name, const buf *b)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b->p, 1, b->n, f), b->n);
    assert_int_equal(fclose(f), 0);
}

/* mfs_inspect_file finds x.vrt next to x.tri and x.sph. */
static void test_sibling_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_inspect.XXXXXX";
    assert_non_null(mkdtemp(dir));
    buf v = {0}, t = {0}, bad = {0}, s3 = {0};
    vrt_sample(&v);
    tri_sample(&t, 2);
    tri_sample(&bad, 9);
    sph_sample(&s3, 2.7f);
    write_file(dir, "x.vrt", &v);
    write_file(dir, "x.tri", &t);
    write_file(dir, "x.sph", &s3);
    write_file(dir, "y.tri", &bad);

    char path[512], sib[512];
    mfs_summary s;
    mfs_err err;
    snprintf(path, sizeof path, "%s/x.tri", dir);
    snprintf(sib, sizeof sib, "%s/x.vrt", dir);
    assert_int_equal(mfs_inspect_file(path, 1, &s, &err), 0);
    assert_string_equal(s.sibling, sib);
    assert_int_equal(s.n_warnings, 0);
    snprintf(path, sizeof path, "%s/x.sph", dir);
    assert_int_equal(mfs_inspect_file(path, 1, &s, &err), 0);
    assert_string_equal(s.sibling, sib);
    snprintf(path, sizeof path, "%s/y.tri", dir);
    assert_int_equal(mfs_inspect_file(path, 1, &s, &err), 0);
    assert_string_equal(s.sibling, "");
    assert_true(has_warning(&s, "sibling y.vrt is missing: indices not checked"));
    snprintf(path, sizeof path, "%s/missing.gmf", dir);
    assert_int_equal(mfs_inspect_file(path, 0, &s, &err), -1);
    assert_contains(err.msg, "missing.gmf: cannot open: No such file or directory");

    const char *names[] = {"x.vrt", "x.tri", "x.sph", "y.tri"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    free(v.p);
    free(t.p);
    free(bad.p);
    free(s3.p);
}

/* ======================================================================
 * JSON output (fields documented in docs/inspect.md).
 */

static char *json_of(const char *file, const mfs_summary *s, const char *error)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    mfs_summary_json(f, file, s, error);
    fclose(f);
    return text;
}

static void test_json(void **state)
{
    (void)state;
    buf b = {0};
    gmf_sample(&b, 2);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(inspect("t.gmf", b.p, b.n, 1, &s, &err), 0);
    char *j = json_of("t.gmf", &s, NULL);
    assert_string_equal(j, "{\"file\":\"t.gmf\",\"ok\":true,\"error\":null,\"format\":\"gmf\","
                           "\"version\":2,\"name\":\"root\",\"meshes\":1,\"vertices\":3,"
                           "\"triangles\":1,\"bones\":1,\"nodes\":3,\"animations\":1,"
                           "\"animation_names\":[\"walk\"],\"min\":[1,0,1],\"max\":[2,1,1],"
                           "\"cmin\":[1,0,-1],\"cmax\":[2,1,-1],\"sphere\":null,"
                           "\"sibling\":null,\"texture\":null,\"warnings\":[],"
                           "\"warnings_total\":0,"
                           "\"violations\":0}\n");
    free(j);
    free(b.p);

    /* strings are escaped, invalid UTF-8 replaced, non-finite numbers null */
    memset(&s, 0, sizeof s);
    strcpy(s.format, "sph");
    strcpy(s.name, "a\"b\\c\n\xff\xc3\xa9");
    s.has_sphere = 1;
    s.radius = INFINITY;
    j = json_of("f.sph", &s, "bad \"thing\"");
    assert_contains(j, "\"ok\":false,\"error\":\"bad \\\"thing\\\"\"");
    assert_contains(j, "\"name\":\"a\\\"b\\\\c\\u000a\\ufffd\xc3\xa9\"");
    assert_contains(j, "\"sphere\":{\"center\":[0,0,0],\"radius\":null}");
    free(j);
}

static void test_unknown_format(void **state)
{
    (void)state;
    mfs_summary s;
    mfs_err err;
    const uint8_t junk[16] = {9, 9, 9};
    assert_int_equal(inspect("t.bin", junk, sizeof junk, 0, &s, &err), -1);
    assert_contains(err.msg, "t.bin: unknown format");
    /* without an extension the magic decides */
    assert_int_equal(inspect("noext", (const uint8_t *)DEM_SAMPLE, strlen(DEM_SAMPLE), 1, &s,
                             &err), 0);
    assert_string_equal(s.format, "dem");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmd_valid),
        cmocka_unit_test(test_fmd_drawn_bounds),
        cmocka_unit_test(test_fmd_truncated),
        cmocka_unit_test(test_fmd_bad_counts),
        cmocka_unit_test(test_fmd_bad_magic_and_gzip),
        cmocka_unit_test(test_fmd_trailing),
        cmocka_unit_test(test_fmd_bomb),
        cmocka_unit_test(test_fmd_deep_nesting),
        cmocka_unit_test(test_fmd_check_violations),
        cmocka_unit_test(test_fmd_fge_mesh_pairing),
        cmocka_unit_test(test_gmf_valid),
        cmocka_unit_test(test_gmf_truncated),
        cmocka_unit_test(test_gmf_bad_counts),
        cmocka_unit_test(test_gmf_bad_magic_and_version),
        cmocka_unit_test(test_gmf_deep_nesting),
        cmocka_unit_test(test_gmf_check),
        cmocka_unit_test(test_gmf_property_crlf),
        cmocka_unit_test(test_gmf_rotated_limb_gmf_vs_mdl),
        cmocka_unit_test(test_gmf_mislabeled_color),
        cmocka_unit_test(test_dem_valid),
        cmocka_unit_test(test_dem_truncated),
        cmocka_unit_test(test_dem_count_mismatch),
        cmocka_unit_test(test_dem_errors),
        cmocka_unit_test(test_dem_check),
        cmocka_unit_test(test_fmi),
        cmocka_unit_test(test_runtime_valid),
        cmocka_unit_test(test_runtime_corrupt),
        cmocka_unit_test(test_runtime_engine_layout),
        cmocka_unit_test(test_sibling_files),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_unknown_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

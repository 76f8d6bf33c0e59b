/* .fmd writer: decode the output (gunzip, then walk the layout of
 * docs/formats/fmd.md) and check every field against values worked out by
 * hand from the fixtures.
 *
 * Placement follows what FGE does with the file (research/fmd.md, "What
 * FGE does with a converted file"): a static mesh is drawn at its stored
 * vertices and no node matrix is applied, so the default output must hold
 * every vertex where the scene puts it (B * world * p, worked out in the
 * tests from the node matrices with the helpers below, not the library's),
 * and fmd_raw the mesh-local vertices FMC writes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fixtures.h"
#include "meshfs/formats.h"

/* ---- writing and unpacking ---- */

typedef struct fmd_file {
    uint8_t *raw;     /* the whole .fmd */
    size_t raw_len;
    uint8_t *data;    /* gunzipped payload */
    size_t len, at;   /* read cursor */
} fmd_file;

static void gunzip(fmd_file *f)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(inflateInit2(&z, 31), Z_OK); /* 31: gzip wrapper only */
    size_t cap = 1 << 16;
    f->data = malloc(cap);
    z.next_in = f->raw + 6;
    z.avail_in = (uInt)(f->raw_len - 6);
    int r;
    do {
        if (z.total_out == cap) {
            cap *= 2;
            f->data = realloc(f->data, cap);
        }
        z.next_out = f->data + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        r = inflate(&z, Z_NO_FLUSH);
        assert_true(r == Z_OK || r == Z_STREAM_END);
    } while (r != Z_STREAM_END);
    assert_int_equal(z.avail_in, 0); /* one gzip member, nothing after it */
    f->len = z.total_out;
    f->at = 0;
    inflateEnd(&z);
}

static void write_fmd(const mfs_scene *s, const mfs_options *o, fmd_file *f)
{
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_scene_validate(s, &err), 0);
    mfs_sink out;
    mfs_sink_init_mem(&out);
    int rc = mfs_write_fmd(s, NULL, o, &out, &err);
    if (rc != 0)
        fail_msg("mfs_write_fmd: %s", err.msg);
    assert_int_equal(mfs_sink_finish(&out), 0);
    f->raw = mfs_sink_take(&out, &f->raw_len);
    mfs_sink_free(&out);
    assert_true(f->raw_len > 6 + 18);
    gunzip(f);
}

static void fmd_free(fmd_file *f)
{
    free(f->raw);
    free(f->data);
}

enum { PLACED = 0, RAW = 1 };

/* layout: PLACED (the default) or RAW (fmd_raw); pretrans is left 0, it
 * must change nothing (test_pretrans_changes_nothing). */
static mfs_options opts(int layout)
{
    mfs_options o;
    mfs_options_default(&o);
    o.fmd_raw = layout == RAW;
    return o;
}

/* ---- reading fields ---- */

static int32_t rd_i32(fmd_file *f)
{
    assert_true(f->at + 4 <= f->len);
    int32_t v = mfs_ld_i32(f->data + f->at);
    f->at += 4;
    return v;
}

static float rd_f32(fmd_file *f)
{
    assert_true(f->at + 4 <= f->len);
    float v = mfs_ld_f32(f->data + f->at);
    f->at += 4;
    return v;
}

static void expect_i32(fmd_file *f, int32_t want)
{
    assert_int_equal(rd_i32(f), want);
}

static void expect_str(fmd_file *f, const char *want)
{
    int32_t n = rd_i32(f);
    assert_int_equal(n, (int32_t)strlen(want));
    assert_true(f->at + (size_t)n <= f->len);
    assert_memory_equal(f->data + f->at, want, (size_t)n);
    f->at += (size_t)n;
}

static void expect_floats(fmd_file *f, const float *want, int n)
{
    for (int i = 0; i < n; i++) {
        float got = rd_f32(f);
        if (!(got - want[i] < 1e-6f && want[i] - got < 1e-6f))
            fail_msg("float %d: got %.9g, want %.9g", i, (double)got, (double)want[i]);
    }
}

static void expect_vec3(fmd_file *f, float x, float y, float z)
{
    const float v[3] = {x, y, z};
    expect_floats(f, v, 3);
}

static void expect_tri(fmd_file *f, int32_t a, int32_t b, int32_t c)
{
    expect_i32(f, a);
    expect_i32(f, b);
    expect_i32(f, c);
}

static void advance(fmd_file *f, size_t n)
{
    assert_true(f->at + n <= f->len);
    f->at += n;
}

static const float IDENT[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
/* Canonical (x,y,z) -> FGE (x,-z,y), row-major, column vectors. */
static const float BASIS[16] = {1, 0, 0, 0, 0, 0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 1};

/* ---- scene building for the cases the fixtures do not cover ---- */

static mfs_mesh *append_mesh(mfs_scene *s, const char *name, mfs_prim prim, uint32_t nv,
                             const float (*pos)[3], uint32_t nf, const uint32_t *idx)
{
    s->meshes = realloc(s->meshes, sizeof *s->meshes * (s->n_meshes + 1));
    mfs_mesh *m = &s->meshes[s->n_meshes++];
    memset(m, 0, sizeof *m);
    m->name = mfs_strdup(name);
    m->material = -1;
    m->prim = prim;
    m->n_vertices = nv;
    m->positions = malloc(sizeof *m->positions * nv);
    memcpy(m->positions, pos, sizeof *m->positions * nv);
    m->n_faces = nf;
    m->indices = malloc(sizeof(uint32_t) * nf * (uint32_t)prim);
    memcpy(m->indices, idx, sizeof(uint32_t) * nf * (uint32_t)prim);
    return m;
}

static void place(mfs_scene *s, uint32_t node, uint32_t mesh)
{
    mfs_node *n = &s->nodes[node];
    n->meshes = realloc(n->meshes, sizeof(uint32_t) * (n->n_meshes + 1));
    n->meshes[n->n_meshes++] = mesh;
}

/* Appends node `name` under `parent` with matrix `local` (row by row,
 * column vectors).  Appending keeps pre-order as long as `parent`'s subtree
 * is the last one in the array. */
static uint32_t append_node(mfs_scene *s, uint32_t parent, const char *name, const float local[16])
{
    s->nodes = realloc(s->nodes, sizeof *s->nodes * (s->n_nodes + 1));
    uint32_t i = s->n_nodes++;
    mfs_node *n = &s->nodes[i];
    memset(n, 0, sizeof *n);
    n->name = mfs_strdup(name);
    memcpy(n->local.m, local, sizeof n->local.m);
    n->parent = (int32_t)parent;
    mfs_node *p = &s->nodes[parent];
    p->children = realloc(p->children, sizeof(uint32_t) * (p->n_children + 1));
    p->children[p->n_children++] = i;
    return i;
}

/* ---- matrix arithmetic of the test's own (row by row, column vectors) ---- */

static void mul(float r[16], const float a[16], const float b[16])
{
    float t[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += (double)a[4 * i + k] * b[4 * k + j];
            t[4 * i + j] = (float)acc;
        }
    memcpy(r, t, sizeof t);
}

static void apply(const float m[16], const float p[3], float out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = m[4 * i] * p[0] + m[4 * i + 1] * p[1] + m[4 * i + 2] * p[2] + m[4 * i + 3];
}

static int near3(const float a[3], const float b[3], float tol)
{
    for (int i = 0; i < 3; i++)
        if (!(a[i] - b[i] <= tol && b[i] - a[i] <= tol))
            return 0;
    return 1;
}

/* Reads one mesh's geometry counts and skips its data. */
static void skip_mesh_tail_from_tc(fmd_file *f, int32_t nv)
{
    expect_i32(f, nv);
    advance(f, (size_t)nv * 8);
    expect_i32(f, nv);
    advance(f, (size_t)nv * 12);
}

/* ---- tests ---- */

static void test_header_and_gzip_bytes(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts(PLACED);
    fmd_file f;
    write_fmd(s, &o, &f);
    assert_memory_equal(f.raw, "FMD001", 6);
    /* ID1 ID2, CM=8 deflate, FLG=0, MTIME=0, XFL=4 (zlib's mark for level
     * 1, "fastest"), OS=255. */
    static const uint8_t gz[10] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x04, 0xff};
    assert_memory_equal(f.raw + 6, gz, sizeof gz);
    /* gzip trailer: ISIZE is the payload length. */
    assert_int_equal(mfs_ld_u32(f.raw + f.raw_len - 4), (uint32_t)f.len);
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_cube_layout(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts(RAW);
    fmd_file f;
    write_fmd(s, &o, &f);
    expect_floats(&f, BASIS, 16); /* root: basis * identity */
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    /* +X face, written as-is (fmd_raw: mesh-local, canonical). */
    expect_vec3(&f, 0.5f, -0.5f, 0.5f);
    expect_vec3(&f, 0.5f, -0.5f, -0.5f);
    expect_vec3(&f, 0.5f, 0.5f, -0.5f);
    expect_vec3(&f, 0.5f, 0.5f, 0.5f);
    advance(&f, 20 * 12);
    expect_i32(&f, 12);
    expect_tri(&f, 2, 1, 0); /* canonical (0,1,2) reversed */
    expect_tri(&f, 3, 2, 0); /* canonical (0,2,3) reversed */
    expect_tri(&f, 6, 5, 4);
    advance(&f, 9 * 12);
    expect_i32(&f, 24);
    const float uv[8] = {0, 0, 1, 0, 1, 1, 0, 1}; /* unflipped */
    expect_floats(&f, uv, 8);
    advance(&f, 20 * 8);
    expect_i32(&f, 24);
    expect_vec3(&f, 1, 0, 0);
    advance(&f, 3 * 12);
    expect_vec3(&f, -1, 0, 0); /* vertex 4: -X face */
    advance(&f, 19 * 12);
    expect_i32(&f, 0); /* bones */
    expect_str(&f, "root");
    expect_floats(&f, BASIS, 16);
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    expect_floats(&f, IDENT, 16);
    expect_i32(&f, 0);
    assert_int_equal(f.at, f.len);
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_deterministic(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    mfs_options o = opts(PLACED);
    fmd_file a, b;
    write_fmd(s, &o, &a);
    write_fmd(s, &o, &b);
    assert_int_equal(a.raw_len, b.raw_len);
    assert_memory_equal(a.raw, b.raw, a.raw_len);
    fmd_free(&a);
    fmd_free(&b);
    mfs_scene_free(s);
}

static void test_skinned_strip(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    mfs_options o = opts(RAW);
    fmd_file f;
    write_fmd(s, &o, &f);
    expect_floats(&f, BASIS, 16);
    expect_i32(&f, 1);
    expect_str(&f, "strip");
    expect_i32(&f, 6);
    expect_vec3(&f, 0, 0, 0);
    expect_vec3(&f, 1, 0, 0);
    advance(&f, 4 * 12);
    expect_i32(&f, 4);
    expect_tri(&f, 3, 1, 0);
    expect_tri(&f, 2, 3, 0);
    expect_tri(&f, 5, 3, 2);
    expect_tri(&f, 4, 5, 2);
    expect_i32(&f, 6);
    const float uv[12] = {0, 0, 1, 0, 0, 0.5f, 1, 0.5f, 0, 1, 1, 1};
    expect_floats(&f, uv, 12);
    expect_i32(&f, 6);
    for (int v = 0; v < 6; v++)
        expect_vec3(&f, 0, 0, 1);
    expect_i32(&f, 2);
    expect_str(&f, "bone0");
    expect_i32(&f, 4);
    expect_i32(&f, 0); expect_floats(&f, (const float[]){1.0f}, 1);
    expect_i32(&f, 1); expect_floats(&f, (const float[]){1.0f}, 1);
    expect_i32(&f, 2); expect_floats(&f, (const float[]){0.5f}, 1);
    expect_i32(&f, 3); expect_floats(&f, (const float[]){0.5f}, 1);
    expect_floats(&f, IDENT, 16);
    expect_str(&f, "bone1");
    expect_i32(&f, 4);
    expect_i32(&f, 2); expect_floats(&f, (const float[]){0.5f}, 1);
    expect_i32(&f, 3); expect_floats(&f, (const float[]){0.5f}, 1);
    expect_i32(&f, 4); expect_floats(&f, (const float[]){1.0f}, 1);
    expect_i32(&f, 5); expect_floats(&f, (const float[]){1.0f}, 1);
    const float off1[16] = {1, 0, 0, 0, 0, 1, 0, -1, 0, 0, 1, 0, 0, 0, 0, 1};
    expect_floats(&f, off1, 16);
    /* Node tree in pre-order with child counts. */
    expect_str(&f, "root");
    expect_floats(&f, BASIS, 16);
    expect_i32(&f, 2);
    expect_str(&f, "strip");
    expect_floats(&f, IDENT, 16);
    expect_i32(&f, 0);
    expect_str(&f, "bone0");
    expect_floats(&f, IDENT, 16);
    expect_i32(&f, 1);
    expect_str(&f, "bone1");
    const float t1[16] = {1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1};
    expect_floats(&f, t1, 16);
    expect_i32(&f, 0);
    assert_int_equal(f.at, f.len);
    fmd_free(&f);
    mfs_scene_free(s);
}

/* Root translated by (0,0,1), cube node T(2,0,0) * S(2,1,1):
 * world = [2 0 0 2; 0 1 0 0; 0 0 1 1]; placed = basis * world * p. */
static void test_placed_translated(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->nodes[0].local.m[11] = 1;
    s->nodes[1].local.m[0] = 2;
    s->nodes[1].local.m[3] = 2;
    mfs_options o = opts(PLACED);
    fmd_file f;
    write_fmd(s, &o, &f);
    /* basis * T(0,0,1): the translation column becomes (0,-1,0). */
    const float root[16] = {1, 0, 0, 0, 0, 0, -1, -1, 0, 1, 0, 0, 0, 0, 0, 1};
    expect_floats(&f, root, 16);
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    /* v0 (0.5,-0.5,0.5) -> world (3,-0.5,1.5) -> FGE (3,-1.5,-0.5) */
    expect_vec3(&f, 3, -1.5f, -0.5f);
    advance(&f, 7 * 12);
    /* v8 (+Y face) (-0.5,0.5,0.5) -> world (1,0.5,1.5) -> FGE (1,-1.5,0.5) */
    expect_vec3(&f, 1, -1.5f, 0.5f);
    advance(&f, 15 * 12);
    expect_i32(&f, 12);
    expect_tri(&f, 2, 1, 0); /* det > 0: winding as in the raw layout */
    advance(&f, 11 * 12);
    expect_i32(&f, 24);
    advance(&f, 24 * 8);
    expect_i32(&f, 24);
    /* +X normal through diag(0.5,1,1) is (0.5,0,0): renormalised. */
    expect_vec3(&f, 1, 0, 0);
    advance(&f, 7 * 12);
    expect_vec3(&f, 0, 0, 1); /* canonical up is FGE up */
    advance(&f, 15 * 12);
    expect_i32(&f, 0);
    expect_str(&f, "root");
    expect_floats(&f, root, 16); /* node tree root carries the same matrix */
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    const float node[16] = {2, 0, 0, 2, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    expect_floats(&f, node, 16);
    expect_i32(&f, 0);
    assert_int_equal(f.at, f.len);
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_placed_mirror_keeps_front(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->nodes[1].local.m[0] = -1;
    mfs_options o = opts(PLACED);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64 + 4);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    expect_vec3(&f, -0.5f, -0.5f, -0.5f); /* (0.5,-0.5,0.5) mirrored, then basis */
    advance(&f, 23 * 12);
    expect_i32(&f, 12);
    expect_tri(&f, 0, 1, 2); /* the mirror already reversed it */
    advance(&f, 11 * 12);
    expect_i32(&f, 24);
    advance(&f, 24 * 8);
    expect_i32(&f, 24);
    expect_vec3(&f, -1, 0, 0); /* +X normal mirrored: still outward */
    fmd_free(&f);
    mfs_scene_free(s);
}

/* Placed, the strip's vertices become basis * p; offsets get basis^-1
 * appended so offset' * p' == offset * p. */
static void test_placed_bone_offsets_basis(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    mfs_options o = opts(PLACED);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64 + 4);
    expect_str(&f, "strip");
    expect_i32(&f, 6);
    expect_vec3(&f, 0, 0, 0);
    expect_vec3(&f, 1, 0, 0);
    expect_vec3(&f, 0, 0, 1); /* v2 (0,1,0) */
    advance(&f, 3 * 12);
    expect_i32(&f, 4);
    advance(&f, 4 * 12);
    expect_i32(&f, 6);
    advance(&f, 6 * 8);
    expect_i32(&f, 6);
    expect_vec3(&f, 0, -1, 0); /* +Z normal -> -Y */
    advance(&f, 5 * 12);
    expect_i32(&f, 2);
    expect_str(&f, "bone0");
    expect_i32(&f, 4);
    advance(&f, 4 * 8);
    const float inv_basis[16] = {1, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1};
    expect_floats(&f, inv_basis, 16);
    expect_str(&f, "bone1");
    expect_i32(&f, 4);
    advance(&f, 4 * 8);
    const float off1[16] = {1, 0, 0, 0, 0, 0, 1, -1, 0, -1, 0, 0, 0, 0, 0, 1};
    expect_floats(&f, off1, 16);
    expect_str(&f, "root");
    expect_floats(&f, BASIS, 16);
    fmd_free(&f);
    mfs_scene_free(s);
}

/* A collisioncomplex_ quad placed *before* the visible mesh: it is written
 * after it, as a soup, without its bone. */
static void test_collision_soup_and_order(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    static const float quad[4][3] = {{0, 0, 0}, {1, 0, 0}, {1, 0, -1}, {0, 0, -1}};
    static const uint32_t qi[6] = {0, 1, 2, 0, 2, 3};
    mfs_mesh *q = append_mesh(s, "CollisionComplex_Floor", MFS_PRIM_TRIANGLES, 4, quad, 2, qi);
    q->n_bones = 1;
    q->bones = calloc(1, sizeof(mfs_bone));
    q->bones[0].name = mfs_strdup("cube");
    q->bones[0].node = 1;
    mfs_mat4_identity(&q->bones[0].offset);
    q->bones[0].n_weights = 1;
    q->bones[0].weights = calloc(1, sizeof(mfs_weight));
    /* Swap so the collision mesh is mesh 0. */
    mfs_mesh t = s->meshes[0];
    s->meshes[0] = s->meshes[1];
    s->meshes[1] = t;
    s->nodes[1].meshes[0] = 1;
    place(s, 0, 0);
    mfs_options o = opts(RAW);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64);
    expect_i32(&f, 2); /* true mesh count */
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    advance(&f, 24 * 12);
    expect_i32(&f, 12);
    advance(&f, 12 * 12);
    skip_mesh_tail_from_tc(&f, 24);
    expect_i32(&f, 0);
    expect_str(&f, "CollisionComplex_Floor");
    expect_i32(&f, 6);
    /* face (0,1,2) written (2,1,0), face (0,2,3) written (3,2,0) */
    expect_vec3(&f, 1, 0, -1);
    expect_vec3(&f, 1, 0, 0);
    expect_vec3(&f, 0, 0, 0);
    expect_vec3(&f, 0, 0, -1);
    expect_vec3(&f, 1, 0, -1);
    expect_vec3(&f, 0, 0, 0);
    expect_i32(&f, 2);
    for (int i = 0; i < 6; i++)
        expect_i32(&f, i);
    expect_i32(&f, 6);
    for (int i = 0; i < 12; i++)
        expect_floats(&f, (const float[]){0.0f}, 1); /* no UVs: zeros */
    expect_i32(&f, 6);
    /* No normals given: computed from the CCW triangles, (1,0,0)x(1,0,-1) = +Y. */
    for (int i = 0; i < 6; i++)
        expect_vec3(&f, 0, 1, 0);
    expect_i32(&f, 0); /* bone of a hidden mesh dropped */
    expect_str(&f, "root");
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_points_and_lines(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    static const float p[3][3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
    static const uint32_t pts[2] = {0, 2};
    static const uint32_t lines[4] = {0, 1, 1, 2};
    append_mesh(s, "pts", MFS_PRIM_POINTS, 3, p, 2, pts);
    append_mesh(s, "lines", MFS_PRIM_LINES, 3, p, 2, lines);
    place(s, 1, 1);
    place(s, 1, 2);
    mfs_options o = opts(RAW);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64);
    expect_i32(&f, 3);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    advance(&f, 24 * 12);
    expect_i32(&f, 12);
    advance(&f, 12 * 12);
    skip_mesh_tail_from_tc(&f, 24);
    expect_i32(&f, 0);
    expect_str(&f, "pts");
    expect_i32(&f, 3);
    advance(&f, 3 * 12);
    expect_i32(&f, 2);
    expect_tri(&f, 0, 0, 0);
    expect_tri(&f, 2, 2, 2);
    expect_i32(&f, 3);
    advance(&f, 3 * 8);
    expect_i32(&f, 3);
    for (int i = 0; i < 3; i++)
        expect_vec3(&f, 0, 0, 1); /* nothing to derive a normal from */
    expect_i32(&f, 0);
    expect_str(&f, "lines");
    expect_i32(&f, 3);
    advance(&f, 3 * 12);
    expect_i32(&f, 2);
    expect_tri(&f, 1, 0, 1); /* (a,b) -> (b,a,b) */
    expect_tri(&f, 2, 1, 2);
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_missing_normals_and_odd_names(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    free(s->meshes[0].normals);
    s->meshes[0].normals = NULL;
    free(s->meshes[0].name);
    s->meshes[0].name = mfs_strdup("a=b\nc:::d::e");
    mfs_options o = opts(RAW);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64 + 4);
    expect_str(&f, "a_b_c___d::e");
    expect_i32(&f, 24);
    advance(&f, 24 * 12);
    expect_i32(&f, 12);
    advance(&f, 12 * 12);
    expect_i32(&f, 24);
    advance(&f, 24 * 8);
    expect_i32(&f, 24);
    /* Four vertices per face: smooth normals are the face normals. */
    expect_vec3(&f, 1, 0, 0);
    advance(&f, 3 * 12);
    expect_vec3(&f, -1, 0, 0);
    advance(&f, 3 * 12);
    expect_vec3(&f, 0, 1, 0);
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_bone_without_node_dropped(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    s->meshes[0].bones[0].node = -1;
    mfs_options o = opts(RAW);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64 + 4);
    expect_str(&f, "strip");
    expect_i32(&f, 6);
    advance(&f, 6 * 12);
    expect_i32(&f, 4);
    advance(&f, 4 * 12);
    skip_mesh_tail_from_tc(&f, 6);
    expect_i32(&f, 1);
    expect_str(&f, "bone1");
    fmd_free(&f);
    mfs_scene_free(s);
}

/* A hierarchy with rotation, scale and translation at every level:
 *   root  T(0,1,0)
 *   arm   T(1,0,0) * Ry(+90)   (x' = z, z' = -x)
 *   hand  T(0,1,0) * S(2)      places the cube (the "cube" node no longer does)
 * Placed (the default): every vertex is basis * root * arm * hand * p, the
 * model-space position in FGE's frame, worked out here from the matrices.
 * By hand for vertex 0 (0.5,-0.5,0.5): hand (1,0,1), arm (2,0,-1), root
 * (2,1,-1), basis (x,-z,y) (2,1,1); its +X normal: arm (0,0,-1), basis
 * (0,1,0).  FMC's pretrans would bake root * hand only (research/fmd.md):
 * the intermediate arm must count.  fmd_raw: the vertices as stored. */
static const float ROOT_T[16] = {1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1};
static const float ARM[16] = {0, 0, 1, 1, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 0, 1};
static const float HAND[16] = {2, 0, 0, 0, 0, 2, 0, 1, 0, 0, 2, 0, 0, 0, 0, 1};

static mfs_scene *cube_in_hierarchy(void)
{
    mfs_scene *s = fixture_cube();
    memcpy(s->nodes[0].local.m, ROOT_T, sizeof ROOT_T);
    s->nodes[1].n_meshes = 0;
    uint32_t arm = append_node(s, 0, "arm", ARM);
    uint32_t hand = append_node(s, arm, "hand", HAND);
    place(s, hand, 0);
    return s;
}

static void test_placed_hierarchy(void **state)
{
    (void)state;
    mfs_scene *s = cube_in_hierarchy();
    float world[16], fge[16], fmc[16];
    mul(world, ROOT_T, ARM);
    mul(world, world, HAND);
    mul(fge, BASIS, world);
    mul(fmc, BASIS, ROOT_T);
    mul(fmc, fmc, HAND);

    mfs_options o = opts(PLACED);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64);
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    for (int v = 0; v < 24; v++) {
        float got[3] = {rd_f32(&f), rd_f32(&f), rd_f32(&f)}, want[3], old[3];
        apply(fge, s->meshes[0].positions[v], want);
        if (!near3(got, want, 1e-5f))
            fail_msg("vertex %d: got (%g %g %g), want (%g %g %g)", v, (double)got[0],
                     (double)got[1], (double)got[2], (double)want[0], (double)want[1],
                     (double)want[2]);
        apply(fmc, s->meshes[0].positions[v], old);
        assert_false(near3(got, old, 0.1f)); /* not FMC's root * node */
        if (v == 0)
            assert_true(near3(got, (const float[]){2, 1, 1}, 1e-6f));
    }
    expect_i32(&f, 12);
    expect_tri(&f, 2, 1, 0); /* det(B * W) = 8 > 0: FMC's reversed winding */
    advance(&f, 11 * 12);
    expect_i32(&f, 24);
    advance(&f, 24 * 8);
    expect_i32(&f, 24);
    expect_vec3(&f, 0, 1, 0); /* vertex 0's +X normal, unit length */
    fmd_free(&f);

    o = opts(RAW);
    write_fmd(s, &o, &f);
    advance(&f, 64);
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    for (int v = 0; v < 24; v++)
        expect_floats(&f, s->meshes[0].positions[v], 3);
    fmd_free(&f);
    mfs_scene_free(s);
}

static void expect_same_bytes(const mfs_scene *s, int layout)
{
    mfs_options a = opts(layout), b = opts(layout);
    b.pretrans = 1;
    fmd_file fa, fb;
    write_fmd(s, &a, &fa);
    write_fmd(s, &b, &fb);
    assert_int_equal(fa.raw_len, fb.raw_len);
    assert_memory_equal(fa.raw, fb.raw, fa.raw_len);
    fmd_free(&fa);
    fmd_free(&fb);
}

/* pretrans is still accepted and changes nothing, in either layout. */
static void test_pretrans_changes_nothing(void **state)
{
    (void)state;
    mfs_scene *a = cube_in_hierarchy(), *b = fixture_skinned_strip();
    for (int layout = PLACED; layout <= RAW; layout++) {
        expect_same_bytes(a, layout);
        expect_same_bytes(b, layout);
    }
    mfs_scene_free(a);
    mfs_scene_free(b);
}

/* Skips the rest of a cube record whose first `read` vertices were read. */
static void skip_cube_rest(fmd_file *f, int read)
{
    advance(f, (size_t)(24 - read) * 12);
    expect_i32(f, 12);
    advance(f, 12 * 12);
    skip_mesh_tail_from_tc(f, 24);
    expect_i32(f, 0);
}

/* The cube placed twice: by "cube" (identity) and by "copy" (T(3,0,0)).
 * FGE draws each record once where its vertices are, so the placed file
 * holds two records of the same name (the .fmi line applies to both);
 * the raw layout one. */
static void test_instancing(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    static const float t3[16] = {1, 0, 0, 3, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    place(s, append_node(s, 0, "copy", t3), 0);
    mfs_options o = opts(PLACED);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64);
    expect_i32(&f, 2);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    expect_vec3(&f, 0.5f, -0.5f, -0.5f); /* (0.5,-0.5,0.5) -> basis */
    skip_cube_rest(&f, 1);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    expect_vec3(&f, 3.5f, -0.5f, -0.5f); /* (3.5,-0.5,0.5) -> basis */
    skip_cube_rest(&f, 1);
    expect_str(&f, "root");
    expect_floats(&f, BASIS, 16);
    expect_i32(&f, 2); /* cube, copy: the tree is kept as it is */
    fmd_free(&f);

    o = opts(RAW);
    write_fmd(s, &o, &f);
    advance(&f, 64);
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    skip_cube_rest(&f, 0);
    expect_str(&f, "root");
    fmd_free(&f);
    mfs_scene_free(s);
}

/* Skinned strip placed by root T(1,0,0) * strip T(0,0,2) * Rz(+90).
 * What is checked: the vertices are basis * world * p, and for every
 * vertex and every bone, written offset * written vertex equals the
 * scene's offset * scene vertex.  That is the bind-pose position in bone
 * space, so FGE's skinning (bone transform * offset * vertex) moves the
 * placed vertices exactly as the source's skinning moves its own. */
static void test_placed_skinned_offsets(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    static const float root[16] = {1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    static const float strip[16] = {0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1};
    memcpy(s->nodes[0].local.m, root, sizeof root);
    memcpy(s->nodes[1].local.m, strip, sizeof strip);
    float world[16], fge[16];
    mul(world, root, strip);
    mul(fge, BASIS, world);
    mfs_options o = opts(PLACED);
    fmd_file f;
    write_fmd(s, &o, &f);
    advance(&f, 64 + 4);
    expect_str(&f, "strip");
    expect_i32(&f, 6);
    float placed[6][3];
    for (int v = 0; v < 6; v++) {
        float want[3];
        for (int k = 0; k < 3; k++)
            placed[v][k] = rd_f32(&f);
        apply(fge, s->meshes[0].positions[v], want);
        assert_true(near3(placed[v], want, 1e-6f));
    }
    expect_i32(&f, 4);
    advance(&f, 4 * 12);
    skip_mesh_tail_from_tc(&f, 6);
    expect_i32(&f, 2);
    for (int b = 0; b < 2; b++) {
        const mfs_bone *bone = &s->meshes[0].bones[b];
        expect_str(&f, bone->name);
        expect_i32(&f, 4);
        advance(&f, 4 * 8);
        float off[16];
        for (int k = 0; k < 16; k++)
            off[k] = rd_f32(&f);
        for (int v = 0; v < 6; v++) {
            float got[3], want[3];
            apply(off, placed[v], got);
            apply(bone->offset.m, s->meshes[0].positions[v], want);
            if (!near3(got, want, 1e-5f))
                fail_msg("bone %d vertex %d: offset' * p' = (%g %g %g), offset * p = "
                         "(%g %g %g)", b, v, (double)got[0], (double)got[1], (double)got[2],
                         (double)want[0], (double)want[1], (double)want[2]);
        }
    }
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_source_frame_no_basis(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts(PLACED);
    o.source_frame = 1;
    fmd_file f;
    write_fmd(s, &o, &f);
    expect_floats(&f, IDENT, 16);
    expect_i32(&f, 1);
    expect_str(&f, "cube");
    expect_i32(&f, 24);
    expect_vec3(&f, 0.5f, -0.5f, 0.5f);
    fmd_free(&f);
    mfs_scene_free(s);
}

static void test_no_meshes_refused(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts(PLACED);
    uint32_t n = s->n_meshes;
    s->n_meshes = 0;
    s->nodes[1].n_meshes = 0;
    mfs_sink out;
    mfs_sink_init_mem(&out);
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_write_fmd(s, NULL, &o, &out, &err), -1);
    assert_non_null(strstr(err.msg, "no meshes"));
    mfs_sink_free(&out);
    s->n_meshes = n;
    mfs_scene_free(s);
}

/* The gzip failure that is the destination's own (the output cap) is left
 * on the destination for the caller to report. */
static void test_output_cap_left_to_caller(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts(PLACED);
    mfs_sink out;
    mfs_sink_init_mem(&out);
    out.limit = 20;
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_write_fmd(s, NULL, &o, &out, &err), 0);
    assert_int_equal(out.err, EFBIG);
    mfs_sink_free(&out);
    mfs_scene_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_and_gzip_bytes),
        cmocka_unit_test(test_cube_layout),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_skinned_strip),
        cmocka_unit_test(test_placed_translated),
        cmocka_unit_test(test_placed_mirror_keeps_front),
        cmocka_unit_test(test_placed_bone_offsets_basis),
        cmocka_unit_test(test_placed_hierarchy),
        cmocka_unit_test(test_pretrans_changes_nothing),
        cmocka_unit_test(test_instancing),
        cmocka_unit_test(test_placed_skinned_offsets),
        cmocka_unit_test(test_collision_soup_and_order),
        cmocka_unit_test(test_points_and_lines),
        cmocka_unit_test(test_missing_normals_and_odd_names),
        cmocka_unit_test(test_bone_without_node_dropped),
        cmocka_unit_test(test_source_frame_no_basis),
        cmocka_unit_test(test_no_meshes_refused),
        cmocka_unit_test(test_output_cap_left_to_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* .vrt / .tri / .sph writers, the merge/reduce in src/formats/runtime.c,
 * the sphere in src/formats/sphere.c and the one build a job's writers
 * share (src/formats/prepared.c).  Expected bytes are worked out from
 * docs/formats/{vrt,tri,sph}.md, the engine structs quoted in
 * research/dem_vrt.md (64-byte VertexData, 48-byte BoundingSphere) and the
 * fixture descriptions. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "meshfs/formats.h"
#include "../../src/formats/runtime.h"

/* ---- helpers ---- */

typedef struct blob {
    uint8_t *p;
    size_t n;
} blob;

static blob write_prep(mfs_writer_fn fn, const mfs_scene *s, mfs_prepared *prep,
                       const mfs_options *o)
{
    mfs_sink k;
    mfs_err err = {0};
    mfs_sink_init_mem(&k);
    int rc = fn(s, prep, o, &k, &err);
    if (rc != 0)
        fail_msg("writer failed: %s", err.msg);
    assert_int_equal(mfs_sink_finish(&k), 0);
    blob b;
    b.p = mfs_sink_take(&k, &b.n);
    return b;
}

/* Without prepared data: the writer builds its own mesh. */
static blob write_with(mfs_writer_fn fn, const mfs_scene *s, const mfs_options *o)
{
    return write_prep(fn, s, NULL, o);
}

static blob write_fmt(mfs_writer_fn fn, const mfs_scene *s)
{
    mfs_options o;
    mfs_options_default(&o);
    return write_with(fn, s, &o);
}

static void blob_eq(blob a, blob b)
{
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.p, b.p, a.n);
}

/* The engine's VertexData: 16 words, 64 bytes (x y z u v nx ny nz,
 * w0..w3, b0..b3); the plain layout: the first 8, 32 bytes. */
#define VWORDS 16
#define PWORDS 8

static float vfloat(blob vrt, uint32_t vertex, int k)
{
    return mfs_ld_f32(vrt.p + 12 + ((size_t)vertex * VWORDS + (size_t)k) * 4);
}

static float vweight(blob vrt, uint32_t vertex, int k)
{
    return mfs_ld_f32(vrt.p + 12 + (size_t)vertex * 64 + 32 + (size_t)k * 4);
}

static uint32_t vbone(blob vrt, uint32_t vertex, int k)
{
    return mfs_ld_u32(vrt.p + 12 + (size_t)vertex * 64 + 48 + (size_t)k * 4);
}

static float pfloat(blob vrt, uint32_t vertex, int k)
{
    return mfs_ld_f32(vrt.p + 12 + ((size_t)vertex * PWORDS + (size_t)k) * 4);
}

static uint32_t tindex(blob tri, uint32_t triangle, int k)
{
    return mfs_ld_u32(tri.p + 12 + ((size_t)triangle * 3 + (size_t)k) * 4);
}

/* Vertex count the way the engine's Mesh gets it: rawSizeInBytes /
 * sizeof(VertexData), 64 (32 for the plain layout). */
static uint32_t vrt_count_words(blob vrt, int words)
{
    assert_true(vrt.n >= 12);
    assert_int_equal(mfs_ld_i32(vrt.p + 4), 4);
    int32_t elems = mfs_ld_i32(vrt.p + 8);
    int32_t raw = mfs_ld_i32(vrt.p);
    assert_int_equal(raw, elems * 4);
    assert_int_equal(raw % (words * 4), 0);
    assert_int_equal(vrt.n, 12 + (size_t)raw);
    return (uint32_t)raw / (uint32_t)(words * 4);
}

static uint32_t vrt_count(blob vrt)
{
    return vrt_count_words(vrt, VWORDS);
}

/* Every skin word of every vertex zero: a static model. */
static void assert_static(blob vrt)
{
    uint32_t n = vrt_count(vrt);
    for (uint32_t v = 0; v < n; v++)
        for (int k = 0; k < 8; k++)
            if (mfs_ld_u32(vrt.p + 12 + (size_t)v * 64 + 32 + (size_t)k * 4) != 0)
                fail_msg("vertex %u skin word %d is not zero", v, k);
}

static uint32_t tri_count(blob tri)
{
    assert_true(tri.n >= 12);
    assert_int_equal(mfs_ld_i32(tri.p + 4), 4);
    int32_t elems = mfs_ld_i32(tri.p + 8);
    assert_int_equal(mfs_ld_i32(tri.p), elems * 4);
    assert_int_equal(elems % 3, 0);
    assert_int_equal(tri.n, 12 + (size_t)elems * 4);
    return (uint32_t)elems / 3;
}

static void assert_vertex(blob vrt, uint32_t v, const float want[8])
{
    for (int k = 0; k < 8; k++)
        if (vfloat(vrt, v, k) != want[k])
            fail_msg("vertex %u float %d: got %.9g want %.9g", v, k, vfloat(vrt, v, k),
                     want[k]);
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    assert_non_null(p);
    return p;
}

/* A scene with just a root node; nodes and meshes get appended. */
static mfs_scene *scene_root(void)
{
    mfs_scene *s = mfs_scene_new();
    s->n_nodes = 1;
    s->nodes = xcalloc(1, sizeof(mfs_node));
    s->nodes[0].name = mfs_strdup("root");
    s->nodes[0].parent = -1;
    mfs_mat4_identity(&s->nodes[0].local);
    return s;
}

/* Appends a child of `parent` (pre-order holds while every later node
 * descends from it). */
static uint32_t add_node(mfs_scene *s, uint32_t parent, const char *name)
{
    uint32_t i = s->n_nodes++;
    s->nodes = realloc(s->nodes, sizeof(mfs_node) * s->n_nodes);
    memset(&s->nodes[i], 0, sizeof(mfs_node));
    s->nodes[i].name = mfs_strdup(name);
    s->nodes[i].parent = (int32_t)parent;
    mfs_mat4_identity(&s->nodes[i].local);
    mfs_node *p = &s->nodes[parent];
    p->children = realloc(p->children, sizeof(uint32_t) * (p->n_children + 1));
    p->children[p->n_children++] = i;
    return i;
}

static mfs_mesh *add_mesh(mfs_scene *s, uint32_t node, const char *name, mfs_prim prim,
                          uint32_t nv, const float *pos, const float *nrm, const float *uv,
                          uint32_t nf, const uint32_t *idx)
{
    uint32_t i = s->n_meshes++;
    s->meshes = realloc(s->meshes, sizeof(mfs_mesh) * s->n_meshes);
    mfs_mesh *m = &s->meshes[i];
    memset(m, 0, sizeof *m);
    m->name = mfs_strdup(name);
    m->material = -1;
    m->prim = prim;
    m->n_vertices = nv;
    m->positions = xcalloc(nv, sizeof *m->positions);
    memcpy(m->positions, pos, sizeof *m->positions * nv);
    if (nrm) {
        m->normals = xcalloc(nv, sizeof *m->normals);
        memcpy(m->normals, nrm, sizeof *m->normals * nv);
    }
    if (uv) {
        m->uv[0] = xcalloc(nv, sizeof *m->uv[0]);
        memcpy(m->uv[0], uv, sizeof *m->uv[0] * nv);
    }
    m->n_faces = nf;
    m->indices = xcalloc((size_t)nf * prim, sizeof(uint32_t));
    memcpy(m->indices, idx, sizeof(uint32_t) * nf * prim);
    mfs_node *n = &s->nodes[node];
    n->meshes = realloc(n->meshes, sizeof(uint32_t) * (n->n_meshes + 1));
    n->meshes[n->n_meshes++] = i;
    return m;
}

static void assert_valid(const mfs_scene *s)
{
    mfs_err err = {0};
    if (mfs_scene_validate(s, &err) != 0)
        fail_msg("fixture invalid: %s", err.msg);
}

/* ---- .vrt ---- */

static void cube_vrt(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    blob b = write_fmt(mfs_write_vrt, s);
    /* 24 unique vertices (flat normals keep the faces apart), 64 bytes
     * each: rawSize 24*64 = 1536 = 0x600, element 4, 24*16 = 384 = 0x180
     * words. */
    static const uint8_t head[12] = {0x00, 0x06, 0, 0, 4, 0, 0, 0, 0x80, 0x01, 0, 0};
    assert_int_equal(b.n, 12 + 1536);
    assert_memory_equal(b.p, head, 12);
    assert_int_equal(vrt_count(b), 24);
    assert_static(b); /* no bones: weights and indices all zero */
    /* Vertex 0 is the first corner referenced: face +X corner (-u-v) with
     * u = (0,0,-1), v = (0,1,0): 0.5*(1,0,0) - 0.5*u - 0.5*v. */
    static const float v0[8] = {0.5f, -0.5f, 0.5f, 0, 0, 1, 0, 0};
    static const float v1[8] = {0.5f, -0.5f, -0.5f, 1, 0, 1, 0, 0};
    static const float v5[8] = {-0.5f, -0.5f, 0.5f, 1, 0, -1, 0, 0};
    assert_vertex(b, 0, v0);
    assert_vertex(b, 1, v1);
    assert_vertex(b, 5, v5);
    /* Exact bytes of vertex 0's x: 0.5f = 0x3F000000 little-endian. */
    static const uint8_t half[4] = {0, 0, 0, 0x3F};
    assert_memory_equal(b.p + 12, half, 4);
    /* First-reference order equals the fixture's own order here. */
    for (uint32_t v = 0; v < 24; v++)
        for (int k = 0; k < 3; k++)
            assert_true(vfloat(b, v, k) == s->meshes[0].positions[v][k]);
    free(b.p);
    mfs_scene_free(s);
}

/* ---- .tri ---- */

static void cube_tri(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    blob b = write_fmt(mfs_write_tri, s);
    /* 12 triangles: rawSize 144 = 0x90, element 4, 36 = 0x24 indices. */
    static const uint8_t head[12] = {0x90, 0, 0, 0, 4, 0, 0, 0, 0x24, 0, 0, 0};
    assert_int_equal(b.n, 12 + 144);
    assert_memory_equal(b.p, head, 12);
    static const uint8_t t0[12] = {0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0};
    assert_memory_equal(b.p + 12, t0, 12);
    for (uint32_t f = 0; f < 6; f++) {
        uint32_t base = 4 * f;
        assert_int_equal(tindex(b, 2 * f, 0), base);
        assert_int_equal(tindex(b, 2 * f, 1), base + 1);
        assert_int_equal(tindex(b, 2 * f, 2), base + 2);
        assert_int_equal(tindex(b, 2 * f + 1, 0), base);
        assert_int_equal(tindex(b, 2 * f + 1, 1), base + 2);
        assert_int_equal(tindex(b, 2 * f + 1, 2), base + 3);
    }
    free(b.p);
    mfs_scene_free(s);
}

static void cube_tri_reverse_winding(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o;
    mfs_options_default(&o);
    blob plain = write_with(mfs_write_tri, s, &o);
    blob vplain = write_with(mfs_write_vrt, s, &o);
    o.reverse_winding = 1;
    blob rev = write_with(mfs_write_tri, s, &o);
    blob vrev = write_with(mfs_write_vrt, s, &o);
    assert_memory_equal(rev.p, plain.p, 12); /* same header */
    /* (a, b, c) -> (a, c, b): first triangle 0 2 1, second 0 3 2. */
    static const uint8_t t01[24] = {0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
                                    0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0};
    assert_memory_equal(rev.p + 12, t01, 24);
    for (uint32_t t = 0; t < 12; t++) {
        assert_int_equal(tindex(rev, t, 0), tindex(plain, t, 0));
        assert_int_equal(tindex(rev, t, 1), tindex(plain, t, 2));
        assert_int_equal(tindex(rev, t, 2), tindex(plain, t, 1));
    }
    blob_eq(vplain, vrev); /* the option is .tri's alone */
    free(plain.p);
    free(rev.p);
    free(vplain.p);
    free(vrev.p);
    mfs_scene_free(s);
}

/* ---- merging and reduction ---- */

/* Mesh A: quad (0,0)(1,0)(1,1)(0,1); mesh B: triangle (1,0)(2,0)(1,1), all
 * in z = 0 with normal +Z and uv = (x, y).  B's (1,0) and (1,1) equal A's
 * vertices 1 and 2 in all 8 floats. */
static mfs_scene *two_meshes_sharing(void)
{
    mfs_scene *s = scene_root();
    uint32_t na = add_node(s, 0, "a"), nb = add_node(s, 0, "b");
    const float pa[4][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}};
    const float ua[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
    const float nrm[4][3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}};
    const uint32_t ia[6] = {0, 1, 2, 0, 2, 3};
    add_mesh(s, na, "a", MFS_PRIM_TRIANGLES, 4, &pa[0][0], &nrm[0][0], &ua[0][0], 2, ia);
    const float pb[3][3] = {{1, 0, 0}, {2, 0, 0}, {1, 1, 0}};
    const float ub[3][2] = {{1, 0}, {2, 0}, {1, 1}};
    const uint32_t ib[3] = {0, 1, 2};
    add_mesh(s, nb, "b", MFS_PRIM_TRIANGLES, 3, &pb[0][0], &nrm[0][0], &ub[0][0], 1, ib);
    assert_valid(s);
    return s;
}

static void shared_vertices_merge(void **state)
{
    (void)state;
    mfs_scene *s = two_meshes_sharing();
    blob v = write_fmt(mfs_write_vrt, s), t = write_fmt(mfs_write_tri, s);
    assert_int_equal(vrt_count(v), 5); /* 4 + 3 - 2 shared */
    assert_int_equal(tri_count(t), 3);
    /* B's triangle: (1,0) is vertex 1, (2,0) new vertex 4, (1,1) vertex 2. */
    assert_int_equal(tindex(t, 2, 0), 1);
    assert_int_equal(tindex(t, 2, 1), 4);
    assert_int_equal(tindex(t, 2, 2), 2);
    const float v4[8] = {2, 0, 0, 2, 0, 0, 0, 1};
    assert_vertex(v, 4, v4);
    free(v.p);
    free(t.p);
    mfs_scene_free(s);
}

/* Duplicates inside one mesh merge too, -0.0 equals 0.0 (written as +0.0),
 * and a vertex no triangle uses is not written. */
static void duplicates_and_negative_zero(void **state)
{
    (void)state;
    mfs_scene *s = scene_root();
    const float p[5][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {-0.0f, 0, -0.0f}, {9, 9, 9}};
    const float n[5][3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {-0.0f, 0, 1}, {0, 0, 1}};
    const uint32_t idx[6] = {0, 1, 2, 3, 1, 2};
    add_mesh(s, 0, "m", MFS_PRIM_TRIANGLES, 5, &p[0][0], &n[0][0], NULL, 2, idx);
    assert_valid(s);
    blob v = write_fmt(mfs_write_vrt, s), t = write_fmt(mfs_write_tri, s);
    assert_int_equal(vrt_count(v), 3);
    static const uint32_t want[6] = {0, 1, 2, 0, 1, 2};
    for (int i = 0; i < 6; i++)
        assert_int_equal(tindex(t, (uint32_t)i / 3, i % 3), want[i]);
    /* Every byte of vertex 0 but nz is +0.0: no sign bit anywhere. */
    for (int k = 0; k < 7; k++)
        assert_int_equal(mfs_ld_u32(v.p + 12 + (size_t)k * 4), 0);
    free(v.p);
    free(t.p);
    mfs_scene_free(s);
}

/* Brute force reference: first reference order, equality on canonical
 * bits, over the corners as the writer visits them. */
static uint32_t canon(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7fffffffu) == 0)
        return 0;
    if (isnan(f))
        return 0x7fc00000u;
    return b;
}

static void reduction_matches_brute_force(void **state)
{
    (void)state;
    /* 900 vertices drawn from a small grid so many repeat, 600 triangles. */
    enum { NV = 900, NF = 600 };
    float (*p)[3] = xcalloc(NV, sizeof *p), (*n)[3] = xcalloc(NV, sizeof *n),
          (*uv)[2] = xcalloc(NV, sizeof *uv);
    uint32_t *idx = xcalloc(NF * 3, sizeof(uint32_t));
    uint32_t seed = 12345;
    for (int i = 0; i < NV; i++) {
        for (int k = 0; k < 3; k++) {
            seed = seed * 1664525u + 1013904223u;
            p[i][k] = (float)((seed >> 16) % 3) - 1.0f;
        }
        seed = seed * 1664525u + 1013904223u;
        n[i][(seed >> 16) % 3] = 1.0f;
        uv[i][0] = (float)((seed >> 20) % 2);
    }
    for (int i = 0; i < NF * 3; i++) {
        seed = seed * 1664525u + 1013904223u;
        idx[i] = (seed >> 8) % NV;
    }
    mfs_scene *s = scene_root();
    add_mesh(s, 0, "r", MFS_PRIM_TRIANGLES, NV, &p[0][0], &n[0][0], &uv[0][0], NF, idx);
    assert_valid(s);

    uint32_t (*uniq)[8] = xcalloc(NF * 3, sizeof *uniq), nu = 0;
    uint32_t *want = xcalloc(NF * 3, sizeof(uint32_t));
    for (int c = 0; c < NF * 3; c++) {
        uint32_t v = idx[c], key[8];
        const float f[8] = {p[v][0], p[v][1], p[v][2], uv[v][0], uv[v][1],
                            n[v][0], n[v][1], n[v][2]};
        for (int k = 0; k < 8; k++)
            key[k] = canon(f[k]);
        uint32_t j = 0;
        while (j < nu && memcmp(uniq[j], key, sizeof key) != 0)
            j++;
        if (j == nu)
            memcpy(uniq[nu++], key, sizeof key);
        want[c] = j;
    }
    /* The set really repeats: at most 27 positions x 3 normals x 2 u. */
    assert_true(nu <= 162 && nu > 27);

    blob vb = write_fmt(mfs_write_vrt, s), tb = write_fmt(mfs_write_tri, s);
    assert_int_equal(vrt_count(vb), nu);
    assert_int_equal(tri_count(tb), NF);
    for (uint32_t j = 0; j < nu; j++)
        for (int k = 0; k < 8; k++)
            assert_int_equal(mfs_ld_u32(vb.p + 12 + ((size_t)j * VWORDS + (size_t)k) * 4),
                             uniq[j][k]);
    for (int c = 0; c < NF * 3; c++)
        assert_int_equal(tindex(tb, (uint32_t)c / 3, c % 3), want[c]);
    free(vb.p);
    free(tb.p);
    free(uniq);
    free(want);
    free(p);
    free(n);
    free(uv);
    free(idx);
    mfs_scene_free(s);
}

static void point_and_line_meshes_skipped(void **state)
{
    (void)state;
    mfs_scene *ref = two_meshes_sharing();
    mfs_scene *s = two_meshes_sharing();
    const float lp[2][3] = {{5, 5, 5}, {6, 6, 6}};
    const uint32_t li[2] = {0, 1}, pi[1] = {0};
    add_mesh(s, 0, "line", MFS_PRIM_LINES, 2, &lp[0][0], NULL, NULL, 1, li);
    add_mesh(s, 0, "dot", MFS_PRIM_POINTS, 2, &lp[0][0], NULL, NULL, 1, pi);
    assert_valid(s);
    blob a = write_fmt(mfs_write_vrt, s);
    blob b = write_fmt(mfs_write_vrt, ref);
    blob_eq(a, b);
    free(a.p);
    free(b.p);
    a = write_fmt(mfs_write_sph, s);
    b = write_fmt(mfs_write_sph, ref);
    blob_eq(a, b); /* the far-away line points do not widen the sphere */
    free(a.p);
    free(b.p);
    mfs_scene_free(s);
    mfs_scene_free(ref);
}

/* A model of only points and lines still converts: empty buffers and a
 * zero sphere, so the view exists and reads as "nothing to draw". */
static void no_triangles_gives_empty_files(void **state)
{
    (void)state;
    mfs_scene *s = scene_root();
    const float lp[2][3] = {{5, 5, 5}, {6, 6, 6}};
    const uint32_t li[2] = {0, 1};
    add_mesh(s, 0, "line", MFS_PRIM_LINES, 2, &lp[0][0], NULL, NULL, 1, li);
    assert_valid(s);
    const mfs_writer_fn fns[3] = {mfs_write_vrt, mfs_write_tri, mfs_write_sph};
    static const uint8_t empty_hdr[12] = {0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0};
    /* 16 zero bytes, centre 0 0 0, w 1.0 at 28, radius 0, 12 zero bytes */
    static const uint8_t zero_sphere[48] = {[30] = 0x80, [31] = 0x3f};
    for (int i = 0; i < 3; i++) {
        mfs_sink k;
        mfs_err err = {0};
        mfs_options o;
        mfs_options_default(&o);
        mfs_sink_init_mem(&k);
        assert_int_equal(fns[i](s, NULL, &o, &k, &err), 0);
        assert_int_equal(mfs_sink_finish(&k), 0);
        if (i < 2) {
            assert_int_equal(k.len, 12);
            assert_memory_equal(k.buf, empty_hdr, 12);
        } else {
            assert_int_equal(k.len, 48);
            assert_memory_equal(k.buf, zero_sphere, 48);
        }
        mfs_sink_free(&k);
    }
    mfs_scene_free(s);
}

/* ---- model space ---- */

static void node_translation_applied(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    /* root translated (10, 2, -3); the cube node below it identity. */
    s->nodes[0].local.m[3] = 10.0f;
    s->nodes[0].local.m[7] = 2.0f;
    s->nodes[0].local.m[11] = -3.0f;
    blob v = write_fmt(mfs_write_vrt, s);
    assert_int_equal(vrt_count(v), 24);
    /* vertex 0 (0.5,-0.5,0.5) + t; normal untouched, bit for bit. */
    const float v0[8] = {10.5f, 1.5f, -2.5f, 0, 0, 1, 0, 0};
    assert_vertex(v, 0, v0);
    blob sph = write_fmt(mfs_write_sph, s);
    assert_true(mfs_ld_f32(sph.p + 16) == 10.0f);
    assert_true(mfs_ld_f32(sph.p + 20) == 2.0f);
    assert_true(mfs_ld_f32(sph.p + 24) == -3.0f);
    free(v.p);
    free(sph.p);
    mfs_scene_free(s);
}

/* Coordinates whose squared distances overflow float cannot be bounded:
 * .sph refuses with a reason (at once, not after stepping the radius through
 * every float), .vrt still writes them. */
static void huge_coordinates_refused_by_sph(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->meshes[0].positions[0][0] = 6e18f;
    mfs_sink k;
    mfs_err err = {0};
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink_init_mem(&k);
    assert_int_equal(mfs_write_sph(s, NULL, &o, &k, &err), -1);
    assert_non_null(strstr(err.msg, "cannot be bounded in float arithmetic"));
    mfs_sink_free(&k);
    blob v = write_fmt(mfs_write_vrt, s);
    assert_int_equal(vrt_count(v), 24);
    free(v.p);
    s->meshes[0].positions[0][0] = 4e18f; /* inside the limit: a finite sphere */
    blob sph = write_fmt(mfs_write_sph, s);
    assert_true(isfinite(mfs_ld_f32(sph.p + 32)));
    assert_true(mfs_ld_f32(sph.p + 32) >= 2e18f);
    free(sph.p);
    mfs_scene_free(s);
}

/* A mesh placed by two nodes appears twice: once at each placement. */
static void instanced_mesh_written_at_every_node(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    /* root places the cube too, translated (5, 0, 0) */
    s->nodes[0].local.m[3] = 5.0f;
    s->nodes[1].local.m[3] = -10.0f; /* the cube node: world x - 5 */
    s->nodes[0].meshes = realloc(s->nodes[0].meshes, sizeof(uint32_t));
    s->nodes[0].meshes[0] = 0;
    s->nodes[0].n_meshes = 1;
    blob v = write_fmt(mfs_write_vrt, s), t = write_fmt(mfs_write_tri, s);
    assert_int_equal(vrt_count(v), 48);
    assert_int_equal(tri_count(t), 24);
    /* the first copy is the root's (pre-order): vertex 0 at x 5.5 */
    assert_true(vfloat(v, 0, 0) == 5.5f);
    assert_true(vfloat(v, 24, 0) == -4.5f);
    assert_int_equal(tindex(t, 12, 0), 24);
    free(v.p);
    free(t.p);
    mfs_scene_free(s);
}

static void node_rotation_and_scale_on_normals(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    /* cube node: 90 degrees about +Z, then uniform scale 2:
     * (x, y, z) -> (-2y, 2x, 2z). */
    mfs_mat4 *m = &s->nodes[1].local;
    memset(m->m, 0, sizeof m->m);
    m->m[1] = -2.0f;
    m->m[4] = 2.0f;
    m->m[10] = 2.0f;
    m->m[15] = 1.0f;
    blob v = write_fmt(mfs_write_vrt, s);
    assert_int_equal(vrt_count(v), 24);
    /* vertex 0: (0.5,-0.5,0.5) -> (1, 1, 1); normal +X -> +Y, unit length
     * after the scale is renormalised away. */
    const float v0[8] = {1, 1, 1, 0, 0, 0, 1, 0};
    assert_vertex(v, 0, v0);
    for (uint32_t i = 0; i < 24; i++) {
        double l = 0;
        for (int k = 5; k < 8; k++)
            l += (double)vfloat(v, i, k) * vfloat(v, i, k);
        assert_true(fabs(l - 1.0) < 1e-6);
    }
    free(v.p);
    mfs_scene_free(s);
}

/* Every triangle's (b-a) x (c-a) must agree with its vertices' normals:
 * counter-clockwise seen from the front. */
static void assert_ccw_outward(blob v, blob t)
{
    uint32_t nt = tri_count(t);
    for (uint32_t i = 0; i < nt; i++) {
        float p[3][3], n[3];
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++)
                p[c][k] = vfloat(v, tindex(t, i, c), k);
        for (int k = 0; k < 3; k++)
            n[k] = vfloat(v, tindex(t, i, 0), 5 + k);
        double a[3], b[3];
        for (int k = 0; k < 3; k++) {
            a[k] = p[1][k] - p[0][k];
            b[k] = p[2][k] - p[0][k];
        }
        double cr[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                        a[0] * b[1] - a[1] * b[0]};
        double dot = cr[0] * n[0] + cr[1] * n[1] + cr[2] * n[2];
        if (!(dot > 0))
            fail_msg("triangle %u faces away from its normal (dot %g)", i, dot);
    }
}

static void mirror_node_keeps_ccw(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    blob v = write_fmt(mfs_write_vrt, s), t = write_fmt(mfs_write_tri, s);
    assert_ccw_outward(v, t);
    free(v.p);
    free(t.p);

    s->nodes[1].local.m[0] = -1.0f; /* mirror x */
    v = write_fmt(mfs_write_vrt, s);
    t = write_fmt(mfs_write_tri, s);
    assert_ccw_outward(v, t);
    /* Corners b and c swap: the first triangle (0,1,2) is visited as
     * (0,2,1), so the source's vertex 2 is written second. */
    assert_int_equal(tindex(t, 0, 0), 0);
    assert_int_equal(tindex(t, 0, 1), 1);
    assert_int_equal(tindex(t, 0, 2), 2);
    /* vertex 1 is the source's vertex 2 = (0.5,0.5,-0.5) mirrored; its normal
     * (1,0,0) mirrored is (-1,0,0). */
    const float v1[8] = {-0.5f, 0.5f, -0.5f, 1, 1, -1, 0, 0};
    assert_vertex(v, 1, v1);
    free(v.p);
    free(t.p);
    mfs_scene_free(s);
}

static void missing_normals_and_uvs(void **state)
{
    (void)state;
    mfs_scene *s = scene_root();
    /* A flat quad (two coplanar CCW triangles) and, apart, a roof of two
     * triangles meeting at an angle along the edge (5,0,0)-(5,1,0). */
    const float p[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                           {5, 0, 0}, {5, 1, 0}, {4, 0, 1}, {6, 0, 1}};
    const uint32_t idx[12] = {0, 1, 2, 0, 2, 3, 4, 5, 6, 4, 7, 5};
    add_mesh(s, 0, "bare", MFS_PRIM_TRIANGLES, 8, &p[0][0], NULL, NULL, 4, idx);
    assert_valid(s);
    blob v = write_fmt(mfs_write_vrt, s), t = write_fmt(mfs_write_tri, s);
    /* quad: 4 vertices shared (same face normal); roof: 6 (normals differ). */
    assert_int_equal(vrt_count(v), 10);
    const float v0[8] = {0, 0, 0, 0, 0, 0, 0, 1};
    assert_vertex(v, 0, v0);
    /* roof face (4,5,6): (0,1,0) x (-1,0,1) = (1,0,1) -> normalised. */
    float r = (float)(1.0 / sqrt(2.0));
    const float v4[8] = {5, 0, 0, 0, 0, r, 0, r};
    assert_vertex(v, 4, v4);
    assert_ccw_outward(v, t);
    free(v.p);
    free(t.p);
    mfs_scene_free(s);
}

static void non_finite_model_space_is_an_error(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->nodes[1].local.m[0] = 1e38f;
    s->nodes[1].local.m[5] = 1e38f;
    s->nodes[1].local.m[10] = 1e38f;
    s->meshes[0].positions[0][0] = 1e10f;
    mfs_sink k;
    mfs_err err = {0};
    mfs_sink_init_mem(&k);
    assert_int_equal(mfs_write_vrt(s, NULL, NULL, &k, &err), -1);
    assert_string_equal(err.msg, "vrt: mesh 'cube': vertex 0 is not finite in model space");
    mfs_sink_free(&k);
    mfs_scene_free(s);
}

/* ---- .sph ---- */

static void cube_sph(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    blob b = write_fmt(mfs_write_sph, s);
    assert_int_equal(b.n, 48);
    /* Ritter from vertex 0 (0.5,-0.5,0.5): farthest is (-0.5,0.5,-0.5),
     * whose farthest is vertex 0 again: centre exactly 0, every corner on
     * the sphere; radius = sqrt(0.75) rounded up to float, 0x3F5DB3D8. */
    static const uint8_t want[48] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* Align16 base */
        0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,        /* centre at 16 */
        0, 0, 0x80, 0x3F,                             /* w = 1.0f at 28 */
        0xD8, 0xB3, 0x5D, 0x3F,                       /* radius at 32 */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};          /* padding */
    assert_memory_equal(b.p, want, 48);
    float c[3] = {0, 0, 0}, r = mfs_ld_f32(b.p + 32);
    assert_true((double)r >= sqrt(0.75));
    for (int v = 0; v < 24; v++) {
        const float *q = s->meshes[0].positions[v];
        float d2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
        assert_true(d2 <= r * r);
        assert_true(mfs_runtime_sphere_contains(c, r, q));
    }
    free(b.p);
    mfs_scene_free(s);
}

/* Independent of the writer's predicate: float and long double distance. */
static void assert_all_inside(const float *p, uint32_t n, const float c[3], float r)
{
    for (uint32_t i = 0; i < n; i++) {
        const float *q = p + (size_t)i * 3;
        float dx = q[0] - c[0], dy = q[1] - c[1], dz = q[2] - c[2];
        float d2 = dx * dx + dy * dy + dz * dz;
        long double ex = (long double)q[0] - c[0], ey = (long double)q[1] - c[1],
                    ez = (long double)q[2] - c[2];
        if (!(d2 <= r * r) || !(sqrtf(d2) <= r) ||
            !(ex * ex + ey * ey + ez * ez <= (long double)r * r))
            fail_msg("point %u (%.9g %.9g %.9g) outside centre (%.9g %.9g %.9g) r %.9g", i,
                     q[0], q[1], q[2], c[0], c[1], c[2], r);
        assert_true(mfs_runtime_sphere_contains(c, r, q));
    }
}

static uint32_t rng(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static double unit(uint32_t *s) /* [0, 1) */
{
    return (rng(s) >> 8) * (1.0 / 16777216.0);
}

static void check_set(const float *p, uint32_t n, double max_radius)
{
    float c[3], r;
    mfs_runtime_sphere(p, 3, n, c, &r);
    assert_all_inside(p, n, c, r);
    if (!(r <= max_radius))
        fail_msg("radius %.9g above %.9g", r, max_radius);
}

static void sphere_adversarial(void **state)
{
    (void)state;
    enum { N = 20000 };
    float *p = xcalloc(N, 3 * sizeof(float));
    uint32_t seed = 2463534242u;

    /* random cloud in [-1,1]^3: optimal radius <= sqrt(3) */
    for (int i = 0; i < N * 3; i++)
        p[i] = (float)(unit(&seed) * 2 - 1);
    check_set(p, N, 1.2 * sqrt(3.0));

    /* points on the unit sphere: every one at the surface */
    for (int i = 0; i < N; i++) {
        double v[3], l;
        do {
            for (int k = 0; k < 3; k++)
                v[k] = unit(&seed) * 2 - 1;
            l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        } while (l < 0.1 || l > 1);
        for (int k = 0; k < 3; k++)
            p[i * 3 + k] = (float)(v[k] / l);
    }
    check_set(p, N, 1.2);

    /* the same sphere moved to (1e6, -1e6, 1e6): the float centre cannot
     * sit where Ritter puts it, ulp 0.0625 there */
    for (int i = 0; i < N * 3; i++)
        p[i] = (float)((double)p[i] + (i % 3 == 1 ? -1e6 : 1e6));
    check_set(p, N, 1.5);

    /* huge spread: cloud in [-1e6, 1e6]^3 */
    for (int i = 0; i < N * 3; i++)
        p[i] = (float)((unit(&seed) * 2 - 1) * 1e6);
    check_set(p, N, 1.2 * sqrt(3.0) * 1e6);

    /* a tight grid at 1e6 spaced one ulp (0.0625) apart: optimal radius
     * 0.1875 * sqrt(3) / 2 = 0.162, but the float centre can only sit on
     * the grid, up to half an ulp per axis off (+0.054) */
    for (int i = 0; i < 64; i++) {
        p[i * 3 + 0] = 1e6f + 0.0625f * (float)(i % 4);
        p[i * 3 + 1] = 1e6f + 0.0625f * (float)((i / 4) % 4);
        p[i * 3 + 2] = -1e6f - 0.0625f * (float)(i / 16);
    }
    check_set(p, 64, 0.22);

    /* collinear, and two points */
    for (int i = 0; i < 100; i++) {
        p[i * 3 + 0] = (float)i * 0.1f;
        p[i * 3 + 1] = (float)i * 0.3f;
        p[i * 3 + 2] = -(float)i * 0.7f;
    }
    check_set(p, 100, 0.5 * 99 * sqrt(0.01 + 0.09 + 0.49) * 1.0001);
    check_set(p + 3, 2, 0.5 * sqrt(0.01 + 0.09 + 0.49) * 1.0001);

    /* many small sets at every scale: with two to seven points the farthest
     * ones sit right on the sphere, where float rounding of |q - c| decides
     * (about one set in twenty needs the radius bumped by an ulp) */
    for (int trial = 0; trial < 4000; trial++) {
        uint32_t n = 2 + rng(&seed) % 6;
        double scale = pow(10.0, (double)(rng(&seed) % 13) - 4.0);
        for (uint32_t i = 0; i < n * 3; i++)
            p[i] = (float)((unit(&seed) * 2 - 1 + (rng(&seed) % 2 ? 3.3 : 0)) * scale);
        check_set(p, n, 6.0 * scale); /* spread <= 5.3 per axis */
    }

    /* tiny coordinates near the float minimum */
    for (int i = 0; i < 100; i++)
        for (int k = 0; k < 3; k++)
            p[i * 3 + k] = (float)(unit(&seed) * 1e-36);
    check_set(p, 100, 1e-36);

    free(p);
}

static void sphere_degenerate(void **state)
{
    (void)state;
    /* one point: centre there, radius 0 */
    const float one[3] = {3, 4, 5};
    float c[3], r;
    mfs_runtime_sphere(one, 3, 1, c, &r);
    assert_true(c[0] == 3 && c[1] == 4 && c[2] == 5 && r == 0.0f);
    /* the same point many times */
    float same[30];
    for (int i = 0; i < 30; i++)
        same[i] = one[i % 3];
    mfs_runtime_sphere(same, 3, 10, c, &r);
    assert_true(c[0] == 3 && c[1] == 4 && c[2] == 5 && r == 0.0f);
    /* nothing: zero sphere */
    mfs_runtime_sphere(one, 3, 0, c, &r);
    assert_true(c[0] == 0 && c[1] == 0 && c[2] == 0 && r == 0.0f);
}

/* Through the writers: a reader with only the .vrt and .sph bytes finds
 * every vertex inside. */
static void sph_contains_vrt(void **state)
{
    (void)state;
    enum { NV = 3000 };
    float (*p)[3] = xcalloc(NV, sizeof *p);
    uint32_t *idx = xcalloc(NV, sizeof(uint32_t));
    uint32_t seed = 99;
    for (int i = 0; i < NV; i++) {
        for (int k = 0; k < 3; k++)
            p[i][k] = (float)((unit(&seed) - 0.5) * 1000.0);
        idx[i] = (uint32_t)i;
    }
    mfs_scene *s = scene_root();
    uint32_t nd = add_node(s, 0, "placed");
    mfs_mat4 *m = &s->nodes[nd].local;
    m->m[0] = 0.8f; m->m[1] = -0.6f; m->m[4] = 0.6f; m->m[5] = 0.8f; /* rotation about Z */
    m->m[3] = 123456.0f; m->m[7] = -7.25f; m->m[11] = 3e5f;
    add_mesh(s, nd, "cloud", MFS_PRIM_TRIANGLES, NV, &p[0][0], NULL, NULL, NV / 3, idx);
    assert_valid(s);
    blob v = write_fmt(mfs_write_vrt, s), sph = write_fmt(mfs_write_sph, s);
    uint32_t nv = vrt_count(v);
    assert_int_equal(nv, NV); /* distinct points, one face normal each */
    assert_true(mfs_ld_f32(sph.p + 28) == 1.0f);
    float c[3] = {mfs_ld_f32(sph.p + 16), mfs_ld_f32(sph.p + 20), mfs_ld_f32(sph.p + 24)};
    float r = mfs_ld_f32(sph.p + 32);
    float *pos = xcalloc(nv, 3 * sizeof(float));
    for (uint32_t i = 0; i < nv; i++)
        for (int k = 0; k < 3; k++)
            pos[i * 3 + k] = vfloat(v, i, k);
    assert_all_inside(pos, nv, c, r);
    assert_true(r < 1.2 * 500 * sqrt(3.0));
    free(pos);
    free(v.p);
    free(sph.p);
    free(p);
    free(idx);
    mfs_scene_free(s);
}

/* ---- skinning (the 64-byte vertex) ---- */

static void add_bone(mfs_mesh *m, const char *name, int32_t node, uint32_t n,
                     const mfs_weight *w)
{
    m->bones = realloc(m->bones, sizeof(mfs_bone) * (m->n_bones + 1));
    mfs_bone *b = &m->bones[m->n_bones++];
    memset(b, 0, sizeof *b);
    b->name = mfs_strdup(name);
    b->node = node;
    mfs_mat4_identity(&b->offset);
    b->n_weights = n;
    b->weights = xcalloc(n, sizeof *w);
    memcpy(b->weights, w, sizeof *w * n);
}

/* Nodes, in the pre-order add_node builds:
 *   0 root
 *   1 body         places mesh "skin", translated (0, 0, 5)
 *   2 armature     (no bone links to it: above the skeleton)
 *   3   hip        bone
 *   4     spine    no bone links to it, but it lies between chest and hip
 *   5       chest  bone
 *   6         neck bone
 *   7     leg      bone
 *   8       toe    bone
 *   9 lamp         places a static mesh
 * Documented bone order (docs/formats/vrt.md): the linked nodes plus the
 * nodes between them and their lowest common ancestor (hip), by node
 * index: hip 0, spine 1, chest 2, neck 3, leg 4, toe 5.
 *
 * Mesh "skin", 6 vertices in z = 0, normal +Z, uv = (x, y):
 *   v0 (0,0) chest 0.7                                   (1 influence)
 *   v1 (1,0) hip 0.25, toe 0.75                          (2)
 *   v2 (1,1) hip 0.1, chest 0.3, neck 0.2, leg 0.25, toe 0.15   (5)
 *   v3 (0,1) none
 *   v4 (1,0) hip 1.0: v1's position, uv and normal, other weights
 *   v5 (2,2) leg 0.5, hip 0.5 (a tie)
 * triangles (0,1,2) (0,2,3) (0,4,5).  The bones are listed in the mesh out
 * of node order (toe, chest, hip, neck, leg), so only the node tree can
 * give the order above. */
enum { HIP, SPINE, CHEST, NECK, LEG, TOE };

static mfs_scene *skinned_scene(int with_normals)
{
    mfs_scene *s = scene_root();
    uint32_t body = add_node(s, 0, "body");
    uint32_t arm = add_node(s, 0, "armature");
    uint32_t hip = add_node(s, arm, "hip");
    uint32_t spine = add_node(s, hip, "spine");
    uint32_t chest = add_node(s, spine, "chest");
    uint32_t neck = add_node(s, chest, "neck");
    uint32_t leg = add_node(s, hip, "leg");
    uint32_t toe = add_node(s, leg, "toe");
    uint32_t lamp = add_node(s, 0, "lamp");
    assert_int_equal(lamp, 9);
    s->nodes[body].local.m[11] = 5.0f;
    /* bone nodes moved away from their bind pose: the vertices must not
     * follow (the mesh is written as stored, at bind pose) */
    s->nodes[hip].local.m[7] = 10.0f;
    s->nodes[leg].local.m[3] = -4.0f;

    const float p[6][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {1, 0, 0}, {2, 2, 0}};
    const float n[6][3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}};
    const float uv[6][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}, {1, 0}, {2, 2}};
    const uint32_t idx[9] = {0, 1, 2, 0, 2, 3, 0, 4, 5};
    mfs_mesh *m = add_mesh(s, body, "skin", MFS_PRIM_TRIANGLES, 6, &p[0][0],
                           with_normals ? &n[0][0] : NULL, &uv[0][0], 3, idx);
    const mfs_weight wtoe[2] = {{1, 0.75f}, {2, 0.15f}};
    const mfs_weight wchest[2] = {{0, 0.7f}, {2, 0.3f}};
    const mfs_weight whip[4] = {{1, 0.25f}, {2, 0.1f}, {4, 1.0f}, {5, 0.5f}};
    const mfs_weight wneck[1] = {{2, 0.2f}};
    const mfs_weight wleg[2] = {{2, 0.25f}, {5, 0.5f}};
    add_bone(m, "toe", (int32_t)toe, 2, wtoe);
    add_bone(m, "chest", (int32_t)chest, 2, wchest);
    add_bone(m, "hip", (int32_t)hip, 4, whip);
    add_bone(m, "neck", (int32_t)neck, 1, wneck);
    add_bone(m, "leg", (int32_t)leg, 2, wleg);

    const float lp[3][3] = {{5, 0, 0}, {6, 0, 0}, {5, 1, 0}};
    const uint32_t li[3] = {0, 1, 2};
    add_mesh(s, lamp, "lampshade", MFS_PRIM_TRIANGLES, 3, &lp[0][0], &n[0][0], NULL, 1, li);
    assert_valid(s);
    return s;
}

/* The expected skin of one vertex, from its source influences (bone list
 * index, weight): the four largest (ties: lower index first), each divided
 * by their sum, computed here in double. */
typedef struct want_skin {
    uint32_t n;
    uint32_t bone[5];
    double w[5];
} want_skin;

static void assert_skin(blob v, uint32_t vertex, want_skin in)
{
    /* selection sort, strongest first */
    for (uint32_t i = 0; i < in.n; i++)
        for (uint32_t j = i + 1; j < in.n; j++)
            if (in.w[j] > in.w[i] || (in.w[j] == in.w[i] && in.bone[j] < in.bone[i])) {
                double tw = in.w[i];
                uint32_t tb = in.bone[i];
                in.w[i] = in.w[j];
                in.bone[i] = in.bone[j];
                in.w[j] = tw;
                in.bone[j] = tb;
            }
    uint32_t kept = in.n < 4 ? in.n : 4;
    double sum = 0, got = 0;
    for (uint32_t i = 0; i < kept; i++)
        sum += in.w[i];
    for (uint32_t k = 0; k < 4; k++) {
        double want = k < kept ? in.w[k] / sum : 0.0;
        uint32_t wb = k < kept ? in.bone[k] : 0;
        if (fabs(vweight(v, vertex, k) - want) > 1e-6)
            fail_msg("vertex %u weight %u: got %.9g want %.9g", vertex, k, vweight(v, vertex, k),
                     want);
        if (vbone(v, vertex, k) != wb)
            fail_msg("vertex %u bone %u: got %u want %u", vertex, k, vbone(v, vertex, k), wb);
        got += vweight(v, vertex, k);
    }
    if (kept)
        assert_true(fabs(got - 1.0) <= 1e-6);
    else
        assert_true(got == 0.0);
}

static void check_skinned(blob v, blob t)
{
    /* 6 skin vertices (v4 stays apart from v1: it differs in weights only)
     * then the lamp's 3 */
    assert_int_equal(vrt_count(v), 9);
    assert_int_equal(mfs_ld_i32(v.p), 9 * 64);
    assert_int_equal(mfs_ld_i32(v.p + 8), 9 * 16);
    assert_int_equal(tri_count(t), 4);
    static const uint32_t want_tri[12] = {0, 1, 2, 0, 2, 3, 0, 4, 5, 6, 7, 8};
    for (int i = 0; i < 12; i++)
        assert_int_equal(tindex(t, (uint32_t)i / 3, i % 3), want_tri[i]);
    /* positions: placed by body (z + 5) whatever the bone nodes' rest pose */
    static const float pos[6][3] = {{0, 0, 5}, {1, 0, 5}, {1, 1, 5}, {0, 1, 5}, {1, 0, 5},
                                    {2, 2, 5}};
    for (uint32_t i = 0; i < 6; i++)
        for (int k = 0; k < 3; k++)
            assert_true(vfloat(v, i, k) == pos[i][k]);
    assert_skin(v, 0, (want_skin){1, {CHEST}, {0.7f}});
    assert_skin(v, 1, (want_skin){2, {HIP, TOE}, {0.25f, 0.75f}});
    assert_skin(v, 2, (want_skin){5, {HIP, CHEST, NECK, LEG, TOE}, {0.1f, 0.3f, 0.2f, 0.25f, 0.15f}});
    assert_skin(v, 3, (want_skin){0, {0}, {0}});
    assert_skin(v, 4, (want_skin){1, {HIP}, {1.0f}});
    assert_skin(v, 5, (want_skin){2, {LEG, HIP}, {0.5f, 0.5f}});
    /* spelled out for two of them: v0 is chest alone (weight exactly 1),
     * v5's tie puts hip (0) before leg (4) */
    assert_true(vweight(v, 0, 0) == 1.0f && vbone(v, 0, 0) == CHEST);
    assert_true(vbone(v, 5, 0) == HIP && vbone(v, 5, 1) == LEG);
    assert_true(vweight(v, 5, 0) == 0.5f && vweight(v, 5, 1) == 0.5f);
    /* v2: chest 0.3 leg 0.25 neck 0.2 toe 0.15, over 0.9 (hip 0.1 dropped) */
    assert_int_equal(vbone(v, 2, 0), CHEST);
    assert_int_equal(vbone(v, 2, 1), LEG);
    assert_int_equal(vbone(v, 2, 2), NECK);
    assert_int_equal(vbone(v, 2, 3), TOE);
    assert_true(fabs(vweight(v, 2, 0) - 1.0 / 3.0) < 1e-6);
    /* the static lamp: all-zero weights and indices */
    for (uint32_t i = 6; i < 9; i++)
        for (int k = 0; k < 4; k++)
            assert_true(vweight(v, i, k) == 0.0f && vbone(v, i, k) == 0);
}

static void skinned_vertices(void **state)
{
    (void)state;
    for (int with_normals = 1; with_normals >= 0; with_normals--) {
        mfs_scene *s = skinned_scene(with_normals);
        blob v = write_fmt(mfs_write_vrt, s), t = write_fmt(mfs_write_tri, s);
        check_skinned(v, t);
        /* the bone index words are plain uint32: chest (2) in v0's b0 */
        static const uint8_t b0[4] = {2, 0, 0, 0};
        assert_memory_equal(v.p + 12 + 48, b0, 4);
        free(v.p);
        free(t.p);
        mfs_scene_free(s);
    }
}

/* vrt_layout=plain: 32-byte records, reduced on those 32 bytes (v4 merges
 * into v1), .tri indexing them; the sphere is the same for both layouts. */
static void plain_layout(void **state)
{
    (void)state;
    mfs_scene *s = skinned_scene(1);
    mfs_options o;
    mfs_options_default(&o);
    blob vs = write_with(mfs_write_vrt, s, &o), ts = write_with(mfs_write_tri, s, &o),
         ss = write_with(mfs_write_sph, s, &o);
    o.vrt_plain = 1;
    blob vp = write_with(mfs_write_vrt, s, &o), tp = write_with(mfs_write_tri, s, &o),
         sp = write_with(mfs_write_sph, s, &o);
    assert_int_equal(vrt_count_words(vp, PWORDS), 8);
    assert_int_equal(mfs_ld_i32(vp.p), 8 * 32);
    assert_int_equal(mfs_ld_i32(vp.p + 8), 8 * 8);
    /* plain vertex j is skinned vertex (0 1 2 3 5 6 7 8)[j], first 32 bytes */
    static const uint32_t from[8] = {0, 1, 2, 3, 5, 6, 7, 8};
    for (uint32_t j = 0; j < 8; j++)
        assert_memory_equal(vp.p + 12 + (size_t)j * 32, vs.p + 12 + (size_t)from[j] * 64, 32);
    assert_true(pfloat(vp, 4, 0) == 2.0f && pfloat(vp, 4, 1) == 2.0f);
    static const uint32_t want_tri[12] = {0, 1, 2, 0, 2, 3, 0, 1, 4, 5, 6, 7};
    assert_int_equal(tri_count(tp), 4);
    for (int i = 0; i < 12; i++)
        assert_int_equal(tindex(tp, (uint32_t)i / 3, i % 3), want_tri[i]);
    blob_eq(ss, sp);

    /* a static model: the plain file is the skinned one without the skin */
    mfs_scene *cube = fixture_cube();
    blob cp = write_with(mfs_write_vrt, cube, &o);
    o.vrt_plain = 0;
    blob cs = write_with(mfs_write_vrt, cube, &o);
    assert_int_equal(cp.n, 12 + 24 * 32);
    for (uint32_t j = 0; j < 24; j++)
        assert_memory_equal(cp.p + 12 + (size_t)j * 32, cs.p + 12 + (size_t)j * 64, 32);
    free(cp.p);
    free(cs.p);
    mfs_scene_free(cube);
    free(vs.p); free(ts.p); free(ss.p);
    free(vp.p); free(tp.p); free(sp.p);
    mfs_scene_free(s);
}

/* A bone linked to no node moves nothing: its influence is dropped, and a
 * vertex left without any is static.  A bone named twice in one mesh
 * counts once, with the summed weight. */
static void unlinked_and_repeated_bones(void **state)
{
    (void)state;
    mfs_scene *s = scene_root();
    uint32_t a = add_node(s, 0, "a"), b = add_node(s, 0, "b");
    const float p[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    const float n[3][3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}};
    const uint32_t idx[3] = {0, 1, 2};
    mfs_mesh *m = add_mesh(s, 0, "m", MFS_PRIM_TRIANGLES, 3, &p[0][0], &n[0][0], NULL, 1, idx);
    const mfs_weight wa[2] = {{0, 0.2f}, {1, 0.5f}}, wa2[1] = {{0, 0.2f}};
    const mfs_weight wb[1] = {{0, 0.6f}}, wghost[2] = {{1, 0.5f}, {2, 1.0f}};
    add_bone(m, "a", (int32_t)a, 2, wa);
    add_bone(m, "ghost", -1, 2, wghost);
    add_bone(m, "b", (int32_t)b, 1, wb);
    add_bone(m, "a", (int32_t)a, 1, wa2);
    assert_valid(s);
    blob v = write_fmt(mfs_write_vrt, s);
    assert_int_equal(vrt_count(v), 3);
    /* v0: b 0.6 vs a 0.2 + 0.2 = 0.4: (b, a) = (0.6, 0.4); list a 0, b 1 */
    assert_skin(v, 0, (want_skin){2, {1, 0}, {0.6, 0.4}});
    assert_skin(v, 1, (want_skin){1, {0}, {0.5}});   /* ghost's 0.5 dropped */
    assert_skin(v, 2, (want_skin){0, {0}, {0}});      /* only the ghost: static */
    free(v.p);
    mfs_scene_free(s);
}

/* The engine's skinning shader holds 100 joints: a vertex using bone index
 * 100 cannot be drawn skinned, and .vrt says so; the plain layout (no
 * skinning) and .tri still convert.  Bones up to index 99 are fine however
 * long the list. */
static void too_many_joints(void **state)
{
    (void)state;
    mfs_scene *s = scene_root();
    const float p[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    const uint32_t idx[3] = {0, 1, 2};
    mfs_mesh *m = add_mesh(s, 0, "m", MFS_PRIM_TRIANGLES, 3, &p[0][0], NULL, NULL, 1, idx);
    for (int i = 0; i < 101; i++) {
        char name[16];
        snprintf(name, sizeof name, "j%d", i);
        uint32_t nd = add_node(s, 0, name);
        const mfs_weight w[1] = {{0, 1.0f}};
        add_bone(m, name, (int32_t)nd, i == 99 ? 1 : 0, w);
    }
    assert_valid(s);
    blob v = write_fmt(mfs_write_vrt, s);
    assert_int_equal(vbone(v, 0, 0), 99);
    free(v.p);

    m->bones[100].n_weights = 1;
    free(m->bones[100].weights);
    m->bones[100].weights = xcalloc(1, sizeof(mfs_weight));
    m->bones[100].weights[0] = (mfs_weight){1, 1.0f};
    mfs_sink k;
    mfs_err err = {0};
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink_init_mem(&k);
    assert_int_equal(mfs_write_vrt(s, NULL, &o, &k, &err), -1);
    assert_string_equal(err.msg, "vrt: vertices use bone index 100, but the engine's skinning "
                                 "shader holds 100 joints (skinnedTextureLight.vs.glsl); "
                                 "vrt_layout=plain writes the model without skinning");
    mfs_sink_free(&k);
    o.vrt_plain = 1;
    blob vp = write_with(mfs_write_vrt, s, &o);
    assert_int_equal(vrt_count_words(vp, PWORDS), 3);
    free(vp.p);
    mfs_scene_free(s);
}

/* The sphere of a unit cube moved to (1, 2, 3), worked out here: centre
 * (1, 2, 3), radius the half diagonal sqrt(3)/2 (at most a few float ulps
 * more), laid out as the engine's 48-byte BoundingSphere. */
static void sph_bytes_unit_cube_at_123(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->nodes[1].local.m[3] = 1.0f;
    s->nodes[1].local.m[7] = 2.0f;
    s->nodes[1].local.m[11] = 3.0f;
    blob b = write_fmt(mfs_write_sph, s);
    assert_int_equal(b.n, 48);
    for (int i = 0; i < 16; i++)
        assert_int_equal(b.p[i], 0);
    for (int i = 36; i < 48; i++)
        assert_int_equal(b.p[i], 0);
    assert_true(mfs_ld_f32(b.p + 16) == 1.0f);
    assert_true(mfs_ld_f32(b.p + 20) == 2.0f);
    assert_true(mfs_ld_f32(b.p + 24) == 3.0f);
    assert_true(mfs_ld_f32(b.p + 28) == 1.0f);
    double want = sqrt(3.0) / 2.0;
    float r = mfs_ld_f32(b.p + 32);
    assert_true((double)r >= want);
    assert_true((double)r <= want * (1.0 + 4 * 0x1p-23));
    free(b.p);
    mfs_scene_free(s);
}

/* ---- determinism and the job's one build ---- */

/* Every writer output of one scene: vrt, tri, sph in the skinned layout,
 * then in the plain one with reversed winding.  With prep NULL each call
 * builds its own mesh. */
enum { NOUT = 6 };

static void write_all_runtime(const mfs_scene *s, mfs_prepared *prep, blob out[NOUT])
{
    const mfs_writer_fn fns[3] = {mfs_write_vrt, mfs_write_tri, mfs_write_sph};
    mfs_options o;
    mfs_options_default(&o);
    for (int i = 0; i < NOUT; i++) {
        o.vrt_plain = o.reverse_winding = i >= 3;
        out[i] = write_prep(fns[i % 3], s, prep, &o);
    }
}

/* A job's writers share one build: .vrt, .tri and .sph in both layouts
 * build the mesh once, and give the bytes each writer gives alone. */
static void prepared_builds_once(void **state)
{
    (void)state;
    mfs_scene *s = skinned_scene(1); /* skinned: the two layouts differ */
    blob alone[NOUT], shared[NOUT];
    uint64_t b0 = mfs_runtime_builds();
    write_all_runtime(s, NULL, alone);
    assert_int_equal(mfs_runtime_builds() - b0, NOUT); /* alone, each built */

    mfs_prepared *prep = mfs_prepared_new(s);
    assert_non_null(prep);
    assert_int_equal(mfs_runtime_builds() - b0, NOUT); /* made, nothing built yet */
    write_all_runtime(s, prep, shared);
    assert_int_equal(mfs_runtime_builds() - b0, NOUT + 1);
    /* both layouts came out of the one build: 9 skinned vertices, 8 plain
     * ones (v4 merges into v1, as in plain_layout) */
    assert_int_equal(vrt_count(shared[0]), 9);
    assert_int_equal(vrt_count_words(shared[3], PWORDS), 8);
    for (int i = 0; i < NOUT; i++) {
        blob_eq(alone[i], shared[i]);
        free(alone[i].p);
        free(shared[i].p);
    }
    mfs_prepared_free(prep);
    mfs_prepared_free(NULL);
    mfs_scene_free(s);
}

/* A build that fails fails once for the job: each writer reports the
 * reason under its own name, none builds again. */
static void prepared_failure_shared(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->meshes[0].positions[0][0] = INFINITY; /* past validation: a test of the build */
    mfs_prepared *prep = mfs_prepared_new(s);
    const mfs_writer_fn fns[3] = {mfs_write_vrt, mfs_write_tri, mfs_write_sph};
    const char *const names[3] = {"vrt", "tri", "sph"};
    uint64_t b0 = mfs_runtime_builds();
    for (int i = 0; i < 3; i++) {
        mfs_sink k;
        mfs_err err = {0};
        char want[128];
        mfs_sink_init_mem(&k);
        assert_int_equal(fns[i](s, prep, NULL, &k, &err), -1);
        snprintf(want, sizeof want, "%s: mesh 'cube': vertex 0 is not finite in model space",
                 names[i]);
        assert_string_equal(err.msg, want);
        mfs_sink_free(&k);
    }
    assert_int_equal(mfs_runtime_builds() - b0, 1);
    mfs_prepared_free(prep);
    mfs_scene_free(s);
}

/* Prepared data serves only the scene it was made for: another scene's
 * writer builds its own rather than take the wrong mesh. */
static void prepared_for_another_scene(void **state)
{
    (void)state;
    mfs_scene *cube = fixture_cube(), *two = two_meshes_sharing();
    mfs_prepared *prep = mfs_prepared_new(cube);
    blob want = write_fmt(mfs_write_vrt, two);
    mfs_options o;
    mfs_options_default(&o);
    uint64_t b0 = mfs_runtime_builds();
    blob got = write_prep(mfs_write_vrt, two, prep, &o);
    blob_eq(got, want);
    blob c1 = write_prep(mfs_write_vrt, cube, prep, &o), c2 = write_prep(mfs_write_tri, cube, prep, &o);
    assert_int_equal(vrt_count(c1), 24);
    assert_int_equal(tri_count(c2), 12);
    /* one build for the other scene, one for the prep's own */
    assert_int_equal(mfs_runtime_builds() - b0, 2);
    free(want.p);
    free(got.p);
    free(c1.p);
    free(c2.p);
    mfs_prepared_free(prep);
    mfs_scene_free(two);
    mfs_scene_free(cube);
}

/* Same content, same bytes: a separately built identical scene, written
 * again, gives what the first gave. */
static void deterministic(void **state)
{
    (void)state;
    mfs_scene *s = two_meshes_sharing(), *twin = two_meshes_sharing();
    blob a[NOUT], b[NOUT];
    write_all_runtime(s, NULL, a);
    write_all_runtime(twin, NULL, b);
    for (int i = 0; i < NOUT; i++) {
        blob_eq(a[i], b[i]);
        free(a[i].p);
        free(b[i].p);
    }
    mfs_scene_free(twin);
    mfs_scene_free(s);
}
/* Each write reads the scene as it is now: nothing kept from an earlier
 * write of the same scene (at the same address) is served again. */
static void no_stale_results(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    blob a = write_fmt(mfs_write_vrt, s);
    s->meshes[0].positions[0][0] = 0.25f;
    blob b = write_fmt(mfs_write_vrt, s);
    assert_true(vfloat(a, 0, 0) == 0.5f);
    assert_true(vfloat(b, 0, 0) == 0.25f);
    s->nodes[1].local.m[7] = 1.0f; /* a node transform counts too */
    blob c = write_fmt(mfs_write_vrt, s);
    assert_true(vfloat(c, 0, 1) == 0.5f);
    free(a.p);
    free(b.p);
    free(c.p);
    mfs_scene_free(s);

    /* and so do weights and the bone list */
    s = skinned_scene(1);
    a = write_fmt(mfs_write_vrt, s);
    s->meshes[0].bones[1].weights[0].weight = 0.0f; /* v0 loses chest */
    b = write_fmt(mfs_write_vrt, s);
    assert_true(vweight(a, 0, 0) == 1.0f && vbone(a, 0, 0) == CHEST);
    assert_true(vweight(b, 0, 0) == 0.0f && vbone(b, 0, 0) == 0);
    /* spine linked too: same list (it was a chain node already), same bytes */
    const mfs_weight none[1] = {{0, 0.0f}};
    add_bone(&s->meshes[0], "spine", 4, 1, none);
    c = write_fmt(mfs_write_vrt, s);
    blob_eq(b, c);
    /* armature linked: it joins the list first, every index moves up one */
    add_bone(&s->meshes[0], "armature", 2, 1, none);
    blob d = write_fmt(mfs_write_vrt, s);
    assert_int_equal(vbone(d, 1, 0), TOE + 1);
    assert_int_equal(vbone(c, 1, 0), TOE);
    free(a.p);
    free(b.p);
    free(c.p);
    free(d.p);
    mfs_scene_free(s);
}

typedef struct job {
    const mfs_scene *s;
    mfs_prepared *prep;
    mfs_writer_fn fn;
    blob out;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    mfs_sink k;
    mfs_err err = {0};
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink_init_mem(&k);
    if (j->fn(j->s, j->prep, &o, &k, &err) != 0 || mfs_sink_finish(&k) != 0) {
        mfs_sink_free(&k);
        j->out.p = NULL;
        return NULL;
    }
    j->out.p = mfs_sink_take(&k, &j->out.n);
    return NULL;
}

/* A grid big enough that writers overlap. */
static mfs_scene *grid(uint32_t side)
{
    uint32_t nv = (side + 1) * (side + 1), nf = side * side * 2;
    float (*p)[3] = xcalloc(nv, sizeof *p), (*n)[3] = xcalloc(nv, sizeof *n),
          (*uv)[2] = xcalloc(nv, sizeof *uv);
    uint32_t *idx = xcalloc((size_t)nf * 3, sizeof(uint32_t));
    for (uint32_t y = 0, i = 0; y <= side; y++)
        for (uint32_t x = 0; x <= side; x++, i++) {
            p[i][0] = (float)x;
            p[i][1] = (float)y;
            n[i][2] = 1.0f;
            uv[i][0] = (float)x / (float)side;
            uv[i][1] = (float)y / (float)side;
        }
    for (uint32_t y = 0, t = 0; y < side; y++)
        for (uint32_t x = 0; x < side; x++) {
            uint32_t a = y * (side + 1) + x, b = a + 1, c = a + side + 2, d = a + side + 1;
            uint32_t q[6] = {a, b, c, a, c, d};
            memcpy(idx + t, q, sizeof q);
            t += 6;
        }
    mfs_scene *s = scene_root();
    add_mesh(s, 0, "grid", MFS_PRIM_TRIANGLES, nv, &p[0][0], &n[0][0], &uv[0][0], nf, idx);
    free(p);
    free(n);
    free(uv);
    free(idx);
    return s;
}

/* Writers on several threads at once, as a job runs them, each with its
 * own build or all sharing one: the same bytes every time, and with shared
 * prepared data one build however the threads interleave. */
static void threads_agree(void **state)
{
    (void)state;
    mfs_scene *s = grid(150);
    assert_valid(s);
    const mfs_writer_fn fns[3] = {mfs_write_vrt, mfs_write_tri, mfs_write_sph};
    blob ref[3];
    for (int i = 0; i < 3; i++)
        ref[i] = write_fmt(fns[i], s);
    assert_int_equal(vrt_count(ref[0]), 151 * 151);
    assert_int_equal(tri_count(ref[1]), 150 * 150 * 2);
    for (int round = 0; round < 4; round++) {
        enum { NJ = 9 };
        job jobs[NJ];
        pthread_t th[NJ];
        mfs_prepared *prep = round % 2 ? mfs_prepared_new(s) : NULL;
        uint64_t b0 = mfs_runtime_builds();
        for (int i = 0; i < NJ; i++) {
            jobs[i] = (job){s, prep, fns[i % 3], {NULL, 0}};
            assert_int_equal(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
        }
        for (int i = 0; i < NJ; i++)
            pthread_join(th[i], NULL);
        assert_int_equal(mfs_runtime_builds() - b0, prep ? 1 : NJ);
        for (int i = 0; i < NJ; i++) {
            assert_non_null(jobs[i].out.p);
            blob_eq(jobs[i].out, ref[i % 3]);
            free(jobs[i].out.p);
        }
        mfs_prepared_free(prep);
    }
    for (int i = 0; i < 3; i++)
        free(ref[i].p);
    mfs_scene_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cube_vrt),
        cmocka_unit_test(cube_tri),
        cmocka_unit_test(cube_tri_reverse_winding),
        cmocka_unit_test(shared_vertices_merge),
        cmocka_unit_test(duplicates_and_negative_zero),
        cmocka_unit_test(reduction_matches_brute_force),
        cmocka_unit_test(point_and_line_meshes_skipped),
        cmocka_unit_test(no_triangles_gives_empty_files),
        cmocka_unit_test(node_translation_applied),
        cmocka_unit_test(instanced_mesh_written_at_every_node),
        cmocka_unit_test(huge_coordinates_refused_by_sph),
        cmocka_unit_test(node_rotation_and_scale_on_normals),
        cmocka_unit_test(mirror_node_keeps_ccw),
        cmocka_unit_test(missing_normals_and_uvs),
        cmocka_unit_test(non_finite_model_space_is_an_error),
        cmocka_unit_test(cube_sph),
        cmocka_unit_test(sphere_adversarial),
        cmocka_unit_test(sphere_degenerate),
        cmocka_unit_test(sph_contains_vrt),
        cmocka_unit_test(skinned_vertices),
        cmocka_unit_test(plain_layout),
        cmocka_unit_test(unlinked_and_repeated_bones),
        cmocka_unit_test(too_many_joints),
        cmocka_unit_test(sph_bytes_unit_cube_at_123),
        cmocka_unit_test(prepared_builds_once),
        cmocka_unit_test(prepared_failure_shared),
        cmocka_unit_test(prepared_for_another_scene),
        cmocka_unit_test(deterministic),
        cmocka_unit_test(no_stale_results),
        cmocka_unit_test(threads_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

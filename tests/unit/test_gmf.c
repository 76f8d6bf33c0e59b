/* Tests for the .gmf writer (docs/formats/gmf.md).
 *
 * Expected values are worked out by hand from the format documents: block
 * header = int32 tag, nkids, size (own payload only); Leadwerks frame =
 * canonical with Z negated, triangles reversed, v = 1 - v; matrices
 * transposed so translation sits at elements 12..14. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "meshfs/formats.h"
#include "meshfs/inspect.h"

/* ---- writing ---- */

static uint8_t *write_scene(const mfs_scene *s, size_t *len)
{
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_scene_validate(s, &err), 0);
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink k;
    mfs_sink_init_mem(&k);
    int rc = mfs_write_gmf(s, NULL, &o, &k, &err);
    if (rc != 0)
        fail_msg("gmf writer failed: %s", err.msg);
    assert_int_equal(mfs_sink_finish(&k), 0);
    uint8_t *b = mfs_sink_take(&k, len);
    mfs_sink_free(&k);
    return b;
}

/* ---- a strict block parser: every size must be exactly its payload ---- */

enum { FILE_ = 1, NODE = 2, MESH = 3, BONE = 4, VA = 5, IA = 6, PROPS = 7, KEYS = 8, SURF = 10 };
enum { POS = 1, NRM = 2, TEX = 3, COL = 4, TAN = 5, BIN = 6, BIDX = 7, BW = 8 };

typedef struct blk {
    uint32_t tag, nkids, size;
    const uint8_t *pl;
    struct blk *kids;
    struct blk *parent;
} blk;

static uint32_t type_size(uint32_t type)
{
    switch (type) {
    case 2: return 1; /* unsigned byte */
    case 4: return 2; /* unsigned short */
    case 8: return 4; /* float */
    default: fail_msg("unexpected component type %u", type);
    }
    return 0;
}

static void check_payload(const blk *b)
{
    const uint8_t *p = b->pl;
    switch (b->tag) {
    case FILE_: assert_int_equal(b->size, 4); break;
    case NODE:
    case MESH: assert_int_equal(b->size, 64); break;
    case BONE: assert_int_equal(b->size, 68); break;
    case SURF: assert_int_equal(b->size, 0); break;
    case PROPS: {
        assert_true(b->size >= 4);
        uint32_t n = mfs_ld_u32(p), at = 4;
        for (uint32_t i = 0; i < 2 * n; i++) {
            const uint8_t *z = memchr(p + at, 0, b->size - at);
            assert_non_null(z);
            for (const uint8_t *c = p + at; c < z; c++)
                assert_true(*c != '\r' && *c != '\n');
            at = (uint32_t)(z - p) + 1;
        }
        assert_int_equal(at, b->size);
        break;
    }
    case VA: {
        uint32_t n = mfs_ld_u32(p), type = mfs_ld_u32(p + 8), el = mfs_ld_u32(p + 12);
        assert_int_equal(b->size, 16 + (uint64_t)n * el * type_size(type));
        break;
    }
    case IA:
        assert_int_equal(mfs_ld_u32(p + 4), 7); /* triangles */
        assert_int_equal(mfs_ld_u32(p + 8), 4); /* unsigned short */
        assert_int_equal(b->size, 12 + 2 * (uint64_t)mfs_ld_u32(p));
        assert_int_equal(mfs_ld_u32(p) % 3, 0);
        break;
    case KEYS: assert_int_equal(b->size, 4 + 64 * (uint64_t)mfs_ld_u32(p)); break;
    default: fail_msg("unexpected tag %u", b->tag);
    }
}

static size_t parse_blk(const uint8_t *buf, size_t len, size_t pos, blk *b, blk *parent)
{
    assert_true(len - pos >= 12);
    b->tag = mfs_ld_u32(buf + pos);
    b->nkids = mfs_ld_u32(buf + pos + 4);
    b->size = mfs_ld_u32(buf + pos + 8);
    b->parent = parent;
    pos += 12;
    assert_true(b->size <= len - pos);
    b->pl = buf + pos;
    pos += b->size;
    check_payload(b);
    b->kids = calloc(b->nkids ? b->nkids : 1, sizeof(blk));
    for (uint32_t i = 0; i < b->nkids; i++)
        pos = parse_blk(buf, len, pos, &b->kids[i], b);
    return pos;
}

/* Parses the whole file and insists it ends exactly after the FILE tree. */
static blk *parse_file(const uint8_t *buf, size_t len)
{
    blk *root = calloc(1, sizeof(blk));
    size_t end = parse_blk(buf, len, 0, root, NULL);
    assert_int_equal(end, len);
    assert_int_equal(root->tag, FILE_);
    assert_int_equal(root->nkids, 1);
    return root;
}

static void free_blk(blk *b)
{
    for (uint32_t i = 0; i < b->nkids; i++)
        free_blk(&b->kids[i]);
    free(b->kids);
}

static void free_file(blk *f)
{
    free_blk(f);
    free(f);
}

/* The i-th child with tag (0-based), or NULL. */
static const blk *kid(const blk *b, uint32_t tag, uint32_t i)
{
    for (uint32_t k = 0; k < b->nkids; k++)
        if (b->kids[k].tag == tag && i-- == 0)
            return &b->kids[k];
    return NULL;
}

static uint32_t count_kids(const blk *b, uint32_t tag)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < b->nkids; k++)
        n += b->kids[k].tag == tag;
    return n;
}

/* Value of key in the block's PROPERTIES child, or NULL. */
static const char *prop(const blk *b, const char *key)
{
    const blk *p = kid(b, PROPS, 0);
    if (!p)
        return NULL;
    const char *s = (const char *)p->pl + 4;
    for (uint32_t i = 0; i < mfs_ld_u32(p->pl); i++) {
        const char *v = s + strlen(s) + 1;
        if (strcmp(s, key) == 0)
            return v;
        s = v + strlen(v) + 1;
    }
    return NULL;
}

/* First descendant (pre-order) with tag and name property. */
static const blk *find_named(const blk *b, uint32_t tag, const char *name)
{
    if (b->tag == tag && prop(b, "name") && strcmp(prop(b, "name"), name) == 0)
        return b;
    for (uint32_t k = 0; k < b->nkids; k++) {
        const blk *r = find_named(&b->kids[k], tag, name);
        if (r)
            return r;
    }
    return NULL;
}

static const blk *array_of(const blk *surf, uint32_t kind, uint32_t i)
{
    for (uint32_t k = 0; k < surf->nkids; k++) {
        const blk *a = &surf->kids[k];
        if (a->tag == VA && mfs_ld_u32(a->pl + 4) == kind && i-- == 0)
            return a;
    }
    return NULL;
}

static uint32_t va_count(const blk *a)
{
    return mfs_ld_u32(a->pl);
}

static float va_f(const blk *a, uint32_t v, uint32_t c)
{
    uint32_t el = mfs_ld_u32(a->pl + 12);
    return mfs_ld_f32(a->pl + 16 + 4 * ((size_t)v * el + c));
}

static const uint8_t *va_b(const blk *a, uint32_t v)
{
    return a->pl + 16 + 4 * (size_t)v;
}

static uint32_t ia_count(const blk *surf)
{
    return mfs_ld_u32(kid(surf, IA, 0)->pl);
}

static uint16_t ia_get(const blk *surf, uint32_t i)
{
    return mfs_ld_u16(kid(surf, IA, 0)->pl + 12 + 2 * (size_t)i);
}

static void mat_of(const uint8_t *p, float m[16])
{
    for (int i = 0; i < 16; i++)
        m[i] = mfs_ld_f32(p + 4 * i);
}

static const uint8_t LE_IDENTITY[64] = {
    0, 0, 0x80, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3f,
};

/* ---- the unit cube ---- */

static void test_cube_header_bytes(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    size_t len;
    uint8_t *b = write_scene(s, &len);
    static const uint8_t head[] = {
        1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0,  /* FILE, 1 kid, size 4, version 1 */
        3, 0, 0, 0, 2, 0, 0, 0, 64, 0, 0, 0,            /* MESH, 2 kids (name, "cube"), 64 */
    };
    assert_true(len > 92 + 26);
    assert_memory_equal(b, head, sizeof head);
    assert_memory_equal(b + 28, LE_IDENTITY, 64);
    static const uint8_t props[] = {
        7, 0, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0, /* PROPERTIES, 0 kids, 4+5+5, 1 pair */
        'n', 'a', 'm', 'e', 0, 'r', 'o', 'o', 't', 0,
    };
    assert_memory_equal(b + 92, props, sizeof props);
    free(b);
    mfs_scene_free(s);
}

static void test_cube_tree(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *root = &f->kids[0];
    assert_int_equal(root->tag, MESH);
    assert_string_equal(prop(root, "name"), "root");
    assert_int_equal(count_kids(root, KEYS), 0); /* no animation: no keys */
    const blk *cube = kid(root, MESH, 0);
    assert_non_null(cube);
    assert_string_equal(prop(cube, "name"), "cube");
    assert_int_equal(cube->nkids, 2);
    const blk *surf = kid(cube, SURF, 0);
    assert_non_null(surf);
    /* material, POSITION, NORMAL, TEXCOORD, indices; no tangents, colours, bones */
    assert_int_equal(surf->nkids, 5);
    assert_int_equal(surf->kids[0].tag, PROPS);
    /* the diffuse texture textures/cube.png names the material file */
    assert_string_equal(prop(surf, "material"), "cube.mat");
    static const uint8_t pos_head[] = {
        5, 0, 0, 0, 0, 0, 0, 0, 0x30, 0x01, 0, 0, /* VERTEXARRAY, 0 kids, 16 + 24*12 = 304 */
        24, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, /* 24 verts, POSITION, float, 3 */
    };
    assert_memory_equal(surf->kids[1].pl - 12, pos_head, sizeof pos_head);
    assert_int_equal(mfs_ld_u32(surf->kids[2].pl + 4), NRM);
    assert_int_equal(surf->kids[2].size, 304);
    assert_int_equal(mfs_ld_u32(surf->kids[3].pl + 4), TEX);
    assert_int_equal(surf->kids[3].size, 16 + 24 * 8);
    assert_int_equal(surf->kids[4].tag, IA);
    assert_int_equal(surf->kids[4].size, 12 + 36 * 2);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_cube_frame(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *surf = kid(kid(&f->kids[0], MESH, 0), SURF, 0);
    const blk *pos = array_of(surf, POS, 0), *nrm = array_of(surf, NRM, 0),
              *uv = array_of(surf, TEX, 0);
    /* vertex 0: +X face corner (-u-v) = (0.5,-0.5,0.5) canonical -> z negated */
    assert_true(va_f(pos, 0, 0) == 0.5f && va_f(pos, 0, 1) == -0.5f && va_f(pos, 0, 2) == -0.5f);
    /* vertex 16: +Z face corner (-0.5,-0.5,0.5) -> (-0.5,-0.5,-0.5), normal (0,0,-1) */
    assert_true(va_f(pos, 16, 0) == -0.5f && va_f(pos, 16, 1) == -0.5f && va_f(pos, 16, 2) == -0.5f);
    assert_true(va_f(nrm, 16, 0) == 0.0f && va_f(nrm, 16, 1) == 0.0f && va_f(nrm, 16, 2) == -1.0f);
    assert_true(va_f(nrm, 0, 0) == 1.0f && va_f(nrm, 0, 2) == 0.0f);
    /* UVs (0,0) (1,0) (1,1) (0,1) per face -> v flipped */
    assert_true(va_f(uv, 0, 0) == 0.0f && va_f(uv, 0, 1) == 1.0f);
    assert_true(va_f(uv, 1, 0) == 1.0f && va_f(uv, 1, 1) == 1.0f);
    assert_true(va_f(uv, 2, 0) == 1.0f && va_f(uv, 2, 1) == 0.0f);
    assert_true(va_f(uv, 3, 0) == 0.0f && va_f(uv, 3, 1) == 0.0f);
    /* triangles (4f,4f+1,4f+2) (4f,4f+2,4f+3) written reversed */
    assert_int_equal(ia_count(surf), 36);
    for (uint16_t fc = 0; fc < 6; fc++) {
        const uint16_t want[6] = {4 * fc + 2, 4 * fc + 1, 4 * fc, 4 * fc + 3, 4 * fc + 2, 4 * fc};
        for (int k = 0; k < 6; k++)
            assert_int_equal(ia_get(surf, 6u * fc + k), want[k]);
    }
    /* What real Leadwerks files show: cross(Pb-Pa, Pc-Pa) along the normal. */
    for (uint32_t t = 0; t < 12; t++) {
        uint16_t a = ia_get(surf, 3 * t), bb = ia_get(surf, 3 * t + 1), c = ia_get(surf, 3 * t + 2);
        float e1[3], e2[3];
        for (int k = 0; k < 3; k++) {
            e1[k] = va_f(pos, bb, k) - va_f(pos, a, k);
            e2[k] = va_f(pos, c, k) - va_f(pos, a, k);
        }
        float cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                       e1[0] * e2[1] - e1[1] * e2[0]};
        float d = cr[0] * va_f(nrm, a, 0) + cr[1] * va_f(nrm, a, 1) + cr[2] * va_f(nrm, a, 2);
        assert_true(d > 0);
    }
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

/* Tangent space, colours, a second UV set: every optional array. */
static void test_cube_all_arrays(void **state)
{
    (void)state;
    static const float us[6][3] = {{0, 0, -1}, {0, 0, 1}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {-1, 0, 0}};
    static const float vs[6][3] = {{0, 1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}, {0, 1, 0}, {0, 1, 0}};
    mfs_scene *s = fixture_cube();
    mfs_mesh *m = &s->meshes[0];
    m->tangents = calloc(24, sizeof *m->tangents);
    m->bitangents = calloc(24, sizeof *m->bitangents);
    m->colors = calloc(24, sizeof *m->colors);
    m->uv[1] = calloc(24, sizeof *m->uv[1]);
    for (int v = 0; v < 24; v++) {
        memcpy(m->tangents[v], us[v / 4], sizeof(float) * 3);
        memcpy(m->bitangents[v], vs[v / 4], sizeof(float) * 3);
        const float c[4] = {1.0f, 0.5f, 0.0f, 1.0f};
        memcpy(m->colors[v], c, sizeof c);
        m->uv[1][v][0] = 0.25f;
        m->uv[1][v][1] = 0.75f;
    }
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *surf = kid(kid(&f->kids[0], MESH, 0), SURF, 0);
    /* material, POS, NORMAL, COLOR, TEX, TEX, TANGENT, BINORMAL, indices */
    assert_int_equal(surf->nkids, 9);
    static const uint32_t order[] = {POS, NRM, COL, TEX, TEX, TAN, BIN};
    for (int k = 0; k < 7; k++)
        assert_int_equal(mfs_ld_u32(surf->kids[1 + k].pl + 4), order[k]);
    const blk *col = array_of(surf, COL, 0);
    assert_int_equal(mfs_ld_u32(col->pl + 8), 2); /* unsigned byte */
    assert_int_equal(mfs_ld_u32(col->pl + 12), 4);
    assert_int_equal(col->size, 16 + 24 * 4);
    const uint8_t rgba[4] = {255, 128, 0, 255};
    assert_memory_equal(va_b(col, 5), rgba, 4);
    const blk *uv2 = array_of(surf, TEX, 1);
    assert_true(va_f(uv2, 7, 0) == 0.25f && va_f(uv2, 7, 1) == 0.25f);
    /* Real files: tangent along +u, binormal along +v of the stored UVs. */
    const blk *pos = array_of(surf, POS, 0), *uv = array_of(surf, TEX, 0);
    const blk *tan = array_of(surf, TAN, 0), *bin = array_of(surf, BIN, 0);
    for (uint32_t t = 0; t < 12; t++) {
        uint16_t i[3] = {ia_get(surf, 3 * t), ia_get(surf, 3 * t + 1), ia_get(surf, 3 * t + 2)};
        float e1[3], e2[3];
        float du1 = va_f(uv, i[1], 0) - va_f(uv, i[0], 0), dv1 = va_f(uv, i[1], 1) - va_f(uv, i[0], 1);
        float du2 = va_f(uv, i[2], 0) - va_f(uv, i[0], 0), dv2 = va_f(uv, i[2], 1) - va_f(uv, i[0], 1);
        for (int k = 0; k < 3; k++) {
            e1[k] = va_f(pos, i[1], k) - va_f(pos, i[0], k);
            e2[k] = va_f(pos, i[2], k) - va_f(pos, i[0], k);
        }
        float r = du1 * dv2 - du2 * dv1, dpdu = 0, dpdv = 0;
        for (int k = 0; k < 3; k++) {
            dpdu += (e1[k] * dv2 - e2[k] * dv1) / r * va_f(tan, i[0], k);
            dpdv += (e2[k] * du1 - e1[k] * du2) / r * va_f(bin, i[0], k);
        }
        assert_true(dpdu > 0.99f);
        assert_true(dpdv > 0.99f);
    }
    /* +X face: tangent (0,0,-1) -> (0,0,1); bitangent (0,1,0) -> (0,-1,0) */
    assert_true(va_f(tan, 0, 0) == 0.0f && va_f(tan, 0, 2) == 1.0f);
    assert_true(va_f(bin, 0, 1) == -1.0f && va_f(bin, 0, 2) == 0.0f);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

/* ---- the skinned strip ---- */

static void test_strip_skin_arrays(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *strip = find_named(&f->kids[0], MESH, "strip");
    assert_non_null(strip);
    const blk *surf = kid(strip, SURF, 0);
    /* material, POS, NORMAL, TEX, BONEINDICE, BONEWEIGHT, indices */
    assert_int_equal(surf->nkids, 7);
    assert_string_equal(prop(surf, "material"), "strip_mat.mat");
    const blk *idx = array_of(surf, BIDX, 0), *w = array_of(surf, BW, 0);
    assert_non_null(idx);
    assert_non_null(w);
    static const uint8_t idx_head[] = {5, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0,
                                       6, 0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0};
    assert_memory_equal(idx->pl - 12, idx_head, sizeof idx_head);
    assert_int_equal(mfs_ld_u32(w->pl + 4), BW);
    assert_int_equal(mfs_ld_u32(w->pl + 8), 2);
    /* bone0 = id 0, bone1 = id 1.  v0,v1: bone0 only; v2,v3: 50/50, which
     * truncates to 127+127 and the remainder goes to the first (ties:
     * lower id first) -> (0,1) (128,127); v4,v5: bone1 only. */
    static const uint8_t want_idx[6][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 1, 0, 0},
                                           {0, 1, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}};
    static const uint8_t want_w[6][4] = {{255, 0, 0, 0}, {255, 0, 0, 0}, {128, 127, 0, 0},
                                         {128, 127, 0, 0}, {255, 0, 0, 0}, {255, 0, 0, 0}};
    for (uint32_t v = 0; v < 6; v++) {
        assert_memory_equal(va_b(idx, v), want_idx[v], 4);
        assert_memory_equal(va_b(w, v), want_w[v], 4);
        const uint8_t *q = va_b(w, v);
        assert_int_equal(q[0] + q[1] + q[2] + q[3], 255);
    }
    /* first triangle (0,1,3) reversed */
    assert_int_equal(ia_get(surf, 0), 3);
    assert_int_equal(ia_get(surf, 1), 1);
    assert_int_equal(ia_get(surf, 2), 0);
    /* UV (x, y/2) -> v flipped: v4 (0,1) -> (0,0); v2 (0,0.5) -> (0,0.5) */
    const blk *uv = array_of(surf, TEX, 0);
    assert_true(va_f(uv, 4, 1) == 0.0f && va_f(uv, 0, 1) == 1.0f && va_f(uv, 2, 1) == 0.5f);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_strip_bones_and_keys(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *root = &f->kids[0];
    /* root MESH: one 0-frame placeholder per animation, first, like real files */
    assert_int_equal(root->kids[0].tag, KEYS);
    assert_int_equal(root->kids[0].size, 4);
    assert_int_equal(mfs_ld_u32(root->kids[0].pl), 0);
    assert_int_equal(root->kids[1].tag, PROPS);
    /* the skeleton hangs from the skinned mesh's MESH, not from the root;
     * the bone nodes are not repeated as NODE blocks */
    assert_int_equal(count_kids(root, BONE), 0);
    assert_int_equal(count_kids(root, NODE), 0);
    assert_int_equal(root->nkids, 3); /* keys, name, MESH strip */
    const blk *strip = kid(root, MESH, 0);
    assert_string_equal(prop(strip, "name"), "strip");
    assert_int_equal(mfs_ld_u32(kid(strip, KEYS, 0)->pl), 0);
    assert_int_equal(count_kids(strip, BONE), 1);
    const blk *b0 = kid(strip, BONE, 0);
    assert_string_equal(prop(b0, "name"), "bone0");
    assert_int_equal(mfs_ld_i32(b0->pl + 64), 0);
    assert_memory_equal(b0->pl, LE_IDENTITY, 64);
    assert_int_equal(count_kids(b0, BONE), 1);
    const blk *b1 = kid(b0, BONE, 0);
    assert_string_equal(prop(b1, "name"), "bone1");
    assert_int_equal(mfs_ld_i32(b1->pl + 64), 1);
    assert_int_equal(b1->nkids, 2); /* name, keys */
    /* bind pose of bone1: inverse offset = translation (0,1,0), local to bone0 */
    float m[16];
    mat_of(b1->pl, m);
    for (int i = 0; i < 16; i++)
        assert_true(m[i] == (i == 13 ? 1.0f : (i % 5 == 0 ? 1.0f : 0.0f)));
    /* "bend": 1 s (10 ticks at 10 ticks/s) at 30 fps = frames 0..30 = 31 */
    const blk *k1 = kid(b1, KEYS, 0), *k0 = kid(b0, KEYS, 0);
    assert_int_equal(mfs_ld_u32(k1->pl), 31);
    assert_int_equal(mfs_ld_u32(k0->pl), 31);
    assert_int_equal(k1->size, 4 + 31 * 64);
    /* frame 0: at rest (0,1,0); frame 30: 90 degrees about +Z, which the Z
     * mirror leaves as is; rows are the rotated axes: X -> +Y, Y -> -X */
    mat_of(k1->pl + 4, m);
    assert_true(fabsf(m[0] - 1) < 1e-6f && fabsf(m[5] - 1) < 1e-6f && m[13] == 1.0f);
    mat_of(k1->pl + 4 + 30 * 64, m);
    const float want[16] = {0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1};
    for (int i = 0; i < 16; i++)
        assert_true(fabsf(m[i] - want[i]) < 1e-6f);
    /* frame 15 (t = 0.5 s): halfway, 45 degrees */
    mat_of(k1->pl + 4 + 15 * 64, m);
    assert_true(fabsf(m[0] - 0.70710678f) < 1e-5f && fabsf(m[1] - 0.70710678f) < 1e-5f);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

/* ---- skinning end to end: what Leadwerks would draw ---- */

static void mat_quat(mfs_mat4 *m, const float t[3], float ax, float ay, float az, float deg)
{
    float l = sqrtf(ax * ax + ay * ay + az * az), h = (float)(deg * M_PI / 360.0);
    float q[4] = {ax / l * sinf(h), ay / l * sinf(h), az / l * sinf(h), cosf(h)};
    const float one[3] = {1, 1, 1};
    mfs_mat4_compose(m, t, q, one);
}

static void add_child_node(mfs_scene *s, uint32_t parent, uint32_t child)
{
    mfs_node *p = &s->nodes[parent];
    p->children = realloc(p->children, sizeof(uint32_t) * (p->n_children + 1));
    p->children[p->n_children++] = child;
    s->nodes[child].parent = (int32_t)parent;
}

/* Nodes: 0 root, 1 arm (a non-bone armature, rotated, translated, animated;
 * scaled (2, 1.5, 0.5) when scaled), 2 bone0, 3 bone1, 4 strip (placing the
 * skinned mesh, rotated; under root, or under bone1 when mesh_under_bone,
 * which forces the skeleton onto arm). */
static mfs_scene *rig_scene(int mesh_under_bone, int scaled)
{
    mfs_scene *s = fixture_skinned_strip();
    mfs_scene *r = mfs_scene_new();
    r->n_nodes = 5;
    r->nodes = calloc(5, sizeof(mfs_node));
    const char *names[5] = {"root", "arm", "bone0", "bone1", "strip"};
    for (int i = 0; i < 5; i++) {
        r->nodes[i].name = mfs_strdup(names[i]);
        mfs_mat4_identity(&r->nodes[i].local);
    }
    r->nodes[0].parent = -1;
    add_child_node(r, 0, 1);
    add_child_node(r, 1, 2);
    add_child_node(r, 2, 3);
    add_child_node(r, mesh_under_bone ? 3 : 0, 4);
    mat_quat(&r->nodes[1].local, (const float[3]){0.5f, 0, -2}, 1, 0, 0, -90);
    if (scaled) {
        const float sc[3] = {2.0f, 1.5f, 0.5f};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                r->nodes[1].local.m[i * 4 + j] *= sc[j];
    }
    mat_quat(&r->nodes[2].local, (const float[3]){0, 0.2f, 0.3f}, 0, 1, 0, 20);
    mat_quat(&r->nodes[3].local, (const float[3]){0, 1, 0.1f}, 1, 0, 1, 15);
    mat_quat(&r->nodes[4].local, (const float[3]){1, 2, 3}, 0, 1, 0, 30);
    r->nodes[4].meshes = malloc(sizeof(uint32_t));
    r->nodes[4].meshes[0] = 0;
    r->nodes[4].n_meshes = 1;
    /* take mesh, material and animation from the fixture */
    r->n_meshes = 1;
    r->meshes = s->meshes;
    s->meshes = NULL;
    s->n_meshes = 0;
    r->n_materials = 1;
    r->materials = s->materials;
    s->materials = NULL;
    s->n_materials = 0;
    r->n_animations = 1;
    r->animations = s->animations;
    s->animations = NULL;
    s->n_animations = 0;
    mfs_scene_free(s);
    mfs_mesh *m = &r->meshes[0];
    for (uint32_t v = 0; v < m->n_vertices; v++)
        m->positions[v][2] = 0.3f * m->positions[v][0] - 0.1f;
    /* bone0, bone1 now node 2, 3; offsets bind the mesh as it is placed */
    mfs_mat4 w[5];
    mfs_scene_world(r, w);
    for (int b = 0; b < 2; b++) {
        mfs_mat4 inv;
        m->bones[b].node = 2 + b;
        assert_int_equal(mfs_mat4_invert(&inv, &w[2 + b]), 0);
        mfs_mat4_mul(&m->bones[b].offset, &inv, &w[4]);
    }
    /* animation: bone1 (node 3) rotates as before; arm slides */
    mfs_animation *a = &r->animations[0];
    a->channels[0].node = 3;
    a->channels[0].pos[0].v[2] = 0.1f;
    a->channels = realloc(a->channels, sizeof(mfs_channel) * 2);
    a->n_channels = 2;
    mfs_channel *c = &a->channels[1];
    memset(c, 0, sizeof *c);
    c->node = 1;
    c->n_pos = 2;
    c->pos = calloc(2, sizeof(mfs_vec_key));
    c->pos[0] = (mfs_vec_key){0.0, {0.5f, 0, -2}};
    c->pos[1] = (mfs_vec_key){10.0, {0.5f, 1, -1}};
    return r;
}

/* Leadwerks composes row-vector matrices, child first: global = local * parent. */
static void rmul(float r[16], const float a[16], const float b[16])
{
    float t[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += (double)a[i * 4 + k] * b[k * 4 + j];
            t[i * 4 + j] = (float)acc;
        }
    memcpy(r, t, sizeof t);
}

/* Global bind and posed (frame k of animation 0) matrices of a block. */
static void globals(const blk *b, uint32_t frame, float bind[16], float pose[16])
{
    float id[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    if (b->tag == FILE_) {
        memcpy(bind, id, sizeof id);
        memcpy(pose, id, sizeof id);
        return;
    }
    float pb[16], pp[16], l[16], lk[16];
    globals(b->parent, frame, pb, pp);
    mat_of(b->pl, l);
    memcpy(lk, l, sizeof l);
    const blk *k = kid(b, KEYS, 0);
    if (k && mfs_ld_u32(k->pl) > frame)
        mat_of(k->pl + 4 + 64 * (size_t)frame, lk);
    rmul(bind, l, pb);
    rmul(pose, lk, pp);
}

static void invert16(float out[16], const float in[16])
{
    mfs_mat4 a, r;
    memcpy(a.m, in, sizeof a.m);
    assert_int_equal(mfs_mat4_invert(&r, &a), 0);
    memcpy(out, r.m, sizeof r.m);
}

static const blk *bone_by_id(const blk *b, int32_t id)
{
    if (b->tag == BONE && mfs_ld_i32(b->pl + 64) == id)
        return b;
    for (uint32_t k = 0; k < b->nkids; k++) {
        const blk *r = bone_by_id(&b->kids[k], id);
        if (r)
            return r;
    }
    return NULL;
}

/* Every NODE and MESH matrix below b is a pure translation: floats 0..10
 * the identity's, 3, 7, 11 zero, 15 one (research gmf.md: the legacy loader
 * keeps only floats 12..14 of them).  Returns how many were seen. */
static unsigned assert_limbs_translations(const blk *b)
{
    unsigned n = 0;
    if (b->tag == NODE || b->tag == MESH) {
        float m[16];
        mat_of(b->pl, m);
        for (int i = 0; i < 12; i++)
            if (m[i] != (i % 5 == 0 ? 1.0f : 0.0f))
                fail_msg("%s '%s': float %d is %g", b->tag == NODE ? "NODE" : "MESH",
                         prop(b, "name"), i, (double)m[i]);
        assert_true(m[15] == 1.0f);
        n++;
    }
    for (uint32_t k = 0; k < b->nkids; k++)
        n += assert_limbs_translations(&b->kids[k]);
    return n;
}

/* Where Leadwerks' legacy loader puts a block (research gmf.md): the
 * translations (floats 12..14) of every NODE and MESH from the root down to
 * it summed; a BONE adds nothing. */
static void engine_origin(const blk *b, float o[3])
{
    o[0] = o[1] = o[2] = 0;
    for (; b; b = b->parent)
        if (b->tag == NODE || b->tag == MESH)
            for (int k = 0; k < 3; k++)
                o[k] += mfs_ld_f32(b->pl + 4 * (12 + k));
}

/* For every vertex, bone and sampled frame: the position Leadwerks computes
 * (vertex * host * inverse(bind) * pose, all globals from the file) equals
 * the canonical skinned position (world(bone, t) * offset * vertex) with Z
 * negated. */
static void check_rig(int mesh_under_bone, int scaled)
{
    mfs_scene *s = rig_scene(mesh_under_bone, scaled);
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *host = bone_by_id(f, 0)->parent, *surf = kid(host, SURF, 0);
    assert_non_null(surf);
    assert_string_equal(prop(host, "name"), mesh_under_bone ? "arm" : "strip");
    const blk *pos = array_of(surf, POS, 0), *nrm = array_of(surf, NRM, 0);
    const mfs_mesh *m = &s->meshes[0];
    const mfs_animation *an = &s->animations[0];
    /* root, arm, strip (and strip's NODE under bone1): all translations */
    assert_int_equal(assert_limbs_translations(f), 3);
    /* Bind pose, as a loader that does not skin draws it: the vertices plus
     * the host's summed translations are the mesh where its node puts it
     * (the offsets bind it as placed), z mirrored.  The node's world is
     * composed here from the scene's local matrices. */
    mfs_mat4 rest = s->nodes[4].local, nmat;
    for (int32_t p = s->nodes[4].parent; p >= 0; p = s->nodes[p].parent)
        mfs_mat4_mul(&rest, &s->nodes[p].local, &rest);
    mfs_mat4_normal_matrix(&nmat, &rest);
    float at[3];
    engine_origin(host, at);
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        float want[3], wn[3];
        mfs_mat4_point(&rest, m->positions[v], want);
        mfs_mat4_vector(&nmat, m->normals[v], wn);
        mfs_normalize3(wn);
        want[2] = -want[2];
        wn[2] = -wn[2];
        for (int j = 0; j < 3; j++) {
            if (fabsf(va_f(pos, v, j) + at[j] - want[j]) > 1e-4f)
                fail_msg("bind pose vertex %u axis %d: %f, want %f", v, j,
                         (double)(va_f(pos, v, j) + at[j]), (double)want[j]);
            assert_true(fabsf(va_f(nrm, v, j) - wn[j]) < 1e-5f);
        }
    }
    const uint32_t frames[] = {0, 7, 15, 30};
    for (int fi = 0; fi < 4; fi++) {
        uint32_t fr = frames[fi];
        mfs_mat4 local[5], world[5];
        mfs_scene_pose(s, an, fr / 30.0 * an->ticks_per_second, local);
        for (int i = 0; i < 5; i++) {
            if (s->nodes[i].parent < 0)
                world[i] = local[i];
            else
                mfs_mat4_mul(&world[i], &world[s->nodes[i].parent], &local[i]);
        }
        float hb[16], hp[16];
        globals(host, fr, hb, hp);
        for (int32_t id = 0; id < 2; id++) {
            float bb[16], bp[16], ib[16], skin[16];
            globals(bone_by_id(f, id), fr, bb, bp);
            invert16(ib, bb);
            rmul(skin, hb, ib);
            rmul(skin, skin, bp);
            mfs_mat4 cw;
            mfs_mat4_mul(&cw, &world[2 + id], &m->bones[id].offset);
            for (uint32_t v = 0; v < m->n_vertices; v++) {
                float in[4] = {va_f(pos, v, 0), va_f(pos, v, 1), va_f(pos, v, 2), 1}, got[3];
                for (int j = 0; j < 3; j++)
                    got[j] = in[0] * skin[j] + in[1] * skin[4 + j] + in[2] * skin[8 + j] + skin[12 + j];
                float want[3];
                mfs_mat4_point(&cw, m->positions[v], want);
                want[2] = -want[2];
                for (int j = 0; j < 3; j++)
                    if (fabsf(got[j] - want[j]) > 1e-4f)
                        fail_msg("frame %u bone %d vertex %u axis %d: %f, want %f", fr, id, v, j,
                                 got[j], want[j]);
            }
        }
    }
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_rig_skinning_matches(void **state)
{
    (void)state;
    check_rig(0, 0);
    check_rig(0, 1);
}

static void test_rig_mesh_under_bone(void **state)
{
    (void)state;
    check_rig(1, 0);
    check_rig(1, 1);
    /* the strip node still exists, hanging from bone1, as an empty NODE */
    mfs_scene *s = rig_scene(1, 0);
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *b1 = find_named(f, BONE, "bone1");
    assert_non_null(b1);
    const blk *strip = kid(b1, NODE, 0);
    assert_non_null(strip);
    assert_string_equal(prop(strip, "name"), "strip");
    assert_int_equal(count_kids(strip, SURF), 0);
    /* arm is animated: its MESH carries the 31 frames, root a placeholder */
    const blk *arm = find_named(f, MESH, "arm");
    assert_int_equal(mfs_ld_u32(kid(arm, KEYS, 0)->pl), 31);
    assert_int_equal(mfs_ld_u32(kid(&f->kids[0], KEYS, 0)->pl), 0);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

/* A rigid mesh placed by an (animated) bone node.  Leadwerks' legacy loader
 * ignores BONE matrices, so the mesh cannot hang from the BONE: it is a
 * surface of the host, stored where bone1's bind pose puts it and bound
 * wholly to bone1, so a loader that skins moves it with the bone and one
 * that does not still draws it in place.  The BONE holds only name and keys,
 * as in real files. */
static void test_rigid_mesh_on_bone(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    s->meshes = realloc(s->meshes, sizeof(mfs_mesh) * 2);
    s->n_meshes = 2;
    mfs_mesh *m = &s->meshes[1];
    memset(m, 0, sizeof *m);
    m->name = mfs_strdup("sword");
    m->material = -1;
    m->prim = MFS_PRIM_TRIANGLES;
    m->n_vertices = 3;
    m->positions = calloc(3, sizeof *m->positions);
    m->positions[1][0] = 1;
    m->positions[2][2] = 1;
    m->n_faces = 1;
    m->indices = calloc(3, sizeof(uint32_t));
    m->indices[1] = 1;
    m->indices[2] = 2;
    s->nodes[3].meshes = malloc(sizeof(uint32_t));
    s->nodes[3].meshes[0] = 1;
    s->nodes[3].n_meshes = 1;
    /* the whole model is turned 90 degrees about Y, (x,y,z) -> (z+4,y,-x) */
    const mfs_mat4 turn = {{0, 0, 1, 4, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 0, 1}};
    s->nodes[0].local = turn;
    /* node 4 "grip" under bone1: moved (0,0.5,0), turned 90 degrees about
     * Z, (x,y,z) -> (-y,x,z); it places the sword too */
    s->n_nodes = 5;
    s->nodes = realloc(s->nodes, sizeof(mfs_node) * 5);
    memset(&s->nodes[4], 0, sizeof(mfs_node));
    s->nodes[4].name = mfs_strdup("grip");
    const mfs_mat4 grip = {{0, -1, 0, 0, 1, 0, 0, 0.5f, 0, 0, 1, 0, 0, 0, 0, 1}};
    s->nodes[4].local = grip;
    add_child_node(s, 3, 4);
    s->nodes[4].meshes = malloc(sizeof(uint32_t));
    s->nodes[4].meshes[0] = 1;
    s->nodes[4].n_meshes = 1;
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    assert_int_equal(assert_limbs_translations(f), 3); /* root, strip, grip */
    const blk *b1 = find_named(f, BONE, "bone1");
    assert_int_equal(b1->nkids, 3); /* name, keys, NODE grip */
    assert_int_equal(mfs_ld_u32(kid(b1, KEYS, 0)->pl), 31);
    /* grip hangs from the BONE as an empty NODE; composed with full
     * matrices its origin is where the node is: (0,1.5,0) turned (4,1.5,0) */
    const blk *gn = kid(b1, NODE, 0);
    assert_string_equal(prop(gn, "name"), "grip");
    assert_int_equal(count_kids(gn, SURF), 0);
    float gb[16], gp[16];
    globals(gn, 0, gb, gp);
    assert_true(fabsf(gb[12] - 4) < 1e-6f && fabsf(gb[13] - 1.5f) < 1e-6f &&
                fabsf(gb[14]) < 1e-6f);
    const blk *host = find_named(f, MESH, "strip");
    assert_int_equal(count_kids(host, SURF), 3);
    const uint8_t one_bone[4] = {1, 0, 0, 0}, all[4] = {255, 0, 0, 0};
    float at[3];
    engine_origin(host, at);
    /* bone1 rests at (0,1,0) under the turn: the sword's corners (0,0,0)
     * (1,0,0) (0,0,1) are at (4,1,0) (4,1,-1) (5,1,0), z mirrored; on the
     * grip at (0,1.5,0) (0,2.5,0) (0,1.5,1) before the turn, (4,1.5,0)
     * (4,2.5,0) (5,1.5,0) after */
    const float want[2][3][3] = {{{4, 1, 0}, {4, 1, 1}, {5, 1, 0}},
                                 {{4, 1.5f, 0}, {4, 2.5f, 0}, {5, 1.5f, 0}}};
    for (uint32_t i = 0; i < 2; i++) {
        const blk *surf = kid(host, SURF, 1 + i);
        const blk *pos = array_of(surf, POS, 0), *bi = array_of(surf, BIDX, 0),
                  *bw = array_of(surf, BW, 0);
        assert_non_null(bi);
        for (uint32_t v = 0; v < 3; v++) {
            assert_memory_equal(va_b(bi, v), one_bone, 4);
            assert_memory_equal(va_b(bw, v), all, 4);
            for (int k = 0; k < 3; k++)
                if (fabsf(va_f(pos, v, k) + at[k] - want[i][v][k]) > 1e-6f)
                    fail_msg("placement %u vertex %u axis %d: %g, want %g", i, v, k,
                             (double)(va_f(pos, v, k) + at[k]), (double)want[i][v][k]);
        }
    }
    /* the skinned strip in the same host: (1,0,0) of the mesh lands at
     * (4,0,-1), z mirrored (4,0,1) */
    const blk *sp = array_of(kid(host, SURF, 0), POS, 0);
    for (int k = 0; k < 3; k++)
        assert_true(fabsf(va_f(sp, 1, k) + at[k] - (const float[3]){4, 0, 1}[k]) < 1e-6f);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

/* ---- placement: what a translation-only loader draws ---- */

/* Nodes: 0 root; 1 turned (90 degrees about Y, (x,y,z) -> (z+1,y,-x));
 * 2 child of turned (scaled 2, moved (0,1,0)); 3 mirror (x scaled -1, moved
 * (0,0,-3)).  One triangle (0,0,0) (1,0,0) (0,1,0), counter-clockwise seen
 * from +Z like its normal, tangent +X, bitangent +Y, placed by 1, 2 and 3. */
static mfs_scene *placement_scene(void)
{
    mfs_scene *s = mfs_scene_new();
    s->n_nodes = 4;
    s->nodes = calloc(4, sizeof(mfs_node));
    static const char *const names[4] = {"root", "turned", "child", "mirror"};
    static const mfs_mat4 locals[4] = {
        {{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}},
        {{0, 0, 1, 1, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 0, 1}},
        {{2, 0, 0, 0, 0, 2, 0, 1, 0, 0, 2, 0, 0, 0, 0, 1}},
        {{-1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -3, 0, 0, 0, 1}},
    };
    for (int i = 0; i < 4; i++) {
        s->nodes[i].name = mfs_strdup(names[i]);
        s->nodes[i].local = locals[i];
    }
    s->nodes[0].parent = -1;
    add_child_node(s, 0, 1);
    add_child_node(s, 1, 2);
    add_child_node(s, 0, 3);
    for (int i = 1; i < 4; i++) {
        s->nodes[i].n_meshes = 1;
        s->nodes[i].meshes = calloc(1, sizeof(uint32_t));
    }
    s->n_meshes = 1;
    s->meshes = calloc(1, sizeof(mfs_mesh));
    mfs_mesh *m = &s->meshes[0];
    m->name = mfs_strdup("tri");
    m->material = -1;
    m->prim = MFS_PRIM_TRIANGLES;
    m->n_vertices = 3;
    m->positions = calloc(3, sizeof *m->positions);
    m->normals = calloc(3, sizeof *m->normals);
    m->tangents = calloc(3, sizeof *m->tangents);
    m->bitangents = calloc(3, sizeof *m->bitangents);
    m->positions[1][0] = 1;
    m->positions[2][1] = 1;
    for (int v = 0; v < 3; v++) {
        m->normals[v][2] = 1;
        m->tangents[v][0] = 1;
        m->bitangents[v][1] = 1;
    }
    m->n_faces = 1;
    m->indices = calloc(3, sizeof(uint32_t));
    m->indices[1] = 1;
    m->indices[2] = 2;
    return s;
}

/* Canonical -> gmf by the documented frame rule: z mirrored (binormals
 * mirrored and negated). */
static void to_le(const float c[3], float le[3], int binormal)
{
    le[0] = binormal ? -c[0] : c[0];
    le[1] = binormal ? -c[1] : c[1];
    le[2] = binormal ? c[2] : -c[2];
}

static void test_placement_baked(void **state)
{
    (void)state;
    mfs_scene *s = placement_scene();
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    assert_int_equal(assert_limbs_translations(f), 4);
    /* Worked out by hand from the node matrices (canonical frame). */
    static const struct {
        const char *node;
        float pos[3][3], nrm[3], tan[3], bin[3];
        int mirrored;
    } want[3] = {
        /* (z+1, y, -x) */
        {"turned", {{1, 0, 0}, {1, 0, -1}, {1, 1, 0}}, {1, 0, 0}, {0, 0, -1}, {0, 1, 0}, 0},
        /* turned after (2x, 2y+1, 2z): (2z+1, 2y+1, -2x) */
        {"child", {{1, 1, 0}, {1, 1, -2}, {1, 3, 0}}, {1, 0, 0}, {0, 0, -1}, {0, 1, 0}, 0},
        /* (-x, y, z-3): normals keep +Z, tangents turn to -X */
        {"mirror", {{0, 0, -3}, {-1, 0, -3}, {0, 1, -3}}, {0, 0, 1}, {-1, 0, 0}, {0, 1, 0}, 1},
    };
    for (int i = 0; i < 3; i++) {
        const blk *limb = find_named(f, MESH, want[i].node);
        assert_non_null(limb);
        const blk *surf = kid(limb, SURF, 0);
        const blk *pos = array_of(surf, POS, 0), *nrm = array_of(surf, NRM, 0);
        const blk *tan = array_of(surf, TAN, 0), *bin = array_of(surf, BIN, 0);
        float at[3], w[3], wn[3], wt[3], wb[3];
        engine_origin(limb, at);
        to_le(want[i].nrm, wn, 0);
        to_le(want[i].tan, wt, 0);
        to_le(want[i].bin, wb, 1);
        for (uint32_t v = 0; v < 3; v++) {
            to_le(want[i].pos[v], w, 0);
            for (int k = 0; k < 3; k++) {
                if (fabsf(va_f(pos, v, k) + at[k] - w[k]) > 1e-6f)
                    fail_msg("%s vertex %u axis %d: %g + %g, want %g", want[i].node, v, k,
                             (double)va_f(pos, v, k), (double)at[k], (double)w[k]);
                assert_true(fabsf(va_f(nrm, v, k) - wn[k]) < 1e-6f);
                assert_true(fabsf(va_f(tan, v, k) - wt[k]) < 1e-6f);
                assert_true(fabsf(va_f(bin, v, k) - wb[k]) < 1e-6f);
            }
        }
        /* Front faces stay front (research gmf.md: cross(Pb-Pa, Pc-Pa)
         * along the normal).  Z mirrored reverses each triangle; the mirror
         * node's own reflection reverses it back. */
        uint16_t t[3] = {ia_get(surf, 0), ia_get(surf, 1), ia_get(surf, 2)};
        assert_int_equal(t[0], want[i].mirrored ? 0 : 2);
        assert_int_equal(t[2], want[i].mirrored ? 2 : 0);
        float e1[3], e2[3];
        for (int k = 0; k < 3; k++) {
            e1[k] = va_f(pos, t[1], k) - va_f(pos, t[0], k);
            e2[k] = va_f(pos, t[2], k) - va_f(pos, t[0], k);
        }
        float cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                       e1[0] * e2[1] - e1[1] * e2[0]};
        assert_true(cr[0] * wn[0] + cr[1] * wn[1] + cr[2] * wn[2] > 0);
    }
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

/* meshfs-inspect reads placement as the legacy loader does: the written
 * file passes without a placement warning and its bounds are where the
 * vertices are drawn.  A rotation put into a MESH matrix by hand fails
 * --check as a .gmf (the legacy loader would draw it misplaced) and is a
 * warning as a .mdl (Leadwerks 3/4 composes it); the bounds stay put. */
static void test_placement_inspected(void **state)
{
    (void)state;
    mfs_scene *s = placement_scene();
    size_t len;
    uint8_t *b = write_scene(s, &len);
    mfs_summary sum;
    mfs_err err;
    assert_int_equal(mfs_inspect_buffer("p.gmf", b, len, 1, &sum, &err), 0);
    assert_int_equal(sum.n_warnings, 0);
    /* the nine placed corners of test_placement_baked, z mirrored */
    const float lo[3] = {-1, 0, 0}, hi[3] = {1, 3, 3};
    for (int k = 0; k < 3; k++) {
        assert_true(fabsf(sum.min[k] - lo[k]) < 1e-6f);
        assert_true(fabsf(sum.max[k] - hi[k]) < 1e-6f);
    }
    blk *f = parse_file(b, len);
    const blk *turned = find_named(f, MESH, "turned");
    size_t at = (size_t)(turned->pl - b) - 12;
    uint8_t *mat = b + at + 12;
    const float turn[12] = {0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, 0};
    for (int i = 0; i < 12; i++)
        mfs_st_f32(mat + 4 * i, turn[i]);
    free_file(f);
    assert_int_equal(mfs_inspect_buffer("p.gmf", b, len, 1, &sum, &err), -1);
    assert_int_equal(sum.n_violations, 1);
    if (!strstr(err.msg, "p.gmf: placement (the legacy .gmf loader keeps only NODE/MESH "
                         "translations"))
        fail_msg("error: %s", err.msg);
    assert_int_equal(mfs_inspect_buffer("p.mdl", b, len, 1, &sum, &err), 0);
    assert_int_equal(sum.n_warnings, 1);
    assert_int_equal(sum.n_violations, 0);
    char head[128];
    snprintf(head, sizeof head, "bounds follow it): 1 NODE/MESH matrices rotate/scale (first: "
             "offset %zu); 2 surfaces up to ", at);
    if (strncmp(sum.warnings[0], "placement (Leadwerks keeps only NODE/MESH translations", 54) ||
        !strstr(sum.warnings[0], head))
        fail_msg("warning: %s", sum.warnings[0]);
    for (int k = 0; k < 3; k++) {
        assert_true(fabsf(sum.min[k] - lo[k]) < 1e-6f);
        assert_true(fabsf(sum.max[k] - hi[k]) < 1e-6f);
    }
    free(b);
    mfs_scene_free(s);
}

/* ---- limits and edge cases ---- */

/* One node placing a triangle strip of n vertices: triangle i = (i,i+1,i+2). */
static mfs_scene *strip_mesh(uint32_t n)
{
    mfs_scene *s = mfs_scene_new();
    s->n_nodes = 1;
    s->nodes = calloc(1, sizeof(mfs_node));
    s->nodes[0].name = mfs_strdup("big");
    s->nodes[0].parent = -1;
    mfs_mat4_identity(&s->nodes[0].local);
    s->nodes[0].n_meshes = 1;
    s->nodes[0].meshes = calloc(1, sizeof(uint32_t));
    s->n_meshes = 1;
    s->meshes = calloc(1, sizeof(mfs_mesh));
    mfs_mesh *m = &s->meshes[0];
    m->name = mfs_strdup("big");
    m->material = -1;
    m->prim = MFS_PRIM_TRIANGLES;
    m->n_vertices = n;
    m->positions = calloc(n, sizeof *m->positions);
    for (uint32_t v = 0; v < n; v++) {
        m->positions[v][0] = (float)v;
        m->positions[v][1] = (float)(v % 2);
        m->positions[v][2] = 1.0f;
    }
    m->n_faces = n - 2;
    m->indices = malloc(sizeof(uint32_t) * 3 * (n - 2));
    for (uint32_t t = 0; t < n - 2; t++) {
        m->indices[3 * t] = t;
        m->indices[3 * t + 1] = t + 1;
        m->indices[3 * t + 2] = t + 2;
    }
    return s;
}

static void test_split_70000(void **state)
{
    (void)state;
    mfs_scene *s = strip_mesh(70000);
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *root = &f->kids[0];
    assert_int_equal(count_kids(root, SURF), 2);
    const blk *s0 = kid(root, SURF, 0), *s1 = kid(root, SURF, 1);
    assert_null(kid(s0, PROPS, 0)); /* no material: no material property */
    /* triangles 0..65532 use vertices 0..65534 (65535); triangle 65533
     * would be the 65536th vertex, so the second surface starts there with
     * vertices 65533..69999 (4467) and triangles 65533..69997 (4465) */
    const blk *p0 = array_of(s0, POS, 0), *p1 = array_of(s1, POS, 0);
    assert_int_equal(va_count(p0), 65535);
    assert_int_equal(ia_count(s0), 65533 * 3);
    assert_int_equal(va_count(p1), 4467);
    assert_int_equal(ia_count(s1), 4465 * 3);
    assert_true(va_f(p0, 65534, 0) == 65534.0f && va_f(p0, 0, 2) == -1.0f);
    assert_true(va_f(p1, 0, 0) == 65533.0f && va_f(p1, 4466, 0) == 69999.0f);
    /* re-based and reversed: (65533,65534,65535) -> (0,1,2) -> 2,1,0 */
    assert_int_equal(ia_get(s1, 0), 2);
    assert_int_equal(ia_get(s1, 1), 1);
    assert_int_equal(ia_get(s1, 2), 0);
    assert_int_equal(ia_get(s0, 3 * 65532), 65534);
    for (uint32_t i = 0; i < ia_count(s1); i++)
        assert_true(ia_get(s1, i) < 4467);
    /* every written triangle is its source triangle: positions agree */
    for (uint32_t t = 0; t < 4465; t += 97)
        assert_true(va_f(p1, ia_get(s1, 3 * t + 2), 0) == (float)(65533 + t));
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_65535_stays_one_surface(void **state)
{
    (void)state;
    mfs_scene *s = strip_mesh(65535);
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    assert_int_equal(count_kids(&f->kids[0], SURF), 1);
    assert_int_equal(va_count(array_of(kid(&f->kids[0], SURF, 0), POS, 0)), 65535);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_lines_and_points_skipped(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->meshes = realloc(s->meshes, sizeof(mfs_mesh) * 2);
    s->n_meshes = 2;
    mfs_mesh *l = &s->meshes[1];
    memset(l, 0, sizeof *l);
    l->name = mfs_strdup("wire");
    l->material = -1;
    l->prim = MFS_PRIM_LINES;
    l->n_vertices = 2;
    l->positions = calloc(2, sizeof *l->positions);
    l->n_faces = 1;
    l->indices = calloc(2, sizeof(uint32_t));
    l->indices[1] = 1;
    /* root places only the line mesh: it stays a MESH (always, as root) but
     * gets no surface */
    s->nodes[0].meshes = malloc(sizeof(uint32_t));
    s->nodes[0].meshes[0] = 1;
    s->nodes[0].n_meshes = 1;
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    assert_int_equal(count_kids(&f->kids[0], SURF), 0);
    assert_int_equal(count_kids(kid(&f->kids[0], MESH, 0), SURF), 1);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_names_sanitised_and_node_tag(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    free(s->nodes[1].name);
    s->nodes[1].name = mfs_strdup("a\r\nb");
    free(s->materials[0].textures[MFS_TEX_DIFFUSE]);
    s->materials[0].textures[MFS_TEX_DIFFUSE] = NULL;
    s->nodes[1].n_meshes = 0; /* places nothing now: a NODE */
    s->nodes[0].n_meshes = 1; /* the root places the cube */
    s->nodes[0].meshes = malloc(sizeof(uint32_t));
    s->nodes[0].meshes[0] = 0;
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *n = kid(&f->kids[0], NODE, 0);
    assert_non_null(n);
    assert_string_equal(prop(n, "name"), "a__b");
    assert_int_equal(kid(n, PROPS, 0)->size, 4 + 5 + 5);
    /* no diffuse texture: the material's own name */
    assert_string_equal(prop(kid(&f->kids[0], SURF, 0), "material"), "cube_mat.mat");
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

/* The material property for one cube material (NULL: no property). */
static void check_material(const char *name, const char *diffuse, const char *want)
{
    mfs_scene *s = fixture_cube();
    free(s->materials[0].name);
    s->materials[0].name = mfs_strdup(name);
    free(s->materials[0].textures[MFS_TEX_DIFFUSE]);
    s->materials[0].textures[MFS_TEX_DIFFUSE] = mfs_strdup(diffuse);
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    const blk *surf = kid(kid(&f->kids[0], MESH, 0), SURF, 0);
    if (want) {
        assert_non_null(prop(surf, "material"));
        assert_string_equal(prop(surf, "material"), want);
        assert_int_equal(surf->nkids, 5);
    } else {
        assert_null(kid(surf, PROPS, 0));
        assert_int_equal(surf->nkids, 4);
    }
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_material_values(void **state)
{
    (void)state;
    check_material("cube_mat", "C:\\art\\Wood.Grain.PNG", "Wood.Grain.mat");
    check_material("cube_mat", "wood", "wood.mat");
    check_material("cube_mat", "*0", "cube_mat.mat");   /* embedded: use the name */
    check_material("Metal.MAT", NULL, "Metal.mat");      /* no doubled extension */
    check_material("", "*1", NULL);
    check_material("", "dir/", NULL);
}

static void test_too_many_bones(void **state)
{
    (void)state;
    mfs_scene *s = strip_mesh(3);
    const uint32_t nb = 300;
    s->n_nodes = 1 + nb;
    s->nodes = realloc(s->nodes, sizeof(mfs_node) * s->n_nodes);
    mfs_mesh *m = &s->meshes[0];
    m->n_bones = nb;
    m->bones = calloc(nb, sizeof(mfs_bone));
    for (uint32_t i = 1; i <= nb; i++) {
        mfs_node *n = &s->nodes[i];
        memset(n, 0, sizeof *n);
        char name[16];
        snprintf(name, sizeof name, "b%u", i);
        n->name = mfs_strdup(name);
        mfs_mat4_identity(&n->local);
        add_child_node(s, i - 1, i);
        m->bones[i - 1].name = mfs_strdup(name);
        m->bones[i - 1].node = (int32_t)i;
        mfs_mat4_identity(&m->bones[i - 1].offset);
    }
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_scene_validate(s, &err), 0);
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink k;
    mfs_sink_init_mem(&k);
    assert_int_equal(mfs_write_gmf(s, NULL, &o, &k, &err), -1);
    assert_non_null(strstr(err.msg, "300 bones"));
    assert_non_null(strstr(err.msg, "256"));
    mfs_sink_free(&k);
    mfs_scene_free(s);
}

static mfs_bone *add_bone(mfs_mesh *m, const char *name, int32_t node, uint32_t v, float w)
{
    m->bones = realloc(m->bones, sizeof(mfs_bone) * (m->n_bones + 1));
    mfs_bone *bo = &m->bones[m->n_bones++];
    memset(bo, 0, sizeof *bo);
    bo->name = mfs_strdup(name);
    bo->node = node;
    mfs_mat4_identity(&bo->offset);
    bo->n_weights = 1;
    bo->weights = malloc(sizeof(mfs_weight));
    bo->weights[0] = (mfs_weight){v, w};
    return bo;
}

/* Five linked influences and an unlinked one: the unlinked is dropped, the
 * weakest linked one too, the rest renormalised; a bone listed twice for a
 * vertex accumulates. */
static void test_four_influences_kept(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    /* two more children of the root, appended (pre-order holds) */
    s->n_nodes = 6;
    s->nodes = realloc(s->nodes, sizeof(mfs_node) * 6);
    for (int i = 4; i < 6; i++) {
        memset(&s->nodes[i], 0, sizeof(mfs_node));
        s->nodes[i].name = mfs_strdup(i == 4 ? "extra4" : "extra5");
        mfs_mat4_identity(&s->nodes[i].local);
        add_child_node(s, 0, (uint32_t)i);
    }
    mfs_mesh *m = &s->meshes[0];
    add_bone(m, "root", 0, 0, 0.3f);
    add_bone(m, "strip", 1, 0, 0.1f);
    add_bone(m, "extra4", 4, 0, 0.05f);
    add_bone(m, "extra5", 5, 0, 0.2f);
    add_bone(m, "ghost", -1, 0, 0.9f);
    add_bone(m, "bone0", 2, 1, 0.5f);  /* v1: bone0 again */
    add_bone(m, "bone1", 3, 1, 0.5f);
    size_t len;
    uint8_t *b = write_scene(s, &len);
    blk *f = parse_file(b, len);
    /* The linked nodes' common ancestor is root, itself linked: every node
     * is a bone, numbered in pre-order: root 0, strip 1, bone0 2, bone1 3,
     * extra4 4, extra5 5.  The mesh's node is a bone, so the skeleton and
     * the skinned surface go up to the root MESH. */
    const blk *host = bone_by_id(f, 0)->parent;
    assert_int_equal(host->tag, MESH);
    assert_ptr_equal(host, &f->kids[0]);
    static const char *names[6] = {"root", "strip", "bone0", "bone1", "extra4", "extra5"};
    for (int32_t i = 0; i < 6; i++)
        assert_string_equal(prop(bone_by_id(f, i), "name"), names[i]);
    assert_null(bone_by_id(f, 6));
    const blk *surf = kid(host, SURF, 0);
    const blk *bi = array_of(surf, BIDX, 0), *bw = array_of(surf, BW, 0);
    /* v0: bone0 1.0, root 0.3, extra5 0.2, strip 0.1, extra4 0.05 (dropped);
     * sum 1.6 -> 159.4 47.8 31.9 15.9 truncated = 252, +3 to the first */
    const uint8_t i0[4] = {2, 0, 5, 1}, w0[4] = {162, 47, 31, 15};
    assert_memory_equal(va_b(bi, 0), i0, 4);
    assert_memory_equal(va_b(bw, 0), w0, 4);
    /* v1: bone0 1.0 + 0.5 merged, bone1 0.5 -> 191.25, 63.75 -> 192, 63 */
    const uint8_t i1[4] = {2, 3, 0, 0}, w1[4] = {192, 63, 0, 0};
    assert_memory_equal(va_b(bi, 1), i1, 4);
    assert_memory_equal(va_b(bw, 1), w1, 4);
    free_file(f);
    free(b);
    mfs_scene_free(s);
}

static void test_deterministic(void **state)
{
    (void)state;
    mfs_scene *(*make[3])(void) = {fixture_cube, fixture_skinned_strip, NULL};
    for (int i = 0; make[i]; i++) {
        mfs_scene *s = make[i]();
        size_t l1, l2;
        uint8_t *b1 = write_scene(s, &l1), *b2 = write_scene(s, &l2);
        assert_int_equal(l1, l2);
        assert_memory_equal(b1, b2, l1);
        free(b1);
        free(b2);
        mfs_scene_free(s);
    }
    mfs_scene *s = rig_scene(1, 1);
    size_t l1, l2;
    uint8_t *b1 = write_scene(s, &l1), *b2 = write_scene(s, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1);
    free(b2);
    mfs_scene_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cube_header_bytes),
        cmocka_unit_test(test_cube_tree),
        cmocka_unit_test(test_cube_frame),
        cmocka_unit_test(test_cube_all_arrays),
        cmocka_unit_test(test_strip_skin_arrays),
        cmocka_unit_test(test_strip_bones_and_keys),
        cmocka_unit_test(test_rig_skinning_matches),
        cmocka_unit_test(test_rig_mesh_under_bone),
        cmocka_unit_test(test_rigid_mesh_on_bone),
        cmocka_unit_test(test_placement_baked),
        cmocka_unit_test(test_placement_inspected),
        cmocka_unit_test(test_split_70000),
        cmocka_unit_test(test_65535_stays_one_surface),
        cmocka_unit_test(test_lines_and_points_skipped),
        cmocka_unit_test(test_names_sanitised_and_node_tag),
        cmocka_unit_test(test_material_values),
        cmocka_unit_test(test_too_many_bones),
        cmocka_unit_test(test_four_influences_kept),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

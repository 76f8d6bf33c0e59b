/* The importer's confinement and frame correction, on files the test
 * writes itself. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <assimp/postprocess.h>

#include "../../src/import/iofs.h"
#include "../../src/import/weld.h"
#include "meshfs/import.h"
#include "meshfs/worker.h"

static void test_normalise(void **state)
{
    char out[64];
    assert_int_equal(mfs_iofs_normalise("a/./b//c/../d", out, sizeof out), 0);
    assert_string_equal(out, "a/b/d");
    assert_int_equal(mfs_iofs_normalise("a\\b\\tex.png", out, sizeof out), 0);
    assert_string_equal(out, "a/b/tex.png");
    assert_int_equal(mfs_iofs_normalise("sub/../model.obj", out, sizeof out), 0);
    assert_string_equal(out, "model.obj");
    assert_int_equal(mfs_iofs_normalise("../x", out, sizeof out), -1);
    assert_int_equal(mfs_iofs_normalise("a/../../x", out, sizeof out), -1);
    assert_int_equal(mfs_iofs_normalise("/etc/passwd", out, sizeof out), -1);
    assert_int_equal(mfs_iofs_normalise("", out, sizeof out), -1);
    assert_int_equal(mfs_iofs_normalise("./.", out, sizeof out), -1);
    assert_int_equal(mfs_iofs_normalise("averyveryverylongname/x", out, 8), -1);
}

/* The model's path is the host's: a '\\' in it is a character; only what
 * the parsers compose from it for references is read Windows-style, and
 * relative to the model's real folder (docs/security.md, S2). */
static void test_model_path_is_opaque(void **state)
{
    (void)state;
    assert_true(mfs_iofs_model_path_ok("drop/..\\a\\private.obj"));
    assert_true(mfs_iofs_model_path_ok("..\\x.obj"));
    assert_true(mfs_iofs_model_path_ok("a/b/m.obj"));
    assert_false(mfs_iofs_model_path_ok("a/../m.obj"));
    assert_false(mfs_iofs_model_path_ok("./m.obj"));
    assert_false(mfs_iofs_model_path_ok("a//m.obj"));
    assert_false(mfs_iofs_model_path_ok("/etc/passwd"));
    assert_false(mfs_iofs_model_path_ok("a/"));
    assert_false(mfs_iofs_model_path_ok(""));

    mfs_iofs fs;
    memset(&fs, 0, sizeof fs);
    mfs_err err;
    char out[256];
    assert_int_equal(mfs_iofs_set_model(&fs, "a/..", &err), -1);
    assert_int_equal(mfs_iofs_set_model(&fs, "drop/..\\a\\private.obj", &err), 0);
    /* the model itself: exactly */
    assert_int_equal(mfs_iofs_resolve(&fs, "drop/..\\a\\private.obj", out, sizeof out), 0);
    assert_string_equal(out, "drop/..\\a\\private.obj");
    /* assimp's and cgltf's composition (folder up to the last '\\' or '/'),
     * fast_obj's with the separator kept: all in the real folder */
    assert_int_equal(mfs_iofs_resolve(&fs, "drop/..\\a/private.mtl", out, sizeof out), 0);
    assert_string_equal(out, "drop/private.mtl");
    assert_int_equal(mfs_iofs_resolve(&fs, "drop/..\\a\\secret.bin", out, sizeof out), 0);
    assert_string_equal(out, "drop/secret.bin");
    /* fast_obj's: the joined path's every '\\' made '/' */
    assert_int_equal(mfs_iofs_resolve(&fs, "drop/../a/private.mtl", out, sizeof out), 0);
    assert_string_equal(out, "drop/private.mtl");
    /* a reference's own '\\' is a separator; it still may not leave the root */
    assert_int_equal(mfs_iofs_resolve(&fs, "drop/..\\a/sub\\t.png", out, sizeof out), 0);
    assert_string_equal(out, "drop/sub/t.png");
    assert_int_equal(mfs_iofs_resolve(&fs, "drop/..\\a/..\\..\\x", out, sizeof out), -1);
    /* at the root */
    assert_int_equal(mfs_iofs_set_model(&fs, "..\\a\\m.gltf", &err), 0);
    assert_int_equal(mfs_iofs_resolve(&fs, "..\\a\\m.bin", out, sizeof out), 0);
    assert_string_equal(out, "m.bin");
    /* a plain model: references as before */
    assert_int_equal(mfs_iofs_set_model(&fs, "d/m.gltf", &err), 0);
    assert_int_equal(mfs_iofs_resolve(&fs, "d/..\\a\\s.txt", out, sizeof out), 0);
    assert_string_equal(out, "a/s.txt");
    assert_int_equal(mfs_iofs_resolve(&fs, "d/m.gltf", out, sizeof out), 0);
    assert_string_equal(out, "d/m.gltf");
}

static char root[] = "/tmp/meshfs-import-XXXXXX";

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    assert_non_null(mkdtemp(root));
    char p[256];
    snprintf(p, sizeof p, "%s/sub", root);
    mkdir(p, 0755);
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd);
}

/* A triangle OBJ with a material library: both files are dependencies,
 * model first, with their sizes. */
static void test_deps_recorded(void **state)
{
    put("sub/tri.mtl", "newmtl m\nKd 1 0 0\n");
    put("sub/tri.obj", "mtllib tri.mtl\nusemtl m\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    mfs_scene *s;
    mfs_deps deps = {0};
    mfs_err err;
    assert_int_equal(mfs_import(root, "sub/tri.obj", NULL, &s, &deps, &err), 0);
    assert_int_equal(deps.n, 5);
    assert_string_equal(deps.v[0].path, "sub/tri.obj");
    assert_string_equal(deps.v[1].path, "sub/tri.mtl");
    assert_int_equal(deps.v[1].size, 18);
    /* the settings files it may have (docs/settings.md), absent: inputs
     * too, so one that appears makes the views again */
    const char *settings[] = {".meshfs", "sub/.meshfs", "sub/tri.obj.meshfs"};
    for (int i = 0; i < 3; i++) {
        assert_string_equal(deps.v[2 + i].path, settings[i]);
        assert_int_equal(deps.v[2 + i].kind, MFS_DEP_ABSENT);
    }
    assert_int_equal(s->n_meshes, 1);
    assert_int_equal(s->meshes[0].n_faces, 1);
    assert_non_null(s->meshes[0].normals); /* generated */
    mfs_scene_free(s);
    mfs_deps_free(&deps);
}

static void test_escape_refused(void **state)
{
    put("sub/esc.obj", "mtllib ../../../../../../etc/passwd\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    mfs_scene *s;
    mfs_deps deps = {0};
    mfs_err err;
    assert_int_equal(mfs_import(root, "sub/esc.obj", NULL, &s, &deps, &err), -1);
    assert_non_null(strstr(err.msg, "refused to open"));
    assert_non_null(strstr(err.msg, "etc/passwd"));
    mfs_deps_free(&deps);
    char p[256];
    snprintf(p, sizeof p, "%s/sub/link.mtl", root);
    assert_int_equal(symlink("/etc/hostname", p), 0);
    put("sub/link.obj", "mtllib link.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    assert_int_equal(mfs_import(root, "sub/link.obj", NULL, &s, &deps, &err), -1);
    assert_non_null(strstr(err.msg, "refused to open 'sub/link.mtl'"));
    mfs_deps_free(&deps);
    assert_int_equal(mfs_import(root, "../x.obj", NULL, &s, &deps, &err), -1);
    assert_non_null(strstr(err.msg, "not a path beneath the source root"));
}

/* A model assimp rejects fails with its reason, inputs known so far. */
static void test_bad_model(void **state)
{
    put("sub/bad.obj", "v 0 0 0\nf 1 2 3\n");
    mfs_scene *s;
    mfs_deps deps = {0};
    mfs_err err;
    assert_int_equal(mfs_import(root, "sub/bad.obj", NULL, &s, &deps, &err), -1);
    assert_non_null(strstr(err.msg, "import failed"));
    assert_int_equal(deps.n, 4); /* known as far as it got: the model, its settings' places */
    assert_string_equal(deps.v[0].path, "sub/bad.obj");
    assert_int_equal(deps.model_unopened, 0); /* its bytes are to blame */
    mfs_deps_free(&deps);
}

/* A model that could not be opened at all says nothing about its bytes:
 * the flag tells the parent not to remember the failure, and survives the
 * worker's report. */
static void test_model_unopened(void **state)
{
    mfs_scene *s;
    mfs_deps deps = {0};
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_import(root, "sub/gone.obj", NULL, &s, &deps, &err), -1);
    assert_int_equal(deps.n, 0);
    assert_int_equal(deps.model_unopened, 1);

    mfs_report rep = {0}, back = {0};
    rep.deps = deps;
    snprintf(rep.error, sizeof rep.error, "%s", err.msg);
    uint8_t *buf;
    size_t len;
    assert_int_equal(mfs_report_encode(&rep, &buf, &len), 0);
    assert_int_equal(mfs_report_decode(buf, len, &back, &err), 0);
    assert_int_equal(back.ok, 0);
    assert_int_equal(back.deps.model_unopened, 1);
    free(buf);
    mfs_report_free(&back);
    mfs_deps_free(&deps);
}

/* A dependency's path crosses the report byte for byte: the host stats
 * that very file and compares the first with the model's.  A newline made
 * a space named another file (and failed the model since convstore.c
 * refuses a report whose first input is not the model). */
static void test_dependency_paths_survive_the_report(void **state)
{
    (void)state;
    mfs_report rep = {0}, back = {0};
    mfs_dep d[2] = {{.path = "new\nline.stl", .size = 3}, {.path = "x\x01\x7f\\y.png", .size = 1}};
    rep.ok = 1;
    rep.deps.v = d;
    rep.deps.n = 2;
    uint8_t *buf;
    size_t len;
    mfs_err err;
    assert_int_equal(mfs_report_encode(&rep, &buf, &len), 0);
    assert_int_equal(mfs_report_decode(buf, len, &back, &err), 0);
    assert_int_equal(back.deps.n, 2);
    assert_string_equal(back.deps.v[0].path, "new\nline.stl");
    assert_string_equal(back.deps.v[1].path, "x\x01\x7f\\y.png");
    mfs_report_free(&back);
    /* a NUL inside a path is no path: the report is refused */
    uint8_t *nul = memmem(buf, len, "new\nline", 8);
    assert_non_null(nul);
    nul[3] = '\0';
    assert_int_equal(mfs_report_decode(buf, len, &back, &err), -1);
    assert_non_null(strstr(err.msg, "NUL"));
    mfs_report_free(&back);
    free(buf);
}

/* ---- tangents: computed only when .gmf is written (docs/import.md) ---- */

/* Two triangles meeting along x = 0 with their UVs mirrored there: the two
 * shared corners have equal positions, normals and UVs, but the right
 * triangle's u grows along +X and the left one's along -X, so their
 * tangents are opposite. */
static const char mirror_obj[] = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv -1 0 0\n"
                                 "vt 0 0\nvt 1 0\nvt 0 1\n"
                                 "f 1/1 2/2 3/3\nf 1/1 3/3 4/2\n";

static mfs_scene *import_mirror(int tangents)
{
    put("sub/mirror.obj", mirror_obj);
    mfs_import_opts o = {.importer = MFS_IMPORTER_ASSIMP, .tangents = tangents};
    mfs_scene *s = NULL;
    mfs_deps deps = {0};
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_import(root, "sub/mirror.obj", &o, &s, &deps, &err), 0);
    mfs_deps_free(&deps);
    assert_int_equal(s->n_meshes, 1);
    return s;
}

static void test_tangents_on_request(void **state)
{
    mfs_import_opts o = {0};
    assert_int_equal(mfs_import_ai_flags(NULL) & aiProcess_CalcTangentSpace, 0);
    assert_int_equal(mfs_import_ai_flags(&o) & aiProcess_CalcTangentSpace, 0);
    o.tangents = 1;
    assert_int_equal(mfs_import_ai_flags(&o) & aiProcess_CalcTangentSpace, aiProcess_CalcTangentSpace);
    /* the rest of the set does not depend on it */
    o.tangents = 0;
    mfs_import_opts t = {.tangents = 1};
    assert_int_equal(mfs_import_ai_flags(&o) | aiProcess_CalcTangentSpace, mfs_import_ai_flags(&t));

    /* without: no tangents, and the shared corners are joined */
    mfs_scene *s = import_mirror(0);
    const mfs_mesh *m = &s->meshes[0];
    assert_null(m->tangents);
    assert_null(m->bitangents);
    assert_int_equal(m->n_vertices, 4);
    assert_int_equal(m->n_faces, 2);
    mfs_scene_free(s);

    /* with: what .gmf always got, one tangent per triangle side, and the
     * shared corners kept apart by them (the reason every view's key says
     * whether tangents were computed) */
    s = import_mirror(1);
    m = &s->meshes[0];
    assert_non_null(m->tangents);
    assert_non_null(m->bitangents);
    assert_int_equal(m->n_vertices, 6);
    for (uint32_t f = 0; f < m->n_faces; f++) {
        const uint32_t *ix = &m->indices[3 * f];
        float side = 0; /* +1: the right triangle, -1: the left */
        for (int k = 0; k < 3; k++)
            side += m->positions[ix[k]][0];
        assert_true(fabsf(side) > 0.5f);
        for (int k = 0; k < 3; k++) {
            const float *tg = m->tangents[ix[k]], *bt = m->bitangents[ix[k]];
            assert_true(fabsf(tg[0] - (side > 0 ? 1.0f : -1.0f)) < 1e-5f);
            assert_true(fabsf(tg[1]) < 1e-5f && fabsf(tg[2]) < 1e-5f);
            assert_true(fabsf(bt[1] - 1.0f) < 1e-5f); /* v grows along +Y on both */
        }
    }
    mfs_scene_free(s);
}

/* ---- welding: meshoptimizer on every path, not JoinIdenticalVertices ---- */

static char last_route[MFS_ERR_MAX]; /* import_rel's import's mfs_deps.route */

static mfs_scene *import_rel(const char *rel, mfs_importer importer)
{
    mfs_import_opts o = {.importer = importer};
    mfs_scene *s = NULL;
    mfs_deps deps = {0};
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_import(root, rel, &o, &s, &deps, &err), 0);
    snprintf(last_route, sizeof last_route, "%s", deps.route);
    mfs_deps_free(&deps);
    return s;
}

static void assert_indices(const mfs_mesh *m, const uint32_t *want, size_t n)
{
    assert_int_equal((size_t)m->n_faces * m->prim, n);
    for (size_t i = 0; i < n; i++)
        if (m->indices[i] != want[i])
            fail_msg("index %zu is %u, expected %u", i, m->indices[i], want[i]);
}

static void test_flags_no_join(void **state)
{
    mfs_import_opts t = {.tangents = 1};
    assert_int_equal(mfs_import_ai_flags(NULL) & aiProcess_JoinIdenticalVertices, 0);
    assert_int_equal(mfs_import_ai_flags(&t) & aiProcess_JoinIdenticalVertices, 0);
}

/* OBJ through assimp (one vertex per face corner as assimp reads it): a
 * quad of two triangles whose shared corners are the same v/vt/vn welds to
 * 4 vertices; a third triangle that reuses a position with another UV keeps
 * that corner apart.  Vertices in first-occurrence order, so the indices
 * are known exactly. */
static const char weld_obj[] = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
                               "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 0.5 0.5\n"
                               "vn 0 0 1\n"
                               "f 1/1/1 2/2/1 3/3/1\nf 1/1/1 3/3/1 4/4/1\nf 4/4/1 3/5/1 1/1/1\n";

static void test_weld_obj_assimp(void **state)
{
    put("sub/weld.obj", weld_obj);
    mfs_scene *s = import_rel("sub/weld.obj", MFS_IMPORTER_ASSIMP);
    assert_int_equal(s->n_meshes, 1);
    const mfs_mesh *m = &s->meshes[0];
    assert_int_equal(m->n_faces, 3);
    assert_int_equal(m->n_vertices, 5);
    static const uint32_t want[] = {0, 1, 2, 0, 2, 3, 3, 4, 0};
    assert_indices(m, want, 9);
    /* vertex 4 is corner 3 again, with the odd UV */
    assert_memory_equal(m->positions[4], m->positions[2], sizeof m->positions[2]);
    assert_true(fabsf(m->uv[0][4][0] - 0.5f) < 1e-6f && fabsf(m->uv[0][2][0] - 1.0f) < 1e-6f);
    mfs_scene *n = import_rel("sub/weld.obj", MFS_IMPORTER_AUTO);
    /* the native path welds the same way (when built with fast_obj) */
    assert_int_equal(n->meshes[0].n_vertices, 5);
    assert_indices(&n->meshes[0], want, 9);
    mfs_scene_free(n);
    mfs_scene_free(s);
}

/* ASCII STL: every facet has its own three corners.  Two facets with the
 * same normal share an edge (4 vertices); a third, folded up, shares the
 * positions of that edge but not the normal (3 more vertices); a facet whose
 * normal differs from the first only in the sign of a zero is the same. */
static const char weld_stl[] =
    "solid w\n"
    "facet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 1 1 0\nendloop\nendfacet\n"
    "facet normal -0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 1 0\nvertex 0 1 0\nendloop\nendfacet\n"
    "facet normal 0 -1 0\nouter loop\nvertex 0 0 0\nvertex 0 0 1\nvertex 1 0 0\nendloop\nendfacet\n"
    "endsolid w\n";

static void test_weld_stl(void **state)
{
    put("sub/weld.stl", weld_stl);
    mfs_scene *s = import_rel("sub/weld.stl", MFS_IMPORTER_AUTO);
    assert_int_equal(s->n_meshes, 1);
    const mfs_mesh *m = &s->meshes[0];
    assert_int_equal(m->n_faces, 3);
    assert_int_equal(m->n_vertices, 7);
    static const uint32_t want[] = {0, 1, 2, 0, 2, 3, 4, 5, 6};
    assert_indices(m, want, 9);
    assert_memory_equal(m->positions[4], m->positions[0], sizeof m->positions[0]);
    assert_true(m->normals[4][1] < -0.99f && m->normals[0][2] > 0.99f);
    mfs_scene_free(s);
}

/* PLY with per-vertex colours and the same corner written twice: identical
 * copies weld, a copy that differs only in colour stays apart (assimp
 * 5.2.5's JoinIdenticalVertices would merge it), and the unused vertex 5 is
 * dropped. */
static const char weld_ply[] = "ply\nformat ascii 1.0\nelement vertex 6\n"
                               "property float x\nproperty float y\nproperty float z\n"
                               "property uchar red\nproperty uchar green\nproperty uchar blue\n"
                               "element face 2\nproperty list uchar int vertex_indices\nend_header\n"
                               "0 0 0 255 0 0\n1 0 0 255 0 0\n0 1 0 255 0 0\n"
                               "1 0 0 255 0 0\n0 1 0 0 255 0\n9 9 9 0 0 0\n"
                               "3 0 1 2\n3 3 1 4\n";

static void test_weld_ply_colours(void **state)
{
    put("sub/weld.ply", weld_ply);
    for (int run = 0; run < 2; run++) {
        mfs_scene *s = import_rel("sub/weld.ply", MFS_IMPORTER_AUTO);
        assert_int_equal(s->n_meshes, 1);
        const mfs_mesh *m = &s->meshes[0];
        assert_non_null(m->colors);
        assert_int_equal(m->n_faces, 2);
        assert_int_equal(m->n_vertices, 4);
        static const uint32_t want[] = {0, 1, 2, 1, 1, 3};
        assert_indices(m, want, 6);
        assert_true(m->colors[3][1] > 0.99f && m->colors[3][0] < 0.01f);
        mfs_scene_free(s);
    }
}

/* Two imports of one file give the same scene, bit for bit. */
static void test_weld_deterministic(void **state)
{
    put("sub/weld.obj", weld_obj);
    mfs_scene *a = import_rel("sub/weld.obj", MFS_IMPORTER_ASSIMP);
    mfs_scene *b = import_rel("sub/weld.obj", MFS_IMPORTER_ASSIMP);
    const mfs_mesh *x = &a->meshes[0], *y = &b->meshes[0];
    assert_int_equal(x->n_vertices, y->n_vertices);
    assert_memory_equal(x->positions, y->positions, sizeof *x->positions * x->n_vertices);
    assert_memory_equal(x->normals, y->normals, sizeof *x->normals * x->n_vertices);
    assert_memory_equal(x->uv[0], y->uv[0], sizeof *x->uv[0] * x->n_vertices);
    assert_memory_equal(x->indices, y->indices, sizeof *x->indices * 3 * x->n_faces);
    mfs_scene_free(a);
    mfs_scene_free(b);
}

/* mfs_weld_mesh on a hand-built skinned mesh: vertices 0 and 3 are equal
 * (3 has -0.0 where 0 has 0.0) with equal weights and weld; vertex 2 has a
 * -0.0 of its own, which it keeps; vertex 4 equals
 * vertex 1 in every attribute but its bone weights and stays apart; vertex
 * 5 is unused and dropped.  Bone 0's duplicate weight for the welded vertex
 * is kept once. */
static void test_weld_bone_weights(void **state)
{
    mfs_mesh m = {0};
    m.prim = MFS_PRIM_TRIANGLES;
    m.n_vertices = 6;
    m.positions = calloc(6, sizeof *m.positions);
    m.normals = calloc(6, sizeof *m.normals);
    float p[6][3] = {{0, 0, 0}, {1, 0, 0}, {-0.0f, 1, 0}, {-0.0f, 0, 0}, {1, 0, 0}, {5, 5, 5}};
    memcpy(m.positions, p, sizeof p);
    for (int i = 0; i < 6; i++)
        m.normals[i][2] = 1;
    m.n_faces = 2;
    m.indices = malloc(6 * sizeof *m.indices);
    uint32_t ix[6] = {0, 1, 2, 3, 4, 2};
    memcpy(m.indices, ix, sizeof ix);
    m.n_bones = 2;
    m.bones = calloc(2, sizeof *m.bones);
    m.bones[0].weights = calloc(4, sizeof(mfs_weight));
    m.bones[0].n_weights = 4;
    m.bones[0].weights[0] = (mfs_weight){0, 1.0f};
    m.bones[0].weights[1] = (mfs_weight){1, 1.0f};
    m.bones[0].weights[2] = (mfs_weight){2, 1.0f};
    m.bones[0].weights[3] = (mfs_weight){3, 1.0f};
    m.bones[1].weights = calloc(1, sizeof(mfs_weight));
    m.bones[1].n_weights = 1;
    m.bones[1].weights[0] = (mfs_weight){4, 1.0f};
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_weld_mesh(&m, &err), 0);
    assert_int_equal(m.n_vertices, 4);
    static const uint32_t want[] = {0, 1, 2, 0, 3, 2};
    assert_indices(&m, want, 6);
    /* the survivor keeps its own bits: +0 where the first copy had +0, and
     * a vertex that merged with nothing keeps its -0 */
    assert_false(signbit(m.positions[0][0]));
    assert_true(signbit(m.positions[2][0]));
    assert_int_equal(m.bones[0].n_weights, 3);
    assert_int_equal(m.bones[0].weights[0].vertex, 0);
    assert_int_equal(m.bones[0].weights[1].vertex, 1);
    assert_int_equal(m.bones[0].weights[2].vertex, 2);
    assert_int_equal(m.bones[1].n_weights, 1);
    assert_int_equal(m.bones[1].weights[0].vertex, 3);
    free(m.positions);
    free(m.normals);
    free(m.indices);
    free(m.bones[0].weights);
    free(m.bones[1].weights);
    free(m.bones);
}

/* A face naming a vertex the mesh does not have is refused by name, not
 * followed into memory. */
static void test_weld_index_out_of_range(void **state)
{
    float p[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    uint32_t ix[3] = {0, 1, 5};
    char name[] = "bad";
    mfs_mesh m = {.name = name, .prim = MFS_PRIM_TRIANGLES, .n_vertices = 3, .n_faces = 1};
    m.positions = malloc(sizeof p);
    m.indices = malloc(sizeof ix);
    memcpy(m.positions, p, sizeof p);
    memcpy(m.indices, ix, sizeof ix);
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_weld_mesh(&m, &err), -1);
    assert_string_equal(err.msg, "mesh 'bad': vertex index 5 out of range (3 vertices)");
    assert_int_equal(m.n_vertices, 3);
    free(m.positions);
    free(m.indices);
}

/* glTF (issue 18): an indexed primitive keeps its vertices as the file
 * gives them, so a deliberately duplicated vertex (3 is 1 again, same
 * generated normal) stays, indices as written; only the unused vertex 5
 * goes.  An unindexed primitive (one vertex per corner) is welded.  The
 * assimp path, which cannot tell the two apart, welds both. */
static const char weld_gltf[] =
    "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[0]}],"
    "\"nodes\":[{\"mesh\":0}],\"meshes\":[{\"name\":\"w\",\"primitives\":["
    "{\"attributes\":{\"POSITION\":0},\"indices\":1},{\"attributes\":{\"POSITION\":2}}]}],"
    "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":6,\"type\":\"VEC3\","
    "\"min\":[0,0,0],\"max\":[5,5,5]},"
    "{\"bufferView\":1,\"componentType\":5123,\"count\":6,\"type\":\"SCALAR\"},"
    "{\"bufferView\":2,\"componentType\":5126,\"count\":6,\"type\":\"VEC3\",\"min\":[0,0,0],\"max\":[1,1,0]}],"
    "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":72},"
    "{\"buffer\":0,\"byteOffset\":72,\"byteLength\":12},{\"buffer\":0,\"byteOffset\":84,\"byteLength\":72}],"
    "\"buffers\":[{\"byteLength\":156,\"uri\":\"data:application/octet-stream;base64,"
    "AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAACAPwAAAAAAAAAAAACAPwAAgD8AAAAAAACgQAAAoEAAAKBA"
    "AAABAAIAAwAEAAIAAAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAACAPwAAAAAAAAAAAACAPwAAgD8AAAAA"
    "AAAAAAAAgD8AAAAA\"}]}";

static void test_weld_gltf_indexed_kept(void **state)
{
    put("sub/weld.gltf", weld_gltf);
    static const uint32_t kept[] = {0, 1, 2, 3, 4, 2}, welded[] = {0, 1, 2, 1, 3, 2};
    mfs_scene *s = import_rel("sub/weld.gltf", MFS_IMPORTER_AUTO);
    assert_string_equal(last_route, "native gltf");
    assert_int_equal(s->n_meshes, 2);
    const mfs_mesh *m = &s->meshes[0];
    assert_string_equal(m->name, "w-0");
    assert_int_equal(m->n_vertices, 5);
    assert_indices(m, kept, 6);
    assert_memory_equal(m->positions[3], m->positions[1], sizeof m->positions[1]);
    assert_memory_equal(m->normals[3], m->normals[1], sizeof m->normals[1]);
    assert_true(m->positions[4][0] == 1 && m->positions[4][1] == 1); /* not the unused (5,5,5) */
    m = &s->meshes[1];
    assert_string_equal(m->name, "w-1");
    assert_int_equal(m->n_vertices, 4);
    assert_indices(m, welded, 6);
    mfs_scene_free(s);
    s = import_rel("sub/weld.gltf", MFS_IMPORTER_ASSIMP);
    assert_string_equal(last_route, "assimp");
    assert_int_equal(s->n_meshes, 2);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(s->meshes[i].n_vertices, 4);
        assert_indices(&s->meshes[i], welded, 6);
    }
    mfs_scene_free(s);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void run_job(unsigned formats, const char *outdir, mfs_report *rep)
{
    mfs_job job = {.root = root, .model = "sub/mirror.obj", .formats = formats, .outdir = outdir};
    mfs_options_default(&job.opts);
    job.opts.importer = MFS_IMPORTER_ASSIMP;
    mfs_limits_default(&job.limits);
    assert_int_equal(mfs_job_run(&job, rep), 0);
    assert_int_equal(rep->ok, 1);
}

static uint8_t *view_of(const char *dir, const char *name, size_t *n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return slurp(path, n);
}

static void assert_same_view(const char *a, const char *b, const char *name)
{
    size_t na, nb;
    uint8_t *va = view_of(a, name, &na), *vb = view_of(b, name, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(va, vb, na);
    free(va);
    free(vb);
}

/* A job imports alike whatever it writes (docs/cache.md, "Keys"): tangents
 * always (they keep vertices apart, so they decide every view's bytes), so
 * .fmd is the same with or without .gmf in the run, and .gmf the same
 * alone or with others; the report's vertex count is the imported
 * scene's. */
static void test_job_imports_alike_whatever_it_writes(void **state)
{
    put("sub/mirror.obj", mirror_obj);
    char a[300], b[300], c[300];
    snprintf(a, sizeof a, "%s/job-a", root);
    snprintf(b, sizeof b, "%s/job-b", root);
    snprintf(c, sizeof c, "%s/job-c", root);
    mkdir(a, 0755);
    mkdir(b, 0755);
    mkdir(c, 0755);
    mfs_report rep;
    run_job(1u << MFS_FMT_FMD | 1u << MFS_FMT_VRT | 1u << MFS_FMT_DEM, a, &rep);
    assert_int_equal(rep.stats.vertices, 6); /* kept apart by their tangents */
    assert_int_equal(rep.fmt[MFS_FMT_FMD].ok, 1);
    mfs_report_free(&rep);
    run_job(1u << MFS_FMT_FMD | 1u << MFS_FMT_GMF, b, &rep);
    assert_int_equal(rep.stats.vertices, 6);
    assert_int_equal(rep.fmt[MFS_FMT_GMF].ok, 1);
    mfs_report_free(&rep);
    run_job(1u << MFS_FMT_GMF, c, &rep);
    assert_int_equal(rep.stats.vertices, 6);
    mfs_report_free(&rep);
    assert_same_view(a, b, "fmd");
    assert_same_view(b, c, "gmf");
}

/* The texture is searched for in every job and decoded only for .tex: a
 * job without .tex records the very inputs a job with it does (the image
 * file among them), so the model's inputs do not depend on the formats. */
static void test_job_texture_inputs_whatever_it_writes(void **state)
{
    put("sub/red.mtl", "newmtl m\nKd 1 1 1\nmap_Kd red.ppm\n");
    put("sub/red.obj", "mtllib red.mtl\nusemtl m\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\n"
                       "vt 0 1\nf 1/1 2/2 3/3\n");
    put("sub/red.ppm", "P6\n1 1\n255\n\xff\x01\x01");
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/job-ta", root);
    snprintf(b, sizeof b, "%s/job-tb", root);
    mkdir(a, 0755);
    mkdir(b, 0755);
    mfs_job job = {.root = root, .model = "sub/red.obj", .formats = 1u << MFS_FMT_GMF, .outdir = a};
    mfs_options_default(&job.opts);
    mfs_limits_default(&job.limits);
    mfs_report ra, rb;
    assert_int_equal(mfs_job_run(&job, &ra), 0);
    assert_int_equal(ra.ok, 1);
    job.formats = 1u << MFS_FMT_TEX | 1u << MFS_FMT_GMF;
    job.outdir = b;
    assert_int_equal(mfs_job_run(&job, &rb), 0);
    assert_int_equal(rb.ok, 1);
    assert_int_equal(rb.fmt[MFS_FMT_TEX].ok, 1);
    assert_string_equal(rb.fmt[MFS_FMT_TEX].note, ""); /* decoded: no fallback */
    assert_int_equal(ra.deps.n, rb.deps.n);
    int found = 0;
    for (uint32_t i = 0; i < ra.deps.n; i++) {
        assert_string_equal(ra.deps.v[i].path, rb.deps.v[i].path);
        assert_int_equal(ra.deps.v[i].kind, rb.deps.v[i].kind);
        assert_int_equal(ra.deps.v[i].size, rb.deps.v[i].size);
        assert_memory_equal(ra.deps.v[i].hash, rb.deps.v[i].hash, 16);
        found += !strcmp(ra.deps.v[i].path, "sub/red.ppm") && ra.deps.v[i].kind == MFS_DEP_FILE;
    }
    assert_int_equal(found, 1);
    assert_same_view(a, b, "gmf");
    mfs_report_free(&ra);
    mfs_report_free(&rb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalise),
        cmocka_unit_test(test_model_path_is_opaque),
        cmocka_unit_test(test_dependency_paths_survive_the_report),
        cmocka_unit_test(test_deps_recorded),
        cmocka_unit_test(test_escape_refused),
        cmocka_unit_test(test_bad_model),
        cmocka_unit_test(test_model_unopened),
        cmocka_unit_test(test_tangents_on_request),
        cmocka_unit_test(test_job_imports_alike_whatever_it_writes),
        cmocka_unit_test(test_job_texture_inputs_whatever_it_writes),
        cmocka_unit_test(test_flags_no_join),
        cmocka_unit_test(test_weld_obj_assimp),
        cmocka_unit_test(test_weld_stl),
        cmocka_unit_test(test_weld_ply_colours),
        cmocka_unit_test(test_weld_deterministic),
        cmocka_unit_test(test_weld_bone_weights),
        cmocka_unit_test(test_weld_index_out_of_range),
        cmocka_unit_test(test_weld_gltf_indexed_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

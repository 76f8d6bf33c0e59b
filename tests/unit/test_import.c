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
    assert_int_equal(deps.n, 2);
    assert_string_equal(deps.v[0].path, "sub/tri.obj");
    assert_string_equal(deps.v[1].path, "sub/tri.mtl");
    assert_int_equal(deps.v[1].size, 18);
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
    assert_non_null(strstr(err.msg, "leaves the source root"));
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
    assert_int_equal(deps.n, 1); /* known as far as it got */
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

/* The worker's job asks for tangents exactly when it writes .gmf: the
 * report's vertex count is the imported scene's. */
static void test_job_tangents_only_with_gmf(void **state)
{
    put("sub/mirror.obj", mirror_obj);
    char a[300], b[300], path[400];
    snprintf(a, sizeof a, "%s/job-a", root);
    snprintf(b, sizeof b, "%s/job-b", root);
    mkdir(a, 0755);
    mkdir(b, 0755);
    mfs_report rep;
    run_job(1u << MFS_FMT_FMD | 1u << MFS_FMT_VRT | 1u << MFS_FMT_DEM, a, &rep);
    assert_int_equal(rep.stats.vertices, 4); /* joined: no tangents */
    assert_int_equal(rep.fmt[MFS_FMT_FMD].ok, 1);
    mfs_report_free(&rep);
    run_job(1u << MFS_FMT_FMD | 1u << MFS_FMT_GMF, a, &rep);
    assert_int_equal(rep.stats.vertices, 6); /* kept apart by their tangents */
    assert_int_equal(rep.fmt[MFS_FMT_GMF].ok, 1);
    mfs_report_free(&rep);
    /* .gmf is cut from the same import whatever else the run writes */
    run_job(1u << MFS_FMT_GMF, b, &rep);
    assert_int_equal(rep.stats.vertices, 6);
    mfs_report_free(&rep);
    size_t na, nb;
    snprintf(path, sizeof path, "%s/gmf", a);
    uint8_t *ga = slurp(path, &na);
    snprintf(path, sizeof path, "%s/gmf", b);
    uint8_t *gb = slurp(path, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(ga, gb, na);
    free(ga);
    free(gb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalise),
        cmocka_unit_test(test_deps_recorded),
        cmocka_unit_test(test_escape_refused),
        cmocka_unit_test(test_bad_model),
        cmocka_unit_test(test_model_unopened),
        cmocka_unit_test(test_tangents_on_request),
        cmocka_unit_test(test_job_tangents_only_with_gmf),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

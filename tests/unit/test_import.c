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

#include "../../src/import/iofs.h"
#include "meshfs/import.h"

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
    mfs_deps_free(&deps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalise),
        cmocka_unit_test(test_deps_recorded),
        cmocka_unit_test(test_escape_refused),
        cmocka_unit_test(test_bad_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* meshfs/convert.h: worker output directories kept between runs.  A
 * directory comes back only when its run left each output absent or empty
 * (a regular file of ours, one link) and no worker subdirectory; anything
 * else is removed with what is in it, and the pool removes what it kept. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/convert.h"
#include "meshfs/formats.h"
#include "fixtures.h"

typedef struct env {
    char root[256];
    char tmpdir[300];
    mfs_cache *cache;
    mfs_jobdirs *pool;
} env;

static int setup(void **state)
{
    env *e = calloc(1, sizeof *e);
    snprintf(e->root, sizeof e->root, "/tmp/meshfs-jobdirs-XXXXXX");
    assert_non_null(mkdtemp(e->root));
    mfs_cache_config cc = {.dir = e->root};
    mfs_err err;
    assert_int_equal(mfs_cache_open(&cc, &e->cache, &err), 0);
    snprintf(e->tmpdir, sizeof e->tmpdir, "%s/tmp", mfs_cache_dir(e->cache));
    mkdir(e->tmpdir, 0700);
    e->pool = mfs_jobdirs_new(e->cache, e->tmpdir);
    assert_non_null(e->pool);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    mfs_jobdirs_free(e->pool);
    mfs_cache_close(e->cache);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->root);
    assert_int_equal(system(cmd), 0);
    free(e);
    return 0;
}

static int entries(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 0", dir);
    return system(cmd) == 0 ? 0 : 1;
}

static const unsigned VRT_GMF = (1u << MFS_FMT_VRT) | (1u << MFS_FMT_GMF);

static void test_emptied_outputs_keep_the_directory(void **state)
{
    env *e = *state;
    mfs_err err;
    mfs_jobdir *d = mfs_jobdirs_take(e->pool, NULL, &err);
    assert_non_null(d);
    char path[600];
    snprintf(path, sizeof path, "%s", mfs_jobdir_path(d));
    assert_int_equal(strncmp(path, e->tmpdir, strlen(e->tmpdir)), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* the filing emptied the run's outputs (keep_outputs): kept, and the
     * next take is the same directory with the same files */
    assert_int_equal(fixture_write(path, "vrt", ""), 0);
    assert_int_equal(fixture_write(path, "gmf", ""), 0);
    mfs_jobdirs_give(e->pool, d, VRT_GMF, 1);
    mfs_jobdir *again = mfs_jobdirs_take(e->pool, NULL, &err);
    assert_non_null(again);
    assert_string_equal(mfs_jobdir_path(again), path);
    char vrt[700];
    snprintf(vrt, sizeof vrt, "%s/vrt", path);
    assert_int_equal(stat(vrt, &st), 0);
    /* absent outputs are as good */
    unlink(vrt);
    mfs_jobdirs_give(e->pool, again, VRT_GMF, 1);
    assert_string_equal(mfs_jobdir_path(d = mfs_jobdirs_take(e->pool, NULL, &err)), path);
    mfs_jobdirs_give(e->pool, d, VRT_GMF, 1);
    /* the pool removes what it kept */
    mfs_jobdirs_free(e->pool);
    e->pool = mfs_jobdirs_new(e->cache, e->tmpdir);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(entries(e->tmpdir), 0);
}

static void test_anything_else_removes_the_directory(void **state)
{
    env *e = *state;
    mfs_err err;
    const char *why[] = {"bytes", "link", "subdir", "unclean", "hardlink"};
    for (size_t k = 0; k < sizeof why / sizeof *why; k++) {
        mfs_jobdir *d = mfs_jobdirs_take(e->pool, NULL, &err);
        assert_non_null(d);
        char path[600], p[700], q[700];
        snprintf(path, sizeof path, "%s", mfs_jobdir_path(d));
        snprintf(p, sizeof p, "%s/gmf", path);
        assert_int_equal(fixture_write(path, "vrt", ""), 0);
        int clean = 1;
        if (!strcmp(why[k], "bytes")) {
            assert_int_equal(fixture_write(path, "gmf", "left over"), 0);
        } else if (!strcmp(why[k], "link")) {
            assert_int_equal(symlink("/etc/passwd", p), 0);
        } else if (!strcmp(why[k], "subdir")) {
            snprintf(q, sizeof q, "%s/%s", path, MFS_SANDBOX_OUT_SUBDIR);
            assert_int_equal(mkdir(q, 0700), 0);
            assert_int_equal(fixture_write(q, "gmf", "a worker's"), 0);
        } else if (!strcmp(why[k], "unclean")) {
            clean = 0; /* the run failed before filing */
        } else {
            assert_int_equal(fixture_write(path, "gmf", ""), 0);
            snprintf(q, sizeof q, "%s/../elsewhere-%zu", path, k);
            assert_int_equal(link(p, q), 0); /* two links: not ours alone */
        }
        mfs_jobdirs_give(e->pool, d, VRT_GMF, clean);
        struct stat st;
        assert_int_equal(stat(path, &st), -1);
        mfs_jobdir *next = mfs_jobdirs_take(e->pool, NULL, &err);
        assert_non_null(next);
        assert_string_not_equal(mfs_jobdir_path(next), path);
        mfs_jobdirs_give(e->pool, next, VRT_GMF, 0);
    }
}

/* The cache directory removed under a run: made again, and said so. */
static void test_cache_removed_meanwhile(void **state)
{
    env *e = *state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", e->root);
    assert_int_equal(system(cmd), 0);
    int revived = 0;
    mfs_err err;
    mfs_jobdir *d = mfs_jobdirs_take(e->pool, &revived, &err);
    assert_non_null(d);
    assert_int_equal(revived, 1);
    struct stat st;
    assert_int_equal(stat(mfs_jobdir_path(d), &st), 0);
    mfs_jobdirs_give(e->pool, d, VRT_GMF, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_emptied_outputs_keep_the_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anything_else_removes_the_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_removed_meanwhile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

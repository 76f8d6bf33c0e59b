/* names/ without a mount (src/names/names.h): a temporary SRC folder, a
 * names state (mfs_names_state) with no mount, no cache and no resolver, and the answers
 * the daemon's lookups and listings are built on: which names are views of
 * which model (docs/naming.md), what -o lowercase_names maps a shown path
 * to, and that no path leaves SRC or follows a link (docs/security.md, S2).
 * The model extensions come from the built worker (MESHFS_WORKER), as the
 * mount's do. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names.h"
#include "meshfs/spawner.h"

static char src[PATH_MAX];     /* the temporary SRC */
static mfs_spawner *spawner;   /* the model extensions, shared by the tests */

static void put(const char *rel, const char *text)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", src, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void folder(const char *rel)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", src, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

/* names/'s state as a mount fills it: SRC, its descriptor and
 * device, the model extensions, the folder tables; views shown in fmd and
 * gmf only. */
static void mount_state(mfs_names_state *fs, int lowercase)
{
    memset(fs, 0, sizeof *fs);
    fs->src = src;
    fs->lowercase_names = lowercase;
    fs->shown = fs->formats = (1u << MFS_FMT_FMD) | (1u << MFS_FMT_GMF);
    fs->rootfd = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(fs->rootfd >= 0);
    struct stat st;
    assert_int_equal(fstat(fs->rootfd, &st), 0);
    fs->src_dev = st.st_dev;
    fs->spawner = spawner;
    fs->dirs = mfs_dirmaps_new();
    assert_non_null(fs->dirs);
}

static void mount_end(mfs_names_state *fs)
{
    mfs_dirmaps_free(fs->dirs);
    close(fs->rootfd);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(src, sizeof src, "%s/test_names.XXXXXX", tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(src));
    folder("cars");
    put("cars/car.fbx", "not parsed here");
    put("cars/readme.txt", "a note");
    folder("pair"); /* two models with one stem: each view base keeps its extension */
    put("pair/box.obj", "o box\n");
    put("pair/box.fbx", "x");
    folder("real"); /* a real file has the short view name */
    put("real/tank.obj", "o tank\n");
    put("real/tank.gmf", "a real file wins");
    folder("Up");
    put("Up/Crate.OBJ", "o crate\n");
    char link[PATH_MAX + 16];
    snprintf(link, sizeof link, "%s/link", src);
    assert_int_equal(symlink("cars", link), 0);
    mfs_err err;
    assert_int_equal(mfs_spawner_open(&spawner, NULL, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mfs_spawner_close(spawner);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", src);
    return system(cmd) == 0 ? 0 : -1;
}

static void assert_view(mfs_names_state *fs, const char *dir, const char *name, const char *model,
                        const char *base, const char *format)
{
    mfs_view_ref ref = {0};
    mfs_err err;
    assert_int_equal(mfs_dirmap_lookup(fs, dir, name, &ref, &err), 1);
    assert_string_equal(ref.model, model);
    assert_string_equal(ref.base, base);
    assert_string_equal(mfs_format_get((mfs_format)ref.format)->name, format);
    free(ref.model);
    free(ref.base);
}

static void assert_no_view(mfs_names_state *fs, const char *dir, const char *name)
{
    mfs_view_ref ref = {0};
    mfs_err err;
    assert_int_equal(mfs_dirmap_lookup(fs, dir, name, &ref, &err), 0);
}

static void test_views_of_models(void **state)
{
    (void)state;
    mfs_names_state fs;
    mount_state(&fs, 0);
    assert_view(&fs, "cars", "car.gmf", "car.fbx", "car", "gmf");
    assert_view(&fs, "cars", "car.fmd", "car.fbx", "car", "fmd");
    assert_no_view(&fs, "cars", "car.dem");     /* not a shown format */
    assert_no_view(&fs, "cars", "readme.gmf");  /* not a model */
    assert_no_view(&fs, "cars", "truck.gmf");   /* no such model */
    assert_view(&fs, "pair", "box.obj.gmf", "box.obj", "box.obj", "gmf");
    assert_view(&fs, "pair", "box.fbx.fmd", "box.fbx", "box.fbx", "fmd");
    assert_no_view(&fs, "pair", "box.gmf");     /* the stem is two models' */
    assert_view(&fs, "real", "tank.obj.gmf", "tank.obj", "tank.obj", "gmf");
    assert_no_view(&fs, "real", "tank.fmd");    /* a real file has the stem's view name */
    mount_end(&fs);
}

/* A folder as a listing shows it: its entries, then each model's views. */
static void test_listing_items(void **state)
{
    (void)state;
    mfs_names_state fs;
    mount_state(&fs, 0);
    mfs_dirtab *t;
    mfs_err err;
    assert_int_equal(mfs_dirtab_get(&fs, "cars", 0, &t, &err), 0);
    assert_int_equal(mfs_dirtab_entries(t), 2);
    size_t nm;
    const mfs_dir_model *m = mfs_dirtab_models(t, &nm);
    assert_int_equal(nm, 1);
    assert_string_equal(m[0].model, "car.fbx");
    assert_string_equal(m[0].base, "car");
    char names[8][64];
    int views = 0, shown = 0;
    for (size_t i = 0; i < mfs_dirtab_count(t); i++) {
        char buf[256];
        mfs_dir_item it;
        if (mfs_dirtab_item(&fs, t, i, buf, sizeof buf, &it) != 1)
            continue;
        assert_true(shown < 8);
        snprintf(names[shown++], sizeof names[0], "%s", it.name);
        views += it.is_view;
        if (it.is_view)
            assert_true(it.ino >> 63); /* a view's inode: the top bit set */
    }
    mfs_dirtab_put(t);
    /* a folder that is not there: -1, its errno said, the folder named */
    assert_int_equal(mfs_dirtab_get(&fs, "cars/none", 0, &t, &err), -1);
    assert_int_equal(mfs_err_errno(&err), ENOENT);
    assert_non_null(strstr(err.msg, "cars/none"));
    mfs_view_ref ref = {0};
    assert_int_equal(mfs_dirmap_lookup(&fs, "cars/car.fbx", "x.gmf", &ref, &err), -1);
    assert_int_equal(mfs_err_errno(&err), ENOTDIR);
    assert_int_equal(shown, 4);
    assert_int_equal(views, 2);
    assert_string_equal(names[0], "car.fbx");
    assert_string_equal(names[1], "readme.txt");
    assert_string_equal(names[2], "car.fmd");
    assert_string_equal(names[3], "car.gmf");
    mount_end(&fs);
}

static void test_lowercase_names(void **state)
{
    (void)state;
    mfs_names_state fs;
    mount_state(&fs, 1);
    char real[PATH_MAX];
    mfs_err err;
    assert_int_equal(mfs_casemap_path(&fs, "up/crate.obj", real, sizeof real, &err), 0);
    assert_string_equal(real, "Up/Crate.OBJ");
    /* a view's name is kept as given in its folder's real path */
    assert_int_equal(mfs_casemap_path(&fs, "up/crate.gmf", real, sizeof real, &err), 0);
    assert_string_equal(real, "Up/crate.gmf");
    assert_view(&fs, "Up", "crate.gmf", "Crate.OBJ", "crate", "gmf");
    /* no shown name has a capital letter, and views are never folders */
    assert_int_equal(mfs_casemap_path(&fs, "Up/crate.obj", real, sizeof real, &err), -1);
    assert_int_equal(mfs_err_errno(&err), ENOENT);
    assert_int_equal(mfs_casemap_path(&fs, "up/crate.gmf/x", real, sizeof real, &err), -1);
    assert_int_equal(mfs_err_errno(&err), ENOENT);
    assert_int_equal(mfs_casemap_path(&fs, "up/crate.obj", real, 4, &err), -1);
    assert_int_equal(mfs_err_errno(&err), ENAMETOOLONG);
    char shown[] = "Up/Crate.OBJ";
    mfs_casemap_fold(&fs, shown);
    assert_string_equal(shown, "up/crate.obj");
    mount_end(&fs);
    /* without the option a path is copied as it is */
    mount_state(&fs, 0);
    assert_int_equal(mfs_casemap_path(&fs, "Up/Crate.OBJ", real, sizeof real, &err), 0);
    assert_string_equal(real, "Up/Crate.OBJ");
    mount_end(&fs);
}

static void test_beneath_refuses(void **state)
{
    (void)state;
    mfs_names_state fs;
    mount_state(&fs, 0);
    struct stat st;
    assert_int_equal(mfs_beneath_stat(&fs, "cars/car.fbx", &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, strlen("not parsed here"));
    /* out of SRC */
    errno = 0;
    assert_int_equal(mfs_beneath_stat(&fs, "../x", &st), -1);
    assert_int_equal(errno, EXDEV);
    errno = 0;
    assert_int_equal(mfs_beneath_open(&fs, "cars/../../x", O_RDONLY), -1);
    assert_int_equal(errno, EXDEV);
    /* a link is shown, never followed: not on the way, not at the end */
    assert_int_equal(mfs_beneath_stat(&fs, "link", &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    errno = 0;
    assert_int_equal(mfs_beneath_stat(&fs, "link/car.fbx", &st), -1);
    assert_int_equal(errno, ELOOP);
    errno = 0;
    assert_int_equal(mfs_beneath_open(&fs, "link", O_RDONLY), -1);
    assert_int_equal(errno, ELOOP);
    char buf[64];
    ssize_t n = mfs_beneath_readlink(&fs, "link", buf, sizeof buf);
    assert_int_equal(n, 4);
    assert_memory_equal(buf, "cars", 4);
    mount_end(&fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_of_models),
        cmocka_unit_test(test_listing_items),
        cmocka_unit_test(test_lowercase_names),
        cmocka_unit_test(test_beneath_refuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

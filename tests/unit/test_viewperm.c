/* Who may read a view (src/resolve/viewperm.c, docs/security.md S1) as a table,
 * checked against every user the kernel could see; what error text users
 * see (src/names/errtext.c); and names.h's path join. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "names.h"
#include "meshfs/spawner.h"
#include "meshfs/views.h"

typedef struct row {
    uid_t fuid;
    gid_t fgid;
    mode_t fmode;
    int search;
    mode_t want; /* from 0444, view owned 100:200 */
} row;

enum { VU = 100, VG = 200, XU = 101, XG = 201 };

static const row table[] = {
    /* owned like the model: a plain AND */
    {VU, VG, 0644, 0, 0444},
    {VU, VG, 0640, 0, 0440},
    {VU, VG, 0600, 0, 0400},
    {VU, VG, 0000, 0, 0000},
    {VU, VG, 0604, 0, 0404}, /* odd, but as the bits say */
    /* folders count by their search bits */
    {VU, VG, 0711, 1, 0444},
    {VU, VG, 0700, 1, 0400},
    {VU, VG, 0644, 1, 0000},
    /* the model's owner, another group: the view's group and others may or
     * may not be in it */
    {VU, XG, 0640, 0, 0400},
    {VU, XG, 0644, 0, 0444},
    {VU, XG, 0604, 0, 0400},
    /* another owner: the model's owner is the input's group or other */
    {XU, VG, 0600, 0, 0000},
    {XU, VG, 0644, 0, 0444},
    {XU, VG, 0640, 0, 0040}, /* the view's owner may be outside VG */
    {XU, XG, 0644, 0, 0444},
    {XU, XG, 0640, 0, 0000},
    {XU, VG, 0044, 0, 0400}, /* its owner (in the view's classes) may not read it */
    {XU, XG, 0700, 1, 0000}, /* another user's private folder */
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const row *r = &table[i];
        mode_t got = mfs_perm_narrow(0444, VU, VG, r->fuid, r->fgid, r->fmode, r->search);
        if (got != r->want)
            fail_msg("row %zu: %04o, want %04o", i, (unsigned)got, (unsigned)r->want);
    }
}

/* The rule's promise, exhaustively: for every mode, owner and group of an
 * input and every user a kernel could present (owner or not of view and
 * input, in or out of each group), a user the view lets read may read the
 * input.  Permission as generic_permission decides it: owner bits if the
 * uid matches, else group bits if a member, else other bits. */
static int may(mode_t m, int owner, int member, int search)
{
    mode_t u = search ? S_IXUSR : S_IRUSR, g = search ? S_IXGRP : S_IRGRP,
           o = search ? S_IXOTH : S_IROTH;
    return owner ? (m & u) != 0 : member ? (m & g) != 0 : (m & o) != 0;
}

static void test_never_more_than_the_input(void **state)
{
    (void)state;
    const uid_t uids[] = {VU, XU, 102};
    const gid_t gids[] = {VG, XG};
    for (int search = 0; search < 2; search++)
        for (mode_t fmode = 0; fmode < 01000; fmode++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    uid_t fuid = uids[a];
                    gid_t fgid = gids[b];
                    mode_t view = mfs_perm_narrow(0444, VU, VG, fuid, fgid, fmode, search);
                    /* a user: one of three uids, member of any subset of the groups */
                    for (int u = 0; u < 3; u++)
                        for (int inv = 0; inv < 2; inv++)
                            for (int inx = 0; inx < 2; inx++) {
                                uid_t uid = uids[u];
                                int in[2] = {inv, inx};
                                int view_ok = may(view, uid == VU, in[0], 0);
                                int in_ok = may(fmode, uid == fuid, in[b], search);
                                if (view_ok && !in_ok)
                                    fail_msg("input %u:%u %04o%s: uid %u (groups %d%d) reads the "
                                             "view (%04o) but not the input",
                                             (unsigned)fuid, (unsigned)fgid, (unsigned)fmode,
                                             search ? " folder" : "", (unsigned)uid, inv, inx,
                                             (unsigned)view);
                            }
                }
}

static void test_error_text(void **state)
{
    (void)state;
    char dir[] = "/tmp/meshfs-viewperm-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cdir[64];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    mfs_names_state fs;
    memset(&fs, 0, sizeof fs);
    mfs_cache_config cc = {.dir = cdir, .max_size = 1 << 20};
    mfs_err err;
    assert_int_equal(mfs_cache_open(&cc, &fs.cache, &err), 0);
    fs.src = "/srv/models";
    const char *cache = mfs_cache_dir(fs.cache);
    char in[1024], out[1024];
    const struct {
        const char *fmt, *want;
    } rows[] = {
        {"cache: cache %s: writing tmp/1-2-0badf00d.tmp: No space left on device",
         "cache: writing (cache): No space left on device"},
        {"worker could not enter its sandbox: sandbox: output directory %s/tmp/job-AbC/w: Permission denied",
         "worker could not enter its sandbox: sandbox: output directory (cache): Permission denied"},
        {"cache %s: opening v1/ab/abcdef.e: Input/output error", "cache: opening (cache): Input/output error"},
        /* not a cache message: a folder of SRC named tmp stays */
        {"tmp/car.obj: import failed", "tmp/car.obj: import failed"},
        {"sandbox: source root /srv/models: Permission denied", "sandbox: source root .: Permission denied"},
        {"/srv/models/cars/car.fbx: Permission denied", "cars/car.fbx: Permission denied"},
        /* only SRC itself, not a sibling that starts alike */
        {"/srv/models2/x.obj: gone", "/srv/models2/x.obj: gone"},
        /* what a model says is its own text */
        {"refused to open '../secret/secret.bin': outside the source root",
         "refused to open '../secret/secret.bin': outside the source root"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        snprintf(in, sizeof in, rows[i].fmt, cache);
        mfs_errtext(&fs, in, out, sizeof out);
        assert_string_equal(out, rows[i].want);
    }
    snprintf(in, sizeof in, "cannot start worker %s: No such file or directory", mfs_worker_path());
    mfs_errtext(&fs, in, out, sizeof out);
    assert_string_equal(out, "cannot start worker meshfs-worker: No such file or directory");
    /* a short buffer truncates, never overflows */
    char small[8];
    mfs_errtext(&fs, "/srv/models/cars/car.fbx: broken", small, sizeof small);
    assert_string_equal(small, "cars/ca");
    mfs_cache_close(fs.cache);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_join(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(mfs_join(out, sizeof out, "cars", "red.obj"), 12);
    assert_string_equal(out, "cars/red.obj");
    assert_int_equal(mfs_join(out, sizeof out, "", "red.obj"), 7);
    assert_string_equal(out, "red.obj");
    /* 15 characters and the NUL fit; 16 do not, and nothing truncated is
     * left behind for a caller that ignores the -1 */
    assert_int_equal(mfs_join(out, sizeof out, "abcdefg", "1234567"), 15);
    assert_string_equal(out, "abcdefg/1234567");
    assert_int_equal(mfs_join(out, sizeof out, "abcdefg", "12345678"), -1);
    assert_string_equal(out, "");
    assert_int_equal(mfs_join(out, sizeof out, "", "0123456789abcdef"), -1);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_never_more_than_the_input),
        cmocka_unit_test(test_error_text),
        cmocka_unit_test(test_join),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The text the batch shows and keys with: names quoted for messages
 * (mfs_batch_quote) and the key option recipe shared by the mount and
 * meshfs-convert (include/meshfs/rules.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "meshfs/batch.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/formats.h"
#include "meshfs/rules.h"

static void test_quote(void **state)
{
    (void)state;
    char b[64];
    /* a plain name is itself, quotes and backslashes included */
    assert_string_equal(mfs_batch_quote("props/a \"b\"\\.obj", b, sizeof b), "props/a \"b\"\\.obj");
    assert_string_equal(mfs_batch_quote("new\nline.obj", b, sizeof b), "\"new\\nline.obj\"");
    assert_string_equal(mfs_batch_quote("t\tr\r\"q\"\\", b, sizeof b), "\"t\\tr\\r\\\"q\\\"\\\\\"");
    assert_string_equal(mfs_batch_quote("esc\033[2J\x7f", b, sizeof b), "\"esc\\x1b[2J\\x7f\"");
    /* UTF-8 is not a control character */
    assert_string_equal(mfs_batch_quote("caf\xc3\xa9.obj", b, sizeof b), "caf\xc3\xa9.obj");
    /* cut, never overflowed, always terminated */
    char s[8];
    mfs_batch_quote("0123456789\n", s, sizeof s);
    assert_int_equal(strlen(s), 7);
    assert_memory_equal(s, "\"012345", 7);
}

static void test_key_text(void **state)
{
    (void)state;
    mfs_options o;
    mfs_options_default(&o);
    char a[256], b[256];
    /* no set of formats in any key: every conversion imports alike, so a
     * view's key is its own options' (docs/cache.md, "Keys") */
    mfs_keyopts_format(&o, MFS_FMT_FMD, "x/car", a, sizeof a);
    assert_null(strstr(a, "tangents;"));
    assert_null(strstr(a, "textures;"));
    mfs_keyopts_format(&o, MFS_FMT_GMF, "x/car", a, sizeof a);
    assert_string_equal(a, "");
    /* .fmi reads the model path, .fmd does not */
    mfs_keyopts_format(&o, MFS_FMT_FMI, "x/car", a, sizeof a);
    mfs_keyopts_format(&o, MFS_FMT_FMI, "x/bus", b, sizeof b);
    assert_string_not_equal(a, b);
    mfs_keyopts_format(&o, MFS_FMT_FMD, "x/car", a, sizeof a);
    mfs_keyopts_format(&o, MFS_FMT_FMD, "x/bus", b, sizeof b);
    assert_string_equal(a, b);
    /* an option .fmi reads leaves .gmf's text as it was */
    o.fmi_textures = 1;
    mfs_keyopts_format(&o, MFS_FMT_GMF, "x/car", a, sizeof a);
    assert_string_equal(a, "");
    mfs_keyopts_format(&o, MFS_FMT_FMI, "x/car", b, sizeof b);
    assert_non_null(strstr(b, "fmi_textures;"));
    o.fmi_textures = 0;
    /* the import text: the source frame and the importer only */
    mfs_keyopts_import(&o, a, sizeof a);
    assert_string_equal(a, "");
    o.importer = MFS_IMPORTER_ASSIMP;
    mfs_keyopts_import(&o, a, sizeof a);
    assert_string_equal(a, "importer=assimp;");
    mfs_keyopts_format(&o, MFS_FMT_FMD, "x/car", a, sizeof a);
    assert_non_null(strstr(a, "importer=assimp;"));
}

/* --shard K/N (src/batch/shard.c): what is taken, what is refused and why,
 * and the documented hash, pinned (XXH3-64 of "" with seed 0 is the
 * reference value 0x2D06800538D394C2). */
static void test_shard(void **state)
{
    (void)state;
    mfs_shard s;
    mfs_err err;
    assert_int_equal(mfs_shard_parse("--shard", "2/8", &s, &err), 0);
    assert_int_equal(s.k, 2);
    assert_int_equal(s.n, 8);
    assert_int_equal(mfs_shard_parse("--shard", "1/1", &s, &err), 0);
    const char *bad[][2] = {
        {"0/3", "--shard '0/3': K must be from 1 to N (here 1 to 3)"},
        {"4/3", "--shard '4/3': K must be from 1 to N (here 1 to 3)"},
        {"1/0", "--shard '1/0': N must be from 1 to 1000000"},
        {"1/1000001", "--shard '1/1000001': N must be from 1 to 1000000"},
        {"x/y", "--shard 'x/y': expected K/N, two whole numbers (shard K of N, K from 1 to N), "
                "e.g. 2/8"},
        {"", "--shard '': expected K/N"},
        {"1/", "--shard '1/': expected K/N"},
        {" 1/3", "--shard ' 1/3': expected K/N"},
        {"+1/3", "--shard '+1/3': expected K/N"},
        {"1/3x", "--shard '1/3x': expected K/N"},
        {"99999999999/3", "--shard '99999999999/3': expected K/N"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mfs_err_clear(&err);
        assert_int_equal(mfs_shard_parse("--shard", bad[i][0], &s, &err), -1);
        assert_non_null(strstr(err.msg, bad[i][1]));
    }
    assert_int_equal(mfs_shard_of("", 3), 0x2D06800538D394C2ull % 3 + 1);
    assert_int_equal(mfs_shard_of("crate/crate.obj", 3), 10748983800747263760ull % 3 + 1);
    assert_int_equal(mfs_shard_of("crate/crate.obj", 1), 1);
    mfs_shard two = {2, 3};
    assert_int_equal(mfs_shard_has(&two, ""), 1);
    assert_int_equal(mfs_shard_has(&two, "crate/crate.obj"), 0);
    assert_int_equal(mfs_shard_has(NULL, "crate/crate.obj"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_key_text),
        cmocka_unit_test(test_shard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The text the batch shows and keys with: names quoted for messages
 * (mfs_batch_quote) and the key option recipe shared by the mount and
 * meshfs-convert (include/meshfs/keyopts.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "meshfs/batch.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/keyopts.h"
#include "meshfs/lgepkg.h"

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

static void test_run_formats(void **state)
{
    (void)state;
    unsigned fmd = 1u << MFS_FMT_FMD, gmf = 1u << MFS_FMT_GMF, tex = 1u << MFS_FMT_TEX;
    assert_int_equal(mfs_keyopts_run_formats(fmd, fmd), fmd);
    assert_int_equal(mfs_keyopts_run_formats(fmd | gmf, fmd), fmd | gmf);
    assert_int_equal(mfs_keyopts_run_formats(fmd | tex, fmd), fmd | tex);
    /* the package decodes textures whatever was asked */
    assert_int_equal(mfs_keyopts_run_formats(fmd | MFS_FMT_LGEPKG_BIT | MFS_LGEPKG_NEEDS, fmd),
                     fmd | tex);
}

static void test_key_text(void **state)
{
    (void)state;
    mfs_options o;
    mfs_options_default(&o);
    char a[256], b[256];
    unsigned fmd = 1u << MFS_FMT_FMD, gmf = 1u << MFS_FMT_GMF, tex = 1u << MFS_FMT_TEX;
    mfs_keyopts_format(&o, fmd, MFS_FMT_FMD, "x/car", a, sizeof a);
    mfs_keyopts_format(&o, fmd | gmf, MFS_FMT_FMD, "x/car", b, sizeof b);
    /* .gmf on: every view's bytes carry tangents, so every key says so */
    assert_null(strstr(a, "tangents;"));
    assert_non_null(strstr(b, "tangents;"));
    assert_int_equal(strlen(b), strlen(a) + strlen("tangents;"));
    /* .fmi reads the model path, .fmd does not */
    mfs_keyopts_format(&o, fmd, MFS_FMT_FMI, "x/car", a, sizeof a);
    mfs_keyopts_format(&o, fmd, MFS_FMT_FMI, "x/bus", b, sizeof b);
    assert_string_not_equal(a, b);
    mfs_keyopts_format(&o, fmd, MFS_FMT_FMD, "x/car", a, sizeof a);
    mfs_keyopts_format(&o, fmd, MFS_FMT_FMD, "x/bus", b, sizeof b);
    assert_string_equal(a, b);
    /* the import text: textures with .tex or the package, the importer */
    mfs_keyopts_import(&o, fmd, a, sizeof a);
    assert_null(strstr(a, "textures;"));
    mfs_keyopts_import(&o, fmd | tex, a, sizeof a);
    assert_non_null(strstr(a, "textures;"));
    mfs_keyopts_import(&o, fmd | MFS_FMT_LGEPKG_BIT, a, sizeof a);
    assert_non_null(strstr(a, "textures;"));
    o.importer = MFS_IMPORTER_ASSIMP;
    mfs_keyopts_import(&o, fmd, a, sizeof a);
    assert_non_null(strstr(a, "importer=assimp;"));
    mfs_keyopts_format(&o, fmd, MFS_FMT_FMD, "x/car", a, sizeof a);
    assert_non_null(strstr(a, "importer=assimp;"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_run_formats),
        cmocka_unit_test(test_key_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

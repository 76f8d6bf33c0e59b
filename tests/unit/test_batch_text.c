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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_key_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

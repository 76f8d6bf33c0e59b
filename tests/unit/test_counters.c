/* Named counts as text (util.h, "counters"): the stats xattr's lines. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "meshfs/util.h"

static const mfs_counter C[] = {
    {"remote_hits", 3},
    {"remote_bytes_down", 18446744073709551615ull},
    {"remote_slow", 0},
};

static void test_text(void **state)
{
    (void)state;
    char buf[256];
    const char *want = " remote_hits=3 remote_bytes_down=18446744073709551615 remote_slow=0";
    assert_int_equal(mfs_counters_text(buf, sizeof buf, C, 3), (int)strlen(want));
    assert_string_equal(buf, want);
    assert_int_equal(mfs_counters_text(buf, sizeof buf, C, 0), 0);
    assert_string_equal(buf, "");
}

static void test_cut_says_whole_length(void **state)
{
    (void)state;
    char buf[20];
    memset(buf, 'x', sizeof buf);
    int len = mfs_counters_text(buf, sizeof buf, C, 3);
    assert_int_equal(len, 67); /* what snprintf of the whole would say */
    assert_int_equal(strlen(buf), sizeof buf - 1);
    assert_string_equal(buf, " remote_hits=3 remo");
    assert_int_equal(mfs_counters_text(NULL, 0, C, 1), 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_cut_says_whole_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

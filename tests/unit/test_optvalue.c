/* Option values checked whole (include/meshfs/optvalue.h): what each
 * parser takes, what it refuses, and that the refusal names the option and
 * the value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "meshfs/util.h"

static void assert_contains(const char *s, const char *part)
{
    if (!strstr(s, part))
        fail_msg("'%s' does not contain '%s'", s, part);
}

static void test_sizes(void **state)
{
    static const struct {
        const char *s;
        uint64_t v;
    } good[] = {
        {"0", 0}, {"1", 1}, {"512", 512}, {"1K", 1024}, {"1k", 1024}, {"2M", 2u << 20},
        {"1.5G", 3ull << 29}, {"2GiB", 2ull << 30}, {"2GB", 2ull << 30}, {"1T", 1ull << 40},
        {"100B", 100}, {".5K", 512}, {"15.99999999T", (uint64_t)(15.99999999 * 1099511627776.0)},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        uint64_t v = 7;
        mfs_err err = {0};
        if (mfs_optv_size("-o x", good[i].s, 0, UINT64_MAX, &v, &err) != 0)
            fail_msg("%s: %s", good[i].s, err.msg);
        assert_int_equal(v, good[i].v);
    }
    static const char *const bad[] = {"", "inf", "nan", "-1", "+1", " 1", "1 ", "1e3", "0x10",
                                      "12abc", "1KK", "1Ki", "1iB", "K", ".", "1..2", "1,5G"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t v = 7;
        mfs_err err = {0};
        assert_int_equal(mfs_optv_size("-o cache_size", bad[i], 0, UINT64_MAX, &v, &err), -1);
        assert_int_equal(v, 7);
        assert_contains(err.msg, "-o cache_size=");
        assert_contains(err.msg, bad[i]);
        assert_contains(err.msg, "not a size");
    }
    uint64_t v;
    mfs_err err = {0};
    assert_int_equal(mfs_optv_size("--memory", "16777216T", 0, UINT64_MAX, &v, &err), -1); /* 2^64 */
    assert_string_equal(err.msg, "--memory=16777216T: too large (at most 16777216T)");
    assert_int_equal(mfs_optv_size("--memory", "99999999999T", 0, UINT64_MAX, &v, &err), -1);
    assert_contains(err.msg, "too large");
    assert_int_equal(mfs_optv_size("--memory", "1K", 64ull << 20, UINT64_MAX, &v, &err), -1);
    assert_string_equal(err.msg, "--memory=1K: too small (at least 64M)");
    assert_int_equal(mfs_optv_size("--memory", "64M", 64ull << 20, UINT64_MAX, &v, &err), 0);
    assert_int_equal(v, 64ull << 20);
}

static void test_seconds(void **state)
{
    double v = 0;
    mfs_err err = {0};
    assert_int_equal(mfs_optv_seconds("-o t", "60", 100, &v, &err), 0);
    assert_true(v == 60);
    assert_int_equal(mfs_optv_seconds("-o t", "0.5", 100, &v, &err), 0);
    assert_true(v == 0.5);
    assert_int_equal(mfs_optv_seconds("-o t", "100", 100, &v, &err), 0);
    static const char *const bad[] = {"", "inf", "nan", "-1", "1e2", "abc", "1s", " 2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(mfs_optv_seconds("-o convert_timeout", bad[i], 100, &v, &err), -1);
        assert_contains(err.msg, "-o convert_timeout=");
        assert_contains(err.msg, "not a number of seconds");
    }
    assert_int_equal(mfs_optv_seconds("-o convert_timeout", "0", 100, &v, &err), -1);
    assert_string_equal(err.msg, "-o convert_timeout=0: must be more than 0 seconds");
    assert_int_equal(mfs_optv_seconds("-o convert_timeout", "100.5", 100, &v, &err), -1);
    assert_string_equal(err.msg, "-o convert_timeout=100.5: too long (at most 100 s)");
}

static void test_counts(void **state)
{
    unsigned v = 0;
    mfs_err err = {0};
    assert_int_equal(mfs_optv_count("-o j", "1", 1, 64, &v, &err), 0);
    assert_int_equal(v, 1);
    assert_int_equal(mfs_optv_count("-o j", "64", 1, 64, &v, &err), 0);
    assert_int_equal(v, 64);
    assert_int_equal(mfs_optv_count("-o convert_jobs", "65", 1, 64, &v, &err), -1);
    assert_string_equal(err.msg, "-o convert_jobs=65: at most 64");
    assert_int_equal(mfs_optv_count("-o convert_jobs", "0", 1, 64, &v, &err), -1);
    assert_string_equal(err.msg, "-o convert_jobs=0: must be at least 1");
    /* wraps neither through unsigned nor through 64 bits */
    assert_int_equal(mfs_optv_count("-o convert_jobs", "4294967297", 1, 64, &v, &err), -1);
    assert_contains(err.msg, "at most 64");
    assert_int_equal(mfs_optv_count("-o convert_jobs", "18446744073709551617", 1, 64, &v, &err), -1);
    assert_contains(err.msg, "at most 64");
    static const char *const bad[] = {"", "-5", "+5", "1.5", "5x", " 5", "0x5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(mfs_optv_count("-o convert_jobs", bad[i], 1, 64, &v, &err), -1);
        assert_contains(err.msg, "not a whole number");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The one error rule's carrier (include/meshfs/err.h): the text a user
 * reads, and the errno a caller acts on, kept together on the way up. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "meshfs/err.h"

static void test_sys_sets_code_and_text(void **state)
{
    (void)state;
    mfs_err e;
    mfs_err_clear(&e);
    assert_int_equal(mfs_err_sys(&e, ENOENT, "%s: not there", "a.obj"), -1);
    assert_int_equal(e.code, ENOENT);
    assert_string_equal(e.msg, "a.obj: not there");
    assert_int_equal(mfs_err_errno(&e), ENOENT);
}

static void test_prefix_keeps_code(void **state)
{
    (void)state;
    mfs_err e;
    mfs_err_sys(&e, EWOULDBLOCK, "under a lease");
    assert_int_equal(mfs_err_prefix(&e, "cars/%s", "car.fbx"), -1);
    assert_string_equal(e.msg, "cars/car.fbx: under a lease");
    assert_int_equal(mfs_err_errno(&e), EWOULDBLOCK);
}

static void test_errf_says_no_code(void **state)
{
    (void)state;
    mfs_err e;
    mfs_err_sys(&e, ENOMEM, "first");
    mfs_errf(&e, "then %d", 2);
    assert_int_equal(e.code, 0);
    assert_string_equal(e.msg, "then 2");
    assert_int_equal(mfs_err_errno(&e), EIO); /* none said: EIO */
}

static void test_code_alone_has_no_text(void **state)
{
    (void)state;
    mfs_err e;
    mfs_errf(&e, "old text");
    assert_int_equal(mfs_err_code(&e, EAGAIN), -1);
    assert_string_equal(e.msg, "");
    assert_int_equal(mfs_err_errno(&e), EAGAIN);
    mfs_err_clear(&e);
    assert_int_equal(e.code, 0);
    assert_string_equal(e.msg, "");
}

static void test_null_err_is_allowed(void **state)
{
    (void)state;
    assert_int_equal(mfs_errf(NULL, "x"), -1);
    assert_int_equal(mfs_err_sys(NULL, EIO, "x"), -1);
    assert_int_equal(mfs_err_code(NULL, EIO), -1);
    assert_int_equal(mfs_err_prefix(NULL, "x"), -1);
    assert_int_equal(mfs_err_errno(NULL), EIO);
    mfs_err_clear(NULL);
}

static void test_long_text_is_cut_not_overrun(void **state)
{
    (void)state;
    char big[2 * MFS_ERR_MAX];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mfs_err e;
    mfs_err_sys(&e, ENOSPC, "%s", big);
    assert_int_equal(strlen(e.msg), MFS_ERR_MAX - 1);
    mfs_err_prefix(&e, "p");
    assert_int_equal(strlen(e.msg), MFS_ERR_MAX - 1);
    assert_memory_equal(e.msg, "p: xx", 5);
    assert_int_equal(e.code, ENOSPC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sys_sets_code_and_text),
        cmocka_unit_test(test_prefix_keeps_code),
        cmocka_unit_test(test_errf_says_no_code),
        cmocka_unit_test(test_code_alone_has_no_text),
        cmocka_unit_test(test_null_err_is_allowed),
        cmocka_unit_test(test_long_text_is_cut_not_overrun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

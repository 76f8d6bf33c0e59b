/* Whole buffers through pread(2) and pwrite(2) (util.h, "fullio"): they
 * answer as the calls do, a count or -1 and errno, and carry on after a
 * short transfer. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "meshfs/util.h"

static int tmp_file(char *path)
{
    strcpy(path, "/tmp/meshfs-fullio-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    return fd;
}

static void test_round_trip_short_at_end(void **state)
{
    (void)state;
    char path[64];
    int fd = tmp_file(path);
    size_t n = 100000;
    uint8_t *out = malloc(n), *in = calloc(1, n + 4096);
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(i * 7 + 3);
    assert_int_equal(mfs_pwrite_full(fd, out, n, 10), 0);
    /* more asked than there is: the bytes to the end, then 0 */
    assert_int_equal(mfs_pread_full(fd, in, n + 4096, 0), (int64_t)(n + 10));
    assert_memory_equal(in + 10, out, n);
    assert_int_equal(mfs_pread_full(fd, in, 16, n + 10), 0);
    close(fd);
    unlink(path);
    free(out);
    free(in);
}

static void test_failures_are_minus_one_and_errno(void **state)
{
    (void)state;
    char path[64], b[8] = "abcdefg";
    int fd = tmp_file(path);
    int ro = open(path, O_RDONLY | O_CLOEXEC), wo = open(path, O_WRONLY | O_CLOEXEC);
    errno = 0;
    assert_int_equal(mfs_pwrite_full(ro, b, sizeof b, 0), -1);
    assert_int_equal(errno, EBADF);
    errno = 0;
    assert_int_equal(mfs_pread_full(wo, b, sizeof b, 0), -1);
    assert_int_equal(errno, EBADF);
    int p[2];
    assert_int_equal(pipe(p), 0);
    errno = 0;
    assert_int_equal(mfs_pwrite_full(p[1], b, sizeof b, 0), -1);
    assert_int_equal(errno, ESPIPE);
    for (int i = 0; i < 2; i++)
        close(p[i]);
    close(ro);
    close(wo);
    close(fd);
    unlink(path);
}

/* A write the file size limit cuts short: the part that fits is written,
 * then the next call's EFBIG is the answer. */
static void test_short_write_then_failure(void **state)
{
    (void)state;
    char path[64];
    int fd = tmp_file(path);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    uint8_t buf[8192];
    memset(buf, 'x', sizeof buf);
    errno = 0;
    int rc = mfs_pwrite_full(fd, buf, sizeof buf, 0);
    int e = errno;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    assert_int_equal(rc, -1);
    assert_int_equal(e, EFBIG);
    assert_int_equal(lseek(fd, 0, SEEK_END), 4096);
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_short_at_end),
        cmocka_unit_test(test_failures_are_minus_one_and_errno),
        cmocka_unit_test(test_short_write_then_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The fork server's allow-list (src/worker/server_confine.c): clone for
 * fork and threads, never into a new namespace (review 1, finding 4). */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "meshfs/worker.h"

/* In a child of the test, confined as the server is: 0 when a plain
 * fork-like clone works and a CLONE_NEWUSER one is refused with ENOSYS. */
static int confined_child(void)
{
    mfs_err err;
    if (mfs_sandbox_confine_server(&err) < 0)
        return 2;
    long pid = syscall(SYS_clone, (unsigned long)SIGCHLD, 0L, 0L, 0L, 0L);
    if (pid == 0)
        _exit(0);
    if (pid < 0 || waitpid((pid_t)pid, NULL, 0) < 0)
        return 3;
    long ns = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L);
    if (ns == 0)
        _exit(0);
    if (ns > 0) {
        waitpid((pid_t)ns, NULL, 0);
        return 4;
    }
    return errno == ENOSYS ? 0 : 5;
}

static void test_clone_into_a_namespace_is_refused(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(confined_child());
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clone_into_a_namespace_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

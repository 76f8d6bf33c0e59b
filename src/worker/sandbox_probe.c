/* Test hook, compiled only with -Dtest_hooks=true (MESHFS_TEST_HOOKS):
 * the worker, inside its sandbox, attempts what a hijacked importer would
 * and prints what happened, so tests/integration/test_security.py can
 * assert each escape is refused (docs/security.md).
 *
 * MESHFS_TEST_SANDBOX_PROBE=action[=arg][,action[=arg]...]; one line per
 * action on stdout: "probe ACTION[ ARG]: allowed" or "...: denied ENAME".
 * An action the seccomp filter forbids prints nothing: the process dies of
 * SIGSYS. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "meshfs/worker.h"

static void result(const char *action, const char *arg, int rc)
{
    const char *sp = arg ? " " : "";
    if (!arg)
        arg = "";
    if (rc < 0)
        printf("probe %s%s%s: denied %s\n", action, sp, arg, strerrorname_np(errno));
    else
        printf("probe %s%s%s: allowed\n", action, sp, arg);
    fflush(stdout);
}

static int whoami(void)
{
    uid_t r, e, s;
    gid_t gr, ge, gs;
    getresuid(&r, &e, &s);
    getresgid(&gr, &ge, &gs);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    syscall(SYS_capget, &h, d);
    char net[64] = "?";
    ssize_t n = readlink("/proc/self/ns/net", net, sizeof net - 1);
    net[n > 0 ? n : 1] = '\0';
    printf("probe whoami: uid=%u,%u,%u gid=%u,%u,%u groups=%d capeff=%#llx capprm=%#llx "
           "nnp=%d seccomp=%d dumpable=%d netns=%s\n",
           r, e, s, gr, ge, gs, getgroups(0, NULL),
           (unsigned long long)d[0].effective | (unsigned long long)d[1].effective << 32,
           (unsigned long long)d[0].permitted | (unsigned long long)d[1].permitted << 32,
           prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), prctl(PR_GET_SECCOMP, 0, 0, 0, 0),
           prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), net);
    fflush(stdout);
    return 0;
}

static int rw(const char *path, int write_it)
{
    int fd = write_it ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                      : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char c = 'x';
    ssize_t n = write_it ? write(fd, &c, 1) : read(fd, &c, 1);
    int e = errno;
    close(fd);
    errno = e;
    return n < 0 ? -1 : 0;
}

static void probe(const char *action, const char *arg)
{
    int rc;
    if (!strcmp(action, "whoami")) {
        whoami();
        return;
    } else if (!strcmp(action, "execve")) {
        execl("/bin/true", "true", (char *)NULL);
        rc = -1;
    } else if (!strcmp(action, "fork")) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        if (p > 0)
            waitpid(p, NULL, 0);
        rc = p < 0 ? -1 : 0;
    } else if (!strcmp(action, "socket")) {
        rc = socket(AF_INET, SOCK_STREAM, 0);
    } else if (!strcmp(action, "ptrace")) {
        rc = (int)ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    } else if (!strcmp(action, "mount")) {
        rc = mount("none", "/tmp", "tmpfs", 0, NULL);
    } else if (!strcmp(action, "unshare")) {
        rc = unshare(CLONE_NEWUSER);
    } else if (!strcmp(action, "setuid")) {
        rc = setuid(0);
    } else if (!strcmp(action, "kill-parent")) {
        rc = kill(getppid(), 0);
    } else if (!strcmp(action, "read") && arg) {
        rc = rw(arg, 0);
    } else if (!strcmp(action, "write") && arg) {
        rc = rw(arg, 1);
    } else {
        printf("probe %s: unknown action\n", action);
        return;
    }
    result(action, arg, rc);
}

void mfs_sandbox_probe(const char *spec)
{
    char *copy = strdup(spec), *save = NULL;
    for (char *a = strtok_r(copy, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(a, '=');
        if (eq)
            *eq++ = '\0';
        probe(a, eq);
    }
    free(copy);
}

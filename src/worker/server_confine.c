/* The fork server's own confinement (mfs_sandbox_confine_server,
 * include/meshfs/worker.h; docs/security.md, "The fork server").
 *
 * The server never opens a model, but it is a process of the daemon's
 * user (root, for an fstab mount) that lives as long as the mount, so it
 * keeps only what it uses: the capabilities of its children's user
 * switch, and a seccomp allow-list.  It forks, so the list cannot refuse
 * fork-like clone; its children inherit it and stack their own deny-list
 * filter (sandbox.c) on top, the stricter action winning, so the list
 * covers what the server does and what an import in a child does.
 *
 * The default action is ENOSYS, not a kill: a call left off the list then
 * reads, to glibc and the libraries, as one this kernel lacks, and they
 * fall back (clone3 to clone, statx to fstatat, faccessat2 to faccessat,
 * rseq to nothing) where a kill would fail every conversion after a
 * library update.  What matters for confinement is that the call does not
 * run, and that holds either way. */
#include <errno.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <termios.h>
#include <unistd.h>

#include "meshfs/worker.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* What the server and an import in its children do, by kind.  Unknown
 * names (a libseccomp older than the call, another architecture's) are
 * skipped. */
static const char *const allow[] = {
    /* files, through descriptors the process holds or opens beneath SRC
     * (Landlock bounds where, in the children) */
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
    "pwritev2", "open", "openat", "openat2", "close", "close_range", "lseek", "_llseek",
    "fstat", "stat", "lstat", "newfstatat", "fstatat64", "statx", "fstatfs", "statfs",
    "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents64", "getdents",
    "fcntl", "fcntl64", "dup", "dup2", "dup3", "ftruncate", "fsync", "fdatasync", "fadvise64",
    "fallocate", "readahead", "getcwd", "chdir", "fchdir", "umask", "memfd_create", "pipe",
    "pipe2", "poll", "ppoll", "select", "pselect6", "sendfile", "copy_file_range",
    /* memory */
    "brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore",
    "membarrier",
    /* threads and their synchronisation */
    "futex", "futex_waitv", "set_robust_list", "get_robust_list", "set_tid_address",
    "rseq", "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
    "sched_get_priority_max", "sched_get_priority_min", "getcpu", "arch_prctl",
    /* processes: the server's children, and its own and theirs exit */
    "wait4", "waitid", "kill", "tgkill", "tkill", "pidfd_open", "pidfd_send_signal", "getpid",
    "getppid", "gettid", "exit", "exit_group", "prlimit64", "getrlimit", "setrlimit",
    "ugetrlimit", "getrusage", "uname", "getrandom", "sysinfo",
    /* signals */
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigtimedwait", "rt_sigpending",
    "rt_sigsuspend", "sigaltstack", "signalfd", "signalfd4", "restart_syscall", "pause",
    /* time */
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
    "times",
    /* the request and reply sockets (the children's filter refuses new ones) */
    "socketpair", "sendmsg", "recvmsg", "sendto", "recvfrom", "shutdown",
    /* identity: the children's user switch, and its check */
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
    "setresuid", "setresgid", "setgroups", "setuid", "setgid", "capget", "capset",
    /* the children's sandbox */
    "prctl", "seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
    NULL,
};

/* LeakSanitizer stops the world from a forked helper with ptrace, and the
 * runtime execs a symbolizer (refused with EPERM in the children). */
static const char *const allow_sanitizer[] = {
    "ptrace", "fork", "vfork", "execve", "execveat", "process_vm_readv", "personality", NULL,
};

static int allow_list(scmp_filter_ctx ctx, const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        int nr = seccomp_syscall_resolve_name(names[i]);
        if (nr == __NR_SCMP_ERROR)
            continue;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int load_allow_list(mfs_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
    if (!ctx)
        return mfs_errf(err, "fork server: seccomp_init failed");
    /* a system call of another ABI (int 0x80, x32) never reaches the list */
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc == 0)
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc == 0)
        rc = allow_list(ctx, allow);
    /* clone for fork and threads only: never into a new namespace (a new
     * user namespace would hand a child every capability inside it).
     * clone3, whose flags sit in memory no filter can read, is not
     * allowed: glibc falls back to clone on its ENOSYS.  (CLONE_NEWTIME
     * is left out of the mask: for clone its bit is the exit signal's,
     * and clone cannot make a time namespace anyway.) */
    const scmp_datum_t newns = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                               CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, newns, 0));
    if (rc == 0 && SANITIZED)
        rc = allow_list(ctx, allow_sanitizer);
    /* ioctl only to ask whether a descriptor is a terminal (stdio's
     * buffering) or how much a pipe holds */
    static const unsigned long ioctls[] = {TCGETS, FIONREAD, FIOCLEX, FIONCLEX};
    for (size_t i = 0; rc == 0 && i < sizeof ioctls / sizeof ioctls[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_EQ, ioctls[i]));
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc < 0)
        return mfs_errf(err, "fork server: seccomp: %s", strerror(-rc));
    return 0;
}

int mfs_sandbox_confine_server(mfs_err *err)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return mfs_errf(err, "fork server: PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
    if (geteuid() == 0) {
        /* its children's user switch; and CAP_KILL, in the permitted and
         * effective sets only, because a child that has switched user can
         * be killed by the server only with it (when the parent goes, the
         * server kills and reaps every child before it exits) */
        uint64_t sw = (1ULL << CAP_SETUID) | (1ULL << CAP_SETGID);
        if (mfs_sandbox_caps_keep(sw, sw | (1ULL << CAP_KILL), err) < 0)
            return -1;
    }
    return load_allow_list(err);
}

/* auto_unmount done by meshfs itself (unmount_guard.h says why). */
#include "unmount_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "meshfs/util.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *o++ = *s;
        }
    }
    *o = 0;
}

/* The device ("major:minor") of the topmost fuse.meshfs mount at mnt, into
 * dev; 0 if there is one, -1 if not. */
static int mount_dev(const char *mnt, char *dev, size_t devlen)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int found = -1;
    while (getline(&line, &cap, f) > 0) {
        /* id parent major:minor root mountpoint opts... - fstype source super */
        char *sep = strstr(line, " - ");
        char *save, *fields[5];
        int n = 0;
        if (!sep)
            continue;
        *sep = 0;
        for (char *t = strtok_r(line, " ", &save); t && n < 5; t = strtok_r(NULL, " ", &save))
            fields[n++] = t;
        if (n < 5 || strncmp(sep + 3, "fuse.meshfs ", 12) != 0)
            continue;
        unescape(fields[4]);
        if (strcmp(fields[4], mnt) == 0) {
            snprintf(dev, devlen, "%s", fields[2]); /* later lines are mounted on top */
            found = 0;
        }
    }
    free(line);
    fclose(f);
    return found;
}

/* What the guard does once confined: wait, read its mountinfo, unmount
 * (or, for a user's mount, exec fusermount3: see confine), exit. */
static const char *const guard_calls[] = {
    "read", "close", "fstat", "newfstatat", "statx", "lseek", "fcntl",
    "brk", "mmap", "munmap", "mremap", "geteuid", "exit", "exit_group",
    "rt_sigreturn", "restart_syscall",
    /* a sanitizer build asks for the signal stack before a call that does
     * not return (_exit): refused, its check failed and the guard spun
     * forever on its own report's lock, an orphan taking a core */
    "sigaltstack", NULL,
};

/* The guard's one unmount: lazily, never through a link put at MNT's
 * path (the filter allows these flags alone). */
#define GUARD_UMOUNT_FLAGS (MNT_DETACH | UMOUNT_NOFOLLOW)

/* Calls allowed only with some arguments: opens for reading alone (a
 * uid-0 guard, even without CAP_DAC_*, owns root's files), and the
 * unmount with its flags.  0, or a libseccomp error. */
static int guard_arg_rules(scmp_filter_ctx ctx)
{
    const scmp_datum_t wmask = O_ACCMODE | O_CREAT | O_TRUNC;
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                              SCMP_A2(SCMP_CMP_MASKED_EQ, wmask, O_RDONLY));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, wmask, O_RDONLY));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(umount2), 1,
                              SCMP_A1(SCMP_CMP_EQ, GUARD_UMOUNT_FLAGS));
    return rc;
}

/* The guard keeps what unmounting needs and nothing else
 * (docs/security.md, "The unmount helper").  As root: CAP_SYS_ADMIN
 * (umount2) and no other capability in any set, no_new_privs, and a
 * seccomp allow-list.  A user's guard has no capability to drop, and
 * unmounts by exec'ing the setuid fusermount3, which no_new_privs would
 * run without its setuid, so it gets neither that nor (which needs it, or
 * CAP_SYS_ADMIN) a filter: it is a process of the user, holding nothing
 * of the daemon's, that can do only what the user can.  Failing, the
 * guard still runs: an unmounted dead mount is worse than a less confined
 * helper, and it reads nothing it is sent. */
static void confine(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (geteuid() != 0) {
        syscall(SYS_capset, &h, d);
        return;
    }
    for (int cap = 0; cap < 64; cap++)
        if (cap != CAP_SYS_ADMIN && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
            break;
    d[0].effective = d[0].permitted = 1u << CAP_SYS_ADMIN;
    if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return;
    /* ENOSYS for the rest, not a kill: a library call that grew a new
     * system call then fails the way it would on an older kernel */
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
    if (!ctx)
        return;
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    for (int i = 0; rc == 0 && guard_calls[i]; i++) {
        int nr = seccomp_syscall_resolve_name(guard_calls[i]);
        if (nr != __NR_SCMP_ERROR)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
    }
    if (rc == 0)
        rc = guard_arg_rules(ctx);
    if (rc == 0)
        seccomp_load(ctx);
    seccomp_release(ctx);
}

static void guard(int rfd, const char *mnt, const char *dev)
{
    char buf[1], now[64];
    while (read(rfd, buf, 1) < 0 && errno == EINTR)
        ;
    if (mount_dev(mnt, now, sizeof now) < 0 || strcmp(now, dev) != 0)
        _exit(0); /* unmounted cleanly, or no longer ours */
    if (geteuid() == 0) {
        umount2(mnt, GUARD_UMOUNT_FLAGS);
        _exit(0);
    }
    /* a user's mount: only the setuid helper may unmount it */
    execlp("fusermount3", "fusermount3", "-u", "-z", "-q", "--", mnt, (char *)NULL);
    _exit(127);
}

int mfs_unmount_guard_start(const char *mnt)
{
    char real[PATH_MAX], dev[64];
    /* realpath of a fresh FUSE mount's root would ask the daemon, which is
     * not serving yet: resolve the parent instead */
    char *copy = strdup(mnt), *slash;
    if (!copy)
        return -1;
    while ((slash = strrchr(copy, '/')) && slash != copy && !slash[1])
        *slash = 0; /* trailing slashes */
    slash = strrchr(copy, '/');
    const char *parent = !slash ? "." : slash == copy ? "/" : copy;
    const char *base = slash ? slash + 1 : copy;
    if (slash && slash != copy)
        *slash = 0;
    char rparent[PATH_MAX];
    int ok = realpath(parent, rparent) != NULL;
    if (ok)
        snprintf(real, sizeof real, "%s%s%s", rparent, strcmp(rparent, "/") ? "/" : "", base);
    free(copy);
    if (!ok || mount_dev(real, dev, sizeof dev) < 0) {
        mfs_log(MFS_LOG_WARNING, "%s: mount not found in /proc/self/mountinfo; no auto_unmount",
                mnt);
        return -1;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        mfs_log(MFS_LOG_WARNING, "auto_unmount: pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        mfs_log(MFS_LOG_WARNING, "auto_unmount: fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        /* its own session, deaf to the signals that stop the daemon, and
         * holding nothing of the daemon's (above all not /dev/fuse, whose
         * last close is what aborts a dead daemon's connection) */
        setsid();
        prctl(PR_SET_NAME, "meshfs-umount"); /* ps/pgrep tell it from the daemon */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        int rfd = dup2(p[0], 3) < 0 ? p[0] : 3;
        close_range(rfd == 3 ? 4 : 3, ~0u, 0);
        int null = open("/dev/null", O_RDWR); /* nor a caller's pipe */
        for (int fd = 0; null >= 0 && fd < 3; fd++)
            dup2(null, fd);
        if (null > 2)
            close(null);
        confine();
        guard(rfd, real, dev);
    }
    close(p[0]);
    /* p[1] stays open, never written, until the daemon is gone */
    return 0;
}

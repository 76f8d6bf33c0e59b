/* The worker's sandbox: what meshfs-worker gives up before it opens a
 * model (include/meshfs/worker.h, docs/security.md).
 *
 * Order matters.  no_new_privs first (Landlock and seccomp require it of an
 * unprivileged process).  The output directory is prepared and entered while
 * still root, because afterwards the worker's user could not even reach it.
 * Namespaces need CAP_SYS_ADMIN, so they come before the user switch (a
 * fork server makes them once, before it gives that up).  seccomp comes
 * last: its deny list includes unshare and setns.  A fork server's spare
 * switches user only when its job names the model's owner, after all of
 * this: until then it keeps CAP_SETUID and CAP_SETGID and nothing else.
 * Everything runs before the worker starts any thread, because Landlock
 * rulesets, capabilities and (without TSYNC) seccomp filters are per thread
 * and inherited only by threads created afterwards. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <grp.h>

#include "meshfs/worker.h"

/* Landlock constants newer than Debian 12's kernel headers (6.1). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

#if defined(__SANITIZE_ADDRESS__)
/* ASan/LSan read /proc/self/maps, stop the world with ptrace from a forked
 * helper and exec a symbolizer: a sanitizer build's worker keeps those, so
 * the test suite's sanitized run still works (docs/security.md). */
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* The ruleset attribute as of ABI 6; older kernels get a prefix of it. */
typedef struct ll_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
} ll_attr;

static int ll_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}

static uint64_t ll_fs_rights(int abi)
{
    uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
    if (abi >= 2)
        r |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        r |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5)
        r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return r;
}

static int ll_allow(int ruleset, int dirfd, uint64_t access)
{
    struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = dirfd};
    return (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
}

/* Read-only beneath root, read-write in out, nothing else.  1 enforced, 0
 * unsupported by the kernel, -1 error. */
static int landlock(int rootfd, int outfd, int abi, mfs_err *err)
{
    if (abi == 0)
        return 0;
    ll_attr a = {.handled_access_fs = ll_fs_rights(abi)};
    size_t size = sizeof a.handled_access_fs;
    if (abi >= 4) {
        /* no TCP bind or connect (seccomp already refuses socket(); this
         * holds even for a socket the worker would somehow inherit) */
        a.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
        size = offsetof(ll_attr, scoped);
    }
    if (abi >= 6) {
        /* no signals to processes outside the sandbox: a hijacked worker
         * cannot kill its siblings, which run as the same user */
        a.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
        size = sizeof a;
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &a, size, 0);
    if (rs < 0) {
        if (errno == ENOSYS || errno == EOPNOTSUPP)
            return 0;
        return mfs_errf(err, "sandbox: landlock_create_ruleset: %s", strerror(errno));
    }
    uint64_t rd = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    uint64_t wr = rd | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG |
                  LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
    int rc = 0;
    /* outfd -1: a fork server's child, which writes only to files it is
     * handed open, may create or change none (mfs_sandbox_cfg.outdir) */
    if (ll_allow(rs, rootfd, rd) < 0 ||
        (outfd >= 0 && ll_allow(rs, outfd, wr & a.handled_access_fs) < 0))
        rc = mfs_errf(err, "sandbox: landlock_add_rule: %s", strerror(errno));
    if (rc == 0 && SANITIZED) {
        int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (proc >= 0) {
            ll_allow(rs, proc, rd);
            close(proc);
        }
    }
    if (rc == 0 && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
        rc = mfs_errf(err, "sandbox: landlock_restrict_self: %s", strerror(errno));
    close(rs);
    return rc < 0 ? -1 : 1;
}

/* Every capability out of the bounding set but those in keep (a mask). */
static int drop_bounding(uint64_t keep, mfs_err *err)
{
    for (int cap = 0; cap < 64; cap++) {
        if (keep & (1ULL << cap))
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL)
                break; /* past the kernel's last capability */
            if (errno == EPERM) {
                /* a fork server's child lacks CAP_SETPCAP: the server
                 * dropped these already, which is all that matters */
                int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
                if (in == 0)
                    continue;
                if (in < 0 && errno == EINVAL)
                    break;
            }
            return mfs_errf(err, "sandbox: dropping capability %d: %s", cap, strerror(errno));
        }
    }
    return 0;
}

/* Permitted and effective set to exactly keep, inheritable and ambient
 * empty. */
static int set_caps(uint64_t keep, mfs_err *err)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    d[0].effective = d[0].permitted = (uint32_t)keep;
    d[1].effective = d[1].permitted = (uint32_t)(keep >> 32);
    if (syscall(SYS_capset, &h, d) < 0)
        return mfs_errf(err, "sandbox: capset: %s", strerror(errno));
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    return 0;
}

int mfs_sandbox_caps_keep(uint64_t bounding, uint64_t keep, mfs_err *err)
{
    if (drop_bounding(bounding, err) < 0)
        return -1;
    return set_caps(keep, err);
}

int mfs_sandbox_switch(uid_t uid, gid_t gid, const gid_t *groups, int ngroups, mfs_err *err)
{
    if (uid == 0)
        return mfs_errf(err, "sandbox: refusing to run a conversion as uid 0");
    if (setgroups((size_t)ngroups, groups) < 0)
        return mfs_errf(err, "sandbox: setgroups: %s", strerror(errno));
    if (setresgid(gid, gid, gid) < 0)
        return mfs_errf(err, "sandbox: setresgid(%u): %s", (unsigned)gid, strerror(errno));
    /* from uid 0 to another, without PR_SET_KEEPCAPS: the kernel clears
     * the permitted, effective and ambient sets */
    if (setresuid(uid, uid, uid) < 0)
        return mfs_errf(err, "sandbox: setresuid(%u): %s", (unsigned)uid, strerror(errno));
    if (set_caps(0, err) < 0)
        return -1;
    /* belt and braces: the way back must be shut */
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) < 0 || r != uid || e != uid || s != uid || setuid(0) == 0)
        return mfs_errf(err, "sandbox: still able to become root after dropping to uid %u",
                        (unsigned)uid);
    /* a change of user resets it to the system's default: say it again */
    if (!SANITIZED)
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return 0;
}

/* System calls no conversion makes and every escape wants.  Unknown names
 * (a libseccomp older than the syscall) are skipped. */
static const char *const deny[] = {
    /* running other programs, or other processes at all */
    "execve", "execveat", "fork", "vfork",
    /* the network and local sockets */
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    /* other processes' memory */
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    /* mounts, roots and namespaces */
    "mount", "umount2", "pivot_root", "chroot", "setns", "unshare", "fsopen", "fsconfig",
    "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
    /* the kernel's bigger attack surfaces */
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "fanotify_init",
    /* files by handle, past any path check */
    "open_by_handle_at", "name_to_handle_at",
    /* the machine itself */
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup", "iopl",
    "ioperm", "uselib", "lookup_dcookie", "settimeofday", "clock_settime", "adjtimex",
    "clock_adjtime",
    /* System V IPC: a fork server's children share one IPC namespace (made
     * once by the server), so they must not reach each other through it */
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget",
    "semop", "semtimedop", "semctl", "ipc",
    NULL,
};

/* Which of the above a sanitizer build must keep (see SANITIZED). */
static int sanitizer_needs(const char *name)
{
    static const char *const keep[] = {"fork", "vfork", "ptrace", "execve", "execveat", NULL};
    for (int i = 0; keep[i]; i++)
        if (!strcmp(keep[i], name))
            return 1;
    return 0;
}

static int deny_rule(scmp_filter_ctx ctx, const char *name, uint32_t action,
                     unsigned n, const struct scmp_arg_cmp *cmp)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0;
    return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

/* Builds the filter; NULL with err. */
static scmp_filter_ctx build_seccomp(mfs_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        mfs_errf(err, "sandbox: seccomp_init failed");
        return NULL;
    }
    const uint32_t kill_act = SCMP_ACT_KILL_PROCESS;
    /* a system call of another ABI (int 0x80, x32) must not slip past a
     * list written for the native one */
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, kill_act);
    /* a binary tree rather than one compare per listed call: the kernel
     * runs the filter for every system call number when it is loaded (its
     * action cache), and that was most of the load's cost per child */
    if (rc == 0)
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    for (int i = 0; rc == 0 && deny[i]; i++) {
        uint32_t action = kill_act;
        if (SANITIZED && sanitizer_needs(deny[i])) {
            if (strncmp(deny[i], "exec", 4) != 0)
                continue;
            action = SCMP_ACT_ERRNO(EPERM); /* the symbolizer fails quietly */
        }
        rc = deny_rule(ctx, deny[i], action, 0, NULL);
    }
    /* clone3 passes its flags in memory a filter cannot read: answering
     * ENOSYS makes glibc fall back to clone, whose flags it can. */
    if (rc == 0)
        rc = deny_rule(ctx, "clone3", SCMP_ACT_ERRNO(ENOSYS), 0, NULL);
    static const uint64_t ns_flags[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWNET, CLONE_NEWPID,
                                        CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
    for (size_t i = 0; rc == 0 && i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);
        rc = deny_rule(ctx, "clone", kill_act, 1, &c);
    }
    if (rc == 0 && !SANITIZED) {
        /* threads yes (the writers run side by side), processes no */
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
        rc = deny_rule(ctx, "clone", kill_act, 1, &c);
    }
    if (rc < 0) {
        seccomp_release(ctx);
        mfs_errf(err, "sandbox: seccomp: %s", strerror(-rc));
        return NULL;
    }
    return ctx;
}

/* pre: the fork server's share of the sandbox (mfs_sandbox_prepare), the
 * filter compiled once to BPF, or NULL. */
static int load_seccomp(const mfs_sandbox_prepared *pre, mfs_err *err)
{
    if (pre && pre->bpf) {
        /* what seccomp_load would do with the same program; no_new_privs
         * is already set */
        struct sock_fprog prog = {pre->len, pre->bpf};
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
            return mfs_errf(err, "sandbox: seccomp: %s", strerror(errno));
        return 0;
    }
    scmp_filter_ctx ctx = build_seccomp(err);
    if (!ctx)
        return -1;
    int rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc < 0)
        return mfs_errf(err, "sandbox: seccomp: %s", strerror(-rc));
    return 0;
}

int mfs_sandbox_prepare(mfs_sandbox_prepared *p, mfs_err *err)
{
    memset(p, 0, sizeof *p);
    scmp_filter_ctx ctx = build_seccomp(err);
    if (!ctx)
        return -1;
    int fd = memfd_create("meshfs-seccomp", MFD_CLOEXEC);
    int rc = fd >= 0 ? seccomp_export_bpf(ctx, fd) : -errno;
    seccomp_release(ctx);
    off_t len = rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
    if (len > 0 && len % sizeof(struct sock_filter) == 0 &&
        len / sizeof(struct sock_filter) <= BPF_MAXINSNS) {
        struct sock_filter *bpf = malloc((size_t)len);
        if (bpf && pread(fd, bpf, (size_t)len, 0) == len) {
            p->bpf = bpf;
            p->len = (unsigned short)(len / sizeof(struct sock_filter));
        } else {
            free(bpf);
        }
    }
    if (fd >= 0)
        close(fd);
    /* A network namespace costs the kernel ~0.3 ms to make: one for all
     * the server's children.  Nothing in it can be reached (it has only a
     * down loopback) and the filter forbids sockets, so sharing it gives
     * a child no peer.  Likewise one IPC namespace, made here because the
     * server then gives up CAP_SYS_ADMIN: the children's filter forbids
     * every System V IPC call, so sharing it gives them nothing either. */
    if (geteuid() == 0) {
        p->netns = unshare(CLONE_NEWNET) == 0;
        p->ipcns = unshare(CLONE_NEWIPC) == 0;
        p->ns = 1;
    }
    return 0;
}

/* Enters the directory outputs go to.  A worker that will switch user gets
 * a subdirectory of the parent's owned by that user; the parent's own stays
 * out of its reach.  Returns an O_PATH descriptor on it (for Landlock). */
static int enter_outdir(const mfs_sandbox_cfg *cfg, mfs_err *err)
{
    int out = open(cfg->outdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (out < 0)
        return mfs_errf(err, "sandbox: output directory %s: %s", cfg->outdir, strerror(errno));
    if (cfg->drop) {
        int sub = -1;
        if (mkdirat(out, MFS_SANDBOX_OUT_SUBDIR, 0700) == 0 &&
            fchownat(out, MFS_SANDBOX_OUT_SUBDIR, cfg->uid, cfg->gid, AT_SYMLINK_NOFOLLOW) == 0)
            sub = openat(out, MFS_SANDBOX_OUT_SUBDIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            int e = errno;
            close(out);
            return mfs_errf(err, "sandbox: %s/%s: %s", cfg->outdir, MFS_SANDBOX_OUT_SUBDIR,
                            strerror(e));
        }
        close(out);
        out = sub;
    }
    if (fchdir(out) < 0) {
        int e = errno;
        close(out);
        return mfs_errf(err, "sandbox: entering %s: %s", cfg->outdir, strerror(e));
    }
    return out;
}

int mfs_sandbox_enter(const mfs_sandbox_cfg *cfg, mfs_sandbox_state *st, mfs_err *err)
{
    memset(st, 0, sizeof *st);
    st->rootfd = -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return mfs_errf(err, "sandbox: PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
    if (geteuid() == 0 && (!cfg->drop || (!cfg->defer && cfg->uid == 0)))
        return mfs_errf(err, "sandbox: running as root without an unprivileged user to switch to");
    int rootfd = open(cfg->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return mfs_errf(err, "sandbox: source root %s: %s", cfg->root, strerror(errno));
    int outfd = cfg->outdir ? enter_outdir(cfg, err) : -1;
    if (cfg->outdir && outfd < 0) {
        close(rootfd);
        return -1;
    }
    /* a spare that is root without DAC capabilities may not enter a SRC
     * only its models' owners can: it enters it once it is one of them
     * (mfs_sandbox_switch's caller) */
    if (!cfg->outdir && !cfg->defer && fchdir(rootfd) < 0) {
        int e = errno;
        close(rootfd);
        return mfs_errf(err, "sandbox: entering source root %s: %s", cfg->root, strerror(e));
    }
    if (geteuid() == 0) {
        /* "where permitted": a kernel without them still converts */
        const mfs_sandbox_prepared *pre = cfg->prepared;
        st->netns = pre && pre->ns ? pre->netns : unshare(CLONE_NEWNET) == 0;
        st->ipcns = pre && pre->ns ? pre->ipcns : unshare(CLONE_NEWIPC) == 0;
    }
    st->landlock_abi = ll_abi();
    int ll = landlock(rootfd, outfd, st->landlock_abi, err);
    st->rootfd = rootfd; /* the caller's to close */
    if (outfd >= 0)
        close(outfd);
    if (ll < 0)
        return -1;
    st->landlocked = ll;
    if (cfg->drop && cfg->defer) {
        /* a fork server's spare: its user comes with its job
         * (mfs_sandbox_switch); until then it can do nothing but that */
        uint64_t sw = (1ULL << CAP_SETUID) | (1ULL << CAP_SETGID);
        if (mfs_sandbox_caps_keep(sw, sw, err) < 0)
            return -1;
    } else if (cfg->drop) {
        /* no capability is kept: the worker reads exactly what its user
         * (the model's owner, with that user's groups) may read */
        if (drop_bounding(0, err) < 0 ||
            mfs_sandbox_switch(cfg->uid, cfg->gid, cfg->groups, cfg->ngroups, err) < 0)
            return -1;
        st->dropped = 1;
    }
    if (!SANITIZED)
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* nobody of the same uid may ptrace it */
    if (load_seccomp(cfg->prepared, err) < 0)
        return -1;
    st->seccomp = 1;
    return 0;
}

void mfs_sandbox_print_status(FILE *f)
{
    int abi = ll_abi();
    if (abi)
        fprintf(f, "landlock: abi %d\n", abi);
    else
        fprintf(f, "landlock: unsupported (%s)\n", strerror(errno));
    const struct scmp_version *v = seccomp_version();
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL)
        fprintf(f, "seccomp: unsupported\n");
    else
        fprintf(f, "seccomp: yes (libseccomp %u.%u.%u, kill on deny)\n", v->major, v->minor,
                v->micro);
    fprintf(f, "no_new_privs: yes\n");
    fprintf(f, "user switch: when run as root (the model's owner; worker_user, default nobody, for root's)\n");
    fprintf(f, "namespaces: net, ipc when run as root\n");
    fprintf(f, "sanitizer build: %s\n", SANITIZED ? "yes" : "no");
#ifdef MESHFS_TEST_HOOKS
    fprintf(f, "test hooks: yes\n");
#else
    fprintf(f, "test hooks: no\n");
#endif
}

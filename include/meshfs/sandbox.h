/* The worker's sandbox (docs/security.md).
 *
 * assimp's parsers are where a hostile model attacks, so the process that
 * runs them gives up, before the model is opened, everything a conversion
 * does not need:
 *
 *  - no_new_privs, so nothing it does can gain privilege;
 *  - when started as root: the model file's owner, with that user's
 *    groups (a root-owned model: worker_user, default "nobody", with no
 *    supplementary groups), no capabilities at all, and fresh network and
 *    IPC namespaces;
 *  - Landlock: read-only beneath SRC, writes only in its output directory,
 *    no TCP, no signals or abstract sockets outside itself (degrades to
 *    nothing, with a warning from the parent, on kernels without it);
 *  - seccomp: a default-allow filter whose deny list (exec, fork, sockets,
 *    ptrace, mounts, namespaces, kernel keyring, modules, io_uring, ...)
 *    kills the process with SIGSYS.
 *
 * Two halves: the parent's (which user, is the sandbox complete) lives in
 * the core library beside the worker client; the worker's own
 * (mfs_sandbox_enter) is linked into meshfs-worker only, with libseccomp. */
#ifndef MESHFS_SANDBOX_H
#define MESHFS_SANDBOX_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "meshfs/err.h"

/* The most supplementary groups a worker is given (--groups): the parent
 * passes at most this many of the owner's, which can only read less. */
#define MFS_WORKER_GROUPS_MAX 256

/* ---- parent side (src/convert/worker_user.c) --------------------------- */

/* The user root's workers run as, resolved once by its owner (the mount's
 * configuration, meshfs-convert's -u) and handed to its spawner
 * (mfs_spawner_open): no process-wide copy. */
typedef struct mfs_worker_user {
    int known; /* 0: none given (the spawner takes "nobody", or lacking it
                  the kernel's overflow id 65534, which owns nothing) */
    uid_t uid;
    gid_t gid;
} mfs_worker_user;

/* Resolves name (NULL: "nobody") into *u.  Refuses an unknown user and any
 * user with uid 0.  Only matters when the calling process is root. */
int mfs_worker_user_resolve(const char *name, mfs_worker_user *u, mfs_err *err);

/* u itself when known, else the default above. */
mfs_worker_user mfs_worker_user_or_default(const mfs_worker_user *u);

/* Who a worker runs as (see mfs_worker_ident_for). */
typedef struct mfs_worker_ident {
    uid_t uid;
    gid_t gid;
    int ngroups;
    gid_t groups[MFS_WORKER_GROUPS_MAX];
} mfs_worker_ident;

/* 1 with id filled when a worker started by this process must switch
 * user (it runs as root), else 0.  The worker runs as the model's owner
 * only when nobody else can change the model's bytes (job->shared, see
 * mfs_job_set_model_file): else whoever wrote them would read with the
 * owner's rights.
 *   - private (no g+w, no o+w, no ACL), owned by a user other than root:
 *     that user, with the primary group and supplementary groups the user
 *     database gives it (getpwuid_r and getgrouplist, here in the parent:
 *     a sandboxed child reads no name service); an owner it does not know:
 *     that uid with the worker user's group and no others;
 *   - group-writable (g+w, no o+w, no ACL): the worker user's uid with the
 *     file's group as its only group: what the group's members can write,
 *     they can read already;
 *   - o+w or any access ACL, a root-owned model, or an owner not known
 *     (owner_known 0): the worker user with its own group only.
 * At most MFS_WORKER_GROUPS_MAX groups are kept: fewer can only read less. */
struct mfs_job;
int mfs_worker_ident_for(const mfs_worker_user *user, const struct mfs_job *job,
                         mfs_worker_ident *id);

/* Raises RLIMIT_NOFILE's soft limit to the hard limit: every file open
 * through the mount holds a descriptor in the daemon, and systemd's soft
 * default of 1024 would let one user's open files starve everyone's. */
void mfs_nofile_raise(void);

/* ---- worker side (src/worker/sandbox.c, meshfs-worker only) ----------- */

/* The output subdirectory a worker that switched user writes into: the
 * parent's private directory stays the parent's, and the worker's user owns
 * only this.  The parent moves what it vouches for up one level. */
#define MFS_SANDBOX_OUT_SUBDIR "w"

/* Exit status of a worker that could not enter its sandbox: the machine's
 * problem, not the model's.  Its report (if any) carries the reason. */
#define MFS_SANDBOX_EXIT 72


/* What a fork server prepares once for all its children
 * (mfs_sandbox_prepare); zero: nothing prepared. */
typedef struct mfs_sandbox_prepared {
    void *bpf;             /* the seccomp filter compiled (struct sock_filter[len]) */
    unsigned short len;
    int ns;                /* the namespaces below were made (as root) */
    int netns, ipcns;      /* ... and entered */
} mfs_sandbox_prepared;

typedef struct mfs_sandbox_cfg {
    const char *root;   /* SRC: the only tree it may read */
    const mfs_sandbox_prepared *prepared; /* a fork server's, or NULL */
    const char *outdir; /* the parent's private output directory; NULL: none
                           (a fork server's child writes only to files it is
                           handed open, so Landlock lets it create nothing
                           and the working directory is root) */
    int drop;           /* switch to uid/gid (required when running as root) */
    int defer;          /* with drop: not now, the job will say to whom (a
                           fork server's spare); keep CAP_SETUID/SETGID */
    uid_t uid;
    gid_t gid;
    const gid_t *groups; /* the supplementary groups to take (may be none) */
    int ngroups;
} mfs_sandbox_cfg;

typedef struct mfs_sandbox_state {
    int landlock_abi;   /* kernel's Landlock ABI, 0 if unsupported */
    int landlocked;     /* the ruleset is enforced */
    int dropped;        /* runs as cfg->uid with no capability */
    int netns, ipcns;   /* fresh namespaces */
    int seccomp;        /* filter loaded */
    int rootfd;         /* SRC (O_PATH), opened with the starting user's
                           rights, for the caller to enter once it is the
                           model's owner (the path to SRC need not be the
                           owner's to walk); -1 if none.  Close-on-exec. */
} mfs_sandbox_state;

/* Enters every layer, in the order the kernel needs (no_new_privs, output
 * directory, namespaces, Landlock, user and capabilities, seccomp).  On
 * success the working directory is where outputs go: the worker writes
 * "./<fmt>".  -1 with err if a layer that must hold could not be applied;
 * the worker must then exit MFS_SANDBOX_EXIT without opening the model. */
int mfs_sandbox_enter(const mfs_sandbox_cfg *cfg, mfs_sandbox_state *st, mfs_err *err);

/* The user switch itself, for a spare once its job has come (and inside
 * mfs_sandbox_enter otherwise): groups, gid, then uid, after which no
 * capability is left, and a check that setuid(0) fails.  Refuses uid 0.
 * The caller needs CAP_SETUID and CAP_SETGID. */
int mfs_sandbox_switch(uid_t uid, gid_t gid, const gid_t *groups, int ngroups, mfs_err *err);

/* Keeps only the capabilities in bounding (a mask of 1 << CAP_*) in the
 * bounding set, and exactly keep in the permitted and effective sets (the
 * kernel lets those hold what the bounding set no longer does, and a later
 * exec is refused anyway); inheritable and ambient empty.  Dropping from
 * the bounding set needs CAP_SETPCAP, so a process without it only checks
 * the others are already gone there. */
int mfs_sandbox_caps_keep(uint64_t bounding, uint64_t keep, mfs_err *err);

/* The fork server's own confinement (src/worker/server_confine.c), after
 * mfs_sandbox_prepare and before it imports or forks anything:
 * no_new_privs; as root, every capability gone but CAP_SETUID and
 * CAP_SETGID (its children's user switch) and, outside the bounding set,
 * CAP_KILL (it kills its children, which run as other users, when the
 * parent goes); and a seccomp allow-list covering the server and, since
 * they inherit it, its children's import code.  -1 with err. */
int mfs_sandbox_confine_server(mfs_err *err);

/* The fork server's part (include/meshfs/fork_server.h), once, before it
 * forks any child: compiles the seccomp filter to BPF, and (as root)
 * enters the fresh network namespace all its children share.  Each child
 * still runs mfs_sandbox_enter, which then loads the ready program and
 * skips that unshare; everything per job (output directory, IPC
 * namespace, Landlock, user, seccomp itself) stays per child.  -1 only if
 * the filter cannot be built (the children would fail the same way). */
int mfs_sandbox_prepare(mfs_sandbox_prepared *p, mfs_err *err);

/* What this kernel and build offer, one "key: value" per line (for
 * meshfs-worker --sandbox-status and the parent's warning). */
void mfs_sandbox_print_status(FILE *f);

#ifdef MESHFS_TEST_HOOKS
/* Test builds only (src/worker/sandbox_probe.c): attempts each escape in
 * spec ("socket,read=/etc/passwd,...") from inside the sandbox and prints
 * how each was refused. */
void mfs_sandbox_probe(const char *spec);
#endif

#endif

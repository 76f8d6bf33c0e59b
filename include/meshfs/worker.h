/* worker/'s face: the worker process's own code, linked into meshfs-worker
 * alone of the product (libmeshfs_worker):
 *
 *   job.c            one conversion: import once, write every format
 *   sandbox.c        the worker's half of the sandbox (and sandbox_probe.c,
 *                    test builds)
 *   server_confine.c the fork server's own confinement
 *   fork_server.c    the fork server's loop (its protocol: convert.h)
 *
 * The parent's half of the sandbox (who root's workers run as, the exit
 * status of a worker that could not enter it) is convert.h's. */
#ifndef MESHFS_WORKER_H
#define MESHFS_WORKER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "meshfs/convert.h"
#include "meshfs/err.h"

/* ==== one job (src/worker/job.c) ==== */

/* In the worker: import and write everything, fill the report.  Returns 0
 * when the report is meaningful (even if conversion failed). */
int mfs_job_run(const mfs_job *job, mfs_report *rep);

/* ==== the sandbox (src/worker/sandbox.c) ==== */

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
 * Two halves: the parent's (which user: convert.h; is the sandbox complete
 * here: mfs_spawner_sandbox_warning, spawner.h) lives in the core library;
 * the worker's own (below, mfs_sandbox_enter) is linked into meshfs-worker
 * only, with libseccomp. */

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

/* The fork server's part (below), once, before it
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

/* ==== the fork server (src/worker/fork_server.c) ==== */

/* What the server runs in each child (meshfs-worker's two halves). */
typedef struct mfs_fs_worker {
    /* In a fresh child, before its job is known: confine and sandbox for
     * argv's --root (argv holds only that).  Failing, it remembers why,
     * for run to report. */
    void (*prepare)(void *ctx, int argc, char **argv);
    /* Then the job, with the request's argv and its open output files;
     * the report's file is at MFS_REPORT_FD.  Returns the exit status;
     * 0 only when the report was written (the server's part of the child
     * then closes the outputs and says "done"). */
    int (*run)(void *ctx, int argc, char **argv, const int *out, int nout);
    /* Once, in the server before it serves (NULL: none): what every child
     * would otherwise redo (the libraries' one-time set-up), on built-in
     * data only.  Any thread it starts must be joined before it returns. */
    void (*warm)(void *ctx);
    /* the caller's state, given to each of the three (each child has its
     * own copy of it after the fork) */
    void *ctx;
} mfs_fs_worker;

/* The server's main loop (src/worker/fork_server.c, meshfs-worker only).
 * Returns when the parent closes the request socket or dies. */
int mfs_fork_server_run(const mfs_fs_worker *w);

#endif

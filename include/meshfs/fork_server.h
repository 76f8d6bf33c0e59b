/* The fork server: one pre-initialised meshfs-worker that forks a child per
 * conversion (docs/worker.md, docs/security.md).
 *
 * Exec'ing a fresh worker costs ~3 ms of dynamic loading (libassimp and its
 * dependencies) before any work.  The parent (worker_client.c) instead
 * posix_spawns `meshfs-worker --server` once, lazily, and sends it one
 * request per conversion.  The server is single-threaded (it forks) and
 * holds only: fd 0-2, the request socket at MFS_REPORT_FD, the parent's
 * lifeline at MFS_LIFELINE_FD, and the socket of its spare child.
 *
 * The spare: each child is forked and confined *before* its job is known,
 * while the previous conversion runs (on a second core that setup is
 * off the conversion's path).  It runs exactly what a directly spawned
 * worker runs, minus the output directory: the whole sandbox for the
 * request's SRC root, user and MESHFS_* environment (Landlock's read rule
 * is per root, so a spare is made for one such key and thrown away, never
 * reused, when a request comes with another), then blocks on its socket.
 * The server hands it exactly one job and forks the next spare.  A child
 * never runs a second job, and the server wipes each request from its
 * memory before it forks the next spare, so no child holds another
 * model's request.
 *
 * Lifetime: each child has PR_SET_PDEATHSIG SIGKILL (set after its user
 * switch, which clears it), so it dies with the server, which dies with
 * the parent through the lifeline; a child needs no watcher thread.
 *
 * Outputs: the parent creates the job's output files itself and passes
 * them open; the child writes only to those (mfs_job.out_fd), so its
 * Landlock ruleset lets it create or change no file at all.
 *
 * Protocol, on SOCK_SEQPACKET sockets (one message = one record):
 *  request  (parent -> server, request socket): mfs_fs_request followed by
 *           argc NUL-terminated argv strings, then NUL-terminated "K=V"
 *           MESHFS_* environment entries (the child's MESHFS_* environment
 *           is exactly these); SCM_RIGHTS [the report's memfd, reply
 *           socket, then one open output file per requested format in
 *           format order].  The server forwards the message as it is to
 *           the spare, with SCM_RIGHTS [report memfd, output files].
 *           The child writes its report (proto.h) into the memfd, which
 *           the parent reads once "ended" has come: one wakeup per job.
 *  started  (server -> parent, reply socket): mfs_fs_started; SCM_RIGHTS
 *           [pidfd] when the kernel has pidfd_open, so the parent can kill
 *           the child at its deadline without a pid-reuse race.
 *  ended    (server -> parent, reply socket): mfs_fs_ended, the child's
 *           wait status and CPU time, then the server closes the socket.
 * EOF on the reply socket before "ended" means the server died. */
#ifndef MESHFS_FORK_SERVER_H
#define MESHFS_FORK_SERVER_H

#include <stdint.h>

#define MFS_FS_MAGIC 0x53524653u   /* "SFRS" */
#define MFS_FS_READY 0x59444552u   /* "REDY": the server's first message */
#define MFS_FS_MSG_MAX (64u << 10) /* a request is a few paths */
#define MFS_FS_MAX_FDS 16           /* report, reply and one file per format */

typedef struct mfs_fs_request {
    uint32_t magic;
    uint32_t argc;
} mfs_fs_request;

typedef struct mfs_fs_started {
    int32_t pid;   /* 0: fork failed, err says why */
    int32_t err;   /* errno */
} mfs_fs_started;

typedef struct mfs_fs_ended {
    int32_t status;  /* as from wait4 */
    int32_t pad;
    int64_t cpu_us;  /* user + system time of the child */
} mfs_fs_ended;

/* What the server runs in each child (meshfs-worker's two halves). */
typedef struct mfs_fs_worker {
    /* In a fresh child, before its job is known: confine and sandbox for
     * argv's --root, --uid and --gid (argv holds only those).  Failing, it
     * remembers why, for run to report. */
    void (*prepare)(int argc, char **argv);
    /* Then the job, with the request's argv and its open output files;
     * the report's file is at MFS_REPORT_FD.  Returns the exit status. */
    int (*run)(int argc, char **argv, const int *out, int nout);
} mfs_fs_worker;

/* The server's main loop (src/convert/fork_server.c, meshfs-worker only).
 * Returns when the parent closes the request socket or dies. */
int mfs_fork_server_run(const mfs_fs_worker *w);

#endif

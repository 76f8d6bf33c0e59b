/* The fork server: one pre-initialised meshfs-worker that forks a child per
 * conversion (docs/architecture.md §3, docs/security.md).
 *
 * Exec'ing a fresh worker costs ~3 ms of dynamic loading (libassimp and its
 * dependencies) before any work.  The parent (worker_client.c) instead
 * posix_spawns `meshfs-worker --server` once, lazily, and sends it one
 * request per conversion.  The server is single-threaded (it forks) and
 * holds only: fd 0-2, the request socket at MFS_REPORT_FD and the parent's
 * lifeline at MFS_LIFELINE_FD.  Each child moves its own report pipe onto
 * MFS_REPORT_FD, closes everything else and runs exactly what a directly
 * spawned worker runs: limits, then the whole per-job sandbox (output
 * directory, Landlock for its SRC and outdir, user switch, seccomp).
 *
 * Protocol, on SOCK_SEQPACKET sockets (one message = one record):
 *  request  (parent -> server, request socket): mfs_fs_request followed by
 *           argc NUL-terminated argv strings, then NUL-terminated "K=V"
 *           MESHFS_* environment entries (the child's MESHFS_* environment
 *           is exactly these); SCM_RIGHTS [report pipe write end, reply
 *           socket].
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

/* The server's main loop (src/convert/fork_server.c, meshfs-worker only).
 * job_main is the worker's one-conversion entry point, run in each forked
 * child with the request's argv; its return value is the child's exit
 * status.  Returns when the parent closes the request socket or dies. */
int mfs_fork_server_run(int (*job_main)(int argc, char **argv));

#endif

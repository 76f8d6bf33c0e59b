/* The fork server: one pre-initialised meshfs-worker that forks a child per
 * conversion (docs/worker.md, docs/security.md).
 *
 * Exec'ing a fresh worker costs ~3 ms of dynamic loading (libassimp and its
 * dependencies) before any work.  The parent (src/spawn/fork_client.c) instead
 * posix_spawns `meshfs-worker --server` once, lazily, and asks it for
 * children.  The server is single-threaded (it forks) and holds only: fd
 * 0-2, the request socket at MFS_REPORT_FD, the parent's lifeline at
 * MFS_LIFELINE_FD, and the server's end of each child's reply socket.
 *
 * The spare: each child is forked and confined *before* its job is known,
 * while the previous conversion runs (on a second core that setup is off
 * the conversion's path).  It runs exactly what a directly spawned worker
 * runs, minus the output directory and the user: the sandbox for the
 * request's SRC root and MESHFS_* environment (the key: Landlock's read
 * rule is per root), then blocks on its job socket.  A root server's
 * spare waits as root with CAP_SETUID and CAP_SETGID only, and switches
 * to the job's --uid/--gid/--groups (the model's owner) when it comes.
 * The server hands the
 * spare to the parent, which sends it its job itself (one wake-up and one
 * descriptor pass less than through the server) and asks for the next
 * one; a spare of another key is retired unused (its socket closed).  A
 * child never runs a second job, and the server wipes each request it
 * sees from its memory before it forks the next spare, so no child holds
 * another model's request.
 *
 * Lifetime: each child has PR_SET_PDEATHSIG SIGKILL (set again after its
 * user switch, which clears it), so it dies with the server, which dies with
 * the parent through the lifeline; a child needs no watcher thread.
 *
 * Outputs: the parent creates the job's output files itself and passes
 * them open; the child writes only to those (mfs_job.out_fd), so its
 * Landlock ruleset lets it create or change no file at all.
 *
 * Protocol, on SOCK_SEQPACKET sockets (one message = one record):
 *  request  (parent -> server, request socket; when the parent holds no
 *           spare for the key): mfs_fs_request followed by argc
 *           NUL-terminated argv strings, then NUL-terminated "K=V"
 *           MESHFS_* environment entries (the child's MESHFS_* environment
 *           is exactly these); SCM_RIGHTS [the report's memfd, reply
 *           socket, the write end of the "done" pipe, then one open output
 *           file per requested format in format order].  The server forks
 *           a child for it and forwards the message as it is, with
 *           SCM_RIGHTS [report memfd, "done", output files]; then it
 *           offers the next spare.
 *  started  (server -> parent, the request's reply socket): mfs_fs_started;
 *           SCM_RIGHTS [pidfd] when the kernel has pidfd_open, so the
 *           parent can kill the child at its deadline without a pid-reuse
 *           race.
 *  spare    (server -> parent, request socket; one for each request and
 *           each "next", in order, so the parent knows the key of each):
 *           mfs_fs_spare; SCM_RIGHTS [the spare's job socket, its reply
 *           socket, its pidfd (when the kernel has pidfd_open)], or none
 *           with pid 0 when no spare could be made.
 *  job      (parent -> spare, its job socket): what a request is, with
 *           SCM_RIGHTS [report memfd, "done", output files].
 *  next     (parent -> server, request socket; after it gave a spare its
 *           job): mfs_fs_request with magic MFS_FS_NEXT and only the key's
 *           argv (argv[0], --root) and environment: make the
 *           next spare for this key.
 *  done     (child -> parent, one byte on the "done" pipe; only after a
 *           report it could write and exit 0 with): the report in the
 *           memfd is complete and the child has closed every output.  The
 *           parent may then use the report without waiting for the exit,
 *           once it has checked that no output is still open for writing
 *           (src/spawn/run.c); else it waits for "ended".
 *  ended    (server -> parent, reply socket): mfs_fs_ended, the child's
 *           wait status and CPU time, then the server closes the socket.
 * EOF on the reply socket before "ended" means the server died. */
#ifndef MESHFS_FORK_SERVER_H
#define MESHFS_FORK_SERVER_H

#include <stdint.h>

#define MFS_FS_MAGIC 0x32524653u   /* "SFR2": a request */
#define MFS_FS_NEXT 0x5458454eu    /* "NEXT": make the next spare for a key */
#define MFS_FS_SPARE 0x52415053u   /* "SPAR": a spare for the parent */
#define MFS_FS_READY 0x59444552u   /* "REDY": the server's first message */
#define MFS_FS_MSG_MAX (64u << 10) /* a request is a few paths */
#define MFS_FS_MAX_FDS 16           /* report, reply, done and one file per format */

typedef struct mfs_fs_request {
    uint32_t magic;
    uint32_t argc;
} mfs_fs_request;

typedef struct mfs_fs_started {
    int32_t pid;   /* 0: fork failed, err says why */
    int32_t err;   /* errno */
} mfs_fs_started;

typedef struct mfs_fs_spare {
    uint32_t magic; /* MFS_FS_SPARE */
    int32_t pid;    /* 0: none was made, err says why */
    int32_t err;    /* errno */
} mfs_fs_spare;

typedef struct mfs_fs_ended {
    int32_t status;  /* as from wait4 */
    int32_t pad;
    int64_t cpu_us;  /* user + system time of the child */
} mfs_fs_ended;

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

/* The spawner's private contract (include/meshfs/spawner.h is its public
 * one): running meshfs-worker from a parent (meshfs-convert, the mount
 * daemon), split by job:
 *
 *   spawner.c     the worker's path, a spawner's life, the one-shot tools' spawner
 *   argv.c        a job's argv
 *   direct.c      posix_spawn, the report and the reaping of a direct worker
 *   fork_client.c the fork server's client (fork_server.h)
 *   outputs.c     claiming and purging output folders
 *   run.c         one conversion through either transport
 *   probe.c       is the sandbox complete here
 *   exts.c        which files are models
 *
 * posix_spawn rather than fork: the daemon is multithreaded, and a forked
 * child would inherit locks held by other threads.  glibc's posix_spawn
 * uses CLONE_VFORK, so spawning is also cheap for a large parent. */
#ifndef MESHFS_SPAWN_INT_H
#define MESHFS_SPAWN_INT_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/pidfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "meshfs/fdpass.h"
#include "meshfs/fork_server.h"
#include "meshfs/sandbox.h"
#include "meshfs/spawner.h"


/* What a server's child is prepared for (fork_server.c's make_key): argv[0]
 * and the --root pair (kargc strings), then the MESHFS_* environment,
 * NUL-separated.  Not the user: a child takes its job's. */
typedef struct srv_key {
    char *data;
    size_t len;
    int kargc;
} srv_key;

/* A spare the server handed over ("spare", fork_server.h). */
typedef struct srv_spare {
    pid_t pid;
    int job;   /* where its one job goes */
    int reply; /* where the server says "ended" */
    int pidfd; /* -1 without pidfd_open */
    srv_key key;
} srv_spare;

#define MAX_SPARES 8

struct mfs_spawner {
    char path[PATH_MAX];     /* meshfs-worker */
    /* Every worker gets the read end of this pipe, whose write end only
     * this process holds (close-on-exec).  When the parent dies, however
     * it dies, the workers read EOF and exit.  PR_SET_PDEATHSIG would not
     * do: it fires when the spawning *thread* exits, and FUSE retires idle
     * threads. */
    int lifeline[2];
    char **exts;             /* NULL-terminated, or NULL: exts_err says why */
    char exts_err[MFS_ERR_MAX];
    /* The fork server (fork_server.h): spawned on the first conversion,
     * respawned on the next one after it died.  srv_mu guards these and
     * serialises sending requests (a SEQPACKET send is one record, but the
     * socket must not be closed under another thread's send). */
    pthread_mutex_t srv_mu;
    int srv_sock;            /* request socket, -1: no server running */
    pid_t srv_pid;
    int srv_failures;        /* consecutive failed starts */
    unsigned long srv_spawns;
    /* Spares the server handed over, and the keys of those asked for and
     * not received yet, in the order asked (one "spare" answers each
     * request and each "next"). */
    srv_spare spares[MAX_SPARES];
    int nspares;
    srv_key *asked;
    size_t nasked, capasked;
    pthread_mutex_t sandbox_mu; /* guards the two below */
    int sandbox_asked;
    char sandbox_warning[512];
};

/* argv for one job; strings live in `store`. */
typedef struct argv_buf {
    char *argv[40];
    int argc;
    char store[8][64];
    int used;
    char groups[MFS_WORKER_GROUPS_MAX * 11 + 1]; /* "G,G,..." */
    char model_id[48];                           /* "DEV:INO" */
} argv_buf;

/* A child of the server, as the parent sees it. */
typedef struct srv_child {
    int reply;
    pid_t pid;
    int pidfd;
} srv_child;


/* ---- argv.c ---- */
void mfs_sp_build_argv(argv_buf *a, const char *worker, const mfs_job *job, char *formats,
                       size_t fsz, const mfs_worker_ident *id);

/* ---- direct.c ---- */
void mfs_sp_describe_death(int status, const mfs_job *job, double cpu_s, char *out, size_t n,
                           int *transient);
int mfs_sp_read_memfd_report(int fd, uint8_t **buf, size_t *len);
int mfs_sp_read_report(int fd, double deadline, uint8_t **buf, size_t *len);
int mfs_sp_reap(pid_t pid, double deadline, int *timed_out, double *cpu_s);
int mfs_sp_spawn(const mfs_spawner *sp, char **argv, int report_fd, int out_fd, pid_t *pid,
                 mfs_err *err);
int mfs_sp_spawn_env(const mfs_spawner *sp, char **argv, int report_fd, int out_fd, pid_t *pid,
                     char **envp, mfs_err *err);
int mfs_sp_wait_readable(int fd, double deadline);

/* ---- exts.c ---- */
void mfs_sp_load_exts(mfs_spawner *sp);

/* ---- fork_client.c ---- */
int mfs_sp_outputs_unwritable(const int *rd, int n);
int mfs_sp_srv_reap(srv_child *ch, double deadline, int *timed_out, double *cpu_s, int *lost);
void mfs_sp_srv_release(srv_child *ch);
int mfs_sp_srv_spawn(mfs_spawner *sp, char **argv, int report_w, int done_w, const int *out,
                     int nout, srv_child *ch);
void mfs_sp_srv_stop_locked(mfs_spawner *sp);
int mfs_sp_srv_wait_done(const srv_child *ch, int done_r, double deadline);

/* ---- outputs.c ---- */
void mfs_sp_claim_fd_outputs(const mfs_job *job, mfs_report *rep, int dfd, const int *out);
void mfs_sp_claim_outputs(const mfs_job *job, mfs_report *rep, int drop, uid_t uid);
int mfs_sp_create_outputs(const mfs_job *job, int *dfd, int *out, int *rd, int *nout);

/* ---- run.c ---- */
int mfs_sp_spawner_run(mfs_spawner *sp, const mfs_job *job, mfs_report *rep, mfs_err *err);

/* Monotonic seconds: the deadlines of a run. */
static inline double mfs_sp_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif

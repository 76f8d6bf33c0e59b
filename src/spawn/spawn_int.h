/* The spawner's private contract (include/meshfs/spawner.h is its public
 * one): running meshfs-worker from a parent (meshfs-convert, the mount
 * daemon), split by job:
 *
 *   spawner.c     the worker's path, a spawner's life
 *   argv.c        a job's argv
 *   direct.c      posix_spawn, the report and the reaping of a direct
 *                 worker: the direct transport
 *   fork_client.c the fork server's client (convert.h): the fork-server
 *                 transport
 *   outputs.c     claiming and purging output folders
 *   run.c         one conversion through the spawner's transport
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

#include "meshfs/convert.h"
#include "meshfs/spawner.h"


/* What a server's child is prepared for (fork_server.c's make_key): argv[0]
 * and the --root pair (kargc strings), then the MESHFS_* environment,
 * NUL-separated.  Not the user: a child takes its job's. */
typedef struct srv_key {
    char *data;
    size_t len;
    int kargc;
} srv_key;

/* A spare the server handed over ("spare", convert.h). */
typedef struct srv_spare {
    pid_t pid;
    int job;   /* where its one job goes */
    int reply; /* where the server says "ended" */
    int pidfd; /* -1 without pidfd_open */
    srv_key key;
} srv_spare;

#define MAX_SPARES 8

typedef struct sp_transport sp_transport;

struct mfs_spawner {
    char path[PATH_MAX];     /* meshfs-worker */
    /* How conversions reach a worker, chosen once at open: the fork
     * server's transport, or with MESHFS_FORK_SERVER=0 the direct one. */
    const sp_transport *transport;
    mfs_worker_user user;    /* root's workers' user, known when root (convert.h) */
    int children_landlocked; /* Landlock in force in a server's children:
                                the kernel has it, no test hook leaves it out */
    /* Every worker gets the read end of this pipe, whose write end only
     * this process holds (close-on-exec).  When the parent dies, however
     * it dies, the workers read EOF and exit.  PR_SET_PDEATHSIG would not
     * do: it fires when the spawning *thread* exits, and FUSE retires idle
     * threads. */
    int lifeline[2];
    char **exts;             /* NULL-terminated, or NULL: exts_err says why */
    char exts_err[MFS_ERR_MAX];
    /* The fork server (convert.h): spawned on the first conversion,
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


/* One conversion's worker, from its start to its outputs' claim.  run.c
 * fills the first fields; the transport that carries it the rest. */
typedef struct sp_run {
    mfs_spawner *sp;
    const mfs_job *job;
    char **argv;
    int drop;                /* the worker switches to uid (convert.h) */
    uid_t uid;
    const sp_transport *t;   /* the transport carrying it, set by start */
    /* direct.c */
    pid_t pid;
    int report_r;            /* the report pipe's read end */
    /* fork_client.c */
    srv_child ch;
    int rfd;                 /* the child's report: a memfd */
    int done_r;              /* the child's "done" pipe */
    int dfd;                 /* outdir, and its outputs opened read-only */
    int rd[MFS_FMT_COUNT];
    int nout;
} sp_run;

/* How a worker ended, as its transport saw it. */
typedef struct sp_ended {
    int got;        /* 1: report read to its end, 0: the deadline passed,
                       -1: the report outgrew MFS_PROTO_MAX */
    uint8_t *buf;   /* the report (malloc'ed, may be NULL), len bytes */
    size_t len;
    int status;     /* the wait status */
    int timed_out;  /* killed at the deadline */
    int lost;       /* the status is unknown: the fork server died first */
    double cpu_s;   /* CPU time it used */
} sp_ended;

/* A way of running a worker.  run.c drives every conversion through
 * these, never asking which transport it has.
 *
 * Fallback is the transport's own decision: the fork server's start
 * hands a run it cannot carry (no server could be started, three failed
 * starts in a row, its outputs could not be made, the request could not
 * be sent) to the direct transport's start, which then carries it (r->t
 * says so).  The direct transport has no fallback. */
struct sp_transport {
    /* Starts r's worker and sets r->t.  rep is the zeroed report.  0, or
     * -1 with err when no worker could be started at all. */
    int (*start)(mfs_spawner *sp, sp_run *r, mfs_report *rep, mfs_err *err);
    /* Waits for the worker until deadline (then kills it) and says how it
     * ended; releases what start took except the outputs. */
    void (*wait)(sp_run *r, double deadline, sp_ended *e);
    /* Files the outputs for rep: kept where rep vouches for them and they
     * are sound, else removed (and rep told). */
    void (*claim)(sp_run *r, mfs_report *rep);
    /* At mfs_spawner_close: ends what the transport keeps running. */
    void (*close)(mfs_spawner *sp);
};

extern const sp_transport mfs_sp_direct;   /* direct.c */
extern const sp_transport mfs_sp_forksrv;  /* fork_client.c */

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

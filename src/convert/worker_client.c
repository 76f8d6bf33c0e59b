/* Running meshfs-worker from a parent (meshfs-convert, the mount daemon):
 * the spawner (include/meshfs/spawner.h).
 *
 * posix_spawn rather than fork: the daemon is multithreaded, and a forked
 * child would inherit locks held by other threads.  glibc's posix_spawn
 * uses CLONE_VFORK, so spawning is also cheap for a large parent. */
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

extern char **environ;

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

static void find_worker(char *out, size_t n)
{
    const char *env = getenv("MESHFS_WORKER");
    if (env && env[0]) {
        snprintf(out, n, "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len > 0) {
        self[len] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, n, "%s/meshfs-worker", self);
            if (access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, n, "%s/meshfs-worker", MESHFS_LIBEXECDIR);
}

const char *mfs_spawner_path(const mfs_spawner *sp)
{
    return sp->path;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* argv for one job; strings live in `store`. */
typedef struct argv_buf {
    char *argv[40];
    int argc;
    char store[8][64];
    int used;
    char groups[MFS_WORKER_GROUPS_MAX * 11 + 1]; /* "G,G,..." */
    char model_id[48];                           /* "DEV:INO" */
} argv_buf;

static void arg(argv_buf *a, const char *s)
{
    if (a->argc < 39)
        a->argv[a->argc++] = (char *)s;
    a->argv[a->argc] = NULL;
}

static void arg_num(argv_buf *a, const char *flag, unsigned long long v)
{
    if (a->used >= 8)
        return;
    snprintf(a->store[a->used], sizeof a->store[0], "%llu", v);
    arg(a, flag);
    arg(a, a->store[a->used++]);
}

/* id: whom the worker must switch to (we run as root), or NULL. */
static void build_argv(argv_buf *a, const char *worker, const mfs_job *job, char *formats,
                       size_t fsz, const mfs_worker_ident *id)
{
    size_t n = 0;
    formats[0] = '\0';
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if (job->formats & (1u << f))
            n += (size_t)snprintf(formats + n, fsz - n, "%s%s", n ? "," : "", mfs_format_get((mfs_format)f)->name);
    memset(a, 0, sizeof *a);
    arg(a, worker);
    arg(a, "--root");
    arg(a, job->root);
    arg(a, "--model");
    arg(a, job->model);
    arg(a, "--outdir");
    arg(a, job->outdir);
    arg(a, "--formats");
    arg(a, formats);
    if (job->opts.pretrans)
        arg(a, "--pretrans");
    if (job->opts.fmi_textures)
        arg(a, "--fmi-textures");
    if (job->opts.reverse_winding)
        arg(a, "--reverse-winding");
    if (job->opts.source_frame)
        arg(a, "--source-frame");
    if (job->opts.fmd_raw)
        arg(a, "--fmd-raw");
    if (job->opts.vrt_plain)
        arg(a, "--vrt-plain");
    if (job->opts.importer != MFS_IMPORTER_AUTO) {
        arg(a, "--importer");
        arg(a, mfs_importer_name(job->opts.importer));
    }
    if (job->opts.model_path) {
        arg(a, "--model-path");
        arg(a, job->opts.model_path);
    }
    if (job->model_id_known) {
        snprintf(a->model_id, sizeof a->model_id, "%llu:%llu", (unsigned long long)job->model_dev,
                 (unsigned long long)job->model_ino);
        arg(a, "--model-id");
        arg(a, a->model_id);
    }
    arg_num(a, "--memory", job->limits.memory);
    arg_num(a, "--cpu", job->limits.cpu_s);
    arg_num(a, "--output", job->limits.output);
    if (id) {
        arg_num(a, "--uid", id->uid);
        arg_num(a, "--gid", id->gid);
        if (id->ngroups) {
            size_t gn = 0;
            for (int i = 0; i < id->ngroups; i++)
                gn += (size_t)snprintf(a->groups + gn, sizeof a->groups - gn, "%s%u", i ? "," : "",
                                       (unsigned)id->groups[i]);
            arg(a, "--groups");
            arg(a, a->groups);
        }
    }
}

static int spawn_env(const mfs_spawner *sp, char **argv, int report_fd, int out_fd, pid_t *pid,
                     char **envp, mfs_err *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (!getenv("MESHFS_WORKER_STDERR"))
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (report_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, report_fd, MFS_REPORT_FD);
    if (sp->lifeline[0] >= 0)
        posix_spawn_file_actions_adddup2(&fa, sp->lifeline[0], MFS_LIFELINE_FD);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawn(pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        return mfs_errf(err, "cannot start worker %s: %s", argv[0], strerror(rc));
    return 0;
}

static int spawn(const mfs_spawner *sp, char **argv, int report_fd, int out_fd, pid_t *pid,
                 mfs_err *err)
{
    return spawn_env(sp, argv, report_fd, out_fd, pid, environ, err);
}

/* 1 once fd is readable, has hung up or poll fails (the read that follows
 * says which); 0 when the deadline passes first. */
static int wait_readable(int fd, double deadline)
{
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, POLLIN, 0};
        int timeout_ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
        int r = poll(&p, 1, timeout_ms);
        if (r > 0 || (r < 0 && errno != EINTR))
            return 1;
    }
}

/* Reads the report until EOF or the deadline.  Returns 1 on EOF, 0 on
 * timeout, -1 if the report outgrew its cap. */
static int read_report(int fd, double deadline, uint8_t **buf, size_t *len)
{
    size_t cap = 4096;
    *buf = malloc(cap);
    *len = 0;
    if (!*buf)
        return -1;
    for (;;) {
        if (!wait_readable(fd, deadline))
            return 0;
        if (*len == cap) {
            if (cap >= MFS_PROTO_MAX)
                return -1;
            cap *= 2;
            uint8_t *nb = realloc(*buf, cap);
            if (!nb)
                return -1;
            *buf = nb;
        }
        ssize_t n = read(fd, *buf + *len, cap - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 1;
        *len += (size_t)n;
    }
}

/* The report a server's child wrote into fd (a memfd), the child being
 * gone.  1, or -1 if it outgrew its cap. */
static int read_memfd_report(int fd, uint8_t **buf, size_t *len)
{
    struct stat st;
    *buf = NULL;
    *len = 0;
    if (fstat(fd, &st) < 0 || st.st_size < 0)
        return 1; /* as if empty: the death explains it */
    if ((uint64_t)st.st_size > MFS_PROTO_MAX)
        return -1;
    *buf = malloc((size_t)st.st_size + 1);
    if (!*buf)
        return -1;
    ssize_t n = pread(fd, *buf, (size_t)st.st_size, 0);
    *len = n > 0 ? (size_t)n : 0;
    return 1;
}

/* Waits for pid until the deadline, then kills it.  Returns the wait
 * status; *timed_out tells whether we killed it, *cpu_s the CPU time it used. */
static int reap(pid_t pid, double deadline, int *timed_out, double *cpu_s)
{
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    *timed_out = 0;
    for (;;) {
        pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return 0;
        if (now_s() >= deadline) {
            kill(pid, SIGKILL);
            *timed_out = 1;
            while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
                ;
            break;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (cpu_s)
        *cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec / 1e6;
    return status;
}

/* Why a worker died without a report.  A SIGKILL that neither the deadline
 * nor the CPU limit explains came from outside (the OOM killer, an admin, a
 * test): not the model's fault, so *transient is set and it is not
 * remembered against the model. */
static void describe_death(int status, const mfs_job *job, double cpu_s, char *out, size_t n,
                           int *transient)
{
    *transient = 0;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *name = sigabbrev_np(sig);
        int cpu_limit = job->limits.cpu_s && cpu_s >= (double)job->limits.cpu_s;
        if (sig == SIGXCPU || (sig == SIGKILL && cpu_limit)) {
            snprintf(out, n, "importer exceeded the CPU time limit of %llu s",
                     (unsigned long long)job->limits.cpu_s);
        } else if (sig == SIGKILL) {
            snprintf(out, n, "worker was killed (SIGKILL) from outside after %.1f s of CPU", cpu_s);
            *transient = 1;
        } else if (sig == SIGSYS) {
            /* the seccomp filter (src/convert/sandbox.c): no conversion
             * makes those calls, a hijacked importer does */
            snprintf(out, n, "importer killed by the sandbox (SIGSYS): it attempted a forbidden "
                             "system call");
        } else if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
                   sig == SIGABRT || sig == SIGTRAP || sig == SIGXFSZ) {
            /* raised by the process itself: what importing the model did */
            snprintf(out, n, "importer crashed: SIG%s", name ? name : "?");
        } else {
            /* SIGTERM, SIGINT (a ^C to the daemon's terminal reaches its
             * workers too), SIGHUP...: nothing the importer raises itself,
             * and nothing the daemon sends, so not the model's failure */
            snprintf(out, n, "worker was killed by SIG%s from outside", name ? name : "?");
            *transient = 1;
        }
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == MFS_SANDBOX_EXIT) {
        snprintf(out, n, "worker could not enter its sandbox");
        *transient = 1;
    } else if (WIFEXITED(status)) {
        snprintf(out, n, "worker exited with status %d without a report", WEXITSTATUS(status));
    } else {
        snprintf(out, n, "worker ended abnormally");
    }
}

/* ---- the fork server (fork_server.h) ---- */

/* Above the numbers the server's fds are dup2()ed to (see mfs_spawner_open). */
static int high_fd(int fd)
{
    if (fd < 0 || fd > MFS_LIFELINE_FD)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, MFS_LIFELINE_FD + 1);
    close(fd);
    return high;
}

static void key_free(srv_key *k)
{
    free(k->data);
    k->data = NULL;
    k->len = 0;
}

static int key_same(const srv_key *a, const srv_key *b)
{
    return a->len == b->len && a->kargc == b->kargc && memcmp(a->data, b->data, a->len) == 0;
}

/* The key of the child argv needs (see srv_key). */
static int key_make(char **argv, srv_key *k)
{
    size_t n = strlen(argv[0]) + 1;
    for (int i = 1; argv[i]; i++)
        if (argv[i + 1] && !strcmp(argv[i], "--root"))
            n += strlen(argv[i]) + strlen(argv[i + 1]) + 2;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "MESHFS_", 7) == 0)
            n += strlen(*e) + 1;
    k->data = malloc(n);
    if (!k->data)
        return -1;
    k->len = 0;
    k->kargc = 0;
#define PUT(str)                                                                                   \
    do {                                                                                           \
        size_t l_ = strlen(str) + 1;                                                               \
        memcpy(k->data + k->len, str, l_);                                                         \
        k->len += l_;                                                                              \
    } while (0)
    PUT(argv[0]);
    k->kargc++;
    for (int i = 1; argv[i]; i++)
        if (argv[i + 1] && !strcmp(argv[i], "--root")) {
            PUT(argv[i]);
            PUT(argv[i + 1]);
            k->kargc += 2;
            i++;
        }
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "MESHFS_", 7) == 0)
            PUT(*e);
#undef PUT
    return 0;
}

/* Retires a spare: EOF on its job socket, and it exits unused. */
static void spare_close(srv_spare *s)
{
    close(s->job);
    close(s->reply);
    if (s->pidfd >= 0)
        close(s->pidfd);
    key_free(&s->key);
}

static void spare_drop_locked(mfs_spawner *sp, int i)
{
    spare_close(&sp->spares[i]);
    sp->spares[i] = sp->spares[--sp->nspares];
}

static void srv_stop_locked(mfs_spawner *sp)
{
    while (sp->nspares)
        spare_drop_locked(sp, 0);
    for (size_t i = 0; i < sp->nasked; i++)
        key_free(&sp->asked[i]);
    sp->nasked = 0;
    if (sp->srv_sock < 0)
        return;
    close(sp->srv_sock);
    sp->srv_sock = -1;
    /* EOF on its request socket ends it (it kills and reaps its children
     * first, fork_server.c); SIGKILL for one that hangs or is gone. */
    for (int i = 0; i < 1000; i++) {
        pid_t r = waitpid(sp->srv_pid, NULL, WNOHANG);
        if (r == sp->srv_pid || (r < 0 && errno != EINTR))
            return;
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(sp->srv_pid, SIGKILL);
    while (waitpid(sp->srv_pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* 0 with a running server, -1 if none could be started (the caller spawns
 * the worker directly). */
static int srv_start_locked(mfs_spawner *sp)
{
    if (sp->srv_sock >= 0)
        return 0;
    /* a worker without a server mode, or a machine that refuses, is tried
     * a few times and then left alone: direct spawning still works */
    if (sp->srv_failures >= 3)
        return -1;
    const char *off = getenv("MESHFS_FORK_SERVER");
    if (off && !strcmp(off, "0"))
        return -1;
    int s[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s) < 0) {
        sp->srv_failures++;
        return -1;
    }
    s[0] = high_fd(s[0]);
    s[1] = high_fd(s[1]);
    char *argv[] = {sp->path, "--server", NULL};
    pid_t pid;
    /* LD_BIND_NOW: the dynamic linker resolves every symbol once, in the
     * server, instead of lazily again in each child (~0.3 ms a model) */
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **envp = calloc(ne + 2, sizeof *envp);
    if (envp) {
        memcpy(envp, environ, ne * sizeof *envp);
        envp[ne] = "LD_BIND_NOW=1";
    }
    /* the server's request socket sits where a worker's report goes */
    int rc = s[0] < 0 || s[1] < 0 ? -1
                                  : spawn_env(sp, argv, s[1], -1, &pid, envp ? envp : environ, NULL);
    free(envp);
    if (rc < 0) {
        if (s[0] >= 0)
            close(s[0]);
        if (s[1] >= 0)
            close(s[1]);
        sp->srv_failures++;
        return -1;
    }
    close(s[1]);
    struct pollfd p = {s[0], POLLIN, 0};
    uint32_t ready = 0;
    int r;
    while ((r = poll(&p, 1, 10000)) < 0 && errno == EINTR)
        ;
    if (r != 1 || recv(s[0], &ready, sizeof ready, 0) != sizeof ready || ready != MFS_FS_READY) {
        close(s[0]);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        sp->srv_failures++;
        return -1;
    }
    sp->srv_sock = s[0];
    sp->srv_pid = pid;
    sp->srv_failures = 0;
    sp->srv_spawns++;
    return 0;
}


/* A child of the server, as the parent sees it. */
typedef struct srv_child {
    int reply;
    pid_t pid;
    int pidfd;
} srv_child;

/* One request (fork_server.h) for argv and the requester's MESHFS_*
 * environment, as the child will read it; NULL if it is too long. */
static char *build_request(char **argv, size_t *len)
{
    static const size_t max = MFS_FS_MSG_MAX;
    /* sized to the request (a few hundred bytes), not to max: a 64 KiB
     * block per conversion grew and trimmed the heap each time */
    size_t need = sizeof(mfs_fs_request);
    for (int i = 0; argv[i]; i++)
        need += strlen(argv[i]) + 1;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "MESHFS_", 7) == 0)
            need += strlen(*e) + 1;
    if (need > max)
        return NULL;
    char *buf = malloc(need);
    if (!buf)
        return NULL;
    mfs_fs_request rq = {MFS_FS_MAGIC, 0};
    size_t n = sizeof rq;
    for (int i = 0; argv[i]; i++, rq.argc++) {
        size_t l = strlen(argv[i]) + 1;
        memcpy(buf + n, argv[i], l);
        n += l;
    }
    /* the child's test hooks and switches read the requester's
     * environment as it is now */
    for (char **e = environ; *e; e++) {
        size_t l = strlen(*e) + 1;
        if (strncmp(*e, "MESHFS_", 7) != 0 || n + l > need)
            continue;
        memcpy(buf + n, *e, l);
        n += l;
    }
    memcpy(buf, &rq, sizeof rq);
    *len = n;
    return buf;
}

/* One record with nfds descriptors; 0, or -1 (the peer is gone). */
static int send_fds(int sock, const void *buf, size_t n, const int *fds, int nfds)
{
    return nfds > MFS_FS_MAX_FDS ? -1 : mfs_send_fds(sock, buf, n, fds, nfds, 0);
}

/* Remembers that a "spare" for k is coming (the server answers each
 * request and "next" with one, in order), before the message is sent:
 * one it could not note would shift every later spare onto the wrong key.
 * -1 on out of memory (then nothing may be sent). */
static int srv_expect_locked(mfs_spawner *sp, const srv_key *k)
{
    if (sp->nasked == sp->capasked) {
        size_t nc = sp->capasked ? sp->capasked * 2 : 8;
        srv_key *na = realloc(sp->asked, nc * sizeof *na);
        if (!na)
            return -1;
        sp->asked = na;
        sp->capasked = nc;
    }
    srv_key c = {malloc(k->len), k->len, k->kargc};
    if (!c.data)
        return -1;
    memcpy(c.data, k->data, k->len);
    sp->asked[sp->nasked++] = c;
    return 0;
}

/* The message srv_expect_locked was for could not be sent. */
static void srv_unexpect_locked(mfs_spawner *sp)
{
    key_free(&sp->asked[--sp->nasked]);
}

/* Reads one "spare" from the server, waiting up to wait_s for it.  1: one
 * was read (kept, or dropped if none was made), 0: none yet, -1: the
 * server is gone. */
static int srv_collect_locked(mfs_spawner *sp, double wait_s)
{
    if (!sp->nasked)
        return 0;
    struct pollfd p = {sp->srv_sock, POLLIN, 0};
    int r;
    while ((r = poll(&p, 1, wait_s > 0 ? (int)(wait_s * 1000) + 1 : 0)) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return 0;
    mfs_fs_spare m;
    memset(&m, 0, sizeof m);
    int fds[3] = {-1, -1, -1}, nfds = 0;
    ssize_t n = mfs_recv_fds(sp->srv_sock, &m, sizeof m, MSG_DONTWAIT, fds, 3, &nfds, NULL);
    if (n < 0 && errno == EAGAIN)
        return 0;
    if (n <= 0)
        return -1;
    srv_key k = sp->asked[0];
    memmove(sp->asked, sp->asked + 1, --sp->nasked * sizeof *sp->asked);
    if (n != (ssize_t)sizeof m || m.magic != MFS_FS_SPARE || m.pid <= 0 || nfds < 2) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        key_free(&k);
        return 1;
    }
    if (sp->nspares == MAX_SPARES)
        spare_drop_locked(sp, 0);
    sp->spares[sp->nspares++] = (srv_spare){m.pid, fds[0], fds[1], fds[2], k};
    return 1;
}

/* Takes a spare for k: one held, or one on its way (waited for: the
 * server is forking it).  0 with *out, or -1 (none; the server may be
 * gone, which the request that follows finds out). */
static int srv_take_spare_locked(mfs_spawner *sp, const srv_key *k, srv_spare *out)
{
    while (srv_collect_locked(sp, 0) > 0)
        ;
    for (;;) {
        /* spares for another root, user or environment will not be used */
        for (int i = sp->nspares - 1; i >= 0; i--)
            if (!key_same(&sp->spares[i].key, k))
                spare_drop_locked(sp, i);
        for (int i = 0; i < sp->nspares; i++)
            if (key_same(&sp->spares[i].key, k)) {
                *out = sp->spares[i];
                sp->spares[i] = sp->spares[--sp->nspares];
                return 0;
            }
        int coming = 0;
        for (size_t i = 0; i < sp->nasked && !coming; i++)
            coming = key_same(&sp->asked[i], k);
        if (!coming || srv_collect_locked(sp, 10) <= 0)
            return -1;
    }
}

/* Receives one message of size n on the reply socket, with at most one
 * fd; 1 on success, 0 on EOF or a short message, -1 at the deadline. */
static int srv_recv(int sock, void *out, size_t n, int *fd, double deadline)
{
    if (fd)
        *fd = -1;
    if (!wait_readable(sock, deadline))
        return -1;
    int f = -1, nf = 0;
    ssize_t r = mfs_recv_fds(sock, out, n, 0, &f, 1, &nf, NULL);
    if (r < 0)
        return 0; /* as EOF: no descriptor came */
    if (nf && fd)
        *fd = f;
    else if (nf)
        close(f);
    return r == (ssize_t)n ? 1 : 0;
}

/* Starts job's worker in the server: given to a spare the parent holds
 * (then "next" asks for another), or sent to the server as a request,
 * which forks a child for it.  0, or -1 when there is no server to ask
 * (the caller spawns directly). */
static int srv_spawn(mfs_spawner *sp, char **argv, int report_w, int done_w, const int *out,
                     int nout, srv_child *ch)
{
    size_t n;
    char *req = build_request(argv, &n);
    srv_key k = {NULL, 0, 0};
    if (!req || key_make(argv, &k) < 0 || nout > MFS_FS_MAX_FDS - 3) {
        free(req);
        key_free(&k);
        return -1;
    }
    int s[2] = {-1, -1};
    int fds[MFS_FS_MAX_FDS];
    int sent = -1; /* 0: a spare has it, 1: the server has it */
    pthread_mutex_lock(&sp->srv_mu);
    /* a server that died since the last conversion is noticed here (its
     * socket refuses) and replaced once; a spare that died before its job
     * (killed from outside) is passed over */
    for (int attempt = 0; attempt < 2 + MAX_SPARES && sent < 0; attempt++) {
        if (srv_start_locked(sp) < 0)
            break;
        srv_spare sc;
        if (srv_take_spare_locked(sp, &k, &sc) == 0) {
            fds[0] = report_w;
            fds[1] = done_w;
            memcpy(fds + 2, out, nout * sizeof(int));
            if (send_fds(sc.job, req, n, fds, 2 + nout) < 0) {
                spare_close(&sc);
                continue;
            }
            close(sc.job);
            /* the next one, made while this job runs; the key's argv and
             * environment in a request's layout, no model in it */
            size_t nl = sizeof(mfs_fs_request) + k.len;
            char *next = malloc(nl);
            if (next && srv_expect_locked(sp, &k) == 0) {
                mfs_fs_request rq = {MFS_FS_NEXT, (uint32_t)k.kargc};
                memcpy(next, &rq, sizeof rq);
                memcpy(next + sizeof rq, k.data, k.len);
                /* a server gone now is noticed by the next conversion */
                if (send_fds(sp->srv_sock, next, nl, NULL, 0) < 0)
                    srv_unexpect_locked(sp);
            }
            free(next);
            ch->reply = sc.reply;
            ch->pid = sc.pid;
            ch->pidfd = sc.pidfd;
            key_free(&sc.key);
            sent = 0;
            break;
        }
        if (s[0] < 0 && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s) < 0)
            break;
        fds[0] = report_w;
        fds[1] = s[1];
        fds[2] = done_w;
        memcpy(fds + 3, out, nout * sizeof(int));
        if (srv_expect_locked(sp, &k) < 0)
            break;
        if (send_fds(sp->srv_sock, req, n, fds, 3 + nout) == 0) {
            sent = 1;
        } else {
            srv_unexpect_locked(sp);
            srv_stop_locked(sp);
        }
    }
    pid_t srv = sp->srv_pid;
    pthread_mutex_unlock(&sp->srv_mu);
    free(req);
    key_free(&k);
    if (s[1] >= 0)
        close(s[1]);
    if (sent <= 0) {
        if (s[0] >= 0)
            close(s[0]);
        return sent;
    }
    mfs_fs_started st;
    int pidfd;
    if (srv_recv(s[0], &st, sizeof st, &pidfd, now_s() + 30) != 1 || st.pid <= 0) {
        /* died between the request and the fork, or could not fork */
        if (pidfd >= 0)
            close(pidfd);
        close(s[0]);
        pthread_mutex_lock(&sp->srv_mu);
        if (sp->srv_sock >= 0 && sp->srv_pid == srv)
            srv_stop_locked(sp);
        pthread_mutex_unlock(&sp->srv_mu);
        return -1;
    }
    ch->reply = s[0];
    ch->pid = st.pid;
    ch->pidfd = pidfd;
    return 0;
}

static void srv_kill(const srv_child *ch)
{
    if (ch->pidfd >= 0)
        pidfd_send_signal(ch->pidfd, SIGKILL, NULL, 0);
    else
        kill(ch->pid, SIGKILL);
}

/* reap() for a child of the server: its wait status comes as "ended".
 * *lost: the server died first, so the status is unknown (the child is
 * killed: nobody can vouch for its outputs). */
static int srv_reap(srv_child *ch, double deadline, int *timed_out, double *cpu_s, int *lost)
{
    mfs_fs_ended e;
    memset(&e, 0, sizeof e);
    *timed_out = 0;
    *lost = 0;
    int r = srv_recv(ch->reply, &e, sizeof e, NULL, deadline);
    if (r < 0) {
        srv_kill(ch);
        *timed_out = 1;
        r = srv_recv(ch->reply, &e, sizeof e, NULL, 1e300);
    }
    if (r != 1) {
        srv_kill(ch);
        *lost = 1;
    }
    if (cpu_s)
        *cpu_s = (double)e.cpu_us / 1e6;
    close(ch->reply);
    if (ch->pidfd >= 0)
        close(ch->pidfd);
    return e.status;
}

/* Waits for the child's "done" (fork_server.h) or the server's "ended",
 * whichever comes first, until the deadline.  1: "done" came; 0: anything
 * else (srv_reap then waits for "ended" and the exit status). */
static int srv_wait_done(const srv_child *ch, int done_r, double deadline)
{
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0)
            return 0;
        struct pollfd p[2] = {{done_r, POLLIN, 0}, {ch->reply, POLLIN, 0}};
        int r = poll(p, 2, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 0;
        if (p[0].revents) {
            char c;
            ssize_t n;
            while ((n = read(done_r, &c, 1)) < 0 && errno == EINTR)
                ;
            return n == 1; /* EOF: it ended without saying so */
        }
        if (p[1].revents)
            return 0;
    }
}

/* Whether Landlock is in force in every server child that got as far as
 * its job (the kernel has it, so a child's sandbox either enforced it or
 * failed), and nothing asked to leave the sandbox out (a test hook). */
static int landlock_abi;
static pthread_once_t landlock_once = PTHREAD_ONCE_INIT;

static void ask_landlock(void)
{
    /* LANDLOCK_CREATE_RULESET_VERSION */
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, 1u);
    landlock_abi = v > 0 ? (int)v : 0;
}

static int children_landlocked(void)
{
    pthread_once(&landlock_once, ask_landlock);
    return landlock_abi > 0 && !getenv("MESHFS_TEST_NO_SANDBOX");
}

/* 1 if no process holds any of the files open for writing, so none can
 * change any more: a server's child cannot open one for writing again
 * (Landlock grants it no write right anywhere), and a read lease is
 * granted only while the file has no writable open file description —
 * which a descriptor, a dup of it, a shared mapping or an I/O in flight
 * all keep alive.  The lease is dropped at once: only its grant was
 * wanted. */
static int outputs_unwritable(const int *rd, int n)
{
    if (!children_landlocked())
        return 0;
    for (int i = 0; i < n; i++) {
        if (fcntl(rd[i], F_SETLEASE, F_RDLCK) < 0)
            return 0; /* still open for writing, or no leases here */
        fcntl(rd[i], F_SETLEASE, F_UNLCK);
    }
    return 1;
}

/* After a trusted "done": the child is on its way out; a hijacked one
 * that lingers instead is killed, as at a deadline (through its pidfd
 * only: the server may reap it any moment, and its pid be reused).  Its
 * "ended" is not waited for (the server's send to the closed socket
 * fails quietly). */
static void srv_release(srv_child *ch)
{
    srv_kill(ch);
    close(ch->reply);
    if (ch->pidfd >= 0)
        close(ch->pidfd);
}

unsigned long mfs_spawner_server_spawns(mfs_spawner *sp)
{
    pthread_mutex_lock(&sp->srv_mu);
    unsigned long n = sp->srv_spawns;
    pthread_mutex_unlock(&sp->srv_mu);
    return n;
}

/* Empties the directory open at fd, depth levels deep at most. */
static void purge(int fd, int depth)
{
    int own = dup(fd);
    DIR *d = own >= 0 ? fdopendir(own) : NULL;
    if (!d) {
        if (own >= 0)
            close(own);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (unlinkat(fd, de->d_name, 0) == 0 || errno != EISDIR || depth <= 1)
            continue;
        int sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
            purge(sub, depth - 1);
            close(sub);
        }
        unlinkat(fd, de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

/* Makes the outputs what the parent expects: regular files with one link
 * at outdir/<fmt>.  A worker that switched user wrote them in its own
 * subdirectory: each is checked without following links, given to us and
 * moved up; the subdirectory and anything else in it go.  A vouched-for
 * output that fails the check fails its format (a sound worker never
 * leaves a link or a directory there). */
static void claim_outputs(const mfs_job *job, mfs_report *rep, int drop, uid_t uid)
{
    int dfd = open(job->outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    int wfd = drop ? openat(dfd, MFS_SANDBOX_OUT_SUBDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                   : -1;
    int from = wfd >= 0 ? wfd : dfd;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job->formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        int fd = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            continue; /* not written: the report says why */
        struct stat st;
        int good = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                   (wfd < 0 || st.st_uid == uid);
        if (good && wfd >= 0)
            good = fchown(fd, geteuid(), getegid()) == 0 && renameat(wfd, name, dfd, name) == 0;
        if (fd >= 0)
            close(fd);
        if (good)
            continue;
        unlinkat(from, name, 0);
        if (rep->ok && rep->fmt[f].ok) {
            rep->fmt[f].ok = 0;
            snprintf(rep->fmt[f].error, sizeof rep->fmt[f].error,
                     "%s: the worker's output is not a regular file of its own", name);
        }
    }
    if (wfd >= 0) {
        purge(wfd, 8);
        close(wfd);
        unlinkat(dfd, MFS_SANDBOX_OUT_SUBDIR, AT_REMOVEDIR);
    }
    close(dfd);
}

/* Whether a conversion should try the fork server (a hint: srv_spawn
 * decides). */
static int srv_wanted(mfs_spawner *sp)
{
    const char *off = getenv("MESHFS_FORK_SERVER");
    if (off && !strcmp(off, "0"))
        return 0;
    pthread_mutex_lock(&sp->srv_mu);
    int ok = sp->srv_failures < 3;
    pthread_mutex_unlock(&sp->srv_mu);
    return ok;
}

/* The fork server's child creates no file (its Landlock ruleset grants
 * none): its outputs are made here, empty, at outdir/<fmt>, and handed to
 * it open (out, write-only, in format order; the parent closes its copies
 * once they are sent).  rd gets a read-only descriptor on each: what the
 * parent checks and claims them by, and never a writer itself, so a read
 * lease on it tells whether anyone still can write (outputs_unwritable).
 * 0, or -1 with nothing left behind. */
static int create_outputs(const mfs_job *job, int *dfd, int *out, int *rd, int *nout)
{
    *nout = 0;
    *dfd = open(job->outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dfd < 0)
        return -1;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job->formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        /* an emptied output of an earlier run of this directory is used
         * again (convstore.h, keep_outputs): no inode allocated a view.
         * Its writer is gone: that run's child is dead, or held no
         * writable handle (the lease) and can open none (its sandbox). */
        int fd = openat(*dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        int r = fd >= 0 ? openat(*dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
        if (r < 0) {
            if (fd >= 0) {
                close(fd);
                unlinkat(*dfd, name, 0);
            }
            for (int g = f - 1, k = *nout - 1; g >= 0; g--)
                if (job->formats & (1u << g)) {
                    unlinkat(*dfd, mfs_format_get((mfs_format)g)->name, 0);
                    close(out[k]);
                    close(rd[k--]);
                }
            close(*dfd);
            *dfd = -1;
            *nout = 0;
            return -1;
        }
        out[*nout] = fd;
        rd[(*nout)++] = r;
    }
    return 0;
}

/* claim_outputs for files made by create_outputs: a format the report
 * vouches for keeps its file if it is still the one made here (a regular
 * file with one link); every other file goes.  The child can neither
 * create, link nor remove a file (its sandbox; it holds only the open
 * files), so a file that is no longer the one made here was removed or
 * replaced from outside (the job folder deleted under the run): the
 * machine's failure, not the model's, so transient and never remembered
 * against the model. */
static void claim_fd_outputs(const mfs_job *job, mfs_report *rep, int dfd, const int *out)
{
    for (int f = 0, k = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job->formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        int fd = out[k++];
        int vouched = rep->ok && rep->fmt[f].ok;
        struct stat a, b;
        const char *why = NULL;
        if (vouched && (fstat(fd, &a) < 0 || fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0))
            why = errno == ENOENT ? "it was removed during the run" : strerror(errno);
        else if (vouched && (a.st_dev != b.st_dev || a.st_ino != b.st_ino || !S_ISREG(b.st_mode)))
            why = "it was replaced during the run";
        else if (vouched && b.st_nlink != 1)
            why = "it was linked elsewhere during the run";
        int good = vouched && !why;
        close(fd);
        if (good)
            continue;
        unlinkat(dfd, name, 0);
        if (vouched) {
            rep->outputs_lost = 1;
            rep->fmt[f].ok = 0;
            rep->fmt[f].transient = 1;
            snprintf(rep->fmt[f].error, sizeof rep->fmt[f].error,
                     "%s: the worker's output is not the file it was given (%s)", name, why);
        }
    }
    close(dfd);
}

static int spawner_run(mfs_spawner *sp, const mfs_job *job, mfs_report *rep, mfs_err *err)
{
    memset(rep, 0, sizeof *rep);
    char formats[64];
    argv_buf a;
    /* the model's owner, resolved here, in the parent (sandbox.h) */
    mfs_worker_ident id;
    int drop = mfs_worker_ident_for(job, &id);
    uid_t uid = id.uid;
    build_argv(&a, sp->path, job, formats, sizeof formats, drop ? &id : NULL);
    pid_t pid = 0;
    srv_child ch = {.reply = -1, .pid = 0, .pidfd = -1};
    int out[MFS_FMT_COUNT], rd[MFS_FMT_COUNT], nout = 0, dfd = -1;
    int via_srv = 0;
    int done[2] = {-1, -1};
    /* A server's child reports into a memfd, read once the child says
     * "done" (or the server says it has exited): the parent then wakes
     * once per conversion, not for the report's bytes and again for its
     * EOF. */
    int rfd = -1;
    if (srv_wanted(sp) && create_outputs(job, &dfd, out, rd, &nout) == 0) {
        rfd = memfd_create("meshfs-report", MFD_CLOEXEC);
        if (rfd >= 0 && pipe2(done, O_CLOEXEC) < 0)
            done[0] = done[1] = -1;
        via_srv = rfd >= 0 && done[0] >= 0 && srv_spawn(sp, a.argv, rfd, done[1], out, nout, &ch) == 0;
        /* only the child may hold them for writing now (the server closes
         * its copies once it has passed them on) */
        for (int k = 0; k < nout; k++)
            close(out[k]);
        if (done[1] >= 0)
            close(done[1]);
        if (!via_srv) {
            rep->ok = 0; /* removes them all */
            claim_fd_outputs(job, rep, dfd, rd);
            if (rfd >= 0)
                close(rfd);
            if (done[0] >= 0)
                close(done[0]);
        }
    }
    int p[2] = {-1, -1};
    if (!via_srv && pipe2(p, O_CLOEXEC) < 0)
        return mfs_errf(err, "pipe: %s", strerror(errno));
    int rc = via_srv ? 0 : spawn(sp, a.argv, p[1], -1, &pid, err);
    if (p[1] >= 0)
        close(p[1]);
    if (rc < 0) {
        close(p[0]);
        return -1;
    }
    double t0 = now_s();
    double deadline = job->limits.timeout_s > 0 ? t0 + job->limits.timeout_s : 1e300;
    uint8_t *buf = NULL;
    size_t len = 0;
    int got;
    int timed_out;
    double cpu_s = 0;
    int lost = 0;
    int status;
    if (via_srv) {
        /* "done" before the exit (fork_server.h): once the report is
         * complete and no output can be written any more, the exit status
         * could change nothing the parent uses, so it is not waited for.
         * Anything less (no "done", an empty report, an output still
         * open for writing) waits for "ended" and its status as before. */
        if (ch.pidfd >= 0 && srv_wait_done(&ch, done[0], deadline) &&
            read_memfd_report(rfd, &buf, &len) == 1 && len > 0 && outputs_unwritable(rd, nout)) {
            srv_release(&ch);
            status = 0;
            timed_out = lost = 0;
            got = 1;
        } else {
            free(buf);
            buf = NULL;
            len = 0;
            status = srv_reap(&ch, deadline, &timed_out, &cpu_s, &lost);
            got = timed_out ? 0 : read_memfd_report(rfd, &buf, &len);
        }
        close(rfd);
        close(done[0]);
    } else {
        got = read_report(p[0], deadline, &buf, &len);
        close(p[0]);
        status = reap(pid, got == 1 ? deadline : now_s(), &timed_out, &cpu_s);
    }
    if (got == 0 || timed_out) {
        snprintf(rep->error, sizeof rep->error, "import timed out after %g s", job->limits.timeout_s);
    } else if (got < 0) {
        snprintf(rep->error, sizeof rep->error, "worker report exceeds %u bytes", MFS_PROTO_MAX);
    } else if (lost) {
        snprintf(rep->error, sizeof rep->error, "the worker's fork server died during the conversion");
        rep->transient = 1;
    } else if (len == 0) {
        describe_death(status, job, cpu_s, rep->error, sizeof rep->error, &rep->transient);
    } else {
        mfs_err derr;
        mfs_err_clear(&derr);
        if (mfs_report_decode(buf, len, rep, &derr) < 0)
            snprintf(rep->error, sizeof rep->error, "worker sent a bad report: %s", derr.msg);
        else if (WIFEXITED(status) && WEXITSTATUS(status) == MFS_SANDBOX_EXIT) {
            /* it never opened the model: the reason is the machine's */
            char why[MFS_ERR_MAX];
            snprintf(why, sizeof why, "%s", rep->error);
            mfs_report_free(rep);
            memset(rep, 0, sizeof *rep);
            snprintf(rep->error, sizeof rep->error, "worker could not enter its sandbox: %s", why);
            rep->transient = 1;
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            /* A report followed by a crash (e.g. in a destructor) is not
             * trusted: the outputs may be incomplete. */
            mfs_report_free(rep);
            memset(rep, 0, sizeof *rep);
            describe_death(status, job, cpu_s, rep->error, sizeof rep->error, &rep->transient);
        }
    }
    free(buf);
    if (via_srv)
        claim_fd_outputs(job, rep, dfd, rd);
    else
        claim_outputs(job, rep, drop, uid);
    return 0;
}

/* ---- is the sandbox complete here ---- */

static void ask_sandbox(mfs_spawner *sp)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return;
    char *argv[] = {sp->path, "--sandbox-status", NULL};
    pid_t pid;
    if (spawn(sp, argv, -1, p[1], &pid, NULL) < 0) {
        close(p[0]);
        close(p[1]);
        return; /* the first conversion will say the worker cannot start */
    }
    close(p[1]);
    uint8_t *buf;
    size_t len = 0;
    read_report(p[0], now_s() + 30, &buf, &len);
    close(p[0]);
    int to;
    reap(pid, now_s() + 30, &to, NULL);
    if (!buf)
        return;
    char *text = calloc(1, len + 1);
    if (text) {
        memcpy(text, buf, len);
        const char *ll = strstr(text, "landlock: unsupported");
        const char *sc = strstr(text, "seccomp: unsupported");
        if (ll || sc)
            snprintf(sp->sandbox_warning, sizeof sp->sandbox_warning,
                     "%s%s%s is not available on this kernel, so conversions run with "
                     "less confinement (docs/security.md)",
                     ll ? "Landlock" : "", ll && sc ? " and " : "", sc ? "seccomp" : "");
    }
    free(text);
    free(buf);
}

const char *mfs_spawner_sandbox_warning(mfs_spawner *sp)
{
    pthread_mutex_lock(&sp->sandbox_mu);
    if (!sp->sandbox_asked)
        ask_sandbox(sp);
    sp->sandbox_asked = 1;
    pthread_mutex_unlock(&sp->sandbox_mu);
    return sp->sandbox_warning[0] ? sp->sandbox_warning : NULL;
}

/* ---- which files are models ---- */

/* Extensions assimp claims that are too generic to treat every such file as
 * a model (an asset folder's .xml or .txt is far more likely something
 * else), plus animation-only inputs with no geometry. */
static const char *const skipped_ext[] = {"xml", "md5anim", "md5camera", "pk3", "prj", NULL};

static int skipped(const char *e)
{
    for (int i = 0; skipped_ext[i]; i++)
        if (strcmp(skipped_ext[i], e) == 0)
            return 1;
    return 0;
}

static void load_exts(mfs_spawner *sp)
{
    char *model_exts_err = sp->exts_err;
    size_t errsz = sizeof sp->exts_err;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(model_exts_err, errsz, "pipe: %s", strerror(errno));
        return;
    }
    char *argv[] = {sp->path, "--list-extensions", NULL};
    pid_t pid;
    mfs_err err;
    if (spawn(sp, argv, -1, p[1], &pid, &err) < 0) {
        close(p[0]);
        close(p[1]);
        snprintf(model_exts_err, errsz, "%s", err.msg);
        return;
    }
    close(p[1]);
    uint8_t *buf;
    size_t len;
    read_report(p[0], now_s() + 30, &buf, &len);
    close(p[0]);
    int to;
    reap(pid, now_s() + 30, &to, NULL);
    size_t n = 0;
    char **v = calloc(len / 2 + 2, sizeof(char *));
    if (!v || !buf) {
        free(buf);
        free(v);
        snprintf(model_exts_err, errsz, "out of memory");
        return;
    }
    char *s = (char *)buf;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && buf[j] != '\n')
            j++;
        if (j > i && j - i < 32) {
            char e[32];
            memcpy(e, s + i, j - i);
            e[j - i] = '\0';
            if (!skipped(e))
                v[n++] = strdup(e);
        }
        i = j + 1;
    }
    free(buf);
    if (n == 0) {
        free(v);
        snprintf(model_exts_err, errsz, "worker %s listed no model extensions",
                 sp->path);
        return;
    }
    sp->exts = v;
}

const char *const *mfs_spawner_extensions(const mfs_spawner *sp, mfs_err *err)
{
    if (!sp->exts) {
        mfs_errf(err, "%s", sp->exts_err);
        return NULL;
    }
    return (const char *const *)sp->exts;
}

int mfs_spawner_is_model(const mfs_spawner *sp, const char *name)
{
    return mfs_model_name_in(mfs_spawner_extensions(sp, NULL), name);
}

/* ---- a spawner's life ---- */

int mfs_spawner_open(mfs_spawner **out, mfs_err *err)
{
    mfs_spawner *sp = calloc(1, sizeof *sp);
    if (!sp)
        return mfs_errf(err, "out of memory");
    find_worker(sp->path, sizeof sp->path);
    if (pipe2(sp->lifeline, O_CLOEXEC) < 0)
        sp->lifeline[0] = sp->lifeline[1] = -1;
    /* Above the numbers a worker's fds are dup2()ed to: a spawner opened
     * first gets 3 and 4, and the report's dup2 onto 3 would then replace
     * the lifeline before it is dup2()ed onto 4. */
    for (int i = 0; i < 2; i++)
        if (sp->lifeline[i] >= 0 && sp->lifeline[i] <= MFS_LIFELINE_FD) {
            int high = fcntl(sp->lifeline[i], F_DUPFD_CLOEXEC, MFS_LIFELINE_FD + 1);
            close(sp->lifeline[i]);
            sp->lifeline[i] = high;
        }
    pthread_mutex_init(&sp->sandbox_mu, NULL);
    pthread_mutex_init(&sp->srv_mu, NULL);
    sp->srv_sock = -1;
    load_exts(sp);
    *out = sp;
    return 0;
}

void mfs_spawner_close(mfs_spawner *sp)
{
    if (!sp)
        return;
    /* the workers still running read EOF on their lifeline and exit */
    for (int i = 0; i < 2; i++)
        if (sp->lifeline[i] >= 0)
            close(sp->lifeline[i]);
    pthread_mutex_lock(&sp->srv_mu);
    srv_stop_locked(sp);
    free(sp->asked);
    pthread_mutex_unlock(&sp->srv_mu);
    pthread_mutex_destroy(&sp->srv_mu);
    for (size_t i = 0; sp->exts && sp->exts[i]; i++)
        free(sp->exts[i]);
    free(sp->exts);
    pthread_mutex_destroy(&sp->sandbox_mu);
    free(sp);
}

/* ---- the one-shot tools' spawner (spawner.h) ---- */

static mfs_spawner *tool_spawner;
static pthread_once_t tool_once = PTHREAD_ONCE_INIT;

/* At exit the fork server is stopped and reaped, so the tool's own
 * children's resource usage (getrusage, wait4 of the tool: bench-convert)
 * includes every conversion it ran, as it did with one exec per worker. */
static void close_tool_spawner(void)
{
    mfs_spawner_close(tool_spawner);
    tool_spawner = NULL;
}

static void open_tool_spawner(void)
{
    if (mfs_spawner_open(&tool_spawner, NULL) == 0 && tool_spawner)
        atexit(close_tool_spawner);
}

static mfs_spawner *tool(void)
{
    pthread_once(&tool_once, open_tool_spawner);
    return tool_spawner;
}

int mfs_spawner_convert(mfs_spawner *sp, const mfs_job *job, mfs_report *rep, mfs_err *err)
{
    /* the run's wall time goes into the model entry: what a machine
     * weighs a slow server's download against (meshfs/remote_pace.h) */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = spawner_run(sp, job, rep, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ms = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    rep->wall_ms = ms > 0 ? (uint64_t)ms : 1;
    return rc;
}

int mfs_worker_convert(const mfs_job *job, mfs_report *rep, mfs_err *err)
{
    mfs_spawner *sp = tool();
    if (!sp) {
        memset(rep, 0, sizeof *rep);
        return mfs_errf(err, "out of memory");
    }
    return mfs_spawner_convert(sp, job, rep, err);
}

static char tool_path[PATH_MAX];
static pthread_once_t tool_path_once = PTHREAD_ONCE_INIT;

static void find_tool_path(void)
{
    find_worker(tool_path, sizeof tool_path);
}

const char *mfs_worker_path(void)
{
    /* only the path: no process is started for it (errtext.c, tests) */
    pthread_once(&tool_path_once, find_tool_path);
    return tool_path;
}

const char *const *mfs_model_extensions(mfs_err *err)
{
    mfs_spawner *sp = tool();
    if (!sp) {
        mfs_errf(err, "out of memory");
        return NULL;
    }
    return mfs_spawner_extensions(sp, err);
}

int mfs_is_model_name(const char *name)
{
    return mfs_model_name_in(mfs_model_extensions(NULL), name);
}

const char *mfs_worker_sandbox_warning(void)
{
    mfs_spawner *sp = tool();
    return sp ? mfs_spawner_sandbox_warning(sp) : NULL;
}

/* The fork server's loop (include/meshfs/worker.h).
 *
 * Single-threaded whenever it forks: fork() copies only the calling thread,
 * so a server with a second thread could hand its children a lock held
 * forever.  Its warm-up thread (mfs_fs_worker.warm) is joined before it
 * serves; the writer threads exist only in the children, after the fork. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "meshfs/convert.h"
#include "meshfs/worker.h"

#define REQ_FD MFS_REPORT_FD /* the parent put the request socket here */
#define MAX_ARGS 64

/* A child of the server: its reply socket (the server's end) gets "ended". */
typedef struct job {
    pid_t pid;
    int reply;
} job;

/* The server's state, on mfs_fork_server_run's stack: each child has its
 * own copy after the fork, and a child's argv points into its msg or key. */
typedef struct server {
    job *jobs;
    size_t njobs, capjobs;
    /* the request being handled, split into argv and env */
    char msg[MFS_FS_MSG_MAX + 1];
    char *argv[MAX_ARGS], *env[MAX_ARGS];
    /* the key of the spare being made (see make_key) */
    char key[MFS_FS_MSG_MAX];
    size_t keylen;
    int kargc;
} server;

/* Blocking: the parent reads every message it asked for (a "spare" lost
 * to a full buffer would leave it waiting). */
static void send_msg_to(int sock, const void *p, size_t n, const int *fds, int nfds, int flags)
{
    mfs_send_fds(sock, p, n, fds, nfds, flags);
}

/* To a job's reply socket: a parent that gave up on the job has closed
 * its end, and one that took the child's "done" never reads "ended". */
static void send_msg(int sock, const void *p, size_t n, const int *fds, int nfds)
{
    send_msg_to(sock, p, n, fds, nfds, MSG_DONTWAIT);
}

/* One record and its descriptors (at most MFS_FS_MAX_FDS kept, the rest
 * closed).  Returns its length, 0 at EOF, -1 on error or truncation. */
static ssize_t recv_msg(server *s, int sock, int *fds, int *nfds)
{
    int truncated;
    ssize_t n = mfs_recv_fds(sock, s->msg, MFS_FS_MSG_MAX, 0, fds, MFS_FS_MAX_FDS, nfds, &truncated);
    if (n > 0 && truncated)
        return -1;
    if (n > 0)
        s->msg[n] = '\0';
    return n;
}

static void close_all(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

/* Splits msg[0..n) (after the header) into argc argv strings and the
 * environment after them.  -1 if malformed. */
static int split(server *s, size_t n, char **argv, int *argc, char **env, int *nenv)
{
    mfs_fs_request rq;
    if (n < sizeof rq)
        return -1;
    memcpy(&rq, s->msg, sizeof rq);
    char *p = s->msg + sizeof rq, *end = s->msg + n;
    *argc = *nenv = 0;
    while (p < end && *argc < (int)rq.argc && *argc < MAX_ARGS - 1) {
        argv[(*argc)++] = p;
        p += strlen(p) + 1;
    }
    argv[*argc] = NULL;
    while (p < end && *nenv < MAX_ARGS - 1) {
        env[(*nenv)++] = p;
        p += strlen(p) + 1;
    }
    env[*nenv] = NULL;
    return rq.magic == MFS_FS_MAGIC && *argc == (int)rq.argc ? 0 : -1;
}

/* The key a request's child must be prepared for: its --root as an argv
 * (what prepare reads), then its MESHFS_* environment.  Paths and switches
 * only, never a model's name, nor its owner: a child switches to the job's
 * user when the job comes, so one spare serves every owner. */
static size_t make_key(char **argv, int argc, char **env, int nenv, char *out, int *nargs)
{
    size_t n = 0;
    *nargs = 0;
#define PUT(s)                                                                                     \
    do {                                                                                           \
        size_t l_ = strlen(s) + 1;                                                                 \
        if (n + l_ > MFS_FS_MSG_MAX)                                                               \
            return 0;                                                                              \
        memcpy(out + n, s, l_);                                                                    \
        n += l_;                                                                                   \
    } while (0)
    PUT(argv[0]);
    (*nargs)++;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--root")) {
            PUT(argv[i]);
            PUT(argv[i + 1]);
            *nargs += 2;
            i++;
        }
    for (int i = 0; i < nenv; i++)
        PUT(env[i]);
#undef PUT
    return n;
}

/* In the spare: becomes what posix_spawn would have made, confines itself
 * for the key, then waits for its one job and runs it. */
static void spare_main(server *s, const mfs_fs_worker *w, int sock, pid_t server_pid)
{
    if (dup2(sock, MFS_REPORT_FD) < 0)
        _exit(70);
    /* everything above the lifeline (the request socket's peers, other
     * jobs' reply sockets, the signalfd) goes */
    close_range(MFS_LIFELINE_FD + 1, ~0u, 0);
    sigset_t none;
    sigemptyset(&none);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *argv[MAX_ARGS], *env[MAX_ARGS];
    int argc = 0, nenv = 0;
    for (char *p = s->key, *end = s->key + s->keylen; p < end && nenv < MAX_ARGS - 1;
         p += strlen(p) + 1) {
        if (argc < s->kargc)
            argv[argc++] = p;
        else
            env[nenv++] = p;
    }
    argv[argc] = NULL;
    /* the child's MESHFS_* environment is the requester's, not the
     * server's from when it was started */
    for (;;) {
        char **e = environ;
        while (*e && strncmp(*e, "MESHFS_", 7) != 0)
            e++;
        if (!*e)
            break;
        char name[256];
        size_t n = strcspn(*e, "=");
        if (n >= sizeof name)
            n = sizeof name - 1;
        memcpy(name, *e, n);
        name[n] = '\0';
        unsetenv(name);
    }
    for (int i = 0; i < nenv; i++)
        putenv(env[i]);
    w->prepare(w->ctx, argc, argv);
    /* Dies with the server, which dies with the parent (its lifeline).
     * Set only now: a change of user clears it.  The server is
     * single-threaded, so unlike a spawned worker's parent it has no
     * thread whose exit could fire this early; and no watcher thread here
     * means no second thread the child's exit must wait out. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != server_pid)
        _exit(0);
    close(MFS_LIFELINE_FD);
    int fds[MFS_FS_MAX_FDS], nfds;
    ssize_t n = recv_msg(s, MFS_REPORT_FD, fds, &nfds);
    if (n <= 0 || nfds < 1)
        _exit(0); /* retired unused: its socket was closed */
    if (nfds < 2 || split(s, (size_t)n, argv, &argc, env, &nenv) < 0 ||
        dup2(fds[0], MFS_REPORT_FD) < 0)
        _exit(70);
    close(fds[0]);
    int rc = w->run(w->ctx, argc, argv, fds + 2, nfds - 2);
    /* no exit handlers: the libraries' destructors would only touch (and
     * copy) pages of a process that is about to go */
    fflush(NULL);
    if (rc == 0) {
#ifdef MESHFS_TEST_HOOKS
        /* tests/integration/test_fork_done.py: a child that says "done"
         * and then, like a hijacked one, still writes an output and
         * crashes ("tamper", through a descriptor it kept), or stays
         * ("linger") */
        const char *after = getenv("MESHFS_TEST_AFTER_DONE");
        int kept = after && !strcmp(after, "tamper") && nfds > 2 ? dup(fds[2]) : -1;
#endif
        /* "done": the report is complete and no output is open here any
         * more, so the parent need not wait for this exit (convert.h) */
        for (int i = 2; i < nfds; i++)
            close(fds[i]);
        while (write(fds[1], "d", 1) < 0 && errno == EINTR)
            ;
#ifdef MESHFS_TEST_HOOKS
        if (kept >= 0) {
            usleep(300000);
            if (pwrite(kept, "tampered", 8, 0) == 8)
                abort();
        }
        if (after && !strcmp(after, "linger"))
            sleep(60);
#endif
        /* The exit keeps this process's priority: one lowered below the
         * parent's would let a busy parent run ahead of its children's
         * exits, which then pile up, each holding its memory (tried under
         * chrt: 400 unfinished exits at the end of 400 conversions). */
    }
    _exit(rc);
}

/* Forks a child for the key in key[], to read its one job from *sock (the
 * server's end).  Its pid, or -1 with errno. */
static pid_t fork_child(server *s, const mfs_fs_worker *w, int reply, int *sock)
{
    int sp[2];
    if (s->njobs == s->capjobs) {
        size_t nc = s->capjobs ? s->capjobs * 2 : 16;
        job *nj = realloc(s->jobs, nc * sizeof *nj);
        if (!nj) {
            errno = ENOMEM;
            return -1;
        }
        s->jobs = nj;
        s->capjobs = nc;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return -1;
    pid_t server_pid = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(sp[0]);
        spare_main(s, w, sp[1], server_pid);
    }
    int e = errno;
    close(sp[1]);
    if (pid < 0) {
        close(sp[0]);
        errno = e;
        return -1;
    }
    s->jobs[s->njobs++] = (job){pid, reply};
    *sock = sp[0];
    return pid;
}

/* A spare for the key in key[], handed to the parent on the request
 * socket ("spare": its job socket, its reply socket and a pidfd), so that
 * the parent sends it its job itself, one wake-up and two descriptor
 * passes less than through this loop.  Exactly one "spare" answers each
 * request and each "next", made or not (pid 0), so the parent can tell
 * which key each is for by their order. */
static void offer_spare(server *s, const mfs_fs_worker *w)
{
    mfs_fs_spare m = {MFS_FS_SPARE, 0, 0};
    int rs[2] = {-1, -1}, js = -1;
    if (!s->keylen)
        m.err = EINVAL;
    else if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rs) < 0)
        m.err = errno;
    else if ((m.pid = fork_child(s, w, rs[1], &js)) < 0) {
        m.err = errno;
        m.pid = 0;
        close(rs[1]);
    }
    if (!m.pid) {
        if (rs[0] >= 0)
            close(rs[0]);
        send_msg_to(REQ_FD, &m, sizeof m, NULL, 0, 0);
        return;
    }
    int pidfd = pidfd_open(m.pid, 0);
    int fds[3] = {js, rs[0], pidfd};
    send_msg_to(REQ_FD, &m, sizeof m, fds, pidfd >= 0 ? 3 : 2, 0);
    close(js);
    close(rs[0]);
    if (pidfd >= 0)
        close(pidfd);
}

/* Hands the request in msg[0..n) to the child at sock with fds; 0, or -1
 * (the child is gone). */
static int forward(server *s, int sock, size_t n, const int *fds, int nfds)
{
    return mfs_send_fds(sock, s->msg, n, fds, nfds, 0);
}

/* The parent closed its spawner: nobody wants the children's results.
 * They are killed (as PR_SET_PDEATHSIG would) and reaped before the
 * server exits, so the parent's getrusage of its children, once it has
 * reaped the server, counts every conversion (bench-convert, and
 * scripts/bench-fork-server's CPU figures), not those still exiting. */
static _Noreturn void finish(server *s)
{
    for (size_t i = 0; i < s->njobs; i++)
        kill(s->jobs[i].pid, SIGKILL);
    while (wait4(-1, NULL, 0, NULL) > 0 || errno == EINTR)
        ;
    exit(0);
}

/* One message from the parent.  A request (the parent had no spare for
 * its key): a child is forked for it now and given it, and "started"
 * answers on the request's reply socket.  A "next" (the parent gave a
 * spare its job itself): nothing to run.  Either way the next spare for
 * the same key is then made and offered. */
static void start(server *s, const mfs_fs_worker *w)
{
    int fds[MFS_FS_MAX_FDS], nfds;
    ssize_t n = recv_msg(s, REQ_FD, fds, &nfds);
    if (n == 0)
        finish(s); /* the parent closed its spawner */
    if (n < 0) {
        close_all(fds, nfds);
        if (errno == EAGAIN || errno == EINTR)
            return;
        exit(1);
    }
    char **argv = s->argv, **env = s->env;
    int argc, nenv;
    uint32_t magic = 0;
    if ((size_t)n >= sizeof magic)
        memcpy(&magic, s->msg, sizeof magic);
    int next = magic == MFS_FS_NEXT;
    if (next)
        memcpy(s->msg, &(uint32_t){MFS_FS_MAGIC}, sizeof magic); /* split reads it as a request */
    s->keylen = 0;
    if ((!next && nfds < 3) || (next && nfds) || split(s, (size_t)n, argv, &argc, env, &nenv) < 0 ||
        !(s->keylen = make_key(argv, argc, env, nenv, s->key, &s->kargc))) {
        /* the parent is ours: a bad message is a bug, not an attack; its
         * "spare" still comes (made for no key: none) */
        close_all(fds, nfds);
        s->keylen = 0;
        explicit_bzero(s->msg, (size_t)n);
        offer_spare(s, w);
        return;
    }
    if (!next) {
        int reply = fds[1];
        fds[1] = fds[0]; /* the child gets the report memfd, "done" and the outputs */
        int *cfds = fds + 1, ncfds = nfds - 1;
        mfs_fs_started st = {0, 0};
        int sock;
        pid_t pid = fork_child(s, w, reply, &sock);
        if (pid < 0) {
            st.err = errno;
        } else {
            if (forward(s, sock, (size_t)n, cfds, ncfds) == 0)
                st.pid = pid;
            else
                st.err = errno;
            close(sock); /* one job, never a second */
        }
        close_all(cfds, ncfds);
        if (st.pid) {
            /* sent before this loop can reap it: "started" always precedes "ended" */
            int pidfd = pidfd_open(st.pid, 0);
            send_msg(reply, &st, sizeof st, &pidfd, pidfd >= 0);
            if (pidfd >= 0)
                close(pidfd);
        } else {
            if (pid > 0)
                s->jobs[s->njobs - 1].reply = -1; /* its "ended" has nobody to go to */
            send_msg(reply, &st, sizeof st, NULL, 0);
            close(reply);
        }
    }
    /* the next spare must not find this request in its copy of memory */
    explicit_bzero(s->msg, (size_t)n);
    /* prepared while this job runs: on another core, off its path */
    offer_spare(s, w);
}

static void reap(server *s)
{
    int status;
    struct rusage ru;
    pid_t pid;
    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        for (size_t i = 0; i < s->njobs; i++) {
            if (s->jobs[i].pid != pid)
                continue;
            mfs_fs_ended e = {status, 0,
                              (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
                                  (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec};
            if (s->jobs[i].reply >= 0) {
                send_msg(s->jobs[i].reply, &e, sizeof e, NULL, 0);
                close(s->jobs[i].reply);
            }
            s->jobs[i] = s->jobs[--s->njobs];
            break;
        }
    }
}

int mfs_fork_server_run(const mfs_fs_worker *w)
{
    server srv_state = {0}, *s = &srv_state;
    /* once here, not in every child: the libraries' one-time set-up (static
     * tables, locale, the importer registry) and a grown heap and thread
     * stack cache for the children to start from (docs/worker.md) */
    if (w->warm)
        w->warm(w->ctx);
    /* nothing above the lifeline is the server's to hold */
    close_range(MFS_LIFELINE_FD + 1, ~0u, 0);
    struct rlimit rl = {0, 0};
    setrlimit(RLIMIT_CORE, &rl);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        return 1;
    /* a small heap to copy: every child starts from this one */
    malloc_trim(0);
    uint32_t ready = MFS_FS_READY;
    if (send(REQ_FD, &ready, sizeof ready, MSG_NOSIGNAL) != sizeof ready)
        return 1;
    int have_lifeline = fcntl(MFS_LIFELINE_FD, F_GETFD) >= 0;
    for (;;) {
        struct pollfd p[3] = {{REQ_FD, POLLIN, 0}, {sfd, POLLIN, 0},
                              {have_lifeline ? MFS_LIFELINE_FD : -1, POLLIN, 0}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[2].revents)
            return 0; /* the parent died; its children die with it too */
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            reap(s);
        }
        if (p[0].revents & POLLIN)
            start(s, w);
        else if (p[0].revents)
            return 0;
    }
}

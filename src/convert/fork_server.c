/* The fork server's loop (include/meshfs/fork_server.h).
 *
 * Single-threaded on purpose: fork() copies only the calling thread, so a
 * server with a second thread could hand its children a lock held forever.
 * The lifeline watcher threads a worker starts exist only in the children,
 * after the fork. */
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

#include "meshfs/fork_server.h"
#include "meshfs/proto.h"

#define REQ_FD MFS_REPORT_FD /* the parent put the request socket here */
#define MAX_ARGS 64

typedef struct job {
    pid_t pid;
    int reply;
} job;

static job *jobs;
static size_t njobs, capjobs;

/* The request's buffer: a child's argv points into it, so it is static
 * (each child has its own copy after the fork). */
static char msg[MFS_FS_MSG_MAX + 1];

/* The spare child and the key it was prepared for: the request's --root,
 * --uid and --gid as an argv (what prepare reads), then its MESHFS_*
 * environment.  Paths and switches only, never a model's name. */
static struct {
    pid_t pid;   /* 0: none */
    int sock;    /* the server's end; the spare reads its job from the other */
    char key[MFS_FS_MSG_MAX];
    size_t keylen;
    int kargc;   /* strings of the key that are argv; the rest is environment */
} spare = {0, -1, {0}, 0, 0};

static void send_msg(int sock, const void *p, size_t n, const int *fds, int nfds)
{
    struct iovec iov = {(void *)p, n};
    union {
        char buf[CMSG_SPACE(MFS_FS_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    /* a parent that gave up on the job has closed its end: nothing to do */
    while (sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR)
        ;
}

/* One record and its descriptors (at most MFS_FS_MAX_FDS kept, the rest
 * closed).  Returns its length, 0 at EOF, -1 on error or truncation. */
static ssize_t recv_msg(int sock, int *fds, int *nfds)
{
    union {
        char buf[CMSG_SPACE(MFS_FS_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {msg, MFS_FS_MSG_MAX};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                        .msg_controllen = sizeof u.buf};
    ssize_t n;
    *nfds = 0;
    while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n <= 0)
        return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (*nfds < MFS_FS_MAX_FDS)
                    fds[(*nfds)++] = fd;
                else
                    close(fd);
            }
        }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
        return -1;
    msg[n] = '\0';
    return n;
}

static void close_all(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

/* Splits msg[0..n) (after the header) into argc argv strings and the
 * environment after them.  -1 if malformed. */
static int split(size_t n, char **argv, int *argc, char **env, int *nenv)
{
    mfs_fs_request rq;
    if (n < sizeof rq)
        return -1;
    memcpy(&rq, msg, sizeof rq);
    char *p = msg + sizeof rq, *end = msg + n;
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

/* The key a request's child must be prepared for (see spare). */
static size_t make_key(char **argv, int argc, char **env, int nenv, char *key, int *kargc)
{
    size_t n = 0;
    *kargc = 0;
#define PUT(s)                                                                                     \
    do {                                                                                           \
        size_t l_ = strlen(s) + 1;                                                                 \
        if (n + l_ > MFS_FS_MSG_MAX)                                                               \
            return 0;                                                                              \
        memcpy(key + n, s, l_);                                                                    \
        n += l_;                                                                                   \
    } while (0)
    PUT(argv[0]);
    (*kargc)++;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--root") || !strcmp(argv[i], "--uid") || !strcmp(argv[i], "--gid")) {
            PUT(argv[i]);
            PUT(argv[i + 1]);
            *kargc += 2;
            i++;
        }
    for (int i = 0; i < nenv; i++)
        PUT(env[i]);
#undef PUT
    return n;
}

/* In the spare: becomes what posix_spawn would have made, confines itself
 * for the key, then waits for its one job and runs it. */
static void spare_main(const mfs_fs_worker *w, int sock, pid_t server)
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
    for (char *p = spare.key, *end = spare.key + spare.keylen; p < end && nenv < MAX_ARGS - 1;
         p += strlen(p) + 1) {
        if (argc < spare.kargc)
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
    w->prepare(argc, argv);
    /* Dies with the server, which dies with the parent (its lifeline).
     * Set only now: a change of user clears it.  The server is
     * single-threaded, so unlike a spawned worker's parent it has no
     * thread whose exit could fire this early; and no watcher thread here
     * means no second thread the child's exit must wait out. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != server)
        _exit(0);
    close(MFS_LIFELINE_FD);
    int fds[MFS_FS_MAX_FDS], nfds;
    ssize_t n = recv_msg(MFS_REPORT_FD, fds, &nfds);
    if (n <= 0 || nfds < 1)
        _exit(0); /* retired unused: the server closed our socket */
    if (split((size_t)n, argv, &argc, env, &nenv) < 0 || dup2(fds[0], MFS_REPORT_FD) < 0)
        _exit(70);
    close(fds[0]);
    int rc = w->run(argc, argv, fds + 1, nfds - 1);
    /* no exit handlers: the libraries' destructors would only touch (and
     * copy) pages of a process that is about to go */
    fflush(NULL);
    _exit(rc);
}

static void spare_retire(void)
{
    if (spare.sock >= 0)
        close(spare.sock); /* it reads EOF and exits; reap() collects it */
    spare.sock = -1;
    spare.pid = 0;
}

/* Forks a spare for the key in spare.key.  0, or -1 with errno. */
static int spare_fork(const mfs_fs_worker *w)
{
    int s[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s) < 0)
        return -1;
    pid_t server = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(s[0]);
        spare_main(w, s[1], server);
    }
    int e = errno;
    close(s[1]);
    if (pid < 0) {
        close(s[0]);
        errno = e;
        return -1;
    }
    spare.pid = pid;
    spare.sock = s[0];
    return 0;
}

/* Hands the request in msg[0..n) to the spare with fds; 0, or -1 (the
 * spare is gone). */
static int forward(size_t n, const int *fds, int nfds)
{
    union {
        char buf[CMSG_SPACE(MFS_FS_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {msg, n};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                        .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    ssize_t r;
    while ((r = sendmsg(spare.sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return r == (ssize_t)n ? 0 : -1;
}

/* One request: the spare (made now if there is none for this key) gets
 * it; then the next spare is forked for the same key. */
static void start(const mfs_fs_worker *w)
{
    int fds[MFS_FS_MAX_FDS], nfds;
    ssize_t n = recv_msg(REQ_FD, fds, &nfds);
    if (n == 0)
        exit(0); /* the parent closed its spawner */
    if (n < 0) {
        close_all(fds, nfds);
        if (errno == EAGAIN || errno == EINTR)
            return;
        exit(1);
    }
    static char *argv[MAX_ARGS], *env[MAX_ARGS];
    int argc, nenv;
    static char key[MFS_FS_MSG_MAX];
    int kargc = 0;
    size_t keylen = 0;
    if (nfds < 2 || split((size_t)n, argv, &argc, env, &nenv) < 0 ||
        !(keylen = make_key(argv, argc, env, nenv, key, &kargc))) {
        close_all(fds, nfds);
        return; /* the parent is ours; a bad request is a bug, not an attack */
    }
    int reply = fds[1];
    fds[1] = fds[0]; /* the child gets the report memfd and the outputs */
    int *cfds = fds + 1, ncfds = nfds - 1;
    mfs_fs_started st = {0, 0};
    if (njobs == capjobs) {
        size_t nc = capjobs ? capjobs * 2 : 16;
        job *nj = realloc(jobs, nc * sizeof *nj);
        if (!nj) {
            st.err = ENOMEM;
            goto done;
        }
        jobs = nj;
        capjobs = nc;
    }
    if (spare.pid && (spare.keylen != keylen || memcmp(spare.key, key, keylen) != 0))
        spare_retire(); /* prepared for another root, user or environment */
    /* a spare that died idle (killed from outside) refuses the send and
     * is replaced once */
    for (int attempt = 0; attempt < 2 && !st.pid; attempt++) {
        if (!spare.pid) {
            memcpy(spare.key, key, keylen);
            spare.keylen = keylen;
            spare.kargc = kargc;
            if (spare_fork(w) < 0) {
                st.err = errno;
                break;
            }
        }
        if (forward((size_t)n, cfds, ncfds) == 0)
            st.pid = spare.pid;
        else
            st.err = errno;
        /* used or broken: either way never handed a second job */
        close(spare.sock);
        spare.sock = -1;
        spare.pid = 0;
    }
done:
    close_all(cfds, ncfds);
    /* the next spare must not find this request in its copy of memory */
    explicit_bzero(msg, (size_t)n);
    if (st.pid) {
        /* sent before this loop can reap it: "started" always precedes "ended" */
        int pidfd = pidfd_open(st.pid, 0);
        send_msg(reply, &st, sizeof st, &pidfd, pidfd >= 0);
        if (pidfd >= 0)
            close(pidfd);
        jobs[njobs++] = (job){st.pid, reply};
        /* prepared while this job runs: on another core, off its path */
        spare_fork(w);
    } else {
        send_msg(reply, &st, sizeof st, NULL, 0);
        close(reply);
    }
}

static void reap(void)
{
    int status;
    struct rusage ru;
    pid_t pid;
    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        if (pid == spare.pid) {
            spare_retire(); /* died before it had a job: nobody to tell */
            continue;
        }
        for (size_t i = 0; i < njobs; i++) {
            if (jobs[i].pid != pid)
                continue;
            mfs_fs_ended e = {status, 0,
                              (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
                                  (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec};
            send_msg(jobs[i].reply, &e, sizeof e, NULL, 0);
            close(jobs[i].reply);
            jobs[i] = jobs[--njobs];
            break;
        }
    }
}

int mfs_fork_server_run(const mfs_fs_worker *w)
{
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
            reap();
        }
        if (p[0].revents & POLLIN)
            start(w);
        else if (p[0].revents)
            return 0;
    }
}

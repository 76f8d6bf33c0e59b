/* The fork server's loop (include/meshfs/fork_server.h).
 *
 * Single-threaded on purpose: fork() copies only the calling thread, so a
 * server with a second thread could hand its children a lock held forever.
 * The lifeline watcher threads a worker starts exist only in the children,
 * after the fork. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "meshfs/fork_server.h"
#include "meshfs/proto.h"

#define REQ_FD MFS_REPORT_FD /* the parent put the request socket here */

typedef struct job {
    pid_t pid;
    int reply;
} job;

static job *jobs;
static size_t njobs, capjobs;

/* The request's buffer: a child's argv and environment point into it, so
 * it is static (each child has its own copy after the fork). */
static char msg[MFS_FS_MSG_MAX + 1];

static void send_msg(int sock, const void *p, size_t n, int fd)
{
    struct iovec iov = {(void *)p, n};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof u.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    /* a parent that gave up on the job has closed its end: nothing to do */
    while (sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR)
        ;
}

/* In the child: becomes what posix_spawn would have made, then runs the job. */
static void child(int (*job_main)(int, char **), int report, char **argv, int argc, char **env,
                  int nenv)
{
    if (dup2(report, MFS_REPORT_FD) < 0)
        _exit(70);
    /* everything above the lifeline (the request socket's peers, other
     * jobs' reply sockets, the signalfd) goes; job_main's confine() would
     * too, but not before parsing */
    close_range(MFS_LIFELINE_FD + 1, ~0u, 0);
    sigset_t none;
    sigemptyset(&none);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
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
    exit(job_main(argc, argv));
}

static void start(int (*job_main)(int, char **))
{
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {msg, MFS_FS_MSG_MAX};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                        .msg_controllen = sizeof u.buf};
    ssize_t n;
    while ((n = recvmsg(REQ_FD, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n == 0)
        exit(0); /* the parent closed its spawner */
    if (n < 0)
        exit(errno == EAGAIN ? 0 : 1);
    int fds[2] = {-1, -1};
    int nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (nfds < 2)
                    fds[nfds++] = fd;
                else
                    close(fd);
            }
        }
    mfs_fs_request rq;
    if (nfds != 2 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof rq) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        return; /* the parent is ours; a bad request is a bug, not an attack */
    }
    memcpy(&rq, msg, sizeof rq);
    msg[n] = '\0';
    /* argv: argc strings; then the environment until the end */
    static char *argv[64], *env[64];
    int argc = 0, nenv = 0;
    char *p = msg + sizeof rq, *end = msg + n;
    while (p < end && argc < (int)rq.argc && argc < 63) {
        argv[argc++] = p;
        p += strlen(p) + 1;
    }
    argv[argc] = NULL;
    while (p < end && nenv < 63) {
        env[nenv++] = p;
        p += strlen(p) + 1;
    }
    if (rq.magic != MFS_FS_MAGIC || argc != (int)rq.argc) {
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (njobs == capjobs) {
        size_t nc = capjobs ? capjobs * 2 : 16;
        job *nj = realloc(jobs, nc * sizeof *nj);
        if (!nj) {
            mfs_fs_started st = {0, ENOMEM};
            send_msg(fds[1], &st, sizeof st, -1);
            close(fds[0]);
            close(fds[1]);
            return;
        }
        jobs = nj;
        capjobs = nc;
    }
    pid_t pid = fork();
    if (pid == 0)
        child(job_main, fds[0], argv, argc, env, nenv);
    close(fds[0]);
    mfs_fs_started st = {pid > 0 ? pid : 0, pid > 0 ? 0 : errno};
    if (pid < 0) {
        send_msg(fds[1], &st, sizeof st, -1);
        close(fds[1]);
        return;
    }
    /* sent before this loop can reap it: "started" always precedes "ended" */
    int pidfd = pidfd_open(pid, 0);
    send_msg(fds[1], &st, sizeof st, pidfd);
    if (pidfd >= 0)
        close(pidfd);
    jobs[njobs++] = (job){pid, fds[1]};
}

static void reap(void)
{
    int status;
    struct rusage ru;
    pid_t pid;
    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        for (size_t i = 0; i < njobs; i++) {
            if (jobs[i].pid != pid)
                continue;
            mfs_fs_ended e = {status, 0,
                              (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
                                  (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec};
            send_msg(jobs[i].reply, &e, sizeof e, -1);
            close(jobs[i].reply);
            jobs[i] = jobs[--njobs];
            break;
        }
    }
}

int mfs_fork_server_run(int (*job_main)(int argc, char **argv))
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
            start(job_main);
        else if (p[0].revents)
            return 0;
    }
}

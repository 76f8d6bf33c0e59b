/* Posix_spawn, the report and the reaping of a direct worker (spawn_int.h). */
#include "spawn_int.h"

extern char **environ;

int mfs_sp_spawn_env(const mfs_spawner *sp, char **argv, int report_fd, int out_fd, pid_t *pid,
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

int mfs_sp_spawn(const mfs_spawner *sp, char **argv, int report_fd, int out_fd, pid_t *pid,
                 mfs_err *err)
{
    return mfs_sp_spawn_env(sp, argv, report_fd, out_fd, pid, environ, err);
}

/* 1 once fd is readable, has hung up or poll fails (the read that follows
 * says which); 0 when the deadline passes first. */
int mfs_sp_wait_readable(int fd, double deadline)
{
    for (;;) {
        double left = deadline - mfs_sp_now_s();
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
int mfs_sp_read_report(int fd, double deadline, uint8_t **buf, size_t *len)
{
    size_t cap = 4096;
    *buf = malloc(cap);
    *len = 0;
    if (!*buf)
        return -1;
    for (;;) {
        if (!mfs_sp_wait_readable(fd, deadline))
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
int mfs_sp_read_memfd_report(int fd, uint8_t **buf, size_t *len)
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
int mfs_sp_reap(pid_t pid, double deadline, int *timed_out, double *cpu_s)
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
        if (mfs_sp_now_s() >= deadline) {
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
void mfs_sp_describe_death(int status, const mfs_job *job, double cpu_s, char *out, size_t n,
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
            /* the seccomp filter (src/worker/sandbox.c): no conversion
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

/* ---- the direct transport (spawn_int.h) ---- */

static int direct_start(mfs_spawner *sp, sp_run *r, mfs_report *rep, mfs_err *err)
{
    (void)rep;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return mfs_errf(err, "pipe: %s", strerror(errno));
    int rc = mfs_sp_spawn(sp, r->argv, p[1], -1, &r->pid, err);
    close(p[1]);
    if (rc < 0) {
        close(p[0]);
        return -1;
    }
    r->report_r = p[0];
    r->t = &mfs_sp_direct;
    return 0;
}

static void direct_wait(sp_run *r, double deadline, sp_ended *e)
{
    e->got = mfs_sp_read_report(r->report_r, deadline, &e->buf, &e->len);
    close(r->report_r);
    e->status = mfs_sp_reap(r->pid, e->got == 1 ? deadline : mfs_sp_now_s(), &e->timed_out, &e->cpu_s);
}

static void direct_claim(sp_run *r, mfs_report *rep)
{
    mfs_sp_claim_outputs(r->job, rep, r->drop, r->uid);
}

static void direct_close(mfs_spawner *sp)
{
    (void)sp; /* its workers are the caller's children, reaped by each run */
}

const sp_transport mfs_sp_direct = {direct_start, direct_wait, direct_claim, direct_close};

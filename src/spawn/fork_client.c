/* The fork server's client (convert.h): the fork-server transport
 * (spawn_int.h). */
#include "spawn_int.h"

/* ---- the fork server (convert.h) ---- */

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
                                  : mfs_sp_spawn_env(sp, argv, s[1], -1, &pid, envp ? envp : environ, NULL);
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



/* One request (convert.h) for argv and the requester's MESHFS_*
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
    if (!mfs_sp_wait_readable(sock, deadline))
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
    if (srv_recv(s[0], &st, sizeof st, &pidfd, mfs_sp_now_s() + 30) != 1 || st.pid <= 0) {
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

/* mfs_sp_reap() for a child of the server: its wait status comes as "ended".
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

/* Waits for the child's "done" (convert.h) or the server's "ended",
 * whichever comes first, until the deadline.  1: "done" came; 0: anything
 * else (srv_reap then waits for "ended" and the exit status). */
static int srv_wait_done(const srv_child *ch, int done_r, double deadline)
{
    for (;;) {
        double left = deadline - mfs_sp_now_s();
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

/* 1 if no process holds any of the files open for writing, so none can
 * change any more: a server's child cannot open one for writing again
 * (Landlock grants it no write right anywhere), and a read lease is
 * granted only while the file has no writable open file description —
 * which a descriptor, a dup of it, a shared mapping or an I/O in flight
 * all keep alive.  The lease is dropped at once: only its grant was
 * wanted. */
static int outputs_unwritable(const mfs_spawner *sp, const int *rd, int n)
{
    if (!sp->children_landlocked)
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

/* ---- the fork-server transport (spawn_int.h) ---- */

/* Whether a conversion should try the server (a hint: srv_spawn decides). */
static int srv_wanted(mfs_spawner *sp)
{
    pthread_mutex_lock(&sp->srv_mu);
    int ok = sp->srv_failures < 3;
    pthread_mutex_unlock(&sp->srv_mu);
    return ok;
}

/* The server's child creates no file (its Landlock ruleset grants none):
 * its outputs are made here, empty, at outdir/<fmt>, and handed to it open
 * (write-only, in format order; the parent closes its copies once they
 * are sent).  r->rd gets a read-only descriptor on each: what the parent
 * checks and claims them by, and never a writer itself, so a read lease
 * on it tells whether anyone still can write (outputs_unwritable).  The
 * child reports into a memfd, read once it says "done" (or the server
 * says it has exited): the parent then wakes once per conversion, not for
 * the report's bytes and again for its EOF.  A run the server cannot take
 * goes to the direct transport, with nothing of this one left behind. */
static int forksrv_start(mfs_spawner *sp, sp_run *r, mfs_report *rep, mfs_err *err)
{
    int out[MFS_FMT_COUNT];
    if (srv_wanted(sp) && mfs_sp_create_outputs(r->job, &r->dfd, out, r->rd, &r->nout) == 0) {
        int done[2] = {-1, -1};
        r->rfd = memfd_create("meshfs-report", MFD_CLOEXEC);
        if (r->rfd >= 0 && pipe2(done, O_CLOEXEC) < 0)
            done[0] = done[1] = -1;
        r->ch = (srv_child){.reply = -1, .pid = 0, .pidfd = -1};
        int via_srv = r->rfd >= 0 && done[0] >= 0 &&
                      srv_spawn(sp, r->argv, r->rfd, done[1], out, r->nout, &r->ch) == 0;
        /* only the child may hold them for writing now (the server closes
         * its copies once it has passed them on) */
        for (int k = 0; k < r->nout; k++)
            close(out[k]);
        if (done[1] >= 0)
            close(done[1]);
        if (via_srv) {
            r->done_r = done[0];
            r->t = &mfs_sp_forksrv;
            return 0;
        }
        mfs_sp_claim_fd_outputs(r->job, rep, r->dfd, r->rd); /* rep->ok 0: removes them all */
        if (r->rfd >= 0)
            close(r->rfd);
        if (done[0] >= 0)
            close(done[0]);
    }
    return mfs_sp_direct.start(sp, r, rep, err);
}

static void forksrv_wait(sp_run *r, double deadline, sp_ended *e)
{
    /* "done" before the exit (convert.h): once the report is complete
     * and no output can be written any more, the exit status could change
     * nothing the parent uses, so it is not waited for.  Anything less (no
     * "done", an empty report, an output still open for writing) waits for
     * "ended" and its status. */
    if (r->ch.pidfd >= 0 && srv_wait_done(&r->ch, r->done_r, deadline) &&
        mfs_sp_read_memfd_report(r->rfd, &e->buf, &e->len) == 1 && e->len > 0 &&
        outputs_unwritable(r->sp, r->rd, r->nout)) {
        srv_release(&r->ch);
        e->status = 0;
        e->timed_out = e->lost = 0;
        e->got = 1;
    } else {
        free(e->buf);
        e->buf = NULL;
        e->len = 0;
        e->status = srv_reap(&r->ch, deadline, &e->timed_out, &e->cpu_s, &e->lost);
        e->got = e->timed_out ? 0 : mfs_sp_read_memfd_report(r->rfd, &e->buf, &e->len);
    }
    close(r->rfd);
    close(r->done_r);
}

static void forksrv_claim(sp_run *r, mfs_report *rep)
{
    mfs_sp_claim_fd_outputs(r->job, rep, r->dfd, r->rd);
}

static void forksrv_close(mfs_spawner *sp)
{
    pthread_mutex_lock(&sp->srv_mu);
    srv_stop_locked(sp);
    pthread_mutex_unlock(&sp->srv_mu);
}

const sp_transport mfs_sp_forksrv = {forksrv_start, forksrv_wait, forksrv_claim, forksrv_close};

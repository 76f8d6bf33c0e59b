/* The worker's path and a spawner's life (spawn_int.h). */
#include "spawn_int.h"

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


/* ---- a spawner's life ---- */

/* Whether Landlock is in force in every server child that got as far as
 * its job (the kernel has it, so a child's sandbox either enforced it or
 * failed), and nothing asked to leave the sandbox out (a test hook). */
static int children_landlocked(void)
{
    /* LANDLOCK_CREATE_RULESET_VERSION */
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, 1u);
    return v > 0 && !getenv("MESHFS_TEST_NO_SANDBOX");
}

int mfs_spawner_open(mfs_spawner **out, const mfs_worker_user *user, mfs_err *err)
{
    mfs_spawner *sp = calloc(1, sizeof *sp);
    if (!sp)
        return mfs_errf(err, "out of memory");
    find_worker(sp->path, sizeof sp->path);
    /* the transport, once: the fork server's (which falls back to direct
     * spawning by itself), unless MESHFS_FORK_SERVER=0 */
    const char *off = getenv("MESHFS_FORK_SERVER");
    sp->transport = off && !strcmp(off, "0") ? &mfs_sp_direct : &mfs_sp_forksrv;
    sp->children_landlocked = children_landlocked();
    /* only root's workers switch user (mfs_worker_ident_for) */
    if (geteuid() == 0)
        sp->user = mfs_worker_user_or_default(user);
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
    mfs_sp_load_exts(sp);
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
    sp->transport->close(sp);
    free(sp->asked);
    pthread_mutex_destroy(&sp->srv_mu);
    for (size_t i = 0; sp->exts && sp->exts[i]; i++)
        free(sp->exts[i]);
    free(sp->exts);
    pthread_mutex_destroy(&sp->sandbox_mu);
    free(sp);
}

int mfs_spawner_convert(mfs_spawner *sp, const mfs_job *job, mfs_report *rep, mfs_err *err)
{
    /* the run's wall time goes into the model entry: what a machine
     * weighs a slow server's download against (src/remote/pace.h) */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = mfs_sp_spawner_run(sp, job, rep, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ms = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    rep->wall_ms = ms > 0 ? (uint64_t)ms : 1;
    return rc;
}

const char *mfs_worker_path(void)
{
    /* only the path, found again at each call: no process is started for
     * it (errtext.c, tests), and nothing is kept but this thread's copy */
    static _Thread_local char path[PATH_MAX];
    find_worker(path, sizeof path);
    return path;
}

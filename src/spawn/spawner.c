/* The worker's path, a spawner's life, the one-shot tools' spawner (spawn_int.h). */
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
    pthread_mutex_lock(&sp->srv_mu);
    mfs_sp_srv_stop_locked(sp);
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
    int rc = mfs_sp_spawner_run(sp, job, rep, err);
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

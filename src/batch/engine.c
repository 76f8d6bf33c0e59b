/* The batch's views, through the mount's resolver (include/meshfs/batch.h).
 *
 * One mfs_views per input root, with a host that is the mount's less what
 * only a mount needs (FUSE, SRC's confinement by openat2, read bits for
 * other users): paths are stat'ed under the root, models hashed through the
 * cache's stat index, keys made by the shared recipe (rules.h), and the
 * converter is a worker run filed in the cache by convstore.c, the mount's
 * own filing.  So a batch finds what a mount or an earlier batch made, and
 * a mount finds what a batch made.
 *
 * Besides the views, each run files its report (the importer's statistics
 * and inputs, the views' notes: what --report prints) as one more entry,
 * keyed like a view named "report" with the import's option text, so a
 * model served from the cache reports the same numbers as a converted one. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "meshfs/batch.h"
#include "meshfs/convert.h"
#include "meshfs/convert.h"
#include "meshfs/formats.h"
#include "meshfs/rules.h"
#include "meshfs/spawner.h"
#include "meshfs/util.h"
#include "meshfs/views.h"

typedef struct root {
    mfs_batch *b;
    char *path;
    int fd;
    mfs_views *views;
    struct root *next;
} root;

struct mfs_batch {
    mfs_batch_cfg cfg;
    unsigned view_formats; /* the views resolved, as the mount holds them: with the package's needs */
    mfs_cache *cache;
    char dir[PATH_MAX];
    char tmpdir[PATH_MAX + 8];
    int private_dir;
    pthread_mutex_t lock;
    root *roots;
    /* --no-cache: the model paths being resolved (removes_filed), and a
     * signal when one ends */
    const char **busy;
    size_t nbusy, busy_cap;
    pthread_cond_t busy_ended;
    mfs_jobdirs *jobdirs; /* worker output directories, kept between runs */
    mfs_remote *remote; /* cfg.remote's client, or NULL */
};

/* FILED_MAX: what one model's conversions file, several runs over. */
#define FILED_MAX (4 * (MFS_FMT_COUNT + 2))

/* The model this thread is resolving: the converter reports into it, and
 * the views its run stored stay readable here even if the cache evicted
 * them at once (the mount's pins.c, per thread). */
static _Thread_local struct {
    mfs_batch_result *res;
    mfs_cache_key key[MFS_FMT_COUNT];
    mfs_cache_hit pin[MFS_FMT_COUNT];
    int npins;
    /* --no-cache: the entries this model's conversions filed (filed_model:
     * a model entry), removed once it is resolved */
    mfs_cache_key filed[FILED_MAX];
    unsigned char filed_model[FILED_MAX];
    int nfiled;
} tl;

static void note_filed(const mfs_cache_key *k, int model)
{
    if (tl.nfiled == FILED_MAX)
        return; /* left for the private cache's removal at the end */
    tl.filed[tl.nfiled] = *k;
    tl.filed_model[tl.nfiled++] = (unsigned char)model;
}

/* Whether this run removes what each model filed once it is resolved:
 * --no-cache, unless the run uploads to a remote tier, whose queue opens
 * each entry by key when it gets to it, after the model is resolved (and
 * drains before the private cache goes, at the end). */
static int removes_filed(const mfs_batch *b)
{
    return b->private_dir && !(b->remote && !b->cfg.remote->read_only);
}

/* Keys hold a model's path under its input, not the input's own, so two
 * inputs' models at the same path can share entries (a model entry when
 * their bytes are the same).  When each model's entries are removed as
 * soon as it is resolved, one of them could remove what the other is
 * reading: so they are resolved one after the other.  Returns 0, or -1
 * on out of memory (then resolved beside it, as before). */
static int busy_enter(mfs_batch *b, const char *model)
{
    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->nbusy;) {
        if (strcmp(b->busy[i], model)) {
            i++;
            continue;
        }
        pthread_cond_wait(&b->busy_ended, &b->lock);
        i = 0;
    }
    if (b->nbusy == b->busy_cap) {
        size_t cap = b->busy_cap ? b->busy_cap * 2 : 8;
        const char **v = realloc(b->busy, cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&b->lock);
            return -1;
        }
        b->busy = v;
        b->busy_cap = cap;
    }
    b->busy[b->nbusy++] = model;
    pthread_mutex_unlock(&b->lock);
    return 0;
}

/* Test builds only (-Dtest_hooks=true): a resolve of a model under a root
 * whose path holds the variable's text waits ms first, so that a race
 * between two resolves happens on every run of its test. */
static void test_hold(const char *var, const char *rootpath, unsigned ms)
{
#ifdef MESHFS_TEST_HOOKS
    const char *v = getenv(var);
    if (v && *v && strstr(rootpath, v))
        usleep(ms * 1000u);
#else
    (void)var;
    (void)rootpath;
    (void)ms;
#endif
}

static void busy_leave(mfs_batch *b, const char *model)
{
    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->nbusy; i++)
        if (b->busy[i] == model) {
            b->busy[i] = b->busy[--b->nbusy];
            break;
        }
    pthread_cond_broadcast(&b->busy_ended);
    pthread_mutex_unlock(&b->lock);
}

/* --no-cache's private cache holds a model's entries only while it is
 * resolved: its hits keep their bytes through their descriptors until
 * its outputs are written, and nothing reads them again.  So the private
 * cache needs room for the models in flight, not for the whole run. */
static void remove_filed(mfs_batch *b)
{
    for (int i = 0; i < tl.nfiled; i++) {
        mfs_err e;
        if (tl.filed_model[i])
            mfs_cache_remove_model(b->cache, &tl.filed[i], &e);
        else
            mfs_cache_remove(b->cache, &tl.filed[i], &e);
    }
    tl.nfiled = 0;
}

static void pins_release(void)
{
    for (int i = 0; i < tl.npins; i++)
        mfs_cache_hit_release(&tl.pin[i]);
    tl.npins = 0;
}

static const mfs_cache_hit *pinned(const mfs_cache_key *k)
{
    for (int i = 0; i < tl.npins; i++)
        if (!memcmp(tl.key[i].b, k->b, sizeof k->b))
            return &tl.pin[i];
    return NULL;
}

/* ---- the resolver's host ---- */

static int host_stat(void *ctx, const char *path, mfs_view_path kind, struct stat *st,
                     mfs_err *err)
{
    (void)kind;
    root *r = ctx;
    return fstatat(r->fd, path, st, 0) < 0 ? mfs_err_code(err, errno) : 0;
}

static int host_perm(void *ctx, const char *model, char *const *paths, const struct stat *st,
                     uint32_t n, mfs_view_perm *out, mfs_err *err)
{
    root *r = ctx;
    return mfs_batch_view_perm(r->fd, model, paths, st, n, out, err);
}

static int host_hash(void *ctx, const char *path, struct stat *st, uint8_t hash[16], mfs_err *err)
{
    root *r = ctx;
    if (mfs_cache_file_hash_at(r->b->cache, r->fd, path, st, hash, err) < 0) {
        err->code = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

static int host_peek(void *ctx, const mfs_cache_key *k, struct timespec newest, mfs_cache_hit *hit,
                     mfs_err *err)
{
    root *r = ctx;
    int rc = mfs_cache_peek(r->b->cache, k, hit, err);
    /* the mount's rule: a failure stands until touched or given more room */
    if (rc == 1 && hit->reason && !mfs_convstore_failure_stands(&r->b->cfg.limits, &hit->fail, newest)) {
        mfs_cache_hit_release(hit);
        return 0;
    }
    const mfs_cache_hit *p;
    if (rc != 1 && (p = pinned(k))) {
        mfs_cache_hit_release(hit);
        *hit = (mfs_cache_hit){.fd = -1, .length = p->length};
        return 1;
    }
    return rc;
}

static int host_open(void *ctx, const mfs_cache_key *mk, const mfs_cache_key *k,
                     mfs_cache_hit *hit, mfs_err *err)
{
    root *r = ctx;
    int rc = mk ? mfs_cache_lookup_in(r->b->cache, mk, k, hit, err)
                : mfs_cache_lookup(r->b->cache, k, hit, err);
    if (rc == 1)
        return 1;
    mfs_cache_hit_release(hit);
    const mfs_cache_hit *p = pinned(k);
    if (!p)
        return rc;
    *hit = *p;
    hit->reason = NULL;
    hit->fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    return hit->fd >= 0 ? 1 : rc;
}

static void host_format_options(void *ctx, int format, const char *fmi_model, char *buf, size_t n)
{
    root *r = ctx;
    mfs_keyopts_format(&r->b->cfg.opts, format, fmi_model, buf, n);
}

static void host_import_options(void *ctx, char *buf, size_t n)
{
    root *r = ctx;
    mfs_keyopts_import(&r->b->cfg.opts, buf, n);
}

/* ---- filing a run (convert.h) ---- */

static int cs_hash(void *ctx, const char *relpath, struct stat *st, uint8_t hash[16], mfs_err *err)
{
    root *r = ctx;
    return mfs_cache_file_hash_at(r->b->cache, r->fd, relpath, st, hash, err) < 0 ? -1 : 0;
}

static void cs_failctx(void *ctx, const mfs_dep *deps, uint32_t ndeps, mfs_cache_failctx *out)
{
    root *r = ctx;
    const mfs_limits *l = &r->b->cfg.limits;
    *out = (mfs_cache_failctx){.timeout_s = l->timeout_s, .memory = l->memory,
                               .cpu_s = l->cpu_s, .output = l->output};
    /* the newest mtime as the memo takes it (host_stat) */
    for (uint32_t i = 0; i < ndeps; i++) {
        struct stat st;
        if (deps[i].kind != MFS_DEP_FILE) /* the memo's newest is its files' */
            continue;
        if (fstatat(r->fd, deps[i].path, &st, 0) < 0)
            continue;
        int64_t t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (t > out->inputs_mtime_ns)
            out->inputs_mtime_ns = t;
    }
}

static int report_key(const root *r, const mfs_dep *deps, uint32_t ndeps, mfs_cache_key *k,
                      mfs_err *err)
{
    char iopts[64];
    mfs_keyopts_import(&r->b->cfg.opts, iopts, sizeof iopts);
    return mfs_cache_view_key(deps, ndeps, "report", iopts, MESHFS_OUTPUT_VERSION, k, err);
}

/* The run's report, filed with the model by convstore (inside the model
 * entry when small: a file less a model). */
static int cs_extra(void *ctx, const mfs_dep *deps, uint32_t ndeps, const mfs_report *rep,
                    mfs_cache_key *key, uint8_t **bytes, size_t *len)
{
    mfs_err err;
    *bytes = NULL;
    if (!ndeps || report_key(ctx, deps, ndeps, key, &err) < 0 ||
        mfs_report_encode(rep, bytes, len) < 0) {
        free(*bytes);
        *bytes = NULL;
        return -1;
    }
    return 0;
}

static int host_convert(void *ctx, const char *model, const char *fmi_model, unsigned formats,
                        mfs_cache_manifest *man, mfs_err *err)
{
    root *r = ctx;
    mfs_batch *b = r->b;
    memset(man, 0, sizeof *man);
    if (!b->cfg.spawner) /* a batch opened only to explain keys */
        return mfs_errf(err, "%s: no worker to convert it with", model);
    mfs_jobdir *d = mfs_jobdirs_take(b->jobdirs, NULL, err);
    if (!d)
        return -1;
    const char *tmp = mfs_jobdir_path(d);
    unsigned run = formats; /* the views missing: every run imports alike */
    mfs_job job = {.root = r->path, .model = model, .formats = run, .opts = b->cfg.opts,
                   .outdir = tmp, .limits = b->cfg.limits};
    job.opts.model_path = fmi_model;
    /* who the worker runs as, and the file it must find (include/meshfs/
     * convert.h), from the model's path as the mount resolves SRC's: beneath
     * the input, no link followed, so a model swapped for a link since the
     * plan is refused (it is not a regular file) */
    mfs_test_hold_until("MESHFS_TEST_HOLD_OWNER", model); /* tests: swap it now */
    struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    int mfd = (int)syscall(SYS_openat2, r->fd, model, &how, sizeof how);
    int known = mfs_job_set_model_file(&job, mfd, err);
    if (mfd >= 0)
        close(mfd);
    if (known < 0) {
        mfs_jobdirs_give(b->jobdirs, d, run, 1);
        return -1;
    }
    mfs_report rep;
    if (mfs_spawner_convert(b->cfg.spawner, &job, &rep, err) < 0) {
        mfs_jobdirs_give(b->jobdirs, d, run, 0);
        return -1;
    }
    mfs_convstore cs = {.ctx = r, .cache = b->cache, .views = r->views, .hash_model = cs_hash,
                        .failctx = cs_failctx, .extra = cs_extra, .keep_outputs = 1};
    mfs_cache_hit hits[MFS_FMT_COUNT];
    mfs_cache_key mk;
    int rc = mfs_convstore_file(&cs, model, tmp, fmi_model, run, &rep, man, &mk, hits, err);
    if (rc >= 0 && removes_filed(b)) {
        mfs_cache_key rk;
        mfs_err e;
        note_filed(&mk, 1);
        for (uint32_t i = 0; i < man->nviews; i++)
            if (!man->views[i].embedded)
                note_filed(&man->views[i].key, 0); /* an entry, or a failure's */
        if (man->ndeps && report_key(r, man->deps, man->ndeps, &rk, &e) == 0)
            note_filed(&rk, 0); /* when too large to embed */
    }
    if (rc >= 0) {
        pins_release();
        for (uint32_t i = 0; i < man->nviews && i < MFS_FMT_COUNT; i++) {
            if (hits[i].fd < 0)
                continue;
            tl.key[tl.npins] = man->views[i].key;
            tl.pin[tl.npins++] = hits[i];
        }
    }
    if (tl.res) {
        tl.res->converted = 1;
        mfs_report_free(&tl.res->rep);
        tl.res->rep = rep;
        tl.res->have_report = 1;
    } else {
        mfs_report_free(&rep);
    }
    /* convstore_file removed every output it filed; on -1 it may not have */
    mfs_jobdirs_give(b->jobdirs, d, run, rc >= 0);
    return rc;
}

/* ---- roots ---- */

static root *get_root(mfs_batch *b, const char *path, mfs_err *err)
{
    pthread_mutex_lock(&b->lock);
    root *r = b->roots;
    while (r && strcmp(r->path, path))
        r = r->next;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r || !(r->path = strdup(path))) {
            free(r);
            pthread_mutex_unlock(&b->lock);
            mfs_errf(err, "out of memory");
            return NULL;
        }
        r->b = b;
        r->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (r->fd < 0) {
            mfs_errf(err, "%s", strerror(errno));
            free(r->path);
            free(r);
            pthread_mutex_unlock(&b->lock);
            return NULL;
        }
        mfs_views_host h = {
            .ctx = r,
            .cache = b->cache,
            .rootfd = r->fd,
            .formats = b->view_formats,
            .version = MESHFS_OUTPUT_VERSION,
            .stat_path = host_stat,
            .hash_model = host_hash,
            .perm = host_perm,
            .entry_peek = host_peek,
            .entry_open = host_open,
            .format_options = host_format_options,
            .import_options = host_import_options,
            .convert = host_convert,
            .remote = b->remote,
        };
        r->views = mfs_views_new(&h);
        if (!r->views) {
            close(r->fd);
            free(r->path);
            free(r);
            pthread_mutex_unlock(&b->lock);
            mfs_errf(err, "out of memory");
            return NULL;
        }
        r->next = b->roots;
        b->roots = r;
    }
    pthread_mutex_unlock(&b->lock);
    return r;
}

/* ---- the batch ---- */

/* --no-cache's private caches are named meshfs-convert-<pid>-XXXXXX, so one
 * left by a run that was killed (SIGKILL, or a stop signal that came
 * before meshfs-convert's signal thread: no exit code runs) is found
 * and removed by the next --no-cache run: ours, and its process gone. */
static void remove_orphan_private_caches(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid;
        char rest[16];
        if (sscanf(de->d_name, "meshfs-convert-%ld-%15s", &pid, rest) != 2 || pid <= 0 ||
            strlen(rest) != 6)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", tmp, de->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
            mfs_batch_remove_tree(path);
    }
    closedir(d);
}

/* A stop signal removes the private cache (output.c) while the run's
 * threads still store into it: they must not make it again. */
static void stop_private(void *ctx)
{
    mfs_cache_stop_reviving(((mfs_batch *)ctx)->cache);
}

int mfs_batch_open(const mfs_batch_cfg *cfg, mfs_batch **out, mfs_err *err)
{
    mfs_batch *b = calloc(1, sizeof *b);
    if (!b)
        return mfs_errf(err, "out of memory");
    b->cfg = *cfg;
    b->view_formats = cfg->formats | (cfg->formats & MFS_FMT_LGEPKG_BIT ? MFS_LGEPKG_NEEDS : 0);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->busy_ended, NULL);
    mfs_cache_config cc = {.dir = cfg->cache_dir, .flags = cfg->no_cap ? MFS_CACHE_NO_CAP : 0};
    if (cfg->no_cache) {
        const char *t = getenv("TMPDIR");
        remove_orphan_private_caches(t && t[0] ? t : "/tmp");
        snprintf(b->dir, sizeof b->dir, "%s/meshfs-convert-%ld-XXXXXX", t && t[0] ? t : "/tmp",
                 (long)getpid());
        if (!mfs_batch_mkdtemp_tree(b->dir)) {
            mfs_errf(err, "--no-cache: cannot make a private cache in %s: %s", t && t[0] ? t : "/tmp",
                     strerror(errno));
            free(b);
            return -1;
        }
        b->private_dir = 1;
        cc.dir = b->dir;
        cc.max_size = UINT64_MAX / 4; /* nothing is kept, so nothing is evicted */
    }
    if (mfs_cache_open(&cc, &b->cache, err) < 0) {
        if (b->private_dir) { /* what the open made before it failed goes too */
            mfs_batch_remove_tree(b->dir);
            mfs_batch_tmp_forget(b->dir);
        }
        free(b);
        return -1;
    }
    if (b->private_dir) /* removed on a stop signal: for good */
        mfs_batch_on_stop(stop_private, b);
    snprintf(b->dir, sizeof b->dir, "%s", mfs_cache_dir(b->cache));
    snprintf(b->tmpdir, sizeof b->tmpdir, "%s/tmp", b->dir);
    if (mkdir(b->tmpdir, 0700) < 0 && errno != EEXIST) {
        mfs_errf(err, "cache: %s: %s", b->tmpdir, strerror(errno));
        mfs_batch_close(b);
        return -1;
    }
    if (!(b->jobdirs = mfs_jobdirs_new(b->cache, b->tmpdir))) {
        mfs_errf(err, "out of memory");
        mfs_batch_close(b);
        return -1;
    }
    if (cfg->remote) {
        mfs_remote_cfg rc = *cfg->remote;
        rc.view_max = cfg->limits.output; /* no view fetched is larger than one made here */
        rc.no_owed = b->private_dir;      /* removed at the end: nothing to owe from */
        rc.convert_timeout_s = (unsigned)(cfg->limits.timeout_s + 0.999); /* a lease's wait (remote.h, "leases") */
        if (!(b->remote = mfs_remote_new(&rc, b->cache, err))) {
            mfs_batch_close(b);
            return -1;
        }
    }
    *out = b;
    return 0;
}

/* A batch run ends only when what it converted is on the server: the
 * upload queue is drained (for at most 10 min) before the client goes. */
#define REMOTE_DRAIN_MAX_S 600

void mfs_batch_close(mfs_batch *b)
{
    if (!b)
        return;
    mfs_remote_drain(b->remote, REMOTE_DRAIN_MAX_S);
    mfs_remote_free(b->remote);
    b->remote = NULL;
    while (b->roots) {
        root *r = b->roots;
        b->roots = r->next;
        mfs_views_free(r->views);
        close(r->fd);
        free(r->path);
        free(r);
    }
    pins_release();
    mfs_jobdirs_free(b->jobdirs);
    if (b->private_dir)
        mfs_batch_on_stop(NULL, NULL);
    mfs_cache_close(b->cache);
    if (b->private_dir) {
        mfs_batch_remove_tree(b->dir);
        mfs_batch_tmp_forget(b->dir);
    }
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->busy_ended);
    free(b->busy);
    free(b);
}

const char *mfs_batch_cache_dir(const mfs_batch *b)
{
    return b->private_dir ? NULL : b->dir;
}

unsigned mfs_batch_views(const mfs_batch *b)
{
    return b->view_formats & MFS_FMT_ALL;
}

/* The report a run filed (cs_extra), for a model served from the cache. */
static void load_report(const root *r, const char *model, mfs_batch_result *res)
{
    mfs_err err;
    struct stat st;
    uint8_t hash[16];
    mfs_cache_key mk, rk;
    mfs_cache_manifest man;
    memset(&man, 0, sizeof man);
    if (mfs_cache_file_hash_at(r->b->cache, r->fd, model, &st, hash, &err) < 0 ||
        mfs_views_manifest_key(r->views, model, (uint64_t)st.st_size, hash, &mk, &err) < 0 ||
        mfs_cache_manifest_peek(r->b->cache, &mk, &man, &err) != 1)
        return;
    mfs_cache_hit hit = {.fd = -1};
    /* inside the model entry, or (large, or an older run's) its own entry */
    if (report_key(r, man.deps, man.ndeps, &rk, &err) == 0 &&
        (mfs_cache_lookup_in(r->b->cache, &mk, &rk, &hit, &err) == 1 ||
         mfs_cache_lookup(r->b->cache, &rk, &hit, &err) == 1) &&
        !hit.reason && hit.length < (1u << 26)) {
        uint8_t *buf = malloc(hit.length ? hit.length : 1);
        if (buf && pread(hit.fd, buf, hit.length, (off_t)hit.offset) == (ssize_t)hit.length &&
            mfs_report_decode(buf, hit.length, &res->rep, &err) == 0)
            res->have_report = 1;
        free(buf);
    }
    mfs_cache_hit_release(&hit);
    mfs_cache_manifest_free(&man);
}

/* The stats' unit (cache.h, model_hits): this model, once for this run,
 * however many of its views were read; a failure remembered in the cache
 * was served from it too. */
static void count_model(mfs_batch *b, const mfs_batch_result *res)
{
    mfs_cache_note(b->cache, res->converted ? MFS_CACHE_MODEL_MISS : MFS_CACHE_MODEL_HIT);
}

int mfs_batch_explain(mfs_batch *b, const char *rootpath, const char *model, const char *fmi_model,
                      mfs_explain *out, mfs_err *err)
{
    root *r = get_root(b, rootpath, err);
    if (!r) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return mfs_views_explain(r->views, model, fmi_model, out, err);
}

int mfs_batch_resolve(mfs_batch *b, const char *rootpath, const char *model, const char *fmi_model,
                      mfs_batch_result *res, mfs_err *err)
{
    memset(res, 0, sizeof *res);
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        res->view[f].hit.fd = -1;
    root *r = get_root(b, rootpath, err);
    if (!r)
        return -1;
    test_hold("MESHFS_TEST_BATCH_HOLD_START", rootpath, 300);
    int serial = removes_filed(b) && busy_enter(b, model) == 0;
    tl.res = res;
    int failed_model = 0;
    unsigned views = mfs_batch_views(b);
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(views & (1u << f)))
            continue;
        mfs_batch_view *v = &res->view[f];
        mfs_view_info info;
        mfs_err e;
        mfs_err_clear(&e);
        mfs_view_outcome o = mfs_views_resolve(r->views, model, fmi_model, f, MFS_VIEW_OPEN, &info, &e);
        if (o == MFS_VIEW_HIT) {
            v->ok = 1;
            v->size = info.size;
            v->hit = info.hit;
            v->readers = (mfs_batch_readers){info.perm_known, info.perm, info.uid, info.gid};
        } else if (o == MFS_VIEW_FAILED_MODEL) {
            snprintf(v->error, sizeof v->error, "%s", e.msg[0] ? e.msg : "conversion failed");
            failed_model = 1;
        } else {
            v->machine = 1;
            snprintf(v->error, sizeof v->error, "%s",
                     e.msg[0] ? e.msg : strerror(info.errnum ? info.errnum : EIO));
        }
    }
    tl.res = NULL;
    pins_release();
    res->remembered = failed_model && !res->converted;
    count_model(b, res);
    if (!res->have_report)
        load_report(r, model, res);
    test_hold("MESHFS_TEST_BATCH_HOLD_END", rootpath, 1000);
    if (b->private_dir)
        remove_filed(b);
    if (serial)
        busy_leave(b, model);
    return 0;
}

void mfs_batch_result_free(mfs_batch_result *r)
{
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        mfs_cache_hit_release(&r->view[f].hit);
    if (r->have_report)
        mfs_report_free(&r->rep);
    memset(r, 0, sizeof *r);
}

/* Background conversions of a listed folder's cold models (mount.h).
 *
 * One lock (pf->mu) guards the marks, the queue and the fills; it is a leaf
 * (mount.h's lock order): nothing else is taken while it is held, and it is
 * never held across a resolution, a listing query or a log line. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "meshfs/util.h"
#include "mount.h"

#define MARKS 64
/* How long after a listing a cold stat in the folder still counts as the
 * listing's: `ls -l` stats right after reading, find -ls between reads of
 * other folders.  A stat later than that is taken to be a reader of its own. */
#define MARK_TTL_S 10.0
#define PROGRESS_AFTER_S 2.0
#define PROGRESS_EVERY_S 5.0
#define MAX_THREADS 64

/* A folder's fill: what one listing's stats queued, for the progress line. */
typedef struct fill {
    char *dir;
    unsigned total, done, failed, dropped;
    double start, last_line;
    struct fill *next;
} fill;

typedef struct item {
    char *model, *base;
    int format;
    fill *f;
} item;

struct mfs_prefetch {
    mfs_fs *fs;
    pthread_mutex_t mu;
    pthread_cond_t work;    /* the queue has an item, or stop */
    pthread_cond_t tick;    /* a fill began, or stop: the reporter wakes */
    item *q;                /* ring of cap */
    size_t cap, head, n;
    fill *fills;
    struct {
        char *dir;
        double at;
    } marks[MARKS];
    pthread_t th[MAX_THREADS], reporter;
    unsigned nth;
    int started;
    atomic_int stop;
};

static unsigned mark_slot(const char *dir)
{
    return (unsigned)(XXH3_64bits(dir, strlen(dir)) % MARKS);
}

unsigned mfs_prefetch_waiting(mfs_fs *fs)
{
    mfs_prefetch *pf = fs->prefetch;
    if (!pf)
        return 0;
    pthread_mutex_lock(&pf->mu);
    unsigned n = (unsigned)pf->n;
    pthread_mutex_unlock(&pf->mu);
    return n;
}

void mfs_prefetch_listed(mfs_fs *fs, const char *dir)
{
    mfs_prefetch *pf = fs->prefetch;
    if (!pf)
        return;
    char *copy = strdup(dir);
    if (!copy)
        return; /* no prefetch for this listing: nothing else is lost */
    unsigned s = mark_slot(dir);
    pthread_mutex_lock(&pf->mu);
    free(pf->marks[s].dir);
    pf->marks[s].dir = copy;
    pf->marks[s].at = mfs_mono_s();
    pthread_mutex_unlock(&pf->mu);
}

/* 1 if dir has a fresh mark; with take, the mark is used up. */
static int mark_fresh(mfs_prefetch *pf, const char *dir, int take)
{
    unsigned s = mark_slot(dir);
    pthread_mutex_lock(&pf->mu);
    int fresh = pf->marks[s].dir && !strcmp(pf->marks[s].dir, dir) &&
                mfs_mono_s() - pf->marks[s].at <= MARK_TTL_S;
    if (fresh && take) {
        free(pf->marks[s].dir);
        pf->marks[s].dir = NULL;
    }
    pthread_mutex_unlock(&pf->mu);
    return fresh;
}

static const char *shown_dir(const char *dir)
{
    return dir[0] ? dir : ".";
}

/* With pf->mu held: a fill's line once it has run long enough, into line
 * (empty if none is due).  last: the fill is over. */
static void fill_line(const fill *f, double now, int last, char *line, size_t n)
{
    double secs = now - f->start;
    line[0] = '\0';
    if (last) {
        if (secs <= PROGRESS_AFTER_S)
            return; /* a short fill is not worth a line */
        int len = snprintf(line, n, "converting: %u of %u models done in %s in %.1f s", f->done,
                           f->total, shown_dir(f->dir), secs);
        if (f->failed && len > 0 && (size_t)len < n)
            len += snprintf(line + len, n - (size_t)len, ", %u failed", f->failed);
        if (f->dropped && len > 0 && (size_t)len < n)
            snprintf(line + len, n - (size_t)len, ", %u not converted (dropped or unmounted)",
                     f->dropped);
        return;
    }
    snprintf(line, n, "converting: %u of %u models done in %s, %.1f models/s", f->done, f->total,
             shown_dir(f->dir), secs > 0 ? f->done / secs : 0.0);
}

/* With pf->mu held: unlinks f if every model it queued is accounted for,
 * leaving its final line in line. */
static void fill_settle(mfs_prefetch *pf, fill *f, char *line, size_t n)
{
    line[0] = '\0';
    if (f->done + f->dropped < f->total)
        return;
    fill_line(f, mfs_mono_s(), 1, line, n);
    for (fill **p = &pf->fills; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    free(f->dir);
    free(f);
}

static void item_free(item *it)
{
    free(it->model);
    free(it->base);
}

/* What one queued model came to. */
enum { DONE, FAILED };

static int prefetch_one(mfs_fs *fs, const item *it)
{
    mfs_view_ref ref = {.model = it->model, .base = it->base, .format = it->format};
    struct stat mst, st;
    /* warm or failed since it was queued (a reader got to it first) */
    if (mfs_view_cached_stat(fs, it->f->dir, &ref, &mst, MFS_VIEW_INPUTS_STAT, &st) > 0)
        return DONE;
    mfs_view_info vi;
    mfs_err err;
    mfs_view_outcome o = mfs_view_get(fs, it->f->dir, it->model, it->base, it->format,
                                      MFS_VIEW_ATTR, &vi, &err);
    return o == MFS_VIEW_HIT ? DONE : FAILED;
}

static void *worker(void *arg)
{
    mfs_prefetch *pf = arg;
    mfs_fs_slots_background(&pf->stop);
    pthread_mutex_lock(&pf->mu);
    for (;;) {
        while (!atomic_load(&pf->stop) && pf->n == 0)
            pthread_cond_wait(&pf->work, &pf->mu);
        if (atomic_load(&pf->stop))
            break;
        item it = pf->q[pf->head];
        pf->head = (pf->head + 1) % pf->cap;
        pf->n--;
        pthread_mutex_unlock(&pf->mu);
        int r = prefetch_one(pf->fs, &it);
        char line[512];
        pthread_mutex_lock(&pf->mu);
        it.f->done++;
        it.f->failed += r == FAILED;
        fill_settle(pf, it.f, line, sizeof line);
        pthread_mutex_unlock(&pf->mu);
        item_free(&it);
        if (line[0])
            mfs_errtext_log_at(&pf->fs->names, MFS_LOG_INFO, "%s", line);
        pthread_mutex_lock(&pf->mu);
    }
    pthread_mutex_unlock(&pf->mu);
    return NULL;
}

/* Wakes every second while a fill runs, for the progress lines. */
static void *reporter(void *arg)
{
    mfs_prefetch *pf = arg;
    mfs_fs_slots_background(&pf->stop);
    pthread_mutex_lock(&pf->mu);
    while (!atomic_load(&pf->stop)) {
        if (!pf->fills) {
            pthread_cond_wait(&pf->tick, &pf->mu);
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&pf->tick, &pf->mu, &until);
        if (atomic_load(&pf->stop))
            break;
        double now = mfs_mono_s();
        char lines[4][512];
        int nl = 0;
        for (fill *f = pf->fills; f && nl < 4; f = f->next) {
            if (now - f->start < PROGRESS_AFTER_S ||
                (f->last_line > 0 && now - f->last_line < PROGRESS_EVERY_S))
                continue;
            f->last_line = now;
            fill_line(f, now, 0, lines[nl++], sizeof lines[0]);
        }
        pthread_mutex_unlock(&pf->mu);
        for (int i = 0; i < nl; i++)
            mfs_errtext_log_at(&pf->fs->names, MFS_LOG_INFO, "%s", lines[i]);
        pthread_mutex_lock(&pf->mu);
    }
    pthread_mutex_unlock(&pf->mu);
    return NULL;
}

/* With pf->mu held: threads on first use, so none exists before the daemon
 * has detached (fuse_daemonize forks). */
static void start_threads(mfs_prefetch *pf)
{
    if (pf->started)
        return;
    pf->started = 1;
    unsigned want = pf->fs->cfg.convert_jobs;
    if (want < 1)
        want = 1;
    if (want > MAX_THREADS)
        want = MAX_THREADS;
    for (pf->nth = 0; pf->nth < want; pf->nth++)
        if (pthread_create(&pf->th[pf->nth], NULL, worker, pf) != 0)
            break;
    if (pthread_create(&pf->reporter, NULL, reporter, pf) != 0)
        pf->started = 2; /* no reporter to join: no progress lines, conversions still run */
}

/* With pf->mu held: is model of dir queued? */
static int queued(const mfs_prefetch *pf, const char *dir, const char *model)
{
    for (size_t i = 0; i < pf->n; i++) {
        const item *it = &pf->q[(pf->head + i) % pf->cap];
        if (!strcmp(it->model, model) && !strcmp(it->f->dir, dir))
            return 1;
    }
    return 0;
}

/* With pf->mu held: appends (the oldest dropped if full).  Takes model and
 * base.  Returns the final line of a fill the drop ended, in line. */
static void push(mfs_prefetch *pf, fill *f, char *model, char *base, int format, char *line,
                 size_t n)
{
    line[0] = '\0';
    if (pf->n == pf->cap) {
        item old = pf->q[pf->head];
        pf->head = (pf->head + 1) % pf->cap;
        pf->n--;
        old.f->dropped++;
        if (old.f != f)
            fill_settle(pf, old.f, line, n);
        item_free(&old);
    }
    pf->q[(pf->head + pf->n) % pf->cap] = (item){model, base, format, f};
    pf->n++;
    f->total++;
}

void mfs_prefetch_attr(mfs_fs *fs, const char *dir, const mfs_view_ref *ref)
{
    mfs_prefetch *pf = fs->prefetch;
    if (!pf || ref->format == MFS_FS_LGEPKG || atomic_load(&pf->stop) || !mark_fresh(pf, dir, 0))
        return;
    struct stat mst, st;
    if (mfs_view_cached_stat(fs, dir, ref, &mst, MFS_VIEW_INPUTS_STAT, &st) > 0)
        return; /* warm: no conversion is coming, the mark waits for one */
    if (!mark_fresh(pf, dir, 1))
        return; /* another stat of this listing took it */
    mfs_dirtab *tab;
    mfs_err err;
    if (mfs_dirtab_get(&fs->names, dir, 0, &tab, &err) < 0)
        return;
    size_t nm;
    const mfs_dir_model *models = mfs_dirtab_models(tab, &nm);
    /* which are cold: asked here, outside the lock, with the listing's
     * query (never waits, never converts); this model goes first */
    char **want = calloc(nm + 1, sizeof *want), **wbase = calloc(nm + 1, sizeof *wbase);
    size_t nw = 0;
    if (want && wbase) {
        want[nw] = strdup(ref->model);
        wbase[nw] = strdup(ref->base);
        if (want[nw] && wbase[nw]) {
            nw++;
        } else {
            free(want[nw]);
            free(wbase[nw]);
        }
        for (size_t i = 0; i < nm && nw < pf->cap && nw; i++) {
            if (!strcmp(models[i].model, ref->model))
                continue;
            mfs_view_ref r = {.model = (char *)models[i].model, .base = (char *)models[i].base,
                              .format = ref->format};
            if (mfs_view_cached_stat(fs, dir, &r, &mst, MFS_VIEW_INPUTS_STAT, &st) > 0)
                continue;
            want[nw] = strdup(models[i].model);
            wbase[nw] = strdup(models[i].base);
            if (!want[nw] || !wbase[nw]) {
                free(want[nw]);
                free(wbase[nw]);
                want[nw] = wbase[nw] = NULL;
                break;
            }
            nw++;
        }
    }
    mfs_dirtab_put(tab);
    if (nw)
        mfs_fs_fg_coming(fs, dir, ref->model); /* the caller's own first */
    char line[512] = "";
    pthread_mutex_lock(&pf->mu);
    fill *f = NULL;
    for (fill *g = pf->fills; g; g = g->next)
        if (!strcmp(g->dir, dir))
            f = g;
    if (!f && nw && (f = calloc(1, sizeof *f)) && (f->dir = strdup(dir))) {
        f->start = mfs_mono_s();
        f->next = pf->fills;
        pf->fills = f;
    } else if (f && !f->dir) {
        free(f);
        f = NULL;
    }
    size_t i = 0;
    for (; f && i < nw; i++) {
        if (atomic_load(&pf->stop) || queued(pf, dir, want[i])) {
            free(want[i]);
            free(wbase[i]);
            continue;
        }
        char dropped[512];
        push(pf, f, want[i], wbase[i], ref->format, dropped, sizeof dropped);
        if (dropped[0])
            snprintf(line, sizeof line, "%s", dropped);
    }
    for (; i < nw; i++) {
        free(want[i]);
        free(wbase[i]);
    }
    char end[512] = "";
    if (f)
        fill_settle(pf, f, end, sizeof end); /* a fill to which nothing was added */
    if (pf->n) {
        start_threads(pf);
        pthread_cond_broadcast(&pf->work);
        pthread_cond_signal(&pf->tick);
    }
    pthread_mutex_unlock(&pf->mu);
    free(want);
    free(wbase);
    if (line[0])
        mfs_errtext_log_at(&fs->names, MFS_LOG_INFO, "%s", line);
    if (end[0])
        mfs_errtext_log_at(&fs->names, MFS_LOG_INFO, "%s", end);
}

int mfs_prefetch_open(mfs_fs *fs, mfs_err *err)
{
    fs->prefetch = NULL;
    if (fs->cfg.prefetch == 0)
        return 0;
    mfs_prefetch *pf = calloc(1, sizeof *pf);
    if (!pf || !(pf->q = calloc(fs->cfg.prefetch, sizeof *pf->q))) {
        free(pf);
        return mfs_err_sys(err, ENOMEM, "prefetch: out of memory");
    }
    pf->fs = fs;
    pf->cap = fs->cfg.prefetch;
    pthread_mutex_init(&pf->mu, NULL);
    pthread_cond_init(&pf->work, NULL);
    pthread_cond_init(&pf->tick, NULL);
    atomic_init(&pf->stop, 0);
    fs->prefetch = pf;
    return 0;
}

void mfs_prefetch_close(mfs_fs *fs)
{
    mfs_prefetch *pf = fs->prefetch;
    if (!pf)
        return;
    pthread_mutex_lock(&pf->mu);
    atomic_store(&pf->stop, 1);
    unsigned dropped = (unsigned)pf->n;
    while (pf->n) {
        item_free(&pf->q[pf->head]);
        pf->head = (pf->head + 1) % pf->cap;
        pf->n--;
    }
    pthread_cond_broadcast(&pf->work);
    pthread_cond_broadcast(&pf->tick);
    int started = pf->started;
    pthread_mutex_unlock(&pf->mu);
    /* a prefetch waiting for a slot gives up (convert.c's gate) */
    pthread_mutex_lock(&fs->job_lock);
    pthread_cond_broadcast(&fs->job_cond);
    pthread_mutex_unlock(&fs->job_lock);
    for (unsigned i = 0; i < pf->nth; i++)
        pthread_join(pf->th[i], NULL);
    if (started == 1)
        pthread_join(pf->reporter, NULL);
    if (dropped)
        mfs_errtext_log_at(&fs->names, MFS_LOG_INFO, "converting: unmounted with %u queued models not converted",
                           dropped);
    while (pf->fills) {
        fill *f = pf->fills;
        pf->fills = f->next;
        free(f->dir);
        free(f);
    }
    for (int i = 0; i < MARKS; i++)
        free(pf->marks[i].dir);
    pthread_cond_destroy(&pf->work);
    pthread_cond_destroy(&pf->tick);
    pthread_mutex_destroy(&pf->mu);
    free(pf->q);
    free(pf);
    fs->prefetch = NULL;
}

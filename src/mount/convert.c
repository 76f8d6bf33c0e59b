/* A conversion for the mount: one worker run, its outputs filed in the cache.
 *
 * The worker writes into a private directory beside the cache; each output
 * it vouches for is copied into a cache entry under the key built from the
 * inputs the worker actually read, each failure becomes a negative entry
 * under the same key (so it is not retried until an input changes), and the
 * model's manifest records the inputs for the next lookup. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "../coherence/coherence.h"
#include "mount.h"
#include "meshfs/convert.h"
#include "meshfs/rules.h"
#include "meshfs/util.h"

/* The option text in keys: the recipe shared with meshfs-convert
 * (include/meshfs/keyopts.h); the mount's formats are not in it. */
void mfs_fs_format_options(const mfs_fs *fs, int format, const char *fmi_model, char *buf, size_t n)
{
    mfs_keyopts_format(&fs->cfg.opts, format, fmi_model, buf, n);
}

void mfs_fs_import_options(const mfs_fs *fs, char *buf, size_t n)
{
    mfs_keyopts_import(&fs->cfg.opts, buf, n);
}

/* A slot of convert_jobs.  A prefetch (prefetch.c) lets requests someone
 * waits for go first, but for 10 s of yielding at most, counted from the
 * first time it finds one waiting (not from when it began to wait: a
 * prefetch queued behind long conversions would otherwise yield for no
 * time at all): a reader may be waiting for the very model it holds (the
 * single flight), unseen from here.  A request that has only queued the
 * prefetches so far (mfs_fs_fg_coming) counts as waiting: else a prefetch
 * thread takes the free slot it was about to ask for.  At unmount a
 * prefetch not started gives up (-1). */
#define NCOMING (sizeof ((mfs_fs *)0)->jobs_fg_coming / sizeof ((mfs_fs *)0)->jobs_fg_coming[0])

static _Thread_local uint64_t fg_coming_here; /* the model this thread said it comes for */

static uint64_t model_key(const char *relpath)
{
    return XXH3_64bits(relpath, strlen(relpath)) | 1;
}

/* Called locked: this thread's model is no longer coming. */
static void fg_arrived(mfs_fs *fs)
{
    for (size_t i = 0; fg_coming_here && i < NCOMING; i++)
        if (fs->jobs_fg_coming[i].model == fg_coming_here) {
            if (--fs->jobs_fg_coming[i].n == 0)
                fs->jobs_fg_coming[i].model = 0;
            break;
        }
    fg_coming_here = 0;
}

void mfs_fs_fg_coming(mfs_fs *fs, const char *dir, const char *model)
{
    char rel[4200];
    snprintf(rel, sizeof rel, "%s%s%s", dir, dir[0] ? "/" : "", model);
    uint64_t key = model_key(rel);
    pthread_mutex_lock(&fs->job_lock);
    fg_arrived(fs);
    size_t free_at = NCOMING;
    for (size_t i = 0; i < NCOMING; i++) {
        if (fs->jobs_fg_coming[i].model == key) {
            fs->jobs_fg_coming[i].n++;
            fg_coming_here = key;
            break;
        }
        if (!fs->jobs_fg_coming[i].model && free_at == NCOMING)
            free_at = i;
    }
    if (!fg_coming_here && free_at < NCOMING) { /* else: no priority, no harm */
        fs->jobs_fg_coming[free_at].model = key;
        fs->jobs_fg_coming[free_at].n = 1;
        fg_coming_here = key;
    }
    pthread_mutex_unlock(&fs->job_lock);
}

void mfs_fs_fg_done(mfs_fs *fs)
{
    if (!fg_coming_here)
        return;
    pthread_mutex_lock(&fs->job_lock);
    fg_arrived(fs);
    pthread_cond_broadcast(&fs->job_cond);
    pthread_mutex_unlock(&fs->job_lock);
}

/* Called locked: requests coming for models other than key.  A prefetch of
 * a model a request comes for is that request's work: taking a slot for
 * it serves them (their entry goes). */
static int others_coming(mfs_fs *fs, uint64_t key)
{
    int others = 0;
    for (size_t i = 0; i < NCOMING; i++)
        others |= fs->jobs_fg_coming[i].model && fs->jobs_fg_coming[i].model != key;
    return others;
}

static void coming_served(mfs_fs *fs, uint64_t key)
{
    for (size_t i = 0; i < NCOMING; i++)
        if (fs->jobs_fg_coming[i].model == key)
            fs->jobs_fg_coming[i].model = 0, fs->jobs_fg_coming[i].n = 0;
}

/* Set on the prefetcher's threads (mfs_fs_slots_background): its stop
 * flag, so the slot gate lets foreground requests go first and gives up
 * when the prefetcher stops.  Per thread; prefetch.c tells it here, so
 * this file never calls up into prefetch.c. */
static _Thread_local const atomic_int *bg_stop;

void mfs_fs_slots_background(const atomic_int *stop)
{
    bg_stop = stop;
}

static int job_slot_take(mfs_fs *fs, const char *relpath)
{
    int bg = bg_stop != NULL;
    uint64_t key = model_key(relpath);
    struct timespec yield_until = {0, 0};
    int yielding = bg, timed = 0;
    pthread_mutex_lock(&fs->job_lock);
    if (!bg)
        fg_arrived(fs); /* from coming to waiting, in one step */
    fs->jobs_fg_waiting += !bg;
    while (!(bg && atomic_load(bg_stop)) &&
           (fs->jobs_running >= fs->cfg.convert_jobs ||
            (yielding && (fs->jobs_fg_waiting || others_coming(fs, key))))) {
        if (yielding && (fs->jobs_fg_waiting || others_coming(fs, key)) && !timed) {
            clock_gettime(CLOCK_REALTIME, &yield_until);
            yield_until.tv_sec += 10;
            timed = 1;
        }
        if (!yielding || !timed)
            pthread_cond_wait(&fs->job_cond, &fs->job_lock);
        else if (pthread_cond_timedwait(&fs->job_cond, &fs->job_lock, &yield_until) == ETIMEDOUT)
            yielding = 0;
    }
    fs->jobs_fg_waiting -= !bg;
    int rc = bg && atomic_load(bg_stop) ? -1 : 0;
    fs->jobs_running += rc == 0;
    if (rc == 0 && bg)
        coming_served(fs, key);
    pthread_mutex_unlock(&fs->job_lock);
    if (rc == 0 && bg)
        atomic_fetch_add(&fs->stats.prefetched, 1);
    return rc;
}

static void job_slot_give(mfs_fs *fs)
{
    pthread_mutex_lock(&fs->job_lock);
    fs->jobs_running--;
    pthread_cond_broadcast(&fs->job_cond); /* prefetches and requests wait alike */
    pthread_mutex_unlock(&fs->job_lock);
}


/* The mount's side of filing a run (include/meshfs/convstore.h): the
 * mount, and the run's job folder, whose loss says the cache churned. */
#define HELD_LINES 16

typedef struct run_ctx {
    mfs_fs *fs;
    const mfs_jobdir *jd;
    /* the filing's lines, said once it is known whether the run churned
     * (an rm -rf takes the outputs a moment before their folder) */
    char *line[HELD_LINES];
    mfs_log_level level[HELD_LINES];
    int nlines;
} run_ctx;

/* The held lines said (say) or dropped (a churned run: its retry says so). */
static void run_lines_done(run_ctx *rc, int say)
{
    for (int i = 0; i < rc->nlines; i++) {
        if (say)
            mfs_errtext_log_at(&rc->fs->names, rc->level[i], "%s", rc->line[i]);
        free(rc->line[i]);
    }
    rc->nlines = 0;
}

static int cs_hash(void *ctx, const char *relpath, struct stat *st, uint8_t hash[16], mfs_err *err)
{
    return mfs_beneath_hash(&((run_ctx *)ctx)->fs->names, relpath, st, hash, err) < 0 ? -1 : 0;
}

static void cs_failctx(void *ctx, const mfs_dep *deps, uint32_t ndeps, mfs_cache_failctx *out)
{
    mfs_failure_ctx(&((run_ctx *)ctx)->fs->coherence, deps, ndeps, out); /* failure.c */
}

static void cs_errtext(void *ctx, const char *in, char *out, size_t n)
{
    mfs_errtext(&((run_ctx *)ctx)->fs->names, in, out, n);
}

static void cs_log(void *ctx, const char *msg)
{
    run_ctx *rc = ctx;
    /* a run whose folder went with the cache's contents is run again, and
     * says so once (mfs_fs_convert): what it met meanwhile (outputs gone,
     * a store that found no tmp/) is that churn, not news */
    if (mfs_jobdir_lost(rc->jd))
        return;
    /* the cache failing is meshfs's trouble, not the model's; a model
     * without a texture is no trouble at all (a white .tex is its view) */
    mfs_log_level level = MFS_LOG_WARNING;
    if (!strncmp(msg, "cache: ", 7))
        level = MFS_LOG_ERROR;
    else if (strstr(msg, ": the model names no diffuse texture"))
        level = MFS_LOG_INFO;
    char *copy = rc->nlines < HELD_LINES ? strdup(msg) : NULL;
    if (!copy) {
        mfs_errtext_log_at(&rc->fs->names, level, "%s", msg);
        return;
    }
    rc->level[rc->nlines] = level;
    rc->line[rc->nlines++] = copy;
}

/* The cache's file system refused this run's results (full, over quota,
 * read-only, failing): counted, and said once until a run stores again,
 * naming the model that met it first; not a line per view of every model,
 * which would read as the models' fault (docs/reliability.md). */
static void cs_store_failed(void *ctx, const char *relpath, int errnum)
{
    mfs_fs *fs = ((run_ctx *)ctx)->fs;
    atomic_fetch_add(&fs->stats.cache_store_failures, 1);
    if (mfs_latch_raise(&fs->store_refused))
        mfs_errtext_log_at(&fs->names, MFS_LOG_ERROR,
                           "cache: %s while storing views (first for %s); views are converted but "
                           "not kept, and fail, until %s",
                           strerror(errnum), relpath, mfs_storerr_remedy(errnum));
}

/* At the condition's level, so whoever saw it start sees it end. */
static void cs_stored(void *ctx)
{
    mfs_fs *fs = ((run_ctx *)ctx)->fs;
    if (mfs_latch_lower(&fs->store_refused))
        mfs_errtext_log_at(&fs->names, MFS_LOG_ERROR, "cache: storing again");
}

/* Did the run meet the cache's churn?  Its job folder went, or the
 * cache's contents were removed during it (made again since revivals0,
 * or found removed now): an rm -rf may take a job folder's outputs and
 * leave the folder itself, when the worker made a file in it meanwhile. */
static int churned_since(mfs_fs *fs, const mfs_jobdir *jd, uint64_t revivals0)
{
    if (mfs_jobdir_lost(jd) || mfs_cache_revive(fs->cache, NULL) == 1)
        return 1;
    mfs_cache_stats cst;
    mfs_cache_get_stats(fs->cache, &cst);
    return cst.revivals != revivals0;
}

/* One worker run filed: 0, 1 (a view failed for the machine's sake) or -1
 * with err, as mfs_fs_convert.  *churned: the run's job folder went during
 * it (the cache's contents removed), so its failure is nobody's. */
static int convert_once(mfs_fs *fs, const char *relpath, const char *fmi_model, unsigned formats,
                        mfs_cache_manifest *man, int *churned, int *moved, mfs_err *err)
{
    memset(man, 0, sizeof *man);
    *churned = 0;
    *moved = 0;
    mfs_jobdir *jd = mfs_jobdirs_take(fs->jobdirs, NULL, err);
    /* the cache directory (or all in it) was removed under the mount and
     * made again: here, or by whichever store met it first (the stat
     * index's, a writer's); said once each time */
    mfs_cache_stats cst;
    mfs_cache_get_stats(fs->cache, &cst);
    uint_least64_t said = atomic_load(&fs->revivals_said);
    while (cst.revivals > said)
        if (atomic_compare_exchange_weak(&fs->revivals_said, &said, cst.revivals)) {
            mfs_errtext_log(&fs->names, "cache directory was removed while mounted: created it again");
            break;
        }
    if (!jd)
        return -1;
    const char *tmp = mfs_jobdir_path(jd);
    /* only the views missing: every run imports alike, whatever it
     * writes, so a view made alone is the one a full run makes
     * (meshfs/keyopts.h) */
    mfs_job job = {.root = fs->cfg.src, .model = relpath, .formats = formats,
                   .opts = fs->cfg.opts, .outdir = tmp, .limits = fs->cfg.limits};
    job.opts.model_path = fmi_model;
    /* who the worker runs as, and the file it must find (include/meshfs/
     * job.h); the model's path opened as the mount opens all of SRC's: no
     * link followed.  Unknown: not run (as the worker user it might still
     * read what the owner could not know of), and not remembered: the
     * caller fails this read only. */
    int mfd = mfs_beneath_open(&fs->names, relpath, O_PATH);
    int known = mfs_job_set_model_file(&job, mfd, err);
    if (mfd >= 0)
        close(mfd);
    if (known < 0) {
        mfs_jobdirs_give(fs->jobdirs, jd, formats, 1);
        return -1;
    }
    mfs_report rep;
    if (job_slot_take(fs, relpath) < 0) {
        mfs_jobdirs_give(fs->jobdirs, jd, formats, 1);
        return mfs_errf(err, "not converted: the mount is going away");
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint_least64_t running = atomic_fetch_add(&fs->stats.conversions_running, 1) + 1;
    uint_least64_t peak = atomic_load(&fs->stats.conversions_peak);
    while (running > peak && !atomic_compare_exchange_weak(&fs->stats.conversions_peak, &peak, running))
        ;
    /* tests/integration/test_listing.py: a run that lasts as long as the
     * test needs, counted as running (meshfs/test_hold.h) */
    mfs_test_hold_until("MESHFS_TEST_CONVERT_HOLD", relpath);
    int rc = mfs_spawner_convert(fs->spawner, &job, &rep, err);
    atomic_fetch_sub(&fs->stats.conversions_running, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    job_slot_give(fs);
    atomic_fetch_add(&fs->stats.conversions, 1);
    if (rc < 0) {
        *churned = churned_since(fs, jd, cst.revivals);
        mfs_jobdirs_give(fs->jobdirs, jd, formats, 0);
        return -1;
    }
    /* outputs gone with the folder: not worth filing, nor a line */
    if (mfs_jobdir_lost(jd)) {
        *churned = 1;
        mfs_report_free(&rep);
        mfs_jobdirs_give(fs->jobdirs, jd, formats, 0);
        return mfs_errf(err, "%s: the cache's files were removed during the conversion", relpath);
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!rep.ok) {
        atomic_fetch_add(&fs->stats.conversion_failures, 1);
        mfs_errtext_log(&fs->names, "%s: conversion failed: %s", relpath, rep.error);
    } else {
        mfs_errtext_log_at(&fs->names, MFS_LOG_INFO, "%s: converted in %.2f s", relpath, secs);
    }
    if (rep.route[0])
        mfs_errtext_log_at(&fs->names, MFS_LOG_DEBUG, "%s: importer: %s", relpath, rep.route);
    if (rep.ok && rep.repairs[0]) /* once a conversion, as the missing files are */
        mfs_errtext_log(&fs->names, "%s: warning: %s", relpath, rep.repairs);
    if (rep.ok) { /* which views this run made: those missing, no more */
        char made[64] = "";
        size_t at = 0;
        for (int f = 0; f < MFS_FMT_COUNT && at < sizeof made; f++)
            if (formats & (1u << f))
                at += (size_t)snprintf(made + at, sizeof made - at, "%s%s", at ? "," : "",
                                       mfs_format_get((mfs_format)f)->name);
        mfs_errtext_log_at(&fs->names, MFS_LOG_DEBUG, "%s: views made: %s", relpath, made);
    }
    run_ctx ctx = {.fs = fs, .jd = jd};
    mfs_convstore cs = {.ctx = &ctx, .cache = fs->cache, .views = fs->views, .hash_model = cs_hash,
                        .failctx = cs_failctx, .errtext = cs_errtext, .log = cs_log,
                        .store_failed = cs_store_failed, .stored = cs_stored, .keep_outputs = 1};
    mfs_cache_hit hits[MFS_FMT_COUNT];
    mfs_cache_key mk;
    mfs_cache_stats before;
    mfs_cache_get_stats(fs->cache, &before);
    rc = mfs_convstore_file(&cs, relpath, tmp, fmi_model, formats, &rep, man, &mk, hits, err);
    /* the worker found another file at the model's path than the one this
     * run was made for (a save by rename between the two opens): the
     * caller runs it again for the file there now */
    *moved = !rep.ok && rep.deps.model_unopened;
    /* outputs taken from the job folder before the folder itself (an rm
     * -rf of the cache in progress): churn, though the folder is there */
    int lost = rep.outputs_lost;
    mfs_report_free(&rep);
    *churned = lost || (rc != 0 && churned_since(fs, jd, cst.revivals));
    run_lines_done(&ctx, !*churned);
    mfs_jobdirs_give(fs->jobdirs, jd, formats, rc >= 0 && !*churned);
    if (*churned) {
        for (int f = 0; f < MFS_FMT_COUNT; f++)
            mfs_cache_hit_release(&hits[f]);
        return -1;
    }
    if (rc < 0)
        return -1;
    mfs_pins_keep(&fs->coherence, relpath, &mk, man, hits, before.fresh_evictions); /* what the cache lost */
    return rc;
}

/* A run whose cache files vanished under it (the cache's contents removed
 * by hand, by `meshfs-cache clear` racing a store, by the job folder's
 * loss) failed for no fault of the model's: run again, up to three runs in
 * all, the reader waiting; a fresh job folder each time, made after the
 * cache directory is made again (jobdirs.h), so the worker's sandbox never
 * meets a missing output folder.  Said once a conversion (a warning, as the
 * cache directory's revival is). */
#define CHURN_RUNS 3
/* Likewise a run whose model was saved over (renamed onto) between the
 * host's open and the worker's (include/meshfs/job.h: the worker reads only
 * the file the host checked): run again for the new file, so a reader of a
 * model being saved gets a view, not EIO (issue 36). */
#define MOVED_RUNS 4

int mfs_fs_convert(mfs_fs *fs, const char *relpath, const char *fmi_model, unsigned formats,
                   mfs_cache_manifest *man, mfs_err *err)
{
    /* a slow conversion, on cue: a lease held while it runs
     * (test_remote_lease.py kills its holder) */
    mfs_test_delay("MESHFS_TEST_CONVERT_DELAY_MS");
    int moves = 0;
    for (int run = 1;; run++) {
        int churned = 0, moved = 0;
        mfs_err_clear(err);
        int rc = convert_once(fs, relpath, fmi_model, formats, man, &churned, &moved, err);
        if (moved && !churned && ++moves < MOVED_RUNS) {
            atomic_fetch_add(&fs->stats.conversions_redone, 1);
            mfs_cache_manifest_free(man);
            run--; /* not the cache's churn */
            continue;
        }
        if (!churned)
            return rc;
        atomic_fetch_add(&fs->stats.conversions_redone, 1);
        if (run == CHURN_RUNS) {
            mfs_errtext_log(&fs->names, "%s: the cache's files were removed during %d conversions in a row; "
                                "giving up for this access", relpath, CHURN_RUNS);
            return mfs_errf(err, "%s: the cache's files were removed during %d conversions in a row",
                            relpath, CHURN_RUNS);
        }
        if (run == 1)
            mfs_errtext_log(&fs->names, "%s: the cache's files were removed during the conversion; converting again",
                            relpath);
        mfs_cache_manifest_free(man);
    }
}

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

#include "coherence.h"
#include "fs.h"

/* Whether this mount's imports compute tangents: when it shows .gmf, the one
 * view that stores them, and then in every run (mfs_fs_convert).  Not only
 * the manifest's business: tangents keep apart vertices the import would
 * otherwise join (docs/import.md, "Tangents"), so every view's bytes depend
 * on it, and so every view's key. */
static int computes_tangents(const mfs_fs *fs)
{
    return (fs->cfg.formats & (1u << MFS_FMT_GMF)) != 0;
}

void mfs_fs_format_options(const mfs_fs *fs, int format, const char *fmi_model, char *buf, size_t n)
{
    mfs_options o = fs->cfg.opts;
    o.model_path = fmi_model;
    size_t len = mfs_options_key(&o, mfs_format_get((mfs_format)format)->options, buf, n);
    /* which importer read the model decides every view's bytes */
    if (o.importer != MFS_IMPORTER_AUTO && len < n)
        len += (size_t)snprintf(buf + len, n - len, "importer=%s;", mfs_importer_name(o.importer));
    if (computes_tangents(fs) && len < n)
        snprintf(buf + len, n - len, "tangents;");
}

/* Whether this mount's conversions decode textures: for the .tex view, or
 * for the package that carries it (MFS_FMT_LGEPKG_BIT, the bit above the
 * writers' mask).  A mount decides it once, for every conversion (see
 * mfs_fs_convert), because the files a conversion reads are the manifest's
 * inputs: a manifest must not list the texture after one run and not after
 * the next. */
static int reads_textures(const mfs_fs *fs)
{
    return (fs->cfg.formats & ((1u << MFS_FMT_TEX) | ~MFS_FMT_ALL)) != 0;
}

void mfs_fs_import_options(const mfs_fs *fs, char *buf, size_t n)
{
    size_t len = mfs_options_key(&fs->cfg.opts, MFS_OPT_SOURCE_FRAME, buf, n);
    if (reads_textures(fs) && len < n)
        len += (size_t)snprintf(buf + len, n - len, "textures;");
    if (fs->cfg.opts.importer != MFS_IMPORTER_AUTO && len < n)
        len += (size_t)snprintf(buf + len, n - len, "importer=%s;", mfs_importer_name(fs->cfg.opts.importer));
    if (computes_tangents(fs) && len < n)
        snprintf(buf + len, n - len, "tangents;");
}

static void job_slot_take(mfs_fs *fs)
{
    pthread_mutex_lock(&fs->job_lock);
    while (fs->jobs_running >= fs->cfg.convert_jobs)
        pthread_cond_wait(&fs->job_cond, &fs->job_lock);
    fs->jobs_running++;
    pthread_mutex_unlock(&fs->job_lock);
}

static void job_slot_give(mfs_fs *fs)
{
    pthread_mutex_lock(&fs->job_lock);
    fs->jobs_running--;
    pthread_cond_signal(&fs->job_cond);
    pthread_mutex_unlock(&fs->job_lock);
}

/* Streams one output file into a cache entry. */
static int file_output(mfs_fs *fs, const char *path, const mfs_cache_key *k, uint64_t size,
                       mfs_cache_hit *hit, mfs_err *err)
{
    /* named by its format: the path is the cache's business */
    const char *fmt = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mfs_errf(err, "worker output .%s: %s", fmt, strerror(errno));
    mfs_cache_writer *w;
    if (mfs_cache_writer_begin(fs->cache, k, &w, err) < 0) {
        close(fd);
        return -1;
    }
    static const size_t chunk = 1 << 20;
    char *buf = malloc(chunk);
    uint64_t total = 0;
    int rc = buf ? 0 : mfs_errf(err, "out of memory");
    while (rc == 0) {
        ssize_t r = read(fd, buf, chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = mfs_errf(err, "worker output .%s: %s", fmt, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        total += (uint64_t)r;
        rc = mfs_cache_writer_write(w, buf, (size_t)r, err);
    }
    free(buf);
    close(fd);
    if (rc == 0 && total != size)
        rc = mfs_errf(err, "worker output .%s: %llu bytes, report says %llu", fmt,
                      (unsigned long long)total, (unsigned long long)size);
    if (rc < 0) {
        mfs_cache_writer_abort(w);
        return -1;
    }
    /* the hit: served from a pin if the cache evicts it at once (pins.c) */
    return mfs_cache_writer_commit(w, hit, err);
}

static int file_results(mfs_fs *fs, const char *relpath, const char *tmp, const char *fmi_model,
                        unsigned formats, const mfs_report *rep, const mfs_dep *deps,
                        uint32_t ndeps, mfs_cache_manifest *man, mfs_cache_hit *hits,
                        int *machine, mfs_err *err)
{
    man->views = calloc(MFS_FMT_COUNT, sizeof *man->views);
    if (!man->views)
        return mfs_errf(err, "out of memory");
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        mfs_cache_view *v = &man->views[man->nviews];
        if (mfs_views_key(fs->views, deps, ndeps, f, fmi_model, &v->key, err) < 0)
            return -1;
        v->format = strdup(name);
        if (!v->format)
            return mfs_errf(err, "out of memory");
        man->nviews++;
        char out[4200];
        snprintf(out, sizeof out, "%s/%s", tmp, name);
        const char *reason = !rep->ok ? rep->error : !rep->fmt[f].ok ? rep->fmt[f].error : NULL;
        int transient = !rep->ok ? rep->transient : rep->fmt[f].transient;
        if (!reason && rep->fmt[f].note[0])
            mfs_fs_log(fs, "%s: %s", relpath, rep->fmt[f].note);
        if (!reason) {
            mfs_err ferr;
            mfs_err_clear(&ferr);
            if (file_output(fs, out, &v->key, rep->fmt[f].size, &hits[man->nviews - 1], &ferr) < 0) {
                /* e.g. ENOSPC: this access fails with the reason and no
                 * partial entry; nothing negative is stored, because the
                 * cache's trouble says nothing about the model and the next
                 * access should try again. */
                mfs_fs_log(fs, "cache: %s", ferr.msg);
                if (!*machine)
                    mfs_errf(err, "cache: %s", ferr.msg);
                *machine = 1;
            }
        } else if (transient) {
            /* the worker could not write its output (disk full...): the
             * model is not at fault, so this access fails and the next one
             * tries again */
            mfs_fs_log(fs, "%s: %s", relpath, reason);
            if (!*machine)
                mfs_errf(err, "%s", reason);
            *machine = 1;
        } else {
            /* kept as users will read it: the cache may be shared by
             * mounts of other folders */
            char shown[MFS_ERR_MAX];
            mfs_fs_errtext(fs, reason[0] ? reason : "conversion failed", shown, sizeof shown);
            /* with the limits it ran under and its inputs' mtime (failure.c) */
            mfs_cache_failctx ctx;
            mfs_failure_ctx(fs, deps, ndeps, &ctx);
            if (mfs_cache_store_failure(fs->cache, &v->key, shown, &ctx, err) < 0) {
                mfs_fs_log(fs, "cache: %s", err->msg);
                *machine = 1;
            }
        }
        unlink(out);
    }
    return 0;
}

static int copy_deps(mfs_cache_manifest *man, const mfs_dep *d, uint32_t n)
{
    man->deps = calloc(n ? n : 1, sizeof *man->deps);
    if (!man->deps)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        man->deps[i] = d[i];
        man->deps[i].path = strdup(d[i].path);
        if (!man->deps[i].path)
            return -1;
        man->ndeps++;
    }
    return 0;
}

int mfs_fs_convert(mfs_fs *fs, const char *relpath, const char *fmi_model, unsigned formats,
                   mfs_cache_manifest *man, mfs_err *err)
{
    memset(man, 0, sizeof *man);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/job-XXXXXX", fs->tmpdir);
    int made = mkdtemp(tmp) != NULL;
    if (!made && errno == ENOENT && mfs_cache_revive(fs->cache, NULL) == 1) {
        /* the cache directory (or all in it) was removed under the mount */
        mfs_fs_log(fs, "cache directory was removed while mounted: created it again");
        snprintf(tmp, sizeof tmp, "%s/job-XXXXXX", fs->tmpdir);
        made = mkdtemp(tmp) != NULL;
    }
    if (!made)
        return mfs_errf(err, "cannot make a worker directory in the cache: %s", strerror(errno));
    /* With textures on, every run makes .tex too (cheap next to the import),
     * so every run reads the same files: see reads_textures. */
    if (reads_textures(fs))
        formats |= 1u << MFS_FMT_TEX;
    /* Likewise .gmf, so every run computes tangents (job.c), and a run for
     * one missing view cuts it from the same import as the others. */
    if (computes_tangents(fs))
        formats |= 1u << MFS_FMT_GMF;
    mfs_job job = {.root = fs->cfg.src, .model = relpath, .formats = formats,
                   .opts = fs->cfg.opts, .outdir = tmp, .limits = fs->cfg.limits};
    job.opts.model_path = fmi_model;
    mfs_report rep;
    job_slot_take(fs);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint_least64_t running = atomic_fetch_add(&fs->stats.conversions_running, 1) + 1;
    uint_least64_t peak = atomic_load(&fs->stats.conversions_peak);
    while (running > peak && !atomic_compare_exchange_weak(&fs->stats.conversions_peak, &peak, running))
        ;
    int rc = mfs_spawner_convert(fs->spawner, &job, &rep, err);
    atomic_fetch_sub(&fs->stats.conversions_running, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    job_slot_give(fs);
    atomic_fetch_add(&fs->stats.conversions, 1);
    if (rc < 0) {
        rmdir(tmp);
        return -1;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!rep.ok) {
        atomic_fetch_add(&fs->stats.conversion_failures, 1);
        mfs_fs_log(fs, "%s: conversion failed: %s", relpath, rep.error);
    } else {
        mfs_fs_log(fs, "%s: converted in %.2f s", relpath, secs);
    }
    /* The worker could not open the model's own path (before reading
     * anything, or on one of assimp's later opens of it): it was renamed or
     * removed, or a folder on it was swapped for a link, since the daemon
     * hashed it.  Nothing about the model's bytes, so not remembered
     * against them: the next access tries again.  (A worker that died
     * never names the model.) */
    if (!rep.ok && rep.deps.model_unopened)
        rep.transient = 1;
    /* Inputs for the keys: what the worker read; if it died before saying,
     * the model file alone (hashed here), so a crash is keyed to its bytes. */
    mfs_dep self = {0};
    const mfs_dep *deps = rep.deps.v;
    uint32_t ndeps = rep.deps.n;
    if (ndeps && strcmp(deps[0].path, relpath) != 0)
        ndeps = 0; /* the model must come first: not trusting an odd report */
    if (ndeps == 0) {
        struct stat st;
        self.path = (char *)relpath;
        if (mfs_beneath_hash(fs, relpath, &st, self.hash, err) < 0) {
            mfs_report_free(&rep);
            rmdir(tmp);
            return -1;
        }
        self.size = (uint64_t)st.st_size;
        deps = &self;
        ndeps = 1;
    }
    mfs_cache_hit hits[MFS_FMT_COUNT];
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        hits[f] = (mfs_cache_hit){.fd = -1};
    int machine = 0; /* a view failed for the machine's sake: err says the first */
    rc = file_results(fs, relpath, tmp, fmi_model, formats, &rep, deps, ndeps, man, hits,
                      &machine, err);
    if (rc == 0 && copy_deps(man, deps, ndeps) < 0)
        rc = mfs_errf(err, "out of memory");
    if (rc == 0) {
        mfs_cache_key mk;
        if (mfs_views_manifest_key(fs->views, relpath, deps[0].size, deps[0].hash, &mk, err) < 0 ||
            mfs_cache_manifest_store(fs->cache, &mk, man, err) < 0)
            machine = 1;
    }
    mfs_pins_keep(fs, relpath, man, hits); /* what the cache could not hold */
    mfs_report_free(&rep);
    rmdir(tmp);
    return rc < 0 ? -1 : machine;
}

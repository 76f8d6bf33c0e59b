/* Filing a worker run's outputs in the cache (include/meshfs/convstore.h):
 * lifted out of the mount's converter so meshfs-convert files its runs the
 * same way, under the same keys. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/convstore.h"

static void logf_(const mfs_convstore *h, const char *fmt, const char *a, const char *b)
{
    if (!h->log)
        return;
    char line[MFS_ERR_MAX + 4200];
    snprintf(line, sizeof line, fmt, a, b);
    h->log(h->ctx, line);
}

int mfs_convstore_output(mfs_cache *c, const char *path, const mfs_cache_key *k, uint64_t size,
                         mfs_cache_hit *hit, mfs_err *err)
{
    /* named by its format: the path is the cache's business */
    const char *fmt = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mfs_errf(err, "worker output .%s: %s", fmt, strerror(errno));
    mfs_cache_writer *w;
    if (mfs_cache_writer_begin(c, k, &w, err) < 0) {
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
    return mfs_cache_writer_commit(w, hit, err);
}

static int file_results(const mfs_convstore *h, const char *relpath, const char *tmp,
                        const char *fmi_model, unsigned formats, const mfs_report *rep,
                        const mfs_dep *deps, uint32_t ndeps, mfs_cache_manifest *man,
                        mfs_cache_hit *hits, int *machine, mfs_err *err)
{
    man->views = calloc(MFS_FMT_COUNT, sizeof *man->views);
    if (!man->views)
        return mfs_errf(err, "out of memory");
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        mfs_cache_view *v = &man->views[man->nviews];
        if (mfs_views_key(h->views, deps, ndeps, f, fmi_model, &v->key, err) < 0)
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
            logf_(h, "%s: %s", relpath, rep->fmt[f].note);
        if (!reason) {
            mfs_err ferr;
            mfs_err_clear(&ferr);
            if (mfs_convstore_output(h->cache, out, &v->key, rep->fmt[f].size,
                                     &hits[man->nviews - 1], &ferr) < 0) {
                /* e.g. ENOSPC: this access fails with the reason and no
                 * partial entry; nothing negative is stored, because the
                 * cache's trouble says nothing about the model and the next
                 * access should try again. */
                logf_(h, "cache: %s%s", ferr.msg, "");
                if (!*machine)
                    mfs_errf(err, "cache: %s", ferr.msg);
                *machine = 1;
            }
        } else if (transient) {
            /* the worker could not write its output (disk full...): the
             * model is not at fault, so this access fails and the next one
             * tries again */
            logf_(h, "%s: %s", relpath, reason);
            if (!*machine)
                mfs_errf(err, "%s", reason);
            *machine = 1;
        } else {
            /* kept as users will read it: the cache may be shared by
             * mounts of other folders */
            char shown[MFS_ERR_MAX];
            const char *text = reason[0] ? reason : "conversion failed";
            if (h->errtext)
                h->errtext(h->ctx, text, shown, sizeof shown);
            else
                snprintf(shown, sizeof shown, "%s", text);
            /* with the limits it ran under and its inputs' mtime */
            mfs_cache_failctx ctx;
            memset(&ctx, 0, sizeof ctx);
            if (h->failctx)
                h->failctx(h->ctx, deps, ndeps, &ctx);
            if (mfs_cache_store_failure(h->cache, &v->key, shown, &ctx, err) < 0) {
                logf_(h, "cache: %s%s", err->msg, "");
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

int mfs_convstore_file(const mfs_convstore *h, const char *relpath, const char *tmp,
                       const char *fmi_model, unsigned formats, mfs_report *rep,
                       mfs_cache_manifest *man, mfs_cache_hit hits[MFS_FMT_COUNT], mfs_err *err)
{
    memset(man, 0, sizeof *man);
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        hits[f] = (mfs_cache_hit){.fd = -1};
    /* The worker could not open the model's own path (before reading
     * anything, or on one of assimp's later opens of it): it was renamed or
     * removed, or a folder on it was swapped for a link, since the host
     * hashed it.  Nothing about the model's bytes, so not remembered
     * against them: the next access tries again.  (A worker that died
     * never names the model.) */
    if (!rep->ok && rep->deps.model_unopened)
        rep->transient = 1;
    /* Inputs for the keys: what the worker read; if it died before saying,
     * the model file alone (hashed here), so a crash is keyed to its bytes. */
    mfs_dep self = {0};
    const mfs_dep *deps = rep->deps.v;
    uint32_t ndeps = rep->deps.n;
    if (ndeps && strcmp(deps[0].path, relpath) != 0)
        ndeps = 0; /* the model must come first: not trusting an odd report */
    if (ndeps == 0) {
        struct stat st;
        self.path = (char *)relpath;
        if (h->hash_model(h->ctx, relpath, &st, self.hash, err) < 0)
            return -1;
        self.size = (uint64_t)st.st_size;
        deps = &self;
        ndeps = 1;
    }
    int machine = 0; /* a view failed for the machine's sake: err says the first */
    int rc = file_results(h, relpath, tmp, fmi_model, formats, rep, deps, ndeps, man, hits,
                          &machine, err);
    if (rc == 0 && copy_deps(man, deps, ndeps) < 0)
        rc = mfs_errf(err, "out of memory");
    if (rc < 0)
        for (int f = 0; f < MFS_FMT_COUNT; f++)
            mfs_cache_hit_release(&hits[f]);
    if (rc == 0) {
        mfs_cache_key mk;
        if (mfs_views_manifest_key(h->views, relpath, deps[0].size, deps[0].hash, &mk, err) < 0 ||
            mfs_cache_manifest_store(h->cache, &mk, man, err) < 0)
            machine = 1;
    }
    return rc < 0 ? -1 : machine;
}

/* Is limit `now` larger than `then`?  0 means no limit at all. */
static int larger(double now, double then)
{
    if (then == 0)
        return 0;
    return now == 0 || now > then;
}

int mfs_convstore_failure_stands(const mfs_limits *l, const mfs_cache_failctx *f,
                                 struct timespec newest)
{
    if (larger(l->timeout_s, f->timeout_s) || larger((double)l->memory, (double)f->memory) ||
        larger((double)l->cpu_s, (double)f->cpu_s) || larger((double)l->output, (double)f->output))
        return 0;
    int64_t t = (int64_t)newest.tv_sec * 1000000000 + newest.tv_nsec;
    return f->inputs_mtime_ns == 0 || f->inputs_mtime_ns == t;
}

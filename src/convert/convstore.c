/* Filing a worker run's outputs in the cache (include/meshfs/convert.h):
 * lifted out of the mount's converter so meshfs-convert files its runs the
 * same way, under the same keys. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/convert.h"
#include "meshfs/util.h"

static void logf_(const mfs_convstore *h, const char *fmt, const char *a, const char *b)
{
    if (!h->log)
        return;
    char line[MFS_ERR_MAX + 4200];
    snprintf(line, sizeof line, fmt, a, b);
    h->log(h->ctx, line);
}

/* Reads the worker's output at path to its end, each piece to take; it
 * must be `size` bytes (the report's word).  0, or -1 with err. */
typedef int (*take_fn)(void *ctx, const void *p, size_t n, mfs_err *err);

static int pump(const char *path, uint64_t size, take_fn take, void *ctx, mfs_err *err)
{
    /* named by its format: the path is the cache's business */
    const char *fmt = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) /* ENOENT: removed since the run ended (file_results) */
        return mfs_err_sys(err, errno, "worker output .%s: %s", fmt, strerror(errno));
    static const size_t chunk = 1 << 20;
    size_t bufn = size < chunk ? (size_t)size + 1 : chunk; /* one more: a longer file shows */
    char *buf = malloc(bufn);
    uint64_t total = 0;
    int rc = buf ? 0 : mfs_errf(err, "out of memory");
    while (rc == 0) {
        ssize_t r = read(fd, buf, bufn);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = mfs_errf(err, "worker output .%s: %s", fmt, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        total += (uint64_t)r;
        rc = take(ctx, buf, (size_t)r, err);
    }
    free(buf);
    close(fd);
    if (rc == 0 && total != size)
        rc = mfs_errf(err, "worker output .%s: %llu bytes, report says %llu", fmt,
                      (unsigned long long)total, (unsigned long long)size);
    return rc < 0 ? -1 : 0;
}

static int take_into_writer(void *ctx, const void *p, size_t n, mfs_err *err)
{
    return mfs_cache_writer_write(ctx, p, n, err);
}

int mfs_convstore_output(mfs_cache *c, const char *path, const mfs_cache_key *k, uint64_t size,
                         mfs_cache_hit *hit, mfs_err *err)
{
    mfs_cache_writer *w;
    if (mfs_cache_writer_begin(c, k, &w, err) < 0)
        return -1;
    if (pump(path, size, take_into_writer, w, err) < 0) {
        mfs_cache_writer_abort(w);
        return -1;
    }
    return mfs_cache_writer_commit(w, hit, err);
}

typedef struct membuf {
    uint8_t *p;
    size_t cap, n;
} membuf;

static int take_into_memory(void *ctx, const void *p, size_t n, mfs_err *err)
{
    (void)err;
    membuf *m = ctx;
    size_t room = m->cap - m->n; /* past it the length check says so */
    memcpy(m->p + m->n, p, n < room ? n : room);
    m->n += n < room ? n : room;
    return 0;
}

/* A small output read whole, to be embedded in the model entry: 0, or -1
 * with err (the bytes are the caller's, *out). */
static int read_small_output(const char *path, uint64_t size, uint8_t **out, mfs_err *err)
{
    membuf m = {malloc(size ? (size_t)size : 1), (size_t)size, 0};
    if (!m.p)
        return mfs_errf(err, "out of memory");
    if (pump(path, size, take_into_memory, &m, err) < 0) {
        free(m.p);
        return -1;
    }
    *out = m.p;
    return 0;
}

/* One view's output filed: embedded in the model entry when small (its
 * bytes kept in v until the entry is stored), else its own entry. */
static int file_output(const mfs_convstore *h, const char *out, mfs_cache_view *v, uint64_t size,
                       mfs_cache_hit *hit, mfs_err *err)
{
    if (size <= MFS_CACHE_EMBED_MAX) {
        uint8_t *buf = NULL;
        if (read_small_output(out, size, &buf, err) < 0)
            return -1;
        v->bytes = buf;
        v->length = size;
        return 0;
    }
    if (mfs_convstore_output(h->cache, out, &v->key, size, hit, err) < 0)
        return -1;
    v->length = size; /* the model entry records it: a listing need not open it */
    v->sized = 1;
    return 0;
}

/* An output filed (or not): removed, or emptied for the next run of a
 * job directory the host keeps (keep_outputs), which then writes into the
 * same inode: no inode allocated and none freed a view.  On ext4 without a
 * journal each allocation scans the inodes freed in the last minute, and a
 * cold fill through the mount spent a third of its time there (eight
 * outputs a model; docs/worker.md). */
static void done_with(const mfs_convstore *h, const char *out)
{
    int fd = h->keep_outputs ? open(out, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
    if (fd < 0 || ftruncate(fd, 0) < 0)
        unlink(out);
    if (fd >= 0)
        close(fd);
}

/* A store the cache's file system refused (util.h, "storerr"): the host
 * says it once for the run (store_failed), not here once per view, and not
 * as the model's.  1 if msg is one (*store_errno keeps the first), else 0. */
static int cache_refused(const char *msg, int *store_errno, int *machine)
{
    int e = mfs_storerr_of(msg);
    if (!e)
        return 0;
    if (!*store_errno)
        *store_errno = e;
    *machine = 1;
    return 1;
}

static int file_results(const mfs_convstore *h, const char *relpath, const char *tmp,
                        const char *fmi_model, unsigned formats, const mfs_report *rep,
                        const mfs_dep *deps, uint32_t ndeps, mfs_cache_manifest *man,
                        mfs_cache_hit *hits, int *machine, int *store_errno, int *lost,
                        mfs_err *err)
{
    man->views = calloc(MFS_FMT_COUNT + 1, sizeof *man->views); /* and the host's extra */
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
            int frc = file_output(h, out, v, rep->fmt[f].size, &hits[man->nviews - 1], &ferr);
            /* ENOENT: the output was there when the run ended (the spawner
             * checks each), so it went since with the cache's files (an
             * rm -rf of the cache in progress): churn, as the host takes
             * outputs_lost */
            if (frc < 0 && mfs_err_errno(&ferr) == ENOENT)
                *lost = 1;
            if (frc < 0 && !cache_refused(ferr.msg, store_errno, machine)) {
                /* this access fails with the reason and no partial entry;
                 * nothing negative is stored, because the cache's trouble
                 * says nothing about the model and the next access should
                 * try again. */
                logf_(h, "cache: %s%s", ferr.msg, "");
                if (!*machine)
                    mfs_errf(err, "cache: %s", ferr.msg);
                *machine = 1;
            }
        } else if (transient && rep->ok && cache_refused(reason, store_errno, machine)) {
            /* the worker's output is a file in the cache's tmp/: its file
             * system is full (or read-only, failing); the cache's fault */
        } else if (transient) {
            /* the worker could not write its output, or was killed from
             * outside: the model is not at fault, so this access fails and
             * the next one tries again */
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
            mfs_err nerr;
            mfs_err_clear(&nerr);
            if (mfs_cache_store_failure(h->cache, &v->key, shown, &ctx, &nerr) < 0 &&
                !cache_refused(nerr.msg, store_errno, machine)) {
                logf_(h, "cache: %s%s", nerr.msg, "");
                if (!*machine)
                    mfs_errf(err, "cache: %s", nerr.msg);
                *machine = 1;
            }
        }
        done_with(h, out);
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

/* The embedded views' bytes are the caller's until the entry is stored. */
static void free_bytes(mfs_cache_manifest *man)
{
    for (uint32_t i = 0; i < man->nviews; i++) {
        free((void *)man->views[i].bytes);
        man->views[i].bytes = NULL;
    }
}

/* Each embedded view's descriptor: the model entry's, at the view's offset. */
static void embedded_hits(const mfs_cache_manifest *man, const mfs_cache_hit *entry,
                          mfs_cache_hit *hits)
{
    for (uint32_t i = 0; i < man->nviews && i < MFS_FMT_COUNT; i++) {
        const mfs_cache_view *v = &man->views[i];
        if (!v->embedded || entry->fd < 0)
            continue;
        int fd = fcntl(entry->fd, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0)
            hits[i] = (mfs_cache_hit){.fd = fd, .offset = v->offset, .length = v->length};
    }
}

/* The run's report turned into the model's failure: every format fails
 * with one reason, naming the model relative to SRC. */
static void misread(mfs_report *rep, const char *relpath)
{
    rep->ok = 0;
    rep->transient = 0;
    rep->deps.model_unopened = 0;
    snprintf(rep->error, sizeof rep->error,
             "the worker read another file than the model '%s': refused, nothing of it is used",
             relpath);
}

int mfs_convstore_file(const mfs_convstore *h, const char *relpath, const char *tmp,
                       const char *fmi_model, unsigned formats, mfs_report *rep,
                       mfs_cache_manifest *man, mfs_cache_key *mk_out,
                       mfs_cache_hit hits[MFS_FMT_COUNT], mfs_err *err)
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
    if (!rep->ok && (rep->deps.model_unopened || rep->deps.unkeyed))
        rep->transient = 1;
    /* Inputs for the keys: what the worker read; if it died before saying,
     * the model file alone (hashed here), so a crash is keyed to its bytes. */
    mfs_dep self = {0};
    const mfs_dep *deps = rep->deps.v;
    uint32_t ndeps = rep->deps.n;
    if (ndeps && strcmp(deps[0].path, relpath) != 0) {
        /* What was read is not what was asked for (a name the importer
         * took apart, or a worker not to be trusted): its bytes and who
         * may read them are another file's, so nothing of the run is used
         * and the views fail (docs/security.md, S2).  Keyed to the model's
         * bytes and remembered like any failure of the model: its name
         * gives the same run every time. */
        misread(rep, relpath);
        ndeps = 0;
    }
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
    int store_errno = 0; /* ... the cache's file system refused a store (util.h, "storerr") */
    int lost = 0; /* an output removed after the run: rep->outputs_lost */
    int rc = file_results(h, relpath, tmp, fmi_model, formats, rep, deps, ndeps, man, hits,
                          &machine, &store_errno, &lost, err);
    if (lost)
        rep->outputs_lost = 1;
    if (rc == 0 && copy_deps(man, deps, ndeps) < 0)
        rc = mfs_errf(err, "out of memory");
    if (rc < 0)
        for (int f = 0; f < MFS_FMT_COUNT; f++)
            mfs_cache_hit_release(&hits[f]);
    mfs_cache_key mk;
    if (rc == 0 && mfs_views_manifest_key(h->views, relpath, deps[0].size, deps[0].hash, &mk,
                                          err) < 0)
        rc = -1;
    /* the host's extra blob, as one more view of the entry, for the
     * store only: embedded when small, else an entry file of its own */
    uint32_t nviews = man->nviews;
    uint8_t *xb = NULL;
    size_t xlen = 0;
    mfs_cache_key xk;
    if (rc == 0 && h->extra && h->extra(h->ctx, deps, ndeps, rep, &xk, &xb, &xlen) == 0) {
        mfs_cache_view *xv = &man->views[man->nviews];
        if (xlen <= MFS_CACHE_EMBED_MAX && man->nviews <= MFS_FMT_COUNT &&
            (xv->format = strdup("report")) != NULL) {
            *xv = (mfs_cache_view){.format = xv->format, .key = xk, .bytes = xb, .length = xlen};
            man->nviews++;
        } else {
            mfs_err xerr;
            mfs_cache_store(h->cache, &xk, xb, xlen, NULL, &xerr); /* a convenience: may fail */
        }
    }
    if (rc == 0) {
        if (mk_out)
            *mk_out = mk;
        mfs_cache_hit entry = {.fd = -1};
        mfs_err serr;
        mfs_err_clear(&serr);
        man->convert_ms = rep->wall_ms; /* the slow-server rule's yardstick */
        int stored = mfs_cache_manifest_store(h->cache, &mk, man, &entry, &serr) == 0;
        if (!stored) {
            /* the small views were in it: they fail with it, as a view
             * whose own entry could not be written does */
            if (!cache_refused(serr.msg, &store_errno, &machine)) {
                logf_(h, "cache: %s%s", serr.msg, "");
                if (!machine)
                    mfs_errf(err, "cache: %s", serr.msg);
            }
            machine = 1;
            for (uint32_t i = 0; i < man->nviews; i++)
                man->views[i].embedded = 0;
        }
        for (uint32_t i = nviews; i < man->nviews; i++) { /* the extra: not the caller's */
            free(man->views[i].format);
            man->views[i] = (mfs_cache_view){0};
        }
        man->nviews = nviews;
        embedded_hits(man, &entry, hits);
        mfs_cache_hit_release(&entry);
        if (stored && !store_errno && h->stored)
            h->stored(h->ctx);
    }
    if (rc == 0 && store_errno && h->store_failed) {
        /* the reason users read names the cache's condition, not a view */
        mfs_storerr_reason(store_errno, err->msg, sizeof err->msg);
        h->store_failed(h->ctx, relpath, store_errno);
    } else if (rc == 0 && store_errno) {
        mfs_errf(err, "cache: storing views: %s", strerror(store_errno));
    }
    free(xb);
    free_bytes(man);
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

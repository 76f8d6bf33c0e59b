/* The remote tier (include/meshfs/remote.h; docs/cache.md, "Remote tier"):
 * setup and reads; the upload half is upload.c.  The server is the
 * backend's (r->be; the HTTP one is http.c): this file decides what a
 * read's answer means for the tier (a hit, a miss, a back-off).
 *
 * Verification is the store's: the object lands in the cache's tmp/
 * (mfs_cache_download_begin), and mfs_cache_download_adopt judges it
 * exactly as a local entry before it is renamed in.  While it grows there
 * it counts against the cache's cap (mfs_cache_reserve), and it is cut at
 * the object's limit, so no server's answer fills the disk. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshfs/util.h"
#include "tier.h"

/* Reservations grow by at least this much for a body of unknown length:
 * one lock and check per MiB, not per 16 KiB piece. */
#define RESERVE_STEP (1u << 20)

/* ---- reads ---- */

/* Why a download was stopped by us rather than by the server. */
enum { RX_OK, RX_OVER_LIMIT, RX_NO_ROOM, RX_DISK };

/* A download into the cache's tmp/: the backend's sink. */
typedef struct download {
    mfs_cache *c;
    int fd;
    uint64_t limit;    /* the largest object accepted, bytes */
    uint64_t n;        /* body bytes written to fd */
    uint64_t declared; /* the answer's declared length; 0 none */
    uint64_t reserved; /* held against the cache's cap */
    int refused;       /* RX_* */
    int err;           /* errno of a failed write (RX_DISK) */
} download;

/* x holds at least total bytes of the cap, or refused says why not. */
static int hold(download *x, uint64_t total)
{
    if (total > x->limit) {
        x->refused = RX_OVER_LIMIT;
        return -1;
    }
    if (total <= x->reserved)
        return 0;
    uint64_t want = total - x->reserved;
    if (!x->declared && want < RESERVE_STEP)
        want = RESERVE_STEP;
    if (want > x->limit - x->reserved)
        want = x->limit - x->reserved;
    if (mfs_cache_reserve(x->c, want) < 0) {
        x->refused = RX_NO_ROOM;
        return -1;
    }
    x->reserved += want;
    return 0;
}

static int dl_declared(void *ctx, uint64_t len)
{
    download *x = ctx;
    x->declared = len;
    return hold(x, len);
}

static int dl_write(void *ctx, const void *p, size_t n)
{
    download *x = ctx;
    if (hold(x, x->n + n) < 0)
        return -1;
    int e = mfs_pwrite_full(x->fd, p, n, x->n) < 0 ? errno : 0;
    if (e) {
        x->refused = RX_DISK;
        x->err = e;
        return -1;
    }
    x->n += n;
    return 0;
}

/* Gives back x's reservation; kept: bytes of it now an entry. */
static void dl_release(download *x, uint64_t kept)
{
    if (x->reserved || kept)
        mfs_cache_unreserve(x->c, x->reserved, kept);
    x->reserved = 0;
}

/* The largest object a fetch accepts, and what sets it (for the log): a
 * manifest is read whole (MFS_CACHE_SMALL_MAX), a view is at most what a
 * conversion may write (the output cap), and nothing larger than the
 * cache's cap could ever be kept. */
static uint64_t object_limit(const mfs_remote *r, int manifest, const char **what)
{
    uint64_t lim = manifest ? MFS_CACHE_SMALL_MAX : r->view_max;
    *what = manifest ? "the limit of a manifest" : "the output cap of a view";
    if (lim)
        lim += MFS_CACHE_REC_LEN;
    uint64_t cap = mfs_cache_max_size(r->c);
    if (!lim || cap < lim) {
        lim = cap;
        *what = "the cache's cap";
    }
    return lim;
}

/* A download we stopped (too large, no room): a miss, said once a reason.
 * Too large is the server's fault and counted as an error, but no back-off:
 * it is that object, like a bad one, and was cut at its limit. */
static void refused(mfs_remote *r, const download *x, int manifest)
{
    const char *what;
    uint64_t lim = object_limit(r, manifest, &what);
    char d[256];
    STAT_ADD(r, misses, 1);
    if (x->refused == RX_OVER_LIMIT) {
        STAT_ADD(r, errors, 1);
        if (x->declared)
            snprintf(d, sizeof d, "an answer of %" PRIu64 " bytes, over %s (%" PRIu64
                     " bytes); refused before reading it", x->declared, what, lim);
        else
            snprintf(d, sizeof d, "an answer longer than %s (%" PRIu64 " bytes); cut there", what,
                     lim);
        mfs_rc_once(r, &r->logged_huge, "GET", d, "a miss: converted locally (logged once)");
    } else if (x->refused == RX_NO_ROOM) {
        uint64_t cap = mfs_cache_max_size(r->c);
        snprintf(d, sizeof d, "no room for an answer %s%" PRIu64 " bytes under the cache's cap (%"
                 PRIu64 " bytes) beside its entries and other downloads; %s",
                 x->declared ? "of " : "past ", x->declared ? x->declared : x->n, cap,
                 x->declared ? "refused before reading it" : "cut there");
        mfs_rc_once(r, &r->logged_room, "GET", d, "a miss: converted locally (logged once)");
    }
}

/* The server answered a read: uploads paused because it did not answer at
 * all (down, unreachable) go on now, and the owed list is sent. */
static void server_back(mfs_remote *r)
{
    pthread_mutex_lock(&r->mu);
    if (r->up.no_answer && mono_s() < r->up.until)
        r->up.until = 0;
    if (r->owed_n && !r->owed_due && !r->read_only) {
        r->owed_due = 1;
        mfs_rc_start_locked(r);
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

int mfs_remote_fetch(mfs_remote *r, const mfs_cache_key *k, int manifest)
{
    if (!r || !available(r, &r->rd))
        return 0;
    char name[128];
    mfs_rc_object_name(k, manifest, name, sizeof name);
    mfs_err err;
    mfs_err_clear(&err);
    char tmp[MFS_CACHE_PATH_MAX];
    int fd = mfs_cache_download_begin(r->c, tmp, &err);
    if (fd < 0)
        return 0; /* the local cache's trouble: the caller converts */
    const char *what;
    download x = {.c = r->c, .fd = fd, .limit = object_limit(r, manifest, &what)};
    mfs_remote_sink sink = {dl_declared, dl_write, &x};
    mfs_remote_result res;
    int got = 0;
    uint64_t kept = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r->be.get(r->be.ctx, name, &sink, &res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (res.status == MFS_RB_OK) { /* the pace of real transfers */
        int64_t a = (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec;
        int64_t b = (int64_t)t1.tv_sec * 1000000000 + t1.tv_nsec;
        pthread_mutex_lock(&r->mu);
        mfs_pace_note(&r->pace, x.n, b - a, b);
        pthread_mutex_unlock(&r->mu);
    }
    switch (res.status) {
    case MFS_RB_OK: {
        mfs_rc_succeeded(r, &r->rd);
        server_back(r);
        STAT_ADD(r, bytes_down, x.n);
        const char *why = NULL;
        int ad = mfs_cache_download_adopt(r->c, fd, tmp, k, manifest ? 'm' : 'e', &kept, &why, &err);
        if (ad == 0) {
            STAT_ADD(r, misses, 1);
            pthread_mutex_lock(&r->mu);
            int first = !r->logged_bad;
            r->logged_bad = 1;
            pthread_mutex_unlock(&r->mu);
            if (first)
                mfs_rc_log(r, "remote cache: %s/%s: bad object (%s); not served", r->name, name, why);
            got = 2;
        } else if (ad == 1) {
            STAT_ADD(r, hits, 1);
            got = 1;
        }
        break;
    }
    case MFS_RB_STOPPED:
        if (x.refused == RX_OVER_LIMIT || x.refused == RX_NO_ROOM)
            refused(r, &x, manifest);
        else
            STAT_ADD(r, misses, 1); /* the local disk's trouble, not the server's */
        break;
    case MFS_RB_ABSENT:
        mfs_rc_succeeded(r, &r->rd);
        server_back(r);
        STAT_ADD(r, misses, 1);
        break;
    case MFS_RB_REFUSED:
        /* a redirect, a refused token, another 4xx: a miss, said once */
        mfs_rc_succeeded(r, &r->rd);
        STAT_ADD(r, misses, 1);
        mfs_rc_once(r, &r->logged_get, "GET", res.detail, "a miss: converted locally (logged once)");
        break;
    default:
        /* late (whatever it would have said: a server this slow costs
         * every read), down, or failing */
        STAT_ADD(r, misses, 1);
        mfs_rc_failed(r, &r->rd, "GET", res.detail, res.retry_after_s, res.no_answer);
        break;
    }
    mfs_cache_download_end(r->c, fd, tmp);
    dl_release(&x, kept); /* after the unlink: the cap never undercounts */
    return got;
}

void mfs_remote_get_stats(mfs_remote *r, mfs_remote_stats *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->st;
    out->queue = r->qlen + (unsigned)r->busy; /* waiting, plus the one in flight */
    out->owed = r->owed_n;
    pthread_mutex_unlock(&r->mu);
}

int mfs_remote_slower(mfs_remote *r, const char *what, uint64_t bytes, uint64_t convert_ms)
{
    if (!r || !bytes)
        return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double est;
    pthread_mutex_lock(&r->mu);
    mfs_pace_verdict v = mfs_pace_judge(&r->pace, bytes, convert_ms,
                                        (int64_t)now.tv_sec * 1000000000 + now.tv_nsec, &est);
    double rate = mfs_pace_rate(&r->pace);
    int *flag = v == MFS_PACE_CONVERT ? &r->logged_slow : &r->logged_slower;
    int first = v != MFS_PACE_FETCH && !*flag;
    if (first)
        *flag = 1;
    pthread_mutex_unlock(&r->mu);
    if (first)
        mfs_rc_log(r, "remote cache: %s: slower than converting: %s: %.1f MB of views at the measured "
             "%.2f MB/s take about %.1f s to fetch, its last conversion took %.2f s; %s",
             r->name, what, (double)bytes / 1e6, rate / 1e6, est, (double)convert_ms / 1000.0,
             v == MFS_PACE_CONVERT ? "converting such models instead while the server is this slow "
                                     "(remote_slow counts them; logged once)"
             : v == MFS_PACE_PROBE ? "fetched once more to measure the server again (logged once)"
                                   : "fetched: converting is not clearly faster (logged once)");
    if (v != MFS_PACE_CONVERT)
        return 0;
    STAT_ADD(r, slow, 1);
    return 1;
}

/* ---- setup ---- */

mfs_remote *mfs_remote_new(const mfs_remote_cfg *cfg, mfs_cache *cache, mfs_err *err)
{
    mfs_remote_backend be;
    if (mfs_remote_http_new(cfg, &be, err) < 0)
        return NULL;
    return mfs_remote_new_with(cfg, &be, cache, err);
}

mfs_remote *mfs_remote_new_with(const mfs_remote_cfg *cfg, const mfs_remote_backend *be,
                                mfs_cache *cache, mfs_err *err)
{
    mfs_remote *r = calloc(1, sizeof *r);
    char *url = strdup(cfg->url);
    if (!r || !url) {
        free(r);
        free(url);
        be->free(be->ctx);
        mfs_errf(err, "out of memory");
        return NULL;
    }
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        url[--n] = '\0';
    r->name = mfs_remote_public_name(url);
    free(url);
    if (!r->name) {
        free(r);
        be->free(be->ctx);
        mfs_errf(err, "out of memory");
        return NULL;
    }
    r->c = cache;
    r->be = *be;
    r->data_timeout_s = cfg->data_timeout_s ? cfg->data_timeout_s : MFS_REMOTE_DATA_TIMEOUT_S_DEFAULT;
    r->view_max = cfg->view_max;
    r->read_only = cfg->read_only;
    r->owed_max = cfg->owed_max ? cfg->owed_max : MFS_REMOTE_OWED_MAX_DEFAULT;
    r->no_owed = cfg->no_owed;
    if (!r->no_owed && mfs_owed_list(cache, NULL, 0, &r->owed_n) < 0)
        r->owed_n = 0; /* unreadable: found again by the next pass */
    r->owed_due = r->owed_n > 0; /* sent from the thread's start */
    r->rd = (backoff){.name = "reads", .other = "uploads"};
    r->up = (backoff){.name = "uploads", .other = "reads"};
    r->log = cfg->log;
    r->log_ctx = cfg->log_ctx;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    mfs_lease_cfg lc = {&r->be, r->name, r->data_timeout_s, cfg->convert_timeout_s, r->log,
                        r->log_ctx};
    r->lease = r->read_only ? NULL : mfs_lease_new(&lc); /* NULL: no leases */
    return r;
}

void mfs_remote_free(mfs_remote *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    int started = r->started == 1;
    pthread_mutex_unlock(&r->mu);
    if (started)
        pthread_join(r->thread, NULL);
    /* what the queue still holds is owed: the next mount, or a push,
     * sends it */
    size_t left = r->qlen, owed = 0;
    for (; r->qlen; r->qlen--, r->qhead = (r->qhead + 1) % MFS_REMOTE_QUEUE_CAP)
        owed += (size_t)mfs_rc_owe(r, &r->q[r->qhead]);
    if (left && !r->reported)
        mfs_rc_log(r, "remote cache: %s: %zu queued uploads not sent at exit%s", r->name, left,
             owed == left ? ": owed (the next mount or meshfs-cache push sends them)"
             : owed ? ": some owed, the rest dropped (said above)" : "");
    mfs_lease_free(r->lease);
    r->be.free(r->be.ctx);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->name);
    free(r);
}

/* ---- leases (remote.h, "leases"): asked for only while this session may
 * upload and neither direction backs off (a lease promises an upload) ---- */

mfs_lease_outcome mfs_remote_lease(mfs_remote *r, const mfs_cache_key *mk)
{
    if (!r || !r->lease)
        return MFS_LEASE_NONE;
    pthread_mutex_lock(&r->mu);
    int64_t now = mono_s();
    int ok = !r->read_only && now >= r->rd.until && now >= r->up.until;
    pthread_mutex_unlock(&r->mu);
    return ok ? mfs_lease_take(r->lease, mk) : MFS_LEASE_NONE;
}

void mfs_remote_lease_end(mfs_remote *r, const mfs_cache_key *mk, int after_upload)
{
    mfs_lease_end(r ? r->lease : NULL, mk, after_upload);
}

void mfs_remote_lease_get_stats(mfs_remote *r, mfs_remote_lease_stats *out)
{
    mfs_lease_get_stats(r ? r->lease : NULL, out);
}

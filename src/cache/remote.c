/* The remote tier (include/meshfs/remote.h; docs/cache.md, "Remote tier").
 *
 * Connections: one curl share handle holds the connection cache, DNS and
 * TLS sessions for every easy handle, so reads from any FUSE thread and the
 * upload thread reuse kept-alive connections.  An easy handle per request
 * keeps the threads independent (libcurl forbids sharing one easy handle).
 *
 * Verification is the store's: the object lands in tmp/ under a temporary
 * name, mfs_cache_entry_check judges it exactly as a local entry, and only
 * then is its record moved into the xattr (the local form the store writes;
 * kept as a trailer where xattrs are refused) and the file renamed in. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cache_int.h"
#include "meshfs/remote.h"
#include "remote_lease.h"
#include "remote_xfer.h"

#define BACKOFF_MIN_S 30
#define BACKOFF_MAX_S 300

/* One direction's back-off: reads (GET) and uploads (HEAD, PUT) fail
 * apart, so a server whose disk is full (every PUT a 500) still serves
 * the objects it holds. */
typedef struct backoff {
    const char *name; /* "reads", "uploads": for the log */
    const char *other;
    int64_t until; /* monotonic s */
    unsigned s;    /* the last back-off's length; 0 after a success */
} backoff;

typedef struct job {
    mfs_cache_key key;
    int manifest;
    int over; /* put even if the server has one (it was found bad) */
} job;

struct mfs_remote {
    mfs_cache *c;
    char *url;   /* without a trailing '/' */
    char *name;  /* url without user:password@: what log lines show */
    char *auth;  /* "Authorization: Bearer ..." or NULL */
    unsigned timeout_ms, data_timeout_s;
    uint64_t view_max; /* the largest view a conversion may write; 0: none */
    int read_only;
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];

    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    job q[MFS_REMOTE_QUEUE_CAP];
    size_t qhead, qlen;
    int stop, busy;
    unsigned long unsent; /* uploads given up (back-off, errors, refusals) */
    int reported;         /* the drain said how many */
    int started; /* the upload thread, made on first use: none exists before
                    the daemon detaches (fuse_daemonize forks) */
    pthread_t thread;
    backoff rd, up;
    mfs_lease *lease; /* remote_lease.c: NULL when read-only */
    int logged_bad, logged_repair, logged_ro, logged_down, logged_get, logged_big, logged_huge, logged_room;
    mfs_remote_stats st;
};

static int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static void rlog(mfs_remote *r, const char *fmt, ...)
{
    if (!r->log)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->log(r->log_ctx, buf);
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
    (void)h, (void)a;
    mfs_remote *r = u;
    pthread_mutex_lock(&r->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
    (void)h;
    mfs_remote *r = u;
    pthread_mutex_unlock(&r->share_mu[d]);
}

/* The session's counter and the cache's persisted one (the stats file,
 * meshfs-cache stats) */
#define STAT_ADD(r, f, v)                             \
    do {                                              \
        pthread_mutex_lock(&(r)->mu);                 \
        (r)->st.f += (v);                             \
        pthread_mutex_unlock(&(r)->mu);               \
        MFS_CACHE_STAT_ADD((r)->c, remote_##f, (v));  \
    } while (0)

/* Whether direction d may ask the server now (not backing off). */
static int available(mfs_remote *r, const backoff *d)
{
    pthread_mutex_lock(&r->mu);
    int ok = mono_s() >= d->until;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

/* A transport error, a late answer, a 5xx or a 429 in direction d: d skips
 * the server for a while, doubling, and at least at_least_s (the server's
 * Retry-After); the other direction goes on. */
static void failed(mfs_remote *r, backoff *d, const char *what, const char *detail,
                   unsigned at_least_s)
{
    MFS_CACHE_STAT_ADD(r->c, remote_errors, 1);
    pthread_mutex_lock(&r->mu);
    r->st.errors++;
    if (mono_s() < d->until) {
        /* a request begun before the back-off did: the same outage */
        pthread_mutex_unlock(&r->mu);
        return;
    }
    d->s = d->s ? d->s * 2 : BACKOFF_MIN_S;
    if (d->s < at_least_s)
        d->s = at_least_s;
    if (d->s > BACKOFF_MAX_S)
        d->s = BACKOFF_MAX_S;
    d->until = mono_s() + d->s;
    unsigned b = d->s;
    if (d == &r->rd)
        r->st.read_backoffs++;
    else
        r->st.upload_backoffs++;
    pthread_mutex_unlock(&r->mu);
    rlog(r, "remote cache: %s: %s: %s; %s paused for %u s (%s go on)", r->name, what, detail,
         d->name, b, d->other);
}

static void succeeded(mfs_remote *r, backoff *d)
{
    pthread_mutex_lock(&r->mu);
    d->s = 0;
    pthread_mutex_unlock(&r->mu);
}

/* The server is there but says "not now" (or failed): back off. */
static int overloaded(long code)
{
    return code == 408 || code == 429 || code >= 500;
}

/* The server's Retry-After in seconds (0: none), at most the longest
 * back-off. */
static unsigned retry_after(CURL *h)
{
    curl_off_t s = 0;
    if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &s) != CURLE_OK || s <= 0)
        return 0;
    return s > BACKOFF_MAX_S ? BACKOFF_MAX_S : (unsigned)s;
}

/* What an answer that is not a success means, for a log line. */
static void answer_text(mfs_remote *r, CURL *h, CURLcode cc, long code, char *out, size_t n)
{
    char *to = NULL, *loc = NULL;
    if (cc != CURLE_OK && cc != CURLE_HTTP_RETURNED_ERROR)
        snprintf(out, n, "%s", curl_easy_strerror(cc));
    else if (code >= 300 && code < 400) {
        if (curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &to) == CURLE_OK && to)
            loc = mfs_remote_public_name(to); /* a relative Location has our userinfo */
        snprintf(out, n, "HTTP %ld, a redirect to %s (not followed: give the final URL)", code,
                 loc ? loc : "nowhere");
        free(loc);
    } else if (code == 401 || code == 403)
        snprintf(out, n, "HTTP %ld, %s", code, r->auth ? "the token was refused" : "refused (no token)");
    else if (code == 405)
        snprintf(out, n, "HTTP 405, the method is not allowed there");
    else if (code == 413)
        snprintf(out, n, "HTTP 413, too large for the server");
    else if (code == 429)
        snprintf(out, n, "HTTP 429, too many requests");
    else
        snprintf(out, n, "HTTP %ld%s", code, code >= 500 ? ", server error" : "");
}

/* Logs once per session (*flag) that the server answered what with d. */
static void once(mfs_remote *r, int *flag, const char *what, const char *d, const char *then)
{
    pthread_mutex_lock(&r->mu);
    int first = !*flag;
    *flag = 1;
    pthread_mutex_unlock(&r->mu);
    if (first)
        rlog(r, "remote cache: %s: %s: %s; %s", r->name, what, d, then);
}

/* An upload answered with a redirect or a refusal: this server takes no
 * uploads from us (a reader's token, no PUT there, another URL), so the
 * session stops trying, logged once; reads go on. */
static void uploads_refused(mfs_remote *r, const char *what, const char *d)
{
    MFS_CACHE_STAT_ADD(r->c, remote_errors, 1);
    pthread_mutex_lock(&r->mu);
    r->read_only = 1;
    r->st.errors++;
    pthread_mutex_unlock(&r->mu);
    once(r, &r->logged_ro, what, d, "read-only for this session");
}

static void object_url(const mfs_remote *r, const mfs_cache_key *k, int manifest, char *out,
                       size_t n)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", k->b[i]);
    snprintf(out, n, "%s/v%d/%s/%.2s/%s", r->url, MFS_CACHE_VERSION,
             manifest ? "manifest" : "view", hex, hex + 2);
}

static CURL *easy(mfs_remote *r, const char *url, struct curl_slist **hdr)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SHARE, r->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)r->timeout_ms);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    *hdr = NULL;
    if (r->auth) {
        *hdr = curl_slist_append(NULL, r->auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdr);
    }
    return h;
}

/* ---- reads ---- */

/* The server answered (any status), rather than the transfer failing. */
static int answered(CURLcode cc)
{
    return cc == CURLE_OK || cc == CURLE_HTTP_RETURNED_ERROR;
}

/* Views, manifests and model entries (small views inside): never
 * failures, which are each machine's own. */
static int carried(int kind, int manifest)
{
    return manifest ? kind == MFS_KIND_MANIFEST || kind == MFS_KIND_MODEL : kind == MFS_KIND_VIEW;
}

/* The object in fd judged as a local entry would be; moves its record into
 * the xattr where the cache keeps records there.  NULL fine, else why not. */
static const char *verify(mfs_remote *r, int fd, const mfs_cache_key *k, int manifest)
{
    mfs_cache_entry_info info;
    const char *why = NULL;
    int ok = mfs_cache_entry_check(fd, k, manifest ? 'm' : 'e', &info, &why);
    if (ok != 1)
        return why ? why : "unreadable";
    if (info.form != MFS_CACHE_FORM_TRAILER)
        return "not in the trailer form";
    /* failures are each machine's own: never taken from elsewhere */
    if (!carried(info.kind, manifest))
        return "a kind the remote tier does not carry";
    if ((r->c->flags & MFS_CACHE_TRAILER_FORM) || atomic_load(&r->c->no_xattr))
        return NULL;
    uint8_t rec[MFS_CACHE_REC_LEN];
    if (mfs_cache_pread_full(fd, rec, sizeof rec, info.length) != (int64_t)sizeof rec)
        return "cannot read its record";
    if (fsetxattr(fd, MFS_CACHE_XATTR, rec, sizeof rec, 0) == 0) {
        if (ftruncate(fd, (off_t)info.length) < 0) {
            fremovexattr(fd, MFS_CACHE_XATTR);
            return "cannot truncate it";
        }
    }
    return NULL;
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
    pthread_mutex_lock(&r->c->mu);
    uint64_t cap = r->c->max_size;
    pthread_mutex_unlock(&r->c->mu);
    if (!lim || cap < lim) {
        lim = cap;
        *what = "the cache's cap";
    }
    return lim;
}

/* A download we stopped (too large, no room): a miss, said once a reason.
 * Too large is the server's fault and counted as an error, but no back-off:
 * it is that object, like a bad one, and was cut at its limit. */
static void refused(mfs_remote *r, const mfs_rx *x, int manifest)
{
    const char *what;
    uint64_t lim = object_limit(r, manifest, &what);
    char d[256];
    STAT_ADD(r, misses, 1);
    if (x->refused == MFS_RX_OVER_LIMIT) {
        STAT_ADD(r, errors, 1);
        if (x->declared)
            snprintf(d, sizeof d, "an answer of %" PRIu64 " bytes, over %s (%" PRIu64
                     " bytes); refused before reading it", x->declared, what, lim);
        else
            snprintf(d, sizeof d, "an answer longer than %s (%" PRIu64 " bytes); cut there", what,
                     lim);
        once(r, &r->logged_huge, "GET", d, "a miss: converted locally (logged once)");
    } else if (x->refused == MFS_RX_NO_ROOM) {
        pthread_mutex_lock(&r->c->mu);
        uint64_t cap = r->c->max_size;
        pthread_mutex_unlock(&r->c->mu);
        snprintf(d, sizeof d, "no room for an answer %s%" PRIu64 " bytes under the cache's cap (%"
                 PRIu64 " bytes) beside its entries and other downloads; %s",
                 x->declared ? "of " : "past ", x->declared ? x->declared : x->n, cap,
                 x->declared ? "refused before reading it" : "cut there");
        once(r, &r->logged_room, "GET", d, "a miss: converted locally (logged once)");
    }
}

int mfs_remote_fetch(mfs_remote *r, const mfs_cache_key *k, int manifest)
{
    if (!r || !available(r, &r->rd))
        return 0;
    char url[4200];
    object_url(r, k, manifest, url, sizeof url);
    mfs_err err;
    mfs_err_clear(&err);
    char tmp[MFS_CACHE_PATH_MAX];
    int fd = mfs_cache_tmp_create(r->c, tmp, &err);
    if (fd < 0)
        return 0; /* the local cache's trouble: the caller converts */
    const char *what;
    mfs_rx x = {.c = r->c, .fd = fd, .limit = object_limit(r, manifest, &what)};
    struct curl_slist *hdr;
    CURL *h = easy(r, url, &hdr);
    int got = 0;
    uint64_t kept = 0;
    if (!h)
        goto out;
    mfs_rx_attach(h, &x);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms + 1000L * r->data_timeout_s);
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    int late;
    CURLcode cc = mfs_rx_perform(h, &x, r->timeout_ms, &late);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (late) {
        /* whatever it would have said: a server this slow costs every read */
        char d[128];
        snprintf(d, sizeof d, "no answer within %u ms (remote_timeout_ms)", r->timeout_ms);
        STAT_ADD(r, misses, 1);
        failed(r, &r->rd, "GET", d, 0);
    } else if (cc == CURLE_OK && code >= 200 && code < 300) {
        succeeded(r, &r->rd);
        STAT_ADD(r, bytes_down, x.n);
        const char *why = verify(r, fd, k, manifest);
        if (why) {
            STAT_ADD(r, misses, 1);
            pthread_mutex_lock(&r->mu);
            int first = !r->logged_bad;
            r->logged_bad = 1;
            pthread_mutex_unlock(&r->mu);
            if (first)
                rlog(r, "remote cache: %s%s: bad object (%s); not served", r->name,
                     url + strlen(r->url), why);
            got = 2;
        } else {
            char final[MFS_CACHE_PATH_MAX];
            mfs_cache_key_path(k, manifest ? 'm' : 'e', final);
            struct stat st;
            if (fstat(fd, &st) == 0 && mfs_cache_rename_into(r->c, tmp, final, &err) == 0) {
                tmp[0] = '\0';
                kept = (uint64_t)st.st_size;
                STAT_ADD(r, hits, 1);
                got = 1;
            }
        }
    } else if (x.refused == MFS_RX_OVER_LIMIT || x.refused == MFS_RX_NO_ROOM) {
        refused(r, &x, manifest);
    } else if (x.refused == MFS_RX_DISK) {
        STAT_ADD(r, misses, 1); /* the local disk's trouble, not the server's */
    } else if (answered(cc) && (code == 404 || code == 410)) {
        succeeded(r, &r->rd);
        STAT_ADD(r, misses, 1);
    } else if (answered(cc) && code >= 300 && !overloaded(code)) {
        /* a redirect, a refused token, another 4xx: a miss, said once */
        char d[512];
        answer_text(r, h, cc, code, d, sizeof d);
        succeeded(r, &r->rd);
        STAT_ADD(r, misses, 1);
        once(r, &r->logged_get, "GET", d, "a miss: converted locally (logged once)");
    } else {
        char d[512];
        answer_text(r, h, cc, code, d, sizeof d);
        STAT_ADD(r, misses, 1);
        failed(r, &r->rd, "GET", d, answered(cc) ? retry_after(h) : 0);
    }
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
out:
    close(fd);
    if (tmp[0])
        unlinkat(r->c->dirfd, tmp, 0);
    mfs_rx_release(&x, kept); /* after the unlink: the cap never undercounts */
    return got;
}

/* ---- uploads ---- */

typedef struct source {
    int fd;
    uint64_t off, len;      /* the file's bytes to send */
    uint8_t rec[MFS_CACHE_REC_LEN];
    int add_rec;            /* the xattr form: the record follows */
} source;

static size_t source_read(char *p, size_t sz, size_t nm, void *u)
{
    source *s = u;
    size_t n = sz * nm, done = 0;
    if (s->off < s->len) {
        size_t want = s->len - s->off < n ? (size_t)(s->len - s->off) : n;
        int64_t got = mfs_cache_pread_full(s->fd, p, want, s->off);
        if (got <= 0)
            return CURL_READFUNC_ABORT;
        s->off += (uint64_t)got;
        return (size_t)got;
    }
    if (s->add_rec) {
        uint64_t ro = s->off - s->len;
        if (ro < sizeof s->rec) {
            done = sizeof s->rec - ro < n ? sizeof s->rec - (size_t)ro : n;
            memcpy(p, s->rec + ro, done);
            s->off += done;
        }
    }
    return done;
}

/* Ends an upload within a second once the client stops (unmount, or a
 * batch run past its drain): a slow server never holds up the exit. */
static int stop_check(void *u, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    mfs_remote *r = u;
    pthread_mutex_lock(&r->mu);
    int stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    return stop;
}

/* 1 if the server has the object now (or there is none to send), 0 if it
 * was not sent. */
static int upload(mfs_remote *r, const job *j)
{
    if (!available(r, &r->up))
        return 0;
    pthread_mutex_lock(&r->mu);
    int ro = r->read_only;
    pthread_mutex_unlock(&r->mu);
    if (ro)
        return 0;
    char path[MFS_CACHE_PATH_MAX];
    mfs_cache_key_path(&j->key, j->manifest ? 'm' : 'e', path);
    int fd = openat(r->c->dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 1; /* evicted meanwhile */
    mfs_cache_entry_info info;
    const char *why = NULL;
    source s = {.fd = fd};
    if (mfs_cache_entry_check(fd, &j->key, j->manifest ? 'm' : 'e', &info, &why) != 1 ||
        !carried(info.kind, j->manifest)) {
        close(fd); /* never failures, never a damaged entry */
        return 1;
    }
    if (info.form == MFS_CACHE_FORM_XATTR) {
        if (fgetxattr(fd, MFS_CACHE_XATTR, s.rec, sizeof s.rec) != (ssize_t)sizeof s.rec) {
            close(fd);
            return 0;
        }
        s.len = info.length;
        s.add_rec = 1;
    } else {
        s.len = info.size;
    }
    char url[4200];
    object_url(r, &j->key, j->manifest, url, sizeof url);
    struct curl_slist *hdr;
    CURL *h = easy(r, url, &hdr);
    if (!h) {
        close(fd);
        return 0;
    }
    /* the server's copy was found bad: its HEAD would say 200, so the
     * good one is put over it unasked */
    int repair = j->over;
    CURLcode cc = CURLE_OK;
    long code = 404;
    char d[512];
    int done = 0;
    if (!repair) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms + 1000L * r->data_timeout_s);
        mfs_rx x = {.c = r->c, .fd = -1};
        mfs_rx_attach(h, &x);
        int late;
        cc = mfs_rx_perform(h, &x, r->timeout_ms, &late);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        answer_text(r, h, cc, code, d, sizeof d);
        if (late)
            snprintf(d, sizeof d, "no answer within %u ms (remote_timeout_ms)", r->timeout_ms);
        done = cc == CURLE_OK && code >= 200 && code < 300; /* there already */
    }
    if (cc != CURLE_OK || overloaded(code)) {
        failed(r, &r->up, "HEAD", d, cc == CURLE_OK ? retry_after(h) : 0);
    } else if (code >= 300 && code != 404 && code != 410) {
        uploads_refused(r, "HEAD", d);
    } else if (code == 404 || code == 410) {
        curl_slist_free_all(hdr);
        curl_easy_cleanup(h);
        h = easy(r, url, &hdr);
        if (!h) {
            close(fd);
            return 0;
        }
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, source_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &s);
        curl_off_t total = (curl_off_t)(s.len + (s.add_rec ? sizeof s.rec : 0));
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, total);
        /* streamed: a stalled upload ends after the data timeout of silence */
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)r->data_timeout_s);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, stop_check);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, r);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        cc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        answer_text(r, h, cc, code, d, sizeof d);
        if (cc == CURLE_OK && code >= 200 && code < 300) {
            done = 1;
            succeeded(r, &r->up);
            STAT_ADD(r, bytes_up, (uint64_t)total);
            pthread_mutex_lock(&r->mu);
            r->st.uploads++;
            r->st.repaired += (uint64_t)repair;
            int first = repair && !r->logged_repair;
            r->logged_repair |= repair;
            pthread_mutex_unlock(&r->mu);
            if (first)
                rlog(r, "remote cache: %s%s: a bad object replaced with the one converted here "
                        "(remote_repaired counts them)", r->name, url + strlen(r->url));
        } else if (cc == CURLE_OK && code == 413) {
            STAT_ADD(r, errors, 1); /* too large for this server: that object only */
            once(r, &r->logged_big, "PUT", d, "such objects are not uploaded (logged once)");
        } else if (cc == CURLE_OK && code >= 300 && !overloaded(code)) {
            uploads_refused(r, "PUT", d);
        } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
            rlog(r, "remote cache: %s: PUT of %" PRIu64 " bytes cut short at exit", r->name,
                 (uint64_t)total);
        } else {
            failed(r, &r->up, "PUT", d, cc == CURLE_OK ? retry_after(h) : 0);
        }
    }
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    close(fd);
    return done;
}

static void *uploader(void *arg)
{
    mfs_remote *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->qlen == 0)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop)
            break;
        job j = r->q[r->qhead];
        r->qhead = (r->qhead + 1) % MFS_REMOTE_QUEUE_CAP;
        r->qlen--;
        r->busy = 1;
        pthread_mutex_unlock(&r->mu);
        int done = upload(r, &j);
        mfs_lease_uploaded(r->lease, &j.key, j.manifest); /* sent or not */
        pthread_mutex_lock(&r->mu);
        r->unsent += !done;
        r->busy = 0;
        pthread_cond_broadcast(&r->cv); /* a drain may be waiting */
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

void mfs_remote_enqueue(mfs_remote *r, const mfs_cache_key *k, int manifest, int over)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    if (!r->started && !r->read_only)
        r->started = pthread_create(&r->thread, NULL, uploader, r) == 0 ? 1 : -1;
    if (r->read_only || r->started != 1) {
        /* nothing */
    } else if (r->qlen == MFS_REMOTE_QUEUE_CAP) {
        r->st.dropped++;
    } else {
        r->q[(r->qhead + r->qlen) % MFS_REMOTE_QUEUE_CAP] = (job){*k, manifest, over != 0};
        r->qlen++;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

void mfs_remote_drain(mfs_remote *r, unsigned timeout_s)
{
    if (!r)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_s;
    pthread_mutex_lock(&r->mu);
    while (r->started == 1 && (r->qlen || r->busy)) {
        if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
            break;
    }
    unsigned long left = r->qlen + (unsigned)r->busy, unsent = r->unsent + left;
    r->reported = 1;
    pthread_mutex_unlock(&r->mu);
    if (left)
        rlog(r, "remote cache: %s: %lu uploads not sent: still queued after %u s", r->name, unsent,
             timeout_s);
    else if (unsent)
        rlog(r, "remote cache: %s: %lu uploads not sent (the errors above); the server lacks "
             "those objects", r->name, unsent);
}

void mfs_remote_get_stats(mfs_remote *r, mfs_remote_stats *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->st;
    out->queue = r->qlen + (unsigned)r->busy; /* waiting, plus the one in flight */
    pthread_mutex_unlock(&r->mu);
}

/* ---- setup ---- */

mfs_remote *mfs_remote_new(const mfs_remote_cfg *cfg, mfs_cache *cache, mfs_err *err)
{
    if (mfs_remote_check_url("remote", cfg->url, err) < 0)
        return NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        mfs_errf(err, "remote: libcurl could not start");
        return NULL;
    }
    mfs_remote *r = calloc(1, sizeof *r);
    if (!r) {
        mfs_errf(err, "out of memory");
        return NULL;
    }
    r->c = cache;
    r->url = strdup(cfg->url);
    if (r->url) {
        size_t n = strlen(r->url);
        while (n && r->url[n - 1] == '/')
            r->url[--n] = '\0';
        r->name = mfs_remote_public_name(r->url);
    }
    if (cfg->token) {
        size_t n = strlen(cfg->token) + 32;
        if ((r->auth = malloc(n)))
            snprintf(r->auth, n, "Authorization: Bearer %s", cfg->token);
    }
    r->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : MFS_REMOTE_TIMEOUT_MS_DEFAULT;
    r->data_timeout_s = cfg->data_timeout_s ? cfg->data_timeout_s : MFS_REMOTE_DATA_TIMEOUT_S_DEFAULT;
    r->view_max = cfg->view_max;
    r->read_only = cfg->read_only;
    r->rd = (backoff){.name = "reads", .other = "uploads"};
    r->up = (backoff){.name = "uploads", .other = "reads"};
    r->log = cfg->log;
    r->log_ctx = cfg->log_ctx;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&r->share_mu[i], NULL);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->share = curl_share_init();
    if (!r->url || !r->name || (cfg->token && !r->auth) || !r->share) {
        mfs_errf(err, "out of memory");
        goto fail;
    }
    curl_share_setopt(r->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(r->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(r->share, CURLSHOPT_USERDATA, r);
    curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    mfs_lease_cfg lc = {r->url, r->name, r->auth, r->timeout_ms, r->data_timeout_s,
                        cfg->convert_timeout_s, r->share, r->log, r->log_ctx};
    r->lease = r->read_only ? NULL : mfs_lease_new(&lc); /* NULL: no leases */
    return r;
fail:
    if (r->share)
        curl_share_cleanup(r->share);
    free(r->url);
    free(r->name);
    free(r->auth);
    free(r);
    return NULL;
}

void mfs_remote_free(mfs_remote *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    int started = r->started == 1;
    size_t dropped = r->reported ? 0 : r->qlen;
    pthread_mutex_unlock(&r->mu);
    if (dropped)
        rlog(r, "remote cache: %s: %zu queued uploads not sent at exit", r->name, dropped);
    if (started)
        pthread_join(r->thread, NULL);
    mfs_lease_free(r->lease);
    curl_share_cleanup(r->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&r->share_mu[i]);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    if (r->auth) {
        memset(r->auth, 0, strlen(r->auth));
        free(r->auth);
    }
    free(r->url);
    free(r->name);
    free(r);
}

/* ---- leases (remote_lease.h): asked for only while this session may
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

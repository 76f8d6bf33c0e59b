/* The remote tier's libcurl backend: HTTP GET, HEAD, PUT on a folder, and
 * WebDAV LOCK, UNLOCK for leases (include/meshfs/remote.h, "the backend";
 * docs/remote-cache.md).
 *
 * Connections: one curl share handle holds the connection cache, DNS and
 * TLS sessions for every easy handle, so reads from any FUSE thread and the
 * upload thread reuse kept-alive connections.  An easy handle per request
 * keeps the threads independent (libcurl forbids sharing one easy handle).
 * TLS is verified, redirects are never followed (the token would go
 * wherever they point), and only http and https are spoken.
 *
 * Everything a server answers is untrusted: an answer must begin within
 * timeout_ms of the request (xfer.c), a LOCK answer's body is read to
 * 64 KiB and no further, and its Lock-Token must be one Coded-URL. */
#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "meshfs/remote.h"
#include "xfer.h"

#define BODY_MAX (64 * 1024) /* a LOCK answer's body, at most */
#define BODY_KEPT 4096       /* of which this much is looked at */
#define RETRY_AFTER_MAX_S 300 /* the longest back-off */

typedef struct http {
    char *url;  /* without a trailing '/' */
    char *auth; /* "Authorization: Bearer ..." or NULL */
    unsigned timeout_ms, data_timeout_s;
    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
} http;

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
    (void)h, (void)a;
    http *b = u;
    pthread_mutex_lock(&b->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
    (void)h;
    http *b = u;
    pthread_mutex_unlock(&b->share_mu[d]);
}

static void result_init(mfs_remote_result *res)
{
    memset(res, 0, sizeof *res);
    res->status = MFS_RB_FAILED;
}

/* The server is there but says "not now" (or failed). */
static int overloaded(long code)
{
    return code == 408 || code == 429 || code >= 500;
}

/* The server answered (any status), rather than the transfer failing. */
static int answered(CURLcode cc)
{
    return cc == CURLE_OK || cc == CURLE_HTTP_RETURNED_ERROR;
}

/* The server's Retry-After in seconds (0: none), at most the longest
 * back-off. */
static unsigned retry_after(CURL *h)
{
    curl_off_t s = 0;
    if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &s) != CURLE_OK || s <= 0)
        return 0;
    return s > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (unsigned)s;
}

/* What an answer that is not a success means, for a log line. */
static void answer_text(const http *b, CURL *h, CURLcode cc, long code, char *out, size_t n)
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
        snprintf(out, n, "HTTP %ld, %s", code, b->auth ? "the token was refused" : "refused (no token)");
    else if (code == 405)
        snprintf(out, n, "HTTP 405, the method is not allowed there");
    else if (code == 413)
        snprintf(out, n, "HTTP 413, too large for the server");
    else if (code == 429)
        snprintf(out, n, "HTTP 429, too many requests");
    else
        snprintf(out, n, "HTTP %ld%s", code, code >= 500 ? ", server error" : "");
}

/* The short form: lock, unlock and the lease folder's put. */
static void brief_text(CURLcode cc, long code, int too_long, char *out, size_t n)
{
    if (too_long)
        snprintf(out, n, "an answer longer than %d bytes", BODY_MAX);
    else if (cc == CURLE_OPERATION_TIMEDOUT)
        snprintf(out, n, "no answer in time");
    else if (cc != CURLE_OK && cc != CURLE_HTTP_RETURNED_ERROR)
        snprintf(out, n, "%s", curl_easy_strerror(cc));
    else
        snprintf(out, n, "HTTP %ld", code);
}

static void join(const http *b, const char *name, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", b->url, name);
}

static CURL *easy(http *b, const char *url, struct curl_slist **hdr)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SHARE, b->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)b->timeout_ms);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    *hdr = NULL;
    if (b->auth) {
        *hdr = curl_slist_append(NULL, b->auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdr);
    }
    return h;
}

static void late_text(const http *b, mfs_remote_result *res)
{
    snprintf(res->detail, sizeof res->detail, "no answer within %u ms (remote_timeout_ms)",
             b->timeout_ms);
    snprintf(res->brief, sizeof res->brief, "no answer in time");
}

/* ---- objects ---- */

/* The request for object name, res made ready; NULL (res says why) when
 * it cannot be made. */
static CURL *begin(http *b, const char *name, mfs_remote_result *res, struct curl_slist **hdr)
{
    result_init(res);
    char url[4200];
    join(b, name, url, sizeof url);
    CURL *h = easy(b, url, hdr);
    if (!h) {
        snprintf(res->detail, sizeof res->detail, "out of memory");
        snprintf(res->brief, sizeof res->brief, "out of memory");
        res->no_answer = 1;
    }
    return h;
}

static void http_get(void *ctx, const char *name, const mfs_remote_sink *sink, mfs_remote_result *res)
{
    http *b = ctx;
    struct curl_slist *hdr;
    CURL *h = begin(b, name, res, &hdr);
    if (!h)
        return;
    mfs_rx x = {.sink = sink};
    mfs_rx_attach(h, &x);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)b->timeout_ms + 1000L * b->data_timeout_s);
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    int late;
    CURLcode cc = mfs_rx_perform(h, &x, b->timeout_ms, &late);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    res->code = code;
    res->bytes = x.n;
    answer_text(b, h, cc, code, res->detail, sizeof res->detail);
    brief_text(cc, code, 0, res->brief, sizeof res->brief);
    if (late) {
        /* whatever it would have said: a server this slow costs every read */
        res->late = res->no_answer = 1;
        late_text(b, res);
    } else if (cc == CURLE_OK && code >= 200 && code < 300) {
        res->status = MFS_RB_OK;
    } else if (x.stopped) {
        res->status = MFS_RB_STOPPED;
    } else if (answered(cc) && (code == 404 || code == 410)) {
        res->status = MFS_RB_ABSENT;
    } else if (answered(cc) && code >= 300 && !overloaded(code)) {
        res->status = MFS_RB_REFUSED;
    } else {
        res->retry_after_s = answered(cc) ? retry_after(h) : 0;
        res->no_answer = !answered(cc);
    }
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
}

static void http_head(void *ctx, const char *name, mfs_remote_result *res)
{
    http *b = ctx;
    struct curl_slist *hdr;
    CURL *h = begin(b, name, res, &hdr);
    if (!h)
        return;
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)b->timeout_ms + 1000L * b->data_timeout_s);
    mfs_rx x = {.sink = NULL};
    mfs_rx_attach(h, &x);
    int late;
    CURLcode cc = mfs_rx_perform(h, &x, b->timeout_ms, &late);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    res->code = code;
    answer_text(b, h, cc, code, res->detail, sizeof res->detail);
    brief_text(cc, code, 0, res->brief, sizeof res->brief);
    if (late) {
        res->late = 1;
        late_text(b, res);
    }
    if (cc != CURLE_OK) {
        res->no_answer = 1;
    } else if (overloaded(code)) {
        res->retry_after_s = retry_after(h);
    } else if (code >= 200 && code < 300) {
        res->status = MFS_RB_OK;
    } else if (code == 404 || code == 410) {
        res->status = MFS_RB_ABSENT;
    } else if (code >= 300) {
        res->status = MFS_RB_REFUSED;
    }
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
}

typedef struct put_state {
    const mfs_remote_source *src;
    uint64_t off;
} put_state;

static size_t source_read(char *p, size_t sz, size_t nm, void *u)
{
    put_state *s = u;
    int64_t got = s->src->read(s->src->ctx, p, sz * nm, s->off);
    if (got < 0)
        return CURL_READFUNC_ABORT;
    s->off += (uint64_t)got;
    return (size_t)got;
}

/* Ends a put within a second once the source says stop (the client
 * stopping: unmount, or a batch run past its drain). */
static int stop_check(void *u, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    put_state *s = u;
    return s->src->stop ? s->src->stop(s->src->ctx) : 0;
}

/* An answer's body, which no put reads: counted, never written anywhere
 * (libcurl's default would write it to stdout, meshfs-convert's). */
static size_t drop_body(char *p, size_t size, size_t n, void *u)
{
    (void)p, (void)u;
    return size * n;
}

static void text_put(http *b, const char *name, const mfs_remote_source *src,
                     mfs_remote_result *res);

static void http_put(void *ctx, const char *name, const mfs_remote_source *src, mfs_remote_result *res)
{
    http *b = ctx;
    if (src->text) {
        text_put(b, name, src, res);
        return;
    }
    struct curl_slist *hdr;
    CURL *h = begin(b, name, res, &hdr);
    if (!h)
        return;
    put_state s = {.src = src};
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, source_read);
    curl_easy_setopt(h, CURLOPT_READDATA, &s);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)src->size);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drop_body);
    /* streamed: a stalled upload ends after the data timeout of silence */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)b->data_timeout_s);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, stop_check);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    CURLcode cc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    res->code = code;
    answer_text(b, h, cc, code, res->detail, sizeof res->detail);
    brief_text(cc, code, 0, res->brief, sizeof res->brief);
    if (cc == CURLE_OK && code >= 200 && code < 300) {
        res->status = MFS_RB_OK;
    } else if (cc == CURLE_OK && code == 413) {
        res->status = MFS_RB_TOO_LARGE;
    } else if (cc == CURLE_OK && code >= 300 && !overloaded(code)) {
        res->status = MFS_RB_REFUSED;
    } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
        res->status = MFS_RB_STOPPED;
        snprintf(res->detail, sizeof res->detail, "cut short at exit");
    } else {
        res->retry_after_s = cc == CURLE_OK ? retry_after(h) : 0;
        res->no_answer = cc != CURLE_OK;
    }
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
}

/* ---- locks (WebDAV) ---- */

/* One LOCK or UNLOCK answer, bounded. */
typedef struct answer {
    mfs_rx rx; /* its answered flag and deadline (xfer.h) */
    char token[MFS_REMOTE_TOKEN_MAX + 1];
    int token_seen, token_bad;
    char body[BODY_KEPT + 1];
    size_t nbody, total;
    int too_long;
} answer;

/* A Coded-URL ("<" absolute-URI ">", RFC 4918 10.5), trimmed of blanks: 1
 * and copied into out, or 0. */
static int coded_url(const char *v, size_t n, char *out)
{
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
        n--;
    if (n < 3 || n > MFS_REMOTE_TOKEN_MAX || v[0] != '<' || v[n - 1] != '>')
        return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (v[i] <= 0x20 || v[i] >= 0x7f || v[i] == '<' || v[i] == '>')
            return 0;
    memcpy(out, v, n);
    out[n] = '\0';
    return 1;
}

static size_t lock_header(char *p, size_t sz, size_t nm, void *u)
{
    answer *a = u;
    size_t n = sz * nm;
    a->rx.answered = 1;
    static const char name[] = "lock-token:";
    if (n >= sizeof name - 1 && !strncasecmp(p, name, sizeof name - 1)) {
        /* a second one, even equal, is as bad as garbage */
        if (a->token_seen || !coded_url(p + sizeof name - 1, n - (sizeof name - 1), a->token))
            a->token_bad = 1;
        a->token_seen = 1;
    }
    return n;
}

static size_t lock_body(char *p, size_t sz, size_t nm, void *u)
{
    answer *a = u;
    size_t n = sz * nm;
    a->total += n;
    if (a->total > BODY_MAX) {
        a->too_long = 1;
        return 0; /* ends the transfer */
    }
    size_t keep = BODY_KEPT - a->nbody < n ? BODY_KEPT - a->nbody : n;
    memcpy(a->body + a->nbody, p, keep);
    a->nbody += keep;
    a->body[a->nbody] = '\0';
    return n;
}

/* Sends method to url with the extra headers, and body if not NULL.  The
 * status (0: no answer), and the answer in *a. */
static long exchange(http *b, const char *method, const char *url, const char *const *extra,
                     const char *body, answer *a, CURLcode *ccp)
{
    memset(a, 0, sizeof *a);
    *ccp = CURLE_FAILED_INIT;
    CURL *h = curl_easy_init();
    if (!h)
        return 0;
    struct curl_slist *hdr = NULL, *t;
    if (b->auth && (t = curl_slist_append(hdr, b->auth)))
        hdr = t;
    for (int i = 0; extra && extra[i]; i++)
        if ((t = curl_slist_append(hdr, extra[i])))
            hdr = t;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SHARE, b->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)b->timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)b->timeout_ms + 1000L * b->data_timeout_s);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, lock_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, lock_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    a->rx.h = h;
    int late = 0;
    CURLcode cc = mfs_rx_perform(h, &a->rx, b->timeout_ms, &late);
    long code = 0;
    if (!late && (cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && a->too_long)))
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    *ccp = late ? CURLE_OPERATION_TIMEDOUT : cc;
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    return code;
}

/* The server's lock timeout in a LOCK answer's body (<D:timeout>Second-N),
 * or 0 if it says none or Infinite. */
static unsigned body_timeout(const answer *a)
{
    const char *p = a->body;
    while ((p = strstr(p, "Second-"))) {
        p += 7;
        unsigned long v = 0;
        int digits = 0;
        while (isdigit((unsigned char)*p) && digits < 10)
            v = v * 10 + (unsigned long)(*p++ - '0'), digits++;
        if (digits)
            return v > 0xFFFFFFFFul ? 0xFFFFFFFFu : (unsigned)v;
    }
    return 0;
}

static void http_lock(void *ctx, const char *name, unsigned timeout_s, mfs_remote_result *res)
{
    http *b = ctx;
    result_init(res);
    char url[4200], timeout[64];
    join(b, name, url, sizeof url);
    snprintf(timeout, sizeof timeout, "Timeout: Second-%u", timeout_s);
    const char *const extra[] = {timeout, "Depth: 0", "Content-Type: application/xml; charset=utf-8",
                                 NULL};
    static const char body[] =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
        "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>"
        "<D:locktype><D:write/></D:locktype><D:owner>meshfs</D:owner></D:lockinfo>\n";
    answer *a = malloc(sizeof *a);
    if (!a) {
        snprintf(res->brief, sizeof res->brief, "out of memory");
        snprintf(res->detail, sizeof res->detail, "out of memory");
        return;
    }
    CURLcode cc;
    long code = exchange(b, "LOCK", url, extra, body, a, &cc);
    res->code = code;
    res->too_long = a->too_long;
    res->no_answer = !code;
    res->late = cc == CURLE_OPERATION_TIMEDOUT;
    brief_text(cc, code, a->too_long, res->brief, sizeof res->brief);
    snprintf(res->detail, sizeof res->detail, "%s", res->brief);
    if (code == 423) {
        res->status = MFS_RB_BUSY;
    } else if ((code == 200 || code == 201) && !a->too_long) {
        if (!a->token_seen || a->token_bad) {
            /* we may hold a lock we cannot free: the server's timeout ends it */
            res->status = MFS_RB_BAD_ANSWER;
            snprintf(res->detail, sizeof res->detail, "%s",
                     a->token_seen ? "a Lock-Token header that is not a Coded-URL (<...>)"
                                   : "no Lock-Token header");
        } else {
            res->status = MFS_RB_OK;
            snprintf(res->token, sizeof res->token, "%s", a->token);
            res->lock_timeout_s = body_timeout(a);
        }
    } else if (code == 405 || code == 501 || code == 401 || code == 403) {
        res->status = MFS_RB_UNSUPPORTED;
    } else if (code == 409) {
        res->status = MFS_RB_NO_FOLDER;
    }
    free(a);
}

/* A short text put as a lock is sent (mfs_remote_source.text). */
static void text_put(http *b, const char *name, const mfs_remote_source *src,
                     mfs_remote_result *res)
{
    result_init(res);
    char url[4200], ctype[128];
    join(b, name, url, sizeof url);
    snprintf(ctype, sizeof ctype, "Content-Type: %s",
             src->content_type ? src->content_type : "application/octet-stream");
    const char *const extra[] = {ctype, NULL};
    answer *a = malloc(sizeof *a);
    if (!a) {
        snprintf(res->brief, sizeof res->brief, "out of memory");
        snprintf(res->detail, sizeof res->detail, "out of memory");
        return;
    }
    CURLcode cc;
    long code = exchange(b, "PUT", url, extra, src->text, a, &cc);
    res->code = code;
    res->too_long = a->too_long;
    res->no_answer = !code;
    res->late = cc == CURLE_OPERATION_TIMEDOUT;
    brief_text(cc, code, a->too_long, res->brief, sizeof res->brief);
    snprintf(res->detail, sizeof res->detail, "%s", res->brief);
    if (code >= 200 && code < 300)
        res->status = MFS_RB_OK;
    else if (code >= 300 && !overloaded(code))
        res->status = MFS_RB_REFUSED;
    free(a);
}

static void http_unlock(void *ctx, const char *name, const char *token, mfs_remote_result *res)
{
    http *b = ctx;
    result_init(res);
    char url[4200], h[MFS_REMOTE_TOKEN_MAX + 32];
    join(b, name, url, sizeof url);
    snprintf(h, sizeof h, "Lock-Token: %s", token);
    const char *const extra[] = {h, NULL};
    answer *a = malloc(sizeof *a);
    if (!a) {
        snprintf(res->brief, sizeof res->brief, "out of memory");
        snprintf(res->detail, sizeof res->detail, "out of memory");
        return;
    }
    CURLcode cc;
    long code = exchange(b, "UNLOCK", url, extra, NULL, a, &cc);
    res->code = code;
    res->too_long = a->too_long;
    res->no_answer = !code;
    brief_text(cc, code, a->too_long, res->brief, sizeof res->brief);
    snprintf(res->detail, sizeof res->detail, "%s", res->brief);
    if (code >= 200 && code < 300)
        res->status = MFS_RB_OK;
    free(a);
}

/* ---- setup ---- */

static void http_free(void *ctx)
{
    http *b = ctx;
    if (!b)
        return;
    if (b->share)
        curl_share_cleanup(b->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&b->share_mu[i]);
    if (b->auth) {
        memset(b->auth, 0, strlen(b->auth));
        free(b->auth);
    }
    free(b->url);
    free(b);
}

int mfs_remote_http_new(const mfs_remote_cfg *cfg, mfs_remote_backend *out, mfs_err *err)
{
    if (mfs_remote_check_url("remote", cfg->url, err) < 0)
        return -1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return mfs_errf(err, "remote: libcurl could not start");
    http *b = calloc(1, sizeof *b);
    if (!b)
        return mfs_errf(err, "out of memory");
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&b->share_mu[i], NULL);
    b->url = strdup(cfg->url);
    if (b->url) {
        size_t n = strlen(b->url);
        while (n && b->url[n - 1] == '/')
            b->url[--n] = '\0';
    }
    if (cfg->token) {
        size_t n = strlen(cfg->token) + 32;
        if ((b->auth = malloc(n)))
            snprintf(b->auth, n, "Authorization: Bearer %s", cfg->token);
    }
    b->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : MFS_REMOTE_TIMEOUT_MS_DEFAULT;
    b->data_timeout_s = cfg->data_timeout_s ? cfg->data_timeout_s : MFS_REMOTE_DATA_TIMEOUT_S_DEFAULT;
    b->share = curl_share_init();
    if (!b->url || (cfg->token && !b->auth) || !b->share) {
        http_free(b);
        return mfs_errf(err, "out of memory");
    }
    curl_share_setopt(b->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(b->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(b->share, CURLSHOPT_USERDATA, b);
    curl_share_setopt(b->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(b->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(b->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    *out = (mfs_remote_backend){.ctx = b,
                                .get = http_get,
                                .head = http_head,
                                .put = http_put,
                                .lock = http_lock,
                                .unlock = http_unlock,
                                .free = http_free};
    return 0;
}

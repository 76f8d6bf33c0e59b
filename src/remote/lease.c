/* Leases on the remote tier (include/meshfs/remote.h, "leases"): WebDAV LOCK
 * and UNLOCK on a lease URL beside the objects, so that machines starting
 * together convert each model once.
 *
 * A lease is a promise to upload: only a client that may upload now takes
 * one (mfs_remote_leasable), and it is freed after the manifest's upload,
 * which the upload thread sends last of the model's objects; a waiter
 * polls for that manifest.  Every failure of the lease machinery falls back
 * to what the tier did without leases, a conversion here: the leases save
 * work, they never decide what bytes are served. */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lease.h"
#include "meshfs/cache.h"
#include "xfer.h"

#define TOKEN_MAX 256        /* a Coded-URL's length, at most */
#define BODY_MAX (64 * 1024) /* a LOCK answer's body, at most */
#define BODY_KEPT 4096       /* of which this much is looked at */
#define POLL_FIRST_MS 100
#define POLL_MAX_MS 1000
#define HELD_MAX 4096        /* leases held at once; beyond: none taken */
#define CONVERT_TIMEOUT_DEFAULT_S 60

typedef struct held {
    mfs_cache_key key;
    char token[TOKEN_MAX + 1];
    int after_upload; /* freed when the upload thread is done with the manifest */
    struct held *next;
} held;

struct mfs_lease {
    mfs_lease_cfg cfg;
    unsigned bound_s; /* a waiter's longest wait; also the Timeout asked for */
    pthread_mutex_t mu; /* everything below */
    held *held;
    size_t nheld;
    int folder;       /* the lease folder was made, or tried (this session) */
    int off;          /* the server takes no LOCK: no more asking */
    int logged_off, logged_err, logged_short, logged_token;
    mfs_remote_lease_stats st;
};

/* One exchange's answer, bounded. */
typedef struct answer {
    mfs_rx rx;           /* its answered flag and deadline (xfer.h) */
    char token[TOKEN_MAX + 1];
    int token_seen, token_bad;
    char body[BODY_KEPT + 1];
    size_t nbody, total;
    int too_long;
} answer;

static void llog(mfs_lease *l, const char *fmt, ...)
{
    if (!l->cfg.log)
        return;
    char buf[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    l->cfg.log(l->cfg.log_ctx, buf);
}

/* Whether *flag was clear (and sets it): a line said once a session. */
static int first(mfs_lease *l, int *flag)
{
    pthread_mutex_lock(&l->mu);
    int was = *flag;
    *flag = 1;
    pthread_mutex_unlock(&l->mu);
    return !was;
}

#define COUNT(l, f)                     \
    do {                                \
        pthread_mutex_lock(&(l)->mu);   \
        (l)->st.f++;                    \
        pthread_mutex_unlock(&(l)->mu); \
    } while (0)

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void hex_of(const mfs_cache_key *k, char hex[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", k->b[i]);
}

static void lease_url(const mfs_lease *l, const mfs_cache_key *k, char *out, size_t n)
{
    char hex[33];
    hex_of(k, hex);
    snprintf(out, n, "%s/v%d/lease/%s", l->cfg.url, MFS_CACHE_VERSION, hex);
}

/* The manifest object's URL: common.c's mfs_rc_object_url for a manifest. */
static void manifest_url(const mfs_lease *l, const mfs_cache_key *k, char *out, size_t n)
{
    char hex[33];
    hex_of(k, hex);
    snprintf(out, n, "%s/v%d/manifest/%.2s/%s", l->cfg.url, MFS_CACHE_VERSION, hex, hex + 2);
}

/* ---- one exchange ---- */

/* A Coded-URL ("<" absolute-URI ">", RFC 4918 10.5), trimmed of blanks: 1
 * and copied into out, or 0. */
static int coded_url(const char *v, size_t n, char *out)
{
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
        n--;
    if (n < 3 || n > TOKEN_MAX || v[0] != '<' || v[n - 1] != '>')
        return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (v[i] <= 0x20 || v[i] >= 0x7f || v[i] == '<' || v[i] == '>')
            return 0;
    memcpy(out, v, n);
    out[n] = '\0';
    return 1;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *u)
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

static size_t on_body(char *p, size_t sz, size_t nm, void *u)
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
static long exchange(mfs_lease *l, const char *method, const char *url, const char *const *extra,
                     const char *body, answer *a, CURLcode *ccp)
{
    memset(a, 0, sizeof *a);
    a->rx.fd = -1;
    *ccp = CURLE_FAILED_INIT;
    CURL *h = curl_easy_init();
    if (!h)
        return 0;
    struct curl_slist *hdr = NULL, *t;
    if (l->cfg.auth && (t = curl_slist_append(hdr, l->cfg.auth)))
        hdr = t;
    for (int i = 0; extra && extra[i]; i++)
        if ((t = curl_slist_append(hdr, extra[i])))
            hdr = t;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SHARE, l->cfg.share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)l->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     (long)l->cfg.timeout_ms + 1000L * l->cfg.data_timeout_s);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (!strcmp(method, "PUT")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (body)
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    a->rx.h = h;
    int late = 0;
    CURLcode cc = mfs_rx_perform(h, &a->rx, l->cfg.timeout_ms, &late);
    long code = 0;
    if (!late && (cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && a->too_long)))
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    *ccp = late ? CURLE_OPERATION_TIMEDOUT : cc;
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    return code;
}

/* What went wrong with an exchange, for a log line. */
static void what_failed(CURLcode cc, long code, const answer *a, char *out, size_t n)
{
    if (a->too_long)
        snprintf(out, n, "an answer longer than %d bytes", BODY_MAX);
    else if (cc == CURLE_OPERATION_TIMEDOUT)
        snprintf(out, n, "no answer in time");
    else if (cc != CURLE_OK)
        snprintf(out, n, "%s", curl_easy_strerror(cc));
    else
        snprintf(out, n, "HTTP %ld", code);
}

/* A LOCK or UNLOCK that failed: counted, said once a session. */
static void lease_error(mfs_lease *l, const char *what, const char *detail)
{
    COUNT(l, errors);
    if (first(l, &l->logged_err))
        llog(l, "remote cache: %s: %s: %s; converted without a lease (logged once)", l->cfg.name,
             what, detail);
}

/* ---- the lease folder, a lease, its end ---- */

/* A LOCK in a folder that does not exist: nginx's dav_ext answers 409 and
 * keeps the lock anyway until it times out, so this model goes without a
 * lease (the others that ask for it wait for what this machine uploads);
 * the folder is made for the next ones by a PUT of a file in it
 * (create_full_put_path).  Once a session: a folder that cannot be made
 * is not tried for again. */
static void make_folder(mfs_lease *l)
{
    pthread_mutex_lock(&l->mu);
    int tried = l->folder;
    l->folder = 1;
    pthread_mutex_unlock(&l->mu);
    if (tried)
        return;
    char url[4200];
    snprintf(url, sizeof url, "%s/v%d/lease/README", l->cfg.url, MFS_CACHE_VERSION);
    answer a;
    CURLcode cc;
    static const char *const ctype[] = {"Content-Type: text/plain", NULL};
    long code = exchange(l, "PUT", url, ctype,
                         "meshfs leases (docs/remote-cache.md): the empty files here were made by "
                         "WebDAV LOCK.  Any of them may be deleted.\n",
                         &a, &cc);
    if (code < 200 || code >= 300) {
        char d[160];
        what_failed(cc, code, &a, d, sizeof d);
        lease_error(l, "LOCK: HTTP 409 (no lease folder), and its PUT", d);
    }
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

enum { LOCK_TAKEN, LOCK_HELD_ELSEWHERE, LOCK_NONE };

/* One LOCK of mk's lease: LOCK_TAKEN (token in tok), LOCK_HELD_ELSEWHERE
 * (423), LOCK_NONE (unsupported, refused or failed: said). */
static int lock_once(mfs_lease *l, const mfs_cache_key *mk, char *tok)
{
    char url[4200], timeout[64];
    lease_url(l, mk, url, sizeof url);
    snprintf(timeout, sizeof timeout, "Timeout: Second-%u", l->bound_s);
    const char *const extra[] = {timeout, "Depth: 0", "Content-Type: application/xml; charset=utf-8",
                                 NULL};
    static const char body[] =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
        "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>"
        "<D:locktype><D:write/></D:locktype><D:owner>meshfs</D:owner></D:lockinfo>\n";
    answer a;
    CURLcode cc;
    long code = exchange(l, "LOCK", url, extra, body, &a, &cc);
    char d[200];
    if (code == 423)
        return LOCK_HELD_ELSEWHERE;
    if ((code == 200 || code == 201) && !a.too_long) {
        if (!a.token_seen || a.token_bad) {
            /* we may hold a lock we cannot free: the server's timeout ends it */
            COUNT(l, errors);
            if (first(l, &l->logged_token))
                llog(l, "remote cache: %s: LOCK: HTTP %ld with %s; converted without a lease "
                        "(logged once)", l->cfg.name, code,
                     a.token_seen ? "a Lock-Token header that is not a Coded-URL (<...>)"
                                  : "no Lock-Token header");
            return LOCK_NONE;
        }
        unsigned t = body_timeout(&a);
        if (t && t < l->bound_s && first(l, &l->logged_short))
            llog(l, "remote cache: %s: LOCK: the server's locks last %u s, less than a "
                    "conversion and its upload may take (%u s: convert_timeout plus twice "
                    "remote_data_timeout_s); a longer one may be made twice (nginx: "
                    "dav_ext_lock_zone ... timeout=)", l->cfg.name, t, l->bound_s);
        snprintf(tok, TOKEN_MAX + 1, "%s", a.token);
        return LOCK_TAKEN;
    }
    if (code == 405 || code == 501 || code == 401 || code == 403) {
        pthread_mutex_lock(&l->mu);
        int was = l->off;
        l->off = 1;
        if (!was)
            l->st.unsupported++;
        pthread_mutex_unlock(&l->mu);
        if (!was)
            llog(l, "remote cache: %s: LOCK: HTTP %ld, %s; no leases this session: machines "
                    "starting together may convert a model each (docs/remote-cache.md, "
                    "\"Leases\")", l->cfg.name, code,
                 code == 405 || code == 501 ? "the server takes no LOCK (nginx: dav_ext)"
                                            : "LOCK refused");
        return LOCK_NONE;
    }
    if (code == 409) {
        make_folder(l);
        return LOCK_NONE;
    }
    what_failed(cc, code, &a, d, sizeof d);
    lease_error(l, "LOCK", d);
    return LOCK_NONE;
}

static void unlock(mfs_lease *l, const mfs_cache_key *mk, const char *tok)
{
    char url[4200], h[TOKEN_MAX + 32];
    lease_url(l, mk, url, sizeof url);
    snprintf(h, sizeof h, "Lock-Token: %s", tok);
    const char *const extra[] = {h, NULL};
    answer a;
    CURLcode cc;
    long code = exchange(l, "UNLOCK", url, extra, NULL, &a, &cc);
    if (code < 200 || code >= 300) {
        char d[200];
        what_failed(cc, code, &a, d, sizeof d);
        COUNT(l, errors); /* the server's timeout frees it */
        if (first(l, &l->logged_err))
            llog(l, "remote cache: %s: UNLOCK: %s; the lease ends with the server's lock "
                    "timeout (logged once)", l->cfg.name, d);
    }
}

/* Records a lease taken: 0, or -1 if too many are held (then freed now). */
static int keep(mfs_lease *l, const mfs_cache_key *mk, const char *tok)
{
    held *h = calloc(1, sizeof *h);
    int kept = 0;
    pthread_mutex_lock(&l->mu);
    if (h && l->nheld < HELD_MAX) {
        h->key = *mk;
        snprintf(h->token, sizeof h->token, "%s", tok);
        h->next = l->held;
        l->held = h;
        l->nheld++;
        l->st.taken++;
        kept = 1;
    }
    pthread_mutex_unlock(&l->mu);
    if (!kept) {
        free(h);
        unlock(l, mk, tok);
        return -1;
    }
    return 0;
}

/* Takes mk's held lease out of the list (only_after_upload: if its
 * upload was queued); NULL if none. */
static held *take_out(mfs_lease *l, const mfs_cache_key *mk, int only_after_upload)
{
    pthread_mutex_lock(&l->mu);
    held **pp = &l->held, *h = NULL;
    for (; *pp; pp = &(*pp)->next)
        if (!memcmp((*pp)->key.b, mk->b, sizeof mk->b) &&
            (!only_after_upload || (*pp)->after_upload)) {
            h = *pp;
            *pp = h->next;
            l->nheld--;
            break;
        }
    pthread_mutex_unlock(&l->mu);
    return h;
}

/* ---- the contract ---- */

/* 1 the manifest is on the server, 0 not, -1 the server failed. */
static int manifest_there(mfs_lease *l, const mfs_cache_key *mk)
{
    char url[4200];
    manifest_url(l, mk, url, sizeof url);
    answer a;
    CURLcode cc;
    long code = exchange(l, "HEAD", url, NULL, NULL, &a, &cc);
    if (code >= 200 && code < 300)
        return 1;
    return code == 404 || code == 410 ? 0 : -1;
}

/* Holding the lease: the manifest may have come between the caller's miss
 * and the LOCK (its holder uploaded and freed it meanwhile). */
static mfs_lease_outcome got_it(mfs_lease *l, const mfs_cache_key *mk, const char *tok)
{
    if (keep(l, mk, tok) < 0)
        return MFS_LEASE_NONE;
    if (manifest_there(l, mk) == 1) {
        mfs_lease_end(l, mk, 0);
        return MFS_LEASE_ARRIVED;
    }
    return MFS_LEASE_HELD;
}

mfs_lease_outcome mfs_lease_take(mfs_lease *l, const mfs_cache_key *mk)
{
    pthread_mutex_lock(&l->mu);
    int off = l->off;
    pthread_mutex_unlock(&l->mu);
    if (off)
        return MFS_LEASE_NONE;
    char tok[TOKEN_MAX + 1] = "";
    int got = lock_once(l, mk, tok);
    if (got == LOCK_TAKEN)
        return got_it(l, mk, tok);
    if (got == LOCK_NONE)
        return MFS_LEASE_NONE;
    /* another machine converts it: wait for its manifest */
    COUNT(l, waited);
    int64_t until = mono_ms() + 1000LL * l->bound_s;
    unsigned pause = POLL_FIRST_MS;
    while (mono_ms() < until) {
        sleep_ms(pause);
        pause = pause * 2 > POLL_MAX_MS ? POLL_MAX_MS : pause * 2;
        int there = manifest_there(l, mk);
        if (there == 1)
            return MFS_LEASE_ARRIVED;
        if (there < 0)
            return MFS_LEASE_NONE; /* a failing server: no waiting on it */
        got = lock_once(l, mk, tok);
        if (got == LOCK_NONE)
            return MFS_LEASE_NONE;
        if (got == LOCK_TAKEN) {
            /* free again with no manifest: its holder died (the server's
             * lock timed out) or failed to upload */
            COUNT(l, taken_over);
            return got_it(l, mk, tok);
        }
    }
    COUNT(l, taken_over);
    llog(l, "remote cache: %s: a lease held for %u s without its object; converted here",
         l->cfg.name, l->bound_s);
    return MFS_LEASE_NONE;
}

void mfs_lease_end(mfs_lease *l, const mfs_cache_key *mk, int after_upload)
{
    if (!l)
        return;
    if (after_upload) {
        pthread_mutex_lock(&l->mu);
        for (held *h = l->held; h; h = h->next)
            if (!memcmp(h->key.b, mk->b, sizeof mk->b))
                h->after_upload = 1;
        pthread_mutex_unlock(&l->mu);
        return;
    }
    held *h = take_out(l, mk, 0);
    if (h)
        unlock(l, &h->key, h->token);
    free(h);
}

void mfs_lease_uploaded(mfs_lease *l, const mfs_cache_key *key, int manifest)
{
    if (!l || !manifest)
        return;
    held *h = take_out(l, key, 1);
    if (h)
        unlock(l, &h->key, h->token);
    free(h);
}

void mfs_lease_get_stats(mfs_lease *l, mfs_remote_lease_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    *out = l->st;
    pthread_mutex_unlock(&l->mu);
}

mfs_lease *mfs_lease_new(const mfs_lease_cfg *cfg)
{
    mfs_lease *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->cfg = *cfg;
    unsigned ct = cfg->convert_timeout_s ? cfg->convert_timeout_s : CONVERT_TIMEOUT_DEFAULT_S;
    l->bound_s = ct + 2 * cfg->data_timeout_s;
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

void mfs_lease_free(mfs_lease *l)
{
    if (!l)
        return;
    while (l->held) {
        held *h = l->held;
        l->held = h->next;
        unlock(l, &h->key, h->token);
        free(h);
    }
    pthread_mutex_destroy(&l->mu);
    free(l);
}

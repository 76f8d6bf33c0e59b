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
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lease.h"
#include "meshfs/cache.h"

#define POLL_FIRST_MS 100
#define POLL_MAX_MS 1000
#define HELD_MAX 4096        /* leases held at once; beyond: none taken */
#define CONVERT_TIMEOUT_DEFAULT_S 60

typedef struct held {
    mfs_cache_key key;
    char token[MFS_REMOTE_TOKEN_MAX + 1];
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

static void lease_name(const mfs_cache_key *k, char *out, size_t n)
{
    char hex[33];
    hex_of(k, hex);
    snprintf(out, n, "v%d/lease/%s", MFS_CACHE_VERSION, hex);
}

/* The manifest object's name: common.c's mfs_rc_object_name for a manifest. */
static void manifest_name(const mfs_cache_key *k, char *out, size_t n)
{
    char hex[33];
    hex_of(k, hex);
    snprintf(out, n, "v%d/manifest/%.2s/%s", MFS_CACHE_VERSION, hex, hex + 2);
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

#define README_TEXT                                                                         \
    "meshfs leases (docs/remote-cache.md): the empty files here were made by WebDAV LOCK.  " \
    "Any of them may be deleted.\n"

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
    char name[64];
    snprintf(name, sizeof name, "v%d/lease/README", MFS_CACHE_VERSION);
    mfs_remote_source src = {.size = sizeof README_TEXT - 1, .text = README_TEXT,
                             .content_type = "text/plain"};
    mfs_remote_result res;
    l->cfg.be->put(l->cfg.be->ctx, name, &src, &res);
    if (res.status != MFS_RB_OK)
        lease_error(l, "LOCK: HTTP 409 (no lease folder), and its PUT", res.brief);
}

enum { LOCK_TAKEN, LOCK_HELD_ELSEWHERE, LOCK_NONE };

/* One LOCK of mk's lease: LOCK_TAKEN (token in tok), LOCK_HELD_ELSEWHERE
 * (423), LOCK_NONE (unsupported, refused or failed: said). */
static int lock_once(mfs_lease *l, const mfs_cache_key *mk, char *tok)
{
    char name[128];
    lease_name(mk, name, sizeof name);
    mfs_remote_result res;
    l->cfg.be->lock(l->cfg.be->ctx, name, l->bound_s, &res);
    switch (res.status) {
    case MFS_RB_BUSY:
        return LOCK_HELD_ELSEWHERE;
    case MFS_RB_BAD_ANSWER:
        /* we may hold a lock we cannot free: the server's timeout ends it */
        COUNT(l, errors);
        if (first(l, &l->logged_token))
            llog(l, "remote cache: %s: LOCK: HTTP %ld with %s; converted without a lease "
                    "(logged once)", l->cfg.name, res.code, res.detail);
        return LOCK_NONE;
    case MFS_RB_OK: {
        unsigned t = res.lock_timeout_s;
        if (t && t < l->bound_s && first(l, &l->logged_short))
            llog(l, "remote cache: %s: LOCK: the server's locks last %u s, less than a "
                    "conversion and its upload may take (%u s: convert_timeout plus twice "
                    "remote_data_timeout_s); a longer one may be made twice (nginx: "
                    "dav_ext_lock_zone ... timeout=)", l->cfg.name, t, l->bound_s);
        snprintf(tok, MFS_REMOTE_TOKEN_MAX + 1, "%s", res.token);
        return LOCK_TAKEN;
    }
    case MFS_RB_UNSUPPORTED: {
        pthread_mutex_lock(&l->mu);
        int was = l->off;
        l->off = 1;
        if (!was)
            l->st.unsupported++;
        pthread_mutex_unlock(&l->mu);
        if (!was)
            llog(l, "remote cache: %s: LOCK: HTTP %ld, %s; no leases this session: machines "
                    "starting together may convert a model each (docs/remote-cache.md, "
                    "\"Leases\")", l->cfg.name, res.code,
                 res.code == 405 || res.code == 501 ? "the server takes no LOCK (nginx: dav_ext)"
                                                    : "LOCK refused");
        return LOCK_NONE;
    }
    case MFS_RB_NO_FOLDER:
        make_folder(l);
        return LOCK_NONE;
    default:
        lease_error(l, "LOCK", res.brief);
        return LOCK_NONE;
    }
}

static void unlock(mfs_lease *l, const mfs_cache_key *mk, const char *tok)
{
    char name[128];
    lease_name(mk, name, sizeof name);
    mfs_remote_result res;
    l->cfg.be->unlock(l->cfg.be->ctx, name, tok, &res);
    if (res.status != MFS_RB_OK) {
        COUNT(l, errors); /* the server's timeout frees it */
        if (first(l, &l->logged_err))
            llog(l, "remote cache: %s: UNLOCK: %s; the lease ends with the server's lock "
                    "timeout (logged once)", l->cfg.name, res.brief);
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
    char name[128];
    manifest_name(mk, name, sizeof name);
    mfs_remote_result res;
    l->cfg.be->head(l->cfg.be->ctx, name, &res);
    return res.status == MFS_RB_OK ? 1 : res.status == MFS_RB_ABSENT ? 0 : -1;
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
    char tok[MFS_REMOTE_TOKEN_MAX + 1] = "";
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

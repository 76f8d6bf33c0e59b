/* The remote tier's shared helpers (tier.h): its log lines, the
 * two directions' back-off and the objects' names (tier.c reads,
 * upload.c uploads). */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tier.h"

void mfs_rc_log(mfs_remote *r, const char *fmt, ...)
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

/* A transport error, a late answer, a 5xx or a 429 in direction d: d skips
 * the server for a while, doubling, and at least at_least_s (the server's
 * Retry-After); the other direction goes on. */
void mfs_rc_failed(mfs_remote *r, backoff *d, const char *what, const char *detail,
                   unsigned at_least_s, int no_answer)
{
    mfs_cache_stat_add(r->c, offsetof(mfs_cache_stats, remote_errors), 1);
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
    d->no_answer = no_answer;
    unsigned b = d->s;
    if (d == &r->rd)
        r->st.read_backoffs++;
    else
        r->st.upload_backoffs++;
    pthread_mutex_unlock(&r->mu);
    mfs_rc_log(r, "remote cache: %s: %s: %s; %s paused for %u s (%s go on)", r->name, what, detail,
         d->name, b, d->other);
}

void mfs_rc_succeeded(mfs_remote *r, backoff *d)
{
    pthread_mutex_lock(&r->mu);
    d->s = 0;
    pthread_mutex_unlock(&r->mu);
}

/* Logs once per session (*flag) that the server answered what with d. */
void mfs_rc_once(mfs_remote *r, int *flag, const char *what, const char *d, const char *then)
{
    pthread_mutex_lock(&r->mu);
    int first = !*flag;
    *flag = 1;
    pthread_mutex_unlock(&r->mu);
    if (first)
        mfs_rc_log(r, "remote cache: %s: %s: %s; %s", r->name, what, d, then);
}

/* An upload answered with a redirect or a refusal: this server takes no
 * uploads from us (a reader's token, no PUT there, another URL), so the
 * session stops trying, logged once; reads go on. */
void mfs_rc_uploads_refused(mfs_remote *r, const char *what, const char *d)
{
    mfs_cache_stat_add(r->c, offsetof(mfs_cache_stats, remote_errors), 1);
    pthread_mutex_lock(&r->mu);
    r->read_only = 1;
    r->st.errors++;
    pthread_mutex_unlock(&r->mu);
    mfs_rc_once(r, &r->logged_ro, what, d, "read-only for this session");
}

void mfs_rc_object_name(const mfs_cache_key *k, int manifest, char *out, size_t n)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", k->b[i]);
    snprintf(out, n, "v%d/%s/%.2s/%s", MFS_CACHE_VERSION, manifest ? "manifest" : "view", hex,
             hex + 2);
}

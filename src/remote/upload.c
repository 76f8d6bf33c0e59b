/* The remote tier's uploads (include/meshfs/remote.h; tier.h):
 * one background thread takes the queue, then the owed list, one object
 * at a time (HEAD, then PUT if the server lacks it), so a conversion never
 * waits for the network.  What it cannot send now is owed (owed.h)
 * and sent on a later pass: once the uploads' back-off is over, or a read
 * finds the server answering again (tier.c, server_back), without a
 * remount; and by mfs_remote_push from a cache no client runs on. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tier.h"

/* What a PUT sends: the entry's bytes in the TRAILER form. */
typedef struct sending {
    mfs_remote *r;
    mfs_cache_object *o;
} sending;

static int64_t source_read(void *ctx, void *p, size_t n, uint64_t off)
{
    sending *s = ctx;
    return mfs_cache_object_read(s->o, p, n, off);
}

/* Ends an upload within a second once the client stops (unmount, or a
 * batch run past its drain): a slow server never holds up the exit. */
static int stop_check(void *ctx)
{
    sending *s = ctx;
    pthread_mutex_lock(&s->r->mu);
    int stop = s->r->stop;
    pthread_mutex_unlock(&s->r->mu);
    return stop;
}

/* UP_SENT: the server has the object now; UP_GONE: there is nothing to
 * send (evicted, or no entry the tier carries); UP_LATER: not sent, it may
 * be later (the server down or failing, backing off); UP_NEVER: not sent,
 * nor ever by this session (refused, too large).  why: the reason. */
static int upload(mfs_remote *r, const job *j, char *why, size_t wn)
{
    if (!available(r, &r->up)) {
        snprintf(why, wn, "uploads paused after a failure (the server's back-off)");
        return UP_LATER;
    }
    pthread_mutex_lock(&r->mu);
    int ro = r->read_only;
    pthread_mutex_unlock(&r->mu);
    if (ro) {
        snprintf(why, wn, "read-only (the server refused an upload)");
        return UP_NEVER;
    }
    mfs_cache_object o;
    const char *bad = NULL;
    int op = mfs_cache_object_open(r->c, &j->key, j->manifest ? 'm' : 'e', &o, &bad);
    if (op == MFS_CACHE_OBJECT_ABSENT) {
        snprintf(why, wn, "no longer in the local cache (evicted)");
        return UP_GONE;
    }
    if (op == MFS_CACHE_OBJECT_BAD) { /* never failures, never a damaged entry */
        snprintf(why, wn, "the local entry is %s", bad ? bad : "not one the remote tier carries");
        return UP_GONE;
    }
    if (op != MFS_CACHE_OBJECT_OPEN) {
        snprintf(why, wn, "cannot read the local entry's record");
        return UP_LATER;
    }
    char name[128];
    mfs_rc_object_name(&j->key, j->manifest, name, sizeof name);
    /* the server's copy was found bad: its HEAD would say 200, so the
     * good one is put over it unasked */
    int repair = j->over;
    const char *d = "";
    int res = UP_LATER;
    mfs_remote_result hr = {.status = MFS_RB_ABSENT};
    if (!repair) {
        r->be.head(r->be.ctx, name, &hr);
        d = hr.detail;
    }
    mfs_remote_result pr;
    if (hr.status == MFS_RB_OK) {
        res = UP_SENT; /* there already */
    } else if (hr.status == MFS_RB_REFUSED) {
        mfs_rc_uploads_refused(r, "HEAD", d);
        res = UP_NEVER;
    } else if (hr.status != MFS_RB_ABSENT) {
        mfs_rc_failed(r, &r->up, "HEAD", d, hr.retry_after_s, hr.no_answer);
    } else {
        sending sd = {r, &o};
        mfs_remote_source src = {.size = o.size, .read = source_read, .stop = stop_check, .ctx = &sd};
        uint64_t total = o.size;
        r->be.put(r->be.ctx, name, &src, &pr);
        d = pr.detail;
        switch (pr.status) {
        case MFS_RB_OK: {
            res = UP_SENT;
            mfs_rc_succeeded(r, &r->up);
            STAT_ADD(r, bytes_up, total);
            pthread_mutex_lock(&r->mu);
            r->st.uploads++;
            r->st.repaired += (uint64_t)repair;
            int first = repair && !r->logged_repair;
            r->logged_repair |= repair;
            pthread_mutex_unlock(&r->mu);
            if (first)
                mfs_rc_log(r, "remote cache: %s/%s: a bad object replaced with the one converted here "
                        "(remote_repaired counts them)", r->name, name);
            break;
        }
        case MFS_RB_TOO_LARGE:
            STAT_ADD(r, errors, 1); /* too large for this server: that object only */
            mfs_rc_once(r, &r->logged_big, "PUT", d, "such objects are not uploaded (logged once)");
            res = UP_NEVER;
            break;
        case MFS_RB_REFUSED:
            mfs_rc_uploads_refused(r, "PUT", d);
            res = UP_NEVER;
            break;
        case MFS_RB_STOPPED:
            mfs_rc_log(r, "remote cache: %s: PUT of %" PRIu64 " bytes cut short at exit", r->name,
                 total);
            break;
        default:
            mfs_rc_failed(r, &r->up, "PUT", d, pr.retry_after_s, pr.no_answer);
            break;
        }
    }
    snprintf(why, wn, "%s", d);
    mfs_cache_object_close(&o);
    return res;
}

/* ---- the owed list (owed.h) ---- */

/* Keeps an upload that was not sent on the owed list, within its bound;
 * what does not fit, or cannot be written, is dropped, said once and
 * counted.  1 owed, 0 not (no list, or dropped). */
int mfs_rc_owe(mfs_remote *r, const job *j)
{
    if (r->no_owed)
        return 0;
    mfs_owed_item it = {j->key, j->manifest, j->over};
    pthread_mutex_lock(&r->mu);
    int room = (r->owed_n + 1) * MFS_OWED_RECORD_BYTES <= r->owed_max;
    uint64_t n = r->owed_n;
    pthread_mutex_unlock(&r->mu);
    int rc = mfs_owed_put(r->c, &it, room);
    if (rc >= 0) {
        pthread_mutex_lock(&r->mu);
        r->owed_n += (uint64_t)rc;
        pthread_mutex_unlock(&r->mu);
        return 1;
    }
    char name[80], d[256];
    mfs_owed_name(&it, name, sizeof name);
    int *flag = &r->logged_owed_err;
    if (rc == -2) {
        flag = &r->logged_owed_full;
        snprintf(d, sizeof d, "the owed list is full (%" PRIu64 " records of %u B, "
                 "remote_owed_max %" PRIu64 " B)", n, MFS_OWED_RECORD_BYTES, r->owed_max);
    } else {
        snprintf(d, sizeof d, "the owed list cannot be written (%s)", strerror(errno));
    }
    pthread_mutex_lock(&r->mu);
    r->st.dropped++;
    pthread_mutex_unlock(&r->mu);
    STAT_ADD(r, owed_dropped, 1);
    char what[128];
    snprintf(what, sizeof what, "upload of %s dropped", name);
    mfs_rc_once(r, flag, what, d, "the server lacks it until a machine converts the model again "
         "(remote_owed_dropped counts them; logged once)");
    return 0;
}

/* An owed upload that came to res: its record goes when the object is on
 * the server, or when there is nothing left to send. */
static void owed_settle(mfs_remote *r, const job *j, int res, const char *why)
{
    if (res == UP_LATER || res == UP_NEVER) {
        /* the server's trouble ends the pass (the next when it answers
         * again); this entry's own (its record unreadable) only skips it */
        pthread_mutex_lock(&r->mu);
        if (res == UP_NEVER || r->read_only || mono_s() < r->up.until)
            r->olen = 0;
        pthread_mutex_unlock(&r->mu);
        return;
    }
    if (!mfs_owed_done(r->c, &j->key, j->manifest))
        return; /* sent by another process meanwhile */
    pthread_mutex_lock(&r->mu);
    r->owed_n -= r->owed_n > 0;
    r->owed_progress = 1;
    if (res == UP_GONE)
        r->st.dropped++;
    pthread_mutex_unlock(&r->mu);
    if (res == UP_SENT) {
        STAT_ADD(r, owed_sent, 1);
        return;
    }
    STAT_ADD(r, owed_dropped, 1);
    char name[80], what[128];
    mfs_owed_name(&(mfs_owed_item){j->key, j->manifest, j->over}, name, sizeof name);
    snprintf(what, sizeof what, "owed upload of %s dropped", name);
    mfs_rc_once(r, &r->logged_owed_gone, what, why,
         "(remote_owed_dropped counts them; logged once)");
}

/* The next owed upload for the thread to send, if a pass is due and the
 * uploads are not paused: 1 with *j.  Called with r->mu held; reads the
 * list without it. */
static int owed_next_locked(mfs_remote *r, job *j)
{
    if (r->onext >= r->olen) {
        r->olen = r->onext = 0;
        if (r->owed_progress) /* a batch sent: there may be more */
            r->owed_due = 1;
        r->owed_progress = 0;
        if (!r->owed_due || !r->owed_n || r->read_only || mono_s() < r->up.until)
            return 0;
        r->owed_due = 0;
        pthread_mutex_unlock(&r->mu);
        uint64_t total = 0;
        long n = mfs_owed_list(r->c, r->obatch, OWED_BATCH, &total);
        pthread_mutex_lock(&r->mu);
        if (n < 0)
            return 0;
        r->owed_n = total;
        r->olen = (size_t)n;
    }
    if (r->onext >= r->olen)
        return 0;
    const mfs_owed_item *it = &r->obatch[r->onext++];
    *j = (job){it->key, it->manifest, it->over, 1};
    return 1;
}

/* Waits for work: an upload queued, a pass due, or (owed uploads waiting
 * out a back-off) its end.  Called with r->mu held. */
static void wait_locked(mfs_remote *r)
{
    int64_t now = mono_s();
    if (r->owed_n && !r->read_only && now < r->up.until) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += r->up.until - now;
        if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
            r->owed_due = 1; /* the back-off is over: try the server again */
        return;
    }
    pthread_cond_wait(&r->cv, &r->mu);
}

static void *uploader(void *arg)
{
    mfs_remote *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        job j;
        if (r->qlen) {
            j = r->q[r->qhead];
            r->qhead = (r->qhead + 1) % MFS_REMOTE_QUEUE_CAP;
            r->qlen--;
        } else if (!owed_next_locked(r, &j)) {
            if (!r->stop)
                wait_locked(r);
            continue;
        }
        r->busy = 1;
        pthread_mutex_unlock(&r->mu);
        char why[512];
        int res = upload(r, &j, why, sizeof why);
        mfs_lease_uploaded(r->lease, &j.key, j.manifest); /* sent or not */
        if (j.owed)
            owed_settle(r, &j, res, why);
        else if (res == UP_LATER)
            mfs_rc_owe(r, &j);
        pthread_mutex_lock(&r->mu);
        r->unsent += !j.owed && (res == UP_LATER || res == UP_NEVER);
        if (!j.owed && res == UP_SENT && r->owed_n && !r->olen)
            r->owed_due = 1; /* the server takes uploads again */
        r->busy = 0;
        pthread_cond_broadcast(&r->cv); /* a drain may be waiting */
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

void mfs_rc_start_locked(mfs_remote *r)
{
    if (!r->started && !r->read_only)
        r->started = pthread_create(&r->thread, NULL, uploader, r) == 0 ? 1 : -1;
}

void mfs_remote_start(mfs_remote *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->owed_n)
        mfs_rc_start_locked(r);
    pthread_mutex_unlock(&r->mu);
}

void mfs_remote_enqueue(mfs_remote *r, const mfs_cache_key *k, int manifest, int over)
{
    if (!r)
        return;
    job j = {*k, manifest, over != 0, 0};
    pthread_mutex_lock(&r->mu);
    mfs_rc_start_locked(r);
    int full = 0;
    if (r->read_only || r->started != 1) {
        /* nothing */
    } else if (r->qlen == MFS_REMOTE_QUEUE_CAP) {
        full = 1;
    } else {
        r->q[(r->qhead + r->qlen) % MFS_REMOTE_QUEUE_CAP] = j;
        r->qlen++;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    if (full) { /* sent with the owed list, once the queue has room */
        mfs_rc_owe(r, &j);
        mfs_lease_uploaded(r->lease, &j.key, j.manifest); /* not now: others convert */
    }
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
    uint64_t owed = r->owed_n;
    r->reported = 1;
    pthread_mutex_unlock(&r->mu);
    if (left)
        mfs_rc_log(r, "remote cache: %s: %lu uploads not sent: still queued after %u s", r->name, unsent,
             timeout_s);
    else if (unsent)
        mfs_rc_log(r, "remote cache: %s: %lu uploads not sent (the errors above); the server lacks "
             "those objects", r->name, unsent);
    if (unsent && owed && !r->no_owed)
        mfs_rc_log(r, "remote cache: %s: %" PRIu64 " uploads owed in %s/" MFS_OWED_DIR
             "; `meshfs-cache --cache-dir %s push --remote URL` sends them", r->name, owed,
             mfs_cache_dir(r->c), mfs_cache_dir(r->c));
}

int mfs_remote_push(mfs_remote *r, mfs_remote_push_fn fn, void *ctx, mfs_remote_push_result *res,
                    mfs_err *err)
{
    memset(res, 0, sizeof *res);
    uint64_t total = 0;
    mfs_owed_item *all = NULL;
    long n = mfs_owed_list(r->c, NULL, 0, &total);
    if (n >= 0 && total) { /* a few more than counted: records made meanwhile wait */
        all = malloc((size_t)(total + 16) * sizeof *all);
        n = all ? mfs_owed_list(r->c, all, (size_t)total + 16, NULL) : -1;
    }
    if (n < 0) {
        free(all);
        return mfs_errf(err, "%s/%s: %s", mfs_cache_dir(r->c), MFS_OWED_DIR, strerror(errno));
    }
    for (long i = 0; i < n; i++) {
        job j = {all[i].key, all[i].manifest, all[i].over, 1};
        char why[512], name[80];
        mfs_owed_name(&all[i], name, sizeof name);
        int up = upload(r, &j, why, sizeof why);
        if ((up == UP_SENT || up == UP_GONE) && mfs_owed_done(r->c, &j.key, j.manifest)) {
            STAT_ADD(r, owed_sent, up == UP_SENT);
            STAT_ADD(r, owed_dropped, up == UP_GONE);
        }
        res->sent += up == UP_SENT;
        res->dropped += up == UP_GONE;
        res->not_sent += up == UP_LATER || up == UP_NEVER;
        fn(ctx, name, up == UP_SENT ? MFS_PUSH_SENT : up == UP_GONE ? MFS_PUSH_DROPPED
                                                                     : MFS_PUSH_NOT_SENT,
           up == UP_SENT ? NULL : why);
    }
    free(all);
    return 0;
}


/* The remote tier's client state, shared by its two halves (not part of
 * the contract, which is include/meshfs/remote.h):
 *
 *   tier.c     setup, reads (GET), the slow-server rule's questions
 *   common.c   the shared helpers below
 *   upload.c   the upload thread (HEAD, PUT), its queue and the owed
 *              list's passes, mfs_remote_push
 *
 * The server is reached only through the backend (r->be: meshfs/remote.h,
 * "the backend"), the local store only through meshfs/cache.h.
 *
 * Everything under mu is guarded by it; the rest is set at mfs_remote_new
 * and read-only after. */
#ifndef MESHFS_REMOTE_TIER_H
#define MESHFS_REMOTE_TIER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lease.h"
#include "meshfs/cache.h"
#include "meshfs/remote.h"
#include "owed.h"
#include "pace.h"

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
    int no_answer; /* the failure that began it had no answer (down, unreachable) */
} backoff;

typedef struct job {
    mfs_cache_key key;
    int manifest;
    int over; /* put even if the server has one (it was found bad) */
    int owed; /* taken from the owed list */
} job;

/* What one upload came to (upload()). */
enum { UP_SENT, UP_GONE, UP_LATER, UP_NEVER };

/* Owed records read into memory for one pass of the upload thread. */
#define OWED_BATCH 64

struct mfs_remote {
    mfs_cache *c;
    mfs_remote_backend be;
    char *name;  /* the url without user:password@: what log lines show */
    unsigned data_timeout_s;
    uint64_t view_max; /* the largest view a conversion may write; 0: none */
    int read_only;
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;

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
    /* the owed list (owed.h) */
    uint64_t owed_max;
    int no_owed;
    uint64_t owed_n;  /* records on the list, as last counted */
    int owed_due;     /* a pass over it is wanted: the server answers */
    int owed_progress; /* the pass now running removed a record */
    mfs_owed_item obatch[OWED_BATCH];
    size_t onext, olen;
    int logged_owed_full, logged_owed_gone, logged_owed_err;
    mfs_pace pace; /* the server's throughput, from downloads */
    int logged_slower, logged_slow;
    int logged_bad, logged_repair, logged_ro, logged_down, logged_get, logged_big, logged_huge, logged_room;
    mfs_remote_stats st;
};

/* The session's counter and the cache's persisted one (the stats file,
 * meshfs-cache stats) */
#define STAT_ADD(r, f, v)                             \
    do {                                              \
        pthread_mutex_lock(&(r)->mu);                 \
        (r)->st.f += (v);                             \
        pthread_mutex_unlock(&(r)->mu);               \
        mfs_cache_stat_add((r)->c, offsetof(mfs_cache_stats, remote_##f), (v)); \
    } while (0)
static inline int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}


/* Whether direction d may ask the server now (not backing off). */
static inline int available(mfs_remote *r, const backoff *d)
{
    pthread_mutex_lock(&r->mu);
    int ok = mono_s() >= d->until;
    pthread_mutex_unlock(&r->mu);
    return ok;
}
/* common.c: shared by both halves */
__attribute__((format(printf, 2, 3))) void mfs_rc_log(mfs_remote *r, const char *fmt, ...);
/* A failure in direction d: back off. */
void mfs_rc_failed(mfs_remote *r, backoff *d, const char *what, const char *detail,
                   unsigned at_least_s, int no_answer);
void mfs_rc_succeeded(mfs_remote *r, backoff *d);
/* Logs once per session (*flag) that the server answered what with d. */
void mfs_rc_once(mfs_remote *r, int *flag, const char *what, const char *d, const char *then);
void mfs_rc_uploads_refused(mfs_remote *r, const char *what, const char *d);
/* The object's name on the server, "v2/view/3f/<30 hex>" (or manifest). */
void mfs_rc_object_name(const mfs_cache_key *k, int manifest, char *out, size_t n);

/* upload.c: the upload thread, made on first use (none may exist
 * before the daemon detaches: fuse_daemonize forks); called with r->mu
 * held.  And an upload that was not sent kept on the owed list: 1 owed,
 * 0 not (no list, or dropped: said and counted). */
void mfs_rc_start_locked(mfs_remote *r);
int mfs_rc_owe(mfs_remote *r, const job *j);

#endif

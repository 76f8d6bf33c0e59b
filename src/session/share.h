/* Each user's share of the FUSE request threads (share.c; docs/security.md,
 * "Request threads").
 *
 * A request that may wait on something a user controls (a view's
 * conversion, a lease on its inputs: lowlevel.c says which requests) runs
 * on one of the mount's request threads; without a bound, one user's
 * requests could hold them all and stall everyone else's.  Here a user
 * (the requester's uid) runs at most `cap` of them at once; the next ones
 * are queued, and the thread that finishes one of that user's requests
 * runs the user's next queued one before it goes back to the kernel.  So a
 * queued request holds no thread, a user never holds more than `cap`, and
 * a user's own requests keep their order of arrival past the cap. */
#ifndef MESHFS_FS_SHARE_H
#define MESHFS_FS_SHARE_H

#include <stdint.h>
#include <sys/types.h>

typedef struct mfs_share mfs_share;

/* One request, allocated by the caller.  run() does the request, answers
 * the kernel and frees the job; it may run on another request thread,
 * later, so everything it needs is in the job (no pointer into the
 * libfuse callback's own arguments). */
typedef struct mfs_share_job {
    struct mfs_share_job *next; /* share.c's */
    uid_t uid;
    void (*run)(struct mfs_share_job *job);
} mfs_share_job;

/* cap: requests one user runs at once (at least 1).  NULL out of memory. */
mfs_share *mfs_share_new(unsigned cap);

/* After the request threads are gone (each drains its user's queue before
 * it returns, so nothing is queued by then). */
void mfs_share_free(mfs_share *s);

/* Runs job now, on this thread, if its user has a free slot, and then any
 * of that user's requests queued meanwhile; else queues it and returns at
 * once.  Never fails: a user the table cannot record (out of memory) runs
 * unbounded rather than not at all. */
void mfs_share_run(mfs_share *s, mfs_share_job *job);

unsigned mfs_share_cap(const mfs_share *s);

/* Requests that were queued behind their user's share, since the mount
 * began (stats xattr: share_queued). */
uint64_t mfs_share_queued(mfs_share *s);

#endif

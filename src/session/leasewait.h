/* Opens that wait for a file lease, off the request threads (leasewait.c;
 * docs/security.md, "Request threads").
 *
 * A plain file's owner can hold a lease on it (fcntl F_SETLEASE); a
 * blocking open() by anyone else then waits until the holder lets go or
 * /proc/sys/fs/lease-break-time (45 s) runs out.  The daemon opens with
 * O_NONBLOCK instead: the kernel starts the lease break all the same and
 * answers EWOULDBLOCK, and the request is handed here.  One thread tries
 * each waiting request again (O_NONBLOCK still) at growing intervals, 10
 * to 100 ms, until it opens, and answers the kernel from there: the
 * reader's process waits for the holder as on a local disk, and no request
 * thread does.  A retry also lets the kernel time the lease out once the
 * break time is over (it does so only when someone opens).  A retry must
 * not wait itself (every waiting request shares the thread): one that
 * would (a view's open, which may convert) is handed on to a thread of
 * its own (mfs_leasewait_hand_begin). */
#ifndef MESHFS_FS_LEASEWAIT_H
#define MESHFS_FS_LEASEWAIT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct mfs_leasewait mfs_leasewait;

/* One waiting request, allocated by the caller. */
typedef struct mfs_leasewait_entry {
    struct mfs_leasewait_entry *next; /* leasewait.c's */
    struct timespec due;              /* leasewait.c's */
    unsigned delay_ms;                /* leasewait.c's */
    /* Tries the request again: 1 if still under a lease (tried again
     * later), 0 once answered (the entry is freed by it).  With stopping
     * set (the mount ends), answers at once with an error and frees. */
    int (*again)(struct mfs_leasewait_entry *e, int stopping);
} mfs_leasewait_entry;

/* Starts the waiting thread.  NULL if it cannot. */
mfs_leasewait *mfs_leasewait_new(void);

/* Stops the thread, waits for the requests it handed on, then answers
 * each request still waiting (stopping). */
void mfs_leasewait_free(mfs_leasewait *w);

/* The request's first try found a lease (EWOULDBLOCK): it is tried again
 * from the waiting thread. */
void mfs_leasewait_add(mfs_leasewait *w, mfs_leasewait_entry *e);

/* A request the waiter handed on to a thread of its own (an open that may
 * convert): begun before the thread starts, ended by it as it ends.
 * mfs_leasewait_free waits until every one has ended. */
void mfs_leasewait_hand_begin(mfs_leasewait *w);
void mfs_leasewait_hand_end(mfs_leasewait *w);

/* Requests handed over since the mount began, and waiting now (stats
 * xattr: lease_waits, lease_waiting). */
void mfs_leasewait_counts(mfs_leasewait *w, uint64_t *total, size_t *now);

#endif

/* Handles the kernel holds (held.c): a file or listing still open when the
 * mount ends gets no RELEASE, so ops.c and listing.c keep theirs on a list
 * and free what is left after the session loop.  The link is the first
 * member of the handle, so a link is its handle. */
#ifndef MESHFS_FS_HELD_H
#define MESHFS_FS_HELD_H

#include <pthread.h>

typedef struct mfs_held {
    struct mfs_held *prev, *next;
} mfs_held;

typedef struct mfs_held_list {
    pthread_mutex_t lock;
    mfs_held *head;
} mfs_held_list;

#define MFS_HELD_LIST_INIT {PTHREAD_MUTEX_INITIALIZER, NULL}

void mfs_held_add(mfs_held_list *l, mfs_held *n);
void mfs_held_remove(mfs_held_list *l, mfs_held *n);

/* Calls fn on each handle, under the list's lock (so none is freed
 * meanwhile), until one returns nonzero; returns that, or 0. */
int mfs_held_visit(mfs_held_list *l, int (*fn)(mfs_held *, void *), void *arg);

/* Frees every handle still on the list with free_one; the list is left
 * empty. */
void mfs_held_free_all(mfs_held_list *l, void (*free_one)(mfs_held *));

#endif

/* A view moves to a new kernel inode (docs/coherence.md, B1).
 *
 * The kernel keeps one size, one page cache and, with passthrough, one
 * backing file per inode, and handles open on a view need the entry they
 * opened.  So when a view's model changes while handles on the old view
 * are open, the new view is given a new inode, as a file saved by rename
 * is on any file system: the name moves to a new node id, the old node
 * stays with its handles and keeps answering with their entry's
 * attributes until the kernel forgets it.  This happens at the first
 * moment the kernel asks by name (a LOOKUP, a readdirplus entry) or, when
 * its cached entry still points at the old inode, at the OPEN, which is
 * answered ESTALE so that the kernel looks the name up again. */
#include <pthread.h>
#include <stdatomic.h>

#include "coherence.h"
#include "lowlevel.h"

/* One move at a time, and the node before the record: a GETATTR of the old
 * node that reads the record after it went finds the node detached, with
 * the old entry's attributes kept (lowlevel.c looks again), so the new
 * entry's attributes never reach the old inode, whose handles need theirs. */
static pthread_mutex_t moving = PTHREAD_MUTEX_INITIALIZER;

static void move(const char *path, uint64_t node, const struct stat *served)
{
    mfs_ll_renew(path, node, served);
    mfs_kview_detach(path);
}

void mfs_renew_view(mfs_fs *fs, const char *path, uint64_t node)
{
    struct stat served;
    pthread_mutex_lock(&moving);
    int held = mfs_kview_held(path, NULL, &served);
    move(path, node, held ? &served : NULL);
    pthread_mutex_unlock(&moving);
    atomic_fetch_add(&fs->stats.views_renewed, 1);
}

void mfs_renew_named_attr(mfs_fs *fs, const char *path, struct stat *st)
{
    struct stat served;
    pthread_mutex_lock(&moving);
    int renew = mfs_kview_held(path, st, &served);
    if (renew)
        move(path, 0, &served);
    mfs_kview_attr(path, st);
    pthread_mutex_unlock(&moving);
    if (renew)
        atomic_fetch_add(&fs->stats.views_renewed, 1);
}

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
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "coherence.h"

/* co->moving: one move at a time, and no open deciding while one happens.
 * The node moves before the record: a GETATTR of the old node that reads
 * the record after it went finds the node detached, with the old entry's
 * attributes kept (lowlevel.c looks again), so the new entry's attributes
 * never reach the old inode, whose handles need theirs.  Held across
 * passthrough.c's lock and kview.c's (mount.h, lock order). */

static int move(mfs_coherence *co, const char *path, uint64_t node, const struct stat *served)
{
    if (!co->renew || !co->renew(co->ctx, path, node, served))
        return 0;
    mfs_kview_detach(co->kviews, path);
    atomic_fetch_add(&co->views_renewed, 1);
    return 1;
}

int mfs_renew_open_begin(mfs_coherence *co, uint64_t node, mfs_err *err)
{
    pthread_mutex_lock(&co->moving);
    if (co->node_current && co->node_current(co->ctx, node))
        return 0;
    pthread_mutex_unlock(&co->moving);
    return mfs_err_sys(err, ESTALE, "node %llu moved on", (unsigned long long)node);
}

void mfs_renew_open_end(mfs_coherence *co)
{
    pthread_mutex_unlock(&co->moving);
}

void mfs_renew_view(mfs_coherence *co, const char *path, uint64_t node)
{
    struct stat served;
    int held = mfs_kview_held(co->kviews, path, NULL, NULL, &served);
    move(co, path, node, held ? &served : NULL);
}

void mfs_renew_named_attr(mfs_coherence *co, const char *path, const uint8_t id[16], struct stat *st)
{
    struct stat served;
    /* the common case, no handles on another entry: one lock, not the
     * moving one (a move in progress detaches the node before the record,
     * so a record found without handles means the name's node is new) */
    if (!mfs_kview_named(co->kviews, path, id, st, &served))
        return;
    pthread_mutex_lock(&co->moving);
    if (mfs_kview_named(co->kviews, path, id, st, &served)) {
        move(co, path, 0, &served);
        mfs_kview_attr(co->kviews, path, st);
    }
    pthread_mutex_unlock(&co->moving);
}

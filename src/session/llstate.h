/* The session's state (fs->ll) and what the session's files ask of it
 * outside a request (llstate.c): the node table's answers, the kernel's
 * device and invalidations.  lowlevel.c makes and handles the requests;
 * dirreply.c, passthrough.c and files.c call down here, never back up
 * into it. */
#ifndef MESHFS_SESSION_LLSTATE_H
#define MESHFS_SESSION_LLSTATE_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../mount/mount.h"
#include "nodes.h"

/* The session's state, one per mount (fs->ll); every request reaches it
 * through the session's userdata, the mount's mfs_fs. */
struct mfs_ll {
    mfs_nodes *nodes;
    struct fuse_session *session; /* from mfs_ll_start to mfs_ll_stop */
    double entry_timeout, attr_timeout, negative_timeout;
    pthread_t pruner;
    int pruner_running, pruner_stop, pruner_wake; /* under pruner_lock */
    pthread_mutex_t pruner_lock;
    pthread_cond_t pruner_cond;
    /* LOOKUPs, GETATTRs and OPENs begun: each may tell the kernel a view's
     * attributes, or record what it holds (kview.c), which a listing reply
     * filled before it must not then overwrite (dirreply.c). */
    atomic_uint_least64_t tells;
};

/* The session's device descriptor (passthrough's backing ids); -1 before
 * mfs_ll_start. */
int mfs_ll_session_fd(mfs_fs *fs);

/* The view at path moves to a new kernel inode: its node (`node`, or the
 * node its name has now when 0) leaves the name index, so the name's next
 * LOOKUP makes a new one, and answers GETATTR with `kept` (if not NULL:
 * the attributes of the entry its open handles read) until the kernel
 * forgets it.  Called before the reply that makes the kernel look again
 * (an OPEN's ESTALE, a LOOKUP's new id).  1 if it moved now; 0 if it had
 * already (or there is no such node). */
int mfs_ll_renew(mfs_fs *fs, const char *path, uint64_t node, const struct stat *kept);

/* Whether node is still its name's (not moved off by mfs_ll_renew). */
int mfs_ll_node_current(mfs_fs *fs, uint64_t node);

/* Tells the kernel to drop its cached attributes and pages of node id
 * (kview.c's "invalidate" before an open is answered). */
void mfs_ll_invalidate_node(mfs_fs *fs, uint64_t node);

/* LOOKUP, GETATTR and OPEN requests begun so far (dirreply.c). */
uint64_t mfs_ll_tells(mfs_fs *fs);

/* The node table's counters (stats xattr). */
void mfs_ll_nodes_stats(mfs_fs *fs, mfs_nodes_stats *s);

#endif

/* What the session's other files ask of its state (fs->ll, llstate.h)
 * outside a request: the node table's answers (is a node its name's, move
 * a view's name to a new node), the kernel's device and invalidations, and
 * the count of requests that may tell the kernel a view's attributes.
 * Apart from lowlevel.c, which handles the requests and calls into
 * dirreply.c, passthrough.c and files.c, so that those call down here
 * rather than back up into it. */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <string.h>

#include "../mount/mount.h"
#include "llstate.h"
#include "nodes.h"

uint64_t mfs_ll_tells(mfs_fs *fs)
{
    return atomic_load(&fs->ll->tells);
}

int mfs_ll_session_fd(mfs_fs *fs)
{
    return fs->ll && fs->ll->session ? fuse_session_fd(fs->ll->session) : -1;
}

int mfs_ll_renew(mfs_fs *fs, const char *path, uint64_t node, const struct stat *kept)
{
    mfs_nodes *nodes = fs->ll ? fs->ll->nodes : NULL;
    if (!nodes)
        return 0;
    if (!node)
        node = mfs_nodes_find(nodes, path);
    return node && mfs_nodes_detach(nodes, node, kept) == 1;
}

int mfs_ll_node_current(mfs_fs *fs, uint64_t node)
{
    return fs->ll && fs->ll->nodes && !mfs_nodes_is_detached(fs->ll->nodes, node);
}

void mfs_ll_invalidate_node(mfs_fs *fs, uint64_t node)
{
    if (fs->ll && fs->ll->session)
        fuse_lowlevel_notify_inval_inode(fs->ll->session, node, 0, 0);
}

void mfs_ll_nodes_stats(mfs_fs *fs, mfs_nodes_stats *s)
{
    if (fs->ll && fs->ll->nodes)
        mfs_nodes_get_stats(fs->ll->nodes, s);
    else
        memset(s, 0, sizeof *s);
}

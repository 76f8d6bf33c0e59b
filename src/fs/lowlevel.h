/* The low-level FUSE session's operations (lowlevel.c): node ids to mount
 * paths, lookup counts, and the bound on the inodes the kernel holds. */
#ifndef MESHFS_FS_LOWLEVEL_H
#define MESHFS_FS_LOWLEVEL_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs.h"
#include "nodes.h"

extern const struct fuse_lowlevel_ops mfs_ll_ops;

/* Before the session: the session layer's state for fs (fs->ll, replies,
 * listings, pt, files; kviews and pins come with the mount's), with the files whose inodes the kernel may hold
 * (nodes.h) and the kernel's cache times (-o entry_timeout, attr_timeout,
 * negative_timeout).  The session is then made with fs as its userdata:
 * every request finds the mount there (fuse_req_userdata), and nothing
 * keeps a process-wide copy.  0 or -1 (out of memory; mfs_ll_teardown
 * frees what was made). */
int mfs_ll_setup(mfs_fs *fs, size_t max_inodes, double entry_timeout, double attr_timeout,
                 double negative_timeout);
void mfs_ll_teardown(mfs_fs *fs);

/* Once mounted, with the session's number of request threads: starts the
 * thread that tells the kernel to drop entries beyond the cap, each user's
 * share of the request threads (share.h: a 1/MFS_LL_SHARE_DIVISOR part,
 * at least 1) and the waiter for opens under a lease (leasewait.h);
 * mfs_ll_stop ends them, after the request threads and before the session
 * goes.  0 or -1. */
#define MFS_LL_SHARE_DIVISOR 4
int mfs_ll_start(mfs_fs *fs, struct fuse_session *se, unsigned threads);
void mfs_ll_stop(mfs_fs *fs);

/* " share_cap=N share_queued=N lease_waits=N lease_waiting=N" (the stats
 * xattr; docs/security.md, "Request threads"); snprintf's return. */
int mfs_ll_share_text(mfs_fs *fs, char *buf, size_t n);

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

/* The low-level FUSE session's operations (lowlevel.c): node ids to mount
 * paths, lookup counts, and the bound on the inodes the kernel holds.
 *
 * src/session/ is the top of the daemon: nothing calls into it, so it has
 * no face, and its headers (this one, llstate.h, nodes.h, dirreply.h,
 * listing.h, files.h, passthrough.h, held.h, share.h, leasewait.h,
 * unmount_guard.h, optsuggest.h) are for its own files, one a file's
 * contract.  Errors: what answers a request is -errno, as libfuse's
 * replies take it (fuse_reply_err), made from what the mount hands up
 * (src/mount/mount.h); setup and start answer 0 or -1. */
#ifndef MESHFS_FS_LOWLEVEL_H
#define MESHFS_FS_LOWLEVEL_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../mount/mount.h"
#include "llstate.h"
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

#endif

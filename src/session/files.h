/* The open files' handles of one mount (files.c): what an OPEN hands the
 * kernel, READ and RELEASE on it.  Session code: it speaks libfuse. */
#ifndef MESHFS_FS_FILES_H
#define MESHFS_FS_FILES_H
#define FUSE_USE_VERSION 314
#include <fuse.h>

#include "../mount/mount.h"

/* The open files' handles of one mount (fs->files).  NULL: no memory. */
mfs_files *mfs_files_new(void);
void mfs_files_free(mfs_files *f);

/* OPEN of the file at path, whose kernel inode is node id `node`: 0 with
 * fi filled (fh, and how the kernel is to read it), or -errno.  -ESTALE:
 * the view's model changed while that inode holds the old view for open
 * handles (its size and pages, or with passthrough its backing file, which
 * fails every other open of the inode), so the view moved to a new inode
 * (mfs_ll_renew) and the kernel, told ESTALE, looks the name up again and
 * opens that (docs/coherence.md, B1).  retry: this OPEN is the kernel's
 * retry of one answered ESTALE (mfs_nodes_retry_of); it is then served the
 * entry the moved inode's handles read rather than refused again.
 * MFS_OPS_LEASED (mount.h): nothing was opened and fi is untouched; the
 * caller asks again later, from outside the request threads. */
int mfs_files_open(mfs_fs *fs, const char *path, uint64_t node, int retry,
                   struct fuse_file_info *fi);

/* GETATTR of path: through an open handle fi if not NULL (a view's
 * answers for the entry it serves), else mfs_ops_getattr; pre (may be
 * NULL) is used only without fi. */
int mfs_files_getattr(mfs_fs *fs, const char *path, struct stat *st, struct fuse_file_info *fi,
                      const mfs_ops_prestat *pre);

/* READ of an open handle: a descriptor range, so libfuse can splice. */
int mfs_files_read_buf(mfs_fs *fs, struct fuse_bufvec **bufp, size_t size, off_t off,
                       struct fuse_file_info *fi);
/* RELEASE of an open handle (also for an OPEN whose reply failed). */
void mfs_files_release(mfs_fs *fs, struct fuse_file_info *fi);

/* After the session loop: frees the handles of files still open when the
 * mount ended (the kernel sends no RELEASE for them). */
void mfs_files_close_all(mfs_fs *fs);

/* From the session's init: what meshfs asks of the kernel. */
void mfs_files_init(mfs_fs *fs, struct fuse_conn_info *conn);

#endif

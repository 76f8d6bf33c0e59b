#ifndef MESHFS_FS_OPS_H
#define MESHFS_FS_OPS_H
#define FUSE_USE_VERSION 314
#include <fuse.h>
#include <limits.h>
#include <sys/statvfs.h>
#include "fs.h"

/* The operations on mount paths ("/a/b") of mount fs; lowlevel.c calls
 * them with the path of each request's node and the mount from the
 * session's userdata.  Each answers 0 (or a length) or -errno.  The write
 * operations are lowlevel.c's (EROFS); the directory ones listing.c's. */
int mfs_ops_readlink(mfs_fs *fs, const char *path, char *buf, size_t size);
int mfs_ops_statfs(mfs_fs *fs, struct statvfs *sv);
int mfs_ops_getxattr(mfs_fs *fs, const char *path, const char *name, char *value, size_t size);
int mfs_ops_listxattr(mfs_fs *fs, const char *path, char *list, size_t size);
/* READ of an open handle: a descriptor range, so libfuse can splice. */
int mfs_ops_read_buf(mfs_fs *fs, struct fuse_bufvec **bufp, size_t size, off_t off,
                     struct fuse_file_info *fi);
/* RELEASE of an open handle (also for an OPEN whose reply failed). */
void mfs_ops_release(mfs_fs *fs, struct fuse_file_info *fi);

/* The open files' handles of one mount (fs->files).  NULL: no memory. */
mfs_files *mfs_ops_files_new(void);
void mfs_ops_files_free(mfs_files *f);

/* OPEN of the file at path, whose kernel inode is node id `node`: 0 with
 * fi filled (fh, and how the kernel is to read it), or -errno.  -ESTALE:
 * the view's model changed while that inode holds the old view for open
 * handles (its size and pages, or with passthrough its backing file, which
 * fails every other open of the inode), so the view moved to a new inode
 * (mfs_ll_renew) and the kernel, told ESTALE, looks the name up again and
 * opens that (docs/coherence.md, B1).  retry: this OPEN is the kernel's
 * retry of one answered ESTALE (mfs_nodes_retry_of); it is then served the
 * entry the moved inode's handles read rather than refused again.
 * MFS_OPS_LEASED: a plain file, or a view's model, under another
 * process's lease (leasewait.h):
 * nothing was opened and fi is untouched; the caller asks again later,
 * from outside the request threads, until it answers otherwise. */
#define MFS_OPS_LEASED 1
int mfs_ops_open(mfs_fs *fs, const char *path, uint64_t node, int retry,
                 struct fuse_file_info *fi);

/* For an open answered MFS_OPS_LEASED: whether the file at path, or the
 * model of the view at path, is still under a lease (an O_NONBLOCK open
 * of it answers EWOULDBLOCK).  Converts nothing, waits for nothing. */
int mfs_ops_leased(mfs_fs *fs, const char *path);

/* A stat of a request's SRC path taken before the request ran (lowlevel.c
 * takes one to tell a view from a file of SRC): LOOKUP and GETATTR answer
 * from it rather than stat the path a second time.  An answer as of a
 * moment after the request came, so as true as one taken later. */
typedef struct mfs_ops_prestat {
    int known;
    int rc;                 /* 0, or -errno */
    struct stat st;
    char rel[PATH_MAX];     /* the SRC-relative path it is of */
} mfs_ops_prestat;

/* LOOKUP of path: its attributes, 0 or -errno, as GETATTR; a view whose
 * inode holds an older entry for open handles moves to a new one first
 * (mfs_ll_renew), so the path shows the new entry and the handles keep
 * the old. */
int mfs_ops_lookup(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre);

/* GETATTR of path: through an open handle fi if not NULL (a view's
 * answers for the entry it serves), else as LOOKUP without the move;
 * pre (may be NULL) is used only without fi. */
int mfs_ops_getattr(mfs_fs *fs, const char *path, struct stat *st, struct fuse_file_info *fi,
                    const mfs_ops_prestat *pre);

/* After the session loop: frees the handles of files still open when the
 * mount ended (the kernel sends no RELEASE for them). */
void mfs_ops_close_all(mfs_fs *fs);

/* From the session's init: what meshfs asks of the kernel. */
void mfs_ops_init(mfs_fs *fs, struct fuse_conn_info *conn);

/* The one place a mount path becomes SRC-relative (ops.c): the real path,
 * in a per-thread buffer valid until this thread's next call; NULL with
 * errno set when the path shows nothing (-o lowercase_names). */
const char *mfs_ops_rel(mfs_fs *fs, const char *path);
#endif

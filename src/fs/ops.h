#ifndef MESHFS_FS_OPS_H
#define MESHFS_FS_OPS_H
#define FUSE_USE_VERSION 314
#include <fuse.h>
#include "fs.h"

/* The operations on mount paths ("/a/b"), as libfuse's high-level API
 * shapes them; lowlevel.c calls them with the path of each request's node.
 * The write operations are lowlevel.c's (EROFS). */
extern const struct fuse_operations mfs_fuse_ops;

/* The one filesystem the operations serve (set by mfs_ll_setup). */
extern mfs_fs *mfs_ops_fs;

/* After the session loop: frees the handles of files still open when the
 * mount ended (the kernel sends no RELEASE for them). */
void mfs_ops_close_all(void);

/* From the session's init: what meshfs asks of the kernel. */
void mfs_ops_init(struct fuse_conn_info *conn);

/* The one place a mount path becomes SRC-relative (ops.c): the real path,
 * in a per-thread buffer valid until this thread's next call; NULL with
 * errno set when the path shows nothing (-o lowercase_names). */
const char *mfs_ops_rel(const char *path);
#endif

#ifndef MESHFS_FS_OPS_H
#define MESHFS_FS_OPS_H
#define FUSE_USE_VERSION 314
#include <fuse.h>
extern const struct fuse_operations mfs_fuse_ops;

/* The one place a mount path becomes SRC-relative (ops.c): the real path,
 * in a per-thread buffer valid until this thread's next call; NULL with
 * errno set when the path shows nothing (-o lowercase_names). */
const char *mfs_ops_rel(const char *path);
#endif

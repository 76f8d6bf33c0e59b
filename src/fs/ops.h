#ifndef MESHFS_FS_OPS_H
#define MESHFS_FS_OPS_H
#define FUSE_USE_VERSION 314
#include <fuse.h>
extern const struct fuse_operations mfs_fuse_ops;
#endif

#ifndef MESHFS_FS_OPS_H
#define MESHFS_FS_OPS_H
#include <stdint.h>
#include <limits.h>
#include <sys/statvfs.h>
#include "fs.h"

/* The operations on mount paths ("/a/b") of mount fs; lowlevel.c calls
 * them with the path of each request's node and the mount from the
 * session's userdata.  Each answers 0 (or a length) or -errno: this is
 * the one place -errno crosses into the session.  The write operations
 * are lowlevel.c's (EROFS); the directory ones listing.c's; the open
 * handles files.c's.  No libfuse type here. */
int mfs_ops_readlink(mfs_fs *fs, const char *path, char *buf, size_t size);
int mfs_ops_statfs(mfs_fs *fs, struct statvfs *sv);
int mfs_ops_getxattr(mfs_fs *fs, const char *path, const char *name, char *value, size_t size);
int mfs_ops_listxattr(mfs_fs *fs, const char *path, char *list, size_t size);
/* OPEN of the file at path (lowlevel.c's mfs_files_open makes the
 * kernel's handle of it): 0 with *out filled (a descriptor of the caller's
 * own: a plain file of SRC, or a view's entry with its payload's range,
 * the attributes of exactly those bytes and the entry's key), or -errno.
 * MFS_OPS_LEASED: a plain file, or a view's model, under another
 * process's lease (leasewait.h): nothing was opened; the caller asks
 * again later, from outside the request threads, until it answers
 * otherwise.  Write access is refused before (EROFS). */
#define MFS_OPS_LEASED 1
typedef struct mfs_ops_opened {
    int is_view;
    int fd;
    uint64_t offset, length; /* a view's payload within fd */
    struct stat st;          /* a view: the attributes of the entry it serves */
    uint8_t key[16];         /* a view: its entry's key */
} mfs_ops_opened;
int mfs_ops_open_path(mfs_fs *fs, const char *path, mfs_ops_opened *out);

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
 * (fs->session->renew, renew.c), so the path shows the new entry and the handles keep
 * the old. */
int mfs_ops_lookup(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre);

/* GETATTR of path by name, as LOOKUP without the move (a GETATTR through
 * an open handle is files.c's); pre may be NULL. */
int mfs_ops_getattr(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre);

/* The one place a mount path becomes SRC-relative (ops.c): the real path,
 * in a per-thread buffer valid until this thread's next call; NULL with
 * errno set when the path shows nothing (-o lowercase_names). */
const char *mfs_ops_rel(mfs_fs *fs, const char *path);
#endif

/* Listings: the FUSE directory operations (listing.c; docs/listing.md).
 * dirreply.c calls them around its replies. */
#ifndef MESHFS_FS_LISTING_H
#define MESHFS_FS_LISTING_H

#define FUSE_USE_VERSION 314
#include <fuse.h>
#include <stdint.h>

#include "../mount/mount.h"

/* The listings' state of one mount (fs->listings), made before the
 * session.  keep_s: how long the kernel may keep a folder's listing after
 * the daemon listed it: the shorter of the entry and attribute timeouts
 * the listing's entries were sent with (default 1 s).  NULL: no memory. */
mfs_listings *mfs_listing_new(double keep_s);
void mfs_listing_free(mfs_listings *l);

int mfs_listing_opendir(mfs_fs *fs, const char *path, struct fuse_file_info *fi);
int mfs_listing_readdir(mfs_fs *fs, const char *path, void *buf, fuse_fill_dir_t filler,
                        off_t off, struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int mfs_listing_releasedir(mfs_fs *fs, struct fuse_file_info *fi);

/* After the session loop: frees the listings still open when the mount
 * ended (the kernel sends no RELEASEDIR for them). */
void mfs_listing_close_all(mfs_fs *fs);

/* Listings open now, and the names their handles hold (stats xattr). */
void mfs_listing_counts(mfs_fs *fs, uint64_t *handles, uint64_t *names);

#endif

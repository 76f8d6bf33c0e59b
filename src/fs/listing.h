/* Listings: the FUSE directory operations (listing.c; docs/listing.md).
 * ops.c puts them in its operation table. */
#ifndef MESHFS_FS_LISTING_H
#define MESHFS_FS_LISTING_H

#define FUSE_USE_VERSION 314
#include <fuse.h>
#include <stdint.h>

/* How long the kernel may keep a folder's listing after the daemon listed
 * it: the shorter of the entry and attribute timeouts the listing's
 * entries were sent with (default 1 s). */
void mfs_listing_setup(double keep_s);

int mfs_listing_opendir(const char *path, struct fuse_file_info *fi);
int mfs_listing_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                        struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int mfs_listing_releasedir(const char *path, struct fuse_file_info *fi);

/* After the session loop: frees the listings still open when the mount
 * ended (the kernel sends no RELEASEDIR for them). */
void mfs_listing_close_all(void);

/* Listings open now, and the names their handles hold (stats xattr). */
void mfs_listing_counts(uint64_t *handles, uint64_t *names);

#endif

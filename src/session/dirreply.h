/* READDIR(PLUS) replies (dirreply.c): each filled by the listing
 * (listing.c) into a buffer of the kernel's size, with a lookup counted
 * for every entry sent with attributes; and with readdirplus the next
 * reply of a listing built while the kernel takes in the last one
 * (docs/listing.md, "Replies built ahead"). */
#ifndef MESHFS_FS_DIRREPLY_H
#define MESHFS_FS_DIRREPLY_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "nodes.h"

#include "../mount/mount.h"

/* Before the session (fs->replies): the node table entries' lookups are
 * counted in, the kernel's cache times, and what to call when a reply gave
 * lookups (the pruner's wake-up).  NULL: out of memory. */
mfs_dirreplies *mfs_dirreply_new(mfs_nodes *nodes, double entry_timeout, double attr_timeout,
                                 void (*gave)(mfs_fs *));
void mfs_dirreply_free(mfs_dirreplies *d);

/* OPENDIR through the listing (listing.h); fi->fh becomes this layer's
 * handle around the listing's.  0 or -errno. */
int mfs_dirreply_opendir(mfs_fs *fs, const char *path, struct fuse_file_info *fi);

/* Answers one READDIR (plus 0) or READDIRPLUS (1) of the folder at path. */
void mfs_dirreply_readdir(mfs_fs *fs, fuse_req_t req, fuse_ino_t ino, const char *path,
                          size_t size, off_t off, struct fuse_file_info *fi, int plus);

/* RELEASEDIR: waits for a reply being built ahead, takes back the lookups
 * of one never sent, and releases the listing's handle. */
void mfs_dirreply_releasedir(mfs_fs *fs, struct fuse_file_info *fi);

/* After the session loop: handles the kernel never released. */
void mfs_dirreply_close_all(mfs_fs *fs);

/* Counters for the stats xattr: replies sent that had been built ahead,
 * those built ahead but dropped (the next request asked for another
 * offset or size, something newer may have reached the kernel meanwhile,
 * or the listing ended), and those built and waiting now. */
void mfs_dirreply_counts(mfs_fs *fs, uint64_t *ahead_sent, uint64_t *ahead_dropped, uint64_t *ahead_waiting);

#endif

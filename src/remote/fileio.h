/* Whole-buffer file I/O for the remote tier's own files (the owed list,
 * the token file, a download being written): the store's helpers are its
 * own, and remote/ reaches the store only through meshfs/cache.h. */
#ifndef MESHFS_REMOTE_FILEIO_H
#define MESHFS_REMOTE_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* 0, or the errno of a failed write (EINTR retried). */
int mfs_rio_pwrite_full(int fd, const void *p, size_t n, uint64_t off);
/* The bytes read (short only at end of file), or -errno. */
int64_t mfs_rio_pread_full(int fd, void *p, size_t n, uint64_t off);

#endif

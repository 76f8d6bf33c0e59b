/* The cap stored in the cache folder, as ccache's max_size (cache.h, "managing a cache directory").
 *
 * A file "max_size" holding "max_size BYTES\n" (0: no cap), written by
 * `meshfs-cache max-size` through a temporary name and rename, so a reader
 * sees the old cap or the new one.  Every process that opens the cache
 * without a cap of its own (-o cache_size=) takes it: mounts,
 * meshfs-convert, and warm. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "meshfs/cache.h"

int mfs_cache_max_size_read_at(int dirfd, uint64_t *size)
{
    int fd = openat(dirfd, MFS_CACHE_MAX_SIZE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    if (strncmp(buf, "max_size ", 9) != 0)
        return 0;
    errno = 0;
    uintmax_t v = strtoumax(buf + 9, &end, 10);
    if (errno || end == buf + 9 || (*end && *end != '\n'))
        return 0; /* not one we wrote: as if none */
    *size = (uint64_t)v;
    return 1;
}

int mfs_cache_max_size_read(const char *dir, uint64_t *size)
{
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return 0;
    int r = mfs_cache_max_size_read_at(dirfd, size);
    close(dirfd);
    return r < 0 ? 0 : r;
}

int mfs_cache_max_size_stored(mfs_cache *c, uint64_t *size, mfs_err *err)
{
    int r = mfs_cache_max_size_read_at(c->dirfd, size);
    if (r < 0)
        return mfs_errf(err, "cache: reading %s/%s: %s", c->dir, MFS_CACHE_MAX_SIZE_FILE,
                        strerror(errno));
    return r;
}

int mfs_cache_max_size_store(mfs_cache *c, uint64_t size, mfs_err *err)
{
    char tmp[64], text[64];
    snprintf(tmp, sizeof tmp, "%s.%ld", MFS_CACHE_MAX_SIZE_FILE, (long)getpid());
    int len = snprintf(text, sizeof text, "max_size %" PRIu64 "\n", size);
    int fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return mfs_errf(err, "cache: writing %s/%s: %s", c->dir, tmp, strerror(errno));
    int ok = write(fd, text, (size_t)len) == len;
    int e = errno;
    if (close(fd) < 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && renameat(c->dirfd, tmp, c->dirfd, MFS_CACHE_MAX_SIZE_FILE) < 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlinkat(c->dirfd, tmp, 0);
        return mfs_errf(err, "cache: writing %s/%s: %s", c->dir, MFS_CACHE_MAX_SIZE_FILE,
                        strerror(e));
    }
    return 0;
}

/* Whole-buffer file I/O (util.h, "fullio"). */
#include <errno.h>
#include <unistd.h>

#include "meshfs/util.h"

int mfs_pwrite_full(int fd, const void *p, size_t n, uint64_t off)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = pwrite(fd, b, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        b += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int64_t mfs_pread_full(int fd, void *p, size_t n, uint64_t off)
{
    uint8_t *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, b + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (int64_t)got;
}

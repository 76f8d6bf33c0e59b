/* The stock reader of settings files (include/meshfs/settings.h): for the
 * tools and the mount's explanations, which read them where they lie.  The
 * worker reads them through its recording file system instead
 * (src/import/settings_apply.c), so that each is an input of the views. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "meshfs/err.h"
#include "meshfs/settings.h"

int mfs_settings_read_beneath(void *ctx, const char *rel, char **text, size_t *len, unsigned *uid,
                              mfs_err *err)
{
    int root = *(const int *)ctx;
    /* beneath the root as the importer resolves paths; O_NONBLOCK: a FIFO
     * of a settings file's name is no file, and must not hang the reader */
    struct open_how how = {
        .flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) /* kernel < 5.6 */
        fd = openat(root, rel, (int)how.flags);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV
                   ? 1
                   : mfs_errf(err, "%s: %s", rel, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 1; /* as the worker: no regular file there */
    }
    /* one byte past the limit is enough to be refused as too big */
    size_t cap = MFS_SETTINGS_MAX_BYTES + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return mfs_errf(err, "out of memory");
    }
    ssize_t r = 0;
    while (n < cap && ((r = read(fd, buf + n, cap - n)) > 0 || (r < 0 && errno == EINTR)))
        n += r > 0 ? (size_t)r : 0;
    int e = errno;
    close(fd);
    if (r < 0) {
        free(buf);
        return mfs_errf(err, "%s: %s", rel, strerror(e));
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    *uid = (unsigned)st.st_uid;
    return 0;
}

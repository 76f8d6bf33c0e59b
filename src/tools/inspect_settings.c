/* meshfs-inspect --settings SRC MODEL...: which settings files apply to each
 * model and what they set, as the worker reads them (docs/settings.md).
 * Read as the user who runs it, so what it shows is what that user can
 * see; the conversion itself reads them as the model's owner. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inspect_settings.h"
#include "meshfs/err.h"
#include "meshfs/settings.h"

static int read_file(void *ctx, const char *rel, char **text, size_t *len, unsigned *uid, mfs_err *err)
{
    int root = *(const int *)ctx;
    int fd = openat(root, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? 1 : mfs_errf(err, "%s", strerror(errno));
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
    ssize_t r;
    while (n < cap && (r = read(fd, buf + n, cap - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = 0;
    *text = buf;
    *len = n;
    *uid = (unsigned)st.st_uid;
    return 0;
}

/* The model's path relative to SRC, from a path relative to SRC or to the
 * current folder or absolute. */
static int relative(const char *src_real, const char *model, char *out, size_t n, mfs_err *err)
{
    char real[PATH_MAX];
    char joined[PATH_MAX * 2];
    snprintf(joined, sizeof joined, "%s/%s", src_real, model);
    const char *p = model[0] != '/' && access(joined, F_OK) == 0 ? joined : model;
    if (!realpath(p, real))
        return mfs_errf(err, "%s: %s", model, strerror(errno));
    size_t k = strlen(src_real);
    if (strncmp(real, src_real, k) != 0 || real[k] != '/')
        return mfs_errf(err, "%s: not beneath %s", model, src_real);
    snprintf(out, n, "%s", real + k + 1);
    return 0;
}

int mfs_inspect_settings(const char *src, const char *model, FILE *out, mfs_err *err)
{
    char src_real[PATH_MAX], rel[PATH_MAX];
    if (!realpath(src, src_real))
        return mfs_errf(err, "%s: %s", src, strerror(errno));
    if (relative(src_real, model, rel, sizeof rel, err) < 0)
        return -1;
    int root = open(src_real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return mfs_errf(err, "%s: %s", src, strerror(errno));
    struct stat st;
    if (fstatat(root, rel, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        close(root);
        return mfs_errf(err, "%s: %s", model, strerror(errno));
    }
    mfs_settings *s = malloc(sizeof *s);
    if (!s) {
        close(root);
        return mfs_errf(err, "out of memory");
    }
    mfs_settings_init(s);
    int rc = mfs_settings_load(rel, (unsigned)st.st_uid, read_file, &root, s, err);
    close(root);
    if (rc == 0 && out) {
        char text[8192];
        mfs_settings_describe(s, text, sizeof text);
        fprintf(out, "%s: settings%s\n%s", rel, s->set ? "" : ": none (mount and command-line options)",
                text);
    }
    free(s);
    return rc;
}

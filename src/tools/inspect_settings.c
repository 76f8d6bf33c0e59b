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
    int rc = mfs_settings_load(rel, (unsigned)st.st_uid, mfs_settings_read_beneath, &root, s, err);
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

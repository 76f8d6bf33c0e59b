/* A model's failed views, read on the model itself (coherence.h).
 *
 * Under -o hide_failed a failed view is not there to ask, and a tree
 * mirrored with rsync should not carry empty files for them; the reasons
 * stay readable as user.meshfs.error of the model file, one line per
 * failed view ("car.gmf: import failed: ..."). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../coherence/coherence.h"
#include "mount.h"

typedef struct found_model {
    char *model, *base;
} found_model;

/* The model at r, as its folder's table names it: dir, and copies of its
 * model and base in *out.  1 found, 0 not a model with views, -1 with
 * err. */
static int find_model(mfs_fs *fs, const char *r, char *dir, size_t n, found_model *out,
                      mfs_err *err)
{
    const char *slash = strrchr(r, '/');
    const char *name = slash ? slash + 1 : r;
    snprintf(dir, n, "%.*s", slash ? (int)(slash - r) : 0, r);
    mfs_dirtab *t;
    if (mfs_dirtab_get(&fs->names, dir, 0, &t, err) < 0)
        return -1;
    const mfs_dir_model *dm = mfs_dirtab_model(t, name);
    int rc = dm ? mfs_dir_model_copy(dm, &out->model, &out->base, err) : 0;
    mfs_dirtab_put(t);
    return rc;
}

int mfs_model_errors(mfs_fs *fs, const char *r, char *out, size_t n)
{
    char dir[4096];
    found_model dm;
    mfs_err ferr;
    int rc = find_model(fs, r, dir, sizeof dir, &dm, &ferr);
    if (rc <= 0)
        return rc == 0 ? 0 : -mfs_err_errno(&ferr); /* the getxattr answer (ops.c) */
    size_t len = 0;
    out[0] = '\0';
    for (int f = 0; f < MFS_FMT_COUNT && len + 1 < n; f++) {
        if (!(fs->cfg.shown & (1u << f)))
            continue;
        mfs_view_info vi;
        mfs_err err;
        mfs_view_outcome o = mfs_view_get(fs, dir, dm.model, dm.base, f, MFS_VIEW_ATTR, &vi, &err);
        if (o == MFS_VIEW_HIT)
            continue;
        const char *why = err.msg[0]                       ? err.msg
                          : o == MFS_VIEW_FAILED_MACHINE ? strerror(vi.errnum)
                                                         : "conversion failed";
        int w = snprintf(out + len, n - len, "%s.%s: %s\n", dm.base,
                         mfs_format_get((mfs_format)f)->name, why);
        len += w > 0 ? (size_t)w : 0;
    }
    free(dm.model);
    free(dm.base);
    return (int)(len < n ? len : n - 1);
}

/* -o lowercase_names: the mount shows every name in lowercase (FGE
 * lowercases model and texture names before opening them, so on Linux an
 * asset with a capital letter is otherwise "not found").  A shown path is
 * turned back into the real one a component at a time, through each
 * folder's table of shown names (dirmap.c, rebuilt when the folder's
 * mtime/ctime moves), so a lookup costs one table probe per component and
 * no folder scan.  docs/naming.md has the rule. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "meshfs/rules.h"

/* -1 with err: the path is too long for real's n bytes. */
static int too_long(const char *shown, mfs_err *err)
{
    return mfs_err_sys(err, ENAMETOOLONG, "%s: %s", shown, strerror(ENAMETOOLONG));
}

int mfs_casemap_path(mfs_names_state *ns, const char *shown, char *real, size_t n, mfs_err *err)
{
    if (!ns->lowercase_names)
        return snprintf(real, n, "%s", shown) < (int)n ? 0 : too_long(shown, err);
    if (n == 0)
        return too_long(shown, err);
    real[0] = '\0';
    size_t len = 0; /* of real */
    const char *p = shown;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t cl = end ? (size_t)(end - p) : strlen(p);
        if (cl == 0) { /* "a//b" */
            p++;
            continue;
        }
        char comp[1024], hit[1024];
        if (cl >= sizeof comp)
            return too_long(shown, err);
        memcpy(comp, p, cl);
        comp[cl] = '\0';
        /* no shown name has a capital: the real entry it would reach is
         * shown (if at all) under its lowercase name only */
        if (mfs_name_has_upper(comp))
            return mfs_err_sys(err, ENOENT, "%s: no shown name has a capital letter", shown);
        int last = !end || !end[1];
        int rc = mfs_dirmap_real_name(ns, real, comp, hit, sizeof hit, err);
        if (rc < 0)
            return rc;
        if (rc == 0 && !last) /* views are files, never folders */
            return mfs_err_sys(err, ENOENT, "%s: %s is no folder", shown, comp);
        const char *use = rc ? hit : comp;
        int w = snprintf(real + len, n - len, "%s%s", len ? "/" : "", use);
        if (w < 0 || (size_t)w >= n - len)
            return too_long(shown, err);
        len += (size_t)w;
        p += cl;
    }
    return 0;
}

void mfs_casemap_fold(const mfs_names_state *ns, char *path)
{
    if (ns->lowercase_names)
        mfs_name_lower(path);
}

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

#include "fs.h"
#include "meshfs/rules.h"

int mfs_casemap_path(mfs_fs *fs, const char *shown, char *real, size_t n)
{
    if (!fs->cfg.lowercase_names)
        return snprintf(real, n, "%s", shown) < (int)n ? 0 : -ENAMETOOLONG;
    if (n == 0)
        return -ENAMETOOLONG;
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
            return -ENAMETOOLONG;
        memcpy(comp, p, cl);
        comp[cl] = '\0';
        /* no shown name has a capital: the real entry it would reach is
         * shown (if at all) under its lowercase name only */
        if (mfs_name_has_upper(comp))
            return -ENOENT;
        int last = !end || !end[1];
        int rc = mfs_dirmap_real_name(fs, real, comp, hit, sizeof hit);
        if (rc < 0)
            return rc;
        if (rc == 0 && !last)
            return -ENOENT; /* views are files, never folders */
        const char *use = rc ? hit : comp;
        int w = snprintf(real + len, n - len, "%s%s", len ? "/" : "", use);
        if (w < 0 || (size_t)w >= n - len)
            return -ENAMETOOLONG;
        len += (size_t)w;
        p += cl;
    }
    return 0;
}

void mfs_casemap_fold(const mfs_fs *fs, char *path)
{
    if (fs->cfg.lowercase_names)
        mfs_name_lower(path);
}

int mfs_casemap_owner(void *ctx, size_t entry, unsigned long *uid)
{
    const mfs_casemap_owners *o = ctx;
    char path[PATH_MAX];
    struct stat st;
    int w = snprintf(path, sizeof path, "%s%s%s", o->dir, o->dir[0] ? "/" : "", o->e[entry].name);
    if (w < 0 || (size_t)w >= sizeof path || mfs_beneath_stat(o->fs, path, &st) < 0)
        return -1; /* gone since the listing: counts as nobody else's */
    /* a hard link's bytes may be another user's (B links A's file, writes
     * into it): with more than one link the owner says nothing, and a
     * collision with it hides every entry (docs/naming.md) */
    if (S_ISREG(st.st_mode) && st.st_nlink > 1)
        return -1;
    *uid = (unsigned long)st.st_uid;
    return 0;
}

char *mfs_casemap_hidden_text(const mfs_names *p)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    for (size_t i = 0; i < p->nnotes; i++) {
        const mfs_name_note *n = &p->notes[i];
        /* an OWNERS note comes once per entry it hides, with one text */
        if ((n->kind == MFS_NOTE_CASE || n->kind == MFS_NOTE_OWNERS) &&
            (i == 0 || strcmp(n->text, p->notes[i - 1].text)))
            fprintf(f, "%s\n", n->text);
    }
    if (fclose(f) != 0) {
        errno = ENOMEM;
        return NULL;
    }
    if (len == 0) {
        free(s);
        errno = 0;
        return NULL;
    }
    return s;
}

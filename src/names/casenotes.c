/* -o lowercase_names, as a folder's table is built (dirmap.c): who owns
 * each entry, for the naming rule's collisions, and the notes on the
 * entries a collision hides (user.meshfs.error on the folder).  Apart
 * from casemap.c, which reads the tables, so that the table's builder
 * calls down here and casemap.c calls down into dirmap.c: no circle.
 * docs/naming.md has the rule. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "meshfs/rules.h"

int mfs_casenotes_owner(void *ctx, size_t entry, unsigned long *uid)
{
    const mfs_casenotes_owners *o = ctx;
    char path[PATH_MAX];
    struct stat st;
    int w = snprintf(path, sizeof path, "%s%s%s", o->dir, o->dir[0] ? "/" : "", o->e[entry].name);
    if (w < 0 || (size_t)w >= sizeof path || mfs_beneath_stat(o->ns, path, &st) < 0)
        return -1; /* gone since the listing: counts as nobody else's */
    /* a hard link's bytes may be another user's (B links A's file, writes
     * into it): with more than one link the owner says nothing, and a
     * collision with it hides every entry (docs/naming.md) */
    if (S_ISREG(st.st_mode) && st.st_nlink > 1)
        return -1;
    *uid = (unsigned long)st.st_uid;
    return 0;
}

char *mfs_casenotes_text(const mfs_names *p)
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

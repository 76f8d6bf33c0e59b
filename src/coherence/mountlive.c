/* A second mount of SRC over a live meshfs mount of the same SRC
 * (coherence.h).
 *
 * libfuse 3 mounts over anything, so `meshfs SRC MNT` run twice stacked a
 * second daemon over the first, exiting 0 with only the "not empty"
 * warning, which took the first mount's views for the user's files.  The
 * mount table says what is there: the topmost mount at MNT, its type and
 * its source (meshfs's fsname is SRC's real path, main.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coherence.h"

/* mountinfo escapes space, tab, newline and backslash as \NNN (octal) */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* The topmost mount at `path`: its type and source, 1; 0 if none. */
static int top_mount(const char *path, char *type, char *source, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (getline(&line, &cap, f) > 0) {
        /* id parent maj:min root MOUNTPOINT opts [tags...] - TYPE SOURCE superopts */
        char *save = NULL, *mp = NULL, *tok = strtok_r(line, " \n", &save);
        for (int i = 0; tok && i < 4; i++)
            tok = strtok_r(NULL, " \n", &save);
        mp = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " \n", &save);
        char *t = tok ? strtok_r(NULL, " \n", &save) : NULL;
        char *s = t ? strtok_r(NULL, " \n", &save) : NULL;
        if (!mp || !s)
            continue;
        unescape(mp);
        if (strcmp(mp, path) != 0)
            continue;
        unescape(s);
        snprintf(type, n, "%s", t);
        snprintf(source, n, "%s", s); /* later lines are mounted over earlier ones */
        found = 1;
    }
    free(line);
    fclose(f);
    return found;
}

int mfs_mount_point_live(const char *src_real, const char *mnt, int stack, char *under,
                         size_t n, mfs_err *err)
{
    char mreal[PATH_MAX], type[PATH_MAX], source[PATH_MAX];
    under[0] = '\0';
    if (!mnt || !realpath(mnt, mreal) || !top_mount(mreal, type, source, sizeof type) ||
        strcmp(type, "fuse.meshfs") != 0)
        return 0;
    if (!stack && strcmp(source, src_real) == 0)
        return mfs_errf(err, "%s is already mounted at %s by meshfs; unmount it first "
                             "(fusermount3 -u %s), or give -o stack to mount over it",
                        src_real, mnt, mnt);
    snprintf(under, n, "%s", source);
    return 0;
}

#include <stdlib.h>
#include <string.h>

#include "frenetic.h"

int mfs_fge_has_prefix(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if (c != (unsigned char)*prefix)
            return 0;
    }
    return 1;
}

int mfs_fge_hidden(const char *name)
{
    return mfs_fge_has_prefix(name, "collisionconvex_") ||
           mfs_fge_has_prefix(name, "collisioncomplex_") || mfs_fge_has_prefix(name, "marker_") ||
           mfs_fge_has_prefix(name, "norender_");
}

char *mfs_fge_mesh_name(const char *name)
{
    size_t n = strlen(name);
    char *r = malloc(n + 1);
    if (!r)
        return NULL;
    memcpy(r, name, n + 1);
    for (size_t i = 0; i < n; i++) {
        if (r[i] == '=' || r[i] == '\r' || r[i] == '\n') {
            r[i] = '_';
        } else if (name[i] == ':') {
            size_t a = i, b = i;
            while (a > 0 && name[a - 1] == ':')
                a--;
            while (name[b] == ':')
                b++;
            if (b - a >= 3)
                r[i] = '_';
        }
    }
    return r;
}

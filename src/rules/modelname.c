/* Which files are models: a name against the extensions the worker's
 * importer accepts (spawner.h).  Pure string work, so a listing or a stat
 * that asks never starts a process. */
#include <string.h>

#include "meshfs/rules.h"

int mfs_model_name_in(const char *const *exts, const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!exts || !dot || dot == name || !dot[1])
        return 0;
    char e[32];
    size_t n = 0;
    for (const char *c = dot + 1; *c && n + 1 < sizeof e; c++)
        e[n++] = (char)((*c >= 'A' && *c <= 'Z') ? *c + 32 : *c);
    e[n] = '\0';
    /* every name of a folder's first listing comes here, against ~70
     * extensions: the first letter rules out nearly all without a call */
    for (int i = 0; exts[i]; i++)
        if (exts[i][0] == e[0] && strcmp(exts[i], e) == 0)
            return 1;
    return 0;
}

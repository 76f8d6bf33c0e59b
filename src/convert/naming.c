#include <string.h>

#include "meshfs/formats.h"
#include "meshfs/naming.h"

size_t mfs_name_stem_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name)
        return strlen(name);
    return (size_t)(dot - name);
}

static int same_stem(const char *a, size_t alen, const char *b)
{
    return mfs_name_stem_len(b) == alen && strncmp(a, b, alen) == 0;
}

/* Does a real entry already carry the name "<stem>.<fmt>" for any format? */
static int taken_by_file(const char *stem, size_t slen, const char *name)
{
    if (strncmp(name, stem, slen) != 0 || name[slen] != '.')
        return 0;
    return mfs_format_find(name + slen + 1) != NULL;
}

int mfs_view_base(const char *model, const char *const *siblings, size_t n,
                  mfs_is_model_fn is_model, char *out, size_t outsz)
{
    size_t slen = mfs_name_stem_len(model);
    int clash = 0;
    for (size_t i = 0; i < n && !clash; i++) {
        const char *s = siblings[i];
        if (strcmp(s, model) == 0)
            continue;
        if (taken_by_file(model, slen, s))
            clash = 1;
        else if (same_stem(model, slen, s) && is_model(s))
            clash = 1;
    }
    size_t len = clash ? strlen(model) : slen;
    if (len + 1 > outsz)
        return -1;
    memcpy(out, model, len);
    out[len] = '\0';
    return clash;
}

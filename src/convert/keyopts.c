/* The option text in view and manifest keys (include/meshfs/keyopts.h). */
#include <stdio.h>

#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/keyopts.h"

int mfs_keyopts_tangents(unsigned formats)
{
    return (formats & (1u << MFS_FMT_GMF)) != 0;
}

int mfs_keyopts_textures(unsigned formats)
{
    return (formats & ((1u << MFS_FMT_TEX) | ~MFS_FMT_ALL)) != 0;
}

unsigned mfs_keyopts_run_formats(unsigned formats, unsigned need)
{
    if (mfs_keyopts_textures(formats))
        need |= 1u << MFS_FMT_TEX;
    if (mfs_keyopts_tangents(formats))
        need |= 1u << MFS_FMT_GMF;
    return need;
}

void mfs_keyopts_format(const mfs_options *opts, unsigned formats, int format,
                        const char *fmi_model, char *buf, size_t n)
{
    mfs_options o = *opts;
    o.model_path = fmi_model;
    size_t len = mfs_options_key(&o, mfs_format_get((mfs_format)format)->options, buf, n);
    /* which importer read the model decides every view's bytes */
    if (o.importer != MFS_IMPORTER_AUTO && len < n)
        len += (size_t)snprintf(buf + len, n - len, "importer=%s;", mfs_importer_name(o.importer));
    if (mfs_keyopts_tangents(formats) && len < n)
        snprintf(buf + len, n - len, "tangents;");
}

void mfs_keyopts_import(const mfs_options *o, unsigned formats, char *buf, size_t n)
{
    size_t len = mfs_options_key(o, MFS_OPT_SOURCE_FRAME, buf, n);
    if (mfs_keyopts_textures(formats) && len < n)
        len += (size_t)snprintf(buf + len, n - len, "textures;");
    if (o->importer != MFS_IMPORTER_AUTO && len < n)
        len += (size_t)snprintf(buf + len, n - len, "importer=%s;", mfs_importer_name(o->importer));
    if (mfs_keyopts_tangents(formats) && len < n)
        snprintf(buf + len, n - len, "tangents;");
}

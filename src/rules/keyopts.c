/* The option text in view and manifest keys (include/meshfs/rules.h). */
#include <stdio.h>

#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/rules.h"

void mfs_keyopts_format(const mfs_options *opts, int format, const char *fmi_model, char *buf,
                        size_t n)
{
    mfs_options o = *opts;
    o.model_path = fmi_model;
    size_t len = mfs_options_key(&o, mfs_format_get((mfs_format)format)->options, buf, n);
    /* which importer read the model decides every view's bytes */
    if (o.importer != MFS_IMPORTER_AUTO && len < n)
        snprintf(buf + len, n - len, "importer=%s;", mfs_importer_name(o.importer));
}

void mfs_keyopts_import(const mfs_options *o, char *buf, size_t n)
{
    size_t len = mfs_options_key(o, MFS_OPT_SOURCE_FRAME, buf, n);
    if (o->importer != MFS_IMPORTER_AUTO && len < n)
        snprintf(buf + len, n - len, "importer=%s;", mfs_importer_name(o->importer));
}

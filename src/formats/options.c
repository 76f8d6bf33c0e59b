#include <stdio.h>
#include <string.h>

#include "meshfs/options.h"

void mfs_options_default(mfs_options *o)
{
    memset(o, 0, sizeof *o);
}

size_t mfs_options_key(const mfs_options *o, unsigned mask, char *buf, size_t n)
{
    /* Fixed order and spelling: this text is hashed into cache keys. */
    int len = snprintf(buf, n, "%s%s%s%s%s%s%s", (mask & MFS_OPT_PRETRANS) && o->pretrans ? "pretrans;" : "",
                       (mask & MFS_OPT_FMI_TEXTURES) && o->fmi_textures ? "fmi_textures;" : "",
                       (mask & MFS_OPT_REVERSE_WINDING) && o->reverse_winding ? "reverse_winding;" : "",
                       (mask & MFS_OPT_SOURCE_FRAME) && o->source_frame ? "source_frame;" : "",
                       (mask & MFS_OPT_MODEL_PATH) ? "model=" : "",
                       (mask & MFS_OPT_MODEL_PATH) && o->model_path ? o->model_path : "",
                       (mask & MFS_OPT_MODEL_PATH) ? ";" : "");
    if (len < 0)
        return 0;
    return (size_t)len < n ? (size_t)len : (n ? n - 1 : 0);
}

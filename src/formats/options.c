#include <stdio.h>
#include <string.h>

#include "meshfs/err.h"
#include "meshfs/import.h"
#include "meshfs/formats.h"

void mfs_options_default(mfs_options *o)
{
    memset(o, 0, sizeof *o);
}

size_t mfs_options_key(const mfs_options *o, unsigned mask, char *buf, size_t n)
{
    /* Fixed order and spelling: this text is hashed into cache keys. */
    int len = snprintf(buf, n, "%s%s%s%s%s%s%s%s%s", (mask & MFS_OPT_PRETRANS) && o->pretrans ? "pretrans;" : "",
                       (mask & MFS_OPT_FMI_TEXTURES) && o->fmi_textures ? "fmi_textures;" : "",
                       (mask & MFS_OPT_REVERSE_WINDING) && o->reverse_winding ? "reverse_winding;" : "",
                       (mask & MFS_OPT_SOURCE_FRAME) && o->source_frame ? "source_frame;" : "",
                       (mask & MFS_OPT_MODEL_PATH) ? "model=" : "",
                       (mask & MFS_OPT_MODEL_PATH) && o->model_path ? o->model_path : "",
                       (mask & MFS_OPT_MODEL_PATH) ? ";" : "",
                       (mask & MFS_OPT_VRT_PLAIN) && o->vrt_plain ? "vrt_plain;" : "",
                       (mask & MFS_OPT_FMD_RAW) && o->fmd_raw ? "fmd_raw;" : "");
    if (len < 0)
        return 0;
    return (size_t)len < n ? (size_t)len : (n ? n - 1 : 0);
}

int mfs_options_set_vrt_layout(mfs_options *o, const char *value, mfs_err *err)
{
    if (value && strcmp(value, "skinned") == 0)
        o->vrt_plain = 0;
    else if (value && strcmp(value, "plain") == 0)
        o->vrt_plain = 1;
    else
        return mfs_errf(err, "vrt_layout '%s': expected 'skinned' (64-byte vertices, the engine's) "
                        "or 'plain' (8 floats, the FBXConverter document's)", value ? value : "");
    return 0;
}

/* The --importer / -o importer= values (meshfs/import.h), here in the core
 * library so that the daemon and meshfs-convert parse them without linking
 * the importer. */
int mfs_importer_parse(const char *value, int *out, mfs_err *err)
{
    if (value && strcmp(value, "auto") == 0)
        *out = MFS_IMPORTER_AUTO;
    else if (value && strcmp(value, "assimp") == 0)
        *out = MFS_IMPORTER_ASSIMP;
    else
        return mfs_errf(err, "importer '%s': expected 'auto' (native glTF/OBJ parsers, assimp "
                        "for the rest) or 'assimp' (assimp for every format)", value ? value : "");
    return 0;
}

const char *mfs_importer_name(int importer)
{
    return importer == MFS_IMPORTER_ASSIMP ? "assimp" : "auto";
}

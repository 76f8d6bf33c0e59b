/* Conversion options: everything besides input bytes that decides output.
 *
 * Each format declares which options it reads (mfs_format_info.options), and
 * only those enter its cache key, so changing an option that affects .fmi
 * alone leaves the cached .gmf valid. */
#ifndef MESHFS_OPTIONS_H
#define MESHFS_OPTIONS_H

#include <stddef.h>

struct mfs_err;

typedef enum mfs_opt_bit {
    MFS_OPT_PRETRANS = 1u << 0,        /* accepted for compatibility; no writer reads it
                                          (placed geometry is .fmd's default, see fmd_raw) */
    MFS_OPT_FMI_TEXTURES = 1u << 1,    /* fmi: texture lines instead of UNKNOWN */
    MFS_OPT_REVERSE_WINDING = 1u << 2, /* tri: reverse every triangle */
    MFS_OPT_SOURCE_FRAME = 1u << 3,    /* import: keep the importer's raw frame */
    MFS_OPT_MODEL_PATH = 1u << 4,      /* fmi model= line, dem model name (model_path) */
    MFS_OPT_VRT_PLAIN = 1u << 5,       /* vrt: the document's 8-float vertex, not the engine's 64 bytes */
    MFS_OPT_FMD_RAW = 1u << 6,         /* fmd: FMC's raw layout (node matrices not applied) */
} mfs_opt_bit;

typedef struct mfs_options {
    int pretrans;
    int fmi_textures;
    int reverse_winding;
    int source_frame;
    int vrt_plain;          /* vrt_layout=plain (default: skinned, 64-byte vertices) */
    int fmd_raw;            /* fmd: vertices as stored in the source, not placed */
    int importer;           /* mfs_importer (meshfs/import.h): auto or assimp; every
                               view depends on it (src/fs/convert.c keys it) */
    /* Path of the model relative to the engine's models/ folder, without
     * extension, e.g. "vehicles/car".  Set by the caller from the output
     * layout; the .fmi model= line and the .dem model name use it
     * (docs/formats/fmi.md, dem.md). */
    const char *model_path;
} mfs_options;

void mfs_options_default(mfs_options *o);

/* Sets vrt_plain from a vrt_layout value ("skinned" or "plain"); -1 with err
 * naming the value otherwise.  Shared by the mount and meshfs-convert. */
int mfs_options_set_vrt_layout(mfs_options *o, const char *value, struct mfs_err *err);

/* Canonical text of the options selected by mask ("pretrans=1;..."), for
 * cache keys and logs.  Returns the length written (truncated to n-1). */
size_t mfs_options_key(const mfs_options *o, unsigned mask, char *buf, size_t n);

#endif

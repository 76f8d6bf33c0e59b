/* .tex: FBXConverter texture buffer for the LGE engine (docs/formats/tex.md).
 *
 * TextureHeader {i32 width, height, depth (bytes per pixel); u16 gpuFormat,
 * imageFormat} followed by width*height*depth bytes, rows bottom-up.
 *
 * This first version always writes the fallback: one opaque white RGBA
 * texel, which the engine loads like any texture, so a model's four chunks
 * are always present. */
#include "meshfs/formats.h"

int mfs_write_tex(const mfs_scene *s, const mfs_options *o, mfs_sink *out, mfs_err *err)
{
    (void)s;
    (void)o;
    (void)err;
    static const uint8_t white[4] = {255, 255, 255, 255};
    mfs_put_i32(out, 1); /* width */
    mfs_put_i32(out, 1); /* height */
    mfs_put_i32(out, 4); /* depth: bytes per pixel */
    mfs_put_u16(out, 3); /* gpuFormat: TexelFormat RGBA */
    mfs_put_u16(out, 3); /* imageFormat: RGBA */
    mfs_put(out, white, sizeof white);
    return 0;
}

/* .tex: FBXConverter texture buffer for the LGE engine (docs/formats/tex.md).
 *
 * TextureHeader {i32 width, height, depth (bytes per pixel); u16 gpuFormat,
 * imageFormat} followed by width*height*depth bytes, rows bottom-up.
 *
 * The engine hands the bytes to glTexImage2D without touching
 * GL_UNPACK_ALIGNMENT (so 4) and asserts chunkSize - 16 == w*h*depth, so rows
 * can be neither padded nor left unaligned: an RGB image whose rows are not a
 * multiple of 4 bytes is written as RGBA (alpha 255).  A scene without an
 * image gets one opaque white RGBA texel, which the engine loads like any
 * texture, so a model's four chunks are always present. */
#include <stdlib.h>

#include "meshfs/formats.h"

#define TEXEL_RGB 0  /* TexelFormat (enumTexelFormat.h): RGB, BGR, BGRA, RGBA */
#define TEXEL_RGBA 3

static void header(mfs_sink *out, uint32_t w, uint32_t h, uint32_t depth)
{
    uint16_t fmt = depth == 4 ? TEXEL_RGBA : TEXEL_RGB;
    mfs_put_i32(out, (int32_t)w);
    mfs_put_i32(out, (int32_t)h);
    mfs_put_i32(out, (int32_t)depth);
    mfs_put_u16(out, fmt); /* gpuFormat: what GL stores */
    mfs_put_u16(out, fmt); /* imageFormat: the byte order given, RGB(A) as decoded */
}

int mfs_write_tex(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    (void)prep; /* nothing prepared is of use here */
    (void)o;
    const mfs_image *im = &s->image;
    if (!im->pixels) {
        static const uint8_t white[4] = {255, 255, 255, 255};
        header(out, 1, 1, 4);
        mfs_put(out, white, sizeof white);
        return 0;
    }
    if ((im->channels != 3 && im->channels != 4) || im->width == 0 || im->height == 0 ||
        im->width > MFS_IMAGE_MAX_DIM || im->height > MFS_IMAGE_MAX_DIM ||
        (uint64_t)im->width * im->height * im->channels > MFS_IMAGE_MAX_BYTES)
        return mfs_errf(err, "image %ux%u with %u channels is outside what .tex holds",
                        im->width, im->height, im->channels);
    size_t row = (size_t)im->width * im->channels;
    int expand = im->channels == 3 && row % 4 != 0;
    uint32_t depth = expand ? 4 : im->channels;
    header(out, im->width, im->height, depth);
    uint8_t *wide = NULL;
    if (expand && !(wide = malloc((size_t)im->width * 4)))
        return mfs_errf(err, "out of memory");
    /* the scene's rows run top-down; GL's first row is the bottom one */
    for (uint32_t y = im->height; y-- > 0;) {
        const uint8_t *src = im->pixels + (size_t)y * row;
        if (!expand) {
            mfs_put(out, src, row);
            continue;
        }
        for (uint32_t x = 0; x < im->width; x++) {
            wide[4 * x] = src[3 * x];
            wide[4 * x + 1] = src[3 * x + 1];
            wide[4 * x + 2] = src[3 * x + 2];
            wide[4 * x + 3] = 255;
        }
        mfs_put(out, wide, (size_t)im->width * 4);
    }
    free(wide);
    return 0;
}

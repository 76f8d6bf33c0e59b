/* Reader for .tex, the FBXConverter texture buffer (research/dem_vrt.md
 * Topic B): a 16-byte TextureHeader {i32 width, height, depth; u16
 * gpuFormat, imageFormat} and width*height*depth pixel bytes.
 *
 * The checks are the engine's: ResourceUnpacker::ReadTexture asserts
 * chunkSize - 16 == width*height*depth, Texture.cpp falls back to its error
 * texture for a width or height <= 0, maps TexelFormat 0..3 to GL (anything
 * else silently to GL_RGB) and calls glTexImage2D with the default
 * GL_UNPACK_ALIGNMENT of 4, so GL expects every row to start on a 4-byte
 * boundary. */
#include "readers.h"

#include "meshfs/util.h"

#define TEX_HEADER_BYTES 16

static const char *const texel_names[] = {"RGB", "BGR", "BGRA", "RGBA"};

/* Bytes per pixel GL reads for an imageFormat. */
static int texel_bytes(unsigned f)
{
    return f == 0 || f == 1 ? 3 : 4;
}

int mfs_read_tex(mfs_rd *r, const uint8_t *p, size_t n)
{
    if (n < TEX_HEADER_BYTES)
        return mfs_errf(r->err, "file is %zu bytes, shorter than the 16-byte TextureHeader", n);
    mfs_summary *s = r->sum;
    s->has_texture = 1;
    s->tex_width = mfs_ld_i32(p);
    s->tex_height = mfs_ld_i32(p + 4);
    s->tex_depth = mfs_ld_i32(p + 8);
    s->tex_gpu_format = mfs_ld_u16(p + 12);
    s->tex_image_format = mfs_ld_u16(p + 14);
    int32_t w = s->tex_width, h = s->tex_height, d = s->tex_depth;
    if (w <= 0 || h <= 0)
        return mfs_errf(r->err, "offset 0: size %ldx%ld: the engine shows its error texture for "
                        "a width or height <= 0", (long)w, (long)h);
    if (d != 3 && d != 4)
        return mfs_errf(r->err, "offset 8: depth %ld: expected 3 or 4 bytes per pixel", (long)d);
    uint64_t need = (uint64_t)w * (uint64_t)h * (uint64_t)d;
    size_t have = n - TEX_HEADER_BYTES;
    if (need > have)
        return mfs_errf(r->err, "offset 16: %ldx%ldx%ld needs %llu pixel bytes but only %zu "
                        "remain", (long)w, (long)h, (long)d, (unsigned long long)need, have);
    if (have > need)
        mfs_rd_violation(r, "offset %llu: %llu bytes after the pixels (the engine asserts "
                         "chunkSize - 16 == width*height*depth)",
                         (unsigned long long)(TEX_HEADER_BYTES + need),
                         (unsigned long long)(have - need));
    unsigned gf = s->tex_gpu_format, imf = s->tex_image_format;
    if (gf > 3)
        mfs_rd_violation(r, "offset 12: gpuFormat %u is not a TexelFormat (0..3)", gf);
    if (imf > 3)
        mfs_rd_violation(r, "offset 14: imageFormat %u is not a TexelFormat (0..3)", imf);
    else if (texel_bytes(imf) != d)
        mfs_rd_violation(r, "offset 14: imageFormat %s has %d bytes per pixel, depth says %ld",
                         texel_names[imf], texel_bytes(imf), (long)d);
    if (((uint64_t)w * (uint64_t)d) % 4 != 0)
        mfs_rd_violation(r, "rows of %llu bytes are not a multiple of 4: the engine uploads "
                         "with GL_UNPACK_ALIGNMENT 4, so GL would read them skewed and past "
                         "the end", (unsigned long long)((uint64_t)w * (uint64_t)d));
    return 0;
}

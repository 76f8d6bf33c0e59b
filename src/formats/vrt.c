/* .vrt: FBXConverter vertex data for the LGE engine (docs/formats/vrt.md).
 *
 * VboHeader {int32 rawSizeInBytes, sizeOfElement = 4, numberOfElement}
 * followed by one record per unique model-space vertex: by default the
 * engine's 64-byte VertexData (x y z u v nx ny nz, weights w0..w3, bone
 * indices b0..b3), with vrt_layout=plain the document's 8 floats. */
#include "runtime.h"

#include "meshfs/formats.h"

/* Words go out through a small staging buffer: one sink call per 4 KiB
 * instead of one per word.  Every word is already the bits to store
 * (float bits or a bone index). */
static void put_vertices(mfs_sink *out, const mfs_runtime *rt, int plain)
{
    const unsigned words = plain ? MFS_RT_PLAIN_WORDS : MFS_RT_WORDS;
    uint32_t n = mfs_runtime_count(rt, plain);
    uint8_t buf[4096];
    size_t len = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (len + words * 4 > sizeof buf) {
            mfs_put(out, buf, len);
            len = 0;
        }
        const uint32_t *v = mfs_runtime_vertex(rt, plain, i);
        for (unsigned k = 0; k < words; k++, len += 4)
            mfs_st_u32(buf + len, v[k]);
    }
    mfs_put(out, buf, len);
}

int mfs_write_vrt(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    /* reverse_winding is .tri's; vrt_plain picks the layout */
    int plain = o && o->vrt_plain;
    mfs_runtime own;
    const mfs_runtime *rt = mfs_runtime_get(s, prep, &own, err);
    int rc = 0;
    if (!rt) {
        rc = mfs_err_prefix(err, "vrt");
    } else if (!plain && rt->max_joint > MFS_RT_MAX_JOINTS) {
        rc = mfs_errf(err, "vrt: vertices use bone index %u, but the engine's skinning shader "
                      "holds %d joints (skinnedTextureLight.vs.glsl); vrt_layout=plain writes "
                      "the model without skinning", rt->max_joint - 1, MFS_RT_MAX_JOINTS);
    } else {
        unsigned words = plain ? MFS_RT_PLAIN_WORDS : MFS_RT_WORDS;
        int32_t elements = (int32_t)(mfs_runtime_count(rt, plain) * words);
        mfs_put_i32(out, elements * 4); /* rawSizeInBytes */
        mfs_put_i32(out, 4);            /* sizeOfElement: sizeof(float) == sizeof(unsigned int) */
        mfs_put_i32(out, elements);     /* numberOfElement: 4-byte words, not vertices */
        put_vertices(out, rt, plain);
    }
    mfs_runtime_free(&own);
    return rc;
}

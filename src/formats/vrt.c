/* .vrt: FBXConverter vertex data for the LGE engine (docs/formats/vrt.md).
 *
 * VboHeader {int32 rawSizeInBytes, sizeOfElement = 4, numberOfElement}
 * followed by 8 floats per unique model-space vertex: x y z u v nx ny nz. */
#include "runtime.h"

#include "meshfs/formats.h"

/* Floats go out through a small staging buffer: one sink call per 4 KiB
 * instead of one per float. */
static void put_vertices(mfs_sink *out, const mfs_runtime *rt)
{
    uint8_t buf[4096];
    size_t len = 0;
    for (uint32_t i = 0; i < rt->n_vertices; i++) {
        if (len + MFS_RT_FLOATS * 4 > sizeof buf) {
            mfs_put(out, buf, len);
            len = 0;
        }
        for (int k = 0; k < MFS_RT_FLOATS; k++, len += 4)
            mfs_st_f32(buf + len, rt->vertices[i][k]);
    }
    mfs_put(out, buf, len);
}

int mfs_write_vrt(const mfs_scene *s, const mfs_options *o, mfs_sink *out, mfs_err *err)
{
    (void)o; /* no option changes the vertices; reverse_winding is .tri's */
    const mfs_runtime *rt = mfs_runtime_acquire(s, MFS_RT_USER_VRT, err);
    if (!rt)
        return mfs_err_prefix(err, "vrt");
    int32_t elements = (int32_t)(rt->n_vertices * MFS_RT_FLOATS);
    mfs_put_i32(out, elements * 4); /* rawSizeInBytes */
    mfs_put_i32(out, 4);            /* sizeOfElement: sizeof(float) */
    mfs_put_i32(out, elements);     /* numberOfElement: floats, not vertices */
    put_vertices(out, rt);
    mfs_runtime_release(rt);
    return 0;
}

/* .tri: FBXConverter triangle data for the LGE engine (docs/formats/tri.md).
 *
 * EboHeader {int32 rawSizeInBytes, sizeOfElement = 4, numberOfElement}
 * followed by 3 uint32 vertex indices (into the .vrt of the same
 * vrt_layout) per triangle. */
#include "runtime.h"

#include "meshfs/formats.h"

static void put_triangles(mfs_sink *out, const mfs_runtime *rt, int reverse, int plain)
{
    /* reverse_winding writes (a, c, b): the first corner stays first, so a
     * triangle keeps its leading vertex and only its facing changes. */
    const int order[2][3] = {{0, 1, 2}, {0, 2, 1}};
    const int *ord = order[reverse ? 1 : 0];
    uint8_t buf[4096];
    size_t len = 0;
    for (uint32_t i = 0; i < rt->n_triangles; i++) {
        if (len + 12 > sizeof buf) {
            mfs_put(out, buf, len);
            len = 0;
        }
        for (int k = 0; k < 3; k++, len += 4)
            mfs_st_u32(buf + len, mfs_runtime_index(rt, plain, rt->triangles[i][ord[k]]));
    }
    mfs_put(out, buf, len);
}

int mfs_write_tri(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    mfs_runtime own;
    const mfs_runtime *rt = mfs_runtime_get(s, prep, &own, err);
    if (!rt) {
        mfs_runtime_free(&own);
        return mfs_err_prefix(err, "tri");
    }
    int32_t elements = (int32_t)(rt->n_triangles * 3);
    mfs_put_i32(out, elements * 4); /* rawSizeInBytes */
    mfs_put_i32(out, 4);            /* sizeOfElement: sizeof(unsigned int) */
    mfs_put_i32(out, elements);     /* numberOfElement: indices, not triangles */
    /* the plain layout can merge vertices that differ only in skinning, so
     * the indices follow vrt_layout too */
    put_triangles(out, rt, o && o->reverse_winding, o && o->vrt_plain);
    mfs_runtime_free(&own);
    return 0;
}

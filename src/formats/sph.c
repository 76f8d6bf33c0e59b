/* .sph: FBXConverter bounding sphere for the LGE engine (docs/formats/sph.md).
 *
 * The engine reads the file straight into its 16-byte aligned
 * BoundingSphere {Vect center (x y z w); float radius;}, so the 32 bytes
 * are the centre with w = 1, the radius, and 12 bytes of zero padding. */
#include <math.h>

#include "runtime.h"

#include "meshfs/formats.h"

int mfs_write_sph(const mfs_scene *s, const mfs_options *o, mfs_sink *out, mfs_err *err)
{
    (void)o;
    const mfs_runtime *rt = mfs_runtime_acquire(s, MFS_RT_USER_SPH, err);
    if (!rt)
        return mfs_err_prefix(err, "sph");
    if (!isfinite(rt->radius)) {
        mfs_runtime_release(rt);
        return mfs_errf(err, "sph: coordinates beyond +-%g cannot be bounded in float arithmetic",
                        (double)MFS_RT_SPHERE_MAX_COORD);
    }
    static const uint8_t pad[12];
    mfs_put_f32(out, rt->center[0]);
    mfs_put_f32(out, rt->center[1]);
    mfs_put_f32(out, rt->center[2]);
    mfs_put_f32(out, 1.0f); /* Vect w: a point */
    mfs_put_f32(out, rt->radius);
    mfs_put(out, pad, sizeof pad);
    mfs_runtime_release(rt);
    return 0;
}

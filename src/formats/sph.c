/* .sph: FBXConverter bounding sphere for the LGE engine (docs/formats/sph.md).
 *
 * The engine copies the file straight into its BoundingSphere, declared
 * `class BoundingSphere : public Align16 { Vect center; float radius; }`
 * with `class Vect : public Align16`.  Two Align16 subobjects cannot share
 * an address, so the empty base takes the first 16 bytes: 48 bytes in all,
 * the centre (x y z, w = 1) at 16, the radius at 32, zeros elsewhere. */
#include <math.h>

#include "runtime.h"

#include "meshfs/formats.h"

int mfs_write_sph(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    (void)o; /* the sphere is the same for both vrt layouts */
    mfs_runtime own;
    const mfs_runtime *rt = mfs_runtime_get(s, prep, &own, err);
    int rc = 0;
    if (!rt) {
        rc = mfs_err_prefix(err, "sph");
    } else if (!isfinite(rt->radius)) {
        rc = mfs_errf(err, "sph: coordinates beyond +-%g cannot be bounded in float arithmetic",
                      (double)MFS_RT_SPHERE_MAX_COORD);
    } else {
        static const uint8_t zero[16];
        mfs_put(out, zero, 16); /* BoundingSphere's own Align16 base */
        mfs_put_f32(out, rt->center[0]);
        mfs_put_f32(out, rt->center[1]);
        mfs_put_f32(out, rt->center[2]);
        mfs_put_f32(out, 1.0f); /* Vect w: a point */
        mfs_put_f32(out, rt->radius);
        mfs_put(out, zero, 12); /* padding to the 16-byte alignment */
    }
    mfs_runtime_free(&own);
    return rc;
}

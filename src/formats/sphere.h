/* The bounding sphere behind .sph (docs/formats/sph.md): Ritter's sphere,
 * widened until float-arithmetic readers agree that every point is inside.
 * Separate from the mesh building (runtime.c) because it is pure geometry
 * over a point list, tested on its own against adversarial point sets.
 *
 * Internal to src/formats/; not part of the public contract. */
#ifndef MESHFS_FORMATS_SPHERE_H
#define MESHFS_FORMATS_SPHERE_H

#include <stddef.h>
#include <stdint.h>

/* Ritter bounding sphere of n points (xyz at p + i*stride floats), then
 * widened so that every point passes the float containment tests described
 * in docs/formats/sph.md.  n == 0 gives centre 0 and radius 0.  A
 * coordinate beyond MFS_RT_SPHERE_MAX_COORD gives an infinite radius. */
void mfs_runtime_sphere(const float *p, size_t stride, uint32_t n, float center[3],
                        float *radius);

/* 1 if point q passes every float containment test against (c, r). */
int mfs_runtime_sphere_contains(const float c[3], float r, const float q[3]);

/* Largest coordinate magnitude a float-arithmetic reader can bound: the
 * squared distance between two such points, 3 * (2 * 5e18)^2, stays below
 * FLT_MAX. */
#define MFS_RT_SPHERE_MAX_COORD 5e18f

#endif

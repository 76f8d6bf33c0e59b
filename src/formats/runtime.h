/* Shared model preparation for the FBXConverter runtime files (.vrt, .tri,
 * .sph; docs/formats/vrt.md).
 *
 * The three writers are called separately with the same scene, and all of
 * them need the same merged, reduced, model-space mesh.  Building it is the
 * expensive part, so it is built once and shared: mfs_runtime_acquire()
 * keeps a few recent results keyed on a 128-bit hash of exactly the scene
 * content the result depends on (never on the scene's address, so a freed
 * and re-imported scene at the same address cannot be served stale data).
 * The cache is guarded by a mutex; a writer that asks while another thread
 * is building the same result waits for it instead of building it twice.
 *
 * Internal to src/formats/; not part of the public contract. */
#ifndef MESHFS_FORMATS_RUNTIME_H
#define MESHFS_FORMATS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/scene.h"

/* One LGE VertexData: position xyz, texture uv, normal xyz, in that order. */
#define MFS_RT_FLOATS 8

/* The headers hold rawSizeInBytes as int32. */
#define MFS_RT_MAX_VERTICES (INT32_MAX / (MFS_RT_FLOATS * 4))
#define MFS_RT_MAX_TRIANGLES (INT32_MAX / 12)

typedef struct mfs_runtime {
    uint32_t n_vertices;
    float (*vertices)[MFS_RT_FLOATS]; /* unique, in first-reference order */
    uint32_t n_triangles;
    uint32_t (*triangles)[3];         /* counter-clockwise in model space */
    float center[3];                  /* bounding sphere, contains every vertex */
    float radius;
} mfs_runtime;

/* Which writer asks (a bit each).  Once all three have taken a result it is
 * dropped from the cache, so a finished conversion leaves no memory behind. */
enum {
    MFS_RT_USER_VRT = 1u << 0,
    MFS_RT_USER_TRI = 1u << 1,
    MFS_RT_USER_SPH = 1u << 2,
    MFS_RT_USER_ALL = 7u,
};

/* The prepared data for s, from the cache or built now.  Release it with
 * mfs_runtime_release().  NULL with err set on failure (too
 * large, out of memory, non-finite model-space position). */
const mfs_runtime *mfs_runtime_acquire(const mfs_scene *s, unsigned user, mfs_err *err);
void mfs_runtime_release(const mfs_runtime *rt);

/* Drops every cached result that nobody holds (for a long-lived process
 * that wants its memory back, and for tests). */
void mfs_runtime_cache_clear(void);

/* Cache statistics for tests: results built since start. */
uint64_t mfs_runtime_builds(void);

/* ---- building blocks (uncached; exposed for tests) ---- */

/* Builds rt from s: merge, reduce, sphere.  rt is zeroed first; free it with
 * mfs_runtime_free() whether or not this succeeds. */
int mfs_runtime_build(const mfs_scene *s, mfs_runtime *rt, mfs_err *err);
void mfs_runtime_free(mfs_runtime *rt);

/* Ritter bounding sphere of n points (xyz at p + i*stride floats), then
 * widened so that every point passes the float containment tests described
 * in docs/formats/sph.md.  n == 0 gives centre 0 and radius 0. */
void mfs_runtime_sphere(const float *p, size_t stride, uint32_t n, float center[3],
                        float *radius);

/* 1 if point q passes every float containment test against (c, r). */
int mfs_runtime_sphere_contains(const float c[3], float r, const float q[3]);

/* Largest coordinate magnitude a float-arithmetic reader can bound: the
 * squared distance between two such points, 3 * (2 * 5e18)^2, stays below
 * FLT_MAX. */
#define MFS_RT_SPHERE_MAX_COORD 5e18f

#endif

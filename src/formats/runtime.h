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

/* One LGE VertexData as the engine reads it today (GraphicsSystem/
 * VertexData.h, 64 bytes), as 32-bit words: x y z u v nx ny nz, skin
 * weights w0..w3 (float), bone indices b0..b3 (uint32).  The FBXConverter
 * document's layout (vrt_layout=plain) is the first 8 words. */
#define MFS_RT_WORDS 16
#define MFS_RT_PLAIN_WORDS 8
#define MFS_RT_SKIN 4     /* influences kept per vertex */

/* Joints the engine's skinning shader holds (skinnedTextureLight.vs.glsl:
 * inverse_bind_poses[100], bones.m[100]): a bone index a vertex uses must
 * stay below it. */
#define MFS_RT_MAX_JOINTS 100

/* The headers hold rawSizeInBytes as int32.  One vertex limit for both
 * layouts, so .tri and .sph (which do not depend on the layout's size)
 * succeed or fail together with .vrt. */
#define MFS_RT_MAX_VERTICES (INT32_MAX / (MFS_RT_WORDS * 4))
#define MFS_RT_MAX_TRIANGLES (INT32_MAX / 12)

/* Both layouts of the one model-space mesh.  Vertex words hold float bit
 * patterns (after the -0.0 and NaN folding of docs/formats/vrt.md) and
 * bone indices, ready to be stored little-endian. */
typedef struct mfs_runtime {
    /* skinned layout (the default): reduced on all 16 words */
    uint32_t n_vertices;
    uint32_t (*vertices)[MFS_RT_WORDS]; /* unique, in first-reference order */
    uint32_t n_triangles;
    uint32_t (*triangles)[3];           /* counter-clockwise in model space */

    /* plain layout: the same vertices reduced again on their first 8 words
     * (vertices that differ only in skinning merge).  When nothing merges,
     * plain and plain_of are NULL and the plain layout is the first 8
     * words of vertices, with the same indices. */
    uint32_t n_plain;
    uint32_t (*plain)[MFS_RT_PLAIN_WORDS]; /* unique, in first-reference order */
    uint32_t *plain_of;                    /* per vertex: its index in plain */

    uint32_t n_bones;       /* model-wide bone list (docs/formats/vrt.md) */
    uint32_t max_joint;     /* 1 + the highest bone index a vertex uses; 0 if none */

    /* Bounding sphere of every vertex; the same for both layouts (same
     * positions), so .sph needs no layout option. */
    float center[3];
    float radius;
} mfs_runtime;

/* Vertex count and triangle corner index of one layout. */
static inline uint32_t mfs_runtime_count(const mfs_runtime *rt, int plain)
{
    return plain ? rt->n_plain : rt->n_vertices;
}

static inline uint32_t mfs_runtime_index(const mfs_runtime *rt, int plain, uint32_t v)
{
    return plain && rt->plain_of ? rt->plain_of[v] : v;
}

/* The words of vertex v of one layout (MFS_RT_WORDS of them, or the first
 * MFS_RT_PLAIN_WORDS for plain). */
static inline const uint32_t *mfs_runtime_vertex(const mfs_runtime *rt, int plain, uint32_t v)
{
    return plain && rt->plain ? rt->plain[v] : rt->vertices[v];
}

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
 * large, out of memory, non-finite model-space position).  Both layouts are
 * built at once, so the cache key does not depend on any option. */
const mfs_runtime *mfs_runtime_acquire(const mfs_scene *s, unsigned user, mfs_err *err);
void mfs_runtime_release(const mfs_runtime *rt);

/* Drops every cached result that nobody holds (for a long-lived process
 * that wants its memory back, and for tests). */
void mfs_runtime_cache_clear(void);

/* Cache statistics for tests: results built since start. */
uint64_t mfs_runtime_builds(void);

/* ---- building blocks (uncached; exposed for tests) ---- */

/* Builds rt from s: skeleton, merge, reduce (both layouts), sphere.  rt is zeroed first; free it with
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

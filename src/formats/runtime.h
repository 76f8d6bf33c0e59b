/* The model preparation behind the FBXConverter runtime files (.vrt, .tri,
 * .sph; docs/formats/vrt.md).
 *
 * All three writers need the same merged, reduced, model-space mesh, and
 * building it is the expensive part of each.  A job builds it once: the
 * writers get it through the job's mfs_prepared (meshfs/formats.h), whose
 * first writer to ask builds it while the others wait.  A writer called
 * without one builds its own, so each writer still works alone.
 *
 * Internal to src/formats/; not part of the public contract. */
#ifndef MESHFS_FORMATS_RUNTIME_H
#define MESHFS_FORMATS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/scene.h"

#include "sphere.h"

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

/* The runtime mesh of s: prep's if prep was made for s (built by the first
 * writer to ask, then shared), else built into *own.  NULL with err set on
 * failure (too large, out of memory, non-finite model-space position).
 * Both layouts are built at once, so no option changes the result.  Call
 * mfs_runtime_free(own) when done, whichever way it went. */
const mfs_runtime *mfs_runtime_get(const mfs_scene *s, mfs_prepared *prep, mfs_runtime *own,
                                   mfs_err *err);

/* ---- building blocks (exposed for tests) ---- */

/* Builds rt from s: skeleton, merge, reduce (both layouts), sphere.  rt is
 * zeroed first; free it with mfs_runtime_free() whether or not this
 * succeeds. */
int mfs_runtime_build(const mfs_scene *s, mfs_runtime *rt, mfs_err *err);
void mfs_runtime_free(mfs_runtime *rt);

/* Builds started since the process started (for tests: how often a job
 * really built the mesh). */
uint64_t mfs_runtime_builds(void);

#endif

/* The .gmf writer's plan (internal to src/formats/): what gmf.c works out
 * before it writes a header, as gmf.c's head comment says: the split of big
 * meshes into surfaces, the skeleton and its host, frame counts, material
 * values, and each skinned mesh's weights (gmf_plan.c). */
#ifndef MESHFS_FORMATS_GMF_PLAN_H
#define MESHFS_FORMATS_GMF_PLAN_H

#include <stdint.h>

#include "meshfs/formats.h"

#include "gmf_frames.h"

#define GMF_FPS 30.0
/* Indices are unsigned short; 65535 keeps the largest index at 65534. */
#define GMF_MAX_SURF_VERTS 65535u
/* Keeps an index array's int32 size far from overflow (2^26 * 6 bytes). */
#define GMF_MAX_SURF_TRIS (1u << 26)
#define GMF_MAX_BONES 256u      /* bone indices are bytes */
#define GMF_MAX_FRAMES 100000u  /* ~55 minutes at 30 fps per animation */

typedef struct chunk {
    uint32_t tri0, ntri, nvert;
} chunk;

typedef struct mesh_plan {
    uint8_t eligible;  /* triangles with faces: written at all */
    uint8_t skinned;   /* has a bone linked to a node: goes to the skin host */
    uint32_t n_chunks; /* surfaces it becomes */
    chunk *chunks;     /* NULL: one surface holding every vertex as stored */
} mesh_plan;

/* Up to four influences of one vertex, strongest first. */
typedef struct infl {
    float w[4];
    uint8_t id[4];
    uint8_t q[4]; /* weights quantised to bytes summing to 255 */
} infl;

typedef struct gmf {
    const mfs_scene *s;
    mfs_sink *out;
    int32_t *mesh_node;  /* first placing node, -1 if none */
    mfs_mat4 *world;     /* rest placement of every node */
    mesh_plan *plan;
    int32_t *bone_id;    /* per node: BONE id, -1 if the node is not a bone */
    mfs_mat4 *bind_world; /* per bone node: its bind pose in model space */
    mfs_mat4 *bind_local; /* per bone node: its BONE matrix (canonical frame) */
    gmf_frame *frame;    /* per node: where its block sits (gmf_frames.h) */
    uint32_t *top;       /* bones whose parent is not a bone, in node order */
    uint32_t n_top, n_bones;
    int32_t host;        /* node whose MESH carries skinned surfaces and bones */
    uint32_t *frames;    /* per animation */
    int32_t *chan;       /* [anim * n_nodes + node]: channel index or -1 */
    char **matval;       /* per material: `material` property, NULL = none */
    uint32_t *mark, *local, *list, stamp; /* scratch for splitting meshes */
    infl *skin;          /* scratch: influences of one skinned mesh */
} gmf;

/* Works out g's plan from g->s (g zeroed but for s and out): 0, or -1 with
 * err.  gmf_free releases it, whatever gmf_plan returned. */
int gmf_plan(gmf *g, mfs_err *err);
void gmf_free(gmf *g);

/* The node whose placement mesh `mesh` is written under: its first placing
 * node, or the root. */
int32_t gmf_place_of(const gmf *g, uint32_t mesh);

/* g->skin: the four strongest influences of each vertex of skinned mesh m,
 * quantised to bytes summing to 255. */
int gmf_build_skin(gmf *g, const mfs_mesh *m, mfs_err *err);

#endif

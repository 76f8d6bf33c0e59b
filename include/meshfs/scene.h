/* The neutral scene model between importing and writing.
 *
 * Writers see only this: no assimp type crosses this header, so a writer can
 * be unit-tested with a scene built by hand and another importer can be added
 * without touching writers.
 *
 * Canonical frame (what every importer delivers, see docs/scene.md):
 *   right-handed, +Y up, +Z towards the viewer (glTF), 1 unit = 1 metre;
 *   triangles counter-clockwise seen from their front;
 *   UV origin bottom-left (v grows upwards, OpenGL / assimp native).
 * Each writer converts from this frame to its format's own.
 *
 * Matrices are column-vector convention (p' = M * p), stored row by row:
 *   m[0..3] is row 0, translation sits at m[3], m[7], m[11].
 *
 * Plain data: arrays with counts, indices instead of pointers between
 * objects.  Everything is owned by the scene and released by mfs_scene_free.
 */
#ifndef MESHFS_SCENE_H
#define MESHFS_SCENE_H

#include <stdint.h>

#include "meshfs/err.h"

#define MFS_MAX_UV 2

/* Deepest node tree an imported scene may have.  The formats nest a block
 * per node level (plus a few for surfaces and arrays), and their readers stop
 * at 256 levels (MFS_INSPECT_MAX_DEPTH), so deeper trees are refused at
 * import with a clear error rather than written unreadable. */
#define MFS_MAX_NODE_DEPTH 200

/* The import failure of a file that holds no mesh (an animation-only IQM,
 * a file of lights or tags): every view fails with exactly this text, so
 * a mount shows no views of such a model and meshfs-convert writes none
 * and counts it apart (docs/import.md, "Files without geometry"). */
#define MFS_SCENE_NO_MESH "no meshes in the scene"

typedef struct mfs_mat4 {
    float m[16];
} mfs_mat4;

typedef struct mfs_node {
    char *name;
    mfs_mat4 local;       /* relative to parent */
    int32_t parent;       /* index into scene->nodes, -1 for the root */
    uint32_t n_children;
    uint32_t *children;   /* indices, in file order */
    uint32_t n_meshes;
    uint32_t *meshes;     /* meshes this node places */
} mfs_node;

typedef struct mfs_weight {
    uint32_t vertex;
    float weight;
} mfs_weight;

typedef struct mfs_bone {
    char *name;           /* equals the name of the node it moves */
    int32_t node;         /* that node's index, -1 if none matched */
    mfs_mat4 offset;      /* mesh space -> bone space at bind pose (inverse bind) */
    uint32_t n_weights;
    mfs_weight *weights;
} mfs_bone;

typedef enum mfs_prim {
    MFS_PRIM_POINTS = 1,
    MFS_PRIM_LINES = 2,
    MFS_PRIM_TRIANGLES = 3,
} mfs_prim;

typedef struct mfs_mesh {
    char *name;
    int32_t material;     /* index into scene->materials, -1 if none */
    mfs_prim prim;        /* every face of a mesh has this many indices */

    uint32_t n_vertices;
    float (*positions)[3];
    float (*normals)[3];     /* NULL if absent; unit length otherwise */
    float (*tangents)[3];    /* NULL if absent */
    float (*bitangents)[3];  /* NULL if absent (set together with tangents) */
    float (*uv[MFS_MAX_UV])[2]; /* NULL if that set is absent; set 0 first */
    float (*colors)[4];      /* RGBA 0..1, NULL if absent */

    uint32_t n_faces;
    uint32_t *indices;       /* n_faces * prim entries */

    uint32_t n_bones;
    mfs_bone *bones;
} mfs_mesh;

typedef enum mfs_tex_kind {
    MFS_TEX_DIFFUSE,
    MFS_TEX_SPECULAR,
    MFS_TEX_NORMAL,
    MFS_TEX_REFLECTION,
    MFS_TEX_KINDS
} mfs_tex_kind;

typedef struct mfs_material {
    char *name;
    char *textures[MFS_TEX_KINDS]; /* path as written in the source file, or NULL */
} mfs_material;

typedef struct mfs_vec_key {
    double time;          /* ticks */
    float v[3];
} mfs_vec_key;

typedef struct mfs_quat_key {
    double time;          /* ticks */
    float q[4];           /* x, y, z, w; unit length */
} mfs_quat_key;

typedef struct mfs_channel {
    int32_t node;         /* index of the node it animates */
    uint32_t n_pos, n_rot, n_scale;
    mfs_vec_key *pos;     /* sorted by time */
    mfs_quat_key *rot;
    mfs_vec_key *scale;
} mfs_channel;

typedef struct mfs_animation {
    char *name;           /* may be "" */
    double duration;      /* ticks */
    double ticks_per_second; /* > 0 (importer substitutes 25 when the file says 0) */
    uint32_t n_channels;
    mfs_channel *channels;
} mfs_animation;

/* The one texture image a format embeds as pixels (.tex: the model's first
 * diffuse texture).  Filled by the importer only when asked
 * (mfs_import_opts.textures); otherwise all zero.
 *
 * Rows run top-down, as image files and decoders store them (row 0 is the
 * top of the picture, where v = 1 in the canonical UV frame); a writer that
 * needs GL's bottom-up order flips them.  Pixels are 8-bit, tightly packed
 * (no row padding), RGB or RGBA in that byte order. */
#define MFS_IMAGE_MAX_DIM 16384u              /* wider or taller is refused */
#define MFS_IMAGE_MAX_BYTES (256u << 20)      /* decoded size cap, likewise */

typedef struct mfs_image {
    uint32_t width, height; /* > 0 when pixels is set */
    uint32_t channels;      /* 3 = RGB, 4 = RGBA */
    uint8_t *pixels;        /* width * height * channels bytes; NULL: no image */
    char *source;           /* where it came from: a path under the source root,
                               or "*N" for embedded texture N; NULL if none */
    char *note;             /* why pixels is NULL (no texture, not found,
                               refused, undecodable, too large); NULL when
                               there is an image or nobody asked for one */
} mfs_image;

typedef struct mfs_scene {
    uint32_t n_nodes;
    mfs_node *nodes;      /* depth-first pre-order: nodes[0] is the root,
                             a parent always precedes its children */
    uint32_t n_meshes;
    mfs_mesh *meshes;
    uint32_t n_materials;
    mfs_material *materials;
    uint32_t n_animations;
    mfs_animation *animations;
    mfs_image image;      /* the texture formats embed (see mfs_image) */
    char *note;           /* what the importer repaired to read the model, said
                             once as a warning (mfs_report.repairs); NULL: nothing */
} mfs_scene;

/* ---- lifetime ---- */

mfs_scene *mfs_scene_new(void);
void mfs_scene_free(mfs_scene *s);

/* Whether s is strict UTF-8 (RFC 3629: no overlong forms, surrogates or
 * code points past U+10FFFF). */
int mfs_utf8_valid(const char *s);

/* Every name of s (nodes, meshes, bones, materials and their texture
 * paths, animations) made UTF-8: a name that is not is read as Latin-1
 * (src/scene/names.c says why), a leading byte-order mark is dropped, and
 * s->note says how many and the first.  Other names are kept byte for
 * byte.  The number repaired, or -1 with err out of memory. */
int mfs_scene_names_utf8(mfs_scene *s, mfs_err *err);

/* Frees what m holds and zeroes it. */
void mfs_mesh_clear(mfs_mesh *m);

/* Appends text to s->note ("; " between notes).  0, or -1 out of memory. */
int mfs_scene_note(mfs_scene *s, const char *text);

/* Meshes that no node places (mfs_scene_mesh_nodes says -1) are left out,
 * as assimp's exporters leave them out, and the nodes' mesh indices are
 * renumbered; if no mesh at all is placed, the root places them all
 * instead, so the model keeps its geometry.  Either way every view places
 * the same meshes the same way.  s->note says what was done.  The number
 * of such meshes, or -1 with err out of memory. */
int mfs_scene_place_orphans(mfs_scene *s, mfs_err *err);

/* An animation whose keys run past its duration (a B3D exporter's last
 * frame) gets the duration of its last key, so every frame the file holds
 * is played; s->note says so.  The number extended, or -1 with err. */
int mfs_scene_extend_durations(mfs_scene *s, mfs_err *err);

/* Duplicates a string for storage in a scene (NULL-safe, never returns NULL
 * for non-NULL input unless out of memory). */
char *mfs_strdup(const char *s);

/* Checks the invariants above (indices in range, tree order, counts, bone
 * node links).  Writers may assume a scene that passed. */
int mfs_scene_validate(const mfs_scene *s, mfs_err *err);

/* ---- math (src/scene/mat4.c) ---- */

void mfs_mat4_identity(mfs_mat4 *m);
int mfs_mat4_is_identity(const mfs_mat4 *m);
/* r = a * b (apply b first).  r may alias a or b. */
void mfs_mat4_mul(mfs_mat4 *r, const mfs_mat4 *a, const mfs_mat4 *b);
/* Returns -1 if singular (r untouched). */
int mfs_mat4_invert(mfs_mat4 *r, const mfs_mat4 *a);
void mfs_mat4_transpose(mfs_mat4 *r, const mfs_mat4 *a);
void mfs_mat4_point(const mfs_mat4 *m, const float p[3], float out[3]);
void mfs_mat4_vector(const mfs_mat4 *m, const float v[3], float out[3]);
/* Matrix for normals: inverse-transpose of the upper 3x3 (stored in a mat4,
 * no translation).  Falls back to the 3x3 itself if singular. */
void mfs_mat4_normal_matrix(mfs_mat4 *r, const mfs_mat4 *m);
float mfs_mat4_det3(const mfs_mat4 *m);
/* T * R * S from translation, unit quaternion (x,y,z,w) and scale. */
void mfs_mat4_compose(mfs_mat4 *r, const float t[3], const float q[4], const float s[3]);
/* Inverse of compose for matrices without shear; returns -1 if singular. */
int mfs_mat4_decompose(const mfs_mat4 *m, float t[3], float q[4], float s[3]);
void mfs_normalize3(float v[3]);

/* ---- derived data (src/scene/world.c, src/scene/anim.c) ---- */

/* world[i] = transform of node i in model space (parents applied).
 * world must hold n_nodes matrices. */
void mfs_scene_world(const mfs_scene *s, mfs_mat4 *world);

/* For each mesh, the node that places it (first in pre-order), or -1 when no
 * node references it.  out must hold n_meshes entries. */
void mfs_scene_mesh_nodes(const mfs_scene *s, int32_t *out);

/* Samples channel c at time t (ticks): linear for vectors, slerp (shortest
 * arc) for rotations, clamped at the ends.  Missing tracks fall back to the
 * components of `rest` (the node's local matrix).  Writes the local matrix. */
void mfs_channel_sample(const mfs_channel *c, double t, const mfs_mat4 *rest, mfs_mat4 *out);

/* One track at time t, by the rule mfs_channel_sample follows (n >= 1). */
void mfs_track_sample_vec(const mfs_vec_key *k, uint32_t n, double t, float out[3]);
void mfs_track_sample_quat(const mfs_quat_key *k, uint32_t n, double t, float out[4]);

/* A clip to cut from an animation: [start, end] in its ticks. */
typedef struct mfs_cut {
    const char *name;
    double start, end;
} mfs_cut;

/* Replaces s's animations with n clips cut from animation `take`
 * (src/scene/clips.c): each keeps the keys inside its span, gains a key
 * sampled at each end, and starts at time 0; duration end - start, the
 * take's rate.  -1 with err (s unchanged) when out of memory. */
int mfs_scene_cut_clips(mfs_scene *s, uint32_t take, const mfs_cut *cuts, size_t n, mfs_err *err);

/* Local matrix of every node at time t of animation a: animated nodes
 * sampled, the others at their rest matrix.  local must hold n_nodes. */
void mfs_scene_pose(const mfs_scene *s, const mfs_animation *a, double t, mfs_mat4 *local);

/* ---- node animation (src/scene/node_anim.c) ---- */

/* moved[n] = 1 when node animation moves node n: an animation has a channel
 * for n or one of its ancestors with a key away from that node's rest local
 * matrix (beyond float rounding, 1e-6 relative); 0 otherwise.  moved holds
 * n_nodes.  Returns the number of nodes whose own channels move them (0: a
 * model without node motion, whatever channels it carries). */
uint32_t mfs_scene_moved_nodes(const mfs_scene *s, unsigned char *moved);

/* ---- keys that follow a path (src/scene/refine.c) ---- */

/* How far a channel's interpolated pose may stray from the source's path:
 * this fraction of the model's size (mfs_scene_size). */
#define MFS_FOLLOW_TOLERANCE 1e-4

/* A source's own pose of one node at time t (ticks): translation, unit
 * quaternion (x, y, z, w), scale. */
typedef void (*mfs_pose_fn)(void *ctx, double t, float tr[3], float q[4], float sc[3]);

/* Fills out (all three tracks, one key per time) with fn's pose at each of
 * the n sorted, distinct times, plus keys between them wherever the scene's
 * interpolation (mfs_channel_sample: linear, shortest-arc slerp) would
 * leave fn's path by more than MFS_FOLLOW_TOLERANCE * size at a quarter of
 * an interval (halving it up to 10 times; at most 64 added keys per source
 * key plus 4096 in all, past which the rest stays at the source keys).
 * Neighbouring rotation keys are
 * kept on one hemisphere.  out->node is 0: the caller sets it.  0, or -1
 * with err (out empty). */
int mfs_channel_follow(mfs_channel *out, const double *times, size_t n, mfs_pose_fn fn, void *ctx,
                       double size, mfs_err *err);

/* The largest extent of mfs_scene_bounds, 1 for a scene without vertices. */
double mfs_scene_size(const mfs_scene *s);

/* ---- importers' clean-ups (src/scene/tidy.c) ---- */

/* Drops bones linked to no node, and weights that are not finite or not
 * positive; scales each vertex's remaining weights to sum to 1. */
int mfs_mesh_normalise_weights(mfs_mesh *m, mfs_err *err);

/* Gives every unnamed mesh the name of the node that places it, or
 * "mesh<N>" when that has none. */
int mfs_scene_name_meshes(mfs_scene *s, mfs_err *err);

/* Bones of one mesh that share a name, a node and an inverse bind (a .x
 * file's two SkinWeights blocks for one frame, which assimp's structure
 * check refuses) are one bone whose weights were split: merged into the
 * first, a vertex's weights in both summed, and said in s->note.  Bones of
 * one name with different inverse binds are left as they are. */
int mfs_mesh_merge_bones(mfs_scene *s, mfs_mesh *m, mfs_err *err);

/* Every importer's last step, so no writer sees a scene one importer would
 * not give: names made UTF-8 (mfs_scene_names_utf8), meshes no node places
 * dealt with (mfs_scene_place_orphans), durations that end before the keys
 * extended (mfs_scene_extend_durations), unnamed meshes named, bones of one
 * name merged (mfs_mesh_merge_bones), then mfs_scene_validate. */
int mfs_scene_finish(mfs_scene *s, mfs_err *err);

/* ---- skeleton (src/scene/skeleton.c) ---- */

/* True if any of m's bones is linked to a node. */
int mfs_mesh_is_skinned(const mfs_mesh *m);

/* depth[n] = number of ancestors of node n.  depth holds n_nodes. */
void mfs_scene_depths(const mfs_scene *s, uint32_t *depth);

/* Lowest common ancestor of nodes a and b (depth from mfs_scene_depths). */
int32_t mfs_scene_lca(const mfs_scene *s, const uint32_t *depth, int32_t a, int32_t b);

/* The joints of the skinned meshes selected by use (NULL: every mesh):
 * every node a bone links to, plus the nodes between those and their lowest
 * common ancestor (which is a joint only if a bone links to it).  Sets
 * mark[n] to 0 for a joint and -1 otherwise (mark holds n_nodes); returns
 * the number of joints.  Numbering them in node order gives the pre-order
 * that .gmf bone ids and .vrt bone indices share. */
uint32_t mfs_scene_mark_skeleton(const mfs_scene *s, const uint32_t *depth,
                                 const unsigned char *use, int32_t *mark);

/* Counts over all meshes, triangle meshes only for triangles. */
uint64_t mfs_scene_vertex_count(const mfs_scene *s);
uint64_t mfs_scene_triangle_count(const mfs_scene *s);

/* Axis-aligned box of every mesh's vertices at every node that places it
 * (model space; a mesh no node places counts where it is); triangles_only
 * leaves point and line meshes out.  Returns 0 if there is no vertex. */
int mfs_scene_bounds(const mfs_scene *s, int triangles_only, float min[3], float max[3]);

#endif

/* Where the .gmf writer puts each block, so that a loader keeping only the
 * translation of NODE/MESH matrices (Leadwerks' legacy loader, research
 * gmf.md "What a real loader keeps of limb matrices") and a loader composing
 * full matrices place every mesh alike (internal to src/formats/; rules and
 * reasons in docs/formats/gmf.md, "Placement").
 *
 * All matrices are canonical (scene.h: column vectors, model space, rest).
 * For every node the plan gives the frame of the block its non-bone children
 * hang from: for a bone (other than node 0) its BONE block, otherwise its
 * MESH/NODE block. */
#ifndef MESHFS_FORMATS_GMF_FRAMES_H
#define MESHFS_FORMATS_GMF_FRAMES_H

#include "meshfs/scene.h"

typedef struct gmf_frame {
    /* The nearest bone at or above the node (node 0 excluded: it is always
     * the root MESH), -1 outside the skeleton. */
    int32_t bone;
    /* F: the block's model-space matrix as a full-matrix loader composes it.
     * A MESH/NODE outside the skeleton: a pure translation to its node's
     * world origin.  A MESH/NODE below a bone: its bone's bind axes at its
     * node's origin.  A BONE: its bind pose. */
    mfs_mat4 at;
    /* Inverse of F's linear part (identity if singular): takes a model-space
     * offset into the block's axes. */
    mfs_mat4 in_axes;
    /* X: where the node's own content belongs in the file's rest pose: its
     * world matrix, or for the skeleton and nodes below it, the bind pose
     * (bone bind x the rest chain from the bone down). */
    mfs_mat4 target;
    /* inverse(F) x X, linear (F and X share their origin): what is baked
     * into the vertices a MESH holds. */
    mfs_mat4 bake;
    /* Inverse of bake (identity if singular): the right factor of every
     * animation key, so that the posed block is world(t) x unbake. */
    mfs_mat4 unbake;
} gmf_frame;

/* bone_id[n] >= 0 marks bone nodes; bind_world[n] (read for bones only) is
 * a bone's bind pose in model space.  out holds n_nodes frames.  Needs the
 * scene in pre-order (parents first). */
void gmf_plan_frames(const mfs_scene *s, const mfs_mat4 *world, const int32_t *bone_id,
                     const mfs_mat4 *bind_world, gmf_frame *out);

/* The translation written for the MESH/NODE of node n (not a bone, or node
 * 0): its origin minus its parent block's, in the parent block's axes.
 * Outside the skeleton every block's axes are the model's, so these
 * translations summed down the tree give each block's model-space origin. */
void gmf_limb_translation(const mfs_scene *s, const gmf_frame *fr, uint32_t n, float t[3]);

#endif

/* Folding assimp's FBX transform chains back into their nodes (internal to
 * the importer; docs/import.md, "FBX transform chains").
 *
 * assimp 5.2.5 imports an FBX node whose transform has more than T, R and S
 * (pivots, offsets, pre/post rotation, geometric transform) as a chain of
 * helper nodes named "<Name>_$AssimpFbx$_<Element>" above the real node
 * "<Name>", plus "Geometric*Inverse" helpers between the real node and its
 * children.  That chain is right where assimp's own folding is not
 * (shared/research/fbx_transforms.md), but its helper names must not reach a
 * view.  This step works on the neutral scene, so hand-built scenes test it. */
#ifndef MESHFS_IMPORT_FBX_CHAIN_H
#define MESHFS_IMPORT_FBX_CHAIN_H

#include "meshfs/scene.h"

/* The marker assimp puts between a node's name and the chain element. */
#define MFS_FBX_HELPER_MARK "_$AssimpFbx$_"

/* Collapses every helper chain of s in place:
 *  - the helpers from Translation to ScalingPivotInverse multiply, top down,
 *    into the real node's matrix;
 *  - GeometricTranslation/Rotation/Scaling are baked into the real node's
 *    meshes only (positions, normals, tangents; winding flipped if the
 *    product mirrors); a mesh that another node also places is duplicated
 *    first, so the other placements do not move; bone offset matrices are
 *    left alone (assimp takes them from the cluster's Transform, which does
 *    not contain the geometric transform, so baking it makes skinning follow
 *    the FBX rule too);
 *  - the Geometric*Inverse helpers vanish and their children hang under the
 *    real node;
 *  - in every animation, channels on a chain's helpers are sampled at the
 *    union of their key times and composed, with the unanimated helpers'
 *    matrices, into one channel on the real node; a channel on the real node
 *    itself (assimp's "simple" channel, which already holds the whole local
 *    transform) replaces the chain product, with assimp's uninverted
 *    PostRotation corrected (key rotation times the PostRotation helper's
 *    rotation twice);
 *  - channels on geometric helpers are dropped (a mesh cannot be animated
 *    that way in the scene model), node indices of channels and bones are
 *    renumbered.
 * Helpers that do not sit in a chain as assimp builds it (a helper with
 * several children, or whose chain does not end at a node of its prefix
 * name) are dissolved into their children, matrices only.
 * Returns 0, or -1 with err (out of memory). */
int mfs_fbx_fold_chains(mfs_scene *s, mfs_err *err);

#endif

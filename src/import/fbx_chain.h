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

/* FBX InheritType (the node property; assimp 5.2.5 ignores it and keeps it
 * only as node metadata): 0 = RrSs, 1 = RSrs (what the scene model's
 * World(parent) * Local is), 2 = Rrs. */
enum { MFS_FBX_INHERIT_RRSS = 0, MFS_FBX_INHERIT_RSRS = 1, MFS_FBX_INHERIT_RRS = 2 };

/* Places the nodes whose InheritType is RrSs or Rrs the way the FBX SDK
 * does (its CalculateGlobalTransform sample; fbx_inherit.c): with GR the rotation and
 * GS = GR^-1 * linear(World(parent)) the scale/shear of the parent's world
 * matrix, LR and LS the node's local rotation and scaling,
 *   RrSs: linear(World) = GR * LR * GS * LS
 *   Rrs:  linear(World) = GR * LR * GS * PLS^-1 * LS   (PLS: the parent's
 *                                                      Lcl Scaling)
 * and the translation World(parent) * (the local matrix's translation).
 * The node's local matrix becomes World(parent)^-1 * World, so its children
 * (and the writers, which multiply locals) see the FBX SDK's world matrix.
 * names[i], types[i] (n of them) name the real nodes (after
 * mfs_fbx_fold_chains) and their InheritType; nodes not named are RSrs.
 * The rest pose only: a node that is, or has an ancestor that is, animated
 * keeps RSrs (its channels replace the local matrix).  A correction that
 * changes no element by more than 1e-6 of the matrix's size is not made.
 * Returns the number of nodes changed. */
uint32_t mfs_fbx_apply_inherit(mfs_scene *s, const char *const *names, const int *types, size_t n);

#endif

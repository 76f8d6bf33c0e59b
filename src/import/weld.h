/* Welding identical vertices with meshoptimizer (internal to the importer;
 * weld.c says how it relates to assimp's JoinIdenticalVertices). */
#ifndef MESHFS_IMPORT_WELD_H
#define MESHFS_IMPORT_WELD_H

#include "meshfs/scene.h"

/* Merges vertices whose every attribute (position, normal, tangent frame,
 * UV sets, colour, bone influences) is bitwise equal once -0.0 is read as
 * +0.0, and drops vertices no face uses; survivors keep their first
 * occurrence's order, indices and bone weights follow.  Deterministic.
 * Run after normals and tangents are computed.  Returns -1 with err when
 * out of memory or when a face names a vertex the mesh does not have. */
int mfs_weld_mesh(mfs_mesh *m, mfs_err *err);

/* Only the first half of mfs_weld_mesh: drops the vertices no face uses,
 * keeps every other one (duplicates too) in its order.  For meshes the file
 * gives indexed, whose vertices are as the author wanted them; a shared
 * vertex buffer still loses the other meshes' vertices.  Same errors. */
int mfs_drop_unused_vertices(mfs_mesh *m, mfs_err *err);

#endif

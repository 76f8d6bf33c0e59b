/* Welding identical vertices with meshoptimizer (internal to the importer;
 * weld.c says how it relates to assimp's JoinIdenticalVertices). */
#ifndef MESHFS_IMPORT_WELD_H
#define MESHFS_IMPORT_WELD_H

#include "meshfs/scene.h"

/* Merges vertices whose every attribute is bitwise equal and drops
 * vertices no face uses; indices and bone weights follow.  Returns -1 with
 * err only when out of memory. */
int mfs_weld_mesh(mfs_mesh *m, mfs_err *err);

#endif

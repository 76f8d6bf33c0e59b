/* What every native importer shares (internal to the importer): reading a
 * whole file through the confined file system, and finishing a mesh and a
 * scene the way assimp's post-processing does.  native_gltf.c and
 * native_obj.c use it; native.c, the dispatch, uses them and it, so the uses
 * go one way (native.c -> native_<format>.c -> native_common.c). */
#ifndef MESHFS_IMPORT_NATIVE_COMMON_H
#define MESHFS_IMPORT_NATIVE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "iofs.h"
#include "meshfs/scene.h"

/* A whole file read through fs (mapped, recorded as a dependency).  NULL
 * when absent or refused (fs->refused_count says which). */
typedef struct mfs_native_file {
    const uint8_t *data;
    size_t size;
    struct aiFile *handle;
} mfs_native_file;

int mfs_native_open(mfs_iofs *fs, const char *rel, mfs_native_file *f);
void mfs_native_close(mfs_iofs *fs, mfs_native_file *f);

/* What assimp's post-processing does to a freshly read mesh, in the same
 * order: GenSmoothNormals (where there are none), CalcTangentSpace (when
 * `tangents` is set, where there are none and there are normals and UVs:
 * mfs_import_opts.tangents), JoinIdenticalVertices (by
 * meshoptimizer, weld.c), then the scene copy's clean-up: non-finite or
 * zero normals and tangents replaced, bones without a node dropped,
 * weights normalised.  Triangle meshes only get normals and tangents. */
int mfs_native_finish_mesh(mfs_mesh *m, int tangents, mfs_err *err);
/* The same, for a mesh the file gives indexed (a glTF primitive with
 * `indices`): its vertices are kept as the file has them, duplicates
 * included, only those no face uses dropped (docs/import.md, "Welding"). */
int mfs_native_finish_indexed_mesh(mfs_mesh *m, int tangents, mfs_err *err);

/* assimp's GenVertexNormalsProcess (no angle limit) and
 * CalcTangentsProcess (45 degrees), reproduced so that the views do not
 * depend on which importer read the model (native_normals.c). */
int mfs_gen_smooth_normals(mfs_mesh *m, mfs_err *err);
int mfs_calc_tangents(mfs_mesh *m, mfs_err *err);

/* Names meshes without one after their node, or "mesh<N>", and validates:
 * the last step of every native import. */
int mfs_native_finish_scene(mfs_scene *s, mfs_err *err);

#endif

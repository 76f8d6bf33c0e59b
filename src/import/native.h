/* The native import path: glTF 2.0/glb through cgltf and OBJ/MTL through
 * fast_obj, filling the same neutral scene the assimp path fills (internal
 * to the importer; docs/import.md, "Native importers").
 *
 * Both parsers read only through the importer's confined file system (iofs):
 * the same root confinement, the same dependency record, the same worker. */
#ifndef MESHFS_IMPORT_NATIVE_H
#define MESHFS_IMPORT_NATIVE_H

#include <stddef.h>

#include "iofs.h"
#include "meshfs/import.h"

/* mfs_import's dispatch.  Returns 0 with *out set when the native path
 * imported the model, -1 with err when the import failed for good (a file
 * refused for leaving the root, a scene that fails validation), and 1 when
 * assimp is to read the model: importer=assimp, a format without a native
 * parser, a build without the parsers, or the native parser declined (an
 * error, or something it does not support: the reason goes to
 * mfs_import_route(), which the worker reports and the mount logs at debug
 * level, and, with MESHFS_DEBUG set, to stderr for in-process tools).  On 1 the
 * dependency list is emptied, so that assimp's reads alone make it. */
int mfs_native_try(mfs_iofs *fs, const char *rel, const mfs_import_opts *o, mfs_scene **out,
                   mfs_err *err);

/* The per-format importers: 0 imported, -1 failed (err), 1 declined (why). */
int mfs_native_gltf(mfs_iofs *fs, const char *rel, const mfs_import_opts *o, mfs_scene **out,
                    char *why, size_t whysz, mfs_err *err);
int mfs_native_obj(mfs_iofs *fs, const char *rel, const mfs_import_opts *o, mfs_scene **out,
                   char *why, size_t whysz, mfs_err *err);

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

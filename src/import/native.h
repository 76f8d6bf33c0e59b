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
 * mfs_deps.route, which the worker reports and the mount logs at debug
 * level, and, with MESHFS_DEBUG set, to stderr for in-process tools).  On 1 the
 * dependency list is emptied, so that assimp's reads alone make it. */
int mfs_native_try(mfs_iofs *fs, const char *rel, const mfs_import_opts *o, mfs_scene **out,
                   mfs_err *err);

/* The per-format importers: 0 imported, -1 failed (err), 1 declined (why). */
int mfs_native_gltf(mfs_iofs *fs, const char *rel, const mfs_import_opts *o, mfs_scene **out,
                    char *why, size_t whysz, mfs_err *err);
int mfs_native_obj(mfs_iofs *fs, const char *rel, const mfs_import_opts *o, mfs_scene **out,
                   char *why, size_t whysz, mfs_err *err);

#endif

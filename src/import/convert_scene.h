/* Internal to the importer: aiScene -> mfs_scene, and the frame fix-up. */
#ifndef MESHFS_IMPORT_CONVERT_SCENE_H
#define MESHFS_IMPORT_CONVERT_SCENE_H

#include <assimp/scene.h>

#include "iofs.h"
#include "meshfs/scene.h"

/* mfs_import without the settings files (import.c reads and applies them
 * around it): the native parsers or assimp, the frame, the checks. */
int mfs_import_scene(const char *root, const char *relpath, const mfs_import_opts *o,
                     mfs_scene **out, mfs_deps *deps, mfs_err *err);

/* Copies everything writers need out of an assimp scene. */
mfs_scene *mfs_from_aiscene(const struct aiScene *ai, mfs_err *err);

/* The change of basis from what the file declares to the canonical frame
 * (right-handed, +Y up, metres), as a matrix; identity when the file
 * declares nothing assimp has not already applied.  `ext` is the model's
 * lower-case extension; formats whose declaration assimp drops (3MF, AMF,
 * OpenGEX) are read again from root/rel through fs.  Returns 0, or -1 with
 * err for nonsense axes or units. */
int mfs_frame_matrix(const struct aiScene *ai, mfs_iofs *fs, const char *rel, const char *ext,
                     mfs_mat4 *c, char *why, size_t whysz, mfs_err *err);

/* Applies c to the scene: premultiplied into the root node (a new root is
 * inserted when the root itself is animated), and triangles flipped when c
 * mirrors, so front faces stay counter-clockwise. */
int mfs_frame_apply(mfs_scene *s, const mfs_mat4 *c, mfs_err *err);

#endif

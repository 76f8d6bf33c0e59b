/* Importing a model file into the neutral scene (assimp behind it).
 *
 * Only the worker process links this.  The importer reads every file through
 * a confined file system: paths are resolved under `root` and anything that
 * leaves it (.., absolute paths, symlinks pointing out) is refused, failing
 * the import with an error naming the refused path.  Every file opened is
 * recorded with its size and XXH3-128, which is what cache keys are built
 * from. */
#ifndef MESHFS_IMPORT_H
#define MESHFS_IMPORT_H

#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/scene.h"

typedef struct mfs_dep {
    char *path;           /* relative to root, '/'-separated */
    uint64_t size;
    uint8_t hash[16];     /* XXH3-128 of the bytes, canonical (big-endian) form */
} mfs_dep;

typedef struct mfs_deps {
    mfs_dep *v;
    uint32_t n, cap;
} mfs_deps;

void mfs_deps_free(mfs_deps *d);

typedef struct mfs_import_opts {
    int source_frame;     /* keep the importer's raw coordinates */
    /* Decode the model's first diffuse texture into scene->image (for .tex;
     * docs/formats/tex.md).  The image file is read through the confined file
     * system, so it becomes a dependency; a texture that is missing, refused
     * or undecodable is never an import error, only scene->image.note. */
    int textures;
} mfs_import_opts;

/* Imports root/relpath.  On success *out owns the scene; deps lists every
 * file read (the model first).  deps is filled as far as it got even on
 * failure, so a failed conversion can still be keyed by its inputs. */
int mfs_import(const char *root, const char *relpath, const mfs_import_opts *o,
               mfs_scene **out, mfs_deps *deps, mfs_err *err);

/* True if assimp has an importer for this file name's extension. */
int mfs_import_supported(const char *filename);

/* Bit mask of post-processing steps used, for the benchmark baseline and the
 * docs (see docs/import.md). */
unsigned mfs_import_ai_flags(void);

#endif

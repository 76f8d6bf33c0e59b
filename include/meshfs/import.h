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
#include <sys/types.h>

#include "meshfs/err.h"
#include "meshfs/scene.h"

/* What an input is (docs/cache.md, "Absent inputs").  Every path an
 * importer looked at decides the views, found or not: a file that appears
 * where the importer found none must make the views again. */
typedef enum mfs_dep_kind {
    MFS_DEP_FILE = 0,    /* a file read: size and hash of its bytes */
    MFS_DEP_ABSENT = 1,  /* a path tried that named no regular file beneath
                            the root: size 0, hash zero */
    MFS_DEP_LISTING = 2, /* a folder searched for a name ignoring case:
                            path is "folder/name" as searched for, size the
                            count of matching names, hash theirs
                            (include/meshfs/inputs.h) */
    MFS_DEP_MISSING = 3, /* absent, and a file the model references (not a
                            candidate a search tried): said as a warning */
    MFS_DEP_UNREADABLE = 4, /* a regular file there that the conversion may
                            not read (EACCES: it runs as the model's owner):
                            converted without it, said as a warning; size
                            0, hash that of its stat (mfs_input_stat_hash),
                            so a chmod, a chown or an edit changes it */
} mfs_dep_kind;

typedef struct mfs_dep {
    char *path;           /* relative to root, '/'-separated */
    uint64_t size;
    uint8_t hash[16];     /* XXH3-128 of the bytes, canonical (big-endian) form */
    uint8_t kind;         /* mfs_dep_kind; 0 (a file) when zeroed */
    /* 1: recorded by the texture search alone (src/import/texture.c), so
     * an input of the views that read the texture's image (.tex:
     * mfs_format_info.reads_image) and of no other: their keys leave it
     * out, and a mount without them does not check it (docs/cache.md,
     * "Keys").  A path the import read before the search stays 0. */
    uint8_t texture;
} mfs_dep;

typedef struct mfs_deps {
    mfs_dep *v;
    uint32_t n, cap;
    /* Set by a failed mfs_import when an open of the model's own path failed
     * or was refused (it was renamed, removed or a folder on its path was
     * swapped for a link): the failure says nothing about the model's bytes,
     * so it must not be remembered against them. */
    int model_unopened;
    /* Set by a failed mfs_import whose reason lies outside the inputs'
     * bytes (a settings file of another owner, docs/settings.md): not
     * remembered, and not run again at once either; the next access tries
     * again. */
    int unkeyed;
} mfs_deps;

void mfs_deps_free(mfs_deps *d);

/* Which importer reads glTF 2.0/glb and OBJ (docs/import.md, "Native
 * importers"): auto tries the native parsers (cgltf, fast_obj) first and
 * falls back to assimp when they decline; assimp uses assimp for all. */
typedef enum mfs_importer {
    MFS_IMPORTER_AUTO = 0,
    MFS_IMPORTER_ASSIMP = 1,
} mfs_importer;

typedef struct mfs_import_opts {
    int source_frame;     /* keep the importer's raw coordinates */
    int importer;         /* mfs_importer */
    /* Decode the model's first diffuse texture into scene->image (for .tex;
     * docs/formats/tex.md).  The search for it runs whatever this says
     * (mfs_import_texture_from): every candidate is opened through the
     * confined file system, so it is a dependency either way, and a model's
     * inputs are the same whichever formats a run writes (docs/cache.md,
     * "Keys").  Only the decoding is skipped.  A texture that is missing,
     * refused or undecodable is never an import error, only
     * scene->image.note. */
    int textures;
    /* Compute tangents and bitangents (assimp's CalcTangentSpace; the
     * native importers' mfs_calc_tangents), which only .gmf stores.  Not
     * only .gmf's choice: the welding compares them, so with them a model
     * may keep more vertices in every view.  A conversion therefore always
     * asks for them (src/worker/job.c), so that no view's bytes depend on
     * whether .gmf was among the formats (docs/import.md, "Tangents");
     * 0 is for the tools that measure the step (bench-import). */
    int tangents;
    /* The file the host checked (mfs_job.model_dev/ino): an open of the
     * model's path that yields another file fails the import as the model
     * replaced (mfs_deps.model_unopened).  model_id_known 0: unchecked. */
    int model_id_known;
    dev_t model_dev;
    ino_t model_ino;
    /* Normals computed anew, smoothing across edges up to this many degrees
     * and splitting above (a settings file's normals = compute ANGLE):
     * assimp's GenSmoothNormals after its RemoveComponent of the file's
     * normals, so a model with it set is always read by assimp. */
    int normals_compute;
    float normals_angle;
    /* When set, receives the settings that applied (docs/settings.md): the
     * caller applies the per-format ones to the writers' options. */
    struct mfs_settings *settings;
} mfs_import_opts;

/* Imports root/relpath.  On success *out owns the scene; deps lists every
 * file read (the model first), every path tried and not found, and every
 * folder searched (mfs_dep_kind), the model's settings files included,
 * found or not (docs/settings.md: they are read first and applied to the
 * import and the scene).  deps is filled as far as it got even on failure,
 * so a failed conversion can still be keyed by its inputs. */
int mfs_import(const char *root, const char *relpath, const mfs_import_opts *o,
               mfs_scene **out, mfs_deps *deps, mfs_err *err);

/* How the last mfs_import in this process went: "native gltf", "native
 * obj", "assimp", or "assimp (native declined: <reason>)".  For the
 * worker's debug log and the tests; never part of any output. */
const char *mfs_import_route(void);

/* These two live in the core library (src/import/native_choice.c), so the
 * daemon and meshfs-convert parse the option without linking the importer.
 * mfs_importer_parse: "auto" or "assimp" -> *out; -1 with err naming the
 * value otherwise.  mfs_importer_name: the canonical spelling. */
int mfs_importer_parse(const char *value, int *out, mfs_err *err);
const char *mfs_importer_name(int importer);

/* True if assimp has an importer for this file name's extension. */
int mfs_import_supported(const char *filename);

/* Bit mask of post-processing steps used for these options (NULL: all
 * off), for the benchmark baseline and the docs (see docs/import.md). */
unsigned mfs_import_ai_flags(const mfs_import_opts *o);

#endif

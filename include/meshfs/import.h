/* The importer's face (src/import/), in two parts: reading a model into the
 * neutral scene, and the inputs that are not a file's bytes (paths tried and
 * folders searched), which the cache checks by the same definition. */
#ifndef MESHFS_IMPORT_H
#define MESHFS_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "meshfs/err.h"
#include "meshfs/scene.h"

/* ---- import ---- */

/* Importing a model file into the neutral scene (assimp behind it).
 *
 * Only the worker process links this.  The importer reads every file through
 * a confined file system: paths are resolved under `root` and anything that
 * leaves it (.., absolute paths, symlinks pointing out) is refused, failing
 * the import with an error naming the refused path.  Every file opened is
 * recorded with its size and XXH3-128, which is what cache keys are built
 * from. */

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
    /* How mfs_import read the model: "native gltf", "native obj",
     * "assimp", or "assimp (native declined: <reason>)".  For the worker's
     * debug log and the tests; never part of any output. */
    char route[MFS_ERR_MAX];
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

/* ---- inputs ---- */

/* Inputs that are not a file's bytes: a path an importer tried and did not
 * find, and a folder it searched for a name (mfs_dep_kind in import.h).
 *
 * Both decide a model's views as much as the files it read do: a .mtl
 * copied in after the .obj, or a texture whose better-matching name
 * appears, must give other views.  The worker records them (src/import/),
 * the cache keys and checks them the same way (src/cache/manifest.c,
 * views.c), so these two functions are the one definition of "still
 * absent" and of a listing's value, for the importer and for every check.
 *
 * Paths are relative to rootfd and resolved beneath it, as the importer
 * resolves them (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS). */

/* 1: path names no regular file beneath the root (not there, a component
 * not a folder, a link leading out, or not a regular file): what the
 * importer would again fail to open; 0: a regular file is there; -1 any
 * other error (errno). */
int mfs_input_absent(int rootfd, const char *path);

/* The folder that stands for an absent path: the deepest folder on its
 * way that exists beneath the root and holds no entry of the next name
 * (the path's own folder, or one above it when that is missing too), into
 * dir ("." for the root).  While that folder's stat is unchanged (and its
 * times had settled: mfs_input_times_settled), no name was added to it, so
 * the path is still absent: one stat of a folder answers for every absent
 * name in it.  1 found; 0 the path's way holds an entry that is not simply
 * missing (a link, a folder, a file in a folder's place: check the path
 * itself); -1 error (errno). */
int mfs_input_witness(int rootfd, const char *path, char *dir, size_t cap);

/* Whether a folder's times are old enough that a change made now would
 * move them: a change within the same tick of its file system's clock
 * (whole seconds on some) leaves them as they were.  Folder stats taken
 * before that stand for nothing (the mount reads such a folder again; the
 * memo checks the names in it one by one). */
int mfs_input_times_settled(const struct stat *st);

/* A search's pattern (the last component of a listing input's path) and
 * the names it matches, the one rule for the importer and every check:
 *  - "NAME": names equal to NAME ignoring case;
 *  - "STEM.*": names equal ignoring case to STEM "." EXT, EXT one of the
 *    image extensions tga png jpg jpeg bmp dds (id Tech's rule: a texture
 *    named .tga is whichever image of that stem ships).
 * Returns -1 for no match, else the name's rank: 0 for "NAME", the
 * extension's place in that list for "STEM.*" (lower is preferred). */
int mfs_input_name_rank(const char *pattern, const char *name);

/* The stem pattern of a texture's base name: "wood.tga" -> "wood.*",
 * "skin" (no extension) -> "skin.*", "metal.001" (not an image
 * extension) -> "metal.001.*".  0, or -1 when it does not fit in cap. */
int mfs_input_stem_pattern(const char *base, char *out, size_t cap);

/* A search's value: path is "folder/PATTERN" ("PATTERN" for the root);
 * *count receives how many entries of the folder match, hash the
 * XXH3-128 (canonical) of those names in byte order, each followed by a
 * NUL.  A folder that cannot be opened has none.  Cost: one listing of
 * the folder.  0, or -1 out of memory. */
int mfs_input_listing(int rootfd, const char *path, uint64_t *count, uint8_t hash[16]);

/* The search's answer: the matching name of lowest rank, the byte-order
 * smallest among equals (so it does not depend on directory order), into
 * best.  1 found, 0 none. */
int mfs_input_search(int rootfd, const char *path, char *best, size_t cap);

/* Whether input i of deps is a referenced file to be said missing
 * (MFS_DEP_MISSING), once: not if an earlier missing input or a file read
 * has the same base name (assimp tries a reference under other folders,
 * glTF2/x/glTF2/x/a.bin, before it gives up or finds it). */
int mfs_input_said(const mfs_dep *deps, uint32_t n, uint32_t i);

/* The text of that warning for input d, as every user sees it: the mount's
 * log, user.meshfs.warnings, meshfs-convert's output and report: for a
 * missing file "referenced file 'P' is missing", for an unreadable one
 * "referenced file 'P' cannot be read by the model's owner: converted
 * without it".  Returns what snprintf returns. */
int mfs_input_warning(const mfs_dep *d, char *buf, size_t n);

/* The value of an unreadable input (MFS_DEP_UNREADABLE): the XXH3-128 of
 * what its stat says that decides who may read it and what it holds
 * (device, inode, size, mtime, ctime, mode, owner, group).  0, 1 when path
 * names no regular file now, -1 error (errno). */
int mfs_input_stat_hash(int rootfd, const char *path, uint8_t hash[16]);

/* Whether an absent, listing or unreadable input d still holds: 1 yes, 0
 * changed, -1 error (errno).  A file input is not for this function (-1,
 * EINVAL). */
int mfs_input_holds(int rootfd, const mfs_dep *d);

#endif

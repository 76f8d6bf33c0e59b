/* A confined, recording file system for assimp (internal to the importer). */
#ifndef MESHFS_IMPORT_IOFS_H
#define MESHFS_IMPORT_IOFS_H

#include <assimp/cfileio.h>

#include "meshfs/import.h"

typedef struct mfs_iofs {
    struct aiFileIO io;   /* handed to assimp; UserData points back here */
    int rootfd;
    const char *model;    /* the model's path as handed over (borrowed), or
                             NULL: opened exactly so, never rewritten */
    size_t model_dir;     /* length of its folder: up to its last '/' */
    size_t parser_dir;    /* ... as the parsers take it: up to its last
                             '/' or '\' (assimp, cgltf and fast_obj all do) */
    mfs_deps *deps;       /* every file opened, model first; paths not found */
    int model_id_known;   /* the model's path must open this file */
    dev_t model_dev;
    ino_t model_ino;
    int model_replaced;   /* it opened another one: refused */
    char refused[512];    /* first path refused for leaving the root */
    int refused_count;
    int oom;
    int searching;        /* candidates are being tried (a texture's): one
                             not found is absent, not yet said missing */
    int texture;          /* the texture search is running: what it records
                             is marked mfs_dep.texture */
    char oom_file[512];   /* the first input too big to map, and its size
                             ("" if none: the memory ran out elsewhere) */
} mfs_iofs;

/* Opens root as the confinement directory.  Returns -1 with err set. */
int mfs_iofs_init(mfs_iofs *fs, const char *root, mfs_deps *deps, mfs_err *err);
void mfs_iofs_close(mfs_iofs *fs);

/* After a parser ran: -1 with err set if it tried to leave the root (the
 * first refused path named), or if reading its inputs ran out of memory;
 * else 0.  One wording for every importer. */
int mfs_iofs_refusal(const mfs_iofs *fs, mfs_err *err);

/* The file the model's path must open (mfs_import_opts.model_dev/ino):
 * any open of that path yielding another file is refused, and
 * mfs_iofs_refusal then says the model was replaced. */
void mfs_iofs_expect_model(mfs_iofs *fs, dev_t dev, ino_t ino);
int mfs_iofs_oom(const mfs_iofs *fs, mfs_err *err);

/* A read-only view of the bytes of root/rel, opened through the same
 * confinement and recorded like assimp's own opens (the importer reads what
 * a model declares about its units this way).  The bytes stay mapped until
 * mfs_iofs_unview(fs, returned handle).  NULL when it cannot be opened. */
struct aiFile *mfs_iofs_view(mfs_iofs *fs, const char *rel, const uint8_t **data, size_t *size);
void mfs_iofs_unview(mfs_iofs *fs, struct aiFile *f);

/* As mfs_iofs_view, for rel relative to the root itself (not a reference
 * resolved beside the model), a path of the same form as the model's
 * (mfs_iofs_model_path_ok), and with the file's owner in *uid: a settings
 * file (include/meshfs/settings.h).  Recorded found or absent; absent is
 * an input, never a warning.  NULL with *absent 1 when there is no such
 * file, 0 when there is one that cannot be read. */
struct aiFile *mfs_iofs_view_at_root(mfs_iofs *fs, const char *rel, const uint8_t **data, size_t *size,
                                     unsigned *uid, int *absent);

/* Puts the model first in an empty dependency list without reading it (size
 * 0, hash zero), so that paths tried after it are recorded (absent ones are
 * recorded only after the model).  For a list whose first entry is dropped
 * or replaced by a real reading later (settings_apply.c).  -1 out of memory. */
int mfs_iofs_hold_model_place(mfs_iofs *fs);

/* The owner of root/rel, not recorded.  -1 when it cannot be opened. */
int mfs_iofs_owner(mfs_iofs *fs, const char *rel, unsigned *uid);

/* Records the case-insensitive search of rel ("folder/name") as an input:
 * the folder's names equal to name ignoring case (include/meshfs/import.h, "inputs"). */
void mfs_iofs_record_listing(mfs_iofs *fs, const char *rel);

/* Says the absent input rel missing after all (MFS_DEP_MISSING): the
 * search it was a candidate of found nothing. */
void mfs_iofs_mark_missing(mfs_iofs *fs, const char *rel);

/* The model whose references are resolved: rel is kept (borrowed) and
 * opened exactly as given whenever a parser asks for that very string.
 * -1 with err unless rel is a plain path beneath the root (see
 * mfs_iofs_model_path_ok). */
int mfs_iofs_set_model(mfs_iofs *fs, const char *rel, mfs_err *err);

/* Is rel a model path as the host hands one over: relative, its
 * components split on '/' alone, none empty, "." or ".."?  A '\' is a
 * character of a name, never a separator: "drop/..\a\m.obj" is the file
 * "..\a\m.obj" in "drop".  1 or 0. */
int mfs_iofs_model_path_ok(const char *rel);

/* Lexically normalises a reference read inside a model (a Windows '\'
 * is a separator there): "a/./b//c/../d" -> "a/b/d".  Returns -1 if it is
 * absolute or climbs above its start.  Never for the model's own path. */
int mfs_iofs_normalise(const char *in, char *out, size_t outsz);

/* The path beneath the root that a parser's request names: the model's
 * own path exactly; else a reference, the model's folder taken by '/'
 * only (a parser's folder of "drop/..\a\m.obj" is "drop/..\a", the real
 * one "drop"), then normalised.  -1 if it leaves the root. */
int mfs_iofs_resolve(const mfs_iofs *fs, const char *path, char *out, size_t outsz);

#endif

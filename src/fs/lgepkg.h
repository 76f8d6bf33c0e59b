/* Internal to the mount daemon: game_resources.lgepkg, the one file per
 * folder that packs every model's .vrt .tri .tex .sph views for the LGE
 * engine (docs/formats/lgepkg.md).
 *
 * The package is a view of views: its bytes are assembled from the four
 * views of each model (resolved, and converted if need be, by the
 * resolver, mfs_view_get) and stored as a cache entry of its own, keyed by what
 * it is made of, then served like any view (fd + offset + length). */
#ifndef MESHFS_FS_LGEPKG_H
#define MESHFS_FS_LGEPKG_H

#include <stddef.h>
#include <sys/stat.h>

#include "fs.h"
#include "meshfs/formats.h"

/* mfs_view_ref.format of the package: after every per-model format. */
#define MFS_FS_LGEPKG MFS_FMT_COUNT

/* Does folder dir show a package?  Packages on (formats), at least one
 * model with views (mfs_dirmap_models), and no real entry shown under that
 * name (a real file wins).  1, 0 or -errno.  mfs_dir_list applies the same
 * rule to a listing. */
int mfs_lgepkg_present(mfs_fs *fs, const char *dir);

/* pkgempty.c: 1 if every model of folder dir (table t) is known, without
 * converting, to have a failed package view, so its package would hold no
 * model and is not shown; else 0. */
int mfs_lgepkg_known_empty(mfs_fs *fs, const char *dir, const mfs_dirtab *t);

/* The package's attributes, its exact size included: every model's four
 * views are resolved (converted as needed, up to convert_jobs at once).  A
 * package that cannot be made (it would pass 2 GiB) has size 0 and a reason,
 * like a failed view.  Returns 0 or -errno. */
int mfs_lgepkg_attr(mfs_fs *fs, const char *dir, struct stat *st);

/* Attributes if known without any work (every view of every model answers
 * mfs_view_cached_stat): 1 with *st filled, else 0.  For listings. */
int mfs_lgepkg_cached_stat(mfs_fs *fs, const char *dir, struct stat *st);

/* What a listing knows of a model that the memo may have forgotten: the
 * copy of its manifest in the folder's record, and the stat it took of the
 * model file.  begin fills the hint (and *model_st, returning 1, if it has
 * the stat); end is called once after each begin, with what the hint did. */
typedef struct mfs_lgepkg_hints {
    int (*begin)(void *ctx, const char *model, mfs_view_hint *hint, struct stat *model_st);
    void (*end)(void *ctx, const char *model, mfs_view_hint *hint);
    void *ctx;
} mfs_lgepkg_hints;

/* mfs_lgepkg_cached_stat with hints: a folder of more models than the memo
 * holds is answered from the folder's record, not one model entry opened
 * a model (the package's stat walks every model). */
int mfs_lgepkg_cached_stat_hinted(mfs_fs *fs, const char *dir, const mfs_lgepkg_hints *hints,
                                  struct stat *st);

/* Opens the package's bytes: found in the cache, or assembled and stored
 * there first.  hit: fd, offset, length (caller releases); key: the entry's
 * key, naming its bytes; st: the attributes of exactly those bytes.  0 or
 * -errno. */
int mfs_lgepkg_open(mfs_fs *fs, const char *dir, mfs_cache_hit *hit, mfs_cache_key *key,
                    struct stat *st);

/* user.meshfs.error: the models left out, each with its reason (and why
 * the package could not be made, if so).  Returns the text length, 0 when
 * nothing is wrong, or -errno. */
int mfs_lgepkg_error(mfs_fs *fs, const char *dir, char *out, size_t n);

#endif

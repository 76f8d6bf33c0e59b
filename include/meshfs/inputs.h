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
#ifndef MESHFS_INPUTS_H
#define MESHFS_INPUTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "meshfs/import.h"

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

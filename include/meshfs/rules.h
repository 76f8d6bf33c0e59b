/* rules/'s face: the naming and key rules both front ends (the mount and
 * meshfs-convert, with `meshfs-cache warm`) share, so each finds the
 * other's names and cache entries.  Pure functions, no state:
 *
 *   naming.c     how the names in a folder are shown (docs/naming.md)
 *   modelname.c  which names are models', given the worker's extensions
 *   keyopts.c    the option text in every view and manifest key
 *   limits.c     the worker's default resource limits */
#ifndef MESHFS_RULES_H
#define MESHFS_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/formats.h"

/* ==== src/rules/naming.c ==== */

/* How the names in a folder are shown, shared by the mount and
 * meshfs-convert so both produce the same names (and the same .fmi model=
 * paths).  The rule is a function of the folder's entry list alone (names,
 * and which entries are model files); docs/naming.md explains it.
 *
 * In short: with lowercase names, entries whose lowercase names are equal
 * are shown once, for the first in byte order, if they have one owner; if
 * their owners differ none of them is shown (one user's file never stands
 * in for another's), and the rest of the folder is named as if only the
 * first were there.  Likewise an entry whose lowercase name is a view name
 * of another owner's model only by folding is not shown, and the model
 * moves away from it as from any real file.  Every model's views are
 * named "<stem>.<fmt>" (car.fbx -> car.fmd ...) unless that short name is
 * wanted by another model too or "<stem>.<fmt>" is a real entry, for any
 * format meshfs knows; then the model's views use the long name
 * "<file name>.<fmt>" (a.obj.fmd).  Repeated until nothing clashes.  A model
 * whose long name still clashes with a real entry gets no views: a real
 * file always wins.  A model whose view names would be longer than
 * NAME_MAX (255 bytes) gets no views either.  So no view name ever stands
 * for two models, and no view hides a real file.  Every such decision is
 * returned as a note. */

/* One entry of a folder, as the rule sees it. */
typedef struct mfs_name_entry {
    const char *name;       /* its real name */
    int is_model;           /* a regular file (not a symlink) whose extension
                               is a model's (mfs_spawner_is_model) */
} mfs_name_entry;

/* Flags for mfs_names_plan. */
#define MFS_NAMES_LOWERCASE 1u /* show every name in ASCII lowercase */

/* Who owns entry `entry` of the input: its st_uid, not following a link.
 * Asked only with MFS_NAMES_LOWERCASE and only of entries whose lowercase
 * names are equal, so a folder without such a collision costs no stat.
 * Returns 0, or -1 when it cannot be told (the entry went away): such an
 * entry counts as owned by someone else than every other entry. */
typedef int (*mfs_name_owner_fn)(void *ctx, size_t entry, unsigned long *uid);

typedef enum mfs_name_note_kind {
    MFS_NOTE_CASE,          /* entry not shown: its lowercase name is shown
                               for an entry earlier in byte order (of the
                               same owner) */
    MFS_NOTE_OWNERS,        /* entry not shown, nor any other of the same
                               lowercase name: their owners differ.  Each
                               of them has this note, with the same text,
                               which names them all.  Or: entry not shown,
                               its lowercase name is a view name of another
                               owner's model only by folding (Ship.GMF and
                               ship.obj's views) */
    MFS_NOTE_LONG,          /* model's views use the long name */
    MFS_NOTE_NO_VIEWS,      /* model gets no views: even its long name clashes,
                               or its view names are longer than NAME_MAX */
    MFS_NOTE_BUILTIN,       /* model's view base is an FGE built-in model name */
} mfs_name_note_kind;

typedef struct mfs_name_note {
    mfs_name_note_kind kind;
    size_t entry;           /* index (into the input) of the entry it is about */
    char *text;             /* one line, no folder path, no newline */
} mfs_name_note;

/* A model that has views. */
typedef struct mfs_name_model {
    size_t entry;           /* index into the input */
    const char *model;      /* the input's real name (not a copy) */
    char *base;             /* view base: "car" or "car.fbx" (lowercase with
                               MFS_NAMES_LOWERCASE); view = base + "." + fmt */
    int long_form;          /* base is the whole file name */
    int builtin;            /* base is an FGE built-in model name */
} mfs_name_model;

typedef struct mfs_names {
    size_t n;               /* entries in the input */
    char **shown;           /* parallel to the input: the name the entry is
                               shown under, or NULL if it is not shown */
    mfs_name_model *models; /* every model with views, in byte order of base */
    size_t nmodels;
    mfs_name_note *notes;   /* CASE and OWNERS notes of entries of one
                               lowercase name, in byte order of it; then
                               OWNERS notes of entries named like another
                               owner's views, in byte order of the entries;
                               then the models' notes in byte order of the
                               model names */
    size_t nnotes;
    char **hidden;          /* lowercase names shown for no entry because
                               of an OWNERS note, sorted: a lookup of one
                               must reach none of the entries */
    size_t nhidden;
} mfs_names;

/* Applies the rule to a folder's n entries (any order; the result does not
 * depend on it).  owner (with ctx) tells entries' owners; NULL when the
 * list is no real folder (all entries then count as one owner's).  Returns
 * 0, or -1 when out of memory (out then empty). */
int mfs_names_plan(const mfs_name_entry *entries, size_t n, unsigned flags, mfs_name_owner_fn owner,
                   void *ctx, mfs_names *out);
void mfs_names_free(mfs_names *p);

/* The model whose views have base `base`, or NULL. */
const mfs_name_model *mfs_names_find_base(const mfs_names *p, const char *base);

/* Is base (compared ASCII case-insensitively) one of FGE's built-in model
 * names: cube, cylinder, sphere, clear?  FGE never loads a file of that
 * name. */
int mfs_name_is_builtin(const char *base);

/* The warning text for a model whose views have that base (what
 * user.meshfs.warning and meshfs-convert print); 0 and "" if none, else
 * the snprintf length. */
int mfs_name_warning(const char *base, char *buf, size_t n);

/* ASCII lowercase in place (FGE lowercases names before opening them;
 * bytes >= 0x80 are left alone); returns s. */
char *mfs_name_lower(char *s);

/* Has s an ASCII capital letter (so no lowercase-shown name equals it)? */
int mfs_name_has_upper(const char *s);

/* The stem of a file name: everything before the last '.', or the whole
 * name if it has no dot (or only a leading one). */
size_t mfs_name_stem_len(const char *name);

/* One model's view base within its folder (siblings: every entry name of
 * the folder; is_model says which are models, `model` counts as one).
 * Kept for callers that want one name; it runs mfs_names_plan.  Returns 1
 * if the long form was needed, 0 otherwise, -1 if out is too small (or out
 * of memory), -2 if the model gets no views at all. */
typedef int (*mfs_is_model_fn)(void *ctx, const char *name);
int mfs_view_base(const char *model, const char *const *siblings, size_t n,
                  mfs_is_model_fn is_model, void *ctx, char *out, size_t outsz);

/* ==== src/rules/modelname.c ==== */

/* True if name's extension is one of exts (case-insensitive).  Pure: no
 * process is started (src/rules/modelname.c). */
int mfs_model_name_in(const char *const *exts, const char *name);

/* ==== src/rules/keyopts.c ==== */

/* The option text in every view key and manifest key: one recipe for the
 * mount (src/mount/convert.c), meshfs-convert and `meshfs-cache warm`
 * (src/batch/), so all of them find each other's entries in a shared cache
 * (docs/cache.md, "Keys").
 *
 * A view's key holds what decides its bytes: its inputs (the caller's
 * dependency list), its format, the options that format reads, the
 * importer, the version.  Never the set of formats a run or a mount is
 * configured with: every conversion imports the same way whatever it
 * writes (tangents always computed, the texture always searched for and
 * decoded only for .tex: src/worker/job.c), so a mount with formats=gmf,
 * a full mount, a `warm --formats fmd` and a `meshfs-convert` of every
 * format share each view they have in common. */

/* Option text of view `format` (o's options the format reads, with
 * model_path = fmi_model; the importer). */
void mfs_keyopts_format(const mfs_options *o, int format, const char *fmi_model, char *buf,
                        size_t n);

/* Option text of the import (the model entry's key): source frame,
 * importer. */
void mfs_keyopts_import(const mfs_options *o, char *buf, size_t n);

/* ==== src/rules/limits.c ==== */

/* What one conversion may use: the worker's resource limits. */

typedef struct mfs_limits {
    double timeout_s;        /* wall clock; SIGKILL past it (0 = none) */
    uint64_t memory;         /* RLIMIT_AS bytes (0 = none) */
    uint64_t output;         /* cap on each output file, bytes (0 = none) */
    uint64_t cpu_s;          /* RLIMIT_CPU seconds (0 = none) */
} mfs_limits;

/* 60 s, 4 GiB of address space, 4 GiB per output, 120 s of CPU. */
void mfs_limits_default(mfs_limits *l);

#endif

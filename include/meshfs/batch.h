/* Batch conversion through the cache: what meshfs-convert and
 * `meshfs-cache warm` run (docs/cache.md, "meshfs-convert and the cache").
 *
 * Three parts, each with one job:
 *
 *   plan    (plan.c)    which models a set of inputs holds, under which view
 *                       names (include/meshfs/rules.h, the mount's rule),
 *                       and, for --copy-other, which other entries the mount
 *                       would show beside them;
 *   engine  (engine.c)  each model's views through the mount's resolver
 *                       (mfs_views: memo, local cache, converter) with the
 *                       mount's keys (rules.h), so a model converted by a
 *                       mount, by a warm or by an earlier batch is not
 *                       converted again; the converter is a worker run filed
 *                       in the cache as the mount files it (convert.h);
 *   output  (output.c)  a view's bytes, or another file or link, written to
 *                       the output tree, left alone when already identical
 *                       (so its mtime stays, and rsync sends nothing).
 *
 * Messages name files as the user gave them; mfs_batch_quote makes a name
 * with a control character (a newline) safe to print on one line. */
#ifndef MESHFS_BATCH_H
#define MESHFS_BATCH_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/stat.h>

#include "meshfs/cache.h"
#include "meshfs/convert.h"
#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/convert.h"
#include "meshfs/formats.h"
#include "meshfs/rules.h"
#include "meshfs/remote.h"
#include "meshfs/rules.h"
#include "meshfs/spawner.h"
#include "meshfs/views.h"

/* ---- plan.c ---------------------------------------------------------- */

typedef struct mfs_plan_item {
    char *root;      /* confinement root: the input folder, or a file's folder */
    char *model;     /* relative to root */
    char *shown;     /* for messages: the input as given, joined with model */
    char *outdir;    /* output folder relative to the output root ("" = it) */
    char *base;      /* view base within outdir */
    char *fmi_model; /* outdir/base: the .fmi model= path, and in its key */
    char **warnings; /* naming notes about this model (docs/naming.md) */
    size_t nwarnings;
    char *refused;   /* not converted, and why (naming rule, missing input); else NULL */
} mfs_plan_item;

typedef struct mfs_plan_note {
    char *path;      /* as given */
    char *text;
} mfs_plan_note;

typedef enum mfs_plan_other_kind {
    MFS_PLAN_DIR,    /* a folder the mount shows (created, even empty) */
    MFS_PLAN_FILE,   /* a regular file that is not a model */
    MFS_PLAN_LINK,   /* a symbolic link, copied as a link */
} mfs_plan_other_kind;

typedef struct mfs_plan_other {
    char *src;       /* as given */
    char *dst;       /* relative to the output root */
    char *target;    /* MFS_PLAN_LINK: the target as the mount shows it */
    mfs_plan_other_kind kind;
} mfs_plan_other;

enum {
    MFS_PLAN_LOWERCASE = 1u << 0,  /* --lowercase-names */
    /* --copy-other: the mount's policy for everything else.  Hidden names
     * are shown (and their models converted), links are copied as links
     * and never followed, other files are listed in `other`. */
    MFS_PLAN_MOUNT_VIEW = 1u << 1,
};

typedef struct mfs_plan_folder mfs_plan_folder;

typedef struct mfs_plan {
    unsigned flags;
    FILE *warn;      /* naming warnings ("meshfs-convert: warning: ..."), NULL: none */
    const char *prog;
    const char *const *exts; /* which files are models (mfs_spawner_extensions) */
    mfs_plan_item *v;
    size_t n, cap;
    mfs_plan_note *notes;
    size_t nnotes;
    mfs_plan_other *other;
    size_t nother, other_cap;
    mfs_plan_folder *last; /* the folder of the last file named, as planned */
    size_t unread;         /* folders under the inputs that could not be listed,
                              or nested too deep (each warned and noted):
                              models in them are missing from v, so a run
                              must not say all is well */
    int skip_set;          /* a folder the walk never enters (OUTDIR) */
    dev_t skip_dev;
    ino_t skip_ino;
} mfs_plan;

/* exts: the model extensions (mfs_spawner_extensions; NULL: no file is a
 * model), kept, not copied. */
void mfs_plan_init(mfs_plan *p, unsigned flags, const char *prog, FILE *warn,
                   const char *const *exts);
/* The walk never enters the folder at path, reached by any name (a
 * meshfs-convert OUTDIR inside an INPUT folder: its outputs are never
 * inputs).  Nothing if path does not exist. */
void mfs_plan_skip_folder(mfs_plan *p, const char *path);
/* A file or folder as given on the command line (a missing one becomes a
 * refused item, so it counts as failed).  Dies only on out of memory. */
void mfs_plan_add_input(mfs_plan *p, const char *in);
void mfs_plan_free(mfs_plan *p);
void mfs_plan_item_clear(mfs_plan_item *it);

/* ---- clash.c --------------------------------------------------------- */

/* Inputs that overlap (clash.c).  Several inputs merge under one output
 * folder, so two of them can plan models with the same view names: the
 * same file named twice (a folder and a file in it, or one folder twice)
 * is planned once, at its first place; a different file whose views would
 * take the names of an earlier input's is refused, naming that one, rather
 * than written over it by whichever thread ends last.  Returns the number
 * refused.  Dies only on out of memory. */
size_t mfs_plan_settle(mfs_plan *p);

/* ---- shard.c: --shard K/N (docs/cache.md, "Sharding") ------------------ */

/* Shard k of n (1 <= k <= n); n 0: no sharding, the whole tree. */
typedef struct mfs_shard {
    unsigned k, n;
} mfs_shard;

#define MFS_SHARD_MAX 1000000u

/* "K/N" given to option (named in the error): -1 with err saying what is
 * wrong (not K/N, N out of 1..MFS_SHARD_MAX, K out of 1..N). */
int mfs_shard_parse(const char *option, const char *value, mfs_shard *out, mfs_err *err);
/* The shard, 1 to n, that path belongs to: XXH3-64 (seed 0) of its bytes
 * mod n, plus 1.  A model's path is relative to the folder given, as in
 * its keys; a package's is its output folder's (meshfs-convert). */
unsigned mfs_shard_of(const char *path, unsigned n);
/* 1 if path is in s (always, for NULL or no sharding). */
int mfs_shard_has(const mfs_shard *s, const char *path);
/* Keeps the plan's items keep() says yes to, in order; the others are
 * cleared.  Returns how many the plan held before. */
size_t mfs_plan_keep(mfs_plan *p, int (*keep)(void *ctx, const mfs_plan_item *it), void *ctx);
/* mfs_plan_keep of the items whose model is in s (by its path relative to
 * its root).  Returns how many the plan held before. */
size_t mfs_plan_shard(mfs_plan *p, const mfs_shard *s);

/* ---- engine.c -------------------------------------------------------- */

typedef struct mfs_batch_cfg {
    const char *cache_dir; /* NULL: the mount's default (mfs_cache_default_dir) */
    int no_cache;          /* a private cache, removed at close: nothing stored */
    int no_cap;            /* open it as meshfs-cache does (MFS_CACHE_NO_CAP): no
                              trim to the default cap, none recorded */
    unsigned formats;      /* as asked: mfs_format bits and MFS_FMT_LGEPKG_BIT */
    mfs_options opts;
    mfs_limits limits;
    const mfs_remote_cfg *remote; /* the remote tier (NULL: none); uploads
                                     are drained at close */
    mfs_spawner *spawner;  /* the workers conversions run in, the caller's
                              (open before, closed after the batch) */
} mfs_batch_cfg;

typedef struct mfs_batch mfs_batch;

int mfs_batch_open(const mfs_batch_cfg *cfg, mfs_batch **out, mfs_err *err);
/* Removes a --no-cache cache. */
void mfs_batch_close(mfs_batch *b);
const char *mfs_batch_cache_dir(const mfs_batch *b);
/* The views a model is resolved for: those asked, and with the package the
 * four it is made from. */
unsigned mfs_batch_views(const mfs_batch *b);

/* Who may read a view, as the mount shows it (docs/security.md, S1): the
 * read bits of a file owned by uid:gid.  Not known: the umask alone. */
typedef struct mfs_batch_readers {
    int known;
    mode_t perm;
    uid_t uid;
    gid_t gid;
} mfs_batch_readers;

typedef struct mfs_batch_view {
    int ok;            /* bytes in hit */
    mfs_batch_readers readers; /* ok: who may read it through the mount */
    int machine;       /* failed for the machine's sake (not remembered) */
    uint64_t size;
    char error[MFS_ERR_MAX];
    mfs_cache_hit hit; /* ok: an open entry (mfs_batch_result_free releases it) */
} mfs_batch_view;

typedef struct mfs_batch_result {
    int converted;   /* a worker ran for this model in this call */
    int remembered;  /* a failure served from the cache, not tried again */
    int have_report; /* rep is the conversion's (this run's, or kept in the cache) */
    mfs_report rep;  /* stats, inputs, per-view notes */
    mfs_batch_view view[MFS_FMT_COUNT];
} mfs_batch_result;

/* Every view in mfs_batch_views() of model (relative to root, a folder).
 * Safe from several threads.  -1 only if the model could not be tried at
 * all (err); failed views are in r. */
int mfs_batch_resolve(mfs_batch *b, const char *root, const char *model, const char *fmi_model,
                      mfs_batch_result *r, mfs_err *err);
void mfs_batch_result_free(mfs_batch_result *r);

/* What model's views' keys are made of in this batch's cache, with its
 * options (meshfs-cache explain): nothing converted or used.  0, or -1 with
 * err (*out is then empty, safe to free). */
struct mfs_explain;
int mfs_batch_explain(mfs_batch *b, const char *root, const char *model, const char *fmi_model,
                      struct mfs_explain *out, mfs_err *err);

/* ---- run.c: every item of a plan, -j at a time ---- */

typedef enum mfs_batch_state {
    MFS_BATCH_CONVERTED, /* a worker ran for it, and every view is there */
    MFS_BATCH_UP_TO_DATE,/* every view served from the cache */
    MFS_BATCH_FAILED,    /* a view failed (now, or remembered), or it was refused */
    MFS_BATCH_NO_MESH,   /* the file holds no mesh (MFS_SCENE_NO_MESH): it has no
                            views, as in a mount, and that is no failure */
} mfs_batch_state;

/* The state a resolved model is in (before anything is written). */
mfs_batch_state mfs_batch_state_of(const mfs_batch_result *r);

typedef struct mfs_batch_run {
    mfs_batch *b;
    const mfs_plan *plan;
    int jobs;
    /* After item i is resolved (r NULL: it was refused, nothing resolved),
     * in one of the run's threads, several at once: what became of it.
     * r is freed by the run afterwards. */
    mfs_batch_state (*each)(void *ctx, size_t i, mfs_batch_result *r);
    void *ctx;
    /* the progress line (done/total, models/s, ETA, current file), redrawn
     * in place on this terminal; NULL: none */
    FILE *progress;
    /* counts, when mfs_batch_run_all returns */
    size_t converted, up_to_date, failed, no_mesh;
    size_t unread; /* mfs_batch_warm: the plan's folders not listed */
    size_t planned; /* mfs_batch_warm: models under src, every shard's */
} mfs_batch_run;

void mfs_batch_run_all(mfs_batch_run *run);

/* ---- warm.c: `meshfs-cache warm` ---- */

/* Every view of every model under the folder src, resolved into the cache
 * and nothing written, so a later mount of src with the same options
 * finds every view there (plan_flags: MFS_PLAN_LOWERCASE as the mount's
 * lowercase_names).  shard (NULL: none): only the models in it; the
 * models the tree holds in all are counts->planned.  Counts in *counts.  -1 if the cache cannot be opened
 * or src is no folder (err). */
int mfs_batch_warm(const mfs_batch_cfg *cfg, const char *src, unsigned plan_flags,
                   const mfs_shard *shard, int jobs, FILE *progress, FILE *warn,
                   mfs_batch_run *counts, mfs_err *err);

/* ---- output.c -------------------------------------------------------- */

/* Writes the entry's bytes to dst (temporary file, rename), unless dst
 * already holds exactly these bytes (*unchanged = 1, its bytes untouched).
 * Either way dst's mode is then the umask's narrowed for readers
 * (mfs_batch_settle_mode; NULL: the umask's). */
int mfs_batch_write_hit(const mfs_cache_hit *hit, const char *dst,
                        const mfs_batch_readers *readers, int *unchanged, mfs_err *err);
/* The same for a copy of the regular file src, narrowed by src's own bits. */
int mfs_batch_copy_file(const char *src, const char *dst, int *unchanged, mfs_err *err);
/* A symbolic link dst -> target, unless dst already is one. */
int mfs_batch_make_link(const char *target, const char *dst, int *unchanged, mfs_err *err);
/* Temporary names in the output tree (OUTDIR/.meshfs-*): mkstemp and
 * mkdtemp that note the name, removed if a signal stops the run, until
 * mfs_batch_tmp_forget (once it is renamed or removed).  A noted folder
 * holds only files. */
int mfs_batch_mkstemp(char *tmpl);
char *mfs_batch_mkdtemp(char *tmpl);
/* The same for a folder of the run's own that holds a tree (--no-cache's
 * private cache in TMPDIR): removed whole on a signal. */
char *mfs_batch_mkdtemp_tree(char *tmpl);
void mfs_batch_tmp_forget(const char *path);
/* The mode a new file of the run gets: 0666 less the umask. */
mode_t mfs_batch_file_mode(void);

/* ---- perm.c: who may read what the run writes (docs/security.md, S1) ---- */

/* The views host's perm rule (meshfs/views.h) for a batch root: the
 * mount's, with the folders stat'ed from rootfd. */
int mfs_batch_view_perm(int rootfd, const char *model, char *const *paths, const struct stat *in,
                        uint32_t n, mfs_view_perm *out, mfs_err *err);
/* The open file fd (the run's) given base (the umask's mode) less every
 * group or other bit a class of its users could not have through the
 * mount's view (readers); as root also the view's group.  0, or -1 with
 * err. */
int mfs_batch_settle_mode(int fd, const mfs_batch_readers *readers, mode_t base, mfs_err *err);
/* acc (a package's readers, owned uid:gid once first known) narrowed by a
 * file it packs. */
void mfs_batch_readers_narrow(mfs_batch_readers *acc, uid_t uid, gid_t gid, const struct stat *file);
/* rm -r of path, links not followed; what cannot be removed stays. */
void mfs_batch_remove_tree(const char *path);
/* fn(ctx) runs on a stop signal before the noted names are removed (one
 * at a time; NULL: none). */
void mfs_batch_on_stop(void (*fn)(void *), void *ctx);
/* SIGINT, SIGTERM and SIGHUP are blocked in this thread, so in every
 * thread started after it, and taken by a thread that removes the noted
 * temporary names, then ends the process by the same signal; one the
 * process ignores (nohup) is left ignored.  Call before any other thread
 * starts (-1 and err if it cannot). */
int mfs_batch_clean_on_signal(mfs_err *err);
/* mkdir -p (0755, less the umask). */
int mfs_batch_mkdirs(const char *path);

/* s for a message: itself if it has no control character, else in double
 * quotes with C escapes ("a\nb").  Returns buf. */
const char *mfs_batch_quote(const char *s, char *buf, size_t n);

#endif

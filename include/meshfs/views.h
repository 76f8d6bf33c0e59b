/* Resolving a view: which bytes `car.gmf` is, from the fastest tier that
 * knows (docs/architecture.md, "Resolve").
 *
 * One front for the whole tier policy, over narrow layers:
 *
 *   1. memo (here, in memory): every input still has the stat it had, so
 *      the view's key, size and mtime are known.  Costs one stat per file
 *      read, and one per folder its absent paths and searches lie in.
 *   2. local cache (cache.h): the model's content hash from the stat index,
 *      its manifest, each dependency checked, the view's key, its entry.
 *   2b. remote (remote.h, when the host gives one): a local miss asks the
 *      shared server for the manifest by its key, then for the view by its
 *      key; what it brings is a local entry, checked like one.
 *   3. conversion: the host's converter (a worker run, src/mount/convert.c),
 *      which stores every view it makes and the manifest; then tier 2 again.
 *
 * Outcomes, never -errno (the host maps them: src/mount/ops.c):
 *   HIT             bytes in the cache (info: size, mtime, key; with
 *                   MFS_VIEW_OPEN an open descriptor in info->hit)
 *   MISS            not known without work (only the listing query says it)
 *   FAILED_MODEL    the model's own failure, remembered: reason in err
 *   FAILED_MACHINE  failed for now, not remembered (disk full, the model
 *                   unreachable, inputs that kept changing): reason in err
 *                   (may be empty), and info->errnum says what errno it is
 *
 * Single flight: each model has a lock held across its resolution,
 * conversion included, so concurrent first readers of one model cause one
 * conversion; other models are not held up.  The listing query only tries
 * the lock and never waits, hashes a source or converts: it has no path to
 * the converter.
 *
 * The resolver knows nothing of FUSE, SRC's confinement or who may read a
 * view: the host supplies those (mfs_views_host).  Tests give it a fake
 * converter (tests/unit/test_views.c). */
#ifndef MESHFS_VIEWS_H
#define MESHFS_VIEWS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "meshfs/cache.h"
#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/remote.h"

typedef enum mfs_view_outcome {
    MFS_VIEW_HIT,
    MFS_VIEW_MISS,
    MFS_VIEW_FAILED_MODEL,
    MFS_VIEW_FAILED_MACHINE,
} mfs_view_outcome;

/* What the caller will do with the view. */
typedef enum mfs_view_mode {
    MFS_VIEW_ATTR, /* attributes (and a failure's reason) */
    MFS_VIEW_OPEN, /* also an open descriptor on the entry (info->hit) */
} mfs_view_mode;

/* For the listing query: whether the inputs are to be stat'ed. */
typedef enum mfs_view_inputs {
    MFS_VIEW_INPUTS_STAT,    /* stat the model and its inputs */
    MFS_VIEW_INPUTS_CHECKED, /* the previous query, for another view of the
                                same model, just did and said HIT or
                                FAILED_MODEL: model_st is that call's */
    MFS_VIEW_INPUTS_GIVEN,   /* model_st is the model's stat, just taken by
                                the caller (a listing that stat'ed the
                                model's own entry); its inputs are stat'ed */
} mfs_view_inputs;

/* Which kind of path the host is to stat. */
typedef enum mfs_view_path {
    MFS_VIEW_PATH_MODEL,  /* the model, or a folder: as the kernel's paths are */
    MFS_VIEW_PATH_DEP,    /* a dependency, as the worker opened it */
} mfs_view_path;

typedef struct mfs_view_info {
    uint64_t size;          /* HIT: the payload's exact length; else 0 */
    struct timespec mtime;  /* newest input mtime (zero if unknown) */
    mfs_cache_key key;      /* HIT, FAILED_MODEL: the entry's key */
    mfs_cache_hit hit;      /* MFS_VIEW_OPEN and HIT: the caller releases */
    int same_as_last;       /* MFS_VIEW_OPEN: the key equals that of the last open */
    /* who may read it, known once its inputs are (the host's perm rule):
     * the read bits for owner uid/group gid */
    int perm_known;
    mode_t perm;
    uid_t uid;
    gid_t gid;
    int errnum;             /* FAILED_MACHINE: ENOENT when the model is gone, else EIO */
    int no_views;           /* FAILED_MODEL: the view is not there to show: the
                               model holds no mesh (MFS_SCENE_NO_MESH), or its
                               settings' formats = leaves it out
                               (MFS_SETTINGS_NOT_SHOWN) */
    int model_cold;         /* the listing query's MISS: nothing of the model is
                               known (or it is converting), so its other views
                               are not worth asking about in this listing */
} mfs_view_info;

/* Who may read a model's views (the host's rule), from its inputs' stats:
 * perm/uid/gid, and the folders whose stat also decides it (their paths
 * and stats, malloc'd; the resolver takes them and re-stats them as
 * MFS_VIEW_PATH_MODEL before trusting its memo; same uid, gid, mode, dev
 * and inode means unchanged). */
typedef struct mfs_view_perm {
    mode_t perm;
    uid_t uid;
    gid_t gid;
    char **dirs;
    struct stat *dir_st;
    uint32_t ndirs;
} mfs_view_perm;

/* (src/resolve/viewperm.c, docs/security.md S1) perm (read bits of a view
 * owned by vuid:vgid) narrowed so that no user it lets read the view is one
 * who could not read an input owned by fuid:fgid with mode fmode (search: a
 * folder, whose x bits count).  Only bits every input grants survive; where
 * owners or groups differ, the class a reader may fall into is assumed the
 * worst. */
mode_t mfs_perm_narrow(mode_t perm, uid_t vuid, gid_t vgid, uid_t fuid, gid_t fgid, mode_t fmode,
                       int search);

/* A conversion of `model` for every format in `formats`: stores each view
 * (or a remembered failure) in the cache and the manifest, and returns the
 * inputs and keys in *man (the resolver frees it).  0: done; 1: done, but
 * some view failed for the machine's sake (err says the first); -1: no
 * conversion (err). */
typedef int (*mfs_view_converter)(void *ctx, const char *model, const char *fmi_model,
                                  unsigned formats, mfs_cache_manifest *man, mfs_err *err);

typedef struct mfs_views_host {
    void *ctx;
    mfs_cache *cache;
    int rootfd;             /* dependencies' paths are relative to it */
    unsigned formats;       /* the formats a conversion makes (bits of mfs_format) */
    const char *version;    /* in every key: MESHFS_VERSION */
    /* Every callback answers 0 (or its count), or -1 with err, whose code
     * (mfs_err_errno) the resolver acts on and hands back in
     * info->errnum. */
    /* a path that does not stat says so by its code alone (ENOENT,
     * ENOTDIR...): mfs_err_code, no text */
    int (*stat_path)(void *ctx, const char *path, mfs_view_path kind, struct stat *st,
                     mfs_err *err);
    /* the model's content hash (through the stat index); EWOULDBLOCK: an
     * input under a file lease (the host waits and asks again) */
    int (*hash_model)(void *ctx, const char *path, struct stat *st, uint8_t hash[16],
                      mfs_err *err);
    /* codes ENOMEM, EAGAIN (an input changed meanwhile) */
    int (*perm)(void *ctx, const char *model, char *const *paths, const struct stat *st,
                uint32_t n, mfs_view_perm *out, mfs_err *err);
    /* An entry as the host sees it (the cache's, less failures it retries,
     * plus entries it still holds); NULL: the cache's own peek/lookup. */
    int (*entry_peek)(void *ctx, const mfs_cache_key *k, struct timespec newest,
                      mfs_cache_hit *hit, mfs_err *err);
    /* mk: the model entry the view is embedded in (mfs_cache_lookup_in),
     * or NULL for a view in its own entry file (mfs_cache_lookup) */
    int (*entry_open)(void *ctx, const mfs_cache_key *mk, const mfs_cache_key *k,
                      mfs_cache_hit *hit, mfs_err *err);
    /* option text in a view's key, and in the manifest's */
    void (*format_options)(void *ctx, int format, const char *fmi_model, char *buf, size_t n);
    void (*import_options)(void *ctx, char *buf, size_t n);
    mfs_view_converter convert;
    /* a failure worth the log (may be NULL) */
    void (*log)(void *ctx, const char *model, const char *msg);
    /* the most model records the memo keeps (0: MFS_VIEWS_MEMO_DEFAULT);
     * least recently used out first, never one in use (docs/scale.md) */
    size_t memo_size;
    /* the remote tier (NULL: none): fetched on a local miss, and each view
     * and manifest a conversion stored is queued for upload */
    mfs_remote *remote;
    /* 1: each view request also counts as one model resolved (a mount: one
     * open is one model); 0: the host counts models itself (a batch run,
     * once per model however many views it read) */
    int count_models;
} mfs_views_host;

/* About 1 KiB a record with its paths: 4 MiB for the memo by default. */
#define MFS_VIEWS_MEMO_DEFAULT 4096
/* And a budget in bytes besides the count: this much a record of the cap
 * (16 MiB by default), so that records of many long-named inputs evict
 * sooner (docs/scale.md). */
#define MFS_VIEWS_RECORD_BYTES 4096

typedef struct mfs_views mfs_views;

typedef struct mfs_views_stats {
    uint64_t entries;   /* model records held now (may pass cap while in use) */
    uint64_t cap;
    uint64_t bytes;     /* their heap bytes, about (may pass byte_cap likewise) */
    uint64_t byte_cap;  /* cap * MFS_VIEWS_RECORD_BYTES */
    uint64_t evictions; /* records dropped for the cap */
} mfs_views_stats;

void mfs_views_get_stats(mfs_views *v, mfs_views_stats *out);

/* The host v was made with (explain.c reads its cache, root and options). */
const mfs_views_host *mfs_views_host_of(const mfs_views *v);

/* The host is copied.  NULL on out of memory. */
mfs_views *mfs_views_new(const mfs_views_host *host);
void mfs_views_free(mfs_views *v);

/* The one recipe for a view's key: the inputs, the format's name, the
 * option text the host gives for it, the version. */
int mfs_views_key(const mfs_views *v, const mfs_dep *deps, uint32_t ndeps, int format,
                  const char *fmi_model, mfs_cache_key *out, mfs_err *err);
/* Whether the host shows a view that reads the texture's image (.tex):
 * without one, the texture search's inputs (mfs_dep.texture) decide none
 * of its views, so they are not checked and a texture edit leaves its
 * views current (docs/cache.md, "Keys"). */
int mfs_views_shows_image(const mfs_views *v);
/* And the model's manifest key. */
int mfs_views_manifest_key(const mfs_views *v, const char *model, uint64_t size,
                           const uint8_t hash[16], mfs_cache_key *out, mfs_err *err);

/* View `format` of `model` (relative to the root), whose .fmi model= path
 * is fmi_model: converting it if needed.  Never MISS. */
mfs_view_outcome mfs_views_resolve(mfs_views *v, const char *model, const char *fmi_model,
                                   int format, mfs_view_mode mode, mfs_view_info *info,
                                   mfs_err *err);

/* Stats the host has just taken on its way to the view, which the memo's
 * check uses as they are instead of taking them again (a warm lookup then
 * stats each path once): the model's, as MFS_VIEW_PATH_MODEL gives it, and
 * its folder's (a folder; reached with no link on the way, so the same as
 * MFS_VIEW_PATH_DEP would give).  Either may be NULL. */
typedef struct mfs_view_given {
    const struct stat *model;
    const struct stat *folder;
} mfs_view_given;

/* mfs_views_resolve with what the host has just stat'ed (NULL: nothing). */
mfs_view_outcome mfs_views_resolve_given(mfs_views *v, const char *model, const char *fmi_model,
                                         int format, mfs_view_mode mode,
                                         const mfs_view_given *given, mfs_view_info *info,
                                         mfs_err *err);

/* The referenced files the model's import found missing (mfs_input_said),
 * one MFS_INPUT_MISSING_FMT line each, for view `format` of it: resolved
 * first as mfs_views_resolve does (so converting if need be).  The length
 * written (0: none; out is cut at a line if n is short), or -1 with err
 * (its code the errno) when the view could not be resolved for the
 * machine's sake. */
int mfs_views_missing(mfs_views *v, const char *model, const char *fmi_model, int format,
                      char *out, size_t n, mfs_err *err);

/* The listing query: what is known without converting, hashing a source or
 * waiting (the memo if current, else the manifest and entry answered from
 * the stat index alone); MISS otherwise, with info->model_cold when that
 * holds for every view of the model.  A model the resolver holds no record
 * of and whose hash the stat index does not know costs no record (a cold
 * folder of 20,000 models is listed without filling the memo).  model_st
 * receives the model's stat (with MFS_VIEW_INPUTS_CHECKED it is given).
 * err may be NULL. */
mfs_view_outcome mfs_views_known(mfs_views *v, const char *model, const char *fmi_model,
                                 int format, mfs_view_inputs inputs, struct stat *model_st,
                                 mfs_view_info *info, mfs_err *err);

/* The formats (a mask) whose views the memo's current record of the model
 * says are not there to show (mfs_view_info.no_views: the file holds no
 * mesh, or formats = leaves them out), so a listing leaves them out.  From
 * the memo alone: no record, a record being converted, or one whose inputs
 * moved is 0, and costs no stat; only such a model's inputs are stat'ed. */
unsigned mfs_views_known_hidden(mfs_views *v, const char *model, const char *fmi_model);

/* What a listing brings to the listing query and takes from it: the
 * folder record's copy of the model's manifest (cache.h, "folder
 * records"), used instead of opening the model entry when it is the
 * manifest of the model's bytes now; and the manifest the query read from
 * the cache otherwise, for the listing to record. */
typedef struct mfs_view_hint {
    const mfs_cache_manifest *man; /* the copy, or NULL */
    int used;                      /* out: the copy answered */
    mfs_cache_manifest learned;    /* out: read from the cache (the caller
                                      frees it; zero if none) */
} mfs_view_hint;

/* mfs_views_known with a hint (may be NULL). */
mfs_view_outcome mfs_views_known_hinted(mfs_views *v, const char *model, const char *fmi_model,
                                        int format, mfs_view_inputs inputs,
                                        struct stat *model_st, mfs_view_hint *hint,
                                        mfs_view_info *info, mfs_err *err);

/* ==== explain (src/resolve/explain.c) ==================================== */

/* What a view's key is made of, and why a lookup would miss it
 * (`meshfs-cache explain`, the mount's user.meshfs.explain; docs/cache.md,
 * "Explain").  ccache's debug output is the anchor: every input with its
 * path, size and hash (or absent), the options and the versions that go
 * into the keys, each view's key and what the cache holds under it, and the
 * first reason a lookup would not be served.
 *
 * Read-only: nothing is converted, no entry is marked used or removed, and
 * no hit or miss is counted. */

typedef struct mfs_explain_input {
    char *path;
    int kind;            /* mfs_dep_kind */
    uint64_t size;
    uint8_t hash[16];
    const char *now;     /* "same", or how it differs now: "changed", "gone",
                            "there now", "other names match now", "its stat
                            changed"; "unknown" when it could not be checked */
} mfs_explain_input;

typedef struct mfs_explain_view {
    const char *format;  /* "gmf" */
    char key[33];        /* "" when no model entry gives its inputs */
    char options[256];   /* the option text in its key */
    const char *state;   /* "embedded", "entry", "failed", "not in the cache",
                            "unknown" (no model entry) */
    uint64_t size;       /* embedded, entry: bytes */
    char *reason;        /* failed: the remembered reason */
} mfs_explain_view;

typedef struct mfs_explain {
    char *model;          /* relative to SRC */
    uint64_t size;
    uint8_t hash[16];
    char import_options[64];
    const char *version;
    char entry_key[33];   /* the model entry's key */
    int have_entry;       /* the cache holds a model entry for these bytes */
    mfs_explain_input *inputs; /* as the entry records them, model first */
    uint32_t ninputs;
    mfs_explain_view views[MFS_FMT_COUNT];
    int nviews;
    char *settings;       /* the settings files' keys that apply, one
                             "key = value  (file:line)" line each
                             (mfs_settings_describe); "" for none; NULL
                             when they fail, settings_error says why */
    char settings_error[MFS_ERR_MAX];
    char miss[MFS_ERR_MAX]; /* why a lookup would convert: "" if it would not */
} mfs_explain;

/* The explanation of model (relative to the resolver's root) as resolver v
 * keys it, for every format v makes.  -1 with err when the model cannot be
 * stat'ed or hashed. */
int mfs_views_explain(struct mfs_views *v, const char *model, const char *fmi_model, mfs_explain *out,
                      mfs_err *err);
void mfs_explain_free(mfs_explain *e);

/* Human text, and one JSON object on one line (docs/cache.md lists the
 * fields). */
void mfs_explain_print(FILE *f, const mfs_explain *e);
void mfs_explain_print_json(FILE *f, const mfs_explain *e);

#endif

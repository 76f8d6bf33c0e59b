/* What a view's key is made of, and why a lookup would miss it
 * (`meshfs-cache explain`, the mount's user.meshfs.explain; docs/cache.md,
 * "Explain").  ccache's debug output is the anchor: every input with its
 * path, size and hash (or absent), the options and the versions that go
 * into the keys, each view's key and what the cache holds under it, and the
 * first reason a lookup would not be served.
 *
 * Read-only: nothing is converted, no entry is marked used or removed, and
 * no hit or miss is counted. */
#ifndef MESHFS_EXPLAIN_H
#define MESHFS_EXPLAIN_H

#include <stdint.h>
#include <stdio.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"

struct mfs_views;

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

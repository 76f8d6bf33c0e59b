/* Filing a conversion in the cache: what the mount (src/fs/convert.c) and
 * meshfs-convert (src/batch/) do with a worker run's outputs, in one place.
 *
 * The worker writes into a private directory; each output it vouches for is
 * copied into a cache entry under the key built from the inputs the worker
 * actually read (mfs_views_key: the one recipe), each failure becomes a
 * negative entry under the same key (so it is not retried until an input
 * changes or is touched, or the limits grow), and the model's manifest
 * records the inputs for the next lookup. */
#ifndef MESHFS_CONVSTORE_H
#define MESHFS_CONVSTORE_H

#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "meshfs/cache.h"
#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/limits.h"
#include "meshfs/proto.h"
#include "meshfs/views.h"

typedef struct mfs_convstore {
    void *ctx;
    mfs_cache *cache;
    const mfs_views *views; /* the key recipe */
    /* the model's content hash, as the host reads it (used when the worker
     * died before naming its inputs): 0, or -1 with err */
    int (*hash_model)(void *ctx, const char *relpath, struct stat *st, uint8_t hash[16],
                      mfs_err *err);
    /* what a failure is recorded under (the limits, the inputs' newest mtime) */
    void (*failctx)(void *ctx, const mfs_dep *deps, uint32_t ndeps, mfs_cache_failctx *out);
    /* a failure's text as users will read it (NULL: as the worker said it) */
    void (*errtext)(void *ctx, const char *in, char *out, size_t n);
    /* a line for the log */
    void (*log)(void *ctx, const char *msg);
    /* The cache's file system refused to store some of this run's results
     * (errnum ENOSPC, EDQUOT, EROFS or EIO; meshfs/storerr.h): called once
     * per run, in place of a log line per view, and *err then holds
     * mfs_storerr_reason.  NULL: nothing said but *err, which then reads
     * "cache: storing views: <strerror>" (meshfs-convert, warm). */
    void (*store_failed)(void *ctx, const char *relpath, int errnum);
    /* Every result of the run stored, the model entry included (NULL:
     * not told): the host may say the cache stores again. */
    void (*stored)(void *ctx);
    /* An extra blob the host files with the model (meshfs-convert's report
     * of the run; NULL: none): given the run's inputs and report, fills
     * *key and a malloc'd *bytes (taken over), 0; or -1 for none.  Kept
     * inside the model entry under its key when small (a file less a
     * model), as a view is; never in *man. */
    int (*extra)(void *ctx, const mfs_dep *deps, uint32_t ndeps, const mfs_report *rep,
                 mfs_cache_key *key, uint8_t **bytes, size_t *len);
    /* The host reuses its job directory (meshfs/jobdirs.h): each output is
     * left there empty, and the next run of that directory writes into the
     * same file, instead of removed. */
    int keep_outputs;
} mfs_convstore;

/* After a worker run of relpath into tmp (report rep, which it may mark
 * transient): stores each view of `formats` or its failure, fills *man (the
 * inputs and the views' keys; caller frees) and stores it as the model's
 * entry under *mk_out (may be NULL): views of at most MFS_CACHE_EMBED_MAX
 * bytes inside it (man->views[i].embedded), larger ones in entries of
 * their own.  hits[f'] receives a descriptor of man->views[f'] (fd -1 if
 * none; for an embedded view the model entry's, at its offset): still
 * readable if the cache evicts the entry at once.  Returns 0, 1 (done, but
 * a view failed for the machine's sake: err says the first), or -1 (err). */
int mfs_convstore_file(const mfs_convstore *h, const char *relpath, const char *tmp,
                       const char *fmi_model, unsigned formats, mfs_report *rep,
                       mfs_cache_manifest *man, mfs_cache_key *mk_out,
                       mfs_cache_hit hits[MFS_FMT_COUNT], mfs_err *err);

/* Streams the file at path into a cache entry under k: it must be `size`
 * bytes.  hit (may be NULL) as mfs_cache_writer_commit. */
int mfs_convstore_output(mfs_cache *c, const char *path, const mfs_cache_key *k, uint64_t size,
                         mfs_cache_hit *hit, mfs_err *err);

/* The failure rule shared by every host (docs/cache.md, "Negative
 * entries"): a remembered failure stands unless the run's limits are
 * larger than those it was recorded under, or an input was touched since
 * (newest: the inputs' newest mtime now). */
int mfs_convstore_failure_stands(const mfs_limits *l, const mfs_cache_failctx *f,
                                 struct timespec newest);

#endif

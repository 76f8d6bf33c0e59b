/* Managing a cache directory as a whole: what meshfs-cache does
 * (docs/cache.md, "Managing the cache").
 *
 * Every operation here is safe while mounts and meshfs-convert runs use the
 * same directory: removals only unlink names (an open entry keeps its bytes
 * for its reader), trim and clear take the `lock` file like any evictor,
 * and the stats file is read and written under its own flock. */
#ifndef MESHFS_CACHE_ADMIN_H
#define MESHFS_CACHE_ADMIN_H

#include <stdint.h>

#include "meshfs/cache.h"
#include "meshfs/err.h"

/* 1 if dir holds the CACHEDIR.TAG meshfs writes: meshfs-cache changes no
 * other folder, so that a mistyped --cache-dir loses nothing to clear. */
int mfs_cache_is_ours(const char *dir);

/* ---- counters every process sharing the directory added up ------------ */

/* The stats file's counters (docs/cache.md, "The stats file"). */
typedef struct mfs_cache_totals {
    uint64_t hits, misses, conversions, failures, evictions, corrupt; /* hits, misses: views */
    uint64_t model_hits, model_misses; /* models resolved (mfs_cache_stats) */
    uint64_t cap;     /* the last mount's or convert run's cap; 0: none recorded */
    int64_t updated;  /* last flush, seconds since the epoch; 0: never */
    uint64_t remote_hits, remote_misses, remote_errors, remote_bytes_down, remote_bytes_up;
    uint64_t remote_owed_sent, remote_owed_dropped, remote_slow;
} mfs_cache_totals;

/* Reads the stats file (shared lock); all zero when there is none yet. */
int mfs_cache_totals_read(mfs_cache *c, mfs_cache_totals *out, mfs_err *err);

/* Adds what this handle counted since its last flush to the stats file,
 * now (mfs_cache_close does this too). */
int mfs_cache_flush_stats(mfs_cache *c, mfs_err *err);

/* ---- what the entry directory holds ------------------------------------ */

typedef struct mfs_cache_usage {
    uint64_t entries;   /* .e files: views and remembered failures */
    uint64_t manifests; /* .m files: model entries and folder records */
    uint64_t bytes;     /* st_size of both, as the size cap counts them */
    /* the .m files by kind (docs/cache.md): model entries (and manifests
     * of older versions), the views inside them, folder records */
    uint64_t model_entries, views_inside, folder_records;
} mfs_cache_usage;

int mfs_cache_usage_scan(mfs_cache *c, mfs_cache_usage *out, mfs_err *err);

/* ---- the stored cap (maxsize.c) ------------------------------------------ */

/* `meshfs-cache max-size SIZE`: the cap kept in the cache folder, which
 * every mount, meshfs-convert run and warm opening the cache without a cap
 * of its own (-o cache_size=) uses; 0 stores "no cap".  It takes effect at
 * their next open. */
int mfs_cache_max_size_store(mfs_cache *c, uint64_t size, mfs_err *err);

/* 1 with *size if a cap is stored (0: no cap), 0 if none, -1 on error. */
int mfs_cache_max_size_stored(mfs_cache *c, uint64_t *size, mfs_err *err);

/* The same for the cache at dir, without opening it (which may trim): 0
 * too when dir is no cache yet. */
int mfs_cache_max_size_read(const char *dir, uint64_t *size);

/* ---- removing ------------------------------------------------------------ */

/* Removes least recently used entries and manifests until at most 90% of
 * size is left if more than size is held, as the cap does (evict.c); size 0
 * removes everything.  *removed: files removed. */
int mfs_cache_trim(mfs_cache *c, uint64_t size, uint64_t *removed, mfs_err *err);

/* Removes every entry and manifest; the directory, CACHEDIR.TAG, the stat
 * index, the stats file and tmp/ stay.  *removed files, *freed bytes. */
int mfs_cache_clear(mfs_cache *c, uint64_t *removed, uint64_t *freed, mfs_err *err);

/* ---- checking ------------------------------------------------------------ */

/* Called for each bad file: its path (under the cache directory), why,
 * and whether it was removed. */
typedef void (*mfs_cache_bad_fn)(void *ctx, const char *path, const char *why, int removed);

typedef struct mfs_cache_verify_result {
    uint64_t checked, bad, removed;
} mfs_cache_verify_result;

/* Checks every entry and manifest whole (header, size, checksum); with
 * repair, removes the bad ones (counted as corrupt_discarded). */
int mfs_cache_verify(mfs_cache *c, int repair, mfs_cache_bad_fn bad, void *ctx,
                     mfs_cache_verify_result *res, mfs_err *err);

#endif

/* One shard of the stat index: its records in memory and its log on disk
 * (index/<3 hex>, docs/cache.md "Stat index").  Shared by index_shard.c,
 * which owns the log format and the in-shard table, and index.c, which
 * picks the shard, bounds how many records stay in memory and serves the
 * public hashing calls.  Every function here runs under the index's lock. */
#ifndef MESHFS_CACHE_INDEX_SHARD_H
#define MESHFS_CACHE_INDEX_SHARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cache_int.h"

#define IDX_REC_LEN 64
#define IDX_HDR_LEN 16

typedef struct idx_rec {
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns;
    uint8_t hash[16];
    uint32_t seq; /* order in the shard (load, then append): oldest first */
} idx_rec;

typedef struct idx_shard {
    unsigned no;        /* its file: index/<no, 3 hex digits> */
    int loaded;         /* records read whole from the file (else n == 0) */
    idx_rec *recs;      /* live records, dense; the newest per (dev, ino) */
    uint32_t n, rcap;
    uint32_t *tab;      /* open addressing by (dev, ino): index into recs + 1 */
    uint32_t tcap;      /* power of two, at least twice n; 0: none yet */
    uint32_t seq;
    uint64_t fdev, fino;   /* the file read; 0, 0: none (absent) */
    uint64_t read_pos;     /* its bytes parsed so far */
    uint64_t log_records;  /* records in it, as far as we know */
    int64_t refreshed_ns;  /* CLOCK_MONOTONIC_COARSE of the last refresh */
    struct idx_shard *newer, *older; /* LRU list of loaded shards (index.c) */
} idx_shard;

void idx_rec_from_stat(idx_rec *r, const struct stat *st);
int idx_same_stat(const idx_rec *a, const idx_rec *b);

/* The shard's record for want's (dev, ino) if its stat matches, or NULL. */
const idx_rec *idx_shard_match(const idx_shard *s, const idx_rec *want);

/* Reads the shard's file whole (nothing if it is absent).  The shard must
 * be empty (never loaded, or dropped). */
void idx_shard_load(mfs_cache *c, idx_shard *s);
/* Picks up what other processes did to the file since it was read: their
 * appends, or a rewrite (read again whole: returns 1). */
int idx_shard_refresh(mfs_cache *c, idx_shard *s);
/* Records r in memory and appends it to the file; compacts the file when
 * superseded records dominate it. */
void idx_shard_add(mfs_cache *c, idx_shard *s, const idx_rec *r);
/* Rewrites the file with the live records only (temp file + rename). */
void idx_shard_compact(mfs_cache *c, idx_shard *s);
/* Frees the records; the shard can be loaded again. */
void idx_shard_drop(idx_shard *s);

/* Appends already-encoded records (n * IDX_REC_LEN bytes) to shard no's
 * file in one write, creating it if needed; for the migration of an old
 * index.log, while the shard is not loaded.  0 or -1. */
int idx_shard_append_raw(mfs_cache *c, unsigned no, const uint8_t *b, size_t n);

/* Decodes the valid records of buf (log bytes from file offset base),
 * resynchronising byte by byte past damage; calls fn for each with its
 * encoded bytes.  Returns the offset just past the last valid record. */
uint64_t idx_parse(const uint8_t *buf, size_t n, uint64_t base,
                   void (*fn)(void *arg, const idx_rec *r, const uint8_t *raw), void *arg);

/* The log header (magic mfsstat1, version 1, record size 64): a shard's
 * file is exactly an old index.log. */
int idx_header_ok(int fd);

#endif

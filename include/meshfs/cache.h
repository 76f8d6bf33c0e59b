/* The on-disk cache of converted views (docs/cache.md).
 *
 * A view (car.fbx -> car.fmd) is stored under a key that names everything
 * its bytes depend on: each input file (path, size, XXH3-128 of the bytes),
 * the format, the option text that format reads and the converter version.
 * Same key, same bytes; so an entry never needs invalidating, only evicting.
 *
 * Three more things live beside the entries:
 *  - negative entries: a failure reason stored under the view's key, so a
 *    model that fails to convert is not retried until its inputs change;
 *  - manifests: per model, the dependency list found by the importer and the
 *    key of each view, so a warm lookup needs no import at all;
 *  - the stat index: (dev, ino, size, mtime, ctime) -> content hash, so a
 *    warm lookup re-reads no source bytes.
 *
 * Several daemons may share one directory.  Every file reaches its final name
 * by rename() from a complete temporary file; readers open final names only.
 * Durability: nothing is fsynced.  A killed process loses nothing it
 * committed (the bytes are in the page cache), but after a power loss a
 * final name may hold bytes that never reached the disk; entries are
 * checksummed and verified on first open, so such an entry is discarded and
 * made again, never served (docs/cache.md, "Writing", "Crash safety").
 *
 * Thread safety: every function taking an mfs_cache* is safe to call from
 * any number of threads at once, except mfs_cache_open/mfs_cache_close.  A
 * writer (mfs_cache_writer) or key builder belongs to one thread at a time. */
#ifndef MESHFS_CACHE_H
#define MESHFS_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "meshfs/err.h"
#include "meshfs/import.h" /* mfs_dep: the importer's dependency record */

#define MFS_CACHE_DEFAULT_MAX_SIZE (2ull << 30) /* 2 GiB */
#define MFS_CACHE_DEFAULT_TMP_AGE 3600          /* seconds */
#define MFS_CACHE_DEFAULT_INDEX_CAP 65536       /* records: ~6 MiB of memory */

typedef struct mfs_cache mfs_cache;

/* ---- keys ------------------------------------------------------------- */

typedef struct mfs_cache_key {
    uint8_t b[16]; /* XXH3-128, canonical (big-endian) form */
} mfs_cache_key;

/* Streaming key builder.  Every field is tagged and length-prefixed, so the
 * field sequence is recoverable from the hashed bytes: "ab"+"c" and "a"+"bc"
 * give different keys.  The encoding is in docs/cache.md. */
typedef struct mfs_cache_keyb {
    void *state;
} mfs_cache_keyb;

/* Starts a key in a domain ("meshfs.view.v2"): keys of different domains
 * never collide even over equal fields.  -1 only on out of memory. */
int mfs_cache_key_init(mfs_cache_keyb *kb, const char *domain, mfs_err *err);
void mfs_cache_key_add_str(mfs_cache_keyb *kb, const char *s); /* NULL = "" */
void mfs_cache_key_add_bytes(mfs_cache_keyb *kb, const void *p, size_t n);
void mfs_cache_key_add_u64(mfs_cache_keyb *kb, uint64_t v);
void mfs_cache_key_add_dep(mfs_cache_keyb *kb, const char *path, uint64_t size,
                           const uint8_t hash[16]);
/* Writes the key and releases the builder. */
void mfs_cache_key_final(mfs_cache_keyb *kb, mfs_cache_key *out);
/* Releases a builder without producing a key (error paths). */
void mfs_cache_key_discard(mfs_cache_keyb *kb);

/* 32 lowercase hex digits and a NUL. */
void mfs_cache_key_hex(const mfs_cache_key *k, char out[33]);

/* Key of one view: domain "meshfs.view.v2", each dep in order, then format
 * name, option text (mfs_options_key for that format's mask, and the
 * importer: include/meshfs/rules.h, keyopts.c), version. */
int mfs_cache_view_key(const mfs_dep *deps, uint32_t ndeps, const char *format,
                       const char *options, const char *version, mfs_cache_key *out,
                       mfs_err *err);
/* The same with texture_inputs 0 for a view that does not read the
 * texture's image: the deps marked mfs_dep.texture are left out (they
 * decide .tex alone).  mfs_cache_view_key is texture_inputs 1. */
int mfs_cache_view_key_for(const mfs_dep *deps, uint32_t ndeps, int texture_inputs,
                           const char *format, const char *options, const char *version,
                           mfs_cache_key *out, mfs_err *err);

/* Key of a model's manifest: domain "meshfs.manifest.v3" (v1: before
 * absent inputs were recorded, so never trusted now; v2: option text that
 * held the formats asked for), the model as a dep
 * (relative path, size, content hash), option text, version. */
int mfs_cache_manifest_key(const char *model_path, uint64_t model_size,
                           const uint8_t model_hash[16], const char *options,
                           const char *version, mfs_cache_key *out, mfs_err *err);

/* ---- opening ---------------------------------------------------------- */

enum {
    /* Record stats in the index even when the file changed in the last 2 s
     * (the racy window, docs/cache.md).  Tests only. */
    MFS_CACHE_TRUST_FRESH_STAT = 1u << 0,
    /* No size cap and none recorded in the stats file: a management tool's
     * handle (meshfs-cache), which removes entries only when asked to. */
    MFS_CACHE_NO_CAP = 1u << 1,
    /* Write each entry's record as a trailer, as on a file system without
     * user xattrs (docs/cache.md, "Entry format").  Tests only. */
    MFS_CACHE_TRAILER_FORM = 1u << 2,
};

typedef struct mfs_cache_config {
    const char *dir;        /* NULL: ${XDG_CACHE_HOME:-$HOME/.cache}/meshfs */
    uint64_t max_size;      /* 0: the cap meshfs-cache max-size stored in dir
                               (below), else MFS_CACHE_DEFAULT_MAX_SIZE */
    unsigned tmp_max_age_s; /* 0: MFS_CACHE_DEFAULT_TMP_AGE */
    unsigned flags;
    /* Stat index records kept in memory, in whole shards, least recently
     * used dropped first (docs/scale.md); 0: MFS_CACHE_DEFAULT_INDEX_CAP.
     * The records on disk stay; a dropped shard is read again when needed. */
    uint64_t index_cap;
} mfs_cache_config;

/* The default directory; -1 if neither XDG_CACHE_HOME nor HOME is usable. */
int mfs_cache_default_dir(char *buf, size_t n, mfs_err *err);

/* Creates the directory (0700) and CACHEDIR.TAG if missing, removes
 * temporary files older than tmp_max_age_s, loads the stat index and trims
 * the cache to max_size.  cfg may be NULL for all defaults. */
int mfs_cache_open(const mfs_cache_config *cfg, mfs_cache **out, mfs_err *err);
void mfs_cache_close(mfs_cache *c);

const char *mfs_cache_dir(const mfs_cache *c);

typedef struct mfs_cache_stats {
    uint64_t hits;              /* entry lookups served (positive + negative) */
    uint64_t negative_hits;     /* ... of which negative entries */
    uint64_t misses;            /* entry lookups not served */
    uint64_t stores;            /* entries and manifests committed */
    uint64_t evictions;         /* files removed by the size cap */
    uint64_t corrupt_discarded; /* entries/manifests failing validation, unlinked */
    uint64_t verified;          /* entries checksummed on first open */
    uint64_t manifest_hits, manifest_misses;
    uint64_t files_hashed;      /* source files hashed from their bytes */
    uint64_t bytes_hashed;
    uint64_t index_hits;        /* content hashes answered by the stat index */
    uint64_t tmp_cleaned;       /* stale temporary files removed */
    uint64_t size;              /* estimated bytes of entries + manifests (evict.c) */
    /* What a user asks about (docs/cache.md, "Statistics"), told by the
     * resolver through mfs_cache_note: lookups above count files, these
     * count views.  Persisted in the stats file (mfs_cache_totals below). */
    uint64_t view_hits;           /* views opened, served without converting */
    uint64_t view_misses;         /* view requests that needed a conversion */
    /* ccache's unit: one model resolved for one meshfs-convert or warm run,
     * or for one view request of a mount, however many of its views were
     * read: served from the cache, a hit; converted, a miss */
    uint64_t model_hits, model_misses;
    uint64_t conversions;         /* conversions run */
    uint64_t conversion_failures; /* ... that failed */
    /* the remote tier (remote.h), persisted the same way */
    uint64_t remote_hits, remote_misses, remote_errors, remote_bytes_down, remote_bytes_up;
    uint64_t remote_owed_sent, remote_owed_dropped; /* the owed list (remote.h) */
    uint64_t remote_slow; /* models converted, the server slower (src/remote/pace.h) */
    /* the stat index's memory (docs/scale.md): records held now (at most
     * the cap plus one shard), shards read whole from disk, shards dropped
     * to keep to the cap.  This handle's only; not in the stats file. */
    uint64_t index_records, index_shard_loads, index_shard_drops;
    /* cache files opened to read (entries, model entries, folder records):
     * a listing with a folder record opens one (docs/cache.md) */
    uint64_t files_opened;
    /* entries the size cap removed before they were served: larger than
     * the room evicting every other entry made (evict.c); this handle's */
    uint64_t fresh_evictions;
    /* times the directory was made again after its removal (revive.c) */
    uint64_t revivals;
} mfs_cache_stats;

void mfs_cache_get_stats(mfs_cache *c, mfs_cache_stats *out);

typedef enum mfs_cache_event {
    MFS_CACHE_VIEW_HIT,
    MFS_CACHE_VIEW_MISS,
    MFS_CACHE_CONVERSION,
    MFS_CACHE_CONVERSION_FAILURE,
    MFS_CACHE_MODEL_HIT,  /* model_hits, above */
    MFS_CACHE_MODEL_MISS,
} mfs_cache_event;

/* Counts one event in the handle's statistics.  Every counter the stats
 * file keeps is added to it within a few seconds, and at mfs_cache_close,
 * so counts of every process sharing the directory add up (stats_file.c). */
void mfs_cache_note(mfs_cache *c, mfs_cache_event ev);

/* ---- entries ---------------------------------------------------------- */

/* What a remembered failure was recorded under (docs/cache.md, "Negative
 * entries"): the limits its conversion ran with and the newest mtime of its
 * inputs then.  The cache only keeps it; the mount decides that a failure
 * no longer stands when it runs with a limit the failure did not have, or
 * when an input has been touched since (src/coherence/failure.c). */
typedef struct mfs_cache_failctx {
    double timeout_s;        /* wall clock; 0: none */
    uint64_t memory;         /* address space; 0: none */
    uint64_t cpu_s;          /* 0: none */
    uint64_t output;         /* per output file; 0: none */
    int64_t inputs_mtime_ns; /* 0: not recorded (stands whatever the mtime) */
} mfs_cache_failctx;

/* A served entry.  fd is the caller's: pread(fd, buf, length, offset) reads
 * the payload, and stays valid even if the entry is evicted meanwhile.
 * The payload starts at offset 0; where the file ends at length too (its
 * record in an xattr, docs/cache.md), fd can back a view in the kernel. */
typedef struct mfs_cache_hit {
    int fd;          /* -1 for a negative entry */
    uint64_t offset; /* payload position in fd: 0 (container version 2) */
    uint64_t length; /* payload bytes */
    char *reason;    /* negative entry: the failure text; else NULL */
    mfs_cache_failctx fail; /* negative entry: what it was recorded under
                               (all zero: no limits, no mtime) */
} mfs_cache_hit;

/* Closes fd and frees reason; safe on a released hit or one set to
 * {.fd = -1} (not on a zeroed one: descriptor 0 would be closed). */
void mfs_cache_hit_release(mfs_cache_hit *h);

/* 1: hit (*hit filled), 0: miss (absent, or corrupt and discarded),
 * -1: error other than absence (err set; treat as a miss). */
int mfs_cache_lookup(mfs_cache *c, const mfs_cache_key *k, mfs_cache_hit *hit,
                     mfs_err *err);

/* What a lookup would answer, from the entry's header alone: no checksum
 * pass, no LRU stamp, no descriptor kept (hit->fd stays -1; reason is set
 * for a negative entry).  For attributes: a cold stat of a large view need
 * not read it.  The bytes are still verified when mfs_cache_lookup opens
 * the entry to serve it.  Returns like mfs_cache_lookup. */
int mfs_cache_peek(mfs_cache *c, const mfs_cache_key *k, mfs_cache_hit *hit, mfs_err *err);

/* Streaming store: payload bytes go to a temporary file, commit makes them
 * visible under the key atomically.  commit and abort release the writer. */
typedef struct mfs_cache_writer mfs_cache_writer;

int mfs_cache_writer_begin(mfs_cache *c, const mfs_cache_key *k, mfs_cache_writer **out,
                           mfs_err *err);
int mfs_cache_writer_write(mfs_cache_writer *w, const void *p, size_t n, mfs_err *err);
/* hit may be NULL; if given it receives a read-only fd on the new entry, so
 * the caller can serve it even if eviction removes the name at once. */
int mfs_cache_writer_commit(mfs_cache_writer *w, mfs_cache_hit *hit, mfs_err *err);
void mfs_cache_writer_abort(mfs_cache_writer *w);

int mfs_cache_store(mfs_cache *c, const mfs_cache_key *k, const void *p, size_t n,
                    mfs_cache_hit *hit, mfs_err *err);

/* Records a conversion failure under the view's key. */
int mfs_cache_store_negative(mfs_cache *c, const mfs_cache_key *k, const char *reason,
                             mfs_err *err);
/* The same with what it was recorded under (ctx NULL: all zero). */
int mfs_cache_store_failure(mfs_cache *c, const mfs_cache_key *k, const char *reason,
                            const mfs_cache_failctx *ctx, mfs_err *err);

/* Drops the entry under k (e.g. to retry a failure); absent is not an error. */
int mfs_cache_remove(mfs_cache *c, const mfs_cache_key *k, mfs_err *err);
/* The same for the model entry under mk (mfs_cache_manifest_store's), with
 * the views embedded in it.  A reader's open descriptor keeps its bytes. */
int mfs_cache_remove_model(mfs_cache *c, const mfs_cache_key *mk, mfs_err *err);

/* ---- manifests: the model's entry ----------------------------------- */

/* A model's entry (docs/cache.md, "Small views inside the model entry") is its manifest, the
 * inputs the import found and each view's key, and it embeds every view of
 * at most MFS_CACHE_EMBED_MAX bytes: one file a model instead of one a view
 * (ccache's result files do the same with small outputs).  Larger views
 * keep their own entry files, which the mount can hand to the kernel
 * (passthrough); so do failures. */
#define MFS_CACHE_EMBED_MAX (16u * 1024)

typedef struct mfs_cache_view {
    char *format;      /* "fmd" */
    mfs_cache_key key; /* its entry key */
    /* Embedded in the model's entry: its bytes are at offset (a file
     * offset of the model entry) for length bytes.  Otherwise (0) the view
     * is the entry file under key, or a failure there, or nothing. */
    int embedded;
    uint64_t offset, length;
    /* Not embedded but an entry file of its own of `length` bytes (0: the
     * length is not recorded: a failure, a view not stored, an older
     * entry).  A listing may say that size without opening the file; the
     * key names the bytes, so it is right even if the file was evicted. */
    int sized;
    /* Storing only: the bytes to embed (length of them), or NULL.  Not
     * owned by the manifest. */
    const void *bytes;
} mfs_cache_view;

typedef struct mfs_cache_manifest {
    mfs_dep *deps;     /* in import order, the model first */
    uint32_t ndeps;
    mfs_cache_view *views;
    uint32_t nviews;
    /* the wall time of the conversion that stored it, ms (0: unknown):
     * the remote tier's slow-server rule (src/remote/pace.h) */
    uint64_t convert_ms;
} mfs_cache_manifest;

/* Stores m as the model's entry under mk, embedding each view that has
 * bytes (and fills in its offset).  Views the entry already under mk holds
 * for the same inputs and m does not name are kept (an earlier run's, or
 * another option set's): a run that made only the views that were missing
 * must not drop the others.  hit (may be NULL) receives a read-only fd on
 * the new file, as mfs_cache_writer_commit gives. */
int mfs_cache_manifest_store(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_manifest *m,
                             mfs_cache_hit *hit, mfs_err *err);

/* 1: loaded into *out (free with mfs_cache_manifest_free), 0: none, -1: error.
 * Loading marks the manifest used, like a lookup marks an entry. */
int mfs_cache_manifest_load(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_manifest *out,
                            mfs_err *err);
/* The same without marking it used: a listing looks, it does not use, and
 * stamping every manifest of a folder would be a metadata write per model. */
int mfs_cache_manifest_peek(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_manifest *out,
                            mfs_err *err);

/* View k embedded in the model entry mk, as mfs_cache_lookup answers for an
 * entry file: 1 hit (fd on the model entry, the view's offset and length;
 * the entry is checked whole and marked used), 0 not there, -1 error. */
int mfs_cache_lookup_in(mfs_cache *c, const mfs_cache_key *mk, const mfs_cache_key *k,
                        mfs_cache_hit *hit, mfs_err *err);
/* The same without marking it used or counting a lookup (hit->fd stays -1). */
int mfs_cache_peek_in(mfs_cache *c, const mfs_cache_key *mk, const mfs_cache_key *k,
                      mfs_cache_hit *hit, mfs_err *err);

/* Re-hashes every dep under root (through the stat index): 1 if all still
 * have the recorded size and hash, 0 if any changed or vanished, -1 error. */
int mfs_cache_manifest_current(mfs_cache *c, int rootfd, const mfs_cache_manifest *m,
                               mfs_err *err);

/* The same question answered from the stat index alone, reading no source
 * bytes: 1 if every dep is recorded there with its manifest hash, 0 if any
 * changed, vanished or is simply not recorded, -1 error.  For listings,
 * which may say what they know but must not hash a folder of models. */
int mfs_cache_manifest_known(mfs_cache *c, int rootfd, const mfs_cache_manifest *m,
                             mfs_err *err);

/* One recorded dependency checked as mfs_cache_manifest_current checks
 * each: 1 same, 0 changed or gone, -1 error. */
int mfs_cache_dep_current(mfs_cache *c, int rootfd, const mfs_dep *d, mfs_err *err);

/* The view's key by format name, or NULL. */
const mfs_cache_key *mfs_cache_manifest_find(const mfs_cache_manifest *m,
                                             const char *format);

void mfs_cache_manifest_free(mfs_cache_manifest *m);
/* Drops the deps marked mfs_dep.texture (the texture search's), for a
 * reader that shows no view reading the texture's image: they decide none
 * of its views, so a texture edit must not make them stale (docs/cache.md,
 * "Keys").  The rest keep their order. */
void mfs_cache_manifest_drop_texture_inputs(mfs_cache_manifest *m);

/* ---- folder records ---------------------------------------------------- */

/* A copy of the manifest of every model a listing of one folder knew, in
 * one file (docs/cache.md, "Folder records"), so the next listing of the
 * folder opens that file instead of one model entry a model.  A hint:
 * each copy is used only where its model still hashes as it says. */
typedef struct mfs_cache_folder mfs_cache_folder;
typedef struct mfs_cache_folder_builder mfs_cache_folder_builder;

/* Key of a folder's record: domain "meshfs.folder.v1", the folder's path
 * relative to the root, the import option text, the version. */
int mfs_cache_folder_key(const char *dir, const char *options, const char *version,
                         mfs_cache_key *out, mfs_err *err);

/* 1 loaded (free with mfs_cache_folder_free), 0 none, -1 error. */
int mfs_cache_folder_load(mfs_cache *c, const mfs_cache_key *fk, mfs_cache_folder **out,
                          mfs_err *err);
void mfs_cache_folder_free(mfs_cache_folder *f);
size_t mfs_cache_folder_count(const mfs_cache_folder *f);
/* The copy recorded for the model named name (a file name in the folder):
 * 1 with *out filled (free with mfs_cache_manifest_free) and *at (may be
 * NULL) its position for mfs_cache_folder_keep, 0 none. */
int mfs_cache_folder_find(const mfs_cache_folder *f, const char *name, size_t *at,
                          mfs_cache_manifest *out);

/* A new record: models added in any order; of two with one name, the
 * first added is kept. */
mfs_cache_folder_builder *mfs_cache_folder_builder_new(void);
void mfs_cache_folder_builder_free(mfs_cache_folder_builder *b);
size_t mfs_cache_folder_builder_count(const mfs_cache_folder_builder *b);
int mfs_cache_folder_add(mfs_cache_folder_builder *b, const char *name,
                         const mfs_cache_manifest *m);
/* The copy at position at of record f, as it is. */
int mfs_cache_folder_keep(mfs_cache_folder_builder *b, const mfs_cache_folder *f, size_t at);
/* Stores it under fk: 1, 0 when it is too big to be read whole (32 MiB:
 * about 80,000 models; such a folder's listings read the model entries),
 * -1 error. */
int mfs_cache_folder_store(mfs_cache *c, const mfs_cache_key *fk, mfs_cache_folder_builder *b,
                           mfs_err *err);

/* ---- source content hashes (the stat index) --------------------------- */

/* XXH3-128 (canonical) of the file open at fd, whose stat is st (NULL:
 * fstat it).  Answered from the index when (dev, ino, size, mtime, ctime)
 * match a record; otherwise the bytes are hashed and the index updated. */
int mfs_cache_file_hash(mfs_cache *c, int fd, const struct stat *st, uint8_t out[16],
                        mfs_err *err);

/* The hash the index records for a file with stat st: 1 with out filled, 0
 * if it has none (the file is new, changed, or changed too recently). */
int mfs_cache_file_hash_known(mfs_cache *c, const struct stat *st, uint8_t out[16]);

/* Same for dirfd/path (AT_FDCWD allowed); st_out (may be NULL) gets the stat.
 * A missing file is an error whose errno is left in errno (ENOENT). */
int mfs_cache_file_hash_at(mfs_cache *c, int dirfd, const char *path, struct stat *st_out,
                           uint8_t out[16], mfs_err *err);

/* ---- a directory removed under a running handle ----------------------- */

/* If the cache directory, or everything in it, was removed while open
 * (`rm -rf` under a mount), creates it again with the checks
 * mfs_cache_open applies and points the handle at the new one, so lookups
 * miss and stores succeed instead of failing until the next open.  Safe from any thread, at any
 * time (the descriptors are replaced in place with dup3, never closed
 * under a user).  1 revived, 0 nothing to do, -1 error (err set). */
int mfs_cache_revive(mfs_cache *c, mfs_err *err);
/* From now on a removed directory stays removed: mfs_cache_revive does
 * nothing (a meshfs-convert run being stopped removes its private cache
 * while its threads still store into it).  Safe from any thread. */
void mfs_cache_stop_reviving(mfs_cache *c);

/* ---- size cap --------------------------------------------------------- */

void mfs_cache_set_max_size(mfs_cache *c, uint64_t max_size);

/* The cap in force: UINT64_MAX for none. */
uint64_t mfs_cache_max_size(const mfs_cache *c);

/* Scans the entries, and if they exceed max_size removes the least recently
 * used until they fit in 90% of it.  Returns files removed, or -1. */
int mfs_cache_evict(mfs_cache *c, mfs_err *err);

/* ==== objects shared with another tier (src/remote) ======================
 * The remote tier (meshfs/remote.h) moves entries between this store and a
 * server, and reaches the store only through what follows.  An object on
 * the wire is one entry container in the TRAILER form: the payload, then
 * the MFS_CACHE_REC_LEN-byte record.  Only kinds that are no machine's own
 * travel: views under an 'e' name, manifests and model entries under an
 * 'm' name; never a remembered failure (each machine's own). */

/* The container version (docs/cache.md, "Entry format"): a server keeps
 * each version's objects apart (<url>/v<N>/...), and -V prints it. */
#define MFS_CACHE_VERSION 2
/* The record after a payload in the TRAILER form: descriptor + checksum. */
#define MFS_CACHE_REC_LEN 56
/* The largest payload under an 'm' name (manifests, model entries): they
 * are read whole, so an absurd size is refused. */
#define MFS_CACHE_SMALL_MAX (64u << 20)
/* A cache-relative path of a temporary or entry file, with its NUL. */
#define MFS_CACHE_PATH_MAX 64

/* Bumps one counter of mfs_cache_stats (field: offsetof of a uint64_t
 * member, e.g. offsetof(mfs_cache_stats, remote_hits)) under the handle's
 * lock; it reaches the stats file with the others. */
void mfs_cache_stat_add(mfs_cache *c, size_t field, uint64_t v);

/* The cache folder, open (valid until mfs_cache_close; the caller never
 * closes it), for a tier that keeps files of its own beside the entries
 * under a name the store reserves: "owed" (the remote tier's owed list). */
int mfs_cache_dirfd(const mfs_cache *c);

/* A file growing in tmp/ that the store did not make (a download) counts
 * against the cap while it grows: reserve before writing bytes, making
 * room by eviction if the entries and other reservations leave too little.
 * 0, or -1 if even then bytes do not fit (nothing reserved; and nothing
 * evicted if the other reservations alone leave too little).  unreserve
 * gives bytes back, kept of them now being an entry (0: the file was
 * discarded), so the cap is never checked with both counted. */
int mfs_cache_reserve(mfs_cache *c, uint64_t bytes);
void mfs_cache_unreserve(mfs_cache *c, uint64_t bytes, uint64_t kept);

/* A download: a new temporary file in tmp/ (O_RDWR), its cache-relative
 * name in tmp; the fd, or -1 with err.  The caller writes the object into
 * it (reserving as it grows), then adopts it or not, and always ends it. */
int mfs_cache_download_begin(mfs_cache *c, char tmp[MFS_CACHE_PATH_MAX], mfs_err *err);
/* Judges the download in fd exactly as a local entry under (k, suffix 'e'
 * or 'm') would be judged (mfs_cache_entry_check: magic, version, key,
 * kind, length, checksum), requires the TRAILER form and a kind that
 * travels, moves the record into the xattr where this cache keeps records
 * there, and renames the file to k's entry name.
 *   1  adopted: tmp[0] is set to '\0', *kept gets the entry's bytes;
 *   0  refused, never served: *why says why (static text);
 *  -1  judged good but not kept (the rename failed): err says why. */
int mfs_cache_download_adopt(mfs_cache *c, int fd, char tmp[MFS_CACHE_PATH_MAX],
                             const mfs_cache_key *k, char suffix, uint64_t *kept,
                             const char **why, mfs_err *err);
/* Closes fd and removes tmp unless it was adopted. */
void mfs_cache_download_end(mfs_cache *c, int fd, const char tmp[MFS_CACHE_PATH_MAX]);

/* An entry opened to be sent: its bytes in the TRAILER form, whichever
 * form this cache keeps it in. */
typedef struct mfs_cache_object {
    int fd;
    uint64_t len;  /* payload bytes */
    uint64_t size; /* the object's bytes on the wire: payload and record */
    uint8_t rec[MFS_CACHE_REC_LEN];
    int add_rec;   /* kept in the xattr form: rec follows the payload */
} mfs_cache_object;
enum {
    MFS_CACHE_OBJECT_OPEN = 1,   /* o is open: mfs_cache_object_close it */
    MFS_CACHE_OBJECT_ABSENT = 0, /* no entry under that name (evicted) */
    MFS_CACHE_OBJECT_BAD = -2,   /* an entry that does not check (*why), or a
                                    kind that does not travel (*why NULL) */
    MFS_CACHE_OBJECT_ERR = -1,   /* its record could not be read: try later */
};
/* Opens k's entry under suffix ('e' or 'm') after checking it whole. */
int mfs_cache_object_open(mfs_cache *c, const mfs_cache_key *k, char suffix, mfs_cache_object *o,
                          const char **why);
/* Up to n of the object's wire bytes at off (the payload's, then the
 * record's, never both in one call): the count, 0 at the end, -1 on a
 * read error. */
int64_t mfs_cache_object_read(const mfs_cache_object *o, void *p, size_t n, uint64_t off);
void mfs_cache_object_close(mfs_cache_object *o);

/* ==== managing a cache directory as a whole ==============================
 * What meshfs-cache does (docs/cache.md, "Managing the cache").  Every
 * operation here is safe while mounts and meshfs-convert runs use the same
 * directory: removals only unlink names (an open entry keeps its bytes for
 * its reader), trim and clear take the `lock` file like any evictor, and
 * the stats file is read and written under its own flock. */

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

/* Internals shared by the cache's files (not part of the contract).
 *
 *   io.c       whole-buffer I/O, clocks, temporary files, renames, the
 *              directory checks and CACHEDIR.TAG
 *   key.c      key builder and the view/manifest key definitions
 *   evict.c    size cap, LRU by mtime
 *   index.c    stat -> content hash index: shards in memory under a cap
 *   index_shard.c  one shard's records and its append-only log (index.c's
 *              alone: index_shard.h)
 *   store.c    entry container: writer, lookup, verification, verified set
 *   manifest.c model entries: manifest and embedded small views, encode/
 *              decode, the merge at store, views inside, dependency check
 *   folder.c   folder records: copies of a folder's manifest tables
 *   revive.c   the directory made again after an rm -rf
 *   cache.c    opening and closing: directory, temp cleanup, stats
 *
 * Layering (a file calls only those above it in this list, never back):
 *   io.c, key.c  <-  evict.c, index.c  <-  store.c  <-  manifest.c  <-  folder.c
 *   io.c, index.c  <-  revive.c;  all of them  <-  cache.c
 * io.c's temporary files reach revive.c only through the c->revive hook.
 * views.c, the resolver (meshfs/views.h), sits above them all and uses the
 * public contract (cache.h) only, never these internals.
 *
 * Every path is relative to c->dirfd and used through the *at() calls, so
 * nothing depends on the process's working directory.  c->dirfd, tmp/ and
 * v2/ are checked to be real directories of ours when the cache opens
 * (cache.c), and no final component is ever followed if it is a link
 * (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW; unlinkat and renameat never follow). */
#ifndef MESHFS_CACHE_INT_H
#define MESHFS_CACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "meshfs/cache.h"
#include "meshfs/util.h"

/* Entries live in ENTRY_DIR/<2 hex>/<30 hex><suffix>.  The directory carries
 * the container version, so a future layout can coexist with this one.
 * OLD_ENTRY_DIR held version 1 (header first, payload at 40): never read,
 * removed when the cache opens (docs/cache.md, "Version 1"). */
#define MFS_CACHE_ENTRY_DIR "v2"
#define MFS_CACHE_OLD_ENTRY_DIR "v1"
#define MFS_CACHE_TMP_DIR "tmp"
/* The stat index: one log per shard in INDEX_DIR (index.c).  INDEX_FILE,
 * the single log of older versions, is moved into the shards at open. */
#define MFS_CACHE_INDEX_DIR "index"
#define MFS_CACHE_INDEX_FILE "index.log"
#define MFS_CACHE_LOCK_FILE "lock"
#define MFS_CACHE_STATS_FILE "stats"
#define MFS_CACHE_MAX_SIZE_FILE "max_size" /* maxsize.c */
#define MFS_CACHE_TAG_FILE "CACHEDIR.TAG"
/* root's default: root's HOME may be a user's (sudo), /var/cache is not */
#define MFS_CACHE_ROOT_DIR "/var/cache/meshfs"

/* Container kinds (docs/cache.md, "Entry format").  A failure is written
 * as kind 4 (its reason after the limits and input mtime it was recorded
 * under, mfs_cache_failctx); kind 2, the bare reason, is still read.  A
 * model's manifest is written as kind 5, the model entry, which may embed
 * small views (manifest.c); kind 3, the manifest alone, is still read. */
enum {
    MFS_KIND_VIEW = 1,
    MFS_KIND_NEGATIVE = 2,
    MFS_KIND_MANIFEST = 3,
    MFS_KIND_FAILURE = 4,
    MFS_KIND_MODEL = 5,
    MFS_KIND_FOLDER = 6, /* a folder record (folder.c), under an .m name */
};
#define MFS_CACHE_FAILCTX_LEN 40

/* Container version 2 (store.c): the payload is the file from offset 0;
 * a 56-byte record (40-byte descriptor, 16-byte checksum) says what it is,
 * in the xattr MFS_CACHE_XATTR (file size = n) or, where the file system
 * has no user xattrs, as a trailer at offset n (file size = n + 56). */
#define MFS_CACHE_DESC_LEN 40
#define MFS_CACHE_XATTR "user.meshfs.entry"
#define MFS_CACHE_MAGIC "mfscache"
enum { MFS_CACHE_FORM_XATTR = 1, MFS_CACHE_FORM_TRAILER = 2 };

typedef struct mfs_vset_slot {
    mfs_cache_key key;
    uint64_t dev, ino, size;
    int used;
} mfs_vset_slot;

/* Entries verified in this mount's life, by key; (dev, ino, size) tells a
 * replaced file from the one verified. */
typedef struct mfs_vset {
    mfs_vset_slot *slots;
    size_t cap, n;
} mfs_vset;

typedef struct mfs_index mfs_index;

/* Entries this handle stored and has not served yet (evict.c): the
 * eviction that their own store sets off takes every colder entry first.
 * A ring: the oldest of more than MFS_CACHE_FRESH_MAX stores, or one past
 * MFS_CACHE_FRESH_NS, is no longer fresh. */
#define MFS_CACHE_FRESH_MAX 64
#define MFS_CACHE_FRESH_NS (60 * (int64_t)1000000000)

typedef struct mfs_cache_fresh {
    mfs_cache_key key;
    char suffix;               /* 0: free */
    int64_t at_ns;
} mfs_cache_fresh;

struct mfs_cache {
    char *dir;
    int dirfd;
    int lockfd; /* flock()ed by whoever evicts, across processes */
    uint64_t max_size;
    unsigned tmp_max_age_s;
    unsigned flags;

    pthread_mutex_t mu; /* guards st (with the size estimate st.size), reserved, vset and fresh */
    mfs_cache_stats st;
    uint64_t reserved; /* bytes downloads in tmp/ hold against max_size (evict.c) */
    mfs_vset vset;
    mfs_cache_fresh fresh[MFS_CACHE_FRESH_MAX];
    unsigned fresh_next;

    pthread_mutex_t evict_mu; /* one evicting thread per handle */
    mfs_index *idx;           /* has its own lock */
    atomic_int no_xattr;      /* fsetxattr said ENOTSUP: records go in trailers */
    /* mfs_cache_revive, set at open: io.c calls it when tmp/ is gone */
    int (*revive)(mfs_cache *c, mfs_err *err);
    atomic_int no_revive;     /* mfs_cache_stop_reviving: a removal stands */
    struct mfs_cache_sfile *sf; /* stats file flushing (stats_file.c); NULL: none */
};

/* Statistics: one field bump under the lock. */
#define MFS_CACHE_STAT_ADD(c, field, v)    \
    do {                                   \
        pthread_mutex_lock(&(c)->mu);      \
        (c)->st.field += (v);              \
        pthread_mutex_unlock(&(c)->mu);    \
    } while (0)

/* evict.c: an entry just stored (committed), and one served (looked up):
 * no longer fresh.  Called with c->mu not held. */
void mfs_cache_fresh_add(mfs_cache *c, const mfs_cache_key *k, char suffix);
void mfs_cache_fresh_served(mfs_cache *c, const mfs_cache_key *k, char suffix);

/* io.c: I/O helpers (whole-buffer reads and writes: util.h, "fullio"). */
int64_t mfs_cache_now_ns(void);
int64_t mfs_cache_ts_ns(const struct timespec *ts);

/* Creates a temporary file in tmp/ (O_RDWR, O_EXCL); name gets its path. */
int mfs_cache_tmp_create(mfs_cache *c, char name[MFS_CACHE_PATH_MAX], mfs_err *err);
/* Renames tmp into final, creating final's shard directory if needed. */
int mfs_cache_rename_into(mfs_cache *c, const char *tmp, const char *final, mfs_err *err);

/* key.c */
void mfs_cache_key_path(const mfs_cache_key *k, char suffix, char out[MFS_CACHE_PATH_MAX]);

/* store.c: the container shared by entries and manifests. */
typedef struct mfs_cache_wr {
    mfs_cache *c;
    mfs_cache_key key;
    int kind;
    int fd;
    uint64_t len;
    void *hash; /* XXH3 state over the payload, then the header */
    int err;    /* sticky errno */
    char tmp[MFS_CACHE_PATH_MAX];
} mfs_cache_wr;

int mfs_cache_wr_begin(mfs_cache_wr *w, mfs_cache *c, const mfs_cache_key *k, int kind,
                       mfs_err *err);
/* A whole payload of one kind stored under k (begin, write, commit). */
int mfs_cache_store_kind(mfs_cache *c, const mfs_cache_key *k, int kind, const void *p, size_t n,
                         mfs_cache_hit *hit, mfs_err *err);
int mfs_cache_wr_write(mfs_cache_wr *w, const void *p, size_t n, mfs_err *err);
int mfs_cache_wr_commit(mfs_cache_wr *w, mfs_cache_hit *hit, mfs_err *err);
void mfs_cache_wr_abort(mfs_cache_wr *w);

/* Whether a read marks the file used for LRU: a use does, a look (a
 * listing's) does not. */
typedef enum mfs_cache_use { MFS_CACHE_LOOK, MFS_CACHE_USE } mfs_cache_use;

/* Reads and validates the whole container under k's 'm' name (model
 * entries and manifests: small); 1 with a malloc'd payload and its kind
 * (MFS_KIND_MANIFEST or MFS_KIND_MODEL), 0 absent or discarded as corrupt,
 * -1 error.  fd (may be NULL) receives the open file, the caller's. */
int mfs_cache_read_small(mfs_cache *c, const mfs_cache_key *k, mfs_cache_use use,
                         uint8_t **payload, uint64_t *len, int *kind, int *fd, mfs_err *err);

/* manifest.c: a manifest's table (deps and views, no embedded bytes), as a
 * model entry holds it, for folder.c's copies; get returns the bytes used
 * (0), or -1 if it does not decode. */
struct mfs_sink;
void mfs_manifest_put_table(struct mfs_sink *s, const mfs_cache_manifest *m);
int mfs_manifest_get_table(const uint8_t *p, uint64_t n, uint64_t *used, mfs_cache_manifest *out);

/* stats_file.c: the stats file, set up at open and flushed at close. */
void mfs_cache_sfile_open(mfs_cache *c);

/* maxsize.c: the stored cap, read at open: 1 with *size, 0 if none (or
 * unreadable as one), -1 with errno. */
int mfs_cache_max_size_read_at(int dirfd, uint64_t *size);
void mfs_cache_sfile_close(mfs_cache *c);

/* One container file, checked whole without a cache handle (a verifier's
 * entry point; lookups use the same checks): regular file, record found
 * (xattr or trailer), magic, container version, key equal to *k (NULL:
 * any key), kind allowed under the name's suffix ('e' or 'm'), length
 * consistent with the file's size, checksum over payload and descriptor.
 * Reads only: no LRU stamp, nothing unlinked.
 * 1 valid; 0 invalid, *why the reason; -1 a read failed (errno, *why). */
typedef struct mfs_cache_entry_info {
    int kind;          /* MFS_KIND_* */
    int form;          /* MFS_CACHE_FORM_XATTR or _TRAILER */
    mfs_cache_key key; /* as recorded */
    uint64_t length;   /* payload bytes, at offset 0 */
    uint64_t size;     /* the file's size */
    uint64_t dev, ino;
} mfs_cache_entry_info;
int mfs_cache_entry_check(int fd, const mfs_cache_key *k, char suffix, mfs_cache_entry_info *info,
                          const char **why);

/* The record alone, no checksum pass (a census, not a check): 1 with
 * info filled, 0 if the file has no valid record for the suffix. */
int mfs_cache_entry_record(int fd, char suffix, mfs_cache_entry_info *info);

/* Unlinks path if it still names the file open at fd (stat identity). */
void mfs_cache_discard(mfs_cache *c, const char *path, int fd);

/* evict.c: called after each commit with the bytes added. */
void mfs_cache_account(mfs_cache *c, uint64_t bytes);
/* mfs_cache_reserve, mfs_cache_unreserve: cache.h (downloads). */

/* index.c.  Opening reads no shard (each is read when first needed) but
 * moves an old index.log into the shards.  cap: records kept in memory
 * (0: MFS_CACHE_DEFAULT_INDEX_CAP). */
int mfs_index_open(mfs_cache *c, uint64_t cap, mfs_err *err);
void mfs_index_close(mfs_cache *c);
/* After revive.c recreated the directory: index/ again, with a fresh log
 * of every shard this process holds in memory (the rest cost a re-hash). */
void mfs_index_revive(mfs_cache *c);
/* Whether this thread holds an index's lock (index.c): a revival it meets
 * then only tries revive.c's lock, never waits for it. */
int mfs_index_held(void);
/* Records hash as the content of a file with stat st, as a hash of its
 * bytes would, without the racy-window check: for tests that need many
 * files' records without many files. */
int mfs_index_record(mfs_cache *c, const struct stat *st, const uint8_t hash[16]);

/* io.c: the directory checks, at open (cache.c) and revival (revive.c). */
int mfs_cache_mkdir_p(const char *path, mfs_err *err);
int mfs_cache_open_trusted(int parent, const char *name, const char *shown, mfs_err *err);
int mfs_cache_write_tag(mfs_cache *c, mfs_err *err);
/* What dirfd's CACHEDIR.TAG says: meshfs's; none; a valid tag naming no
 * program ("Signature: ..." alone, as an admin writes one), or one not
 * valid at all (empty after a crash: it is not fsynced), both GENERIC;
 * one naming another program ("created by ccache"); or UNREADABLE, with
 * errno (a link, a folder, no permission). */
enum { MFS_TAG_NONE, MFS_TAG_OURS, MFS_TAG_GENERIC, MFS_TAG_OTHER, MFS_TAG_UNREADABLE };
int mfs_cache_tag_kind(int dirfd);

/* claim.c: 0 if dir (open as dirfd) may be used as a cache: it holds
 * meshfs's CACHEDIR.TAG, or nothing but the names a cache has; else -1
 * with the reason, before anything is made or removed there. */
int mfs_cache_claim(const char *dir, int dirfd, mfs_err *err);

#endif

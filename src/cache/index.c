/* The stat index: (dev, ino, size, mtime, ctime) -> XXH3-128 of the bytes.
 *
 * A warm lookup must not read a 200 MB .fbx just to learn it is unchanged.
 * If a file's stat matches a record made when it was hashed, its bytes are
 * taken as unchanged (as make, git and ccache's inode cache do).  A touched
 * file fails the match and is re-hashed, but hashes the same, so no key
 * downstream changes.
 *
 * The records on disk are the truth; memory holds a bounded part of them
 * (docs/cache.md, "Stat index"; docs/scale.md).  They are split into
 * NSHARDS logs under index/ by (dev, ino) (index_shard.c).  A shard is read
 * whole the first time a lookup needs it, and whole shards are dropped,
 * least recently used first, while more than the cap's records are in
 * memory; the shard a call is using is never the one dropped.  A lookup in
 * a dropped shard reads that one shard again: a read of a few KiB, never a
 * re-hash of a source file.  Every call works under one lock, and hashing
 * a file's bytes happens outside it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache_int.h"
#include "index_shard.h"

#define RACY_NS 2000000000ll  /* see racy() */
#define HASH_CHUNK (256 * 1024)
/* 4096 shards and groups of 64 inode numbers (docs/cache.md, "Stat
 * index", has the measurements).  A lookup whose shard was dropped reads
 * that shard again, so its cost follows the shard's size: at 500,000
 * records ~8 us of CPU with 4096 shards, ~23 us with 1024.  Consecutive
 * inode numbers share a shard because files created together (a generated,
 * unpacked or copied folder of models) get neighbouring numbers on ext4,
 * XFS, btrfs and tmpfs: a listing of one folder then reads a few shards
 * once, where a plain hash of (dev, ino) reads a shard per file.  Bigger
 * groups make folders cheaper still but shards bigger (256: 0.14 against
 * 0.24 us a lookup by folder, 14 against 8 us at random). */
#ifndef NSHARDS /* -D only to measure other choices (docs/cache.md) */
#define NSHARDS 4096
#endif
#ifndef INO_GROUP_BITS
#define INO_GROUP_BITS 6
#endif
#define MIGRATE_RECS 32768 /* records moved per step of an old index.log */

struct mfs_index {
    pthread_mutex_t mu;
    uint64_t cap;             /* records kept in memory */
    uint64_t resident;        /* records in loaded shards */
    uint64_t loads, drops;    /* shards read whole, shards dropped */
    idx_shard *newest, *oldest; /* loaded shards, most recently used first */
    idx_shard shards[NSHARDS];
};

static unsigned shard_of(uint64_t dev, uint64_t ino)
{
    uint64_t h = ((ino >> INO_GROUP_BITS) ^ (dev * 0x9e3779b97f4a7c15ull)) *
                 0xbf58476d1ce4e5b9ull;
    return (unsigned)(h >> 40) & (NSHARDS - 1);
}

/* ---- the bound ---------------------------------------------------------- */

static void lru_unlink(mfs_index *x, idx_shard *s)
{
    if (s->newer)
        s->newer->older = s->older;
    else if (x->newest == s)
        x->newest = s->older;
    if (s->older)
        s->older->newer = s->newer;
    else if (x->oldest == s)
        x->oldest = s->newer;
    s->newer = s->older = NULL;
}

static void lru_front(mfs_index *x, idx_shard *s)
{
    lru_unlink(x, s);
    s->older = x->newest;
    if (x->newest)
        x->newest->newer = s;
    x->newest = s;
    if (!x->oldest)
        x->oldest = s;
}

/* The shard for r's file, read whole if it is not in memory, and marked
 * most recently used.  Under x->mu; the caller ends with release(). */
static idx_shard *acquire(mfs_cache *c, const idx_rec *r, uint32_t *n_before)
{
    mfs_index *x = c->idx;
    unsigned no = shard_of(r->dev, r->ino);
    idx_shard *s = &x->shards[no];
    if (!s->loaded) {
        /* set here, not at open: the table's pages stay untouched until
         * their shard is used */
        s->no = no;
        idx_shard_load(c, s);
        x->loads++;
        x->resident += s->n;
    }
    lru_front(x, s);
    *n_before = s->n;
    return s;
}

/* Accounts for what the call did to s, then drops the least recently used
 * other shards while the cap is exceeded: s, in use, is never dropped, so
 * memory holds at most the cap plus one shard. */
static void release(mfs_cache *c, idx_shard *s, uint32_t n_before)
{
    mfs_index *x = c->idx;
    x->resident = x->resident + s->n - n_before;
    while (x->resident > x->cap && x->oldest && x->oldest != s) {
        idx_shard *v = x->oldest;
        lru_unlink(x, v);
        x->resident -= v->n;
        idx_shard_drop(v);
        x->drops++;
    }
    pthread_mutex_lock(&c->mu);
    c->st.index_records = x->resident;
    c->st.index_shard_loads = x->loads;
    c->st.index_shard_drops = x->drops;
    pthread_mutex_unlock(&c->mu);
}

/* ---- an old single index.log ---------------------------------------------- */

typedef struct migration {
    const uint8_t *raw[MIGRATE_RECS];
    uint16_t shard[MIGRATE_RECS];
    size_t n;
    size_t count[NSHARDS], at[NSHARDS];
} migration;

static void collect(void *arg, const idx_rec *r, const uint8_t *raw)
{
    migration *m = arg;
    m->raw[m->n] = raw;
    m->shard[m->n++] = (uint16_t)shard_of(r->dev, r->ino);
}

/* Appends the collected records to their shards: one write per shard. */
static void distribute(mfs_cache *c, migration *m, uint8_t *out)
{
    size_t *count = m->count, *at = m->at;
    memset(count, 0, sizeof m->count);
    for (size_t i = 0; i < m->n; i++)
        count[m->shard[i]]++;
    size_t pos = 0;
    for (unsigned s = 0; s < NSHARDS; s++) {
        at[s] = pos;
        pos += count[s];
    }
    for (size_t i = 0; i < m->n; i++)
        memcpy(out + IDX_REC_LEN * at[m->shard[i]]++, m->raw[i], IDX_REC_LEN);
    pos = 0;
    for (unsigned s = 0; s < NSHARDS; s++) {
        if (count[s])
            idx_shard_append_raw(c, s, out + IDX_REC_LEN * pos, count[s]);
        pos += count[s];
    }
    m->n = 0;
}

/* An index.log of an older meshfs is moved into the shards, then removed:
 * dropping it would cost a re-hash of every source file the cache knows,
 * which on a large tree is hours of reading.  It is first renamed into
 * tmp/, so of several processes opening at once one moves it; if that one
 * dies midway, the rest is lost (a re-hash) and tmp/'s cleanup removes it.
 * An older meshfs still running appends to the renamed file: lost too. */
static void migrate(mfs_cache *c)
{
    struct stat st;
    if (fstatat(c->dirfd, MFS_CACHE_INDEX_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    char tmp[MFS_CACHE_PATH_MAX];
    int fd = mfs_cache_tmp_create(c, tmp, NULL);
    if (fd < 0)
        return;
    close(fd);
    if (renameat(c->dirfd, MFS_CACHE_INDEX_FILE, c->dirfd, tmp) < 0) {
        unlinkat(c->dirfd, tmp, 0); /* another process took it */
        return;
    }
    fd = openat(c->dirfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    migration *m = malloc(sizeof *m);
    uint8_t *buf = malloc(MIGRATE_RECS * IDX_REC_LEN), *out = malloc(MIGRATE_RECS * IDX_REC_LEN);
    if (fd >= 0 && m && buf && out && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        idx_header_ok(fd)) {
        m->n = 0;
        uint64_t pos = IDX_HDR_LEN;
        for (;;) {
            int64_t got = mfs_pread_full(fd, buf, MIGRATE_RECS * IDX_REC_LEN, pos);
            if (got < IDX_REC_LEN)
                break;
            uint64_t next = idx_parse(buf, (size_t)got, pos, collect, m);
            if (next == pos)
                next = pos + (uint64_t)got - (IDX_REC_LEN - 1);
            distribute(c, m, out);
            pos = next;
            if (got < MIGRATE_RECS * IDX_REC_LEN)
                break;
        }
    }
    free(m);
    free(buf);
    free(out);
    if (fd >= 0)
        close(fd);
    unlinkat(c->dirfd, tmp, 0);
}

/* ---- opening ------------------------------------------------------------ */

int mfs_index_open(mfs_cache *c, uint64_t cap, mfs_err *err)
{
    mfs_index *x = calloc(1, sizeof *x);
    if (!x)
        return mfs_errf(err, "cache: out of memory");
    pthread_mutex_init(&x->mu, NULL);
    x->cap = cap ? cap : MFS_CACHE_DEFAULT_INDEX_CAP;
    c->idx = x;
    if (mkdirat(c->dirfd, MFS_CACHE_INDEX_DIR, 0700) < 0 && errno != EEXIST)
        return mfs_errf(err, "cache: creating %s/%s: %s", c->dir, MFS_CACHE_INDEX_DIR,
                        strerror(errno));
    char shown[4200];
    snprintf(shown, sizeof shown, "%s/%s", c->dir, MFS_CACHE_INDEX_DIR);
    int fd = mfs_cache_open_trusted(c->dirfd, MFS_CACHE_INDEX_DIR, shown, err);
    if (fd < 0)
        return -1;
    close(fd);
    migrate(c);
    return 0;
}

void mfs_index_close(mfs_cache *c)
{
    mfs_index *x = c->idx;
    if (!x)
        return;
    for (unsigned i = 0; i < NSHARDS; i++)
        idx_shard_drop(&x->shards[i]);
    pthread_mutex_destroy(&x->mu);
    free(x);
    c->idx = NULL;
}

/* This thread holds an index's lock.  Writing a shard's log makes a
 * temporary file, and a tmp/ found gone revives the cache (io.c), whose
 * mfs_index_revive takes that lock again: the thread waited for itself, and
 * every later lookup for it (a mount hung when its cache was removed while
 * a source's hash was being recorded). */
static _Thread_local int index_held;

static void index_lock(mfs_index *x)
{
    pthread_mutex_lock(&x->mu);
    index_held = 1;
}

static void index_unlock(mfs_index *x)
{
    index_held = 0;
    pthread_mutex_unlock(&x->mu);
}

int mfs_index_held(void)
{
    return index_held;
}

void mfs_index_revive(mfs_cache *c)
{
    mfs_index *x = c->idx;
    /* called from inside the index (above): the shard being written is
     * made again by that write; the others' records are lost with the
     * directory, which costs a re-hash */
    if (!x || index_held)
        return;
    /* a fresh log of each shard in memory; the others' records are lost
     * with the directory, which costs a re-hash */
    index_lock(x);
    if (mkdirat(c->dirfd, MFS_CACHE_INDEX_DIR, 0700) == 0 || errno == EEXIST)
        for (idx_shard *s = x->newest; s; s = s->older) {
            uint32_t n = s->n;
            idx_shard_compact(c, s);
            x->resident = x->resident + s->n - n;
        }
    index_unlock(x);
}

/* r added to its shard (in memory and appended to its log). */
static void add_record(mfs_cache *c, const idx_rec *r)
{
    mfs_index *x = c->idx;
    index_lock(x);
    uint32_t n0;
    idx_shard *s = acquire(c, r, &n0);
    idx_shard_add(c, s, r);
    release(c, s, n0);
    index_unlock(x);
}

int mfs_index_record(mfs_cache *c, const struct stat *st, const uint8_t hash[16])
{
    idx_rec r;
    idx_rec_from_stat(&r, st);
    memcpy(r.hash, hash, 16);
    add_record(c, &r);
    return 0;
}

/* ---- hashing ---------------------------------------------------------- */

static int hash_bytes(int fd, uint8_t out[16], uint64_t *nbytes)
{
    uint8_t *buf = malloc(HASH_CHUNK);
    XXH3_state_t *st = XXH3_createState();
    int e = 0;
    if (!buf || !st) {
        e = ENOMEM;
        goto out;
    }
    XXH3_128bits_reset(st);
    *nbytes = 0;
    for (;;) {
        int64_t got = mfs_pread_full(fd, buf, HASH_CHUNK, *nbytes);
        if (got < 0) {
            e = errno;
            goto out;
        }
        XXH3_128bits_update(st, buf, (size_t)got);
        *nbytes += (uint64_t)got;
        if (got < HASH_CHUNK)
            break;
    }
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(st));
    memcpy(out, canon.digest, 16);
out:
    XXH3_freeState(st);
    free(buf);
    return e;
}

/* A file changed less than RACY_NS ago might change again within the same
 * timestamp tick (they tick at jiffy granularity, ~4 ms) without its stat
 * changing; recording it could pin a stale hash.  Such files are hashed
 * every time until they settle. */
static int racy(const idx_rec *r)
{
    int64_t t = r->mtime_ns > r->ctime_ns ? r->mtime_ns : r->ctime_ns;
    return mfs_cache_now_ns() - t < RACY_NS;
}

/* Refreshes the shard from its file only on a miss: a hit in memory is
 * true whatever others appended since. */
static int index_find(mfs_cache *c, const idx_rec *want, uint8_t out[16])
{
    mfs_index *x = c->idx;
    index_lock(x);
    uint32_t n0;
    idx_shard *s = acquire(c, want, &n0);
    const idx_rec *hit = idx_shard_match(s, want);
    if (!hit) {
        x->loads += (uint64_t)idx_shard_refresh(c, s);
        hit = idx_shard_match(s, want);
    }
    if (hit)
        memcpy(out, hit->hash, 16);
    release(c, s, n0);
    index_unlock(x);
    return hit != NULL;
}

int mfs_cache_file_hash_known(mfs_cache *c, const struct stat *st, uint8_t out[16])
{
    idx_rec r;
    idx_rec_from_stat(&r, st);
    if (!index_find(c, &r, out))
        return 0;
    MFS_CACHE_STAT_ADD(c, index_hits, 1);
    return 1;
}

int mfs_cache_file_hash(mfs_cache *c, int fd, const struct stat *st, uint8_t out[16],
                        mfs_err *err)
{
    struct stat own;
    if (!st) {
        if (fstat(fd, &own) < 0)
            return mfs_errf(err, "fstat: %s", strerror(errno));
        st = &own;
    }
    idx_rec r;
    idx_rec_from_stat(&r, st);
    if (index_find(c, &r, out)) {
        MFS_CACHE_STAT_ADD(c, index_hits, 1);
        return 0;
    }
    uint64_t n = 0;
    int e = hash_bytes(fd, r.hash, &n);
    if (e)
        return mfs_errf(err, "hashing: %s", strerror(e));
    memcpy(out, r.hash, 16);
    pthread_mutex_lock(&c->mu);
    c->st.files_hashed++;
    c->st.bytes_hashed += n;
    pthread_mutex_unlock(&c->mu);
    /* Record only what provably describes the bytes hashed: same stat after
     * reading as before, and not within the racy window. */
    struct stat after;
    idx_rec r2;
    if (fstat(fd, &after) < 0)
        return 0;
    idx_rec_from_stat(&r2, &after);
    if (!idx_same_stat(&r, &r2) || r.size != n ||
        (!(c->flags & MFS_CACHE_TRUST_FRESH_STAT) && racy(&r)))
        return 0;
    add_record(c, &r);
    return 0;
}

int mfs_cache_file_hash_at(mfs_cache *c, int dirfd, const char *path, struct stat *st_out,
                           uint8_t out[16], mfs_err *err)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        mfs_errf(err, "%s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    int r;
    if (fstat(fd, &st) < 0)
        r = mfs_errf(err, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        r = mfs_errf(err, "%s: not a regular file", path);
    else if ((r = mfs_cache_file_hash(c, fd, &st, out, err)) < 0)
        mfs_err_prefix(err, "%s", path);
    close(fd);
    if (r == 0 && st_out)
        *st_out = st;
    return r;
}


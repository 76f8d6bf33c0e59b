/* The stat index: (dev, ino, size, mtime, ctime) -> XXH3-128 of the bytes.
 *
 * A warm lookup must not read a 200 MB .fbx just to learn it is unchanged.
 * If a file's stat matches a record made when it was hashed, its bytes are
 * taken as unchanged (as make, git and ccache's inode cache do).  A touched
 * file fails the match and is re-hashed, but hashes the same, so no key
 * downstream changes.
 *
 * Persistence is one append-only log, index.log (docs/cache.md, "Stat
 * index"): a 16-byte header, then 64-byte records, each with its own XXH3-64.
 * Appends are single O_APPEND writes, so processes sharing the cache never
 * interleave inside a record; a torn or foreign record fails its checksum
 * and the reader resynchronises byte by byte.  Every process keeps the whole
 * index in memory, reads what others appended before hashing anything, and
 * now and then rewrites the log without superseded records (temp file +
 * rename).  Losing records is always safe: it only costs a re-hash. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache_int.h"
#include "meshfs/bytes.h"

#define IDX_MAGIC "mfsstat1"
#define IDX_VERSION 1
#define IDX_HDR_LEN 16
#define REC_LEN 64
#define RACY_NS 2000000000ll  /* see racy() */
#define LIVE_MAX (1u << 18)  /* 16 MiB of log; beyond it the oldest half goes */
#define READ_CHUNK (64 * REC_LEN * 64)
#define HASH_CHUNK (256 * 1024)

typedef struct idx_rec {
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns;
    uint8_t hash[16];
    uint32_t seq; /* load/append order, for dropping the oldest */
    uint8_t used;
} idx_rec;

struct mfs_index {
    pthread_mutex_t mu;
    int fd;               /* index.log, O_APPEND */
    uint64_t dev, ino;    /* which file fd is, to notice a rewrite by others */
    uint64_t read_pos;    /* log bytes already loaded */
    uint64_t log_records; /* records in the log, as far as we know */
    idx_rec *slots;
    size_t cap, n;
    uint32_t seq;
};

static void st_u64(uint8_t *p, uint64_t v)
{
    mfs_st_u32(p, (uint32_t)v);
    mfs_st_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t ld_u64(const uint8_t *p)
{
    return mfs_ld_u32(p) | ((uint64_t)mfs_ld_u32(p + 4) << 32);
}

/* ---- records ---------------------------------------------------------- */

static void rec_from_stat(idx_rec *r, const struct stat *st)
{
    memset(r, 0, sizeof *r);
    r->dev = (uint64_t)st->st_dev;
    r->ino = (uint64_t)st->st_ino;
    r->size = (uint64_t)st->st_size;
    r->mtime_ns = mfs_cache_ts_ns(&st->st_mtim);
    r->ctime_ns = mfs_cache_ts_ns(&st->st_ctim);
}

static void rec_encode(const idx_rec *r, uint8_t b[REC_LEN])
{
    st_u64(b, r->dev);
    st_u64(b + 8, r->ino);
    st_u64(b + 16, r->size);
    st_u64(b + 24, (uint64_t)r->mtime_ns);
    st_u64(b + 32, (uint64_t)r->ctime_ns);
    memcpy(b + 40, r->hash, 16);
    st_u64(b + 56, XXH3_64bits(b, 56));
}

static int rec_decode(const uint8_t b[REC_LEN], idx_rec *r)
{
    if (ld_u64(b + 56) != XXH3_64bits(b, 56))
        return -1;
    memset(r, 0, sizeof *r);
    r->dev = ld_u64(b);
    r->ino = ld_u64(b + 8);
    r->size = ld_u64(b + 16);
    r->mtime_ns = (int64_t)ld_u64(b + 24);
    r->ctime_ns = (int64_t)ld_u64(b + 32);
    memcpy(r->hash, b + 40, 16);
    return 0;
}

static int same_stat(const idx_rec *a, const idx_rec *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* ---- table (by dev, ino) ---------------------------------------------- */

static size_t slot_of(const mfs_index *x, uint64_t dev, uint64_t ino)
{
    uint64_t h = (ino ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
    size_t i = (size_t)(h >> 17) & (x->cap - 1);
    while (x->slots[i].used && (x->slots[i].dev != dev || x->slots[i].ino != ino))
        i = (i + 1) & (x->cap - 1);
    return i;
}

static int table_grow(mfs_index *x)
{
    size_t cap = x->cap ? x->cap * 2 : 1024;
    idx_rec *old = x->slots;
    size_t oldcap = x->cap;
    idx_rec *nv = calloc(cap, sizeof *nv);
    if (!nv)
        return -1;
    x->slots = nv;
    x->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].used)
            x->slots[slot_of(x, old[i].dev, old[i].ino)] = old[i];
    free(old);
    return 0;
}

/* A later record for the same file replaces the earlier one. */
static void table_put(mfs_index *x, const idx_rec *r)
{
    if ((x->n + 1) * 2 > x->cap && table_grow(x) < 0)
        return; /* out of memory: the record is only lost, not wrong */
    idx_rec *s = &x->slots[slot_of(x, r->dev, r->ino)];
    if (!s->used)
        x->n++;
    *s = *r;
    s->used = 1;
    s->seq = x->seq++;
}

static const idx_rec *table_match(const mfs_index *x, const idx_rec *want)
{
    if (!x->cap)
        return NULL;
    const idx_rec *s = &x->slots[slot_of(x, want->dev, want->ino)];
    return s->used && same_stat(s, want) ? s : NULL;
}

/* ---- log -------------------------------------------------------------- */

/* Loads records from buf (log bytes starting at file offset base).  Returns
 * the offset just past the last valid record, so a record still being
 * appended by another process is read again next time. */
static uint64_t parse_records(mfs_index *x, const uint8_t *buf, size_t n, uint64_t base)
{
    uint64_t good = base;
    size_t pos = 0;
    while (pos + REC_LEN <= n) {
        idx_rec r;
        if (rec_decode(buf + pos, &r) == 0) {
            table_put(x, &r);
            x->log_records++;
            pos += REC_LEN;
            good = base + pos;
        } else {
            pos++; /* resynchronise past a torn or foreign record */
        }
    }
    return good;
}

/* Reads what was appended since read_pos.  Best effort. */
static void log_load_tail(mfs_index *x)
{
    uint8_t *buf = malloc(READ_CHUNK);
    if (!buf)
        return;
    for (;;) {
        int64_t got = mfs_cache_pread_full(x->fd, buf, READ_CHUNK, x->read_pos);
        if (got < REC_LEN)
            break;
        uint64_t next = parse_records(x, buf, (size_t)got, x->read_pos);
        /* A chunk of garbage moves us by at least its valid prefix; if it
         * held no record at all, skip what can no longer start one. */
        if (next == x->read_pos)
            next = x->read_pos + (uint64_t)got - (REC_LEN - 1);
        x->read_pos = next;
        if (got < READ_CHUNK)
            break;
    }
    free(buf);
}

static void header_bytes(uint8_t h[IDX_HDR_LEN])
{
    memcpy(h, IDX_MAGIC, 8);
    mfs_st_u32(h + 8, IDX_VERSION);
    mfs_st_u32(h + 12, REC_LEN);
}

/* Writes header + records to a temp file; returns its fd or -1. */
static int write_log_file(mfs_cache *c, const idx_rec *const *recs, size_t n,
                          char tmp[MFS_CACHE_PATH_MAX], mfs_err *err)
{
    int fd = mfs_cache_tmp_create(c, tmp, err);
    if (fd < 0)
        return -1;
    uint8_t *buf = malloc(IDX_HDR_LEN + n * REC_LEN);
    int e = ENOMEM;
    if (buf) {
        header_bytes(buf);
        for (size_t i = 0; i < n; i++)
            rec_encode(recs[i], buf + IDX_HDR_LEN + i * REC_LEN);
        e = mfs_cache_pwrite_full(fd, buf, IDX_HDR_LEN + n * REC_LEN, 0);
        free(buf);
    }
    if (e) {
        close(fd);
        unlinkat(c->dirfd, tmp, 0);
        return mfs_errf(err, "cache %s: writing index: %s", c->dir, strerror(e));
    }
    return fd;
}

static int log_attach(mfs_cache *c, mfs_index *x, mfs_err *err)
{
    int fd = openat(c->dirfd, MFS_CACHE_INDEX_FILE, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return mfs_errf(err, "cache %s: opening %s: %s", c->dir, MFS_CACHE_INDEX_FILE,
                        strerror(e));
    }
    if (x->fd >= 0)
        close(x->fd);
    x->fd = fd;
    x->dev = (uint64_t)st.st_dev;
    x->ino = (uint64_t)st.st_ino;
    x->read_pos = IDX_HDR_LEN;
    x->log_records = 0;
    return 0;
}

/* Creates index.log if absent.  linkat() refuses to replace an existing
 * name, so of several processes starting at once exactly one log wins. */
static int log_create(mfs_cache *c, mfs_err *err)
{
    if (faccessat(c->dirfd, MFS_CACHE_INDEX_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    char tmp[MFS_CACHE_PATH_MAX];
    int fd = write_log_file(c, NULL, 0, tmp, err);
    if (fd < 0)
        return -1;
    close(fd);
    int r = linkat(c->dirfd, tmp, c->dirfd, MFS_CACHE_INDEX_FILE, 0);
    int e = errno;
    unlinkat(c->dirfd, tmp, 0);
    if (r < 0 && e != EEXIST)
        return mfs_errf(err, "cache %s: creating %s: %s", c->dir, MFS_CACHE_INDEX_FILE,
                        strerror(e));
    return 0;
}

static int header_ok(int fd)
{
    uint8_t want[IDX_HDR_LEN], got[IDX_HDR_LEN];
    header_bytes(want);
    return mfs_cache_pread_full(fd, got, IDX_HDR_LEN, 0) == IDX_HDR_LEN &&
           memcmp(want, got, IDX_HDR_LEN) == 0;
}

static int by_seq_desc(const void *a, const void *b)
{
    uint32_t x = (*(const idx_rec *const *)a)->seq, y = (*(const idx_rec *const *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int by_seq_asc(const void *a, const void *b)
{
    return by_seq_desc(b, a);
}

/* Rewrites the log with the live records only.  Appends other processes
 * make meanwhile to the old file are lost, which costs them a re-hash. */
static void log_compact(mfs_cache *c, mfs_index *x)
{
    const idx_rec **recs = malloc((x->n ? x->n : 1) * sizeof *recs);
    if (!recs)
        return;
    size_t n = 0;
    for (size_t i = 0; i < x->cap; i++)
        if (x->slots[i].used)
            recs[n++] = &x->slots[i];
    if (n > LIVE_MAX) {
        /* Keep the newest half, in memory too. */
        qsort(recs, n, sizeof *recs, by_seq_desc);
        n = LIVE_MAX / 2;
    }
    qsort(recs, n, sizeof *recs, by_seq_asc);
    char tmp[MFS_CACHE_PATH_MAX];
    int fd = write_log_file(c, recs, n, tmp, NULL);
    if (fd >= 0 && renameat(c->dirfd, tmp, c->dirfd, MFS_CACHE_INDEX_FILE) < 0)
        unlinkat(c->dirfd, tmp, 0);
    if (n < x->n) {
        idx_rec *keep = malloc(n * sizeof *keep);
        if (keep) {
            for (size_t i = 0; i < n; i++)
                keep[i] = *recs[i];
            memset(x->slots, 0, x->cap * sizeof *x->slots);
            x->n = 0;
            for (size_t i = 0; i < n; i++)
                table_put(x, &keep[i]);
            free(keep);
        }
    }
    free(recs);
    if (fd < 0)
        return;
    struct stat st;
    int ok = fstat(fd, &st) == 0;
    close(fd);
    if (ok && log_attach(c, x, NULL) == 0 && x->ino == (uint64_t)st.st_ino &&
        x->dev == (uint64_t)st.st_dev) {
        x->read_pos = (uint64_t)st.st_size; /* our own records: no re-read */
        x->log_records = n;
    }
}

/* Follows a rewrite by another process, then loads new appends. */
static void log_refresh(mfs_cache *c, mfs_index *x)
{
    struct stat st;
    if (fstatat(c->dirfd, MFS_CACHE_INDEX_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        ((uint64_t)st.st_ino != x->ino || (uint64_t)st.st_dev != x->dev))
        log_attach(c, x, NULL);
    if (x->fd >= 0)
        log_load_tail(x);
}

static void log_append(mfs_cache *c, mfs_index *x, const idx_rec *r)
{
    uint8_t b[REC_LEN];
    rec_encode(r, b);
    /* One write(2) of 64 bytes with O_APPEND: atomic placement at the end,
     * never interleaved with another process's record. */
    if (x->fd < 0 || write(x->fd, b, REC_LEN) != REC_LEN)
        return;
    x->log_records++;
    /* If nobody appended since our last read, our own record need not be
     * read back (O_APPEND leaves the offset just past what we wrote). */
    off_t end = lseek(x->fd, 0, SEEK_CUR);
    if (end >= REC_LEN && (uint64_t)end - REC_LEN == x->read_pos)
        x->read_pos = (uint64_t)end;
    if (x->log_records > 2 * x->n + 4096)
        log_compact(c, x);
}

int mfs_index_open(mfs_cache *c, mfs_err *err)
{
    mfs_index *x = calloc(1, sizeof *x);
    if (!x)
        return mfs_errf(err, "cache: out of memory");
    x->fd = -1;
    pthread_mutex_init(&x->mu, NULL);
    c->idx = x;
    if (log_create(c, err) < 0 || log_attach(c, x, err) < 0)
        return -1;
    if (!header_ok(x->fd)) {
        log_compact(c, x); /* foreign or damaged: start a fresh log */
        return 0;
    }
    log_load_tail(x);
    return 0;
}

void mfs_index_close(mfs_cache *c)
{
    mfs_index *x = c->idx;
    if (!x)
        return;
    if (x->fd >= 0)
        close(x->fd);
    pthread_mutex_destroy(&x->mu);
    free(x->slots);
    free(x);
    c->idx = NULL;
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
        int64_t got = mfs_cache_pread_full(fd, buf, HASH_CHUNK, *nbytes);
        if (got < 0) {
            e = (int)-got;
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

static int index_find(mfs_cache *c, const idx_rec *want, uint8_t out[16])
{
    mfs_index *x = c->idx;
    pthread_mutex_lock(&x->mu);
    const idx_rec *hit = table_match(x, want);
    if (!hit) {
        log_refresh(c, x);
        hit = table_match(x, want);
    }
    if (hit)
        memcpy(out, hit->hash, 16);
    pthread_mutex_unlock(&x->mu);
    return hit != NULL;
}

int mfs_cache_file_hash_known(mfs_cache *c, const struct stat *st, uint8_t out[16])
{
    idx_rec r;
    rec_from_stat(&r, st);
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
    rec_from_stat(&r, st);
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
    rec_from_stat(&r2, &after);
    if (!same_stat(&r, &r2) || r.size != n ||
        (!(c->flags & MFS_CACHE_TRUST_FRESH_STAT) && racy(&r)))
        return 0;
    mfs_index *x = c->idx;
    pthread_mutex_lock(&x->mu);
    table_put(x, &r);
    log_append(c, x, &r);
    pthread_mutex_unlock(&x->mu);
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

void mfs_index_revive(mfs_cache *c)
{
    mfs_index *x = c->idx;
    if (!x)
        return;
    /* the compaction's rewrite is exactly a fresh log of what we know */
    pthread_mutex_lock(&x->mu);
    log_compact(c, x);
    pthread_mutex_unlock(&x->mu);
}

/* One shard of the stat index: the records of the files whose (dev, ino)
 * fall in it, in memory (a dense array and an open-addressing table over
 * it), and its log, index/<3 hex>.
 *
 * The log is exactly the old single index.log (docs/cache.md, "Stat
 * index"): a 16-byte header, then 64-byte records, each with its own
 * XXH3-64.  Appends are single O_APPEND writes, so processes sharing the
 * cache never interleave inside a record; a torn or foreign record fails
 * its checksum and the reader resynchronises byte by byte.  A rewrite
 * (compaction) goes through a temp file and rename, and other processes
 * notice the new inode.  No descriptor stays open: with a thousand shards
 * a process would otherwise hold a thousand, and every use is one open, a
 * read or write, a close, under the index's lock.  Losing records is
 * always safe: it only costs a re-hash. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "index_shard.h"
#include "meshfs/util.h"

#define IDX_MAGIC "mfsstat1"
#define IDX_VERSION 1
#define READ_CHUNK (1024 * IDX_REC_LEN)
/* A shard's log is rewritten once it holds more than twice its live
 * records plus this; small, since a shard is small and its rewrite cheap. */
#define COMPACT_SLACK 256
/* Live records a shard keeps; beyond, the oldest half goes at the next
 * compaction (files long deleted stay recorded until then).  4096 shards
 * of 8192: 32 M records, 2 GiB of logs at most. */
#define SHARD_LIVE_MAX 8192

static void st_u64(uint8_t *p, uint64_t v)
{
    mfs_st_u32(p, (uint32_t)v);
    mfs_st_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t ld_u64(const uint8_t *p)
{
    return mfs_ld_u32(p) | ((uint64_t)mfs_ld_u32(p + 4) << 32);
}

static void shard_name(unsigned no, char out[MFS_CACHE_PATH_MAX])
{
    snprintf(out, MFS_CACHE_PATH_MAX, MFS_CACHE_INDEX_DIR "/%03x", no);
}

/* ---- records ---------------------------------------------------------- */

void idx_rec_from_stat(idx_rec *r, const struct stat *st)
{
    memset(r, 0, sizeof *r);
    r->dev = (uint64_t)st->st_dev;
    r->ino = (uint64_t)st->st_ino;
    r->size = (uint64_t)st->st_size;
    r->mtime_ns = mfs_cache_ts_ns(&st->st_mtim);
    r->ctime_ns = mfs_cache_ts_ns(&st->st_ctim);
}

static void rec_encode(const idx_rec *r, uint8_t b[IDX_REC_LEN])
{
    st_u64(b, r->dev);
    st_u64(b + 8, r->ino);
    st_u64(b + 16, r->size);
    st_u64(b + 24, (uint64_t)r->mtime_ns);
    st_u64(b + 32, (uint64_t)r->ctime_ns);
    memcpy(b + 40, r->hash, 16);
    st_u64(b + 56, XXH3_64bits(b, 56));
}

static int rec_decode(const uint8_t b[IDX_REC_LEN], idx_rec *r)
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

int idx_same_stat(const idx_rec *a, const idx_rec *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

uint64_t idx_parse(const uint8_t *buf, size_t n, uint64_t base,
                   void (*fn)(void *arg, const idx_rec *r, const uint8_t *raw), void *arg)
{
    uint64_t good = base;
    size_t pos = 0;
    while (pos + IDX_REC_LEN <= n) {
        idx_rec r;
        if (rec_decode(buf + pos, &r) == 0) {
            fn(arg, &r, buf + pos);
            pos += IDX_REC_LEN;
            good = base + pos;
        } else {
            pos++; /* resynchronise past a torn or foreign record */
        }
    }
    return good;
}

static void header_bytes(uint8_t h[IDX_HDR_LEN])
{
    memcpy(h, IDX_MAGIC, 8);
    mfs_st_u32(h + 8, IDX_VERSION);
    mfs_st_u32(h + 12, IDX_REC_LEN);
}

int idx_header_ok(int fd)
{
    uint8_t want[IDX_HDR_LEN], got[IDX_HDR_LEN];
    header_bytes(want);
    return mfs_pread_full(fd, got, IDX_HDR_LEN, 0) == IDX_HDR_LEN &&
           memcmp(want, got, IDX_HDR_LEN) == 0;
}

/* ---- the table (by dev, ino) -------------------------------------------- */

static uint32_t slot_of(const idx_shard *s, uint64_t dev, uint64_t ino)
{
    /* murmur3's finaliser: independent of the hash that chose the shard,
     * whose bits are the same for every record here */
    uint64_t h = ino ^ (dev * 0x9e3779b97f4a7c15ull);
    h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
    uint32_t i = (uint32_t)(h ^ (h >> 33)) & (s->tcap - 1);
    while (s->tab[i]) {
        const idx_rec *r = &s->recs[s->tab[i] - 1];
        if (r->dev == dev && r->ino == ino)
            break;
        i = (i + 1) & (s->tcap - 1);
    }
    return i;
}

static int tab_build(idx_shard *s, uint32_t tcap)
{
    uint32_t *t = calloc(tcap, sizeof *t);
    if (!t)
        return -1;
    free(s->tab);
    s->tab = t;
    s->tcap = tcap;
    for (uint32_t k = 0; k < s->n; k++)
        s->tab[slot_of(s, s->recs[k].dev, s->recs[k].ino)] = k + 1;
    return 0;
}

/* A later record for the same file replaces the earlier one.  Out of
 * memory, the record is only lost, never wrong. */
static void put(idx_shard *s, const idx_rec *r)
{
    if ((uint64_t)(s->n + 1) * 2 > s->tcap && tab_build(s, s->tcap ? s->tcap * 2 : 64) < 0)
        return;
    uint32_t i = slot_of(s, r->dev, r->ino);
    idx_rec *dst;
    if (s->tab[i]) {
        dst = &s->recs[s->tab[i] - 1];
    } else {
        if (s->n == s->rcap) {
            uint32_t cap = s->rcap < 16 ? 16 : s->rcap + s->rcap / 2;
            idx_rec *nr = realloc(s->recs, (size_t)cap * sizeof *nr);
            if (!nr)
                return;
            s->recs = nr;
            s->rcap = cap;
        }
        dst = &s->recs[s->n++];
        s->tab[i] = s->n;
    }
    *dst = *r;
    dst->seq = s->seq++;
}

const idx_rec *idx_shard_match(const idx_shard *s, const idx_rec *want)
{
    if (!s->tcap)
        return NULL;
    uint32_t i = slot_of(s, want->dev, want->ino);
    const idx_rec *r = s->tab[i] ? &s->recs[s->tab[i] - 1] : NULL;
    return r && idx_same_stat(r, want) ? r : NULL;
}

void idx_shard_drop(idx_shard *s)
{
    free(s->recs);
    free(s->tab);
    s->recs = NULL;
    s->tab = NULL;
    s->n = s->rcap = s->tcap = 0;
    s->loaded = 0;
    s->fdev = s->fino = 0;
    s->read_pos = IDX_HDR_LEN;
    s->log_records = 0;
}

/* ---- reading the log ---------------------------------------------------- */

static void take(void *arg, const idx_rec *r, const uint8_t *raw)
{
    (void)raw;
    idx_shard *s = arg;
    put(s, r);
    s->log_records++;
}

/* Reads fd's records from s->read_pos on. */
static void read_tail(idx_shard *s, int fd)
{
    uint8_t *buf = malloc(READ_CHUNK);
    if (!buf)
        return;
    for (;;) {
        int64_t got = mfs_pread_full(fd, buf, READ_CHUNK, s->read_pos);
        if (got < IDX_REC_LEN)
            break;
        uint64_t next = idx_parse(buf, (size_t)got, s->read_pos, take, s);
        /* A chunk of garbage moves us by at least its valid prefix; if it
         * held no record at all, skip what can no longer start one.  A
         * record still being appended is read again next time. */
        if (next == s->read_pos)
            next = s->read_pos + (uint64_t)got - (IDX_REC_LEN - 1);
        s->read_pos = next;
        if (got < READ_CHUNK)
            break;
    }
    free(buf);
}

/* Opens the shard's file for reading; -1 if absent or unreadable. */
static int open_log(mfs_cache *c, unsigned no, int flags, struct stat *st)
{
    char name[MFS_CACHE_PATH_MAX];
    shard_name(no, name);
    int fd = openat(c->dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && fstat(fd, st) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Misses come in runs: a listing asks about a folder's files one after
 * another, and files made together share a shard (by inode), so a cold
 * folder of 20,000 models was 20,000 fstatats of ~300 shard files.  Other
 * processes' appends are looked for at most this often per shard; one
 * missed meanwhile costs a hash of the file, never a wrong answer. */
#define REFRESH_EVERY_NS (100 * 1000000LL)

static int64_t coarse_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

void idx_shard_load(mfs_cache *c, idx_shard *s)
{
    s->refreshed_ns = coarse_now_ns();
    s->loaded = 1;
    s->fdev = s->fino = 0;
    s->read_pos = IDX_HDR_LEN;
    s->log_records = 0;
    struct stat st;
    int fd = open_log(c, s->no, O_RDONLY, &st);
    if (fd < 0)
        return; /* none yet: an empty shard */
    s->fdev = (uint64_t)st.st_dev;
    s->fino = (uint64_t)st.st_ino;
    if (!idx_header_ok(fd)) {
        close(fd);
        idx_shard_compact(c, s); /* foreign or damaged: start it afresh */
        return;
    }
    /* Sized from the file, so a loaded shard holds no growth slack. */
    uint64_t most = (uint64_t)st.st_size / IDX_REC_LEN + 1;
    if (most > s->rcap && most < UINT32_MAX) {
        idx_rec *nr = realloc(s->recs, (size_t)most * sizeof *nr);
        if (nr) {
            s->recs = nr;
            s->rcap = (uint32_t)most;
        }
    }
    read_tail(s, fd);
    close(fd);
    /* Superseded records made the estimate high: give the rest back. */
    if (s->rcap > s->n + s->n / 8 + 16) {
        idx_rec *nr = realloc(s->recs, (size_t)(s->n + 16) * sizeof *nr);
        if (nr) {
            s->recs = nr;
            s->rcap = s->n + 16;
        }
    }
}

int idx_shard_refresh(mfs_cache *c, idx_shard *s)
{
    int64_t now = coarse_now_ns();
    if (s->refreshed_ns && now - s->refreshed_ns < REFRESH_EVERY_NS)
        return 0;
    s->refreshed_ns = now;
    char name[MFS_CACHE_PATH_MAX];
    shard_name(s->no, name);
    struct stat st;
    if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        /* removed (clear, rm -rf): what we know stays true; the next
         * append creates the file again */
        s->fdev = s->fino = 0;
        s->read_pos = IDX_HDR_LEN;
        return 0;
    }
    if (s->fino && ((uint64_t)st.st_ino != s->fino || (uint64_t)st.st_dev != s->fdev)) {
        /* another process rewrote it: read it again whole */
        idx_shard_drop(s);
        idx_shard_load(c, s);
        return 1;
    }
    if ((uint64_t)st.st_size < s->read_pos + IDX_REC_LEN)
        return 0; /* nothing new: one fstatat is all a miss costs */
    int fd = open_log(c, s->no, O_RDONLY, &st);
    if (fd < 0)
        return 0;
    if (!s->fino && idx_header_ok(fd)) {
        /* created by another process since we found none: all of it is
         * new to us, and what we hold stays true */
        s->fdev = (uint64_t)st.st_dev;
        s->fino = (uint64_t)st.st_ino;
        s->read_pos = IDX_HDR_LEN;
    }
    if (s->fino && (uint64_t)st.st_ino == s->fino && (uint64_t)st.st_dev == s->fdev)
        read_tail(s, fd);
    close(fd);
    return 0;
}

/* ---- writing it --------------------------------------------------------- */

/* Writes header + the live records to a temp file; returns its fd or -1. */
static int write_log_file(mfs_cache *c, const idx_shard *s, char tmp[MFS_CACHE_PATH_MAX])
{
    int fd = mfs_cache_tmp_create(c, tmp, NULL);
    if (fd < 0)
        return -1;
    size_t n = s ? s->n : 0;
    uint8_t *buf = malloc(IDX_HDR_LEN + n * IDX_REC_LEN);
    int e = ENOMEM;
    if (buf) {
        header_bytes(buf);
        for (size_t i = 0; i < n; i++)
            rec_encode(&s->recs[i], buf + IDX_HDR_LEN + i * IDX_REC_LEN);
        e = mfs_pwrite_full(fd, buf, IDX_HDR_LEN + n * IDX_REC_LEN, 0) < 0 ? errno : 0;
        free(buf);
    }
    if (e) {
        close(fd);
        unlinkat(c->dirfd, tmp, 0);
        return -1;
    }
    return fd;
}

/* index/ removed by hand (or with everything else): made again. */
static int mkdir_index(mfs_cache *c)
{
    return mkdirat(c->dirfd, MFS_CACHE_INDEX_DIR, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Creates the shard's file if absent.  linkat() refuses to replace an
 * existing name, so of several processes creating it at once exactly one
 * file wins, and no append is made to a file about to be replaced. */
static int create_log(mfs_cache *c, unsigned no)
{
    char tmp[MFS_CACHE_PATH_MAX], name[MFS_CACHE_PATH_MAX];
    shard_name(no, name);
    int fd = write_log_file(c, NULL, tmp);
    if (fd < 0)
        return -1;
    close(fd);
    int r = linkat(c->dirfd, tmp, c->dirfd, name, 0);
    if (r < 0 && errno == ENOENT && mkdir_index(c) == 0)
        r = linkat(c->dirfd, tmp, c->dirfd, name, 0);
    int e = errno;
    unlinkat(c->dirfd, tmp, 0);
    return r == 0 || e == EEXIST ? 0 : -1;
}

static int open_append(mfs_cache *c, unsigned no, struct stat *st)
{
    int fd = open_log(c, no, O_WRONLY | O_APPEND, st);
    if (fd < 0 && errno == ENOENT && create_log(c, no) == 0)
        fd = open_log(c, no, O_WRONLY | O_APPEND, st);
    return fd;
}

static int by_seq(const void *a, const void *b)
{
    uint32_t x = ((const idx_rec *)a)->seq, y = ((const idx_rec *)b)->seq;
    return x < y ? -1 : x > y;
}

void idx_shard_compact(mfs_cache *c, idx_shard *s)
{
    if (s->n > SHARD_LIVE_MAX) {
        /* Keep the newest half, in memory too. */
        qsort(s->recs, s->n, sizeof *s->recs, by_seq);
        uint32_t keep = SHARD_LIVE_MAX / 2;
        memmove(s->recs, s->recs + (s->n - keep), keep * sizeof *s->recs);
        s->n = keep;
        if (tab_build(s, s->tcap) < 0) {
            /* out of memory: forget the records, keep nothing wrong */
            s->n = 0;
            memset(s->tab, 0, (size_t)s->tcap * sizeof *s->tab);
        }
    }
    char tmp[MFS_CACHE_PATH_MAX], name[MFS_CACHE_PATH_MAX];
    shard_name(s->no, name);
    int fd = write_log_file(c, s, tmp);
    if (fd < 0)
        return;
    int r = renameat(c->dirfd, tmp, c->dirfd, name);
    if (r < 0 && errno == ENOENT && mkdir_index(c) == 0)
        r = renameat(c->dirfd, tmp, c->dirfd, name);
    struct stat st;
    if (r < 0 || fstat(fd, &st) < 0) {
        unlinkat(c->dirfd, tmp, 0);
        close(fd);
        return;
    }
    close(fd);
    /* our own records: no re-read (a rename by another process after ours
     * shows as a new inode at the next refresh) */
    s->fdev = (uint64_t)st.st_dev;
    s->fino = (uint64_t)st.st_ino;
    s->read_pos = (uint64_t)st.st_size;
    s->log_records = s->n;
}

void idx_shard_add(mfs_cache *c, idx_shard *s, const idx_rec *r)
{
    put(s, r);
    uint8_t b[IDX_REC_LEN];
    rec_encode(r, b);
    struct stat st;
    int fd = open_append(c, s->no, &st);
    if (fd < 0)
        return;
    /* One write(2) of 64 bytes with O_APPEND: atomic placement at the end,
     * never interleaved with another process's record. */
    ssize_t w = write(fd, b, IDX_REC_LEN);
    off_t end = lseek(fd, 0, SEEK_CUR);
    close(fd);
    if (w != IDX_REC_LEN)
        return;
    s->log_records++;
    int same = (uint64_t)st.st_ino == s->fino && (uint64_t)st.st_dev == s->fdev;
    if (!s->fino && end == IDX_HDR_LEN + IDX_REC_LEN) {
        /* we created the file and ours is its only record */
        s->fdev = (uint64_t)st.st_dev;
        s->fino = (uint64_t)st.st_ino;
        same = 1;
    }
    /* If nobody appended since our last read, our own record need not be
     * read back.  Otherwise (or on another inode) the next refresh reads
     * what we missed, ours included. */
    if (same && end >= IDX_REC_LEN && (uint64_t)end - IDX_REC_LEN == s->read_pos)
        s->read_pos = (uint64_t)end;
    if (same && s->log_records > 2 * (uint64_t)s->n + COMPACT_SLACK)
        idx_shard_compact(c, s);
}

int idx_shard_append_raw(mfs_cache *c, unsigned no, const uint8_t *b, size_t n)
{
    struct stat st;
    int fd = open_append(c, no, &st);
    if (fd < 0)
        return -1;
    /* one write: the run lands whole, between other processes' records */
    int ok = write(fd, b, n * IDX_REC_LEN) == (ssize_t)(n * IDX_REC_LEN);
    close(fd);
    return ok ? 0 : -1;
}

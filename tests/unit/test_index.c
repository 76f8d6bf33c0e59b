/* The stat index's shards and its memory bound (docs/cache.md, "Stat
 * index"; docs/scale.md): a small cap holds while thousands of files are
 * hashed, and every file is still answered from the index afterwards;
 * handles sharing a directory see each other's appends and rewrites; torn
 * bytes in a shard, its compaction, and an old single index.log moved into
 * the shards.  On-disk bytes are checked against the format in
 * docs/cache.md, encoded here independently of the writer. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fixtures.h"
#include "meshfs/cache.h"
#include "../../src/cache/cache_int.h" /* mfs_index_record */

#define HDR 16
#define REC 64
/* docs/cache.md: a shard's log is rewritten once it holds more than twice
 * its live records plus 256 */
#define SLACK 256

typedef fixture_cache_dirs fx;

static int setup(void **state)
{
    return fixture_cache_dirs_setup(state, "test_index");
}

static int teardown(void **state)
{
    return fixture_cache_dirs_teardown(state);
}

static mfs_cache *open_cache(const fx *f, uint64_t cap)
{
    mfs_cache_config cfg = {.dir = f->dir, .flags = MFS_CACHE_TRUST_FRESH_STAT, .index_cap = cap};
    mfs_cache *c = NULL;
    mfs_err err = {0};
    if (mfs_cache_open(&cfg, &c, &err) < 0)
        fail_msg("open: %s", err.msg);
    return c;
}

static mfs_cache_stats stats(mfs_cache *c)
{
    mfs_cache_stats s;
    mfs_cache_get_stats(c, &s);
    return s;
}

/* A file that is not there: the index is asked about its stat only. */
static void fake_stat(struct stat *st, uint64_t dev, uint64_t ino, int64_t mtime_s)
{
    memset(st, 0, sizeof *st);
    st->st_dev = (dev_t)dev;
    st->st_ino = (ino_t)ino;
    st->st_size = (off_t)(ino * 7 + 3);
    st->st_mtim.tv_sec = mtime_s;
    st->st_ctim.tv_sec = mtime_s + 1;
    st->st_ctim.tv_nsec = 5;
}

static void fake_hash(uint64_t ino, uint8_t out[16])
{
    for (int i = 0; i < 16; i++)
        out[i] = (uint8_t)(ino >> (8 * (i % 8))) ^ (uint8_t)(i * 37);
}

static void st_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A record as docs/cache.md lays it out. */
static void encode(const struct stat *st, const uint8_t hash[16], uint8_t b[REC])
{
    st_u64(b, (uint64_t)st->st_dev);
    st_u64(b + 8, (uint64_t)st->st_ino);
    st_u64(b + 16, (uint64_t)st->st_size);
    st_u64(b + 24, (uint64_t)(st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec));
    st_u64(b + 32, (uint64_t)(st->st_ctim.tv_sec * 1000000000ll + st->st_ctim.tv_nsec));
    memcpy(b + 40, hash, 16);
    st_u64(b + 56, XXH3_64bits(b, 56));
}

static const uint8_t header[HDR] = {'m', 'f', 's', 's', 't', 'a', 't', '1', 1, 0, 0, 0, 64, 0, 0, 0};

/* The shard files under index/: their count, and the most records one
 * holds (its size says, header aside). */
static int shard_files(const fx *f, uint64_t *most, char first[600])
{
    char idx[400];
    snprintf(idx, sizeof idx, "%s/index", f->dir);
    DIR *d = opendir(idx);
    assert_non_null(d);
    int n = 0;
    if (most)
        *most = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char p[700];
        snprintf(p, sizeof p, "%s/%s", idx, de->d_name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        /* three hex digits: 4096 shards */
        assert_int_equal(strlen(de->d_name), 3);
        assert_true(strtoul(de->d_name, NULL, 16) < 4096);
        uint64_t recs = ((uint64_t)st.st_size - HDR) / REC;
        if (most && recs > *most)
            *most = recs;
        if (first && n == 0)
            snprintf(first, 600, "%s", p);
        n++;
    }
    closedir(d);
    return n;
}

static int64_t file_size(const char *p)
{
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return st.st_size;
}

static int known(mfs_cache *c, const struct stat *st, uint64_t ino)
{
    uint8_t h[16], want[16];
    if (!mfs_cache_file_hash_known(c, st, h))
        return 0;
    fake_hash(ino, want);
    assert_memory_equal(h, want, 16);
    return 1;
}

/* ---- the bound ---------------------------------------------------------- */

enum { NFILES = 3000, CAP = 64 };

static void test_cap_real_files(void **state)
{
    fx *f = *state;
    for (int i = 0; i < NFILES; i++) {
        char name[32], text[32];
        snprintf(name, sizeof name, "m%05d.obj", i);
        int n = snprintf(text, sizeof text, "v %d 0 0\n", i);
        int fd = openat(f->rootfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, (size_t)n), n);
        close(fd);
    }
    mfs_cache *c = open_cache(f, CAP);
    uint8_t first[NFILES][16];
    uint64_t peak = 0;
    for (int i = 0; i < NFILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "m%05d.obj", i);
        assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, name, NULL, first[i], NULL), 0);
        if (stats(c).index_records > peak)
            peak = stats(c).index_records;
    }
    assert_int_equal(stats(c).files_hashed, NFILES);
    assert_int_equal(stats(c).index_hits, 0);
    uint64_t most;
    int nshards = shard_files(f, &most, NULL);
    /* consecutive inodes share a shard, so 3000 files fill more than one
     * and fewer than all */
    assert_true(nshards > 1);
    /* held: at most the cap plus the one shard in use */
    assert_true(peak <= CAP + most);
    assert_true(stats(c).index_shard_drops > 0);

    /* Every file again, in another order: all from the index, none
     * hashed, although most of their shards were dropped meanwhile. */
    uint64_t loads = stats(c).index_shard_loads;
    for (int k = 0; k < NFILES; k++) {
        int i = (int)(((uint64_t)k * 1237) % NFILES);
        char name[32];
        uint8_t h[16];
        snprintf(name, sizeof name, "m%05d.obj", i);
        assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, name, NULL, h, NULL), 0);
        assert_memory_equal(h, first[i], 16);
        assert_true(stats(c).index_records <= CAP + most);
    }
    assert_int_equal(stats(c).files_hashed, NFILES);
    assert_int_equal(stats(c).index_hits, NFILES);
    assert_true(stats(c).index_shard_loads > loads); /* read again, not re-hashed */
    mfs_cache_close(c);

    /* The default cap holds them all: each shard is read once. */
    c = open_cache(f, 0);
    for (int i = 0; i < NFILES; i++) {
        char name[32];
        uint8_t h[16];
        snprintf(name, sizeof name, "m%05d.obj", i);
        assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, name, NULL, h, NULL), 0);
    }
    assert_int_equal(stats(c).files_hashed, 0);
    assert_int_equal(stats(c).index_records, NFILES);
    assert_int_equal(stats(c).index_shard_loads, (uint64_t)nshards);
    assert_int_equal(stats(c).index_shard_drops, 0);
    mfs_cache_close(c);
}

static void test_cap_scattered(void **state)
{
    fx *f = *state;
    /* Inode numbers far apart: records spread over all the shards. */
    enum { N = 20000 };
    mfs_cache *c = open_cache(f, CAP);
    for (uint64_t i = 0; i < N; i++) {
        struct stat st;
        uint8_t h[16];
        uint64_t ino = 1000 + i * 7919 * 256;
        fake_stat(&st, 42, ino, 1000000000);
        fake_hash(ino, h);
        assert_int_equal(mfs_index_record(c, &st, h), 0);
    }
    uint64_t most;
    /* nearly every one of the 4096 shards (a hash leaves some empty) */
    assert_true(shard_files(f, &most, NULL) > 3900);
    assert_true(most < 64);
    assert_true(stats(c).index_records <= CAP + most);
    for (uint64_t i = 0; i < N; i++) {
        struct stat st;
        uint64_t ino = 1000 + i * 7919 * 256;
        fake_stat(&st, 42, ino, 1000000000);
        assert_true(known(c, &st, ino));
        assert_true(stats(c).index_records <= CAP + most);
        /* another mtime: not this record */
        fake_stat(&st, 42, ino, 1000000001);
        assert_false(known(c, &st, ino));
    }
    assert_int_equal(stats(c).index_hits, N);
    mfs_cache_close(c);
}

/* ---- sharing ------------------------------------------------------------ */

static void test_two_handles(void **state)
{
    fx *f = *state;
    mfs_cache *a = open_cache(f, 0), *b = open_cache(f, 0);
    struct stat x, y;
    fake_stat(&x, 7, 5000, 1000000000);
    fake_stat(&y, 7, 5001, 1000000000);
    uint8_t hx[16], hy[16];
    fake_hash(5000, hx);
    fake_hash(5001, hy);
    /* b reads the shard first (nothing for x) ... */
    assert_false(known(b, &x, 5000));
    assert_int_equal(stats(b).index_shard_loads, 1);
    /* ... a appends x to it ... */
    assert_int_equal(mfs_index_record(a, &x, hx), 0);
    /* ... and b picks the append up before calling it unknown, once its
     * shard was last looked at longer ago than the refresh interval
     * (index_shard.c: 100 ms) */
    usleep(150 * 1000);
    assert_true(known(b, &x, 5000));
    assert_int_equal(stats(b).index_shard_loads, 1);
    assert_int_equal(mfs_index_record(b, &y, hy), 0);
    assert_true(known(a, &y, 5001));

    /* a rewrites the shard (compaction: one file re-stamped many times);
     * b follows the new file and still finds both. */
    char shard[600];
    assert_int_equal(shard_files(f, NULL, shard), 1);
    struct stat before;
    assert_int_equal(stat(shard, &before), 0);
    for (int i = 0; i < SLACK + 10; i++) {
        fake_stat(&x, 7, 5000, 1000000000 + i);
        assert_int_equal(mfs_index_record(a, &x, hx), 0);
    }
    struct stat after;
    assert_int_equal(stat(shard, &after), 0);
    assert_true(after.st_ino != before.st_ino);
    usleep(150 * 1000);
    assert_true(known(b, &x, 5000));
    assert_true(known(b, &y, 5001));
    assert_int_equal(stats(b).index_shard_loads, 2); /* read whole again, once */
    mfs_cache_close(a);
    mfs_cache_close(b);
}

/* ---- threads ------------------------------------------------------------ */

typedef struct worker {
    mfs_cache *c;
    uint64_t first, n;
    int missed;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = w->first; i < w->first + w->n; i++) {
            struct stat st;
            uint8_t h[16], got[16];
            uint64_t ino = 1000 + i * 613;
            fake_stat(&st, 5, ino, 1000000000);
            fake_hash(ino, h);
            if (pass == 0)
                mfs_index_record(w->c, &st, h);
            else if (!mfs_cache_file_hash_known(w->c, &st, got) || memcmp(got, h, 16))
                w->missed++;
        }
    return NULL;
}

static void test_threads(void **state)
{
    fx *f = *state;
    /* Four threads recording and asking at once under a small cap: every
     * shard they use is dropped and read again under the others' feet,
     * and every answer is still right. */
    mfs_cache *c = open_cache(f, CAP);
    worker w[4];
    pthread_t t[4];
    for (int k = 0; k < 4; k++) {
        w[k] = (worker){c, (uint64_t)k * 2000, 2000, 0};
        assert_int_equal(pthread_create(&t[k], NULL, work, &w[k]), 0);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(t[k], NULL);
        assert_int_equal(w[k].missed, 0);
    }
    uint64_t most;
    shard_files(f, &most, NULL);
    assert_true(stats(c).index_records <= CAP + most);
    assert_int_equal(stats(c).index_hits, 8000);
    assert_true(stats(c).index_shard_drops > 0);
    mfs_cache_close(c);
}

/* ---- the logs ----------------------------------------------------------- */

static void test_shard_bytes(void **state)
{
    fx *f = *state;
    /* A real file hashed: its shard holds exactly the documented bytes. */
    int fd = openat(f->rootfd, "a.obj", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_int_equal(write(fd, "v 1 2 3\n", 8), 8);
    close(fd);
    mfs_cache *c = open_cache(f, 0);
    struct stat st;
    uint8_t h[16];
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "a.obj", &st, h, NULL), 0);
    mfs_cache_close(c);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits("v 1 2 3\n", 8));
    assert_memory_equal(h, canon.digest, 16);
    char shard[600];
    assert_int_equal(shard_files(f, NULL, shard), 1);
    uint8_t got[HDR + REC + 1], want[REC];
    fd = open(shard, O_RDONLY);
    assert_int_equal(read(fd, got, sizeof got), HDR + REC);
    close(fd);
    assert_memory_equal(got, header, HDR);
    encode(&st, canon.digest, want);
    assert_memory_equal(got + HDR, want, REC);
}

static void test_torn_shard(void **state)
{
    fx *f = *state;
    struct stat a, b;
    uint8_t ha[16], hb[16];
    fake_stat(&a, 9, 1000, 1000000000);
    fake_stat(&b, 9, 1001, 1000000000); /* a neighbour: the same shard */
    fake_hash(1000, ha);
    fake_hash(1001, hb);
    mfs_cache *c = open_cache(f, 0);
    assert_int_equal(mfs_index_record(c, &a, ha), 0);
    mfs_cache_close(c);
    /* A torn record (crash mid-append) ... */
    char shard[600];
    assert_int_equal(shard_files(f, NULL, shard), 1);
    int fd = open(shard, O_WRONLY | O_APPEND);
    assert_int_equal(write(fd, "\x01\x02\x03\x04\x05", 5), 5);
    close(fd);
    /* ... followed by another process's append ... */
    c = open_cache(f, 0);
    assert_false(known(c, &b, 1001));
    assert_int_equal(mfs_index_record(c, &b, hb), 0);
    mfs_cache_close(c);
    assert_int_equal(shard_files(f, NULL, NULL), 1);
    assert_int_equal(file_size(shard), HDR + REC + 5 + REC);
    /* ... both records are found again. */
    c = open_cache(f, 0);
    assert_true(known(c, &a, 1000));
    assert_true(known(c, &b, 1001));
    assert_int_equal(stats(c).index_hits, 2);
    assert_int_equal(stats(c).index_records, 2);
    mfs_cache_close(c);

    /* A shard whose header is not ours is started afresh, not trusted. */
    fd = open(shard, O_WRONLY);
    assert_int_equal(pwrite(fd, "XXXX", 4, 0), 4);
    close(fd);
    c = open_cache(f, 0);
    assert_false(known(c, &a, 1000));
    mfs_cache_close(c);
    assert_int_equal(file_size(shard), HDR);
}

static void test_compaction(void **state)
{
    fx *f = *state;
    /* One file re-stamped 5000 times: 5000 appends, one live record.  The
     * shard is rewritten to its live record each time its log passes
     * 2 * 1 + SLACK records, and the newest record survives. */
    enum { N = 5000 };
    mfs_cache *c = open_cache(f, 0);
    struct stat st;
    uint8_t h[16];
    fake_hash(77, h);
    for (int i = 0; i < N; i++) {
        fake_stat(&st, 3, 77, 1000000000 + i);
        assert_int_equal(mfs_index_record(c, &st, h), 0);
    }
    mfs_cache_close(c);
    /* The rule replayed: after a rewrite the log holds 1 record. */
    uint64_t log = 0;
    for (int i = 0; i < N; i++)
        if (++log > 2 * 1 + SLACK)
            log = 1;
    char shard[600];
    assert_int_equal(shard_files(f, NULL, shard), 1);
    assert_int_equal(file_size(shard), HDR + REC * (int64_t)log);
    assert_true(log < 2 + SLACK);
    c = open_cache(f, 0);
    assert_true(known(c, &st, 77));
    fake_stat(&st, 3, 77, 1000000000 + N - 2);
    assert_false(known(c, &st, 77)); /* superseded */
    assert_int_equal(stats(c).index_records, 1);
    mfs_cache_close(c);
}

/* ---- an old index.log --------------------------------------------------- */

/* The folder of a cache an older meshfs made: its CACHEDIR.TAG, without
 * which a folder holding an index.log is not taken for a cache (claim.c). */
static void old_cache_dir(const fx *f)
{
    static const char tag[] = "Signature: 8a477f597d28d172789f06886806bc55\n"
                              "# This file is a cache directory tag created by meshfs.\n"
                              "# For information about cache directory tags, see:\n"
                              "#\thttps://bford.info/cachedir/\n";
    char p[400];
    mkdir(f->dir, 0700);
    snprintf(p, sizeof p, "%s/CACHEDIR.TAG", f->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, tag, sizeof tag - 1), (ssize_t)(sizeof tag - 1));
    close(fd);
}

static void write_old_log(const fx *f, int n, int torn_at)
{
    char p[400];
    old_cache_dir(f);
    snprintf(p, sizeof p, "%s/index.log", f->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, header, HDR), HDR);
    for (int i = 0; i < n; i++) {
        struct stat st;
        uint8_t h[16], b[REC];
        uint64_t ino = 300 + (uint64_t)i * 1021;
        fake_stat(&st, 11, ino, 1000000000);
        fake_hash(ino, h);
        encode(&st, h, b);
        if (i == torn_at)
            assert_int_equal(write(fd, b, 20), 20); /* a crash mid-append */
        assert_int_equal(write(fd, b, REC), REC);
    }
    close(fd);
}

static void test_old_log_migrated(void **state)
{
    fx *f = *state;
    enum { N = 5000 };
    write_old_log(f, N, 1234);
    mfs_cache *c = open_cache(f, 0);
    char p[400];
    snprintf(p, sizeof p, "%s/index.log", f->dir);
    assert_int_equal(access(p, F_OK), -1); /* moved, then removed */
    assert_int_equal(errno, ENOENT);
    uint64_t total = 0;
    int n = shard_files(f, NULL, NULL);
    assert_true(n > 1);
    /* every record, once, in some shard */
    char idx[400];
    snprintf(idx, sizeof idx, "%s/index", f->dir);
    DIR *d = opendir(idx);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char sp[700];
        snprintf(sp, sizeof sp, "%s/%s", idx, de->d_name);
        total += ((uint64_t)file_size(sp) - HDR) / REC;
    }
    closedir(d);
    assert_int_equal(total, N);
    for (int i = 0; i < N; i++) {
        struct stat st;
        uint64_t ino = 300 + (uint64_t)i * 1021;
        fake_stat(&st, 11, ino, 1000000000);
        assert_true(known(c, &st, ino));
    }
    assert_int_equal(stats(c).index_hits, N);
    mfs_cache_close(c);
    /* nothing left behind in tmp/ */
    snprintf(p, sizeof p, "%s/tmp", f->dir);
    d = opendir(p);
    int left = 0;
    while ((de = readdir(d)) != NULL)
        left += de->d_name[0] != '.';
    closedir(d);
    assert_int_equal(left, 0);
}

static void test_old_log_foreign(void **state)
{
    fx *f = *state;
    /* Not an index.log of ours (another version, damage): removed, and
     * nothing of it is believed. */
    char p[400];
    old_cache_dir(f);
    snprintf(p, sizeof p, "%s/index.log", f->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    uint8_t h[HDR];
    memcpy(h, header, HDR);
    h[8] = 2; /* version 2 */
    assert_int_equal(write(fd, h, HDR), HDR);
    struct stat st;
    uint8_t hash[16], b[REC];
    fake_stat(&st, 11, 300, 1000000000);
    fake_hash(300, hash);
    encode(&st, hash, b);
    assert_int_equal(write(fd, b, REC), REC);
    close(fd);
    mfs_cache *c = open_cache(f, 0);
    assert_int_equal(access(p, F_OK), -1);
    assert_false(known(c, &st, 300));
    assert_int_equal(shard_files(f, NULL, NULL), 0);
    mfs_cache_close(c);
}

static void test_index_dir_refused(void **state)
{
    fx *f = *state;
    /* index/ as a link elsewhere: refused at open like tmp/ and v2/. */
    char p[400], other[400];
    old_cache_dir(f);
    snprintf(other, sizeof other, "%s/elsewhere", f->base);
    mkdir(other, 0700);
    snprintf(p, sizeof p, "%s/index", f->dir);
    assert_int_equal(symlink(other, p), 0);
    mfs_cache_config cfg = {.dir = f->dir};
    mfs_cache *c = NULL;
    mfs_err err = {0};
    assert_int_equal(mfs_cache_open(&cfg, &c, &err), -1);
    assert_non_null(strstr(err.msg, "/index is a symbolic link"));
}

static void test_revive(void **state)
{
    fx *f = *state;
    /* Everything in the cache directory removed under a live handle: the
     * revival makes index/ again, with the shard the handle holds. */
    mfs_cache *c = open_cache(f, 0);
    struct stat a;
    uint8_t ha[16];
    fake_stat(&a, 4, 640, 1000000000);
    fake_hash(640, ha);
    assert_int_equal(mfs_index_record(c, &a, ha), 0);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", f->dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(mfs_cache_revive(c, NULL), 1);
    char shard[600];
    assert_int_equal(shard_files(f, NULL, shard), 1);
    assert_int_equal(file_size(shard), HDR + REC);
    mfs_cache_close(c);
    c = open_cache(f, 0);
    assert_true(known(c, &a, 640));
    mfs_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cap_real_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_scattered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_handles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shard_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_shard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_log_migrated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_log_foreign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_dir_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revive, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

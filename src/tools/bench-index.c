/* bench-index: the stat index's memory and lookup time at a given size,
 * through the public cache API only, so the same source measures any
 * version of src/cache/ (scripts/bench-index builds it against the last
 * commit's and the work tree's, and runs both in one invocation).
 *
 *   bench-index DIR N [CAP]
 *
 * Writes DIR/index.log in the documented format (docs/cache.md, "Stat
 * index") with N records of fake files: folders of 1000, inode numbers
 * consecutive as a generated tree gets them.  Opens a cache on DIR (a
 * version with shards moves the log into them at this first open), closes
 * it, opens it again, then asks the index about every file: folder by
 * folder, each folder in a shuffled order as a listing would (readdir
 * order is a hash order), then N more at random anywhere in the tree (the
 * worst case for a cache of shards).  Prints wall and CPU time (CPU per
 * lookup: on shared cores it moves less with other load), VmRSS and
 * VmHWM after each step, and the index's own counters where it has them.
 * CAP (a version with shards): records kept in memory, 0 for the default. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "meshfs/cache.h"

#define FOLDER 1000

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time (user + system) of the process: on shared cores it moves less
 * than the wall clock with what else runs. */
static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu0;

static void mem(double *rss, double *hwm)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    *rss = *hwm = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6))
            *rss = atof(line + 6) / 1024;
        if (!strncmp(line, "VmHWM:", 6))
            *hwm = atof(line + 6) / 1024;
    }
    if (f)
        fclose(f);
}

static void fake(struct stat *st, uint64_t i)
{
    memset(st, 0, sizeof *st);
    st->st_dev = 2049;
    st->st_ino = 131073 + i;
    st->st_size = (off_t)(300 + i % 977);
    st->st_mtim.tv_sec = 1700000000 + (time_t)(i % 86400);
    st->st_ctim = st->st_mtim;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static int write_log(const char *dir, uint64_t n)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/index.log", dir);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    static const uint8_t hdr[16] = {'m', 'f', 's', 's', 't', 'a', 't', '1', 1, 0, 0, 0, 64, 0, 0, 0};
    fwrite(hdr, 1, 16, f);
    for (uint64_t i = 0; i < n; i++) {
        struct stat st;
        uint8_t b[64];
        fake(&st, i);
        put64(b, (uint64_t)st.st_dev);
        put64(b + 8, (uint64_t)st.st_ino);
        put64(b + 16, (uint64_t)st.st_size);
        put64(b + 24, (uint64_t)st.st_mtim.tv_sec * 1000000000u);
        put64(b + 32, (uint64_t)st.st_ctim.tv_sec * 1000000000u);
        put64(b + 40, i * 0x9e3779b97f4a7c15ull);
        put64(b + 48, ~i);
        put64(b + 56, XXH3_64bits(b, 56));
        fwrite(b, 1, 64, f);
    }
    return fclose(f);
}

static mfs_cache *open_cache(const char *dir, uint64_t cap)
{
    mfs_cache_config cfg = {.dir = dir, .flags = MFS_CACHE_NO_CAP};
#ifdef MFS_CACHE_DEFAULT_INDEX_CAP
    cfg.index_cap = cap;
#else
    (void)cap;
#endif
    mfs_cache *c = NULL;
    mfs_err err = {0};
    if (mfs_cache_open(&cfg, &c, &err) < 0) {
        fprintf(stderr, "bench-index: %s\n", err.msg);
        exit(1);
    }
    return c;
}

static void report(const char *what, mfs_cache *c, double secs, uint64_t lookups)
{
    double rss, hwm, cpus = cpu() - cpu0;
    mem(&rss, &hwm);
    printf("%-30s %8.1f ms (cpu %8.1f)", what, secs * 1e3, cpus * 1e3);
    if (lookups)
        printf(" cpu %6.2f us/lookup", cpus * 1e6 / (double)lookups);
    else
        printf("                     ");
    printf("  VmRSS %6.1f MiB  VmHWM %6.1f MiB", rss, hwm);
#ifdef MFS_CACHE_DEFAULT_INDEX_CAP
    if (c) {
        mfs_cache_stats s;
        mfs_cache_get_stats(c, &s);
        printf("  records %llu loads %llu drops %llu", (unsigned long long)s.index_records,
               (unsigned long long)s.index_shard_loads, (unsigned long long)s.index_shard_drops);
    }
#else
    (void)c;
#endif
    printf("\n");
    fflush(stdout);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t ask(mfs_cache *c, uint64_t i)
{
    struct stat st;
    uint8_t h[16];
    fake(&st, i);
    return (uint64_t)mfs_cache_file_hash_known(c, &st, h);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench-index DIR N [CAP]\n");
        return 2;
    }
    const char *dir = argv[1];
    uint64_t n = strtoull(argv[2], NULL, 10), cap = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
    mkdir(dir, 0700);
    if (write_log(dir, n) < 0) {
        perror(dir);
        return 1;
    }
    report("start", NULL, 0, 0);
    double t = now();
    cpu0 = cpu();
    mfs_cache *c = open_cache(dir, cap);
    report("open 1 (an old index.log)", c, now() - t, 0);
    mfs_cache_close(c);
    t = now();
    cpu0 = cpu();
    c = open_cache(dir, cap);
    report("open 2", c, now() - t, 0);

    uint64_t hits = 0;
    uint32_t *order = malloc(FOLDER * sizeof *order);
    t = now();
    cpu0 = cpu();
    for (uint64_t f = 0; f * FOLDER < n; f++) {
        uint32_t m = (uint32_t)(n - f * FOLDER < FOLDER ? n - f * FOLDER : FOLDER);
        for (uint32_t k = 0; k < m; k++)
            order[k] = k;
        for (uint32_t k = m; k > 1; k--) {
            uint32_t j = (uint32_t)(next() % k), x = order[k - 1];
            order[k - 1] = order[j];
            order[j] = x;
        }
        for (uint32_t k = 0; k < m; k++)
            hits += ask(c, f * FOLDER + order[k]);
    }
    report("every file, folder by folder", c, now() - t, n);
    t = now();
    cpu0 = cpu();
    for (uint64_t k = 0; k < n; k++)
        hits += ask(c, next() % n);
    report("as many at random anywhere", c, now() - t, n);
    free(order);
    mfs_cache_close(c);
    printf("answered from the index: %llu of %llu\n", (unsigned long long)hits,
           (unsigned long long)(2 * n));
    return hits == 2 * n ? 0 : 1;
}

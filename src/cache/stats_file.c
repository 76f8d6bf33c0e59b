/* The stats file: counters that outlive processes (docs/cache.md, "The
 * stats file").
 *
 * A mount's counters die with it, and a cache is shared by mounts and
 * meshfs-convert runs over its life, so what the user asks ("how often did
 * the cache save a conversion?") is kept in `stats` in the cache directory,
 * as ccache keeps its stats files.  Each handle adds what it counted since
 * its last flush: read, add, write back, under flock() on the file itself,
 * so concurrent flushes of several processes never lose each other's
 * counts.  The file is small text ("name value" lines), rewritten in place:
 * counters only grow, so the new text covers the old.  Lines this version
 * does not know are kept as they were, for a newer meshfs sharing the
 * directory.  A line that does not parse (a power loss mid-write) is
 * dropped, which only loses counts.
 *
 * When: at mfs_cache_close (unmount, end of a run), and a few seconds after
 * any mfs_cache_note, from a thread started by the first note, so a long
 * mount's counts are on disk while it runs and an idle one costs nothing.
 * It is started lazily because the daemon forks (fuse_daemonize) after
 * opening the cache, and a thread does not survive a fork. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_int.h"
#include "meshfs/cache.h"

#define STATS_FILE MFS_CACHE_STATS_FILE
#define STATS_MAX 16384      /* more is not ours: read no further */
#define FLUSH_DELAY_S 2      /* counts reach the file at most this late */

/* Counters the file keeps, and where the handle counts them. */
static const struct {
    const char *name;
    size_t st_off; /* in mfs_cache_stats */
    size_t tot_off; /* in mfs_cache_totals */
} counters[] = {
    {"hits", offsetof(mfs_cache_stats, view_hits), offsetof(mfs_cache_totals, hits)},
    {"misses", offsetof(mfs_cache_stats, view_misses), offsetof(mfs_cache_totals, misses)},
    {"conversions", offsetof(mfs_cache_stats, conversions),
     offsetof(mfs_cache_totals, conversions)},
    {"failures", offsetof(mfs_cache_stats, conversion_failures),
     offsetof(mfs_cache_totals, failures)},
    {"model_hits", offsetof(mfs_cache_stats, model_hits), offsetof(mfs_cache_totals, model_hits)},
    {"model_misses", offsetof(mfs_cache_stats, model_misses),
     offsetof(mfs_cache_totals, model_misses)},
    {"evictions", offsetof(mfs_cache_stats, evictions), offsetof(mfs_cache_totals, evictions)},
    {"corrupt", offsetof(mfs_cache_stats, corrupt_discarded),
     offsetof(mfs_cache_totals, corrupt)},
#define REMOTE(n) {#n, offsetof(mfs_cache_stats, n), offsetof(mfs_cache_totals, n)}
    REMOTE(remote_hits), REMOTE(remote_misses), REMOTE(remote_errors),
    REMOTE(remote_bytes_down), REMOTE(remote_bytes_up),
    REMOTE(remote_owed_sent), REMOTE(remote_owed_dropped), REMOTE(remote_slow),
#undef REMOTE
};
#define NCOUNTERS (sizeof counters / sizeof counters[0])

struct mfs_cache_sfile {
    pthread_mutex_t flush_mu; /* one flush at a time; guards flushed */
    uint64_t flushed[NCOUNTERS];
    uint64_t cap;             /* recorded with each flush; 0: none (NO_CAP) */
    int cap_pending;          /* not yet recorded */

    pthread_mutex_t mu;       /* the thread's state */
    pthread_cond_t cond;
    pthread_t thread;
    int started, dirty, stop;
};

static uint64_t *st_field(mfs_cache_stats *s, size_t i)
{
    return (uint64_t *)((char *)s + counters[i].st_off);
}

static uint64_t *tot_field(mfs_cache_totals *t, size_t i)
{
    return (uint64_t *)((char *)t + counters[i].tot_off);
}

/* ---- the file's text ------------------------------------------------ */

typedef struct parsed {
    mfs_cache_totals t;
    char other[STATS_MAX]; /* lines of names we do not know, verbatim */
    size_t nother;
} parsed;

static int digits_only(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static void parse_line(parsed *p, char *line)
{
    char *sp = strchr(line, ' ');
    if (line[0] == '#' || !sp || sp == line)
        return;
    *sp = '\0';
    const char *val = sp + 1;
    for (const char *q = line; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || *q == '_'))
            return; /* not a name: damaged */
    if (!digits_only(val) || strlen(val) > 20)
        return;
    uint64_t v = strtoull(val, NULL, 10);
    for (size_t i = 0; i < NCOUNTERS; i++)
        if (!strcmp(line, counters[i].name)) {
            *tot_field(&p->t, i) = v;
            return;
        }
    if (!strcmp(line, "cap")) {
        p->t.cap = v;
    } else if (!strcmp(line, "updated")) {
        p->t.updated = (int64_t)v;
    } else {
        size_t n = strlen(line) + 1 + strlen(val) + 1;
        if (p->nother + n < sizeof p->other) {
            p->nother += (size_t)snprintf(p->other + p->nother, sizeof p->other - p->nother,
                                          "%s %s\n", line, val);
        }
    }
}

/* Reads the whole file at fd (the caller holds its lock). */
static int read_file(int fd, parsed *p)
{
    memset(p, 0, sizeof *p);
    char *buf = malloc(STATS_MAX + 1);
    if (!buf)
        return -1;
    int64_t n = mfs_pread_full(fd, buf, STATS_MAX, 0);
    if (n < 0) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        parse_line(p, line);
    free(buf);
    return 0;
}

static size_t format_file(const parsed *p, char *out, size_t n)
{
    size_t len = (size_t)snprintf(out, n, "# meshfs cache statistics (docs/cache.md)\n");
    for (size_t i = 0; i < NCOUNTERS && len < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%s %" PRIu64 "\n", counters[i].name,
                                *tot_field((mfs_cache_totals *)&p->t, i));
    if (len < n)
        len += (size_t)snprintf(out + len, n - len, "cap %" PRIu64 "\nupdated %" PRId64 "\n",
                                p->t.cap, p->t.updated);
    if (len < n)
        len += (size_t)snprintf(out + len, n - len, "%.*s", (int)p->nother, p->other);
    return len < n ? len : n;
}

/* ---- flushing ------------------------------------------------------- */

static int open_stats(mfs_cache *c, int flags, mfs_err *err)
{
    int fd = openat(c->dirfd, STATS_FILE, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && !(errno == ENOENT && !(flags & O_CREAT)))
        mfs_errf(err, "cache %s: opening %s: %s", c->dir, STATS_FILE, strerror(errno));
    return fd;
}

static int flush(mfs_cache *c, mfs_err *err)
{
    struct mfs_cache_sfile *sf = c->sf;
    if (!sf)
        return 0;
    pthread_mutex_lock(&sf->flush_mu);
    mfs_cache_stats now;
    mfs_cache_get_stats(c, &now);
    uint64_t delta[NCOUNTERS];
    int any = 0;
    for (size_t i = 0; i < NCOUNTERS; i++) {
        delta[i] = *st_field(&now, i) - sf->flushed[i];
        any |= delta[i] != 0;
    }
    int rc = 0;
    if (!any && !sf->cap_pending)
        goto out;
    int fd = open_stats(c, O_RDWR | O_CREAT, err);
    if (fd < 0) {
        rc = -1;
        goto out;
    }
    parsed *p = malloc(sizeof *p);
    char *text = malloc(STATS_MAX);
    if (!p || !text || flock(fd, LOCK_EX) < 0 || read_file(fd, p) < 0) {
        rc = mfs_errf(err, "cache %s: reading %s: %s", c->dir, STATS_FILE,
                      p && text ? strerror(errno) : "out of memory");
    } else {
        for (size_t i = 0; i < NCOUNTERS; i++)
            *tot_field(&p->t, i) += delta[i];
        if (sf->cap)
            p->t.cap = sf->cap;
        p->t.updated = (int64_t)time(NULL);
        size_t len = format_file(p, text, STATS_MAX);
        int e = mfs_pwrite_full(fd, text, len, 0) < 0 ? errno : 0;
        if (!e && ftruncate(fd, (off_t)len) < 0)
            e = errno;
        if (e) {
            rc = mfs_errf(err, "cache %s: writing %s: %s", c->dir, STATS_FILE, strerror(e));
        } else {
            for (size_t i = 0; i < NCOUNTERS; i++)
                sf->flushed[i] += delta[i];
            sf->cap_pending = 0;
        }
    }
    free(p);
    free(text);
    close(fd); /* releases the lock */
out:
    pthread_mutex_unlock(&sf->flush_mu);
    return rc;
}

/* The counters live in the handle (c->st) and reach the stats file
 * through the flusher below; the readers are here, beside it, so that
 * opening (cache.c) uses this file and never the other way round. */
void mfs_cache_get_stats(mfs_cache *c, mfs_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    pthread_mutex_unlock(&c->mu);
}

void mfs_cache_stat_add(mfs_cache *c, size_t field, uint64_t v)
{
    pthread_mutex_lock(&c->mu);
    *(uint64_t *)((char *)&c->st + field) += v;
    pthread_mutex_unlock(&c->mu);
}

int mfs_cache_flush_stats(mfs_cache *c, mfs_err *err)
{
    return flush(c, err);
}

int mfs_cache_totals_read(mfs_cache *c, mfs_cache_totals *out, mfs_err *err)
{
    memset(out, 0, sizeof *out);
    int fd = open_stats(c, O_RDONLY, err);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    parsed *p = malloc(sizeof *p);
    int rc = 0;
    if (!p || flock(fd, LOCK_SH) < 0 || read_file(fd, p) < 0)
        rc = mfs_errf(err, "cache %s: reading %s: %s", c->dir, STATS_FILE,
                      p ? strerror(errno) : "out of memory");
    else
        *out = p->t;
    free(p);
    close(fd);
    return rc;
}

/* ---- the flushing thread -------------------------------------------- */

static void *flusher(void *arg)
{
    mfs_cache *c = arg;
    struct mfs_cache_sfile *sf = c->sf;
    pthread_mutex_lock(&sf->mu);
    while (!sf->stop) {
        if (!sf->dirty) {
            pthread_cond_wait(&sf->cond, &sf->mu);
            continue;
        }
        /* gather what follows for a moment: one write per burst */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += FLUSH_DELAY_S;
        while (!sf->stop && pthread_cond_timedwait(&sf->cond, &sf->mu, &until) != ETIMEDOUT)
            ;
        sf->dirty = 0;
        pthread_mutex_unlock(&sf->mu);
        flush(c, NULL); /* a failure only delays the counts to the next one */
        pthread_mutex_lock(&sf->mu);
    }
    pthread_mutex_unlock(&sf->mu);
    return NULL;
}

void mfs_cache_note(mfs_cache *c, mfs_cache_event ev)
{
    pthread_mutex_lock(&c->mu);
    switch (ev) {
    case MFS_CACHE_VIEW_HIT: c->st.view_hits++; break;
    case MFS_CACHE_VIEW_MISS: c->st.view_misses++; break;
    case MFS_CACHE_CONVERSION: c->st.conversions++; break;
    case MFS_CACHE_CONVERSION_FAILURE: c->st.conversion_failures++; break;
    case MFS_CACHE_MODEL_HIT: c->st.model_hits++; break;
    case MFS_CACHE_MODEL_MISS: c->st.model_misses++; break;
    }
    pthread_mutex_unlock(&c->mu);
    struct mfs_cache_sfile *sf = c->sf;
    if (!sf)
        return;
    pthread_mutex_lock(&sf->mu);
    if (!sf->started && !sf->stop)
        sf->started = pthread_create(&sf->thread, NULL, flusher, c) == 0;
    if (!sf->dirty) {
        sf->dirty = 1;
        pthread_cond_signal(&sf->cond);
    }
    pthread_mutex_unlock(&sf->mu);
}

void mfs_cache_sfile_open(mfs_cache *c)
{
    struct mfs_cache_sfile *sf = calloc(1, sizeof *sf);
    if (!sf)
        return; /* counts stay in this handle only */
    pthread_mutex_init(&sf->flush_mu, NULL);
    pthread_mutex_init(&sf->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sf->cond, &ca);
    pthread_condattr_destroy(&ca);
    sf->cap = c->flags & MFS_CACHE_NO_CAP ? 0 : c->max_size;
    c->sf = sf;
    /* the cap a mount runs with is what `meshfs-cache stats` shows from
     * the start, not after its first counted event */
    if (sf->cap) {
        sf->cap_pending = 1;
        flush(c, NULL);
    }
}

void mfs_cache_sfile_close(mfs_cache *c)
{
    struct mfs_cache_sfile *sf = c->sf;
    if (!sf)
        return;
    pthread_mutex_lock(&sf->mu);
    sf->stop = 1;
    pthread_cond_signal(&sf->cond);
    int started = sf->started;
    pthread_mutex_unlock(&sf->mu);
    if (started)
        pthread_join(sf->thread, NULL);
    flush(c, NULL);
    c->sf = NULL;
    pthread_mutex_destroy(&sf->flush_mu);
    pthread_mutex_destroy(&sf->mu);
    pthread_cond_destroy(&sf->cond);
    free(sf);
}

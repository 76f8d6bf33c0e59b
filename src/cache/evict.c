/* The size cap: least recently used entries go first.
 *
 * mtime is the LRU stamp: a commit sets it, every hit moves it forward
 * (store.c, touch).  Being on disk, it is shared by every process using the
 * directory, which an in-memory LRU would not be.
 *
 * Each handle keeps an estimate of the size (last scan + its own commits).
 * When a commit pushes it over max_size, one scan of v2/ learns the true
 * size and, if it is over, removes the oldest files until 90% of the cap is
 * left, so scans are paid once per 10% of the cap written, not per store.
 *
 * An entry this handle has just stored and not yet served (fresh, below)
 * goes last: its reader is waiting for it, and entries read a moment ago
 * by others (whose stamps are newer than its own) would otherwise outlive
 * it, which made a view that fits the cap be evicted as soon as stored,
 * and converted again, while colder entries stayed.  Fresh entries go only
 * if the cache is still over its cap without any other entry.
 *
 * Removing an entry another thread or process is reading is safe: unlink()
 * removes the name only.  An open file's inode, its data and its page cache
 * live until the last descriptor closes, so a reader's pread() keeps
 * returning the entry's bytes (docs/cache.md, "Eviction"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_int.h"

typedef struct ev_item {
    int64_t mtime_ns;
    uint64_t size;
    char path[MFS_CACHE_PATH_MAX];
} ev_item;

typedef struct ev_list {
    ev_item *v;
    size_t n, cap;
    uint64_t total;
} ev_list;

/* <30 hex>.e or <30 hex>.m: only finished entries and manifests count.
 * Temporary files live in tmp/, never here, so no writer's file can be
 * taken by eviction. */
static int is_entry_name(const char *s)
{
    for (int i = 0; i < 30; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[30] == '.' && (s[31] == 'e' || s[31] == 'm') && s[32] == '\0';
}

static int push(ev_list *l, const char *shard, const char *name, const struct stat *st)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        ev_item *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = cap;
    }
    ev_item *it = &l->v[l->n++];
    it->mtime_ns = mfs_cache_ts_ns(&st->st_mtim);
    it->size = (uint64_t)st->st_size;
    size_t a = strlen(shard);
    memcpy(it->path, shard, a); /* "v2/ab" + '/' + 32 chars: fits */
    it->path[a] = '/';
    memcpy(it->path + a + 1, name, 33);
    l->total += it->size;
    return 0;
}

static int scan_shard(mfs_cache *c, const char *shard, ev_list *l)
{
    int fd = openat(c->dirfd, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0; /* shard not created yet */
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    struct dirent *de;
    int r = 0;
    while (r == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        if (strlen(de->d_name) != 32 || !is_entry_name(de->d_name) ||
            fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        r = push(l, shard, de->d_name, &st);
    }
    closedir(d);
    return r;
}

static int scan(mfs_cache *c, ev_list *l, mfs_err *err)
{
    for (int i = 0; i < 256; i++) {
        char shard[16];
        snprintf(shard, sizeof shard, MFS_CACHE_ENTRY_DIR "/%02x", i);
        if (scan_shard(c, shard, l) < 0)
            return mfs_errf(err, "cache %s: scan: out of memory", c->dir);
    }
    return 0;
}

static int by_age(const void *a, const void *b)
{
    const ev_item *x = a, *y = b;
    if (x->mtime_ns != y->mtime_ns)
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->path, y->path);
}

void mfs_cache_fresh_add(mfs_cache *c, const mfs_cache_key *k, char suffix)
{
    pthread_mutex_lock(&c->mu);
    c->fresh[c->fresh_next++ % MFS_CACHE_FRESH_MAX] =
        (mfs_cache_fresh){*k, suffix, mfs_cache_now_ns()};
    pthread_mutex_unlock(&c->mu);
}

void mfs_cache_fresh_served(mfs_cache *c, const mfs_cache_key *k, char suffix)
{
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < MFS_CACHE_FRESH_MAX; i++)
        if (c->fresh[i].suffix == suffix && !memcmp(c->fresh[i].key.b, k->b, sizeof k->b))
            c->fresh[i].suffix = 0;
    pthread_mutex_unlock(&c->mu);
}

/* The paths of the fresh entries now; returns how many. */
static int fresh_paths(mfs_cache *c, char out[MFS_CACHE_FRESH_MAX][MFS_CACHE_PATH_MAX])
{
    int n = 0;
    int64_t since = mfs_cache_now_ns() - MFS_CACHE_FRESH_NS;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < MFS_CACHE_FRESH_MAX; i++)
        if (c->fresh[i].suffix && c->fresh[i].at_ns > since)
            mfs_cache_key_path(&c->fresh[i].key, c->fresh[i].suffix, out[n++]);
    pthread_mutex_unlock(&c->mu);
    return n;
}

static int is_fresh(const char *path, char fresh[][MFS_CACHE_PATH_MAX], int nfresh)
{
    for (int i = 0; i < nfresh; i++)
        if (!strcmp(path, fresh[i]))
            return 1;
    return 0;
}

/* Removes item i, unless it was used since the scan and !anyway; 1 if
 * removed. */
static int remove_item(mfs_cache *c, ev_list *l, size_t i, int anyway)
{
    struct stat st;
    /* Used since the scan (a hit moved its stamp): no longer the oldest. */
    if (!anyway && (fstatat(c->dirfd, l->v[i].path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    mfs_cache_ts_ns(&st.st_mtim) != l->v[i].mtime_ns))
        return 0;
    if (unlinkat(c->dirfd, l->v[i].path, 0) < 0)
        return 0;
    l->total -= l->v[i].size;
    l->v[i].size = 0;
    return 1;
}

/* Removes oldest first down to target, skipping files used since the scan;
 * then, only while the total is over max, the rest of the files other than
 * fresh ones (used since the scan or not), then fresh ones.  Returns files
 * removed. */
static int trim(mfs_cache *c, ev_list *l, uint64_t target, uint64_t max)
{
    qsort(l->v, l->n, sizeof *l->v, by_age);
    char fresh[MFS_CACHE_FRESH_MAX][MFS_CACHE_PATH_MAX];
    int nfresh = fresh_paths(c, fresh);
    int removed = 0;
    for (size_t i = 0; i < l->n && l->total > target; i++)
        if (!is_fresh(l->v[i].path, fresh, nfresh))
            removed += remove_item(c, l, i, 0);
    for (size_t i = 0; i < l->n && l->total > max; i++)
        if (l->v[i].size && !is_fresh(l->v[i].path, fresh, nfresh))
            removed += remove_item(c, l, i, 1);
    int fresh_removed = 0;
    for (size_t i = 0; i < l->n && l->total > max; i++)
        if (l->v[i].size && is_fresh(l->v[i].path, fresh, nfresh))
            fresh_removed += remove_item(c, l, i, 1);
    if (fresh_removed)
        MFS_CACHE_STAT_ADD(c, fresh_evictions, (uint64_t)fresh_removed);
    return removed + fresh_removed;
}

/* wait: block for the locks (explicit calls) or give up if another thread
 * or process is already trimming (automatic calls after a store). */
static int evict(mfs_cache *c, int wait, mfs_err *err)
{
    if (wait)
        pthread_mutex_lock(&c->evict_mu);
    else if (pthread_mutex_trylock(&c->evict_mu) != 0)
        return 0;
    if (flock(c->lockfd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) {
        pthread_mutex_unlock(&c->evict_mu);
        return 0;
    }
    ev_list l = {0};
    int removed = scan(c, &l, err);
    if (removed == 0) {
        pthread_mutex_lock(&c->mu);
        uint64_t max = c->max_size, held = c->reserved;
        pthread_mutex_unlock(&c->mu);
        /* downloads in tmp/ hold part of the cap: the entries get the rest */
        uint64_t target = max / 10 * 9 > held ? max / 10 * 9 - held : 0;
        if (l.total + held > max)
            removed = trim(c, &l, target, max > held ? max - held : 0);
        pthread_mutex_lock(&c->mu);
        c->st.size = l.total;
        c->st.evictions += (uint64_t)removed;
        pthread_mutex_unlock(&c->mu);
    }
    free(l.v);
    flock(c->lockfd, LOCK_UN);
    pthread_mutex_unlock(&c->evict_mu);
    return removed;
}

int mfs_cache_evict(mfs_cache *c, mfs_err *err)
{
    return evict(c, 1, err);
}

void mfs_cache_account(mfs_cache *c, uint64_t bytes)
{
    pthread_mutex_lock(&c->mu);
    c->st.size += bytes;
    int over = c->st.size + c->reserved > c->max_size;
    pthread_mutex_unlock(&c->mu);
    if (over)
        evict(c, 0, NULL);
}

/* Whether bytes more fit under the cap now; reserves them if so. */
static int take(mfs_cache *c, uint64_t bytes)
{
    pthread_mutex_lock(&c->mu);
    int ok = c->st.size + c->reserved + bytes <= c->max_size;
    if (ok)
        c->reserved += bytes;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

int mfs_cache_reserve(mfs_cache *c, uint64_t bytes)
{
    if (take(c, bytes))
        return 0;
    /* Pledged while the trim runs, so that it trims room for them too; not
     * if the other downloads alone leave too little: no eviction helps. */
    pthread_mutex_lock(&c->mu);
    int hopeless = c->reserved + bytes > c->max_size;
    if (!hopeless)
        c->reserved += bytes;
    pthread_mutex_unlock(&c->mu);
    if (hopeless)
        return -1;
    /* waits for another trimmer: this download would otherwise be refused
     * for lack of room that is being made */
    mfs_err err;
    mfs_err_clear(&err);
    evict(c, 1, &err);
    pthread_mutex_lock(&c->mu);
    int ok = c->st.size + c->reserved <= c->max_size;
    if (!ok)
        c->reserved -= bytes;
    pthread_mutex_unlock(&c->mu);
    return ok ? 0 : -1;
}

void mfs_cache_unreserve(mfs_cache *c, uint64_t bytes, uint64_t kept)
{
    pthread_mutex_lock(&c->mu);
    c->reserved -= bytes < c->reserved ? bytes : c->reserved;
    c->st.size += kept;
    int over = c->st.size + c->reserved > c->max_size;
    pthread_mutex_unlock(&c->mu);
    if (over)
        evict(c, 0, NULL);
}

void mfs_cache_set_max_size(mfs_cache *c, uint64_t max_size)
{
    pthread_mutex_lock(&c->mu);
    c->max_size = max_size ? max_size : MFS_CACHE_DEFAULT_MAX_SIZE;
    pthread_mutex_unlock(&c->mu);
}

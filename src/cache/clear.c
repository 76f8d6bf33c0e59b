/* meshfs-cache clear: every entry and manifest removed, under the `lock`
 * file every evictor takes, so no eviction scan runs at the same time.
 * Only names are unlinked: a mount reading an entry keeps its bytes until
 * it closes it, and its next lookup misses and converts again
 * (docs/cache.md, "Eviction").  The directory, CACHEDIR.TAG, the stat
 * index (hashes of sources, still true), the stats file and tmp/ (writers
 * at work) stay. */
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "meshfs/cache.h"
#include "walk.h"

typedef struct cctx {
    uint64_t removed, freed;
} cctx;

static int remove_one(void *ctx, mfs_cache *c, const char *path, const mfs_cache_key *k,
                      char suffix, const struct stat *st)
{
    cctx *x = ctx;
    if (unlinkat(c->dirfd, path, 0) == 0) {
        x->removed++;
        x->freed += (uint64_t)st->st_size;
    }
    return 0;
}

int mfs_cache_clear(mfs_cache *c, uint64_t *removed, uint64_t *freed, mfs_err *err)
{
    cctx x = {0, 0};
    pthread_mutex_lock(&c->evict_mu);
    flock(c->lockfd, LOCK_EX);
    int r = mfs_cache_walk(c, remove_one, &x);
    flock(c->lockfd, LOCK_UN);
    pthread_mutex_unlock(&c->evict_mu);
    pthread_mutex_lock(&c->mu);
    c->st.size = c->st.size > x.freed ? c->st.size - x.freed : 0;
    pthread_mutex_unlock(&c->mu);
    *removed = x.removed;
    *freed = x.freed;
    if (r < 0)
        return mfs_errf(err, "cache %s: clear failed", c->dir);
    return 0;
}

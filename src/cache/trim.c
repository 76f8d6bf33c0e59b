/* meshfs-cache trim SIZE: the size cap's own eviction (evict.c) run once
 * with SIZE as the cap, so least recently used files go first and a file
 * used since the scan is spared, exactly as when a mount trims. */
#include "meshfs/cache.h"
#include "cache_int.h"

int mfs_cache_trim(mfs_cache *c, uint64_t size, uint64_t *removed, mfs_err *err)
{
    pthread_mutex_lock(&c->mu);
    uint64_t was = c->max_size;
    pthread_mutex_unlock(&c->mu);
    /* evict.c keeps 90% of a cap: a cap of 1 keeps nothing, so 0 means
     * "remove everything" (0 itself is "the default cap" there) */
    mfs_cache_set_max_size(c, size ? size : 1);
    int r = mfs_cache_evict(c, err);
    pthread_mutex_lock(&c->mu);
    c->max_size = was;
    pthread_mutex_unlock(&c->mu);
    *removed = r > 0 ? (uint64_t)r : 0;
    return r < 0 ? -1 : 0;
}

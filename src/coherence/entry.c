/* An entry as the mount sees it (coherence.h): the cache's answer, less the
 * failures this mount tries again, plus the views only a pin still holds. */
#include "coherence.h"

int mfs_entry_peek(mfs_coherence *co, const mfs_cache_key *k, struct timespec newest,
                   mfs_cache_hit *hit, mfs_err *err)
{
    int r = mfs_cache_peek(co->cache, k, hit, err);
    if (r == 1 && hit->reason && !mfs_failure_stands(co, &hit->fail, newest)) {
        mfs_cache_hit_release(hit);
        return 0;
    }
    uint64_t length;
    if (r != 1 && mfs_pins_peek(co->pins, k, &length)) {
        mfs_cache_hit_release(hit);
        *hit = (mfs_cache_hit){.fd = -1, .length = length};
        return 1;
    }
    return r;
}

int mfs_entry_lookup(mfs_coherence *co, const mfs_cache_key *mk, const mfs_cache_key *k,
                     mfs_cache_hit *hit, mfs_err *err)
{
    int r = mk ? mfs_cache_lookup_in(co->cache, mk, k, hit, err)
               : mfs_cache_lookup(co->cache, k, hit, err);
    if (r == 1)
        return r;
    mfs_cache_hit_release(hit);
    return mfs_pins_open(co->pins, k, hit) ? 1 : r;
}

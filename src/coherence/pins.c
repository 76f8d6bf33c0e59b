/* Entries evicted as soon as they were stored (coherence.h).
 *
 * With a cache smaller than one model's views, a conversion's own stores
 * push its first views out before its last are in, and a lookup right
 * after finds nothing: without these pins the model could never be served.
 * Each pin is the descriptor mfs_cache_writer_commit opened before the
 * rename, so it reads the entry's bytes whatever eviction did to the name.
 * An evicted entry's disk space is held until its pin goes, so only the
 * last PINS_MAX are kept, least recently used out first; a view whose pin
 * went is converted again on its next open, like any evicted view. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coherence.h"

#define PINS_MAX 32

typedef struct pin {
    mfs_cache_key key;
    int fd;                /* -1: free */
    uint64_t offset, length;
    uint64_t used;         /* LRU stamp */
} pin;

/* One mount's pins (mfs_coherence.pins), under mu. */
struct mfs_pins {
    pthread_mutex_t mu;
    pin pins[PINS_MAX];
    uint64_t clock;
};

mfs_pins *mfs_pins_new(void)
{
    mfs_pins *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    pthread_mutex_init(&ps->mu, NULL);
    for (int i = 0; i < PINS_MAX; i++)
        ps->pins[i].fd = -1;
    return ps;
}

void mfs_pins_free(mfs_pins *ps)
{
    if (!ps)
        return;
    for (int i = 0; i < PINS_MAX; i++)
        if (ps->pins[i].fd >= 0)
            close(ps->pins[i].fd);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}

static pin *find(mfs_pins *ps, const mfs_cache_key *k)
{
    pin *pins = ps->pins;
    for (int i = 0; i < PINS_MAX; i++)
        if (pins[i].fd >= 0 && !memcmp(pins[i].key.b, k->b, sizeof k->b))
            return &pins[i];
    return NULL;
}

void mfs_pins_put(mfs_pins *ps, const mfs_cache_key *k, mfs_cache_hit *hit)
{
    pin *pins = ps->pins;
    pthread_mutex_lock(&ps->mu);
    pin *p = find(ps, k);
    if (!p) {
        p = &pins[0];
        for (int i = 0; i < PINS_MAX; i++) {
            if (pins[i].fd < 0) {
                p = &pins[i];
                break;
            }
            if (pins[i].used < p->used)
                p = &pins[i];
        }
    }
    if (p->fd >= 0)
        close(p->fd);
    *p = (pin){*k, hit->fd, hit->offset, hit->length, ++ps->clock};
    hit->fd = -1;
    pthread_mutex_unlock(&ps->mu);
}

int mfs_pins_peek(mfs_pins *ps, const mfs_cache_key *k, uint64_t *length)
{
    pthread_mutex_lock(&ps->mu);
    pin *p = find(ps, k);
    if (p)
        *length = p->length;
    pthread_mutex_unlock(&ps->mu);
    return p != NULL;
}

int mfs_pins_open(mfs_pins *ps, const mfs_cache_key *k, mfs_cache_hit *hit)
{
    pthread_mutex_lock(&ps->mu);
    pin *p = find(ps, k);
    int fd = p ? fcntl(p->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (fd >= 0) {
        p->used = ++ps->clock;
        *hit = (mfs_cache_hit){.fd = fd, .offset = p->offset, .length = p->length};
    }
    pthread_mutex_unlock(&ps->mu);
    return fd >= 0;
}

void mfs_pins_keep(mfs_coherence *co, const char *relpath, const mfs_cache_key *mk,
                   const mfs_cache_manifest *man, mfs_cache_hit *hits, uint64_t fresh_before)
{
    unsigned n = 0;
    uint64_t bytes = 0;
    /* the small views share one file, just written: whether it is still
     * there is one question, asked (a read of the whole entry) once */
    int entry_there = -1;
    for (uint32_t i = 0; i < man->nviews && i < MFS_FMT_COUNT; i++) {
        if (hits[i].fd < 0)
            continue;
        mfs_cache_hit h = {.fd = -1};
        mfs_err err;
        mfs_err_clear(&err);
        const mfs_cache_view *v = &man->views[i];
        if (v->embedded && entry_there < 0)
            entry_there = mfs_cache_peek_in(co->cache, mk, &v->key, &h, &err) == 1;
        int there = v->embedded ? entry_there : mfs_cache_peek(co->cache, &v->key, &h, &err) == 1;
        mfs_cache_hit_release(&h);
        if (there) {
            mfs_cache_hit_release(&hits[i]);
            continue;
        }
        n++;
        bytes += hits[i].length;
        mfs_pins_put(co->pins, &man->views[i].key, &hits[i]);
    }
    if (!n)
        return;
    mfs_cache_stats cs;
    mfs_cache_get_stats(co->cache, &cs);
    if (cs.fresh_evictions == fresh_before) { /* not the cap: clear, trim, rm -rf */
        mfs_errtext_log_at(co->names, MFS_LOG_INFO,
                           "%s: %u of its views were removed from the cache as soon as stored; "
                           "serving them uncached",
                           relpath, n);
        return;
    }
    atomic_fetch_add(&co->views_evicted_at_store, n);
    mfs_errtext_log(co->names, "%s: cache too small: %u of its views (%llu bytes) were evicted as soon as "
                            "stored (cache_size=%llu); serving them uncached, converting again when "
                            "needed; raise -o cache_size",
                        relpath, n, (unsigned long long)bytes, (unsigned long long)co->cache_size);
}

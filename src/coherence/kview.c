/* What the kernel holds about each view (coherence.h), so that a reader
 * sees either the old view or the new one, size and bytes matching.
 *
 * The kernel has one inode per view path: one i_size, taken from the last
 * attribute reply (LOOKUP, GETATTR, readdirplus), and one page cache,
 * filled by reads through any open handle.  A read is cut at i_size, and a
 * page once read is served to every later reader while the kernel keeps
 * it.  Each open handle here serves one cache entry, whose bytes never
 * change.  So:
 *
 *  - while cached handles on entry A are open, every attribute reply for
 *    the path says A's size and mtime, even when the model has moved on:
 *    their reads are cut at i_size, and their pages fill the cache;
 *  - an open of entry B while A handles are open reads with direct I/O:
 *    around the page cache and not cut at i_size;
 *  - an open of B otherwise makes B the path's entry: if the kernel may
 *    hold other attributes or pages, the opener invalidates them
 *    (mfs_ll_invalidate_node, before the open is answered), so its fstat
 *    asks again and its reads fetch B's bytes; keep_cache only when the
 *    kernel's pages and size are B's already.
 *
 * The invalidation is sent from the OPEN handler itself: the kernel holds
 * no lock an inode invalidation needs while it waits for an OPEN reply (it
 * takes the inode lock only for O_TRUNC, which a read-only mount refuses
 * first), and sending it after the reply would leave a window in which the
 * opener's fstat reads the stale size.  An attribute reply racing with the
 * invalidation is dropped by the kernel, which compares attr_version.  The
 * record trusts an invalidation only once it is sent (inval_pending): an
 * open deciding meanwhile sends its own.
 *
 * Bounded (docs/scale.md): at most a cap of records (8 per memo_size
 * model), least recently used out first.  A record with cached handles
 * open (nopen) is never evicted: those handles hold it as their token and
 * their attributes are what the kernel must keep hearing.  Any other may
 * go, and what it knew is then unknown: a later record for a path whose
 * record was evicted (a bit per path hash remembers it; a collision only
 * costs an invalidation) starts as "the kernel may hold anything", so its
 * first open invalidates instead of trusting the kernel's size and pages.
 * Evicting thus costs at most one invalidation, never a stale read. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "coherence.h"
#include "meshfs/util.h"

typedef struct kslot {
    char *path;
    struct kslot *next;
    struct kslot *newer, *older; /* LRU list */
    int opened;          /* id is the entry last opened with cached I/O */
    uint8_t id[16];
    struct stat served;  /* its attributes */
    unsigned nopen;      /* cached handles open on id */
    int told;            /* the kernel may hold told_size/told_mtime (-1: any) */
    int detached;        /* its inode is no longer the path's: held by handles only */
    unsigned inval_pending; /* opens that must invalidate and have not yet */
    uint64_t tells;      /* attribute replies recorded, for mfs_kview_invalidate */
    off_t told_size;
    struct timespec told_mtime;
} kslot;

#define NBUCKET 4096
#define GONE_BITS (1u << 16)

/* One mount's records (mfs_coherence.kviews), all under mu. */
struct mfs_kviews {
    pthread_mutex_t mu;
    kslot *bucket[NBUCKET];
    kslot *newest, *oldest;
    size_t cap, count;
    /* and their bytes, under a budget too (MFS_KVIEW_RECORD_BYTES a record
     * of the cap): a record holds its path, up to PATH_MAX */
    size_t bytes, byte_cap;
    uint64_t evictions;
    uint8_t gone[GONE_BITS / 8]; /* paths whose record held state and went */
};

static void lru_unlink(mfs_kviews *k, kslot *s)
{
    if (s->newer)
        s->newer->older = s->older;
    else
        k->newest = s->older;
    if (s->older)
        s->older->newer = s->newer;
    else
        k->oldest = s->newer;
    s->newer = s->older = NULL;
}

static void lru_front(mfs_kviews *k, kslot *s)
{
    s->older = k->newest;
    s->newer = NULL;
    if (k->newest)
        k->newest->newer = s;
    k->newest = s;
    if (!k->oldest)
        k->oldest = s;
}

/* A record's heap bytes: itself and its path, with malloc's overhead. */
static size_t slot_bytes(const kslot *s)
{
    return sizeof *s + strlen(s->path) + 1 + 32;
}

static int over_cap(mfs_kviews *k)
{
    return k->count > k->cap || k->bytes > k->byte_cap;
}

static void evict_locked(mfs_kviews *k, const kslot *keep)
{
    kslot *s = k->oldest;
    while (over_cap(k) && s) {
        kslot *nx = s->newer;
        if (s->nopen == 0 && s != keep) {
            uint64_t h = XXH3_64bits(s->path, strlen(s->path));
            if (s->told || s->opened)
                k->gone[(h % GONE_BITS) / 8] |= (uint8_t)(1u << (h % 8));
            kslot **pp = &k->bucket[h % NBUCKET];
            while (*pp != s)
                pp = &(*pp)->next;
            *pp = s->next;
            lru_unlink(k, s);
            k->bytes -= slot_bytes(s);
            free(s->path);
            free(s);
            k->count--;
            k->evictions++;
        }
        s = nx;
    }
}

static kslot *slot_of(mfs_kviews *k, const char *path)
{
    uint64_t h = XXH3_64bits(path, strlen(path));
    unsigned b = (unsigned)(h % NBUCKET);
    kslot *s = k->bucket[b];
    while (s && strcmp(s->path, path))
        s = s->next;
    if (s) {
        lru_unlink(k, s);
    } else if ((s = calloc(1, sizeof *s)) != NULL) {
        if (!(s->path = strdup(path))) {
            free(s);
            return NULL;
        }
        s->next = k->bucket[b];
        k->bucket[b] = s;
        k->count++;
        k->bytes += slot_bytes(s);
        if (k->gone[(h % GONE_BITS) / 8] & (1u << (h % 8))) {
            /* what the kernel holds is not known: as if told a size that
             * matches no entry, so the first open invalidates */
            s->told = 1;
            s->told_size = -1;
        }
    }
    if (s) {
        lru_front(k, s);
        evict_locked(k, s);
    }
    return s;
}

mfs_kviews *mfs_kviews_new(size_t n)
{
    mfs_kviews *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    pthread_mutex_init(&k->mu, NULL);
    mfs_kview_set_cap(k, n);
    return k;
}

void mfs_kviews_free(mfs_kviews *k)
{
    if (!k)
        return;
    /* after the session: no handle holds a record any more */
    for (size_t b = 0; b < NBUCKET; b++)
        while (k->bucket[b]) {
            kslot *s = k->bucket[b];
            k->bucket[b] = s->next;
            free(s->path);
            free(s);
        }
    pthread_mutex_destroy(&k->mu);
    free(k);
}

void mfs_kview_set_cap(mfs_kviews *k, size_t n)
{
    pthread_mutex_lock(&k->mu);
    k->cap = n ? n : MFS_KVIEW_DEFAULT_CAP;
    k->byte_cap = k->cap > SIZE_MAX / MFS_KVIEW_RECORD_BYTES ? SIZE_MAX : k->cap * MFS_KVIEW_RECORD_BYTES;
    evict_locked(k, NULL);
    pthread_mutex_unlock(&k->mu);
}

void mfs_kview_stats(mfs_kviews *k, uint64_t *entries, uint64_t *evicted, uint64_t *held)
{
    pthread_mutex_lock(&k->mu);
    *entries = k->count;
    *held = k->bytes;
    *evicted = k->evictions;
    pthread_mutex_unlock(&k->mu);
}

/* Whether the kernel can hold only attributes st for s's inode (or none). */
static int told_only(const kslot *s, const struct stat *st)
{
    return !s->told || (s->told_size == st->st_size && mfs_ts_equal(s->told_mtime, st->st_mtim));
}

void *mfs_kview_opened(mfs_kviews *k, const char *path, const uint8_t id[16], const struct stat *st,
                       mfs_kview_open *res)
{
    pthread_mutex_lock(&k->mu);
    kslot *s = slot_of(k, path);
    if (!s) {
        /* out of memory: read around whatever the kernel holds */
        *res = (mfs_kview_open){.keep_cache = 1, .direct_io = 1};
        pthread_mutex_unlock(&k->mu);
        return NULL;
    }
    if (s->nopen && memcmp(s->id, id, 16) != 0) {
        /* the inode's size and pages are the open A handles': B needs an
         * inode of its own */
        *res = (mfs_kview_open){.renew = 1};
        pthread_mutex_unlock(&k->mu);
        return NULL;
    }
    int attrs_ok = told_only(s, st);
    int pages_ok = s->opened && memcmp(s->id, id, 16) == 0;
    /* another open's invalidation still on its way: the kernel may hold
     * what it drops until it is sent, so this open sends one too */
    *res = (mfs_kview_open){.keep_cache = attrs_ok && pages_ok && !s->inval_pending};
    res->invalidate = !res->keep_cache && (s->told || s->opened);
    s->opened = 1;
    memcpy(s->id, id, 16);
    s->served = *st;
    s->nopen++;
    if (res->invalidate)
        s->inval_pending++;
    pthread_mutex_unlock(&k->mu);
    return s;
}

void mfs_kview_invalidate(mfs_kviews *k, void *token, void (*send)(void *arg), void *arg)
{
    kslot *s = token;
    pthread_mutex_lock(&k->mu);
    uint64_t before = s->tells;
    pthread_mutex_unlock(&k->mu);
    send(arg);
    pthread_mutex_lock(&k->mu);
    /* sent: the kernel holds nothing told before, and drops a reply to a
     * request it sent before.  Told since the count was read: a reply to
     * a later request, maybe, which the kernel keeps; what the record
     * says then stays (it may also say a dropped one: one more
     * invalidation at worst). */
    if (s->tells == before)
        s->told = 0;
    s->inval_pending--;
    pthread_mutex_unlock(&k->mu);
}

/* Takes *pp out of its bucket and the LRU list; its handles' tokens keep it
 * alive until the last is released. */
static void detach_locked(mfs_kviews *k, kslot **pp)
{
    kslot *s = *pp;
    /* what the kernel was told by name around the move may have been
     * either entry's: the path's next record starts unknown, so its first
     * open invalidates */
    uint64_t h = XXH3_64bits(s->path, strlen(s->path));
    k->gone[(h % GONE_BITS) / 8] |= (uint8_t)(1u << (h % 8));
    *pp = s->next;
    s->next = NULL;
    lru_unlink(k, s);
    k->count--;
    k->bytes -= slot_bytes(s); /* a detached record counts against no cap */
    if (s->nopen) {
        s->detached = 1;
    } else {
        free(s->path);
        free(s);
    }
}

static kslot **find_locked(mfs_kviews *k, const char *path)
{
    uint64_t h = XXH3_64bits(path, strlen(path));
    kslot **pp = &k->bucket[h % NBUCKET];
    while (*pp && strcmp((*pp)->path, path))
        pp = &(*pp)->next;
    return pp;
}

void mfs_kview_unknown(mfs_kviews *k, const char *path)
{
    pthread_mutex_lock(&k->mu);
    kslot **pp = find_locked(k, path);
    if (*pp) {
        (*pp)->told = 1;
        (*pp)->told_size = -1; /* matches no entry: the next open invalidates */
    }
    pthread_mutex_unlock(&k->mu);
}

void mfs_kview_detach(mfs_kviews *k, const char *path)
{
    pthread_mutex_lock(&k->mu);
    kslot **pp = find_locked(k, path);
    if (*pp)
        detach_locked(k, pp);
    pthread_mutex_unlock(&k->mu);
}

/* The kernel keeps the attribute reply it accepts last, and drops one to a
 * request it sent before an accepted change (attr_version): which of two
 * replies overlapping in flight it keeps is not known here, whatever order
 * they were recorded in.  So once two different attributes have been told
 * since the kernel last dropped its own, the record says "any" (told_size
 * -1), which matches no entry: the next open invalidates.  (A record that
 * said the later of two replies while the kernel kept the earlier would
 * let an open of that entry keep a size the kernel does not hold.) */
static void told_locked(kslot *s, struct stat *st)
{
    if (s->nopen)
        *st = s->served;
    int same = told_only(s, st);
    s->tells++;
    s->told = 1;
    s->told_size = same ? st->st_size : -1;
    s->told_mtime = st->st_mtim;
}

static int held_locked(kslot *s, const uint8_t id[16], const struct stat *st, struct stat *served)
{
    int held = s && s->nopen &&
               (id ? memcmp(s->id, id, 16) != 0 : !st || mfs_ts_later(st->st_mtim, s->served.st_mtim));
    if (held)
        *served = s->served;
    return held;
}

int mfs_kview_held(mfs_kviews *k, const char *path, const uint8_t id[16], const struct stat *st,
                   struct stat *served)
{
    pthread_mutex_lock(&k->mu);
    int held = held_locked(*find_locked(k, path), id, st, served);
    pthread_mutex_unlock(&k->mu);
    return held;
}

int mfs_kview_named(mfs_kviews *k, const char *path, const uint8_t id[16], struct stat *st, struct stat *served)
{
    pthread_mutex_lock(&k->mu);
    int held = held_locked(*find_locked(k, path), id, st, served);
    kslot *s = held ? NULL : slot_of(k, path);
    if (s)
        told_locked(s, st);
    pthread_mutex_unlock(&k->mu);
    return held;
}

int mfs_kview_ref(mfs_kviews *k, void *token, int direct_io)
{
    kslot *s = token;
    if (!s || direct_io) /* as mfs_kview_release counts them */
        return 0;
    pthread_mutex_lock(&k->mu);
    s->nopen++;
    /* the inode may have been told another entry's attributes (by name,
     * before its handles opened), or an open's invalidation is on its way */
    int inval = s->inval_pending || !told_only(s, &s->served);
    if (inval)
        s->inval_pending++;
    pthread_mutex_unlock(&k->mu);
    return inval;
}

void mfs_kview_release(mfs_kviews *k, void *token, int direct_io)
{
    kslot *s = token;
    if (!s || direct_io)
        return;
    pthread_mutex_lock(&k->mu);
    if (s->nopen)
        s->nopen--;
    if (s->detached) {
        if (s->nopen == 0) {
            free(s->path);
            free(s);
        }
        pthread_mutex_unlock(&k->mu);
        return;
    }
    if (over_cap(k))
        evict_locked(k, NULL);
    pthread_mutex_unlock(&k->mu);
}

void mfs_kview_attr(mfs_kviews *k, const char *path, struct stat *st)
{
    pthread_mutex_lock(&k->mu);
    kslot *s = slot_of(k, path);
    if (s)
        told_locked(s, st);
    pthread_mutex_unlock(&k->mu);
}

void mfs_kview_handle_attr(mfs_kviews *k, void *token, const char *path, struct stat *st)
{
    pthread_mutex_lock(&k->mu);
    kslot *s = token;
    if (!s || !s->detached) { /* else its inode is no longer the path's */
        s = slot_of(k, path);
        if (s)
            told_locked(s, st);
    }
    pthread_mutex_unlock(&k->mu);
}


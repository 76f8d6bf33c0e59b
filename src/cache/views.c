/* The resolver (include/meshfs/views.h): memo, local cache, conversion.
 *
 * Each model has a mutex held across its slow path, so concurrent first
 * readers of one model wait for one conversion instead of starting their
 * own; other models are not held up.  The fast path only stats the inputs:
 * a warm lookup reads no source bytes.
 *
 * Two walks share the tiers below the memo.  refresh() may hash the model,
 * mark a manifest used and convert; refresh_known() answers from the stat
 * index and entry headers alone, and the converter is not within its reach. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "meshfs/formats.h"
#include "meshfs/inputs.h"
#include "meshfs/remote_lease.h"
#include "meshfs/scene.h"
#include "meshfs/settings.h"
#include "meshfs/timespec.h"
#include "meshfs/views.h"

typedef struct sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    uid_t uid;
    gid_t gid;
    mode_t mode;
    int gone;                 /* an absent input's path, or a searched
                                 folder, that the stat did not find */
} sig;

typedef struct fmt_memo {
    int known;
    int ok;
    int embedded;             /* inside the model entry (model.mk) */
    uint64_t size;
    mfs_cache_key key;
    char *reason;             /* failures only: most views have none, and a
                                 fixed buffer per view would cost 3.5 KiB a model */
} fmt_memo;

typedef struct model {
    char *path;               /* relative to the root */
    pthread_mutex_t lock;
    struct model *next;
    /* the memo's bound (below): under mfs_views.lock */
    unsigned refs;            /* callers between get_model and put_model */
    struct model *newer, *older; /* the LRU list */
    /* memo, valid while every input's sig is unchanged */
    int valid;
    char *fmi_model;          /* the fmi model= path the memo was made for */
    mfs_cache_key mk;         /* the model entry the memo was made from */
    uint32_t ninputs;
    char **input_paths;
    sig *input_sigs;
    uint8_t *input_kinds;     /* mfs_dep_kind: what is stat'ed for each
                                 (a searched folder's path is its own) */
    struct timespec newest;
    mfs_view_perm perm;       /* the host's answer, with the folders it watches */
    sig *dir_sigs;
    fmt_memo fmt[MFS_FMT_COUNT];
    /* key of each view at its last open, kept across memo refreshes: the
     * kernel may keep its page cache only while the bytes are the same */
    int served[MFS_FMT_COUNT];
    mfs_cache_key served_key[MFS_FMT_COUNT];
    /* converted for a request not yet served: its open is that miss, not a
     * hit (statistics: a stat converts, the open that follows reads it) */
    int fresh[MFS_FMT_COUNT];
    size_t bytes;             /* what the record holds on the heap, as
                                 charged to mfs_views.bytes (charge()) */
} model;

#define NBUCKET 8192

/* The memo's bound (docs/scale.md).  At most memo_size model records are
 * kept, least recently used out first.  A record is only a shortcut: the
 * stat index and the cache entries are the truth, so a model whose record
 * went costs a re-stat and a peek of its manifest and entries on its next
 * query, never another answer.  A record in use (refs: a caller between
 * get_model and put_model, which covers whoever holds or waits for its
 * lock, so a conversion's single flight) is never evicted; the table may
 * then hold more than the cap until those calls end.  What eviction
 * forgets beyond the memo is served_key, so the next open of such a view
 * says same_as_last = 0: the conservative answer; and fresh, so an open
 * long after its conversion may count as a hit (statistics only). */
struct mfs_views {
    mfs_views_host h;
    pthread_mutex_t lock;     /* the table and the LRU list; a leaf */
    model *bucket[NBUCKET];
    model *newest, *oldest;   /* LRU list, most recently used first */
    size_t cap, count;
    /* and a budget in bytes (MFS_VIEWS_RECORD_BYTES a record of the cap):
     * a record's size follows its paths and inputs, so a count alone
     * bounds nothing for models of many long-named inputs */
    size_t byte_cap;
    atomic_size_t bytes;      /* every record's charge; changed under the
                                 record's lock, read under v->lock */
    uint64_t evictions;
};

/* A record's heap bytes: what the allocator hands out for it and its
 * strings and arrays (each allocation's own overhead, 16 B, counted). */
static size_t record_bytes(const model *m)
{
    const size_t a = 16; /* malloc's header and rounding, about */
    size_t n = sizeof *m + a + strlen(m->path) + 1 + a;
    if (m->fmi_model)
        n += strlen(m->fmi_model) + 1 + a;
    if (m->input_paths)
        n += 3 * a + (size_t)(m->ninputs + 1) * (sizeof(char *) + sizeof(sig) + 1);
    for (uint32_t i = 0; i < m->ninputs; i++)
        n += strlen(m->input_paths[i]) + 1 + a;
    n += (size_t)m->perm.ndirs * (sizeof(char *) + sizeof(struct stat) + sizeof(sig) + a);
    for (uint32_t i = 0; i < m->perm.ndirs; i++)
        n += strlen(m->perm.dirs[i]) + 1;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if (m->fmt[f].reason)
            n += strlen(m->fmt[f].reason) + 1 + a;
    return n;
}

/* Brings the record's charge to what it holds now.  v is the table the
 * record is in (the resolver's fronts take it const: only this counter
 * changes). */
static void charge(const mfs_views *v, model *m)
{
    size_t now = record_bytes(m);
    atomic_size_t *total = (atomic_size_t *)&v->bytes;
    if (now >= m->bytes)
        atomic_fetch_add(total, now - m->bytes);
    else
        atomic_fetch_sub(total, m->bytes - now);
    m->bytes = now;
}

static int over_cap(const mfs_views *v)
{
    return v->count > v->cap || atomic_load(&v->bytes) > v->byte_cap;
}

mfs_views *mfs_views_new(const mfs_views_host *host)
{
    mfs_views *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->h = *host;
    v->cap = host->memo_size ? host->memo_size : MFS_VIEWS_MEMO_DEFAULT;
    v->byte_cap = v->cap > SIZE_MAX / MFS_VIEWS_RECORD_BYTES ? SIZE_MAX
                                                              : v->cap * MFS_VIEWS_RECORD_BYTES;
    pthread_mutex_init(&v->lock, NULL);
    return v;
}

static void memo_clear(model *m)
{
    for (uint32_t i = 0; i < m->ninputs; i++)
        free(m->input_paths[i]);
    free(m->input_paths);
    free(m->input_sigs);
    free(m->input_kinds);
    free(m->fmi_model);
    m->input_paths = NULL;
    m->input_sigs = NULL;
    m->input_kinds = NULL;
    m->fmi_model = NULL;
    m->ninputs = 0;
    for (uint32_t i = 0; i < m->perm.ndirs; i++)
        free(m->perm.dirs[i]);
    free(m->perm.dirs);
    free(m->perm.dir_st);
    free(m->dir_sigs);
    memset(&m->perm, 0, sizeof m->perm);
    m->dir_sigs = NULL;
    m->valid = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        free(m->fmt[f].reason);
    memset(m->fmt, 0, sizeof m->fmt);
}

void mfs_views_free(mfs_views *v)
{
    if (!v)
        return;
    for (int b = 0; b < NBUCKET; b++)
        while (v->bucket[b]) {
            model *m = v->bucket[b];
            v->bucket[b] = m->next;
            memo_clear(m);
            pthread_mutex_destroy(&m->lock);
            free(m->path);
            free(m);
        }
    pthread_mutex_destroy(&v->lock);
    free(v);
}

static unsigned bucket_of(const char *path)
{
    return (unsigned)(XXH3_64bits(path, strlen(path)) % NBUCKET);
}

static void lru_unlink(mfs_views *v, model *m)
{
    if (m->newer)
        m->newer->older = m->older;
    else
        v->newest = m->older;
    if (m->older)
        m->older->newer = m->newer;
    else
        v->oldest = m->newer;
    m->newer = m->older = NULL;
}

static void lru_front(mfs_views *v, model *m)
{
    m->older = v->newest;
    m->newer = NULL;
    if (v->newest)
        v->newest->newer = m;
    v->newest = m;
    if (!v->oldest)
        v->oldest = m;
}

/* Drops least recently used records no caller holds until the table is
 * within its cap.  Called with v->lock held. */
static void evict_locked(mfs_views *v)
{
    model *m = v->oldest;
    while (over_cap(v) && m) {
        model *newer = m->newer;
        if (m->refs == 0) {
            model **pp = &v->bucket[bucket_of(m->path)];
            while (*pp != m)
                pp = &(*pp)->next;
            *pp = m->next;
            lru_unlink(v, m);
            memo_clear(m);
            atomic_fetch_sub(&v->bytes, m->bytes);
            pthread_mutex_destroy(&m->lock);
            free(m->path);
            free(m);
            v->count--;
            v->evictions++;
        }
        m = newer;
    }
}

/* The model's record, held (refs) until put_model; made if there is none
 * and create says so (else NULL). */
static model *find_model(mfs_views *v, const char *path, int create)
{
    unsigned b = bucket_of(path);
    pthread_mutex_lock(&v->lock);
    model *m = v->bucket[b];
    while (m && strcmp(m->path, path))
        m = m->next;
    if (m) {
        lru_unlink(v, m);
    } else if (create) {
        m = calloc(1, sizeof *m);
        if (m && !(m->path = strdup(path))) {
            free(m);
            m = NULL;
        }
        if (m) {
            pthread_mutex_init(&m->lock, NULL);
            m->next = v->bucket[b];
            v->bucket[b] = m;
            v->count++;
            charge(v, m);
        }
    }
    if (m) {
        lru_front(v, m);
        m->refs++;
        evict_locked(v);
    }
    pthread_mutex_unlock(&v->lock);
    return m;
}

static model *get_model(mfs_views *v, const char *path)
{
    return find_model(v, path, 1);
}

static void put_model(mfs_views *v, model *m)
{
    pthread_mutex_lock(&v->lock);
    m->refs--;
    if (over_cap(v))
        evict_locked(v);
    pthread_mutex_unlock(&v->lock);
}

void mfs_views_get_stats(mfs_views *v, mfs_views_stats *out)
{
    pthread_mutex_lock(&v->lock);
    out->entries = v->count;
    out->cap = v->cap;
    out->bytes = atomic_load(&v->bytes);
    out->byte_cap = v->byte_cap;
    out->evictions = v->evictions;
    pthread_mutex_unlock(&v->lock);
}

const mfs_views_host *mfs_views_host_of(const mfs_views *v)
{
    return &v->h;
}

/* ---- keys: the one recipe ---- */

int mfs_views_key(const mfs_views *v, const mfs_dep *deps, uint32_t ndeps, int format,
                  const char *fmi_model, mfs_cache_key *out, mfs_err *err)
{
    /* Keys come from the inputs and today's options, not from a manifest:
     * an option that changed since only moves its own views. */
    char opts[4200];
    v->h.format_options(v->h.ctx, format, fmi_model, opts, sizeof opts);
    const mfs_format_info *fi = mfs_format_get((mfs_format)format);
    return mfs_cache_view_key_for(deps, ndeps, fi->reads_image, fi->name, opts, v->h.version, out,
                                  err);
}

int mfs_views_manifest_key(const mfs_views *v, const char *model_path, uint64_t size,
                           const uint8_t hash[16], mfs_cache_key *out, mfs_err *err)
{
    char iopts[64];
    v->h.import_options(v->h.ctx, iopts, sizeof iopts);
    return mfs_cache_manifest_key(model_path, size, hash, iopts, v->h.version, out, err);
}

/* ---- tier 1: the memo ---- */

static int take_sig(const mfs_views *v, const char *path, mfs_view_path kind, sig *s)
{
    struct stat st;
    int rc = v->h.stat_path(v->h.ctx, path, kind, &st);
    if (rc < 0)
        return rc;
    *s = (sig){st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim,
               st.st_uid, st.st_gid, st.st_mode, 0};
    return 0;
}

/* A folder's sig for the memo: what decides who may search it. */
static int same_dir_sig(const sig *a, const sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->uid == b->uid && a->gid == b->gid &&
           a->mode == b->mode;
}

static int same_sig(const sig *a, const sig *b)
{
    if (a->gone || b->gone)
        return a->gone && b->gone;
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           mfs_ts_equal(a->mtime, b->mtime) && mfs_ts_equal(a->ctime, b->ctime);
}

static mfs_view_path input_kind(uint32_t i)
{
    return i > 0 ? MFS_VIEW_PATH_DEP : MFS_VIEW_PATH_MODEL;
}

/* An input's sig as the memo keeps it.  A file's stat must succeed (else
 * -errno).  An absent path is stat'ed as it is, and its failing to stat is
 * its sig (gone): a file appearing there moves it.  A search is the stat
 * of the folder searched, whose mtime moves with any name added, removed
 * or renamed in it (the cache tier then tells whether the match did).
 * One fstatat either way: a warm stat stays one stat per input. */
static int input_sig(const mfs_views *v, const char *path, int kind, uint32_t i, sig *s)
{
    if (kind == MFS_DEP_FILE)
        return take_sig(v, path, input_kind(i), s);
    if (kind == MFS_DEP_UNREADABLE) /* its stat is its value: a chmod moves ctime */
        return take_sig(v, path, MFS_VIEW_PATH_DEP, s);
    char dir[4096];
    if (kind == MFS_DEP_LISTING) {
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
                 slash ? path : ".");
        path = dir;
    }
    if (take_sig(v, path, MFS_VIEW_PATH_DEP, s) < 0)
        *s = (sig){.gone = 1};
    return 0;
}

static int memo_current(const mfs_views *v, const model *m, const char *fmi_model)
{
    if (!m->valid || strcmp(m->fmi_model, fmi_model))
        return 0;
    for (uint32_t i = 0; i < m->ninputs; i++) {
        sig now;
        if (input_sig(v, m->input_paths[i], m->input_kinds[i], i, &now) < 0 ||
            !same_sig(&now, &m->input_sigs[i]))
            return 0;
    }
    for (uint32_t i = 0; i < m->perm.ndirs; i++) {
        sig now;
        if (take_sig(v, m->perm.dirs[i], MFS_VIEW_PATH_MODEL, &now) < 0 ||
            !same_dir_sig(&now, &m->dir_sigs[i]))
            return 0;
    }
    return 1;
}

static int entry_peek(const mfs_views *v, const mfs_cache_key *k, struct timespec newest,
                      mfs_cache_hit *hit, mfs_err *err)
{
    if (v->h.entry_peek)
        return v->h.entry_peek(v->h.ctx, k, newest, hit, err);
    return mfs_cache_peek(v->h.cache, k, hit, err);
}

/* mk: the model entry the view is embedded in, or NULL (its own file) */
static int entry_open(const mfs_views *v, const mfs_cache_key *mk, const mfs_cache_key *k,
                      mfs_cache_hit *hit, mfs_err *err)
{
    if (v->h.entry_open)
        return v->h.entry_open(v->h.ctx, mk, k, hit, err);
    return mk ? mfs_cache_lookup_in(v->h.cache, mk, k, hit, err)
              : mfs_cache_lookup(v->h.cache, k, hit, err);
}

/* The view with key k if the model entry embeds it, or (trust) records
 * the length of its own entry file: a listing may say that size without
 * opening the file (the key names the bytes, so the size is right even if
 * the file was evicted since; the open that follows finds out). */
static const mfs_cache_view *recorded_view(const mfs_cache_manifest *man, const mfs_cache_key *k,
                                           int trust)
{
    for (uint32_t i = 0; i < man->nviews; i++) {
        const mfs_cache_view *w = &man->views[i];
        if ((w->embedded || (trust && w->sized)) && !memcmp(w->key.b, k->b, sizeof k->b))
            return w;
    }
    return NULL;
}

/* Who may read the views: the host's rule over the files read (a path
 * not found or a folder searched gives nothing to read). */
static int memo_perm(const mfs_views *v, model *m)
{
    struct stat *st = calloc(m->ninputs ? m->ninputs : 1, sizeof *st);
    char **paths = calloc(m->ninputs ? m->ninputs : 1, sizeof *paths);
    if (!st || !paths) {
        free(st);
        free(paths);
        return -ENOMEM;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->ninputs; i++) {
        if (m->input_kinds[i] != MFS_DEP_FILE)
            continue;
        paths[n] = m->input_paths[i];
        st[n].st_dev = m->input_sigs[i].dev;
        st[n].st_ino = m->input_sigs[i].ino;
        st[n].st_uid = m->input_sigs[i].uid;
        st[n].st_gid = m->input_sigs[i].gid;
        st[n].st_mode = m->input_sigs[i].mode;
        n++;
    }
    int rc = 0;
    if (v->h.perm) {
        rc = v->h.perm(v->h.ctx, m->path, paths, st, n, &m->perm);
    } else if (n) {
        m->perm.perm = 0444; /* no rule: the model's owner */
        m->perm.uid = st[0].st_uid;
        m->perm.gid = st[0].st_gid;
    }
    free(st);
    free(paths);
    if (rc < 0)
        return rc;
    if (m->perm.ndirs && !(m->dir_sigs = calloc(m->perm.ndirs, sizeof *m->dir_sigs)))
        return -ENOMEM;
    for (uint32_t i = 0; i < m->perm.ndirs; i++) {
        const struct stat *d = &m->perm.dir_st[i];
        m->dir_sigs[i] = (sig){d->st_dev, d->st_ino, d->st_size, d->st_mtim, d->st_ctim,
                               d->st_uid, d->st_gid, d->st_mode, 0};
    }
    return 0;
}

/* Records the inputs' current sigs and each enabled format's entry state:
 * embedded in the model entry mk that man was read from, or its own entry
 * (peeked, unless trust and man records its length: recorded_view). */
static int memo_fill_in(const mfs_views *v, model *m, const mfs_cache_manifest *man,
                        const mfs_cache_key *mk, const char *fmi_model, int trust)
{
    memo_clear(m);
    m->input_paths = calloc(man->ndeps + 1, sizeof *m->input_paths);
    m->input_sigs = calloc(man->ndeps + 1, sizeof *m->input_sigs);
    m->input_kinds = calloc(man->ndeps + 1, sizeof *m->input_kinds);
    m->fmi_model = strdup(fmi_model);
    if (!m->input_paths || !m->input_sigs || !m->input_kinds || !m->fmi_model)
        return -ENOMEM;
    m->newest = (struct timespec){0, 0};
    for (uint32_t i = 0; i < man->ndeps; i++) {
        m->input_paths[i] = strdup(man->deps[i].path);
        if (!m->input_paths[i])
            return -ENOMEM;
        m->input_kinds[i] = man->deps[i].kind;
        m->ninputs++;
        if (input_sig(v, man->deps[i].path, man->deps[i].kind, i, &m->input_sigs[i]) < 0)
            return -EAGAIN; /* vanished meanwhile: resolve again */
        if (man->deps[i].kind != MFS_DEP_FILE)
            continue; /* the views' mtime is their files' newest */
        struct timespec t = m->input_sigs[i].mtime;
        if (mfs_ts_later(t, m->newest))
            m->newest = t;
    }
    int prc = memo_perm(v, m);
    if (prc < 0)
        return prc;
    m->mk = *mk;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(v->h.formats & (1u << f)))
            continue;
        mfs_cache_key key;
        mfs_err err;
        mfs_err_clear(&err);
        if (mfs_views_key(v, man->deps, man->ndeps, f, fmi_model, &key, &err) < 0)
            return -ENOMEM;
        fmt_memo *fm = &m->fmt[f];
        const mfs_cache_view *in = recorded_view(man, &key, trust);
        if (in) { /* nothing to open: the model entry was just read */
            *fm = (fmt_memo){.known = 1, .ok = 1, .embedded = in->embedded, .size = in->length,
                             .key = key};
            continue;
        }
        mfs_cache_hit hit = {.fd = -1};
        /* less failures the host tries again, plus entries only it holds */
        if (entry_peek(v, &key, m->newest, &hit, &err) != 1) {
            mfs_cache_hit_release(&hit);
            continue;
        }
        fm->known = 1;
        fm->key = key;
        fm->ok = hit.reason == NULL;
        fm->size = hit.length;
        fm->reason = hit.reason; /* taken over */
        hit.reason = NULL;
        mfs_cache_hit_release(&hit);
    }
    m->valid = 1;
    return 0;
}

/* memo_fill_in, and the record charged for what it holds now, however it
 * ended (the table's budget is checked when the caller lets it go). */
static int memo_fill(const mfs_views *v, model *m, const mfs_cache_manifest *man,
                     const mfs_cache_key *mk, const char *fmi_model, int trust)
{
    int rc = memo_fill_in(v, m, man, mk, fmi_model, trust);
    charge(v, m);
    return rc;
}

/* Which enabled formats have no entry yet for these inputs. */
static unsigned missing_formats(const mfs_views *v, const model *m)
{
    unsigned miss = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((v->h.formats & (1u << f)) && !m->fmt[f].known)
            miss |= 1u << f;
    return miss;
}

/* Statistics: whether the conversion just made left a failure among the
 * views it was asked for. */
static int made_failure(const mfs_views *v, const model *m, unsigned need)
{
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((need & (1u << f)) && m->fmt[f].known && !m->fmt[f].ok)
            return 1;
    return 0;
}

/* ---- tier 2: the local cache, from the stat index alone ---- */

/* Whether a folder record's copy is the manifest of this model's bytes. */
static int hint_fits(const mfs_cache_manifest *h, const char *path, const struct stat *st,
                     const uint8_t hash[16])
{
    return h && h->ndeps && !strcmp(h->deps[0].path, path) &&
           h->deps[0].size == (uint64_t)st->st_size && !memcmp(h->deps[0].hash, hash, 16);
}

/* 0: the memo now answers for `format`; 1: not without work; 2: nothing
 * of the model is known without work; -errno.  model_st: the model's
 * stat, just taken.  hint (may be NULL): the listing's copy of the
 * manifest, and where a manifest read from the cache goes. */
static int refresh_known(const mfs_views *v, model *m, const char *fmi_model, int format,
                         const struct stat *model_st, mfs_view_hint *hint)
{
    mfs_err err;
    mfs_err_clear(&err);
    for (int attempt = 0; attempt < 3; attempt++) {
        struct stat st = *model_st;
        uint8_t hash[16];
        int rc = attempt ? v->h.stat_path(v->h.ctx, m->path, MFS_VIEW_PATH_MODEL, &st) : 0;
        if (rc < 0)
            return rc;
        if (!S_ISREG(st.st_mode) || !mfs_cache_file_hash_known(v->h.cache, &st, hash))
            return 2;
        mfs_cache_key mk;
        if (mfs_views_manifest_key(v, m->path, (uint64_t)st.st_size, hash, &mk, &err) < 0)
            return -EIO;
        mfs_cache_manifest own;
        memset(&own, 0, sizeof own);
        const mfs_cache_manifest *man = &own;
        if (hint && hint_fits(hint->man, m->path, &st, hash))
            man = hint->man; /* no model entry opened */
        else if (mfs_cache_manifest_peek(v->h.cache, &mk, &own, &err) != 1)
            return 2; /* (a listing looks, it does not use: no LRU stamp) */
        if (mfs_cache_manifest_known(v->h.cache, v->h.rootfd, man, &err) != 1) {
            mfs_cache_manifest_free(&own);
            return 2;
        }
        rc = memo_fill(v, m, man, &mk, fmi_model, 1);
        if (hint && man == hint->man)
            hint->used = 1;
        if (hint && man == &own && rc == 0) {
            mfs_cache_manifest_free(&hint->learned);
            hint->learned = own; /* the listing's to record */
        } else {
            mfs_cache_manifest_free(&own);
        }
        if (rc == -EAGAIN)
            continue;
        if (rc < 0)
            return rc;
        return missing_formats(v, m) & (1u << format) ? 1 : 0;
    }
    return 1;
}

/* ---- tier 2b: the remote ---- */

/* One view fetched from the remote into the local cache: as
 * mfs_remote_fetch (1 it is there, 2 the server's is bad). */
static int remote_view(const mfs_views *v, const mfs_cache_manifest *man, const char *fmi_model,
                       int format)
{
    mfs_cache_key k;
    mfs_err e;
    mfs_err_clear(&e);
    if (mfs_views_key(v, man->deps, man->ndeps, format, fmi_model, &k, &e) < 0)
        return 0;
    return mfs_remote_fetch(v->h.remote, &k, 0);
}

/* The view asked for, and every other missing one the manifest lists (the
 * machine that made it stored them): a view another machine made is
 * fetched rather than converted again with the one asked for, whatever
 * order they are read in.  Views it does not list are not asked for (a
 * request each, and they are not there).  The number fetched; *bad set
 * if one was found bad there. */
static int remote_views(const mfs_views *v, const model *m, const mfs_cache_manifest *man,
                        const char *fmi_model, int format, int *bad)
{
    int got = 0;
    unsigned miss = missing_formats(v, m);
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(miss & (1u << f)))
            continue;
        mfs_cache_key k;
        mfs_err e;
        mfs_err_clear(&e);
        if (f != format && (mfs_views_key(v, man->deps, man->ndeps, f, fmi_model, &k, &e) < 0 ||
                            !recorded_view(man, &k, 1)))
            continue;
        int r = remote_view(v, man, fmi_model, f);
        got += r == 1;
        *bad |= r == 2;
    }
    return got;
}

/* After a conversion: the views it made (never failures) and the manifest
 * are queued for upload; the queue never waits.  over: an object of this
 * model was found bad on the server, so each of them is put over what the
 * server has (a bad manifest hides which of its views are bad too). */
static void remote_upload(const mfs_views *v, const model *m, unsigned need,
                          const mfs_cache_key *mk, int over)
{
    for (int f = 0; f < MFS_FMT_COUNT; f++) /* embedded ones go with the manifest */
        if ((need & (1u << f)) && m->fmt[f].known && m->fmt[f].ok && !m->fmt[f].embedded)
            mfs_remote_enqueue(v->h.remote, &m->fmt[f].key, 0, over);
    mfs_remote_enqueue(v->h.remote, mk, 1, over);
}

/* ---- tiers 2 and 3: the local cache, then a conversion ---- */

int mfs_views_shows_image(const mfs_views *v)
{
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((v->h.formats & (1u << f)) && mfs_format_get((mfs_format)f)->reads_image)
            return 1;
    return 0;
}

/* Each referenced file the conversion found missing, in the log: once a
 * model version (its conversion), not a read. */
static void log_missing(const mfs_views *v, const char *path, const mfs_cache_manifest *man)
{
    for (uint32_t i = 0; v->h.log && i < man->ndeps; i++)
        if (mfs_input_said(man->deps, man->ndeps, i)) {
            char msg[4200];
            mfs_input_warning(&man->deps[i], msg, sizeof msg);
            v->h.log(v->h.ctx, path, msg);
        }
}

/* Was the model at path replaced since `st` was taken (a save by rename,
 * or an edit)?  Then what was looked up or converted for it answers for
 * a file no longer there, and the caller starts again from the new one. */
static int model_moved(const mfs_views *v, const char *path, const struct stat *st)
{
    struct stat now;
    if (v->h.stat_path(v->h.ctx, path, MFS_VIEW_PATH_MODEL, &now) < 0)
        return 0; /* gone: the next hash says so */
    sig a = {st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim,
             st->st_uid, st->st_gid, st->st_mode, 0};
    sig b = {now.st_dev, now.st_ino, now.st_size, now.st_mtim, now.st_ctim,
             now.st_uid, now.st_gid, now.st_mode, 0};
    return !same_sig(&a, &b);
}

/* A model saved over while it is resolved is resolved again for the file
 * there now, up to this many times a request: each time took a new save,
 * so only an editor saving without pause for the whole request runs out. */
#define MOVED_TRIES 32

/* Brings the memo up to date, converting if `format` has no entry for the
 * current inputs (then every enabled view still missing is made by the same
 * import).  Views already cached are never remade for another's sake, so an
 * option that moves only .fmi leaves .gmf reads conversion-free.  Called
 * with m->lock held.  0 or -errno (err says why, if it can). */
static int refresh(const mfs_views *v, model *m, const char *fmi_model, int format, mfs_err *err)
{
    int converted = 0, moves = 0, bad = 0, leased = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        struct stat st;
        uint8_t hash[16];
        int hr = v->h.hash_model(v->h.ctx, m->path, &st, hash, err);
        if (hr < 0)
            return hr;
        mfs_cache_key mk;
        if (mfs_views_manifest_key(v, m->path, (uint64_t)st.st_size, hash, &mk, err) < 0)
            return -EIO;
        mfs_cache_manifest man;
        memset(&man, 0, sizeof man);
        int have = mfs_cache_manifest_load(v->h.cache, &mk, &man, err);
        /* another machine's manifest: its key is the model's content hash
         * and options, never its path on that machine */
        int got = have == 0 && v->h.remote ? mfs_remote_fetch(v->h.remote, &mk, 1) : 0;
        bad |= got == 2;
        /* the server lacks the model: before converting it, a lease
         * (remote_lease.h), so that machines starting together convert once */
        int absent = have == 0 && v->h.remote && got == 0;
        if (got == 1)
            have = mfs_cache_manifest_load(v->h.cache, &mk, &man, err);
        if (have == 1 && !mfs_views_shows_image(v))
            mfs_cache_manifest_drop_texture_inputs(&man);
        if (have == 1 && mfs_cache_manifest_current(v->h.cache, v->h.rootfd, &man, err) != 1) {
            mfs_cache_manifest_free(&man);
            if (model_moved(v, m->path, &st) && ++moves < MOVED_TRIES) {
                attempt--; /* the model's input did not match: it was saved over */
                continue;
            }
            have = 0;
        }
        unsigned need = v->h.formats;
        if (have == 1) {
            /* the manifest's keys were made with the options of its time:
             * recompute them for ours, then see which entries exist */
            int rc = memo_fill(v, m, &man, &mk, fmi_model, 0);
            if (rc == 0 && v->h.remote && (missing_formats(v, m) & (1u << format)) &&
                remote_views(v, m, &man, fmi_model, format, &bad))
                rc = memo_fill(v, m, &man, &mk, fmi_model, 0);
            mfs_cache_manifest_free(&man);
            if (rc == -EAGAIN)
                continue;
            if (rc < 0)
                return rc;
            need = missing_formats(v, m);
            if (!(need & (1u << format)))
                return 0;
        }
        memset(&man, 0, sizeof man);
        mfs_lease_outcome lease = MFS_LEASE_NONE;
        if (absent && !leased++) {
            lease = mfs_remote_lease(v->h.remote, &mk);
            if (lease == MFS_LEASE_ARRIVED) {
                attempt--; /* made elsewhere meanwhile: fetched, once */
                continue;
            }
        }
        if (!converted++) { /* one miss per request, however many tries */
            mfs_cache_note(v->h.cache, MFS_CACHE_VIEW_MISS);
            if (v->h.count_models)
                mfs_cache_note(v->h.cache, MFS_CACHE_MODEL_MISS);
            m->fresh[format] = 1;
        }
        mfs_cache_note(v->h.cache, MFS_CACHE_CONVERSION);
        int conv = v->h.convert(v->h.ctx, m->path, fmi_model, need, &man, err);
        if (conv < 0) {
            if (lease == MFS_LEASE_HELD)
                mfs_remote_lease_end(v->h.remote, &mk, 0);
            mfs_cache_manifest_free(&man);
            if (model_moved(v, m->path, &st) && ++moves < MOVED_TRIES) {
                mfs_err_clear(err); /* the run was for a file no longer there */
                attempt--;
                continue;
            }
            mfs_cache_note(v->h.cache, MFS_CACHE_CONVERSION_FAILURE);
            return -EIO;
        }
        if (!mfs_views_shows_image(v))
            mfs_cache_manifest_drop_texture_inputs(&man);
        int cur = mfs_cache_manifest_current(v->h.cache, v->h.rootfd, &man, err);
        /* the worker opened the model by its path itself: if that led to
         * other bytes than were hashed here (the model changed, or a folder
         * on its path was swapped for a link), its views are not this
         * path's */
        if (cur == 1 && (man.ndeps == 0 || man.deps[0].size != (uint64_t)st.st_size ||
                         memcmp(man.deps[0].hash, hash, 16) != 0))
            cur = 0;
        int rc = cur == 1 ? memo_fill(v, m, &man, &mk, fmi_model, 0) : -EAGAIN;
        if (rc == 0)
            log_missing(v, m->path, &man);
        mfs_cache_manifest_free(&man);
        if (lease == MFS_LEASE_HELD) /* freed once its manifest is sent, or now */
            mfs_remote_lease_end(v->h.remote, &mk, rc == 0);
        if (rc == 0 && v->h.remote)
            remote_upload(v, m, need, &mk, bad);
        if (rc == 0 && (conv == 1 || made_failure(v, m, need)))
            mfs_cache_note(v->h.cache, MFS_CACHE_CONVERSION_FAILURE);
        if (rc == 0 && !(missing_formats(v, m) & (1u << format)))
            return 0;
        if (rc == 0 && conv == 1)
            return -EIO; /* this view could not be stored (disk full...): err says why */
        if (rc < 0 && rc != -EAGAIN)
            return rc;
        /* an input changed while it was converting: go round again */
        if (model_moved(v, m->path, &st) && ++moves < MOVED_TRIES)
            attempt--;
    }
    return mfs_errf(err, "%s: inputs kept changing during conversion", m->path), -EIO;
}

/* ---- the two fronts ---- */

/* A failure that means the view is not there to show: the file holds no
 * mesh, or its settings' formats = leaves the view out. */
static int hidden_reason(const char *reason)
{
    return reason && (!strcmp(reason, MFS_SCENE_NO_MESH) || mfs_settings_not_shown(reason));
}

static void info_fill(const model *m, const fmt_memo *fm, mfs_view_info *info)
{
    info->size = fm->ok ? fm->size : 0;
    info->mtime = m->newest;
    info->key = fm->key;
    info->perm_known = 1;
    info->perm = m->perm.perm;
    info->uid = m->perm.uid;
    info->gid = m->perm.gid;
    info->no_views = !fm->ok && hidden_reason(fm->reason);
}

/* A remembered failure's text; "" for none. */
static mfs_view_outcome failed_model(const fmt_memo *fm, mfs_err *err)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s", fm->reason ? fm->reason : "");
    return MFS_VIEW_FAILED_MODEL;
}

mfs_view_outcome mfs_views_resolve(mfs_views *v, const char *path, const char *fmi_model,
                                   int format, mfs_view_mode mode, mfs_view_info *info,
                                   mfs_err *err)
{
    memset(info, 0, sizeof *info);
    info->hit.fd = -1;
    mfs_err_clear(err);
    model *m = get_model(v, path);
    if (!m) {
        info->errnum = ENOMEM;
        return MFS_VIEW_FAILED_MACHINE;
    }
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    mfs_view_outcome out = MFS_VIEW_FAILED_MACHINE;
    /* an entry evicted or removed (clear, trim, rm -rf) between the memo
     * and the open is made again: up to three times, then EIO */
    for (int tries = 0; tries < 3; tries++) {
        if (!memo_current(v, m, fmi_model) || !m->fmt[format].known) {
            rc = refresh(v, m, fmi_model, format, err);
            if (rc < 0)
                break;
        }
        fmt_memo *fm = &m->fmt[format];
        if (!fm->known) {
            rc = -EIO;
            break;
        }
        info_fill(m, fm, info);
        if (!fm->ok) {
            out = failed_model(fm, err);
            break;
        }
        out = MFS_VIEW_HIT;
        if (mode != MFS_VIEW_OPEN)
            break;
        int r = entry_open(v, fm->embedded ? &m->mk : NULL, &fm->key, &info->hit, err);
        if (r == 1 && info->hit.fd >= 0 && info->hit.length == fm->size) {
            info->same_as_last = m->served[format] &&
                                 !memcmp(&m->served_key[format], &fm->key, sizeof fm->key);
            m->served[format] = 1;
            m->served_key[format] = fm->key;
            if (m->fresh[format])
                m->fresh[format] = 0; /* the request that missed */
            else {
                mfs_cache_note(v->h.cache, MFS_CACHE_VIEW_HIT);
                if (v->h.count_models)
                    mfs_cache_note(v->h.cache, MFS_CACHE_MODEL_HIT);
            }
            break;
        }
        /* evicted or damaged since the memo was made: convert again */
        mfs_cache_hit_release(&info->hit);
        info->hit.fd = -1;
        m->valid = 0;
        rc = -EIO;
        out = MFS_VIEW_FAILED_MACHINE;
    }
    if (rc < 0) {
        out = MFS_VIEW_FAILED_MACHINE;
        info->errnum = -rc;
        /* EWOULDBLOCK: an input under a lease, which the host waits for
         * and asks again about, many times a second (src/fs/leasewait.h) */
        if (err->msg[0] && v->h.log && rc != -EWOULDBLOCK)
            v->h.log(v->h.ctx, path, err->msg);
    }
    pthread_mutex_unlock(&m->lock);
    put_model(v, m);
    return out;
}

/* The views the record knows not to be there (hidden_reason). */
static unsigned hidden_views(const model *m)
{
    unsigned mask = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if (m->fmt[f].known && !m->fmt[f].ok && hidden_reason(m->fmt[f].reason))
            mask |= 1u << f;
    return mask;
}

unsigned mfs_views_known_hidden(mfs_views *v, const char *path, const char *fmi_model)
{
    /* a peek: no record made, none moved in the LRU order */
    unsigned b = bucket_of(path);
    pthread_mutex_lock(&v->lock);
    model *m = v->bucket[b];
    while (m && strcmp(m->path, path))
        m = m->next;
    if (m)
        m->refs++;
    pthread_mutex_unlock(&v->lock);
    if (!m)
        return 0;
    unsigned mask = 0;
    if (pthread_mutex_trylock(&m->lock) == 0) {
        mask = m->valid ? hidden_views(m) : 0;
        if (mask && !memo_current(v, m, fmi_model))
            mask = 0;
        pthread_mutex_unlock(&m->lock);
    }
    put_model(v, m);
    return mask;
}

int mfs_views_missing(mfs_views *v, const char *path, const char *fmi_model, int format,
                      char *out, size_t n, mfs_err *err)
{
    mfs_view_info info;
    mfs_view_outcome o = mfs_views_resolve(v, path, fmi_model, format, MFS_VIEW_ATTR, &info, err);
    if (o == MFS_VIEW_FAILED_MACHINE)
        return -(info.errnum ? info.errnum : EIO);
    model *m = get_model(v, path);
    if (!m)
        return -ENOMEM;
    pthread_mutex_lock(&m->lock);
    size_t len = 0;
    mfs_dep *deps = m->valid ? calloc(m->ninputs ? m->ninputs : 1, sizeof *deps) : NULL;
    for (uint32_t i = 0; deps && i < m->ninputs; i++)
        deps[i] = (mfs_dep){.path = m->input_paths[i], .kind = m->input_kinds[i]};
    for (uint32_t i = 0; deps && i < m->ninputs; i++) {
        if (!mfs_input_said(deps, m->ninputs, i))
            continue;
        size_t at = len + (len ? 1 : 0); /* a line each */
        int k = at < n ? mfs_input_warning(&deps[i], out + at, n - at) : -1;
        if (k < 0 || (size_t)k >= n - at) {
            out[len] = '\0';
            break; /* what fits */
        }
        if (len)
            out[len] = '\n';
        len = at + (size_t)k;
    }
    int rc = m->valid && !deps ? -ENOMEM : (int)len;
    free(deps);
    pthread_mutex_unlock(&m->lock);
    put_model(v, m);
    return rc;
}

mfs_view_outcome mfs_views_known(mfs_views *v, const char *path, const char *fmi_model,
                                 int format, mfs_view_inputs inputs, struct stat *model_st,
                                 mfs_view_info *info, mfs_err *err)
{
    return mfs_views_known_hinted(v, path, fmi_model, format, inputs, model_st, NULL, info, err);
}

mfs_view_outcome mfs_views_known_hinted(mfs_views *v, const char *path, const char *fmi_model,
                                        int format, mfs_view_inputs inputs,
                                        struct stat *model_st, mfs_view_hint *hint,
                                        mfs_view_info *info, mfs_err *err)
{
    memset(info, 0, sizeof *info);
    info->hit.fd = -1;
    /* the model first: a model that is not there costs no record */
    info->model_cold = 1;
    if (inputs == MFS_VIEW_INPUTS_STAT &&
        v->h.stat_path(v->h.ctx, path, MFS_VIEW_PATH_MODEL, model_st) < 0)
        return MFS_VIEW_MISS;
    model *m = find_model(v, path, 0);
    if (!m) {
        /* no record: only the cache can know it, and only by the model's
         * hash in the stat index; without that, no record is made */
        uint8_t hash[16];
        if (!S_ISREG(model_st->st_mode) ||
            !mfs_cache_file_hash_known(v->h.cache, model_st, hash) || !(m = get_model(v, path)))
            return MFS_VIEW_MISS;
    }
    /* never wait: a held model is converting, and a listing must not */
    if (pthread_mutex_trylock(&m->lock) != 0) {
        put_model(v, m);
        return MFS_VIEW_MISS;
    }
    info->model_cold = 0;
    mfs_view_outcome out = MFS_VIEW_MISS;
    int current = inputs == MFS_VIEW_INPUTS_CHECKED
                      ? m->valid && !strcmp(m->fmi_model, fmi_model)
                      : memo_current(v, m, fmi_model);
    /* a fresh mount over a warm cache: what the cache knows is enough.  A
     * current memo already holds every entry the cache had for these
     * inputs (memo_fill peeks each format), so a view it lacks is not
     * looked for again: the resolve that follows finds or makes it. */
    if (!current) {
        int r = refresh_known(v, m, fmi_model, format, model_st, hint);
        current = r == 0;
        info->model_cold = r == 2;
    }
    const fmt_memo *fm = &m->fmt[format];
    if (current && fm->known) {
        info_fill(m, fm, info);
        out = fm->ok ? MFS_VIEW_HIT : failed_model(fm, err);
    }
    pthread_mutex_unlock(&m->lock);
    put_model(v, m);
    return out;
}

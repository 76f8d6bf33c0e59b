/* The memo's records (memo.h): a hash table of one record per model under
 * an LRU list, bounded in count and in bytes (docs/scale.md). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "memo.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/scene.h"
#include "meshfs/settings.h"
#include "meshfs/util.h"
#include "meshfs/views.h"

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
    if (m->by_wit)
        n += (size_t)m->ninputs + 1 + a;
    n += (size_t)m->nwits * (sizeof(char *) + sizeof(sig)) + (m->nwits ? 2 * a : 0);
    for (uint32_t i = 0; i < m->nwits; i++)
        n += strlen(m->wit_paths[i]) + 1 + a;
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
void mfs_memo_charge(const mfs_views *v, model *m)
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

void mfs_memo_clear(model *m)
{
    for (uint32_t i = 0; i < m->ninputs; i++)
        free(m->input_paths[i]);
    free(m->input_paths);
    free(m->input_sigs);
    free(m->input_kinds);
    free(m->by_wit);
    for (uint32_t i = 0; i < m->nwits; i++)
        free(m->wit_paths[i]);
    free(m->wit_paths);
    free(m->wit_sigs);
    free(m->fmi_model);
    m->input_paths = NULL;
    m->input_sigs = NULL;
    m->input_kinds = NULL;
    m->by_wit = NULL;
    m->wit_paths = NULL;
    m->wit_sigs = NULL;
    m->nwits = 0;
    m->wit_pending = 0;
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
            mfs_memo_clear(m);
            pthread_mutex_destroy(&m->lock);
            free(m->path);
            free(m);
        }
    pthread_mutex_destroy(&v->lock);
    free(v);
}

unsigned mfs_memo_bucket(const char *path)
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
            model **pp = &v->bucket[mfs_memo_bucket(m->path)];
            while (*pp != m)
                pp = &(*pp)->next;
            *pp = m->next;
            lru_unlink(v, m);
            mfs_memo_clear(m);
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
model *mfs_memo_find(mfs_views *v, const char *path, int create)
{
    unsigned b = mfs_memo_bucket(path);
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
            mfs_memo_charge(v, m);
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

model *mfs_memo_get(mfs_views *v, const char *path)
{
    return mfs_memo_find(v, path, 1);
}

void mfs_memo_put(mfs_views *v, model *m)
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

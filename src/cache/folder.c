/* Folder records (docs/cache.md, "Folder records"): a copy of the manifest
 * table of every model a listing of one folder knew, in one file, so the
 * next listing of that folder opens one file instead of one a model.
 *
 * A record is a hint, never the truth: each copy is used only when the
 * model it names still hashes as its first dependency says (the stat
 * index), and then only as the manifest it copies would be (its inputs are
 * checked the same way).  A stale or foreign copy is a miss, so a record
 * needs no invalidation, and two mounts of different trees with the same
 * folder path only miss each other's copies.
 *
 * Payload (kind 6, under an .m name), little-endian:
 *   u32 count, then per model, in byte order of the names:
 *     u32 name length, name, u32 table length, the model entry's table
 *     (manifest.c's, without the embedded bytes) */
#include <stdlib.h>
#include <string.h>

#include "cache_int.h"
#include "meshfs/util.h"

/* A record is read whole (mfs_cache_read_small refuses more than 64 MiB):
 * a folder whose record would pass this is not given one. */
#define FOLDER_MAX (32u << 20)

typedef struct fentry {
    const char *name;
    uint32_t name_len;
    const uint8_t *table;
    uint32_t table_len;
} fentry;

struct mfs_cache_folder {
    uint8_t *buf;
    fentry *e;
    size_t n;
};

typedef struct bentry {
    char *name;
    uint8_t *table;
    size_t len;
    size_t seq; /* the first added of a name wins */
} bentry;

struct mfs_cache_folder_builder {
    bentry *v;
    size_t n, cap;
    uint64_t bytes;
    int overflow; /* past FOLDER_MAX: nothing more is kept, nothing stored */
};

int mfs_cache_folder_key(const char *dir, const char *options, const char *version,
                         mfs_cache_key *out, mfs_err *err)
{
    mfs_cache_keyb kb;
    /* v2: the manifests copied record absent inputs (v1 copies lack them);
     * v3: they are manifests of the v3 layout (src/cache/key.c) */
    if (mfs_cache_key_init(&kb, "meshfs.folder.v3", err) < 0)
        return -1;
    mfs_cache_key_add_str(&kb, dir);
    mfs_cache_key_add_str(&kb, options);
    mfs_cache_key_add_str(&kb, version);
    mfs_cache_key_final(&kb, out);
    return 0;
}

static int cmp_len(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    return r ? r : al < bl ? -1 : al > bl;
}

/* The index over a payload: 0, or -1 if it does not parse or is not in
 * order. */
static int parse(mfs_cache_folder *f, const uint8_t *p, uint64_t n)
{
    if (n < 4)
        return -1;
    uint32_t count = mfs_ld_u32(p);
    uint64_t pos = 4;
    if (count > (n - pos) / 8)
        return -1;
    f->e = calloc(count ? count : 1, sizeof *f->e);
    if (!f->e)
        return -1;
    for (; f->n < count; f->n++) {
        fentry *e = &f->e[f->n];
        if (n - pos < 4 || (e->name_len = mfs_ld_u32(p + pos)) > n - pos - 4)
            return -1;
        e->name = (const char *)p + pos + 4;
        pos += 4 + e->name_len;
        if (n - pos < 4 || (e->table_len = mfs_ld_u32(p + pos)) > n - pos - 4)
            return -1;
        e->table = p + pos + 4;
        pos += 4 + e->table_len;
        if (!e->name_len || memchr(e->name, '\0', e->name_len))
            return -1;
        if (f->n && cmp_len(f->e[f->n - 1].name, f->e[f->n - 1].name_len, e->name, e->name_len) >= 0)
            return -1;
    }
    return pos == n ? 0 : -1;
}

int mfs_cache_folder_load(mfs_cache *c, const mfs_cache_key *fk, mfs_cache_folder **out,
                          mfs_err *err)
{
    *out = NULL;
    uint8_t *p;
    uint64_t n;
    int kind;
    int r = mfs_cache_read_small(c, fk, MFS_CACHE_USE, &p, &n, &kind, NULL, err);
    if (r <= 0)
        return r;
    mfs_cache_folder *f = calloc(1, sizeof *f);
    if (!f || kind != MFS_KIND_FOLDER || parse(f, p, n) < 0) {
        /* a sound file that is not a record of ours: a miss (the checksum
         * held, so it is no damage to report) */
        if (f)
            free(f->e);
        free(f);
        free(p);
        return 0;
    }
    f->buf = p;
    *out = f;
    return 1;
}

void mfs_cache_folder_free(mfs_cache_folder *f)
{
    if (!f)
        return;
    free(f->e);
    free(f->buf);
    free(f);
}

size_t mfs_cache_folder_count(const mfs_cache_folder *f)
{
    return f ? f->n : 0;
}

static const fentry *find(const mfs_cache_folder *f, const char *name, size_t *at)
{
    size_t nl = strlen(name), lo = 0, hi = f ? f->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_len(f->e[mid].name, f->e[mid].name_len, name, nl);
        if (c == 0) {
            if (at)
                *at = mid;
            return &f->e[mid];
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int mfs_cache_folder_find(const mfs_cache_folder *f, const char *name, size_t *at,
                          mfs_cache_manifest *out)
{
    memset(out, 0, sizeof *out);
    const fentry *e = find(f, name, at);
    uint64_t used;
    if (!e || mfs_manifest_get_table(e->table, e->table_len, &used, out) < 0)
        return 0;
    if (used != e->table_len) {
        mfs_cache_manifest_free(out);
        return 0;
    }
    return 1;
}

/* ---- building ---- */

mfs_cache_folder_builder *mfs_cache_folder_builder_new(void)
{
    return calloc(1, sizeof(mfs_cache_folder_builder));
}

void mfs_cache_folder_builder_free(mfs_cache_folder_builder *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        free(b->v[i].name);
        free(b->v[i].table);
    }
    free(b->v);
    free(b);
}

size_t mfs_cache_folder_builder_count(const mfs_cache_folder_builder *b)
{
    return b ? b->n : 0;
}

/* Takes table (malloc'd) over, even when it keeps nothing: a record too
 * big to be read whole is never stored, so nor is it built (a listing of
 * a huge folder would otherwise hold it all in memory first). */
static int add_raw(mfs_cache_folder_builder *b, const char *name, size_t nl, uint8_t *table,
                   size_t len)
{
    if (b->overflow || b->bytes + 8 + nl + len > FOLDER_MAX) {
        b->overflow = 1;
        free(table);
        return 0;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        bentry *v = realloc(b->v, cap * sizeof *v);
        if (!v) {
            free(table);
            return -1;
        }
        b->v = v;
        b->cap = cap;
    }
    char *nm = malloc(nl + 1);
    if (!nm) {
        free(table);
        return -1;
    }
    memcpy(nm, name, nl);
    nm[nl] = '\0';
    b->v[b->n] = (bentry){nm, table, len, b->n};
    b->n++;
    b->bytes += 8 + nl + len;
    return 0;
}

int mfs_cache_folder_add(mfs_cache_folder_builder *b, const char *name,
                         const mfs_cache_manifest *m)
{
    mfs_sink s;
    mfs_sink_init_mem(&s);
    mfs_manifest_put_table(&s, m);
    if (mfs_sink_finish(&s) != 0) {
        mfs_sink_free(&s);
        return -1;
    }
    size_t len;
    uint8_t *t = mfs_sink_take(&s, &len);
    mfs_sink_free(&s);
    if (!t)
        return -1;
    return add_raw(b, name, strlen(name), t, len);
}

int mfs_cache_folder_keep(mfs_cache_folder_builder *b, const mfs_cache_folder *f, size_t at)
{
    if (!f || at >= f->n)
        return -1;
    const fentry *e = &f->e[at];
    uint8_t *t = malloc(e->table_len ? e->table_len : 1);
    if (!t)
        return -1;
    memcpy(t, e->table, e->table_len);
    return add_raw(b, e->name, e->name_len, t, e->table_len);
}

static int cmp_bentry(const void *a, const void *b)
{
    const bentry *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : x->seq < y->seq ? -1 : x->seq > y->seq;
}

int mfs_cache_folder_store(mfs_cache *c, const mfs_cache_key *fk, mfs_cache_folder_builder *b,
                           mfs_err *err)
{
    if (b->overflow)
        return 0; /* too big to be read whole: listings read the model entries */
    qsort(b->v, b->n, sizeof *b->v, cmp_bentry);
    mfs_sink s;
    mfs_sink_init_mem(&s);
    size_t count = 0;
    for (size_t i = 0; i < b->n; i++)
        count += !i || strcmp(b->v[i - 1].name, b->v[i].name);
    mfs_put_u32(&s, (uint32_t)count);
    for (size_t i = 0; i < b->n; i++) {
        if (i && !strcmp(b->v[i - 1].name, b->v[i].name))
            continue;
        size_t nl = strlen(b->v[i].name);
        mfs_put_u32(&s, (uint32_t)nl);
        mfs_put(&s, b->v[i].name, nl);
        mfs_put_u32(&s, (uint32_t)b->v[i].len);
        mfs_put(&s, b->v[i].table, b->v[i].len);
    }
    if (mfs_sink_finish(&s) != 0) {
        mfs_sink_free(&s);
        return mfs_errf(err, "cache: folder record: out of memory");
    }
    size_t n;
    uint8_t *buf = mfs_sink_take(&s, &n);
    mfs_sink_free(&s);
    int r = mfs_cache_store_kind(c, fk, MFS_KIND_FOLDER, buf, n, NULL, err);
    free(buf);
    return r < 0 ? mfs_err_prefix(err, "folder record") : 1;
}

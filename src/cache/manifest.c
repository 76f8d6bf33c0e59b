/* Manifests and model entries: what importing a model found, so a warm
 * lookup skips import, and the model's small views beside it.
 *
 * A model's full input list (its .mtl, .bin, textures) is known only after
 * importing it, yet the view keys are built from that list.  The manifest,
 * keyed by the model alone (path, content hash, options, version), records
 * the list and the view keys; if every listed file still hashes the same,
 * the keys are right without importing again.
 *
 * Written as a model entry (kind 5): the manifest, then the bytes of every
 * view small enough to embed, so a small model costs one file, one inode
 * and one block instead of one per view (docs/cache.md, "Small views inside the model entry").
 * Payload, little-endian:
 *   u32 ndeps, then per dep:  u32 path_len, path, u64 size, 16-byte hash
 *     (size: its low 56 bits; the top byte, the dep's kind: 0 a file read,
 *     1 a path tried and absent, 2 a folder searched, 3 absent and a file
 *     the model references, 4 unreadable (include/meshfs/import.h); its
 *     bit 7 set: the texture search's input, mfs_dep.texture).
 *     A meshfs from before kinds reads an absent dep as a file of 2^56 bytes
 *     or more, which never matches: a conversion, never a wrong answer; and
 *     the manifest key's domain moved to v2, so neither finds the other's.)
 *   u32 nviews, then per view: u32 name_len, name, 16-byte key,
 *                              u32 flags (bit 0: embedded), u64 offset, u64 length
 *   the embedded views' bytes, each at its offset (from the payload's start,
 *   which is the file's)
 *   and, if the conversion's wall time is known, 16 bytes after the last
 *   embedded view: "mfsconv1", u64 ms (a meshfs from before reads the table
 *   and the views at their offsets, so it ignores them)
 * Kind 3, the manifest of an older meshfs (views without flags, offset or
 * length: every view in its own entry file), is still read. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache_int.h"
#include "meshfs/import.h"
#include "meshfs/util.h"

/* ---- encoding --------------------------------------------------------- */

static void put_u64(mfs_sink *s, uint64_t v)
{
    mfs_put_u32(s, (uint32_t)v);
    mfs_put_u32(s, (uint32_t)(v >> 32));
}

static void put_name(mfs_sink *s, const char *str)
{
    size_t n = str ? strlen(str) : 0;
    mfs_put_u32(s, (uint32_t)n);
    mfs_put(s, str ? str : "", n);
}

#define SIZE_MASK ((UINT64_C(1) << 56) - 1)
#define CONV_MAGIC "mfsconv1" /* the conversion's wall time, after the views */
#define FLAG_EMBEDDED 1u
#define FLAG_SIZED 2u /* an entry file of its own, of the length given */
/* Views a model entry keeps at most, and bytes embedded at most, counting
 * those kept from an earlier run (store): a bound on what one load reads. */
#define MAX_VIEWS 64
#define MAX_EMBEDDED (16u * MFS_CACHE_EMBED_MAX)

static uint64_t name_len(const char *s)
{
    return 4 + (s ? strlen(s) : 0);
}

/* The bytes before the first embedded view. */
static uint64_t table_size(const mfs_cache_manifest *m)
{
    uint64_t n = 8;
    for (uint32_t i = 0; i < m->ndeps; i++)
        n += name_len(m->deps[i].path) + 8 + 16;
    for (uint32_t i = 0; i < m->nviews; i++)
        n += name_len(m->views[i].format) + 16 + 4 + 8 + 8;
    return n;
}

void mfs_manifest_put_table(mfs_sink *s, const mfs_cache_manifest *m)
{
    mfs_put_u32(s, m->ndeps);
    for (uint32_t i = 0; i < m->ndeps; i++) {
        put_name(s, m->deps[i].path);
        uint64_t kind = m->deps[i].kind | (m->deps[i].texture ? 0x80u : 0);
        put_u64(s, (m->deps[i].size & SIZE_MASK) | (kind << 56));
        mfs_put(s, m->deps[i].hash, 16);
    }
    mfs_put_u32(s, m->nviews);
    for (uint32_t i = 0; i < m->nviews; i++) {
        const mfs_cache_view *v = &m->views[i];
        put_name(s, v->format);
        mfs_put(s, v->key.b, 16);
        mfs_put_u32(s, v->embedded ? FLAG_EMBEDDED : v->sized ? FLAG_SIZED : 0);
        put_u64(s, v->embedded ? v->offset : 0);
        put_u64(s, v->embedded || v->sized ? v->length : 0);
    }
}

/* Lays the embedded views out after the table (their offsets), then
 * writes table and bytes. */
static void encode(mfs_sink *s, mfs_cache_manifest *m)
{
    uint64_t at = table_size(m);
    for (uint32_t i = 0; i < m->nviews; i++) {
        mfs_cache_view *v = &m->views[i];
        v->embedded = v->bytes != NULL;
        v->offset = v->embedded ? at : 0;
        at += v->embedded ? v->length : 0;
    }
    mfs_manifest_put_table(s, m);
    for (uint32_t i = 0; i < m->nviews; i++)
        if (m->views[i].embedded)
            mfs_put(s, m->views[i].bytes, (size_t)m->views[i].length);
    if (m->convert_ms) {
        mfs_put(s, CONV_MAGIC, 8);
        put_u64(s, m->convert_ms);
    }
}

static int write_entry(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_manifest *m,
                       mfs_cache_hit *hit, mfs_err *err)
{
    mfs_sink s;
    mfs_sink_init_mem(&s);
    encode(&s, m);
    if (mfs_sink_finish(&s) != 0) {
        mfs_sink_free(&s);
        return mfs_errf(err, "cache: manifest: out of memory");
    }
    size_t n;
    uint8_t *buf = mfs_sink_take(&s, &n);
    int r = mfs_cache_store_kind(c, mk, MFS_KIND_MODEL, buf, n, hit, err);
    free(buf);
    mfs_sink_free(&s);
    return r < 0 ? mfs_err_prefix(err, "manifest") : 0;
}

/* ---- decoding --------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    uint64_t n, pos;
    int bad;
} reader;

static const uint8_t *take(reader *r, uint64_t n)
{
    if (r->bad || n > r->n - r->pos) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p + r->pos;
    r->pos += n;
    return p;
}

static uint32_t get_u32(reader *r)
{
    const uint8_t *p = take(r, 4);
    return p ? mfs_ld_u32(p) : 0;
}

static uint64_t get_u64(reader *r)
{
    const uint8_t *p = take(r, 8);
    return p ? mfs_ld_u32(p) | ((uint64_t)mfs_ld_u32(p + 4) << 32) : 0;
}

static char *get_name(reader *r)
{
    uint32_t n = get_u32(r);
    const uint8_t *p = take(r, n);
    if (!p || memchr(p, '\0', n))
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* Counts are checked against the bytes left, so a bad count cannot make
 * us allocate more than the manifest could describe.  kind: MFS_KIND_MODEL
 * or MFS_KIND_MANIFEST (no flags, offsets or lengths, nothing after).
 * payload: the table is a model entry's (its embedded views' offsets must
 * lie after it, inside r), not a copy elsewhere (a folder record's). */
static int decode(reader *r, int kind, int payload, mfs_cache_manifest *m)
{
    uint32_t nd = get_u32(r);
    if (nd > (r->n - r->pos) / 28) /* 4 + 8 + 16 bytes per dep at least */
        return -1;
    m->deps = calloc(nd ? nd : 1, sizeof *m->deps);
    if (!m->deps)
        return -1;
    for (; m->ndeps < nd; m->ndeps++) {
        mfs_dep *d = &m->deps[m->ndeps];
        d->path = get_name(r);
        uint64_t size = get_u64(r);
        d->size = size & SIZE_MASK;
        d->kind = (uint8_t)(size >> 56) & 0x7f;
        d->texture = (uint8_t)(size >> 63);
        const uint8_t *h = take(r, 16);
        if (!d->path || !h || d->kind > MFS_DEP_UNREADABLE)
            return -1;
        memcpy(d->hash, h, 16);
    }
    int model = kind == MFS_KIND_MODEL;
    uint32_t nv = get_u32(r);
    if (r->bad || nv > (r->n - r->pos) / (model ? 40 : 20))
        return -1;
    m->views = calloc(nv ? nv : 1, sizeof *m->views);
    if (!m->views)
        return -1;
    for (; m->nviews < nv; m->nviews++) {
        mfs_cache_view *v = &m->views[m->nviews];
        v->format = get_name(r);
        const uint8_t *k = take(r, 16);
        if (!v->format || !k)
            return -1;
        memcpy(v->key.b, k, 16);
        if (!model)
            continue;
        uint32_t flags = get_u32(r);
        v->offset = get_u64(r);
        v->length = get_u64(r);
        v->embedded = (flags & FLAG_EMBEDDED) != 0;
        v->sized = (flags & FLAG_SIZED) != 0;
        if ((flags & ~(FLAG_EMBEDDED | FLAG_SIZED)) || (v->embedded && v->sized))
            return -1;
    }
    if (r->bad)
        return -1;
    /* the embedded bytes lie after the table, inside the payload */
    uint64_t end = r->pos;
    for (uint32_t i = 0; payload && i < m->nviews; i++) {
        const mfs_cache_view *v = &m->views[i];
        if (v->embedded && (v->offset < r->pos || v->offset > r->n || v->length > r->n - v->offset))
            return -1;
        if (v->embedded && v->offset + v->length > end)
            end = v->offset + v->length;
    }
    /* exactly the 16 bytes after the last view: never a view's own bytes */
    if (payload && model && r->n - end == 16 && !memcmp(r->p + end, CONV_MAGIC, 8))
        m->convert_ms = mfs_ld_u32(r->p + end + 8) | ((uint64_t)mfs_ld_u32(r->p + end + 12) << 32);
    return model || r->pos == r->n ? 0 : -1;
}

int mfs_manifest_get_table(const uint8_t *p, uint64_t n, uint64_t *used, mfs_cache_manifest *out)
{
    memset(out, 0, sizeof *out);
    reader rd = {p, n, 0, 0};
    if (decode(&rd, MFS_KIND_MODEL, 0, out) < 0) {
        mfs_cache_manifest_free(out);
        return -1;
    }
    *used = rd.pos;
    return 0;
}

/* The entry under mk read whole, checked and decoded: 1, 0 none, -1 error.
 * buf (may be NULL) keeps the payload; fd (may be NULL) the open file. */
static int read_entry(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_use use,
                      mfs_cache_manifest *out, uint8_t **buf, int *fd, mfs_err *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *p;
    uint64_t n;
    int kind;
    int r = mfs_cache_read_small(c, mk, use, &p, &n, &kind, fd, err);
    if (r <= 0)
        return r;
    reader rd = {p, n, 0, 0};
    if (decode(&rd, kind, 1, out) < 0) {
        /* The checksum held, so this is a writer bug or memory exhaustion,
         * not disk damage: report it rather than silently missing. */
        mfs_cache_manifest_free(out);
        free(p);
        if (fd && *fd >= 0)
            close(*fd);
        return mfs_errf(err, "manifest: undecodable payload (or out of memory)");
    }
    if (buf)
        *buf = p;
    else
        free(p);
    return 1;
}

static int load(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_use use,
                mfs_cache_manifest *out, mfs_err *err)
{
    int r = read_entry(c, mk, use, out, NULL, NULL, err);
    if (r <= 0) {
        MFS_CACHE_STAT_ADD(c, manifest_misses, 1);
        return r < 0 ? mfs_err_prefix(err, "manifest") : 0;
    }
    MFS_CACHE_STAT_ADD(c, manifest_hits, 1);
    return 1;
}

int mfs_cache_manifest_load(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_manifest *out,
                            mfs_err *err)
{
    return load(c, mk, MFS_CACHE_USE, out, err);
}

int mfs_cache_manifest_peek(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_manifest *out,
                            mfs_err *err)
{
    return load(c, mk, MFS_CACHE_LOOK, out, err);
}

/* ---- storing, keeping what the entry held ----------------------------- */

static int same_deps(const mfs_cache_manifest *a, const mfs_cache_manifest *b)
{
    if (a->ndeps != b->ndeps)
        return 0;
    for (uint32_t i = 0; i < a->ndeps; i++)
        if (strcmp(a->deps[i].path, b->deps[i].path) || a->deps[i].size != b->deps[i].size ||
            a->deps[i].kind != b->deps[i].kind || a->deps[i].texture != b->deps[i].texture ||
            memcmp(a->deps[i].hash, b->deps[i].hash, 16))
            return 0;
    return 1;
}

static int has_key(const mfs_cache_manifest *m, uint32_t n, const mfs_cache_key *k)
{
    for (uint32_t i = 0; i < n; i++)
        if (!memcmp(m->views[i].key.b, k->b, 16))
            return 1;
    return 0;
}

int mfs_cache_manifest_store(mfs_cache *c, const mfs_cache_key *mk, mfs_cache_manifest *m,
                             mfs_cache_hit *hit, mfs_err *err)
{
    /* What the entry under mk holds for the same inputs and m does not
     * name stays: a run that made only the missing views (the others were
     * cached) must not drop those, and two option sets sharing a cache
     * keep both sets.  Two writers at once may still lose one's extra
     * views (the last rename wins): that costs a conversion, never bytes. */
    mfs_cache_manifest old, all = *m;
    uint8_t *oldbuf = NULL;
    memset(&old, 0, sizeof old);
    mfs_err ignore;
    mfs_err_clear(&ignore);
    uint64_t embedded = 0;
    for (uint32_t i = 0; i < m->nviews; i++)
        embedded += m->views[i].bytes ? m->views[i].length : 0;
    if (read_entry(c, mk, MFS_CACHE_LOOK, &old, &oldbuf, NULL, &ignore) == 1 &&
        same_deps(&old, m) && old.nviews) {
        all.views = calloc((size_t)m->nviews + old.nviews, sizeof *all.views);
        if (!all.views) {
            all = *m;
        } else {
            memcpy(all.views, m->views, m->nviews * sizeof *m->views);
            for (uint32_t i = 0; i < old.nviews && all.nviews < MAX_VIEWS; i++) {
                mfs_cache_view *v = &old.views[i];
                if (has_key(&all, all.nviews, &v->key) ||
                    (v->embedded && embedded + v->length > MAX_EMBEDDED))
                    continue;
                all.views[all.nviews] = *v;
                all.views[all.nviews].bytes = v->embedded ? oldbuf + v->offset : NULL;
                embedded += v->embedded ? v->length : 0;
                all.nviews++;
            }
        }
    }
    int r = write_entry(c, mk, &all, hit, err);
    if (all.views != m->views) {
        for (uint32_t i = 0; i < m->nviews; i++) /* the offsets given */
            m->views[i] = all.views[i];
        free(all.views);
    }
    mfs_cache_manifest_free(&old);
    free(oldbuf);
    return r;
}

/* ---- a view inside a model entry -------------------------------------- */

static int find_in(mfs_cache *c, const mfs_cache_key *mk, const mfs_cache_key *k,
                   mfs_cache_use use, mfs_cache_hit *hit, mfs_err *err)
{
    *hit = (mfs_cache_hit){.fd = -1};
    mfs_cache_manifest m;
    int fd = -1;
    int r = read_entry(c, mk, use, &m, NULL, use == MFS_CACHE_USE ? &fd : NULL, err);
    if (r <= 0)
        return r;
    r = 0;
    for (uint32_t i = 0; i < m.nviews; i++)
        if (m.views[i].embedded && !memcmp(m.views[i].key.b, k->b, 16)) {
            *hit = (mfs_cache_hit){.fd = fd, .offset = m.views[i].offset,
                                   .length = m.views[i].length};
            fd = -1;
            r = 1;
            break;
        }
    if (fd >= 0)
        close(fd);
    mfs_cache_manifest_free(&m);
    return r;
}

int mfs_cache_lookup_in(mfs_cache *c, const mfs_cache_key *mk, const mfs_cache_key *k,
                        mfs_cache_hit *hit, mfs_err *err)
{
    int r = find_in(c, mk, k, MFS_CACHE_USE, hit, err);
    if (r == 1)
        MFS_CACHE_STAT_ADD(c, hits, 1);
    else
        MFS_CACHE_STAT_ADD(c, misses, 1);
    return r;
}

int mfs_cache_peek_in(mfs_cache *c, const mfs_cache_key *mk, const mfs_cache_key *k,
                      mfs_cache_hit *hit, mfs_err *err)
{
    return find_in(c, mk, k, MFS_CACHE_LOOK, hit, err);
}

void mfs_cache_manifest_free(mfs_cache_manifest *m)
{
    for (uint32_t i = 0; i < m->ndeps; i++)
        free(m->deps[i].path);
    for (uint32_t i = 0; i < m->nviews; i++)
        free(m->views[i].format);
    free(m->deps);
    free(m->views);
    memset(m, 0, sizeof *m);
}

void mfs_cache_manifest_drop_texture_inputs(mfs_cache_manifest *m)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->ndeps; i++) {
        if (m->deps[i].texture)
            free(m->deps[i].path);
        else
            m->deps[k++] = m->deps[i];
    }
    m->ndeps = k;
}

const mfs_cache_key *mfs_cache_manifest_find(const mfs_cache_manifest *m, const char *format)
{
    for (uint32_t i = 0; i < m->nviews; i++)
        if (strcmp(m->views[i].format, format) == 0)
            return &m->views[i].key;
    return NULL;
}

/* ---- checking --------------------------------------------------------- */

/* Dep paths come from the confined importer, but the manifest is data on
 * disk: refuse anything that could leave the root rather than trust it. */
static int path_ok(const char *p)
{
    if (!p[0] || p[0] == '/')
        return 0;
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        s += n + (e ? 1 : 0);
    }
    return 1;
}

/* Resolved as the importer resolves it (src/import/iofs.c): a symlink
 * swapped in since to point out of the root reads as a vanished dep.
 * O_PATH when only its stat is wanted: nothing of the file is opened. */
static int open_beneath(int rootfd, const char *rel, int path_only)
{
    struct open_how how = {
        .flags = path_only ? O_PATH | O_CLOEXEC : O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) /* kernel < 5.6 */
        fd = openat(rootfd, rel, (int)how.flags);
    return fd;
}

/* 1 same bytes, 0 changed or gone, -1 error. */
/* hash_ok: 0 answers from the stat index only (an unrecorded file is 0) */
static int dep_current(mfs_cache *c, int rootfd, const mfs_dep *d, int hash_ok, mfs_err *err)
{
    if (!path_ok(d->path))
        return 0;
    if (d->kind != MFS_DEP_FILE) { /* absent, or a search: no bytes to hash */
        int r = mfs_input_holds(rootfd, d);
        return r < 0 ? mfs_errf(err, "%s: %s", d->path, strerror(errno)) : r;
    }
    int fd = open_beneath(rootfd, d->path, !hash_ok);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV
                   ? 0
                   : mfs_errf(err, "%s: %s", d->path, strerror(errno));
    struct stat st;
    uint8_t h[16];
    int r;
    if (fstat(fd, &st) < 0)
        r = mfs_errf(err, "%s: %s", d->path, strerror(errno));
    else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != d->size)
        r = 0; /* the size alone settles it: no hashing */
    else if (!hash_ok)
        r = mfs_cache_file_hash_known(c, &st, h) && memcmp(h, d->hash, 16) == 0;
    else if (mfs_cache_file_hash(c, fd, &st, h, err) < 0)
        r = -1;
    else
        r = memcmp(h, d->hash, 16) == 0;
    close(fd);
    return r;
}

static int deps_current(mfs_cache *c, int rootfd, const mfs_cache_manifest *m, int hash_ok,
                        mfs_err *err)
{
    for (uint32_t i = 0; i < m->ndeps; i++) {
        int r = dep_current(c, rootfd, &m->deps[i], hash_ok, err);
        if (r <= 0)
            return r < 0 ? mfs_err_prefix(err, "manifest check") : 0;
    }
    return 1;
}

int mfs_cache_manifest_current(mfs_cache *c, int rootfd, const mfs_cache_manifest *m,
                               mfs_err *err)
{
    return deps_current(c, rootfd, m, 1, err);
}

int mfs_cache_dep_current(mfs_cache *c, int rootfd, const mfs_dep *d, mfs_err *err)
{
    return dep_current(c, rootfd, d, 1, err);
}

int mfs_cache_manifest_known(mfs_cache *c, int rootfd, const mfs_cache_manifest *m,
                             mfs_err *err)
{
    return deps_current(c, rootfd, m, 0, err);
}

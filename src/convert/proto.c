/* The worker's report on the wire.
 *
 * The parent decodes bytes produced by a process that has just parsed a
 * hostile file, so the decoder trusts nothing: every length is checked
 * against the bytes left and against fixed caps before it is used. */
#include <stdlib.h>
#include <string.h>

#include "meshfs/convert.h"
#include "meshfs/util.h"
#include "meshfs/worker.h"

#define MAX_DEPS 65536
#define MAX_PATH 4096

void mfs_deps_free(mfs_deps *d)
{
    for (uint32_t i = 0; i < d->n; i++)
        free(d->v[i].path);
    free(d->v);
    memset(d, 0, sizeof *d);
}

void mfs_report_free(mfs_report *r)
{
    mfs_deps_free(&r->deps);
}

static void put_text(mfs_sink *s, const char *t)
{
    size_t n = strnlen(t, MFS_ERR_MAX - 1);
    mfs_put_u32(s, (uint32_t)n);
    mfs_put(s, t, n);
}

static void put_u64(mfs_sink *s, uint64_t v)
{
    mfs_put_u32(s, (uint32_t)v);
    mfs_put_u32(s, (uint32_t)(v >> 32));
}

int mfs_report_encode(const mfs_report *r, uint8_t **buf, size_t *len)
{
    mfs_sink s;
    mfs_sink_init_mem(&s);
    mfs_put_u32(&s, MFS_PROTO_MAGIC);
    mfs_put_u32(&s, MFS_PROTO_VERSION);
    mfs_put_u32(&s, 0); /* total length, patched below */
    /* status: bit 0 import ok, bit 1 the model's own path could not be
     * opened, bit 2 a failure not to remember (mfs_deps.unkeyed) */
    mfs_put_u8(&s, (uint8_t)((r->ok != 0) | (r->deps.model_unopened ? 2 : 0) | (r->deps.unkeyed ? 4 : 0)));
    put_text(&s, r->error);
    put_text(&s, r->route);
    put_text(&s, r->repairs);
    mfs_put_u32(&s, r->deps.n);
    for (uint32_t i = 0; i < r->deps.n; i++) {
        const mfs_dep *d = &r->deps.v[i];
        size_t n = strnlen(d->path, MAX_PATH);
        mfs_put_u32(&s, (uint32_t)n);
        mfs_put(&s, d->path, n);
        put_u64(&s, d->size);
        mfs_put(&s, d->hash, 16);
        mfs_put_u8(&s, (uint8_t)(d->kind | (d->texture ? 0x80 : 0))); /* bit 7: texture */
    }
    const mfs_stats *st = &r->stats;
    const uint32_t counts[5] = {st->meshes, st->nodes, st->bones, st->animations, st->materials};
    for (int i = 0; i < 5; i++)
        mfs_put_u32(&s, counts[i]);
    put_u64(&s, st->vertices);
    put_u64(&s, st->triangles);
    put_u64(&s, st->faces);
    put_u64(&s, st->placed_triangles);
    put_u64(&s, st->placed_faces);
    for (int i = 0; i < 3; i++)
        mfs_put_f32(&s, st->min[i]);
    for (int i = 0; i < 3; i++)
        mfs_put_f32(&s, st->max[i]);
    mfs_put_u32(&s, r->formats & MFS_FMT_ALL);
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(r->formats & (1u << f)))
            continue;
        mfs_put_u8(&s, (uint8_t)((r->fmt[f].ok != 0) | (r->fmt[f].transient ? 2 : 0)));
        put_u64(&s, r->fmt[f].size);
        put_text(&s, r->fmt[f].error);
        put_text(&s, r->fmt[f].note);
    }
    if (s.err) {
        mfs_sink_free(&s);
        return -1;
    }
    *buf = mfs_sink_take(&s, len);
    mfs_st_u32(*buf + 8, (uint32_t)*len);
    return 0;
}

typedef struct rd {
    const uint8_t *p;
    size_t left;
    mfs_err *err;
} rd;

static int need(rd *r, size_t n, const char *what)
{
    if (r->left < n)
        return mfs_errf(r->err, "worker report truncated in %s", what);
    return 0;
}

static int get_u8(rd *r, uint8_t *v, const char *what)
{
    if (need(r, 1, what) < 0)
        return -1;
    *v = r->p[0];
    r->p++;
    r->left--;
    return 0;
}

static int get_u32(rd *r, uint32_t *v, const char *what)
{
    if (need(r, 4, what) < 0)
        return -1;
    *v = mfs_ld_u32(r->p);
    r->p += 4;
    r->left -= 4;
    return 0;
}

static int get_u64(rd *r, uint64_t *v, const char *what)
{
    uint32_t lo, hi;
    if (get_u32(r, &lo, what) < 0 || get_u32(r, &hi, what) < 0)
        return -1;
    *v = lo | ((uint64_t)hi << 32);
    return 0;
}

static int get_f32(rd *r, float *v, const char *what)
{
    if (need(r, 4, what) < 0)
        return -1;
    *v = mfs_ld_f32(r->p);
    r->p += 4;
    r->left -= 4;
    return 0;
}

/* Text is copied with control characters replaced: it ends up in logs and
 * extended attributes. */
static int get_text(rd *r, char *out, size_t cap, const char *what)
{
    uint32_t n;
    if (get_u32(r, &n, what) < 0)
        return -1;
    if (n >= cap)
        return mfs_errf(r->err, "worker report: %s of %u bytes is too long", what, n);
    if (need(r, n, what) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        out[i] = (r->p[i] < 0x20 || r->p[i] == 0x7f) ? ' ' : (char)r->p[i];
    out[n] = '\0';
    r->p += n;
    r->left -= n;
    return 0;
}

/* A dependency's path, byte for byte: the host stats and hashes that very
 * file (a name with a newline or any other byte but NUL is a name), and
 * compares the first with the model's (convstore.c).  Made printable it
 * would name another file, one the attacker may own. */
static int get_path(rd *r, char *out, size_t cap, const char *what)
{
    uint32_t n;
    if (get_u32(r, &n, what) < 0)
        return -1;
    if (n >= cap)
        return mfs_errf(r->err, "worker report: %s of %u bytes is too long", what, n);
    if (need(r, n, what) < 0)
        return -1;
    if (memchr(r->p, '\0', n))
        return mfs_errf(r->err, "worker report: %s holds a NUL byte", what);
    memcpy(out, r->p, n);
    out[n] = '\0';
    r->p += n;
    r->left -= n;
    return 0;
}

static int get_deps(rd *r, mfs_deps *d)
{
    uint32_t n;
    if (get_u32(r, &n, "dependency count") < 0)
        return -1;
    if (n > MAX_DEPS || (size_t)n * 29 > r->left)
        return mfs_errf(r->err, "worker report: %u dependencies do not fit", n);
    d->v = calloc(n ? n : 1, sizeof(mfs_dep));
    if (!d->v)
        return mfs_errf(r->err, "out of memory");
    d->cap = n;
    for (uint32_t i = 0; i < n; i++) {
        char path[MAX_PATH + 1];
        if (get_path(r, path, sizeof path, "dependency path") < 0)
            return -1;
        mfs_dep *dep = &d->v[d->n];
        dep->path = strdup(path);
        if (!dep->path)
            return mfs_errf(r->err, "out of memory");
        d->n++;
        if (get_u64(r, &dep->size, "dependency size") < 0 || need(r, 16, "dependency hash") < 0)
            return -1;
        memcpy(dep->hash, r->p, 16);
        r->p += 16;
        r->left -= 16;
        if (need(r, 1, "dependency kind") < 0)
            return -1;
        dep->kind = r->p[0] & 0x7f;
        dep->texture = r->p[0] >> 7;
        r->p++;
        r->left--;
        if (dep->kind > MFS_DEP_UNREADABLE)
            return mfs_errf(r->err, "worker report: dependency kind %u", dep->kind);
    }
    return 0;
}

static int get_stats(rd *r, mfs_stats *st)
{
    uint32_t *counts[5] = {&st->meshes, &st->nodes, &st->bones, &st->animations, &st->materials};
    for (int i = 0; i < 5; i++)
        if (get_u32(r, counts[i], "stats") < 0)
            return -1;
    if (get_u64(r, &st->vertices, "stats") < 0 || get_u64(r, &st->triangles, "stats") < 0 ||
        get_u64(r, &st->faces, "stats") < 0 || get_u64(r, &st->placed_triangles, "stats") < 0 ||
        get_u64(r, &st->placed_faces, "stats") < 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (get_f32(r, &st->min[i], "stats") < 0)
            return -1;
    for (int i = 0; i < 3; i++)
        if (get_f32(r, &st->max[i], "stats") < 0)
            return -1;
    return 0;
}

int mfs_report_decode(const uint8_t *buf, size_t len, mfs_report *out, mfs_err *err)
{
    memset(out, 0, sizeof *out);
    rd r = {buf, len, err};
    uint32_t magic, version, total, mask;
    uint8_t ok;
    if (get_u32(&r, &magic, "header") < 0 || get_u32(&r, &version, "header") < 0 ||
        get_u32(&r, &total, "header") < 0)
        return -1;
    if (magic != MFS_PROTO_MAGIC)
        return mfs_errf(err, "worker report: bad magic 0x%08x", magic);
    if (version != MFS_PROTO_VERSION)
        return mfs_errf(err, "worker report: version %u, expected %u", version, MFS_PROTO_VERSION);
    if (total != len)
        return mfs_errf(err, "worker report: says %u bytes, got %zu", total, len);
    if (get_u8(&r, &ok, "status") < 0 || get_text(&r, out->error, sizeof out->error, "error") < 0 ||
        get_text(&r, out->route, sizeof out->route, "importer route") < 0 ||
        get_text(&r, out->repairs, sizeof out->repairs, "repairs") < 0 ||
        get_deps(&r, &out->deps) < 0 || get_stats(&r, &out->stats) < 0 ||
        get_u32(&r, &mask, "format mask") < 0)
        goto fail;
    out->ok = (ok & 1) != 0;
    out->deps.model_unopened = (ok & 2) != 0;
    out->deps.unkeyed = (ok & 4) != 0;
    /* one bit at most: ok yet failed, or failed two ways, is a lie */
    if ((ok != 0 && ok != 1 && ok != 2 && ok != 4) || (mask & ~MFS_FMT_ALL)) {
        mfs_errf(err, "worker report: bad status or format mask");
        goto fail;
    }
    out->formats = mask;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(mask & (1u << f)))
            continue;
        uint8_t fok;
        if (get_u8(&r, &fok, "format status") < 0 || get_u64(&r, &out->fmt[f].size, "format size") < 0 ||
            get_text(&r, out->fmt[f].error, sizeof out->fmt[f].error, "format error") < 0 ||
            get_text(&r, out->fmt[f].note, sizeof out->fmt[f].note, "format note") < 0)
            goto fail;
        if (fok > 3) {
            mfs_errf(err, "worker report: bad format status %u", fok);
            goto fail;
        }
        out->fmt[f].ok = (fok & 1) != 0;
        out->fmt[f].transient = (fok & 2) != 0;
    }
    if (r.left != 0) {
        mfs_errf(err, "worker report: %zu trailing bytes", r.left);
        goto fail;
    }
    return 0;
fail:
    mfs_report_free(out);
    return -1;
}

/* Gzip into another sink: libdeflate on the whole payload, zlib past a size.
 *
 * libdeflate compresses 2-3 times faster than zlib at a comparable ratio
 * (docs/formats/fmd.md, "Compression level"), but only whole buffers: it has
 * no streaming API, and a raw DEFLATE stream it ends cannot be continued, so
 * one gzip member needs all the input at once.  The sink therefore collects
 * the payload and compresses it when it is finished.  Its write window is the
 * free tail of the payload buffer itself, so the writer's bytes land where
 * they are compressed from, with no second copy.
 *
 * Memory is bounded by whole_max: a payload that reaches it (only scenes far
 * beyond what an import fits in the default memory limit, or heavy
 * instancing) is handed to zlib, which then streams the rest through a
 * fixed window, as this sink always did before.  The choice depends on the
 * payload's length alone, so the bytes stay a function of the input. */
#include <errno.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <zlib.h>

#include "meshfs/util.h"

#define GZ_WINDOW (256 * 1024) /* first payload block; zlib's window after a switch */
#define GZ_OUT (64 * 1024)     /* zlib output chunk */

typedef struct gz_ctx {
    mfs_sink *dst;
    int level;
    size_t whole_max;
    uint8_t *payload; /* whole mode: everything so far; s->buf is its free tail */
    size_t used, alloc;
    int streaming;    /* past whole_max: zlib owns the rest */
    z_stream z;
    gz_header hdr;
    uint8_t *out;     /* zlib output chunk, streaming only */
} gz_ctx;

/* ---- zlib, for payloads of whole_max bytes or more ---- */

static int z_pump(gz_ctx *g, const uint8_t *p, size_t n, int flush)
{
    g->z.next_in = (Bytef *)p;
    g->z.avail_in = 0;
    for (;;) {
        /* avail_in is 32-bit: feed large inputs in slices */
        if (g->z.avail_in == 0 && n) {
            uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
            g->z.avail_in = k;
            n -= k;
        }
        g->z.next_out = g->out;
        g->z.avail_out = GZ_OUT;
        int f = n ? Z_NO_FLUSH : flush;
        int r = deflate(&g->z, f);
        if (r == Z_STREAM_ERROR)
            return EIO;
        size_t have = GZ_OUT - g->z.avail_out;
        if (have)
            mfs_put(g->dst, g->out, have);
        if (g->dst->err)
            return g->dst->err;
        if (f == Z_FINISH ? r == Z_STREAM_END : (g->z.avail_in == 0 && n == 0 && g->z.avail_out != 0))
            return 0;
    }
}

/* Hands what was collected to zlib and makes the buffer's head the window. */
static int go_streaming(mfs_sink *s, gz_ctx *g)
{
    g->out = malloc(GZ_OUT);
    if (!g->out)
        return ENOMEM;
    /* same level where zlib has it (zlib stops at 9); the fixed header
     * (no name, mtime 0, OS 255) is the one libdeflate writes */
    int zl = g->level > 9 ? 9 : g->level;
    if (deflateInit2(&g->z, zl, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ENOMEM;
    g->streaming = 1;
    g->hdr.os = 255;
    deflateSetHeader(&g->z, &g->hdr);
    int e = z_pump(g, g->payload, g->used, Z_NO_FLUSH);
    if (e)
        return e;
    uint8_t *small = realloc(g->payload, GZ_WINDOW);
    if (small)
        g->payload = small;
    g->alloc = GZ_WINDOW;
    g->used = 0;
    s->buf = g->payload;
    s->cap = g->alloc;
    return 0;
}

/* ---- libdeflate, for the whole payload ---- */

static int compress_whole(gz_ctx *g)
{
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(g->level);
    if (!c)
        return ENOMEM;
    size_t bound = libdeflate_gzip_compress_bound(c, g->used);
    /* never more room than the destination's byte limit leaves: a payload
     * that does not fit is the destination's EFBIG, found without writing */
    size_t avail = bound;
    mfs_sink *d = g->dst;
    if (d->limit) {
        uint64_t left = d->limit > d->total ? d->limit - d->total : 0;
        if (left < avail)
            avail = (size_t)left;
    }
    uint8_t *out = malloc(avail ? avail : 1);
    if (!out) {
        libdeflate_free_compressor(c);
        return ENOMEM;
    }
    size_t n = libdeflate_gzip_compress(c, g->payload, g->used, out, avail);
    libdeflate_free_compressor(c);
    int e = 0;
    if (n)
        mfs_put(d, out, n);
    else if (avail < bound && !d->err)
        d->err = EFBIG;
    else if (!d->err)
        e = EIO; /* cannot happen with the bound's room */
    free(out);
    return e ? e : d->err;
}

/* The window (the payload buffer's free tail) is full, or the stream ends. */
static int gz_flush(mfs_sink *s, const uint8_t *p, size_t n)
{
    gz_ctx *g = s->ctx;
    if (g->streaming)
        return z_pump(g, p, n, p ? Z_NO_FLUSH : Z_FINISH);
    if (!p)
        return compress_whole(g);
    g->used += n; /* p is payload + used: the bytes are in place already */
    if (g->used < g->alloc) {
        s->buf = g->payload + g->used;
        s->cap = g->alloc - g->used;
        return 0;
    }
    if (g->alloc >= g->whole_max) {
        int e = go_streaming(s, g);
        if (e)
            return e;
        return 0;
    }
    size_t grow = g->alloc > g->whole_max / 2 ? g->whole_max : g->alloc * 2;
    uint8_t *nb = realloc(g->payload, grow);
    if (!nb)
        return ENOMEM;
    g->payload = nb;
    g->alloc = grow;
    s->buf = g->payload + g->used;
    s->cap = g->alloc - g->used;
    return 0;
}

static void gz_release(mfs_sink *s)
{
    gz_ctx *g = s->ctx;
    if (g) {
        if (g->streaming)
            deflateEnd(&g->z);
        free(g->out);
        free(g->payload);
        free(g);
    }
    s->ctx = NULL;
    s->buf = NULL; /* it pointed into the payload */
}

int mfs_sink_init_gzip_bounded(mfs_sink *s, mfs_sink *dst, int level, size_t whole_max)
{
    memset(s, 0, sizeof *s);
    if (level < 0 || level > 12 || whole_max < GZ_WINDOW)
        return -1;
    gz_ctx *g = calloc(1, sizeof *g);
    uint8_t *payload = malloc(GZ_WINDOW);
    if (!g || !payload) {
        free(g);
        free(payload);
        return -1;
    }
    g->dst = dst;
    g->level = level;
    g->whole_max = whole_max;
    g->payload = payload;
    g->alloc = GZ_WINDOW;
    s->buf = payload;
    s->cap = GZ_WINDOW;
    s->flush = gz_flush;
    s->ctx = g;
    s->release = gz_release;
    return 0;
}

int mfs_sink_init_gzip(mfs_sink *s, mfs_sink *dst, int level)
{
    return mfs_sink_init_gzip_bounded(s, dst, level, MFS_GZIP_WHOLE_MAX);
}

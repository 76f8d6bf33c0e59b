/* Streaming gzip into another sink, with zlib.
 *
 * Streaming (rather than compressing a finished buffer) keeps the .fmd
 * writer's memory flat on million-triangle models. */
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "meshfs/sink.h"

#define GZ_IN (256 * 1024)
#define GZ_OUT (64 * 1024)

typedef struct gz_ctx {
    z_stream z;
    gz_header hdr;
    mfs_sink *dst;
    uint8_t out[GZ_OUT];
} gz_ctx;

static int gz_pump(gz_ctx *g, const uint8_t *p, size_t n, int flush)
{
    g->z.next_in = (Bytef *)p;
    g->z.avail_in = (uInt)n;
    for (;;) {
        g->z.next_out = g->out;
        g->z.avail_out = GZ_OUT;
        int r = deflate(&g->z, flush);
        if (r == Z_STREAM_ERROR)
            return EIO;
        size_t have = GZ_OUT - g->z.avail_out;
        if (have)
            mfs_put(g->dst, g->out, have);
        if (g->dst->err)
            return g->dst->err;
        if (flush == Z_FINISH ? r == Z_STREAM_END : (g->z.avail_in == 0 && g->z.avail_out != 0))
            return 0;
    }
}

static int gz_flush(mfs_sink *s, const uint8_t *p, size_t n)
{
    gz_ctx *g = s->ctx;
    if (p)
        return gz_pump(g, p, n, Z_NO_FLUSH);
    return gz_pump(g, NULL, 0, Z_FINISH);
}

static void gz_release(mfs_sink *s)
{
    gz_ctx *g = s->ctx;
    if (g) {
        deflateEnd(&g->z);
        free(g);
    }
    s->ctx = NULL;
}

int mfs_sink_init_gzip(mfs_sink *s, mfs_sink *dst, int level)
{
    memset(s, 0, sizeof *s);
    gz_ctx *g = calloc(1, sizeof *g);
    s->buf = malloc(GZ_IN);
    if (!g || !s->buf) {
        free(g);
        free(s->buf);
        s->buf = NULL;
        return -1;
    }
    if (deflateInit2(&g->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        free(s->buf);
        s->buf = NULL;
        return -1;
    }
    /* Fixed header: no name, mtime 0, OS 255 ("unknown"), so the bytes do
     * not depend on where or when they were made. */
    g->hdr.os = 255;
    deflateSetHeader(&g->z, &g->hdr);
    g->dst = dst;
    s->cap = GZ_IN;
    s->flush = gz_flush;
    s->ctx = g;
    s->release = gz_release;
    return 0;
}

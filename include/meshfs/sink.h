/* Output sinks: where writers put their bytes.
 *
 * A writer never knows whether it is filling memory (tests, inspect round
 * trips), a file (meshfs-convert, the cache) or a gzip stream (.fmd).  Errors
 * are sticky: after the first failure every put is a no-op and
 * mfs_sink_finish() reports it, so writers need not check each call.
 *
 * A sink may carry a byte limit (the worker's output cap); exceeding it is an
 * error like any other (EFBIG). */
#ifndef MESHFS_SINK_H
#define MESHFS_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/bytes.h"

typedef struct mfs_sink mfs_sink;

/* Receives a full buffer; returns 0 or a positive errno. */
typedef int (*mfs_sink_flush_fn)(mfs_sink *s, const uint8_t *p, size_t n);

struct mfs_sink {
    uint8_t *buf;
    size_t len, cap;
    mfs_sink_flush_fn flush; /* NULL: memory sink, buf grows */
    void *ctx;
    void (*release)(mfs_sink *s); /* frees ctx, if the kind has one */
    int err;          /* first errno seen, 0 if none */
    uint64_t total;   /* bytes accepted so far */
    uint64_t limit;   /* 0 = unlimited */
};

/* Growable in-memory sink.  Take the bytes with mfs_sink_take(). */
void mfs_sink_init_mem(mfs_sink *s);

/* Buffered sink writing to fd (which it does not close). */
int mfs_sink_init_fd(mfs_sink *s, int fd);

/* One gzip (RFC 1952) member into dst with a fixed header: mtime 0, no
 * name, OS byte 255, so output depends only on the input bytes and level
 * (libdeflate's, 0-12).  The payload is collected and compressed whole by
 * libdeflate at mfs_sink_finish(); one that reaches whole_max bytes goes to
 * zlib (level capped at 9) and streams from there, so the sink holds at most
 * whole_max bytes of payload plus libdeflate's output room (about the
 * payload's size).  A result that would pass dst's byte limit leaves EFBIG
 * on dst.  -1: out of memory, or a level outside 0-12. */
#define MFS_GZIP_WHOLE_MAX ((size_t)256 << 20)
int mfs_sink_init_gzip(mfs_sink *s, mfs_sink *dst, int level);
int mfs_sink_init_gzip_bounded(mfs_sink *s, mfs_sink *dst, int level, size_t whole_max);

void mfs_sink_put_slow(mfs_sink *s, const void *p, size_t n);

static inline void mfs_put(mfs_sink *s, const void *p, size_t n)
{
    if (s->len + n <= s->cap && !s->err &&
        (!s->limit || s->total + n <= s->limit)) {
        memcpy(s->buf + s->len, p, n);
        s->len += n;
        s->total += n;
        return;
    }
    mfs_sink_put_slow(s, p, n);
}

static inline void mfs_put_u8(mfs_sink *s, uint8_t v) { mfs_put(s, &v, 1); }

static inline void mfs_put_u16(mfs_sink *s, uint16_t v)
{
    uint8_t b[2];
    mfs_st_u16(b, v);
    mfs_put(s, b, 2);
}

static inline void mfs_put_u32(mfs_sink *s, uint32_t v)
{
    uint8_t b[4];
    mfs_st_u32(b, v);
    mfs_put(s, b, 4);
}

static inline void mfs_put_i32(mfs_sink *s, int32_t v) { mfs_put_u32(s, (uint32_t)v); }

static inline void mfs_put_f32(mfs_sink *s, float f)
{
    uint8_t b[4];
    mfs_st_f32(b, f);
    mfs_put(s, b, 4);
}

static inline void mfs_put_str(mfs_sink *s, const char *str) { mfs_put(s, str, strlen(str)); }

void mfs_putf(mfs_sink *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Flushes what is buffered (and, for gzip, ends the stream).  Returns 0 or
 * the sticky errno.  Memory sinks keep their bytes. */
int mfs_sink_finish(mfs_sink *s);

/* Memory sink: hands over the buffer (caller frees) and its length. */
uint8_t *mfs_sink_take(mfs_sink *s, size_t *len);

/* Releases buffers of any sink kind (after finish, or on an error path). */
void mfs_sink_free(mfs_sink *s);

#endif

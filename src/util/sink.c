#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "meshfs/util.h"

#define FD_BUF (256 * 1024)

void mfs_sink_init_mem(mfs_sink *s)
{
    memset(s, 0, sizeof *s);
}

static int fd_flush(mfs_sink *s, const uint8_t *p, size_t n)
{
    int fd = (int)(intptr_t)s->ctx;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int mfs_sink_init_fd(mfs_sink *s, int fd)
{
    memset(s, 0, sizeof *s);
    s->buf = malloc(FD_BUF);
    if (!s->buf)
        return -1;
    s->cap = FD_BUF;
    s->flush = fd_flush;
    s->ctx = (void *)(intptr_t)fd;
    return 0;
}

static int mem_grow(mfs_sink *s, size_t need)
{
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return ENOMEM;
        cap *= 2;
    }
    uint8_t *nb = realloc(s->buf, cap);
    if (!nb)
        return ENOMEM;
    s->buf = nb;
    s->cap = cap;
    return 0;
}

void mfs_sink_put_slow(mfs_sink *s, const void *p, size_t n)
{
    if (s->err)
        return;
    if (s->limit && s->total + n > s->limit) {
        s->err = EFBIG;
        return;
    }
    if (!s->flush) {
        int e = mem_grow(s, s->len + n);
        if (e) {
            s->err = e;
            return;
        }
        memcpy(s->buf + s->len, p, n);
        s->len += n;
        s->total += n;
        return;
    }
    const uint8_t *b = p;
    s->total += n;
    while (n) {
        if (s->len == s->cap) {
            int e = s->flush(s, s->buf, s->len);
            s->len = 0;
            if (e) {
                s->err = e;
                return;
            }
        }
        size_t k = s->cap - s->len;
        if (k > n)
            k = n;
        memcpy(s->buf + s->len, b, k);
        s->len += k;
        b += k;
        n -= k;
    }
}

void mfs_putf(mfs_sink *s, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        s->err = s->err ? s->err : EINVAL;
        return;
    }
    if ((size_t)n < sizeof tmp) {
        mfs_put(s, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        s->err = s->err ? s->err : ENOMEM;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    mfs_put(s, big, (size_t)n);
    free(big);
}

/* Finishing a gzip sink is the gzip code's business: it installs its own
 * flush that understands a NULL buffer as "end of stream". */
int mfs_sink_finish(mfs_sink *s)
{
    if (!s->flush || s->err)
        return s->err;
    if (s->len) {
        int e = s->flush(s, s->buf, s->len);
        s->len = 0;
        if (e)
            s->err = e;
    }
    if (!s->err) {
        int e = s->flush(s, NULL, 0);
        if (e)
            s->err = e;
    }
    return s->err;
}

uint8_t *mfs_sink_take(mfs_sink *s, size_t *len)
{
    uint8_t *b = s->buf;
    *len = s->len;
    s->buf = NULL;
    s->len = s->cap = 0;
    return b;
}

void mfs_sink_free(mfs_sink *s)
{
    if (s->release)
        s->release(s);
    s->release = NULL;
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

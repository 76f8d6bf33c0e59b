/* Text of .dem lines (docs/formats/dem.md, "Numbers" and "Names"): numbers
 * the loader's std::stof reads, names it keeps as one token. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "meshfs/formats.h"
#include "meshfs/util.h"

#include "dem_text.h"

/* " <number>".  -0.0 becomes 0.0, since the axis mapping negates a
 * coordinate and would otherwise print "-0.0" for every zero.  Subnormals
 * (0 < |v| < FLT_MIN) become 0.0 too: the loader's std::stof throws
 * out_of_range on text such as "1e-40" (strtof reports ERANGE). */
char *dem_put_num(char *p, float v)
{
    *p++ = ' ';
    if (fabsf(v) < FLT_MIN) /* false for NaN, which prints as "nan" */
        v = 0.0f;
    return p + mfs_fmt_f32(v, p);
}

static const char dem_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Decimal digits of v at p; two at a time, since a million-triangle mesh
 * prints several million indices. */
static char *dem_put_digits(char *p, uint64_t v)
{
    int n = 1;
    for (uint64_t t = v; t >= 10; t /= 10)
        n++;
    char *e = p + n;
    while (v >= 100) {
        e -= 2;
        memcpy(e, dem_digit_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) {
        e -= 2;
        memcpy(e, dem_digit_pairs + 2 * v, 2);
    } else {
        e[-1] = (char)('0' + v);
    }
    return p + n;
}

char *dem_put_uint(char *p, uint64_t v)
{
    *p++ = ' ';
    return dem_put_digits(p, v);
}

char *dem_put_int(char *p, int64_t v)
{
    *p++ = ' ';
    if (v < 0) {
        *p++ = '-';
        return dem_put_digits(p, (uint64_t)-v);
    }
    return dem_put_digits(p, (uint64_t)v);
}

void dem_end_line(mfs_sink *out, char *line, char *p)
{
    *p++ = '\n';
    mfs_put(out, line, (size_t)(p - line));
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t dem_utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    unsigned cp = c & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* Writes a name as one token: the loader splits lines on single spaces, so
 * every ASCII space or control byte (and DEL) becomes '_', and so does each
 * byte of an invalid UTF-8 sequence, keeping the file valid UTF-8.  An
 * empty name is replaced by the fallback. */
void dem_put_name_n(mfs_sink *out, const char *name, size_t len, const char *fallback)
{
    if (!name || len == 0) {
        name = fallback;
        len = strlen(fallback);
    }
    const unsigned char *p = (const unsigned char *)name, *end = p + len;
    while (p < end) {
        size_t n = dem_utf8_len(p);
        if (n > (size_t)(end - p))
            n = 0;
        if (n == 1 && (*p <= 0x20 || *p == 0x7f))
            n = 0;
        if (n == 0) {
            mfs_put_u8(out, '_');
            p++;
        } else {
            mfs_put(out, p, n);
            p += n;
        }
    }
}

void dem_put_name(mfs_sink *out, const char *name, const char *fallback)
{
    dem_put_name_n(out, name, name ? strlen(name) : 0, fallback);
}

/* "keyword name\n" */
void dem_put_named(mfs_sink *out, const char *kw, const char *name, const char *fallback)
{
    mfs_put_str(out, kw);
    mfs_put_u8(out, ' ');
    dem_put_name(out, name, fallback);
    mfs_put_u8(out, '\n');
}

/* "keyword count\n" */
void dem_put_count(mfs_sink *out, const char *kw, uint64_t n)
{
    char line[64];
    size_t k = strlen(kw);
    memcpy(line, kw, k);
    dem_end_line(out, line, dem_put_uint(line + k, n));
}

/* The model's machine name: the last component of model_path (the
 * model's path under the engine's models/ folder, which is how the game
 * refers to it) when the caller set one, else the root node's name. */
void dem_put_model_name(mfs_sink *out, const mfs_scene *s, const mfs_options *o)
{
    const char *path = o ? o->model_path : NULL;
    if (path && *path) {
        size_t end = strlen(path);
        while (end > 0 && path[end - 1] == '/')
            end--;
        size_t start = end;
        while (start > 0 && path[start - 1] != '/')
            start--;
        if (end > start) {
            dem_put_name_n(out, path + start, end - start, "model");
            return;
        }
    }
    dem_put_name(out, s->nodes[0].name, "model");
}

/* Reader for the Frenetic .fmi sidecar (research/fmd.md section 2): UTF-8
 * text, LF lines of `key=value`, `model=<name>` and `mesh[:::type]=texture`.
 * FGE splits on '\n' and on every '=', keeps a BOM and a CR as part of the
 * text, and lower-cases mesh names and types; what it would skip or
 * misread is a violation here. */
#include "readers.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct span {
    const char *s;
    size_t n;
} span;

typedef struct fmi_state {
    span *meshes;
    size_t n_meshes, cap;
    int model_lines;
} fmi_state;

static int span_casecmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = strncasecmp(x->s, y->s, n);
    if (c)
        return c;
    return (x->n > y->n) - (x->n < y->n);
}

static int span_is(span a, const char *lit)
{
    return a.n == strlen(lit) && memcmp(a.s, lit, a.n) == 0;
}

/* Offset of the first byte that is not valid UTF-8 (or a NUL), or n. */
static size_t first_bad_utf8(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        if (c == 0 || len == 0 || len > n - i)
            return i;
        unsigned cp = len == 1 ? c : c & (0x7F >> len);
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += len;
    }
    return n;
}

static int known_type(span t)
{
    static const char *const types[] = {"", "color", "specular", "reflectivity", "normal"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (t.n == strlen(types[i]) && strncasecmp(t.s, types[i], t.n) == 0)
            return 1;
    return 0;
}

static const char *find3colon(span key)
{
    for (size_t i = 0; i + 3 <= key.n; i++)
        if (memcmp(key.s + i, ":::", 3) == 0)
            return key.s + i;
    return NULL;
}

static int texture_line(mfs_rd *r, fmi_state *st, unsigned line, span key, span value)
{
    const char *sep = find3colon(key);
    span mesh = {key.s, sep ? (size_t)(sep - key.s) : key.n};
    span type = {sep ? sep + 3 : key.s + key.n, sep ? key.n - mesh.n - 3 : 0};
    if (mesh.n == 0)
        mfs_rd_violation(r, "line %u: empty mesh name", line);
    if (!known_type(type))
        mfs_rd_violation(r, "line %u: unknown texture type '%.*s' (FGE knows color, specular, "
                         "reflectivity, normal)", line, (int)type.n, type.s);
    if (value.n == 0)
        mfs_rd_violation(r, "line %u: empty texture for mesh '%.*s'", line, (int)mesh.n, mesh.s);
    if (mfs_rd_grow(r, (void **)&st->meshes, &st->cap, st->n_meshes + 1, sizeof(span)))
        return -1;
    st->meshes[st->n_meshes++] = mesh;
    return 0;
}

static int one_line(mfs_rd *r, fmi_state *st, unsigned line, span l)
{
    if (l.n && l.s[l.n - 1] == '\r') {
        mfs_rd_violation(r, "line %u ends with CR (LF only)", line);
        l.n--;
    }
    if (l.n == 0) {
        mfs_rd_warn(r, "line %u is empty", line);
        return 0;
    }
    const char *eq = memchr(l.s, '=', l.n);
    if (!eq || memchr(eq + 1, '=', l.n - (size_t)(eq + 1 - l.s))) {
        mfs_rd_violation(r, "line %u: needs exactly one '=' (FGE skips it): %.*s", line,
                         (int)(l.n > 60 ? 60 : l.n), l.s);
        return 0;
    }
    span key = {l.s, (size_t)(eq - l.s)};
    span value = {eq + 1, l.n - key.n - 1};
    if (span_is(key, "model")) {
        if (st->model_lines++)
            mfs_rd_violation(r, "line %u: second model= line", line);
        else if (line != 1)
            mfs_rd_warn(r, "line %u: model= is not the first line", line);
        if (value.n == 0)
            mfs_rd_violation(r, "line %u: empty model name", line);
        mfs_rd_name(r->sum->name, sizeof r->sum->name, value.s, value.n);
        return 0;
    }
    if (span_is(key, "offset")) {
        mfs_rd_warn(r, "line %u: offset= has no effect in FGE", line);
        return 0;
    }
    return texture_line(r, st, line, key, value);
}

static uint64_t distinct_meshes(fmi_state *st)
{
    if (st->n_meshes == 0)
        return 0;
    qsort(st->meshes, st->n_meshes, sizeof(span), span_casecmp);
    uint64_t d = 1;
    for (size_t i = 1; i < st->n_meshes; i++)
        if (span_casecmp(&st->meshes[i - 1], &st->meshes[i]))
            d++;
    return d;
}

int mfs_read_fmi(mfs_rd *r, const uint8_t *p, size_t n)
{
    size_t bad = first_bad_utf8(p, n);
    if (bad < n)
        mfs_rd_violation(r, "offset %zu: byte 0x%02x is not UTF-8 text", bad, p[bad]);
    size_t at = 0;
    if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
        mfs_rd_violation(r, "starts with a UTF-8 BOM (FGE then misses the model= key)");
        at = 3;
    }
    if (n > 0 && p[n - 1] != '\n')
        mfs_rd_violation(r, "the last line does not end with LF");

    fmi_state st = {0};
    unsigned line = 0;
    int rc = 0;
    while (at < n && rc == 0) {
        const uint8_t *nl = memchr(p + at, '\n', n - at);
        size_t end = nl ? (size_t)(nl - p) : n;
        span l = {(const char *)p + at, end - at};
        rc = one_line(r, &st, ++line, l);
        at = end + 1;
    }
    /* No model= line is fine: FGE then loads the .fmd beside the .fmi. */
    if (rc == 0)
        r->sum->meshes = distinct_meshes(&st);
    free(st.meshes);
    return rc;
}

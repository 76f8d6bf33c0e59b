/* Reading the unit and up axis a 3MF, AMF or OpenGEX file declares.
 *
 * assimp 5.2.5 parses these declarations and never applies them, so the
 * importer reads them itself from the bytes it already has mapped.  Each
 * reader is bounded: it never allocates from a size the file states, and a
 * 3MF's (zipped) model part is inflated only as far as its root element
 * needs, at most 64 KiB, whatever the entry claims. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unzip.h>

#include "frame_decl.h"

#define PART_MAX (64u << 10) /* bytes of a package part read, at most */

typedef struct unit_name {
    const char *name;
    double metres;
} unit_name;

/* 3MF core specification, model element: ST_Unit */
static const unit_name UNITS_3MF[] = {
    {"micron", 1e-6}, {"millimeter", 1e-3}, {"centimeter", 1e-2},
    {"inch", 0.0254}, {"foot", 0.3048},     {"meter", 1.0},
};
/* ASTM F2915 (AMF), amf element: unit */
static const unit_name UNITS_AMF[] = {
    {"millimeter", 1e-3}, {"inch", 0.0254}, {"feet", 0.3048}, {"meter", 1.0}, {"micron", 1e-6},
};

static int set_unit(mfs_decl *d, const char *fmt_name, const char *unit, const unit_name *tab,
                    size_t n, mfs_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(unit, tab[i].name) == 0) {
            d->metres = tab[i].metres;
            snprintf(d->unit, sizeof d->unit, "%s", unit);
            return 0;
        }
    char list[128] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", tab[i].name);
    return mfs_errf(err, "%s declares unit \"%s\", which is not one of %s", fmt_name, unit, list);
}

/* ---- XML: the root element's attribute ---- */

static const char *find_str(const char *p, const char *end, const char *lit)
{
    size_t k = strlen(lit);
    for (; p + k <= end; p++)
        if (memcmp(p, lit, k) == 0)
            return p;
    return NULL;
}

static int xml_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == ':' ||
           (unsigned char)c >= 0x80;
}

/* Local part of a qualified name [p, e): after the last ':'. */
static int local_is(const char *p, const char *e, const char *want)
{
    for (const char *q = p; q < e; q++)
        if (*q == ':')
            p = q + 1;
    return (size_t)(e - p) == strlen(want) && memcmp(p, want, (size_t)(e - p)) == 0;
}

/* Finds the root element of an XML text (skipping the declaration,
 * comments, processing instructions and a DOCTYPE); when its local name is
 * `root`, copies attribute `attr` into out.  Returns 1 found, 0 absent (or
 * another root), -1 when no root element could be read. */
static int xml_root_attr(const char *t, size_t n, const char *root, const char *attr, char *out,
                         size_t outsz)
{
    const char *p = t, *end = t + n;
    if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    for (;;) {
        p = memchr(p, '<', (size_t)(end - p));
        if (!p || p + 1 >= end)
            return -1;
        if (p[1] == '?') {
            p = find_str(p, end, "?>");
        } else if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
            p = find_str(p, end, "-->");
        } else if (p[1] == '!') {
            p = memchr(p, '>', (size_t)(end - p));
        } else {
            break;
        }
        if (!p)
            return -1;
        p++;
    }
    const char *name = ++p;
    while (p < end && xml_name_char(*p))
        p++;
    if (!local_is(name, p, root))
        return 0;
    for (;;) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p >= end)
            return -1;
        if (*p == '>' || *p == '/')
            return 0;
        const char *an = p;
        while (p < end && xml_name_char(*p))
            p++;
        const char *ae = p;
        if (ae == an)
            return -1;
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p >= end || *p != '=')
            return -1;
        p++;
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p >= end || (*p != '"' && *p != '\''))
            return -1;
        char q = *p++;
        const char *v = p;
        p = memchr(p, q, (size_t)(end - p));
        if (!p)
            return -1;
        if (local_is(an, ae, attr)) {
            size_t k = (size_t)(p - v);
            while (k && isspace((unsigned char)v[k - 1]))
                k--;
            while (k && isspace((unsigned char)*v))
                v++, k--;
            if (k >= outsz)
                k = outsz - 1;
            memcpy(out, v, k);
            out[k] = '\0';
            return 1;
        }
        p++;
    }
}

/* ---- 3MF: a zip package read from memory with minizip ---- */

typedef struct membuf {
    const uint8_t *p;
    size_t n, pos;
} membuf;

static voidpf ZCALLBACK mem_open(voidpf opaque, const void *name, int mode)
{
    (void)name;
    (void)mode;
    membuf *m = opaque;
    m->pos = 0;
    return m;
}

static uLong ZCALLBACK mem_read(voidpf opaque, voidpf stream, void *buf, uLong size)
{
    (void)opaque;
    membuf *m = stream;
    size_t k = m->n - m->pos < size ? m->n - m->pos : size;
    memcpy(buf, m->p + m->pos, k);
    m->pos += k;
    return (uLong)k;
}

static uLong ZCALLBACK mem_write(voidpf opaque, voidpf stream, const void *buf, uLong size)
{
    (void)opaque;
    (void)stream;
    (void)buf;
    (void)size;
    return 0;
}

static ZPOS64_T ZCALLBACK mem_tell(voidpf opaque, voidpf stream)
{
    (void)opaque;
    return ((membuf *)stream)->pos;
}

static long ZCALLBACK mem_seek(voidpf opaque, voidpf stream, ZPOS64_T off, int origin)
{
    (void)opaque;
    membuf *m = stream;
    size_t base = origin == ZLIB_FILEFUNC_SEEK_SET ? 0 : origin == ZLIB_FILEFUNC_SEEK_CUR ? m->pos : m->n;
    if (off > m->n - base)
        return -1;
    m->pos = base + (size_t)off;
    return 0;
}

static int ZCALLBACK mem_close(voidpf opaque, voidpf stream)
{
    (void)opaque;
    (void)stream;
    return 0;
}

static int ZCALLBACK mem_error(voidpf opaque, voidpf stream)
{
    (void)opaque;
    (void)stream;
    return 0;
}

/* Reads the start of the package part `name` (case-insensitive, as OPC part
 * names are) into buf, NUL-terminated.  Returns the length, or -1 when the
 * part is missing or unreadable. */
static long read_part(unzFile uf, const char *name, char *buf, size_t bufsz)
{
    if (unzLocateFile(uf, name, 2) != UNZ_OK || unzOpenCurrentFile(uf) != UNZ_OK)
        return -1;
    size_t got = 0;
    while (got + 1 < bufsz) {
        int r = unzReadCurrentFile(uf, buf + got, (unsigned)(bufsz - 1 - got));
        if (r <= 0) {
            if (r < 0)
                got = 0;
            break;
        }
        got += (size_t)r;
    }
    unzCloseCurrentFile(uf);
    buf[got] = '\0';
    return got ? (long)got : -1;
}

/* The target of the package's 3D model relationship (_rels/.rels), without
 * its leading '/'; "3D/3dmodel.model" when there is none. */
static void model_part(unzFile uf, char *buf, size_t bufsz, char *out, size_t outsz)
{
    snprintf(out, outsz, "3D/3dmodel.model");
    long n = read_part(uf, "_rels/.rels", buf, bufsz);
    const char *p = buf, *end = buf + (n > 0 ? n : 0);
    while (n > 0 && (p = find_str(p, end, "<Relationship")) != NULL) {
        const char *e = memchr(p, '>', (size_t)(end - p));
        if (!e)
            break;
        char type[256], target[256];
        if (xml_root_attr(p, (size_t)(e + 1 - p), "Relationship", "Type", type, sizeof type) == 1 &&
            xml_root_attr(p, (size_t)(e + 1 - p), "Relationship", "Target", target, sizeof target) == 1) {
            size_t k = strlen(type);
            if (k >= 8 && strcmp(type + k - 8, "/3dmodel") == 0) {
                snprintf(out, outsz, "%s", target[0] == '/' ? target + 1 : target);
                return;
            }
        }
        p = e;
    }
}

int mfs_decl_3mf(const uint8_t *zip, size_t n, mfs_decl *d, mfs_err *err)
{
    d->metres = 1e-3;
    d->zup = 1;
    d->unit[0] = '\0';
    membuf mb = {zip, n, 0};
    zlib_filefunc64_def io = {mem_open, mem_read, mem_write, mem_tell, mem_seek, mem_close, mem_error, &mb};
    unzFile uf = unzOpen2_64("3mf", &io);
    if (!uf)
        return mfs_errf(err, "3MF: not a zip package (cannot read its unit)");
    char *buf = malloc(PART_MAX + 1);
    if (!buf) {
        unzClose(uf);
        return mfs_errf(err, "out of memory");
    }
    char part[256], unit[64];
    model_part(uf, buf, PART_MAX + 1, part, sizeof part);
    long k = read_part(uf, part, buf, PART_MAX + 1);
    unzClose(uf);
    int rc = 0;
    if (k < 0) {
        rc = mfs_errf(err, "3MF: cannot read model part '%s' for its unit", part);
    } else {
        int r = xml_root_attr(buf, (size_t)k, "model", "unit", unit, sizeof unit);
        if (r == 1)
            rc = set_unit(d, "3MF model", unit, UNITS_3MF, sizeof UNITS_3MF / sizeof *UNITS_3MF, err);
    }
    free(buf);
    return rc;
}

int mfs_decl_amf(const char *text, size_t n, mfs_decl *d, mfs_err *err)
{
    d->metres = 1e-3;
    d->zup = 1;
    d->unit[0] = '\0';
    char unit[64];
    if (xml_root_attr(text, n, "amf", "unit", unit, sizeof unit) == 1)
        return set_unit(d, "AMF", unit, UNITS_AMF, sizeof UNITS_AMF / sizeof *UNITS_AMF, err);
    return 0;
}

/* ---- OpenGEX: top-level Metric structures (OpenDDL) ---- */

typedef enum tok_kind { T_END, T_IDENT, T_STRING, T_WORD, T_PUNCT } tok_kind;

typedef struct lexer {
    const char *p, *end;
} lexer;

typedef struct tok {
    tok_kind kind;
    const char *s; /* start (strings: inside the quotes) */
    size_t n;
} tok;

/* Next token, skipping white space and comments; literals other than
 * strings and identifiers come back as one T_WORD. */
static tok next(lexer *lx)
{
    const char *p = lx->p, *end = lx->end;
    for (;;) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
        } else if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
            const char *e = find_str(p + 2, end, "*/");
            p = e ? e + 2 : end;
        } else {
            break;
        }
    }
    tok t = {T_END, p, 0};
    if (p >= end) {
        lx->p = p;
        return t;
    }
    if (*p == '"' || *p == '\'') {
        char q = *p++;
        t.s = p;
        while (p < end && *p != q)
            p += (*p == '\\' && p + 1 < end) ? 2 : 1;
        t.kind = T_STRING;
        t.n = (size_t)(p - t.s);
        lx->p = p < end ? p + 1 : end;
        return t;
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
        while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
            p++;
        t.kind = T_IDENT;
    } else if (strchr("{}()[],=", *p)) {
        p++;
        t.kind = T_PUNCT;
    } else {
        while (p < end && !isspace((unsigned char)*p) && !strchr("{}()[],=\"'/", *p))
            p++;
        if (p == t.s)
            p++;
        t.kind = T_WORD;
    }
    t.n = (size_t)(p - t.s);
    lx->p = p;
    return t;
}

static int tok_is(tok t, tok_kind k, const char *lit)
{
    return t.kind == k && t.n == strlen(lit) && memcmp(t.s, lit, t.n) == 0;
}

static int type_in(tok t, const char *const *names)
{
    for (; *names; names++)
        if (tok_is(t, T_IDENT, *names))
            return 1;
    return 0;
}

/* An OpenDDL floating-point literal: decimal, or hex/binary/octal giving
 * the IEEE bits of a float (32) or double (64), digits separated by '_'
 * allowed.  A sign may be its own token. */
static int ddl_float(tok sign, tok t, int is_double, double *out)
{
    char buf[80];
    size_t k = 0;
    for (size_t i = 0; i < t.n && k + 1 < sizeof buf; i++)
        if (t.s[i] != '_')
            buf[k++] = t.s[i];
    buf[k] = '\0';
    if (!k)
        return -1;
    double v;
    char *e;
    int base = 0;
    if (k > 2 && buf[0] == '0' && strchr("xXbBoO", buf[1]))
        base = strchr("xX", buf[1]) ? 16 : strchr("bB", buf[1]) ? 2 : 8;
    if (base) {
        unsigned long long bits = strtoull(buf + 2, &e, base);
        if (*e)
            return -1;
        if (is_double) {
            memcpy(&v, &bits, sizeof v);
        } else {
            uint32_t b = (uint32_t)bits;
            float fv;
            memcpy(&fv, &b, sizeof fv);
            v = fv;
        }
    } else {
        v = strtod(buf, &e);
        if (*e)
            return -1;
    }
    if (sign.kind == T_WORD && tok_is(sign, T_WORD, "-"))
        v = -v;
    *out = v;
    return 0;
}

static const char *const FLOAT_TYPES[] = {"float", "float32", "f", "half", "float16", "h", NULL};
static const char *const DOUBLE_TYPES[] = {"double", "float64", "d", NULL};
static const char *const STRING_TYPES[] = {"string", "s", NULL};

/* Parses one Metric structure after its identifier.  Returns 0 and fills
 * key/value (one of them numeric, the other a string), or -1 when it is not
 * a Metric this reader understands (then the caller resumes its scan). */
static int metric(lexer *lx, char *key, size_t keysz, int *is_num, double *num, char *str,
                  size_t strsz)
{
    tok t = next(lx);
    if (t.kind == T_WORD && (t.s[0] == '$' || t.s[0] == '%'))
        t = next(lx); /* a structure name */
    if (!tok_is(t, T_PUNCT, "("))
        return -1;
    key[0] = '\0';
    for (t = next(lx); t.kind != T_END && !tok_is(t, T_PUNCT, ")"); t = next(lx)) {
        if (t.kind == T_IDENT && tok_is(t, T_IDENT, "key")) {
            if (!tok_is(next(lx), T_PUNCT, "="))
                return -1;
            tok v = next(lx);
            if (v.kind != T_STRING)
                return -1;
            snprintf(key, keysz, "%.*s", (int)v.n, v.s);
        }
    }
    if (!tok_is(t, T_PUNCT, ")") || !tok_is(next(lx), T_PUNCT, "{"))
        return -1;
    tok type = next(lx);
    if (!tok_is(next(lx), T_PUNCT, "{"))
        return -1;
    tok v = next(lx), sign = {T_END, NULL, 0};
    if (tok_is(v, T_WORD, "-") || tok_is(v, T_WORD, "+")) {
        sign = v;
        v = next(lx);
    }
    if (type_in(type, STRING_TYPES) && v.kind == T_STRING) {
        *is_num = 0;
        snprintf(str, strsz, "%.*s", (int)v.n, v.s);
    } else if ((type_in(type, FLOAT_TYPES) || type_in(type, DOUBLE_TYPES)) && v.kind == T_WORD) {
        *is_num = 1;
        if (ddl_float(sign, v, type_in(type, DOUBLE_TYPES), num) < 0)
            return -1;
    } else {
        return -1;
    }
    if (!tok_is(next(lx), T_PUNCT, "}") || !tok_is(next(lx), T_PUNCT, "}"))
        return -1;
    return 0;
}

int mfs_decl_ogex(const char *text, size_t n, mfs_decl *d, mfs_err *err)
{
    d->metres = 1.0;
    d->zup = 1;
    d->unit[0] = '\0';
    lexer lx = {text, text + n};
    unsigned depth = 0;
    for (tok t = next(&lx); t.kind != T_END; t = next(&lx)) {
        if (tok_is(t, T_PUNCT, "{")) {
            depth++;
        } else if (tok_is(t, T_PUNCT, "}")) {
            depth -= depth > 0;
        } else if (depth == 0 && tok_is(t, T_IDENT, "Metric")) {
            lexer save = lx;
            char key[32], str[32];
            double num = 0;
            int is_num = 0;
            if (metric(&lx, key, sizeof key, &is_num, &num, str, sizeof str) < 0) {
                lx = save; /* not one we read: scan on from here */
                continue;
            }
            if (strcmp(key, "distance") == 0) {
                if (!is_num || !(num > 0) || !isfinite(num))
                    return mfs_errf(err, "OpenGEX Metric \"distance\" must be a positive number "
                                         "of metres per unit");
                d->metres = num;
                snprintf(d->unit, sizeof d->unit, "%g m", num);
            } else if (strcmp(key, "up") == 0) {
                if (is_num || (strcasecmp(str, "y") != 0 && strcasecmp(str, "z") != 0))
                    return mfs_errf(err, "OpenGEX Metric \"up\" is \"%s\": must be \"y\" or \"z\"",
                                    is_num ? "(a number)" : str);
                d->zup = tolower((unsigned char)str[0]) == 'z';
            }
        }
    }
    return 0;
}

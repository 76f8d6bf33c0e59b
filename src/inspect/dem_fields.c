/* The .dem reader's fields: a line split into tokens, its numbers and
 * declared counts read as the author's loader reads them, and that loader's
 * rules, each reported once (dem_read.h, docs/formats/dem.md "Loader
 * rules"). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dem_read.h"

/* ---- the loader's rules ---- */

static const char *const rule_names[R_COUNT] = {
    "tokens not separated by single spaces", "control characters", "empty lines",
    "header not 'DEM 10'", "numbers std::stof rejects", "integers out of 32-bit range",
    "names of more than one word", "'t' lines without a polygon index",
};

/* The first breach of rule k becomes a violation (message from fmt, "line
 * N: " in front); later ones are only counted (see dem_loader_totals). */
void dem_loader_rule(dem *d, rule k, unsigned no, const char *fmt, ...)
{
    if (d->broken[k]++)
        return;
    d->broken_first[k] = no;
    char msg[MFS_SUMMARY_WARN_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mfs_rd_violation(d->r, "line %u: %s", no, msg);
}

void dem_loader_totals(dem *d)
{
    for (int k = 0; k < R_COUNT; k++)
        if (d->broken[k] > 1)
            mfs_rd_warn(d->r, "%llu lines in all with %s (first: line %u)",
                        (unsigned long long)d->broken[k], rule_names[k], d->broken_first[k]);
}

/* Spacing and bytes of the raw line (CR already cut). */
void dem_check_raw_line(dem *d, const char *s, size_t n, unsigned no)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            dem_loader_rule(d, R_CONTROL, no, "control character 0x%02x (the loader splits on "
                        "single spaces only, so it stays inside a token)", c);
            break;
        }
    }
    if (n && (s[0] == ' ' || s[n - 1] == ' ' || memmem(s, n, "  ", 2)))
        dem_loader_rule(d, R_SPACING, no, "tokens must be separated by exactly one space (a leading, "
                    "trailing or second space makes an empty token)");
}

/* ---- tokens and numbers ---- */

static int is_space(char c) { return c == ' ' || c == '\t'; }

void dem_split(line *l, const char *s, size_t n)
{
    l->nt = l->all = 0;
    l->rest = NULL;
    l->rest_n = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && is_space(s[i]))
            i++;
        if (i == n)
            break;
        size_t b = i;
        while (i < n && !is_space(s[i]))
            i++;
        if (l->all == 1 && !l->rest) {
            l->rest = s + b;
            l->rest_n = n - b;
        }
        if (l->nt < MAX_TOK)
            l->t[l->nt++] = (tok){s + b, i - b};
        l->all++;
    }
}

int dem_tok_is(tok t, const char *lit)
{
    return t.n == strlen(lit) && memcmp(t.s, lit, t.n) == 0;
}

/* A float as std::stof reads it (strtof): *range is set when stof would
 * throw out_of_range (ERANGE: overflow, underflow, subnormal result) or
 * the value is subnormal whatever errno says. */
static int parse_f(tok t, float *out, int *range)
{
    char buf[NUM_BUF];
    if (t.n == 0 || t.n >= sizeof buf)
        return -1;
    memcpy(buf, t.s, t.n);
    buf[t.n] = '\0';
    char *end;
    errno = 0;
    float f = strtof(buf, &end);
    if (*end)
        return -1;
    *range = errno == ERANGE || fpclassify(f) == FP_SUBNORMAL;
    *out = f;
    return 0;
}

int dem_parse_i(tok t, int64_t *out)
{
    char buf[NUM_BUF];
    if (t.n == 0 || t.n >= sizeof buf)
        return -1;
    memcpy(buf, t.s, t.n);
    buf[t.n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end || errno)
        return -1;
    *out = v;
    return 0;
}

static int bad_field(dem *d, const line *l, unsigned i, const char *want)
{
    tok t = l->t[i];
    return mfs_errf(d->r->err, "line %u: field %u '%.*s' is not %s", l->no, i,
                    (int)(t.n > 40 ? 40 : t.n), t.s, want);
}

/* The loader reads counts and `t` indices with std::stoi (int32) and ids
 * with std::stoul (32 bits on Windows, the loader's platform). */
static void int_range(dem *d, const line *l, unsigned i, int64_t v, int unsigned_field)
{
    int64_t lo = unsigned_field ? 0 : INT32_MIN, hi = unsigned_field ? UINT32_MAX : INT32_MAX;
    if (v < lo || v > hi)
        dem_loader_rule(d, R_INT, l->no, "field %u '%.*s' is out of the range std::%s reads", i,
                    (int)(l->t[i].n > 40 ? 40 : l->t[i].n), l->t[i].s,
                    unsigned_field ? "stoul" : "stoi");
}

/* Reads k numbers from tokens first.. : ints[j] is 'i' for an integer the
 * loader reads with stoi, 'u' for one it reads with stoul, else a float. */
int dem_numbers(dem *d, const line *l, unsigned first, unsigned k, double *out,
                const char *ints)
{
    for (unsigned j = 0; j < k; j++) {
        unsigned i = first + j;
        if (ints && (ints[j] == 'i' || ints[j] == 'u')) {
            int64_t v;
            if (dem_parse_i(l->t[i], &v))
                return bad_field(d, l, i, "an integer");
            int_range(d, l, i, v, ints[j] == 'u');
            out[j] = (double)v;
        } else {
            float f;
            int range;
            if (parse_f(l->t[i], &f, &range))
                return bad_field(d, l, i, "a number");
            if (range)
                dem_loader_rule(d, R_FLOAT, l->no, "field %u '%.*s': std::stof throws out_of_range "
                            "(%s)", i, (int)(l->t[i].n > 40 ? 40 : l->t[i].n), l->t[i].s,
                            isinf(f) || fabsf(f) > FLT_MAX ? "beyond float range"
                                                            : "subnormal or underflowing");
            out[j] = f;
        }
    }
    return 0;
}

/* A name line (`model`, `mesh`, `mat`, `sequence`): the loader keeps only
 * the first token after the keyword. */
void dem_single_word(dem *d, const line *l, unsigned words)
{
    if (l->all > words + 1)
        dem_loader_rule(d, R_NAME, l->no, "'%.*s' name '%.*s' is not one word (the loader keeps "
                    "'%.*s')", (int)l->t[0].n, l->t[0].s,
                    (int)(l->rest_n > 40 ? 40 : l->rest_n), l->rest, (int)l->t[1].n, l->t[1].s);
}

int dem_want_fields(dem *d, const line *l, unsigned k)
{
    if (l->all != k + 1)
        return mfs_errf(d->r->err, "line %u: '%.*s' needs %u fields, has %u", l->no,
                        (int)l->t[0].n, l->t[0].s, k, l->all - 1);
    return 0;
}

/* ---- counts ---- */

int dem_set_count(dem *d, const line *l, count *c, section sec)
{
    int64_t v;
    if (dem_want_fields(d, l, 1))
        return -1;
    if (dem_parse_i(l->t[1], &v) || v < 0)
        return mfs_errf(d->r->err, "line %u: '%.*s' needs a non-negative count, not '%.*s'",
                        l->no, (int)l->t[0].n, l->t[0].s, (int)(l->t[1].n > 40 ? 40 : l->t[1].n),
                        l->t[1].s);
    int_range(d, l, 1, v, 0);
    if (c->declared >= 0)
        mfs_rd_violation(d->r, "line %u: second '%.*s' line (first on line %u)", l->no,
                         (int)l->t[0].n, l->t[0].s, c->line);
    c->declared = v;
    c->line = l->no;
    d->sec = sec;
    return 0;
}

void dem_check_count(dem *d, const char *owner, const count *c, const char *kw,
                     const char *elem)
{
    if (c->declared >= 0 && (uint64_t)c->declared != c->lines)
        mfs_rd_violation(d->r, "%s%s declares %lld but %llu '%s' %s follow (line %u)", owner, kw,
                         (long long)c->declared, (unsigned long long)c->lines, elem,
                         c->lines == 1 ? "line" : "lines", c->line);
}

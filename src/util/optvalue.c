/* Option values checked whole (include/meshfs/util.h, "optvalue"). */
#include <stdio.h>
#include <string.h>

#include "meshfs/util.h"

/* Decimal digits with an optional fraction at s: the value and where it
 * ends; NULL if s does not start with one. */
static const char *decimal(const char *s, double *v)
{
    const char *p = s;
    double x = 0, scale = 1;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        x = x * 10 + (*p - '0');
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
            scale /= 10;
            x += (*p - '0') * scale;
        }
    }
    if (!digits)
        return NULL;
    *v = x;
    return p;
}

void mfs_optv_size_text(uint64_t v, char *buf, unsigned n)
{
    /* the suffixes mfs_optv_size reads, so a limit it prints can be given
     * back ("at most 16E" named a suffix no option takes) */
    static const char units[] = "KMGT";
    int u = -1;
    double x = (double)v;
    while (x >= 1024 && u < 3) {
        x /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, n, "%llu", (unsigned long long)v);
    else
        snprintf(buf, n, "%.*f%c", x == (double)(uint64_t)x ? 0 : 1, x, units[u]);
}

int mfs_optv_size(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out,
                  mfs_err *err)
{
    double v;
    const char *p = s ? decimal(s, &v) : NULL;
    double m = 1;
    if (p) {
        switch (*p) {
        case 'k': case 'K': m = 1024.0; p++; break;
        case 'm': case 'M': m = 1024.0 * 1024; p++; break;
        case 'g': case 'G': m = 1024.0 * 1024 * 1024; p++; break;
        case 't': case 'T': m = 1024.0 * 1024 * 1024 * 1024; p++; break;
        }
        if (m > 1 && (!strcmp(p, "B") || !strcmp(p, "iB")))
            p += strlen(p);
        else if (m == 1 && !strcmp(p, "B"))
            p++;
    }
    if (!p || *p)
        return mfs_errf(err, "%s=%s: not a size (a number with an optional K, M, G or T suffix, "
                             "e.g. 512M or 2G)", name, s ? s : "");
    v *= m;
    char lim[32];
    if (v > (double)max || v >= 18446744073709551616.0) {
        mfs_optv_size_text(max, lim, sizeof lim);
        return mfs_errf(err, "%s=%s: too large (at most %s)", name, s, lim);
    }
    if (v < (double)min) {
        mfs_optv_size_text(min, lim, sizeof lim);
        return mfs_errf(err, "%s=%s: too small (at least %s)", name, s, lim);
    }
    *out = (uint64_t)v;
    return 0;
}

int mfs_optv_seconds(const char *name, const char *s, double max, double *out, mfs_err *err)
{
    double v;
    const char *p = s ? decimal(s, &v) : NULL;
    if (!p || *p)
        return mfs_errf(err, "%s=%s: not a number of seconds (e.g. 60 or 2.5)", name, s ? s : "");
    if (!(v > 0))
        return mfs_errf(err, "%s=%s: must be more than 0 seconds", name, s);
    if (v > max)
        return mfs_errf(err, "%s=%s: too long (at most %g s)", name, s, max);
    *out = v;
    return 0;
}

int mfs_optv_count(const char *name, const char *s, unsigned min, unsigned max, unsigned *out,
                   mfs_err *err)
{
    unsigned long long v = 0;
    const char *p = s;
    for (; p && *p >= '0' && *p <= '9'; p++)
        if ((v = v * 10 + (unsigned)(*p - '0')) > 0xffffffffull)
            v = 0xffffffffull + 1; /* saturate: too large either way */
    if (!p || p == s || *p)
        return mfs_errf(err, "%s=%s: not a whole number", name, s ? s : "");
    if (v < min)
        return mfs_errf(err, "%s=%s: must be at least %u", name, s, min);
    if (v > max)
        return mfs_errf(err, "%s=%s: at most %u", name, s, max);
    *out = (unsigned)v;
    return 0;
}

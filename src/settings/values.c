/* The values of a settings file: each parser takes the value as written
 * (inline comment and blanks already cut) and says in err what it wanted. */
#include "values.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "meshfs/err.h"

int mfs_setval_number(const char *v, double lo, double hi, double *out, mfs_err *err)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(d))
        return mfs_errf(err, "'%s' is not a number", v);
    if (d < lo || d > hi)
        return mfs_errf(err, "%g is outside %g..%g", d, lo, hi);
    *out = d;
    return 0;
}

int mfs_setval_bool(const char *v, int *out, mfs_err *err)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (!strcasecmp(v, yes[i]))
            return *out = 1, 0;
        if (!strcasecmp(v, no[i]))
            return *out = 0, 0;
    }
    return mfs_errf(err, "'%s' is not true or false", v);
}

int mfs_setval_unit(const char *v, double *scale, mfs_err *err)
{
    /* metres per unit: the views are in metres (docs/import.md, "Units") */
    static const struct {
        const char *name;
        double metres;
    } units[] = {{"mm", 0.001}, {"cm", 0.01}, {"m", 1.0}, {"in", 0.0254}, {"ft", 0.3048}};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(v, units[i].name))
            return *scale = units[i].metres, 0;
    return mfs_errf(err, "'%s' is not one of mm, cm, m, in, ft", v);
}

int mfs_setval_axis(const char *v, mfs_axis *out, mfs_err *err)
{
    int sign = 1;
    const char *p = v;
    if (*p == '-' || *p == '+')
        sign = *p++ == '-' ? -1 : 1;
    if ((p[0] == 'x' || p[0] == 'y' || p[0] == 'z') && !p[1]) {
        out->index = p[0] - 'x';
        out->sign = sign;
        return 0;
    }
    return mfs_errf(err, "'%s' is not one of x, y, z, -x, -y, -z", v);
}

int mfs_setval_normals(const char *v, int *compute, double *angle, mfs_err *err)
{
    if (!strcmp(v, "keep"))
        return *compute = 0, *angle = 0, 0;
    if (strncmp(v, "compute", 7) || (v[7] && !isspace((unsigned char)v[7])))
        return mfs_errf(err, "'%s' is not 'keep' or 'compute ANGLE'", v);
    const char *a = v + 7;
    while (isspace((unsigned char)*a))
        a++;
    if (!*a)
        return mfs_errf(err, "'compute' needs an angle in degrees (compute 60)");
    double d;
    if (mfs_setval_number(a, 0.0, 180.0, &d, err) < 0)
        return mfs_err_prefix(err, "smoothing angle");
    if (d <= 0.0)
        return mfs_errf(err, "smoothing angle must be above 0 degrees");
    *compute = 1;
    *angle = d;
    return 0;
}

int mfs_setval_clip_time(const char *v, mfs_clip_time *out, mfs_err *err)
{
    size_t n = strlen(v);
    int seconds = n > 1 && v[n - 1] == 's';
    char num[64];
    if (n - seconds >= sizeof num)
        return mfs_errf(err, "'%s' is too long for a time", v);
    memcpy(num, v, n - seconds);
    num[n - seconds] = 0;
    double d;
    if (mfs_setval_number(num, 0.0, 1e7, &d, err) < 0)
        return mfs_errf(err, "'%s' is not a frame (31) or seconds (1.2s) at or above 0", v);
    out->value = d;
    out->seconds = seconds;
    return 0;
}

/* UTF-8 well-formedness (no overlongs, no surrogates), printable. */
static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (n < 0 || (n == 0 && c < 0x20) || c == 0x7f || (n == 1 && c < 0xc2) || (c == 0xf4 && p[1] > 0x8f) ||
            c > 0xf4)
            return 0;
        if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90))
            return 0;
        for (int i = 1; i <= n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += n + 1;
    }
    return 1;
}

int mfs_setval_name(const char *v, char *out, size_t n, mfs_err *err)
{
    size_t len = strlen(v);
    if (!len)
        return mfs_errf(err, "a name is empty");
    if (len >= n)
        return mfs_errf(err, "'%.20s...' is longer than %zu bytes", v, n - 1);
    if (!utf8_ok(v))
        return mfs_errf(err, "a name is not printable UTF-8 text");
    memcpy(out, v, len + 1);
    return 0;
}

int mfs_setval_relpath(const char *v, char *out, size_t n, mfs_err *err)
{
    if (mfs_setval_name(v, out, n, err) < 0)
        return -1;
    if (v[0] == '/' || strchr(v, '\\'))
        return mfs_errf(err, "'%s': a path relative to the model's folder, with '/' between names", v);
    for (const char *p = v; *p;) {
        size_t seg = strcspn(p, "/");
        if ((seg == 2 && p[0] == '.' && p[1] == '.') || seg == 0)
            return mfs_errf(err, "'%s': a path may not hold '..' or an empty name", v);
        p += seg;
        if (*p)
            p++;
    }
    return 0;
}

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meshfs/err.h"

int mfs_errf(mfs_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int mfs_err_sys(mfs_err *err, int errnum, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = errnum;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int mfs_err_code(mfs_err *err, int errnum)
{
    if (err) {
        err->code = errnum;
        err->msg[0] = '\0';
    }
    return -1;
}

int mfs_err_errno(const mfs_err *err)
{
    return err && err->code > 0 ? err->code : EIO;
}

int mfs_err_prefix(mfs_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prefix[MFS_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Built by hand: snprintf("%s: %s") trips -Wformat-truncation. */
    char out[MFS_ERR_MAX];
    size_t n = 0;
    const char *parts[3] = {prefix, err->msg[0] ? ": " : "", err->msg};
    for (int i = 0; i < 3; i++)
        for (const char *c = parts[i]; *c && n + 1 < sizeof out; c++)
            out[n++] = *c;
    out[n] = '\0';
    memcpy(err->msg, out, n + 1);
    return -1;
}

void mfs_err_clear(mfs_err *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

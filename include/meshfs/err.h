/* Errors carried up with context.
 *
 * Every fallible function takes an mfs_err* and returns -1 (or NULL) after
 * filling it; callers add context with mfs_err_prefix() on the way up, so the
 * message a user finally sees reads "car.fbx: fmd: mesh 'wheel': too many
 * vertices" rather than a bare errno. */
#ifndef MESHFS_ERR_H
#define MESHFS_ERR_H

#include <stddef.h>

#define MFS_ERR_MAX 512

typedef struct mfs_err {
    char msg[MFS_ERR_MAX];
} mfs_err;

#if defined(__GNUC__)
#define MFS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MFS_PRINTF(a, b)
#endif

/* Sets the message (truncating safely) and returns -1. err may be NULL. */
int mfs_errf(mfs_err *err, const char *fmt, ...) MFS_PRINTF(2, 3);

/* Prepends "prefix: " to the existing message; returns -1. */
int mfs_err_prefix(mfs_err *err, const char *fmt, ...) MFS_PRINTF(2, 3);

void mfs_err_clear(mfs_err *err);

#endif

/* Errors carried up with context.
 *
 * Every fallible function takes an mfs_err* and returns -1 (or NULL) after
 * filling it; callers add context with mfs_err_prefix() on the way up, so the
 * message a user finally sees reads "car.fbx: fmd: mesh 'wheel': too many
 * vertices" rather than a bare errno.
 *
 * The rule for the whole tree (docs/architecture.md, "One error rule"):
 * libraries return -1 (or NULL) with an mfs_err; only the mount hands a
 * negative errno to the FUSE session.  Where the errno matters to the
 * caller (ENOENT against EIO, ENOMEM, EAGAIN "try again"), the library
 * says it with mfs_err_sys() and the caller reads mfs_err_errno(). */
#ifndef MESHFS_ERR_H
#define MESHFS_ERR_H

#include <stddef.h>

#define MFS_ERR_MAX 512

typedef struct mfs_err {
    int code; /* an errno the caller may act on; 0: none said (EIO) */
    char msg[MFS_ERR_MAX];
} mfs_err;

#if defined(__GNUC__)
#define MFS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MFS_PRINTF(a, b)
#endif

/* Sets the message (truncating safely) and returns -1. err may be NULL.
 * The code becomes 0. */
int mfs_errf(mfs_err *err, const char *fmt, ...) MFS_PRINTF(2, 3);

/* As mfs_errf, and the code becomes errnum. */
int mfs_err_sys(mfs_err *err, int errnum, const char *fmt, ...) MFS_PRINTF(3, 4);

/* Sets the code alone, with no text, and returns -1: for an outcome the
 * caller expects and acts on (a name absent, "try again"), where making
 * text would only cost a hot path.  err may be NULL. */
int mfs_err_code(mfs_err *err, int errnum);

/* The errno a failure stands for: its code, or EIO when none was said. */
int mfs_err_errno(const mfs_err *err);

/* Prepends "prefix: " to the existing message, keeping its code; returns -1. */
int mfs_err_prefix(mfs_err *err, const char *fmt, ...) MFS_PRINTF(2, 3);

void mfs_err_clear(mfs_err *err);

#endif

/* Values of command-line and mount options, checked whole.
 *
 * atoi, strtod and libfuse's "%u" accept far too much: "-5" becomes
 * 4294967291 jobs, "inf" and "nan" become sizes (undefined behaviour when
 * converted to an integer), "12abc" becomes 12.  Each parser here accepts
 * one plain spelling and otherwise fails with a message naming the option
 * and the value ("-o cache_size=inf: not a size ..."), which both meshfs
 * and meshfs-convert print before exiting with status 2.
 *
 * `name` is the option as the user wrote it: "-o cache_size", "--memory". */
#ifndef MESHFS_OPTVALUE_H
#define MESHFS_OPTVALUE_H

#include <stdint.h>

#include "meshfs/err.h"

/* A byte size: decimal digits with an optional fraction, then an optional
 * K, M, G or T (powers of 1024, either case), optionally followed by B or
 * iB.  No sign, no exponent, no spaces.  Within [min, max]. */
int mfs_optv_size(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out,
                  mfs_err *err);

/* Seconds: decimal digits with an optional fraction; more than 0, at most
 * max. */
int mfs_optv_seconds(const char *name, const char *s, double max, double *out, mfs_err *err);

/* A count: decimal digits only, within [min, max]. */
int mfs_optv_count(const char *name, const char *s, unsigned min, unsigned max, unsigned *out,
                   mfs_err *err);

/* Text for a size in messages: "512M", "1.5G", "300" (bytes). */
void mfs_optv_size_text(uint64_t v, char *buf, unsigned n);

#endif

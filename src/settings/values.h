/* Value parsers of settings files (src/settings/, private). Each returns 0,
 * or -1 with err saying what the value should have been. */
#ifndef MESHFS_SETTINGS_VALUES_H
#define MESHFS_SETTINGS_VALUES_H

#include <stddef.h>

#include "meshfs/settings.h"

struct mfs_err;

int mfs_setval_number(const char *v, double lo, double hi, double *out, struct mfs_err *err);
int mfs_setval_bool(const char *v, int *out, struct mfs_err *err);
int mfs_setval_unit(const char *v, double *scale, struct mfs_err *err);
int mfs_setval_axis(const char *v, mfs_axis *out, struct mfs_err *err);
int mfs_setval_normals(const char *v, int *compute, double *angle, struct mfs_err *err);
int mfs_setval_clip_time(const char *v, mfs_clip_time *out, struct mfs_err *err);
/* printable UTF-8, 1..n-1 bytes */
int mfs_setval_name(const char *v, char *out, size_t n, struct mfs_err *err);
/* a name, relative, '/'-separated, no '..' or empty segment, no '\' */
int mfs_setval_relpath(const char *v, char *out, size_t n, struct mfs_err *err);

#endif

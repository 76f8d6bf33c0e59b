/* The cache's file system refusing to store: told apart from a model's
 * failure, and said as the cache's.
 *
 * A worker writes its outputs into the cache's tmp/, and the host copies
 * them into entries there, so a full disk (ENOSPC), a full quota (EDQUOT),
 * a file system remounted read-only (EROFS) or failing (EIO) shows as a
 * failure of every view of every model.  Such a failure comes up as text
 * (the worker's report, an mfs_err); it ends with strerror() of its errno,
 * which is what is recognised here. */
#ifndef MESHFS_STORERR_H
#define MESHFS_STORERR_H

#include <stddef.h>

/* ENOSPC, EDQUOT, EROFS or EIO when msg ends with its strerror() text
 * (msg may be NULL), else 0. */
int mfs_storerr_of(const char *msg);

/* The reason a view fails for it, as users read it (user.meshfs.error):
 * "cache: No space left on device while storing views; ...".  No path. */
void mfs_storerr_reason(int errnum, char *out, size_t n);

/* Is msg such a reason (mfs_storerr_reason)? */
int mfs_storerr_is_reason(const char *msg);

/* What brings storing back, for errnum: "space is freed", ... */
const char *mfs_storerr_remedy(int errnum);

#endif

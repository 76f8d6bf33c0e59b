/* Iterating the entry directory: every finished entry and manifest, named
 * <ENTRY_DIR>/<2 hex>/<30 hex>.[em] (cache_int.h), with its key and stat.
 * The one place outside key.c and evict.c that knows the layout, so the
 * management operations (verify.c, clear.c, usage) follow any change of it. */
#ifndef MESHFS_CACHE_WALK_H
#define MESHFS_CACHE_WALK_H

#include <sys/stat.h>

#include "cache_int.h"

/* path: relative to c->dirfd; suffix 'e' or 'm'.  Return 0 to go on, -1 to
 * stop (the walk then returns -1). */
typedef int (*mfs_cache_walk_fn)(void *ctx, mfs_cache *c, const char *path,
                                 const mfs_cache_key *k, char suffix, const struct stat *st);

/* Files that vanish meanwhile (another process evicting) are skipped;
 * temporary files never match (they live in tmp/).  0 or -1. */
int mfs_cache_walk(mfs_cache *c, mfs_cache_walk_fn fn, void *ctx);

#endif

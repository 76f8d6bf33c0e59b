/* The owed list of the remote tier (owed.c; docs/remote-cache.md,
 * "Uploads an outage skipped"): uploads that could not be sent, kept on
 * disk beside the entries they name, so a later upload thread, or
 * `meshfs-cache push`, sends them.
 *
 * One record a key, owed/<32 hex>.<e|m> (a view entry or a model entry),
 * 16 bytes: "mfsowed1", then a flags byte (bit 0: put over what the
 * server has, the object there was found bad) and 7 zero bytes.  Written
 * to a temporary name in owed/ and renamed, so a record is whole or
 * absent; the objects themselves are the cache's entries.  Older meshfs
 * versions ignore the folder. */
#ifndef MESHFS_REMOTE_OWED_H
#define MESHFS_REMOTE_OWED_H

#include <stdint.h>

#include "meshfs/cache.h"

#define MFS_OWED_DIR "owed"
/* What a record is charged against the bound: the block a small file
 * takes on most file systems, not its 16 bytes. */
#define MFS_OWED_RECORD_BYTES 4096u

typedef struct mfs_owed_item {
    mfs_cache_key key;
    int manifest; /* the 'm' entry (a model entry), else the 'e' one */
    int over;     /* put even if the server has one (found bad) */
} mfs_owed_item;

/* Records it: 1 new, 0 already there (its over flag raised if asked),
 * -2 not there and not may_add (the list is full), -1 with errno. */
int mfs_owed_put(mfs_cache *c, const mfs_owed_item *it, int may_add);
/* Removes its record: 1 removed, 0 there was none. */
int mfs_owed_done(mfs_cache *c, const mfs_cache_key *k, int manifest);
/* Up to max records (any order) into out; *total (may be NULL) gets how
 * many records the folder holds.  The number put in out, or -1 (errno);
 * no folder is an empty list. */
long mfs_owed_list(mfs_cache *c, mfs_owed_item *out, size_t max, uint64_t *total);
/* The object's name as the log shows it, "view/3f/<30 hex>". */
void mfs_owed_name(const mfs_owed_item *it, char *out, size_t n);

#endif

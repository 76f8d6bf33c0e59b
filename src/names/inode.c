/* The inode numbers the mount shows (docs/architecture.md, step 4): a
 * view's a hash of what makes it a file of its own, with the top bit set;
 * a source entry's its own, unless it lies on another file system mounted
 * inside SRC.  Stable across remounts: they are made of what is on disk,
 * not of the order anything was asked for. */
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <xxhash.h>

#include "names.h"

uint64_t mfs_inode_view(dev_t dev, ino_t ino, uint64_t where, int format)
{
    uint64_t k[4] = {(uint64_t)dev, (uint64_t)ino, (uint64_t)format, where};
    return XXH3_64bits(k, sizeof k) | (1ull << 63);
}

uint64_t mfs_inode_src(const mfs_names_state *ns, dev_t dev, ino_t ino)
{
    if (dev == ns->src_dev)
        return (uint64_t)ino;
    uint64_t k[2] = {(uint64_t)dev, (uint64_t)ino};
    return (XXH3_64bits(k, sizeof k) & ~(1ull << 63)) | (1ull << 62);
}

/* dirmap.c's where_in gives the same number with the folder's hash taken
 * once for its table. */
uint64_t mfs_inode_where(const char *dir, const char *base)
{
    return XXH3_64bits_withSeed(base, strlen(base), XXH3_64bits(dir, strlen(dir)));
}

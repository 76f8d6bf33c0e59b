/* Whether a directory may be used as a cache (docs/cache.md, "Where").
 *
 * Opening a cache makes tmp/, v2/, index/, a lock file and CACHEDIR.TAG in
 * its directory, and removes a v1/ tree it finds there.  A mistyped
 * cache_dir= or --cache-dir naming a folder of the user's own (an asset
 * tree with a v1/ of its own, a home folder) would lose that v1/, and the
 * tag would make backup tools that honour it skip the whole folder from
 * then on.  So a directory is used only if it is new or empty, holds the
 * tag meshfs writes, or holds nothing but the names meshfs makes (a cache
 * of a version before the tag, or one whose tag was deleted). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "meshfs/cache_admin.h"

static const char *const ours[] = {
    MFS_CACHE_ENTRY_DIR, MFS_CACHE_OLD_ENTRY_DIR, MFS_CACHE_TMP_DIR, MFS_CACHE_INDEX_DIR,
    MFS_CACHE_INDEX_FILE, MFS_CACHE_LOCK_FILE, MFS_CACHE_STATS_FILE, MFS_CACHE_TAG_FILE,
};

static int is_ours(const char *name)
{
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++)
        if (!strcmp(name, ours[i]))
            return 1;
    return 0;
}

/* The first name in dirfd that meshfs would not have made, into other;
 * 0 if there is none, 1 if there is, -1 with errno if it cannot be read. */
static int first_other(int dirfd, char *other, size_t n)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || is_ours(de->d_name))
            continue;
        snprintf(other, n, "%s", de->d_name);
        found = 1;
    }
    closedir(d);
    return found;
}

int mfs_cache_claim(const char *dir, int dirfd, mfs_err *err)
{
    int tag = mfs_cache_tag_owner(dirfd);
    if (tag > 0)
        return 0;
    if (tag < 0)
        return mfs_errf(err, "cache: %s holds another program's %s; refusing to use it "
                        "(give a folder of meshfs's own)", dir, MFS_CACHE_TAG_FILE);
    char other[256];
    int r = first_other(dirfd, other, sizeof other);
    if (r < 0)
        return mfs_errf(err, "cache: reading %s: %s", dir, strerror(errno));
    if (r > 0)
        return mfs_errf(err, "cache: %s holds files meshfs did not make ('%s') and no %s of "
                        "meshfs; refusing to make it a cache (give a new or empty folder)",
                        dir, other, MFS_CACHE_TAG_FILE);
    return 0;
}

int mfs_cache_is_ours(const char *dir)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int tag = mfs_cache_tag_owner(fd);
    close(fd);
    return tag > 0;
}

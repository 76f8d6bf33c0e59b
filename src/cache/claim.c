/* Whether a directory may be used as a cache (docs/cache.md, "Layout on
 * disk").
 *
 * Opening a cache makes tmp/, v2/, index/, a lock file and CACHEDIR.TAG in
 * its directory, removes a v1/ tree and old files under tmp/, and moves an
 * index.log away.  A mistyped cache_dir= or --cache-dir naming a folder of
 * the user's own (an asset tree with a v1/ or a tmp/ of its own, a home
 * folder) would lose those, and the tag would make backup tools that
 * honour it skip the whole folder from then on.  So a directory is used
 * only if it holds the tag meshfs writes, or nothing yet (lost+found and a
 * tag naming no program aside: a volume or folder made for the cache), or
 * a cache's own layout with its v2/ and lock (one whose tag was lost). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "meshfs/cache.h"

static const char *const layout[] = {
    MFS_CACHE_ENTRY_DIR, MFS_CACHE_OLD_ENTRY_DIR, MFS_CACHE_TMP_DIR, MFS_CACHE_INDEX_DIR,
    MFS_CACHE_INDEX_FILE, MFS_CACHE_LOCK_FILE, MFS_CACHE_STATS_FILE, MFS_CACHE_MAX_SIZE_FILE,
    "owed", /* the remote tier's owed uploads (src/remote/owed.h) */
};

static int in_layout(const char *name)
{
    for (size_t i = 0; i < sizeof layout / sizeof *layout; i++)
        if (!strcmp(name, layout[i]))
            return 1;
    return 0;
}

/* What dirfd holds besides a tag and lost+found. */
typedef struct holds {
    int layout;       /* names of a cache's layout */
    int v2, lock;     /* ... among them the two every cache has */
    char other[256];  /* the first name a cache would not hold ("" if none) */
} holds;

static int scan(int dirfd, holds *h)
{
    memset(h, 0, sizeof *h);
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, MFS_CACHE_TAG_FILE) ||
            !strcmp(n, "lost+found"))
            continue;
        if (in_layout(n)) {
            h->layout++;
            h->v2 |= !strcmp(n, MFS_CACHE_ENTRY_DIR);
            h->lock |= !strcmp(n, MFS_CACHE_LOCK_FILE);
        } else if (!h->other[0]) {
            snprintf(h->other, sizeof h->other, "%s", n);
        }
    }
    closedir(d);
    return 0;
}

int mfs_cache_claim(const char *dir, int dirfd, mfs_err *err)
{
    int tag = mfs_cache_tag_kind(dirfd);
    if (tag == MFS_TAG_OURS)
        return 0;
    if (tag == MFS_TAG_UNREADABLE)
        return mfs_errf(err, "cache: reading %s/%s: %s", dir, MFS_CACHE_TAG_FILE, strerror(errno));
    if (tag == MFS_TAG_OTHER)
        return mfs_errf(err, "cache: %s holds another program's %s; refusing to use it "
                        "(give a folder of meshfs's own)", dir, MFS_CACHE_TAG_FILE);
    holds h;
    if (scan(dirfd, &h) < 0)
        return mfs_errf(err, "cache: reading %s: %s", dir, strerror(errno));
    if (h.other[0])
        return mfs_errf(err, "cache: %s holds files meshfs did not make ('%s') and no %s of "
                        "meshfs; refusing to make it a cache (give a new or empty folder)",
                        dir, h.other, MFS_CACHE_TAG_FILE);
    if (h.layout && !(h.v2 && h.lock))
        return mfs_errf(err, "cache: %s holds some of a cache's names but no %s of meshfs, "
                        "%s/ or %s; refusing to make it a cache (give a new or empty folder)",
                        dir, MFS_CACHE_TAG_FILE, MFS_CACHE_ENTRY_DIR, MFS_CACHE_LOCK_FILE);
    return 0;
}

int mfs_cache_is_ours(const char *dir)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int tag = mfs_cache_tag_kind(fd);
    close(fd);
    return tag == MFS_TAG_OURS;
}

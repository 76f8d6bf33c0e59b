/* The cache directory removed under a running handle (`rm -rf` of it, or
 * of everything in it, while a mount uses it): made again, so the mount
 * goes on converting and storing instead of failing every view until it is
 * remounted.
 *
 * Every cache file names its paths relative to c->dirfd (and evicts under
 * c->lockfd), and other threads use those descriptors at any moment.  So
 * they are never closed: the new directory's descriptor is put in place of
 * the old one with dup3(), which swaps what the number refers to
 * atomically.  A thread that was mid-operation on the removed directory
 * sees one failure (ENOENT), exactly as it would have without the revival.
 *
 * The new directory passes the checks mfs_cache_open applies (cache.c): a
 * real directory owned by us and writable by nobody else.  An attacker who
 * could plant a link or a directory of their own where the cache was gets
 * the same refusal as at mount time (docs/security.md). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_int.h"

static pthread_mutex_t revive_mu = PTHREAD_MUTEX_INITIALIZER;
/* revive writes CACHEDIR.TAG and the index through the ordinary writers,
 * whose ENOENT path calls revive: not again on the same thread */
static _Thread_local int reviving;

/* The directory open at dirfd has been removed (an unlinked directory has
 * no links left). */
static int dir_removed(const mfs_cache *c)
{
    struct stat st;
    return fstat(c->dirfd, &st) == 0 && st.st_nlink == 0;
}

/* Its contents were removed (rm -rf of everything in it): the lock file
 * is no longer ours. */
static int contents_removed(const mfs_cache *c)
{
    struct stat a, b;
    return fstat(c->lockfd, &a) == 0 &&
           (fstatat(c->dirfd, MFS_CACHE_LOCK_FILE, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
            a.st_dev != b.st_dev || a.st_ino != b.st_ino);
}

static int replace_fd(int newfd, int target)
{
    int r = dup3(newfd, target, O_CLOEXEC);
    close(newfd);
    return r < 0 ? -1 : 0;
}

static int revive_locked(mfs_cache *c, mfs_err *err)
{
    if (dir_removed(c)) {
        if (mfs_cache_mkdir_p(c->dir, err) < 0)
            return -1;
        int fd = mfs_cache_open_trusted(AT_FDCWD, c->dir, c->dir, err);
        if (fd < 0)
            return -1;
        if (replace_fd(fd, c->dirfd) < 0)
            return mfs_errf(err, "cache %s: %s", c->dir, strerror(errno));
    } else if (!contents_removed(c)) {
        return 0;
    }
    static const char *const subdirs[] = {MFS_CACHE_TMP_DIR, MFS_CACHE_ENTRY_DIR};
    for (size_t i = 0; i < 2; i++) {
        if (mkdirat(c->dirfd, subdirs[i], 0700) < 0 && errno != EEXIST)
            return mfs_errf(err, "cache: creating %s/%s: %s", c->dir, subdirs[i], strerror(errno));
        char shown[4200];
        snprintf(shown, sizeof shown, "%s/%s", c->dir, subdirs[i]);
        int sub = mfs_cache_open_trusted(c->dirfd, subdirs[i], shown, err);
        if (sub < 0)
            return -1;
        close(sub);
    }
    int lock = openat(c->dirfd, MFS_CACHE_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock < 0 || replace_fd(lock, c->lockfd) < 0)
        return mfs_errf(err, "cache: opening %s/%s: %s", c->dir, MFS_CACHE_LOCK_FILE,
                        strerror(errno));
    /* nothing is left to count: the size estimate starts again */
    pthread_mutex_lock(&c->mu);
    c->st.size = 0;
    pthread_mutex_unlock(&c->mu);
    if (mfs_cache_write_tag(c, err) < 0)
        return -1;
    mfs_index_revive(c);
    MFS_CACHE_STAT_ADD(c, revivals, 1);
    return 1;
}

void mfs_cache_stop_reviving(mfs_cache *c)
{
    pthread_mutex_lock(&revive_mu); /* a revival under way ends first */
    atomic_store(&c->no_revive, 1);
    pthread_mutex_unlock(&revive_mu);
}

int mfs_cache_revive(mfs_cache *c, mfs_err *err)
{
    if (reviving || atomic_load(&c->no_revive) || (!dir_removed(c) && !contents_removed(c)))
        return 0;
    /* Revival takes an index's lock inside this one (mfs_index_revive), so
     * a thread holding an index's lock (its shard's log met tmp/ gone) may
     * not wait here: the thread reviving would wait for its index lock
     * while it waits for this (ThreadSanitizer found the cycle in
     * test_coherence).  It only tries: 0, and the caller makes tmp/ alone;
     * the revival under way makes the rest. */
    if (mfs_index_held()) {
        if (pthread_mutex_trylock(&revive_mu) != 0)
            return 0;
    } else {
        pthread_mutex_lock(&revive_mu);
    }
    reviving = 1;
    int r = atomic_load(&c->no_revive) ? 0 : revive_locked(c, err);
    reviving = 0;
    pthread_mutex_unlock(&revive_mu);
    return r;
}

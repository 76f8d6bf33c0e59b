/* Opening the cache: its directory, leftover temporary files, the index,
 * the first size scan, statistics.  The top of the cache's layering: it
 * calls io.c, index.c, evict.c and revive.c, and none of them calls back.
 *
 * The directory is trusted only once it is proven to be ours: a real
 * directory (not a symlink), owned by the user running meshfs, writable by
 * nobody else; the same for tmp/ and v2/.  Then every operation is relative
 * to the descriptors opened here, without following links, so a root daemon
 * never writes or deletes anywhere another user chose (docs/security.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_int.h"

/* ---- directory -------------------------------------------------------- */

int mfs_cache_default_dir(char *buf, size_t n, mfs_err *err)
{
    /* XDG base directory spec: a relative or empty XDG_CACHE_HOME is ignored. */
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int len;
    if (geteuid() == 0)
        /* root's environment may be a user's (sudo keeps HOME): a root
         * daemon must not adopt a directory that user controls */
        len = snprintf(buf, n, "%s", MFS_CACHE_ROOT_DIR);
    else if (xdg && xdg[0] == '/')
        len = snprintf(buf, n, "%s/meshfs", xdg);
    else if (home && home[0] == '/')
        len = snprintf(buf, n, "%s/.cache/meshfs", home);
    else
        return mfs_errf(err, "cache: neither XDG_CACHE_HOME nor HOME is an absolute path");
    if (len < 0 || (size_t)len >= n)
        return mfs_errf(err, "cache: directory name too long");
    return 0;
}

/* Newest mtime anywhere in the tree open at fd.  Too deep to judge counts
 * as fresh, so it is never removed. */
static int64_t tree_newest(int fd, int depth)
{
    struct stat st;
    if (depth == 0 || fstat(fd, &st) < 0)
        return INT64_MAX;
    int64_t newest = mfs_cache_ts_ns(&st.st_mtim);
    int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = own >= 0 ? fdopendir(own) : NULL;
    if (!d) {
        if (own >= 0)
            close(own);
        return INT64_MAX;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL && newest != INT64_MAX) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int64_t m = INT64_MAX;
        if (fstatat(own, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            m = mfs_cache_ts_ns(&st.st_mtim);
            if (S_ISDIR(st.st_mode)) {
                int sub = openat(own, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                m = sub >= 0 ? tree_newest(sub, depth - 1) : INT64_MAX;
                if (sub >= 0)
                    close(sub);
            }
        }
        if (m > newest)
            newest = m;
    }
    closedir(d);
    return newest;
}

static int remove_tree(int parent, const char *name, int depth)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode) && depth > 1)
            remove_tree(fd, de->d_name, depth - 1);
        else
            unlinkat(fd, de->d_name, 0);
    }
    closedir(d);
    return unlinkat(parent, name, AT_REMOVEDIR);
}

/* tmp/ holds our temporary files and the daemon's per-job worker output
 * directories.  A writer keeps its file's mtime fresh by writing to it, and
 * a worker its directory's by creating files in it, so anything untouched
 * for tmp_max_age_s belongs to a process that died mid-write. */
static void clean_tmp(mfs_cache *c)
{
    int fd = openat(c->dirfd, MFS_CACHE_TMP_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    enum { DEPTH = 8 };
    int64_t limit = mfs_cache_now_ns() - (int64_t)c->tmp_max_age_s * 1000000000;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int64_t newest = sub >= 0 ? tree_newest(sub, DEPTH) : INT64_MAX;
            if (sub >= 0)
                close(sub);
            if (newest < limit && remove_tree(fd, de->d_name, DEPTH) == 0)
                c->st.tmp_cleaned++;
        } else if (mfs_cache_ts_ns(&st.st_mtim) < limit && unlinkat(fd, de->d_name, 0) == 0) {
            c->st.tmp_cleaned++;
        }
    }
    closedir(d);
}

static int open_dirs(mfs_cache *c, mfs_err *err)
{
    if (mfs_cache_mkdir_p(c->dir, err) < 0)
        return -1;
    c->dirfd = mfs_cache_open_trusted(AT_FDCWD, c->dir, c->dir, err);
    if (c->dirfd < 0 || mfs_cache_claim(c->dir, c->dirfd, err) < 0)
        return -1;
    static const char *const subdirs[] = {MFS_CACHE_TMP_DIR, MFS_CACHE_ENTRY_DIR};
    for (size_t i = 0; i < 2; i++) {
        if (mkdirat(c->dirfd, subdirs[i], 0700) < 0 && errno != EEXIST)
            return mfs_errf(err, "cache: creating %s/%s: %s", c->dir, subdirs[i],
                            strerror(errno));
        char shown[4200];
        snprintf(shown, sizeof shown, "%s/%s", c->dir, subdirs[i]);
        int fd = mfs_cache_open_trusted(c->dirfd, subdirs[i], shown, err);
        if (fd < 0)
            return -1;
        close(fd);
    }
    c->lockfd = openat(c->dirfd, MFS_CACHE_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (c->lockfd < 0)
        return mfs_errf(err, "cache: opening %s/%s: %s", c->dir, MFS_CACHE_LOCK_FILE,
                        strerror(errno));
    return mfs_cache_write_tag(c, err);
}

int mfs_cache_open(const mfs_cache_config *cfg, mfs_cache **out, mfs_err *err)
{
    static const mfs_cache_config defaults = {0};
    if (!cfg)
        cfg = &defaults;
    *out = NULL;
    mfs_cache *c = calloc(1, sizeof *c);
    if (!c)
        return mfs_errf(err, "cache: out of memory");
    c->dirfd = c->lockfd = -1;
    c->max_size = cfg->max_size ? cfg->max_size : MFS_CACHE_DEFAULT_MAX_SIZE;
    if (cfg->flags & MFS_CACHE_NO_CAP)
        c->max_size = UINT64_MAX;
    c->tmp_max_age_s = cfg->tmp_max_age_s ? cfg->tmp_max_age_s : MFS_CACHE_DEFAULT_TMP_AGE;
    c->flags = cfg->flags;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->evict_mu, NULL);
    c->revive = mfs_cache_revive;
    char def[4096];
    if (cfg->dir) {
        c->dir = strdup(cfg->dir);
    } else {
        if (mfs_cache_default_dir(def, sizeof def, err) < 0)
            goto fail;
        c->dir = strdup(def);
    }
    if (!c->dir) {
        mfs_errf(err, "cache: out of memory");
        goto fail;
    }
    if (open_dirs(c, err) < 0 || mfs_index_open(c, cfg->index_cap, err) < 0)
        goto fail;
    /* no cap of its own: the one meshfs-cache max-size stored, if any */
    uint64_t stored;
    if (!cfg->max_size && !(cfg->flags & MFS_CACHE_NO_CAP) &&
        mfs_cache_max_size_read_at(c->dirfd, &stored) == 1)
        c->max_size = stored ? stored : UINT64_MAX;
    clean_tmp(c);
    /* Version 1 entries (payload after a header) are never read; left, they
     * would hold disk space outside the size cap (docs/cache.md). */
    remove_tree(c->dirfd, MFS_CACHE_OLD_ENTRY_DIR, 2);
    /* The first scan both learns the size and applies a lowered cap. */
    if (mfs_cache_evict(c, err) < 0)
        goto fail;
    mfs_cache_sfile_open(c);
    *out = c;
    return 0;
fail:
    mfs_cache_close(c);
    return -1;
}

void mfs_cache_close(mfs_cache *c)
{
    if (!c)
        return;
    mfs_cache_sfile_close(c); /* counters reach the stats file */
    mfs_index_close(c);
    if (c->lockfd >= 0)
        close(c->lockfd);
    if (c->dirfd >= 0)
        close(c->dirfd);
    free(c->vset.slots);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->evict_mu);
    free(c->dir);
    free(c);
}

const char *mfs_cache_dir(const mfs_cache *c)
{
    return c->dir;
}

uint64_t mfs_cache_max_size(const mfs_cache *c)
{
    /* under the lock: mfs_cache_set_max_size may change it meanwhile */
    pthread_mutex_t *mu = (pthread_mutex_t *)&c->mu;
    pthread_mutex_lock(mu);
    uint64_t v = c->max_size;
    pthread_mutex_unlock(mu);
    return v;
}

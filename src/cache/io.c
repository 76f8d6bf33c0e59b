/* The cache's lowest layer: whole-buffer I/O, clocks, temporary files and
 * renames into place, and the checks that make a directory ours.  Every
 * other cache file builds on these; this file calls none of them
 * (cache_int.h: the layering).
 *
 * A temporary file whose tmp/ vanished asks c->revive (set by
 * mfs_cache_open to mfs_cache_revive) to make the directory again: a hook,
 * so the lowest layer does not depend on the one that revives through it. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_int.h"

#define TAG_FILE MFS_CACHE_TAG_FILE
/* https://bford.info/cachedir/: backup tools skip directories holding this. */
static const char tag_text[] =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by meshfs.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n";

int64_t mfs_cache_ts_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

int64_t mfs_cache_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return mfs_cache_ts_ns(&ts);
}

int mfs_cache_tmp_create(mfs_cache *c, char name[MFS_CACHE_PATH_MAX], mfs_err *err)
{
    /* O_EXCL over a random name: no two writers, in any process, can share
     * a temporary file, and a name never looks like an entry. */
    static atomic_uint seq;
    for (int tries = 0; tries < 8; tries++) {
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
            rnd = (uint32_t)mfs_cache_now_ns();
        snprintf(name, MFS_CACHE_PATH_MAX, MFS_CACHE_TMP_DIR "/%ld-%u-%08x.tmp", (long)getpid(),
                 atomic_fetch_add(&seq, 1u), rnd);
        int fd = openat(c->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno == ENOENT) {
            /* tmp/ removed: with the rest of the cache (the directory, or
             * all in it: revive.c makes the lock file and CACHEDIR.TAG
             * again too, whichever store meets it first), or alone */
            if (!c->revive || c->revive(c, NULL) <= 0)
                mkdirat(c->dirfd, MFS_CACHE_TMP_DIR, 0700);
        } else if (errno != EEXIST)
            return mfs_errf(err, "cache %s: creating %s: %s", c->dir, name, strerror(errno));
    }
    return mfs_errf(err, "cache %s: cannot create a temporary file", c->dir);
}

int mfs_cache_rename_into(mfs_cache *c, const char *tmp, const char *final, mfs_err *err)
{
    if (renameat(c->dirfd, tmp, c->dirfd, final) == 0)
        return 0;
    if (errno == ENOENT) {
        /* Shard directories are made on first use.  If tmp itself is gone
         * (a cleanup took it), the retry fails again: nothing half-written
         * ever gets a final name. */
        char dir[MFS_CACHE_PATH_MAX];
        snprintf(dir, sizeof dir, "%s", final);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            mkdirat(c->dirfd, MFS_CACHE_ENTRY_DIR, 0700);
            mkdirat(c->dirfd, dir, 0700);
        }
        if (renameat(c->dirfd, tmp, c->dirfd, final) == 0)
            return 0;
    }
    return mfs_errf(err, "cache %s: renaming %s to %s: %s", c->dir, tmp, final,
                    strerror(errno));
}

/* ---- directories: the same checks at open and at revival ------------- */

int mfs_cache_mkdir_p(const char *path, mfs_err *err)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf)
        return mfs_errf(err, "cache: bad directory name '%s'", path);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char save = buf[i];
        buf[i] = '\0';
        /* 0700: the cache holds derived copies of the user's own files. */
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            return mfs_errf(err, "cache: creating %s: %s", buf, strerror(errno));
        buf[i] = save;
    }
    return 0;
}

int mfs_cache_tag_kind(int dirfd)
{
    int fd = openat(dirfd, TAG_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? MFS_TAG_NONE : MFS_TAG_UNREADABLE;
    struct stat st;
    int bad = fstat(fd, &st) < 0 ? errno : S_ISREG(st.st_mode) ? 0 : EINVAL;
    if (bad) {
        close(fd);
        errno = bad;
        return MFS_TAG_UNREADABLE;
    }
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return MFS_TAG_UNREADABLE;
    }
    buf[n] = '\0';
    /* ours: the whole text as written, up to its link */
    const char *mark = strstr(tag_text, "#\thttps");
    if (!strncmp(buf, tag_text, (size_t)(mark - tag_text)))
        return MFS_TAG_OURS;
    /* the spec's convention: "... created by PROGRAM" */
    return strstr(buf, "created by") ? MFS_TAG_OTHER : MFS_TAG_GENERIC;
}

int mfs_cache_write_tag(mfs_cache *c, mfs_err *err)
{
    /* a tag naming no program, or one left empty by a crash, becomes ours
     * (mfs_cache_claim let nothing else through) */
    if (mfs_cache_tag_kind(c->dirfd) == MFS_TAG_OURS)
        return 0;
    char tmp[MFS_CACHE_PATH_MAX];
    int fd = mfs_cache_tmp_create(c, tmp, err);
    if (fd < 0)
        return -1;
    int e = mfs_pwrite_full(fd, tag_text, sizeof tag_text - 1, 0) < 0 ? errno : 0;
    close(fd);
    if (e) {
        unlinkat(c->dirfd, tmp, 0);
        return mfs_errf(err, "cache %s: writing %s: %s", c->dir, TAG_FILE, strerror(e));
    }
    if (renameat(c->dirfd, tmp, c->dirfd, TAG_FILE) < 0) {
        e = errno;
        unlinkat(c->dirfd, tmp, 0);
        return mfs_errf(err, "cache %s: %s: %s", c->dir, TAG_FILE, strerror(e));
    }
    return 0;
}

/* The checks that make a directory ours: opened at parent/name without
 * following a link, then judged by what was opened (no window between a
 * check and the use).  Returns the descriptor or -1 with the reason. */
int mfs_cache_open_trusted(int parent, const char *name, const char *shown, mfs_err *err)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return mfs_errf(err, "cache: %s is a symbolic link; refusing to use it (give the real "
                             "directory, which must belong to you)", shown);
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return mfs_errf(err, "cache: %s is not a directory (or is a symbolic link); "
                                 "refusing to use it", shown);
        return mfs_errf(err, "cache: opening %s: %s", shown, strerror(errno));
    }
    const char *why = NULL;
    char buf[128];
    if (fstat(fd, &st) < 0) {
        why = strerror(errno);
    } else if (!S_ISDIR(st.st_mode)) {
        why = "not a directory";
    } else if (st.st_uid != geteuid()) {
        snprintf(buf, sizeof buf, "owned by uid %u, not by uid %u who runs meshfs",
                 (unsigned)st.st_uid, (unsigned)geteuid());
        why = buf;
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(buf, sizeof buf, "writable by its group or others (mode %04o; chmod go-w it)",
                 (unsigned)(st.st_mode & 07777));
        why = buf;
    }
    if (why) {
        close(fd);
        return mfs_errf(err, "cache: %s is %s; refusing to use it", shown, why);
    }
    return fd;
}

/* Every path the daemon opens or stats under SRC, resolved beneath the SRC
 * descriptor (docs/security.md, S2).
 *
 * A path from the kernel has had its symbolic links resolved already,
 * through the mount and with the caller's permissions checked on the way,
 * so the daemon has no reason to follow one: a link in the middle of such a
 * path can only be a folder swapped for a link since the kernel looked, and
 * following it, even to somewhere else inside SRC, would skip the checks
 * the kernel made.  Those paths are resolved with RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS.  A dependency path is the worker's (mfs_dep: what
 * the importer opened, beneath SRC, following links that stay beneath), so
 * it is resolved the way the worker resolved it: RESOLVE_BENEATH and
 * RESOLVE_NO_MAGICLINKS only.
 *
 * On a kernel without openat2 (before 5.6) both fall back to a walk one
 * component at a time with O_NOFOLLOW, which follows no link at all. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "names.h"

/* openat2's refusal of every link, without openat2. */
static int walk_open(int rootfd, const char *rel, int flags)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", rel) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int cur = rootfd;
    char *save = NULL;
    char *comp = strtok_r(buf, "/", &save);
    if (!comp)
        return openat(rootfd, ".", flags | O_CLOEXEC);
    for (;;) {
        char *next = strtok_r(NULL, "/", &save);
        if (!strcmp(comp, "..")) {
            if (cur != rootfd)
                close(cur);
            errno = EXDEV;
            return -1;
        }
        int fd = next ? openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                      : openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (cur != rootfd)
            close(cur);
        if (fd < 0 || !next) {
            errno = e;
            return fd;
        }
        cur = fd;
        comp = next;
    }
}

static int open_how(int rootfd, const char *rel, int flags, uint64_t resolve)
{
    if (!rel[0])
        rel = ".";
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .resolve = resolve};
    int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS)
        return walk_open(rootfd, rel, flags);
    return fd;
}

int mfs_beneath_open(const mfs_names_state *ns, const char *rel, int flags)
{
    return open_how(ns->rootfd, rel, flags | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
}

/* fstat of an O_PATH descriptor, closed after, errno kept from fstat. */
static int stat_and_close(int fd, struct stat *st)
{
    if (fd < 0)
        return -1;
    int rc = fstat(fd, st);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* SRC itself: its descriptor is held, so its stat needs no walk (the
 * memo checks the root for the absent names in it on every lookup). */
static int is_root(const char *rel)
{
    return !rel[0] || !strcmp(rel, ".");
}

/* The folder this thread's listing walks (mfs_beneath_walk_begin). */
static _Thread_local int walk_fd = -1;
static _Thread_local char walk_dir[4096];
static _Thread_local size_t walk_len;

void mfs_beneath_walk_begin(const mfs_names_state *ns, const char *dir)
{
    mfs_beneath_walk_end();
    size_t len = strlen(dir);
    if (len >= sizeof walk_dir)
        return;
    walk_fd = mfs_beneath_open(ns, dir, O_PATH | O_DIRECTORY);
    memcpy(walk_dir, dir, len + 1);
    walk_len = len;
}

void mfs_beneath_walk_end(void)
{
    if (walk_fd >= 0)
        close(walk_fd);
    walk_fd = -1;
}

/* rel's name if rel is a name directly in the walked folder, else NULL. */
static const char *in_walk(const char *rel)
{
    const char *name = rel;
    if (walk_len) {
        if (strncmp(rel, walk_dir, walk_len) != 0 || rel[walk_len] != '/')
            return NULL;
        name = rel + walk_len + 1;
    }
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return NULL;
    return name;
}

int mfs_beneath_stat(const mfs_names_state *ns, const char *rel, struct stat *st)
{
    /* A name in the folder a listing walks: one fstatat on the folder,
     * which was opened beneath SRC with no link followed; the name itself
     * is not followed either, so this is the same answer as below. */
    const char *name = walk_fd >= 0 ? in_walk(rel) : NULL;
    if (name)
        return fstatat(walk_fd, name, st, AT_SYMLINK_NOFOLLOW);
    if (is_root(rel))
        return fstat(ns->rootfd, st);
    /* O_PATH|O_NOFOLLOW: a final link is opened as itself, so it can be
     * stat'ed (and read) but never followed */
    return stat_and_close(mfs_beneath_open(ns, rel, O_PATH), st);
}

ssize_t mfs_beneath_readlink(const mfs_names_state *ns, const char *rel, char *buf, size_t n)
{
    int fd = mfs_beneath_open(ns, rel, O_PATH);
    if (fd < 0)
        return -1;
    ssize_t len = readlinkat(fd, "", buf, n);
    int e = errno;
    close(fd);
    errno = e;
    return len;
}

int mfs_beneath_open_dep(const mfs_names_state *ns, const char *rel, int flags)
{
    return open_how(ns->rootfd, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
}

int mfs_beneath_stat_dep(const mfs_names_state *ns, const char *rel, struct stat *st)
{
    if (is_root(rel))
        return fstat(ns->rootfd, st);
    return stat_and_close(mfs_beneath_open_dep(ns, rel, O_PATH), st);
}

int mfs_beneath_dep_real(const mfs_names_state *ns, const char *rel, char *out, size_t n, mfs_err *err)
{
    int fd = mfs_beneath_open_dep(ns, rel, O_PATH);
    if (fd < 0)
        return mfs_err_sys(err, errno, "%s: %s", rel, strerror(errno));
    char proc[64], abs[4096];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(proc, abs, sizeof abs - 1);
    int e = errno;
    close(fd);
    if (len < 0)
        return mfs_err_sys(err, e, "%s: %s", rel, strerror(e));
    abs[len] = '\0';
    /* the descriptor's path as this process sees it: under SRC's real path
     * (cfg.src went through realpath), unless SRC moved since */
    size_t sl = strlen(ns->src);
    if (sl == 1) /* SRC is / */
        sl = 0;
    if (strncmp(abs, ns->src, sl) != 0 || (abs[sl] != '/' && abs[sl] != '\0'))
        return mfs_err_sys(err, EXDEV, "%s: not beneath SRC", rel);
    const char *r = abs[sl] ? abs + sl + 1 : "";
    if (snprintf(out, n, "%s", r) >= (int)n)
        return mfs_err_sys(err, ENAMETOOLONG, "%s: %s", rel, strerror(ENAMETOOLONG));
    return 0;
}

int mfs_beneath_hash(mfs_names_state *ns, const char *rel, struct stat *st, uint8_t hash[16], mfs_err *err)
{
    int fd = mfs_beneath_open(ns, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno; /* EWOULDBLOCK: under a lease */
        return mfs_err_sys(err, e, "%s: %s", rel, strerror(e));
    }
    int rc;
    if (fstat(fd, st) < 0) {
        int e = errno;
        rc = mfs_err_sys(err, e, "%s: %s", rel, strerror(e));
    } else if (!S_ISREG(st->st_mode)) {
        rc = mfs_err_sys(err, EIO, "%s: not a regular file", rel);
    } else if ((rc = mfs_cache_file_hash(ns->cache, fd, st, hash, err)) < 0) {
        err->code = errno ? errno : EIO;
        mfs_err_prefix(err, "%s", rel);
    }
    close(fd);
    return rc;
}

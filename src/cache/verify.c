/* meshfs-cache verify: every entry and manifest checked whole, as a lookup
 * checks a file the first time a mount opens it, but without trusting the
 * verified set and without removing anything unless asked to.
 *
 * The check itself is the store's (mfs_cache_entry_check), so this file knows
 * nothing of the container.  A file that vanishes meanwhile (a mount
 * evicting it) is skipped, not bad; one renamed over meanwhile is judged
 * by the inode opened, and mfs_cache_discard removes only that inode. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/cache.h"
#include "walk.h"

typedef struct vctx {
    int repair;
    mfs_cache_bad_fn bad;
    void *ctx;
    mfs_cache_verify_result *res;
} vctx;

static int check_one(void *ctx, mfs_cache *c, const char *path, const mfs_cache_key *k,
                     char suffix, const struct stat *st)
{
    vctx *v = ctx;
    /* O_NOATIME as the store's own reads: verifying is not a use */
    int fd = openat(c->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(c->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0; /* evicted since the listing */
    v->res->checked++;
    const char *why = NULL;
    mfs_cache_entry_info info;
    if (mfs_cache_entry_check(fd, k, suffix, &info, &why) != 1) {
        if (!why)
            why = "unreadable";
        v->res->bad++;
        int removed = 0;
        if (v->repair) {
            mfs_cache_discard(c, path, fd);
            removed = faccessat(c->dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0;
            v->res->removed += (uint64_t)removed;
        }
        if (v->bad)
            v->bad(v->ctx, path, why, removed);
    }
    close(fd);
    return 0;
}

int mfs_cache_verify(mfs_cache *c, int repair, mfs_cache_bad_fn bad, void *ctx,
                     mfs_cache_verify_result *res, mfs_err *err)
{
    memset(res, 0, sizeof *res);
    vctx v = {repair, bad, ctx, res};
    if (mfs_cache_walk(c, check_one, &v) < 0)
        return mfs_errf(err, "cache %s: verify failed", c->dir);
    return 0;
}

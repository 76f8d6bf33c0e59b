/* Objects shared with another tier (cache.h, "objects shared with another
 * tier"): the remote tier's downloads land here and its uploads are read
 * from here, so that the store's files, forms and checks stay the store's.
 *
 * A download is judged by mfs_cache_entry_check, exactly as a local entry,
 * and only then is its record moved into the xattr (the form this cache
 * writes; kept as a trailer where xattrs are refused) and the file renamed
 * in.  An upload streams the entry in the TRAILER form whichever form it
 * is kept in. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache_int.h"

/* Views, manifests and model entries (small views inside): never
 * failures, which are each machine's own. */
static int travels(int kind, char suffix)
{
    return suffix == 'm' ? kind == MFS_KIND_MANIFEST || kind == MFS_KIND_MODEL
                         : kind == MFS_KIND_VIEW;
}

int mfs_cache_dirfd(const mfs_cache *c)
{
    return c->dirfd;
}

int mfs_cache_download_begin(mfs_cache *c, char tmp[MFS_CACHE_PATH_MAX], mfs_err *err)
{
    return mfs_cache_tmp_create(c, tmp, err);
}

/* NULL fine, else why not. */
static const char *judge(mfs_cache *c, int fd, const mfs_cache_key *k, char suffix)
{
    mfs_cache_entry_info info;
    const char *why = NULL;
    int ok = mfs_cache_entry_check(fd, k, suffix, &info, &why);
    if (ok != 1)
        return why ? why : "unreadable";
    if (info.form != MFS_CACHE_FORM_TRAILER)
        return "not in the trailer form";
    if (!travels(info.kind, suffix))
        return "a kind the remote tier does not carry";
    if ((c->flags & MFS_CACHE_TRAILER_FORM) || atomic_load(&c->no_xattr))
        return NULL;
    uint8_t rec[MFS_CACHE_REC_LEN];
    if (mfs_pread_full(fd, rec, sizeof rec, info.length) != (int64_t)sizeof rec)
        return "cannot read its record";
    if (fsetxattr(fd, MFS_CACHE_XATTR, rec, sizeof rec, 0) == 0) {
        if (ftruncate(fd, (off_t)info.length) < 0) {
            fremovexattr(fd, MFS_CACHE_XATTR);
            return "cannot truncate it";
        }
    }
    return NULL;
}

int mfs_cache_download_adopt(mfs_cache *c, int fd, char tmp[MFS_CACHE_PATH_MAX],
                             const mfs_cache_key *k, char suffix, uint64_t *kept,
                             const char **why, mfs_err *err)
{
    *why = judge(c, fd, k, suffix);
    if (*why)
        return 0;
    char final[MFS_CACHE_PATH_MAX];
    mfs_cache_key_path(k, suffix, final);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return mfs_err_sys(err, errno, "%s: %s", tmp, strerror(errno));
    if (mfs_cache_rename_into(c, tmp, final, err) < 0)
        return -1;
    tmp[0] = '\0';
    *kept = (uint64_t)st.st_size;
    return 1;
}

void mfs_cache_download_end(mfs_cache *c, int fd, const char tmp[MFS_CACHE_PATH_MAX])
{
    close(fd);
    if (tmp[0])
        unlinkat(c->dirfd, tmp, 0);
}

int mfs_cache_object_open(mfs_cache *c, const mfs_cache_key *k, char suffix, mfs_cache_object *o,
                          const char **why)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    *why = NULL;
    char path[MFS_CACHE_PATH_MAX];
    mfs_cache_key_path(k, suffix, path);
    int fd = openat(c->dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return MFS_CACHE_OBJECT_ABSENT;
    mfs_cache_entry_info info;
    const char *bad = NULL;
    if (mfs_cache_entry_check(fd, k, suffix, &info, &bad) != 1 || !travels(info.kind, suffix)) {
        close(fd); /* never failures, never a damaged entry */
        *why = bad;
        return MFS_CACHE_OBJECT_BAD;
    }
    if (info.form == MFS_CACHE_FORM_XATTR) {
        if (fgetxattr(fd, MFS_CACHE_XATTR, o->rec, sizeof o->rec) != (ssize_t)sizeof o->rec) {
            close(fd);
            return MFS_CACHE_OBJECT_ERR;
        }
        o->len = info.length;
        o->add_rec = 1;
        o->size = o->len + sizeof o->rec;
    } else {
        o->len = info.size;
        o->size = info.size;
    }
    o->fd = fd;
    return MFS_CACHE_OBJECT_OPEN;
}

int64_t mfs_cache_object_read(const mfs_cache_object *o, void *p, size_t n, uint64_t off)
{
    if (off < o->len) {
        size_t want = o->len - off < n ? (size_t)(o->len - off) : n;
        int64_t got = mfs_pread_full(o->fd, p, want, off);
        return got <= 0 ? -1 : got;
    }
    if (!o->add_rec || off - o->len >= sizeof o->rec)
        return 0;
    uint64_t ro = off - o->len;
    size_t done = sizeof o->rec - ro < n ? sizeof o->rec - (size_t)ro : n;
    memcpy(p, o->rec + ro, done);
    return (int64_t)done;
}

void mfs_cache_object_close(mfs_cache_object *o)
{
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
}

/* The FUSE operations: a read-only mirror of SRC plus the views.
 *
 * Paths arrive as "/dir/name"; everything is resolved relative to the SRC
 * directory descriptor, never through the mount or an absolute path. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs.h"
#include "ops.h"

#define XATTR_ERROR "user.meshfs.error"
#define XATTR_STATS "user.meshfs.stats"

typedef struct handle {
    int is_view;
    int fd;
    uint64_t offset, length; /* view payload within fd */
} handle;

static mfs_fs *FS(void)
{
    return fuse_get_context()->private_data;
}

static const char *rel(const char *path)
{
    while (*path == '/')
        path++;
    return path[0] ? path : ".";
}

/* Splits "a/b/c" into dir "a/b" and name "c" (dir "" at the root). */
static void split(const char *r, char *dir, size_t n, const char **name)
{
    const char *slash = strrchr(r, '/');
    if (!slash) {
        dir[0] = '\0';
        *name = r;
        return;
    }
    snprintf(dir, n, "%.*s", (int)(slash - r), r);
    *name = slash + 1;
}

static int is_hidden_source(mfs_fs *fs, const char *r, const struct stat *st)
{
    if (!fs->cfg.hide_sources || !S_ISREG(st->st_mode))
        return 0;
    const char *slash = strrchr(r, '/');
    return mfs_is_model_name(slash ? slash + 1 : r);
}

/* Is r a view?  Fills ref and returns 1; 0 if not; -errno. */
static int find_view(mfs_fs *fs, const char *r, char *dir, size_t n, mfs_view_ref *ref)
{
    const char *name;
    split(r, dir, n, &name);
    return mfs_dirmap_lookup(fs, dir, name, ref);
}

static void ref_free(mfs_view_ref *ref)
{
    free(ref->model);
    free(ref->base);
}

static int view_attr(mfs_fs *fs, const char *dir, const mfs_view_ref *ref, struct stat *st)
{
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref->model);
    struct stat mst;
    if (fstatat(fs->rootfd, mpath, &mst, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    mfs_view_state vs;
    int rc = mfs_view_resolve(fs, dir, ref->model, ref->base, ref->format, 0, &vs);
    if (rc == -ENOENT || (rc < 0 && !vs.reason[0]))
        return rc == -ENOENT ? -ENOENT : -EIO;
    if (rc < 0) {
        /* failed for now (e.g. the cache disk is full): like a failed
         * conversion, an empty view whose reason can be read */
        vs.size = 0;
        vs.mtime = mst.st_mtim;
    }
    mfs_view_stat(&mst, &vs, ref->format, st);
    return 0;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    mfs_fs *fs = FS();
    const char *r = rel(path);
    if (fstatat(fs->rootfd, r, st, AT_SYMLINK_NOFOLLOW) == 0)
        return is_hidden_source(fs, r, st) ? -ENOENT : 0;
    if (errno != ENOENT)
        return -errno;
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0)
        return v == 0 ? -ENOENT : v;
    int rc = view_attr(fs, dir, &ref, st);
    ref_free(&ref);
    return rc;
}

typedef struct fill_ctx {
    mfs_fs *fs;
    const char *dir;
    int plus;               /* the kernel wants attributes with the names */
    void *buf;
    fuse_fill_dir_t filler;
    char last_model[256];   /* views come sorted, a model's views together: */
    int last_current;       /* its inputs are stat'ed once, not per view */
} fill_ctx;

/* With readdirplus the attributes travel with the listing, saving a
 * LOOKUP per name for `ls -l` and `find -ls`.  Only attributes known
 * without work are sent: a source entry's own, a view's if its model's memo
 * is current.  A cold view is listed by name only, so listing a folder never
 * converts anything. */
static int fill_one(void *ctx, const char *name, const struct stat *partial,
                    const mfs_view_ref *view)
{
    fill_ctx *c = ctx;
    if (c->plus) {
        struct stat st;
        int have;
        if (view) {
            int same = c->last_current && !strcmp(c->last_model, view->model);
            have = mfs_view_cached_stat(c->fs, c->dir, view, same, &st);
            c->last_current = have;
            snprintf(c->last_model, sizeof c->last_model, "%s", view->model);
        } else {
            char path[4200];
            snprintf(path, sizeof path, "%s%s%s", c->dir, c->dir[0] ? "/" : "", name);
            have = fstatat(c->fs->rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
        }
        if (have)
            return c->filler(c->buf, name, &st, 0, FUSE_FILL_DIR_PLUS);
    }
    return c->filler(c->buf, name, partial, 0, 0);
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    mfs_fs *fs = FS();
    const char *r = rel(path);
    filler(buf, ".", NULL, 0, 0);
    filler(buf, "..", NULL, 0, 0);
    const char *dir = strcmp(r, ".") ? r : "";
    fill_ctx c = {fs, dir, (flags & FUSE_READDIR_PLUS) != 0, buf, filler, "", 0};
    return mfs_dir_list(fs, dir, fill_one, &c);
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
    mfs_fs *fs = FS();
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & (O_TRUNC | O_CREAT)))
        return -EROFS;
    const char *r = rel(path);
    handle *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    struct stat st;
    if (fstatat(fs->rootfd, r, &st, AT_SYMLINK_NOFOLLOW) == 0 && !is_hidden_source(fs, r, &st)) {
        h->fd = openat(fs->rootfd, r, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (h->fd < 0) {
            int e = errno;
            free(h);
            return -e;
        }
        fi->fh = (uintptr_t)h;
        return 0;
    }
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0) {
        free(h);
        return v == 0 ? -ENOENT : v;
    }
    mfs_view_state vs;
    int rc = mfs_view_resolve(fs, dir, ref.model, ref.base, ref.format, 1, &vs);
    ref_free(&ref);
    if (rc < 0 || !vs.ok) {
        mfs_cache_hit_release(&vs.hit);
        free(h);
        return rc == -ENOENT ? -ENOENT : -EIO;
    }
    h->is_view = 1;
    h->fd = vs.hit.fd;
    h->offset = vs.hit.offset;
    h->length = vs.hit.length;
    vs.hit.fd = -1;
    mfs_cache_hit_release(&vs.hit);
    /* A cache entry's bytes never change, so the kernel may keep its pages
     * as long as this path still shows the same entry. */
    fi->keep_cache = vs.same_as_last;
    fi->fh = (uintptr_t)h;
    atomic_fetch_add(&fs->stats.views_served, 1);
    return 0;
}

/* Hands the kernel a descriptor range instead of copied bytes, so libfuse
 * can splice straight from the cache file. */
static int op_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    handle *h = (handle *)(uintptr_t)fi->fh;
    struct fuse_bufvec *bv = malloc(sizeof *bv);
    if (!bv)
        return -ENOMEM;
    *bv = FUSE_BUFVEC_INIT(size);
    if (h->is_view) {
        if ((uint64_t)off >= h->length)
            bv->buf[0].size = 0;
        else if ((uint64_t)off + size > h->length)
            bv->buf[0].size = (size_t)(h->length - (uint64_t)off);
        off = (off_t)(h->offset + (uint64_t)off);
    }
    bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    bv->buf[0].fd = h->fd;
    bv->buf[0].pos = off;
    *bufp = bv;
    return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    handle *h = (handle *)(uintptr_t)fi->fh;
    if (h->is_view) {
        if ((uint64_t)off >= h->length)
            return 0;
        if ((uint64_t)off + size > h->length)
            size = (size_t)(h->length - (uint64_t)off);
        off = (off_t)(h->offset + (uint64_t)off);
    }
    ssize_t n = pread(h->fd, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
    handle *h = (handle *)(uintptr_t)fi->fh;
    if (h) {
        close(h->fd);
        free(h);
    }
    return 0;
}

static int op_readlink(const char *path, char *buf, size_t size)
{
    ssize_t n = readlinkat(FS()->rootfd, rel(path), buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
    return fstatvfs(FS()->rootfd, sv) < 0 ? -errno : 0;
}

static int stats_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_cache_stats cs;
    mfs_cache_get_stats(fs->cache, &cs);
    return snprintf(buf, n,
                    "conversions=%llu conversion_failures=%llu views_served=%llu cache_hits=%llu "
                    "cache_misses=%llu cache_negative_hits=%llu cache_stores=%llu "
                    "cache_corrupt_discarded=%llu cache_evictions=%llu files_hashed=%llu\n",
                    (unsigned long long)atomic_load(&fs->stats.conversions),
                    (unsigned long long)atomic_load(&fs->stats.conversion_failures),
                    (unsigned long long)atomic_load(&fs->stats.views_served),
                    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
                    (unsigned long long)cs.negative_hits, (unsigned long long)cs.stores,
                    (unsigned long long)cs.corrupt_discarded, (unsigned long long)cs.evictions,
                    (unsigned long long)cs.files_hashed);
}

/* The view's failure reason (for user.meshfs.error); 0 if it has none. */
static int view_error(mfs_fs *fs, const char *r, char *out, size_t n)
{
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0)
        return v == 0 ? -ENODATA : v;
    mfs_view_state vs;
    int rc = mfs_view_resolve(fs, dir, ref.model, ref.base, ref.format, 0, &vs);
    ref_free(&ref);
    if (rc < 0 && !vs.reason[0])
        return -EIO;
    if (rc == 0 && vs.ok)
        return 0;
    return snprintf(out, n, "%s", vs.reason[0] ? vs.reason : "conversion failed");
}

static int reply_xattr(const char *text, int len, char *value, size_t size)
{
    if (size == 0)
        return len;
    if ((size_t)len > size)
        return -ERANGE;
    memcpy(value, text, (size_t)len);
    return len;
}

static int op_getxattr(const char *path, const char *name, char *value, size_t size)
{
    mfs_fs *fs = FS();
    const char *r = rel(path);
    char text[MFS_ERR_MAX + 1024];
    if (!strcmp(r, ".") && !strcmp(name, XATTR_STATS))
        return reply_xattr(text, stats_text(fs, text, sizeof text), value, size);
    if (strcmp(name, XATTR_ERROR))
        return -ENODATA;
    struct stat st;
    if (fstatat(fs->rootfd, r, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return -ENODATA;
    int len = view_error(fs, r, text, sizeof text);
    if (len <= 0)
        return len == 0 ? -ENODATA : len;
    return reply_xattr(text, len, value, size);
}

static int op_listxattr(const char *path, char *list, size_t size)
{
    mfs_fs *fs = FS();
    const char *r = rel(path);
    char text[MFS_ERR_MAX];
    const char *name = NULL;
    struct stat st;
    if (!strcmp(r, "."))
        name = XATTR_STATS;
    else if (fstatat(fs->rootfd, r, &st, AT_SYMLINK_NOFOLLOW) < 0 && view_error(fs, r, text, sizeof text) > 0)
        name = XATTR_ERROR;
    if (!name)
        return 0;
    return reply_xattr(name, (int)strlen(name) + 1, list, size);
}

/* Everything that would change something. */
static int rofs(void)
{
    return -EROFS;
}
static int ro_mknod(const char *p, mode_t m, dev_t d) { return rofs(); }
static int ro_mkdir(const char *p, mode_t m) { return rofs(); }
static int ro_unlink(const char *p) { return rofs(); }
static int ro_rmdir(const char *p) { return rofs(); }
static int ro_symlink(const char *a, const char *b) { return rofs(); }
static int ro_rename(const char *a, const char *b, unsigned int f) { return rofs(); }
static int ro_link(const char *a, const char *b) { return rofs(); }
static int ro_chmod(const char *p, mode_t m, struct fuse_file_info *fi) { return rofs(); }
static int ro_chown(const char *p, uid_t u, gid_t g, struct fuse_file_info *fi) { return rofs(); }
static int ro_truncate(const char *p, off_t o, struct fuse_file_info *fi) { return rofs(); }
static int ro_write(const char *p, const char *b, size_t s, off_t o, struct fuse_file_info *fi) { return rofs(); }
static int ro_setxattr(const char *p, const char *n, const char *v, size_t s, int f) { return rofs(); }
static int ro_removexattr(const char *p, const char *n) { return rofs(); }
static int ro_create(const char *p, mode_t m, struct fuse_file_info *fi) { return rofs(); }
static int ro_utimens(const char *p, const struct timespec tv[2], struct fuse_file_info *fi) { return rofs(); }
static int ro_fallocate(const char *p, int m, off_t o, off_t l, struct fuse_file_info *fi) { return rofs(); }

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    cfg->use_ino = 1;      /* inode numbers stable for the mount's life */
    cfg->readdir_ino = 0;
    cfg->kernel_cache = 0; /* keep_cache is decided per open */
    conn->max_readahead = 1u << 20;
    /* Without this the kernel runs one lookup at a time per directory, so a
     * cold view's conversion holds up first lookups of its neighbours.
     * libfuse before 3.17 never passes the flag on to the kernel (upstream
     * c9905341), so on Debian 12's 3.14 the limitation stands; asking for
     * it costs nothing and lifts it with a newer libfuse. */
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    return fuse_get_context()->private_data;
}

const struct fuse_operations mfs_fuse_ops = {
    .init = op_init,
    .getattr = op_getattr,
    .readdir = op_readdir,
    .open = op_open,
    .read = op_read,
    .read_buf = op_read_buf,
    .release = op_release,
    .readlink = op_readlink,
    .statfs = op_statfs,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .mknod = ro_mknod,
    .mkdir = ro_mkdir,
    .unlink = ro_unlink,
    .rmdir = ro_rmdir,
    .symlink = ro_symlink,
    .rename = ro_rename,
    .link = ro_link,
    .chmod = ro_chmod,
    .chown = ro_chown,
    .truncate = ro_truncate,
    .write = ro_write,
    .setxattr = ro_setxattr,
    .removexattr = ro_removexattr,
    .create = ro_create,
    .utimens = ro_utimens,
    .fallocate = ro_fallocate,
};

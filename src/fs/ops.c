/* The FUSE operations: a read-only mirror of SRC plus the views (the
 * directory operations are listing.c's).
 *
 * Paths arrive as "/dir/name"; everything is resolved beneath the SRC
 * directory descriptor following no symbolic link (beneath.c), never
 * through the mount or an absolute path. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "coherence.h"
#include "dirreply.h"
#include "fs.h"
#include "held.h"
#include "lgepkg.h"
#include "listing.h"
#include "lowlevel.h"
#include "meshfs/remote_lease.h"
#include "meshfs/rules.h"
#include "meshfs/settings.h"
#include "ops.h"
#include "passthrough.h"
#include "prefetch.h"

#define XATTR_ERROR "user.meshfs.error"
#define XATTR_WARNING "user.meshfs.warning"
#define XATTR_WARNINGS "user.meshfs.warnings"
#define XATTR_STATS "user.meshfs.stats"
#define XATTR_EXPLAIN "user.meshfs.explain"
#define XATTR_EXPLAIN_JSON "user.meshfs.explain.json"

typedef struct handle {
    mfs_held held;           /* first: the kernel holds it (held.h) */
    mfs_fs *fs;              /* the mount it belongs to */
    int is_view;
    int fd;
    uint64_t offset, length; /* view payload within fd */
    struct stat st;          /* view: the attributes of the entry it serves */
    void *kv;                /* view: its kview.c token */
    int direct;              /* view: opened with direct I/O (kview.c) */
    int backing;             /* view: its passthrough backing id, 0 if none */
    uint64_t node;           /* view: the kernel inode's node id */
    uint8_t key[16];         /* view: its entry's key */
} handle;

/* The open files' handles of one mount (fs->files). */
struct mfs_files {
    mfs_held_list open_handles; /* held.h */
};

mfs_files *mfs_ops_files_new(void)
{
    mfs_files *f = calloc(1, sizeof *f);
    if (f)
        pthread_mutex_init(&f->open_handles.lock, NULL);
    return f;
}

void mfs_ops_files_free(mfs_files *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->open_handles.lock);
    free(f);
}

static uintptr_t keep(mfs_fs *fs, handle *h)
{
    h->fs = fs;
    mfs_held_add(&fs->files->open_handles, &h->held);
    return (uintptr_t)h;
}

static void handle_free(handle *h)
{
    if (h->is_view)
        mfs_kview_release(h->fs->kviews, h->kv, h->direct);
    mfs_pt_release(h->fs, h->backing);
    close(h->fd);
    free(h);
}

/* The one place a mount path becomes SRC-relative: the real path, in a
 * per-thread buffer valid until this thread's next call.  NULL with errno
 * set when the path shows nothing (-o lowercase_names, casemap.c).  The
 * buffer is the thread's, not the mount's: each request thread's answer
 * lives until its own next call (ops.h). */
const char *mfs_ops_rel(mfs_fs *fs, const char *path)
{
    static _Thread_local char buf[4096];
    while (*path == '/')
        path++;
    if (!fs->cfg.lowercase_names)
        return path[0] ? path : ".";
    int rc = mfs_casemap_path(fs, path, buf, sizeof buf);
    if (rc < 0) {
        errno = -rc;
        return NULL;
    }
    return buf[0] ? buf : ".";
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
    const char *name = slash ? slash + 1 : r;
    return mfs_spawner_is_model(fs->spawner, name) || mfs_settings_is_file(name);
}

/* Is r a view?  Fills ref and returns 1; 0 if not; -errno. */
static int find_view(mfs_fs *fs, const char *r, char *dir, size_t n, mfs_view_ref *ref)
{
    const char *name;
    split(r, dir, n, &name);
    if (!strcmp(name, MFS_LGEPKG_FILE_NAME)) {
        /* the folder's package: a view whose format is MFS_FS_LGEPKG */
        int p = mfs_lgepkg_present(fs, dir);
        if (p <= 0)
            return p;
        ref->model = strdup("");
        ref->base = strdup(MFS_LGEPKG_DEFAULT_NAME);
        ref->format = MFS_FS_LGEPKG;
        return ref->model && ref->base ? 1 : -ENOMEM;
    }
    return mfs_dirmap_lookup(fs, dir, name, ref);
}

static void ref_free(mfs_view_ref *ref)
{
    free(ref->model);
    free(ref->base);
}

/* Whether a view is not shown: a known failure under -o hide_failed, or
 * any view of a model that holds no mesh (docs/import.md, "Files without
 * geometry"). */
static int failure_hidden(const mfs_fs *fs, mfs_view_outcome o, const mfs_view_info *info)
{
    return o == MFS_VIEW_FAILED_MODEL && (fs->cfg.hide_failed || info->no_views);
}

/* The one place a resolver outcome that is not a HIT becomes an errno
 * (meshfs/views.h): a model gone, or a view not shown, is not there;
 * anything else is an I/O error. */
static int failure_errno(const mfs_fs *fs, mfs_view_outcome o, const mfs_view_info *info)
{
    if (o == MFS_VIEW_FAILED_MACHINE && info->errnum == ENOENT)
        return -ENOENT;
    if (failure_hidden(fs, o, info))
        return -ENOENT;
    return -EIO;
}

/* Test builds only (tests/integration/test_listing.py): with
 * MESHFS_TEST_FG_DELAY_MS=N, a stat that queued prefetches waits N ms
 * before it resolves its own view, so the prefetch threads always reach
 * the free slots first. */
static void test_fg_delay(void)
{
    mfs_test_delay("MESHFS_TEST_FG_DELAY_MS");
}

/* The view's attributes; *have_key and key: its entry's, when it has one. */
static int view_attr(mfs_fs *fs, const char *dir, const mfs_view_ref *ref, struct stat *st,
                     uint8_t key[16], int *have_key)
{
    *have_key = 0;
    if (ref->format == MFS_FS_LGEPKG)
        return mfs_lgepkg_attr(fs, dir, st);
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref->model);
    struct stat mst;
    if (mfs_beneath_stat(fs, mpath, &mst) < 0)
        return -errno;
    mfs_view_info vi;
    mfs_err err;
    /* cold right after a listing (ls -l): its neighbours convert meanwhile,
     * after this one has its slot (mfs_fs_fg_coming) */
    mfs_prefetch_attr(fs, dir, ref);
    test_fg_delay();
    mfs_view_given given = {.model = &mst, .folder = &ref->dir_st};
    mfs_view_outcome o = mfs_view_get_given(fs, dir, ref->model, ref->base, ref->format,
                                            MFS_VIEW_ATTR, &given, &vi, &err);
    mfs_fs_fg_done(fs);
    if (o == MFS_VIEW_FAILED_MACHINE) {
        /* failed for now (e.g. the cache disk is full): like a failed
         * conversion, an empty view whose reason can be read; with no
         * reason to read, an error */
        if (vi.errnum == ENOENT || !err.msg[0])
            return failure_errno(fs, o, &vi);
        vi.size = 0;
        vi.mtime = mst.st_mtim;
    } else if (failure_hidden(fs, o, &vi)) {
        return failure_errno(fs, o, &vi);
    }
    if (o == MFS_VIEW_HIT || o == MFS_VIEW_FAILED_MODEL) {
        memcpy(key, vi.key.b, 16);
        *have_key = 1;
    }
    mfs_view_stat(&mst, &vi, mfs_view_where(dir, ref->base), ref->format, st);
    return 0;
}

/* The attributes the kernel is to hold for path.  lookup: for a LOOKUP of
 * the name, which moves a view to a new inode when the one it has holds
 * another entry for open handles (kview.c). */
static int path_attr(mfs_fs *fs, const char *path, struct stat *st, int lookup,
                     const mfs_ops_prestat *pre)
{
    const char *r = mfs_ops_rel(fs, path);
    if (!r)
        return -errno;
    int rc;
    if (pre && pre->known && !strcmp(pre->rel, r)) {
        rc = pre->rc;
        *st = pre->st;
    } else {
        rc = mfs_beneath_stat(fs, r, st) == 0 ? 0 : -errno;
    }
    if (rc == 0) {
        if (is_hidden_source(fs, r, st))
            return -ENOENT;
        st->st_ino = mfs_src_ino(fs, st->st_dev, st->st_ino);
        return 0;
    }
    if (rc != -ENOENT)
        return rc;
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0)
        return v == 0 ? -ENOENT : v;
    uint8_t key[16];
    int have_key;
    rc = view_attr(fs, dir, &ref, st, key, &have_key);
    ref_free(&ref);
    if (rc < 0)
        return rc;
    /* what the kernel will hold (kview.c) */
    if (lookup)
        mfs_renew_named_attr(fs, path, have_key ? key : NULL, st);
    else
        mfs_kview_attr(fs->kviews, path, st);
    return 0;
}

int mfs_ops_getattr(mfs_fs *fs, const char *path, struct stat *st, struct fuse_file_info *fi,
                    const mfs_ops_prestat *pre)
{
    atomic_fetch_add(&fs->stats.attr_requests, 1);
    handle *fh = fi ? (handle *)(uintptr_t)fi->fh : NULL;
    if (fh && fh->is_view) {
        /* asked through an open view (a read past the size it knows): the
         * entry that handle serves, as kview.c allows */
        *st = fh->st;
        mfs_kview_handle_attr(fs->kviews, fh->kv, path, st);
        return 0;
    }
    return path_attr(fs, path, st, 0, fi ? NULL : pre);
}

int mfs_ops_lookup(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre)
{
    atomic_fetch_add(&fs->stats.attr_requests, 1);
    return path_attr(fs, path, st, 1, pre);
}

/* How the kernel is to treat this open of a view (kview.c), and whether it
 * reads the bytes itself (passthrough.c): never with direct I/O or
 * keep_cache, which the kernel refuses with passthrough.  1: invalidate
 * what the kernel holds of the path before replying; 0; -errno.  -ESTALE
 * when kernel inode `node` cannot show this entry: its name moved on, or
 * its handles hold an older entry (open, or released with the RELEASE
 * still on its way), and then the view moves to a new inode (renew.c);
 * the kernel looks again either way.  Called between
 * mfs_renew_open_begin/end. */
static int decide_open(mfs_fs *fs, const char *path, uint64_t node, struct fuse_file_info *fi,
                       handle *h, const uint8_t id[16])
{
    int b = mfs_pt_open(fs, node, id, h->fd, h->offset, h->length);
    if (b == -ESTALE) {
        mfs_renew_view(fs, path, node);
        return -ESTALE;
    }
    if (b < 0)
        return b;
    mfs_kview_open res;
    h->kv = mfs_kview_opened(fs->kviews, path, id, &h->st, &res);
    if (res.renew) {
        mfs_pt_release(fs, b);
        mfs_renew_view(fs, path, node);
        return -ESTALE;
    }
    if (b > 0 && res.direct_io) {
        mfs_pt_release(fs, b);
        b = 0;
    }
    h->direct = res.direct_io;
    fi->direct_io = res.direct_io;
    fi->keep_cache = res.keep_cache;
#ifdef MESHFS_HAVE_FUSE_317
    if (b > 0) {
        h->backing = b;
        fi->backing_id = b;
        fi->keep_cache = 0;
        atomic_fetch_add(&fs->stats.passthrough_opens, 1);
    }
#endif
    return res.invalidate;
}

static int kview_open(mfs_fs *fs, const char *path, uint64_t node, struct fuse_file_info *fi, handle *h,
                      const uint8_t id[16])
{
    h->node = node;
    memcpy(h->key, id, 16);
    /* test builds (test_coherence.py): an open slow to decide, so a listing
     * can move the view's name while it resolves */
    mfs_test_delay("MESHFS_TEST_OPEN_DELAY_MS");
    int rc = mfs_renew_open_begin(fs, node);
    if (rc < 0)
        return rc;
    rc = decide_open(fs, path, node, fi, h, id);
    mfs_renew_open_end(fs);
    if (rc == 1) /* from the OPEN handler itself: kview.c says why */
        mfs_ll_invalidate_node(fs, node);
    return rc < 0 ? rc : 0;
}

/* What a reopen of a moved view copies from a handle of the same node. */
typedef struct like {
    mfs_fs *fs;
    uint64_t node;
    handle *out;
    struct fuse_file_info *fi;
} like;

static int copy_like(mfs_held *n, void *arg)
{
    handle *o = (handle *)n;
    like *a = arg;
    if (!o->is_view || o->node != a->node)
        return 0;
    handle *h = a->out;
    *h = (handle){.is_view = 1, .offset = o->offset, .length = o->length, .st = o->st,
                  .node = o->node, .direct = o->direct};
    memcpy(h->key, o->key, 16);
    if ((h->fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0)) < 0)
        return -errno;
    if (o->backing > 0) {
        /* the same entry on the same inode: its backing id, one more ref;
         * an inode bound to a backing file takes no other kind of open */
        h->backing = mfs_pt_open(a->fs, o->node, o->key, h->fd, h->offset, h->length);
        if (h->backing <= 0) {
            close(h->fd);
            return -EIO;
        }
    }
    h->kv = o->kv;
    mfs_kview_ref(a->fs->kviews, h->kv, h->direct);
    a->fi->direct_io = h->direct;
    a->fi->keep_cache = !h->direct && !h->backing; /* the inode's pages are this entry's */
#ifdef MESHFS_HAVE_FUSE_317
    a->fi->backing_id = h->backing;
#endif
    return 1;
}

/* An OPEN of a node whose name moved to another (renew.c), before this
 * open or during it.  A first try is answered ESTALE: the VFS retries with
 * a fresh lookup and opens the new view.  The retry is served the entry
 * this node's open handles read, as an open of a file replaced meanwhile
 * reads the old one: an open that does not go through the name
 * (/proc/PID/fd/N, /dev/stdin redirected from a view) always comes back
 * here, and a path walk's retry lands here when the model was saved again
 * while it looked the name up, with another reader holding that view. */
static int open_moved(mfs_fs *fs, uint64_t node, int retry, struct fuse_file_info *fi)
{
    if (!retry)
        return -ESTALE;
    handle *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    like a = {.fs = fs, .node = node, .out = h, .fi = fi};
    int rc = mfs_held_visit(&fs->files->open_handles, copy_like, &a);
    if (rc <= 0) {
        free(h);
        return rc < 0 ? rc : -ESTALE; /* no handle left to copy */
    }
    fi->fh = keep(fs, h);
    atomic_fetch_add(&fs->stats.views_served, 1);
    if (h->backing > 0)
        atomic_fetch_add(&fs->stats.passthrough_opens, 1);
    return 0;
}

/* An OPEN of a node that is its name's; -ESTALE when it moves off. */
static int open_current(mfs_fs *fs, const char *path, uint64_t node, struct fuse_file_info *fi)
{
    const char *r = mfs_ops_rel(fs, path);
    if (!r)
        return -errno;
    handle *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    struct stat st;
    if (mfs_beneath_stat(fs, r, &st) == 0 && !is_hidden_source(fs, r, &st)) {
        /* never a blocking open, which a lease would hold up to the lease
         * break time: O_NONBLOCK starts the break and answers EWOULDBLOCK,
         * and the caller waits elsewhere (leasewait.h).  For a regular file
         * only a lease answers so (FIFOs never reach the daemon). */
        h->fd = mfs_beneath_open(fs, r, O_RDONLY | O_NONBLOCK);
        if (h->fd < 0) {
            int e = errno;
            free(h);
            return e == EWOULDBLOCK && S_ISREG(st.st_mode) ? MFS_OPS_LEASED : -e;
        }
        int fl = fcntl(h->fd, F_GETFL);
        if (fl >= 0)
            fcntl(h->fd, F_SETFL, fl & ~O_NONBLOCK); /* reads as a plain open's */
        fi->fh = keep(fs, h);
        return 0;
    }
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0) {
        free(h);
        return v == 0 ? -ENOENT : v;
    }
    if (ref.format == MFS_FS_LGEPKG) {
        mfs_cache_hit hit;
        mfs_cache_key key;
        struct stat pst;
        int rc = mfs_lgepkg_open(fs, dir, &hit, &key, &pst);
        ref_free(&ref);
        if (rc < 0) {
            free(h);
            return rc == -ENOENT ? -ENOENT : -EIO;
        }
        *h = (handle){.is_view = 1, .fd = hit.fd, .offset = hit.offset, .length = hit.length,
                      .st = pst};
        if ((rc = kview_open(fs, path, node, fi, h, key.b)) < 0) {
            close(h->fd);
            free(h);
            return rc;
        }
        fi->fh = keep(fs, h);
        atomic_fetch_add(&fs->stats.views_served, 1);
        return 0;
    }
    mfs_view_info vi;
    mfs_err err;
    mfs_view_outcome o = mfs_view_get(fs, dir, ref.model, ref.base, ref.format, MFS_VIEW_OPEN,
                                      &vi, &err);
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref.model);
    int format = ref.format;
    uint64_t where = mfs_view_where(dir, ref.base);
    ref_free(&ref);
    struct stat mst;
    /* the model under a lease: its hash's O_NONBLOCK open answered
     * EWOULDBLOCK (beneath.c), and the open waits as a plain file's */
    int rc = o == MFS_VIEW_HIT                                         ? 0
             : o == MFS_VIEW_FAILED_MACHINE && vi.errnum == EWOULDBLOCK ? MFS_OPS_LEASED
                                                                        : failure_errno(fs, o, &vi);
    if (rc == 0 && mfs_beneath_stat(fs, mpath, &mst) < 0)
        rc = errno == ENOENT ? -ENOENT : -EIO;
    if (rc != 0) {
        mfs_cache_hit_release(&vi.hit);
        free(h);
        return rc;
    }
    h->is_view = 1;
    h->fd = vi.hit.fd;
    h->offset = vi.hit.offset;
    h->length = vi.hit.length;
    vi.hit.fd = -1;
    mfs_cache_hit_release(&vi.hit);
    /* A cache entry's bytes never change, so the kernel may keep its pages
     * as long as this path still shows the same entry; kview.c decides,
     * from what the kernel was last told. */
    mfs_view_stat(&mst, &vi, where, format, &h->st);
    if ((rc = kview_open(fs, path, node, fi, h, vi.key.b)) < 0) {
        close(h->fd);
        free(h);
        return rc;
    }
    fi->fh = keep(fs, h);
    atomic_fetch_add(&fs->stats.views_served, 1);
    return 0;
}

int mfs_ops_leased(mfs_fs *fs, const char *path)
{
    const char *r = mfs_ops_rel(fs, path);
    struct stat st;
    char dir[4096], mpath[4200];
    mfs_view_ref ref;
    if (!r)
        return 0;
    if (mfs_beneath_stat(fs, r, &st) < 0) {
        if (find_view(fs, r, dir, sizeof dir, &ref) <= 0)
            return 0;
        snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref.model);
        ref_free(&ref);
        r = mpath;
    }
    int fd = mfs_beneath_open(fs, r, O_RDONLY | O_NONBLOCK);
    if (fd >= 0)
        close(fd);
    return fd < 0 && errno == EWOULDBLOCK;
}

int mfs_ops_open(mfs_fs *fs, const char *path, uint64_t node, int retry,
                 struct fuse_file_info *fi)
{
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & (O_TRUNC | O_CREAT)))
        return -EROFS;
    if (mfs_ll_node_current(fs, node)) {
        int rc = open_current(fs, path, node, fi);
        if (rc != -ESTALE || mfs_ll_node_current(fs, node))
            return rc;
    }
    return open_moved(fs, node, retry, fi);
}

/* Hands the kernel a descriptor range instead of copied bytes, so libfuse
 * can splice straight from the cache file. */
int mfs_ops_read_buf(mfs_fs *fs, struct fuse_bufvec **bufp, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    handle *h = (handle *)(uintptr_t)fi->fh;
    atomic_fetch_add(&fs->stats.read_requests, 1);
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

void mfs_ops_release(mfs_fs *fs, struct fuse_file_info *fi)
{
    handle *h = (handle *)(uintptr_t)fi->fh;
    if (h) {
        mfs_held_remove(&fs->files->open_handles, &h->held);
        handle_free(h);
    }
}

static void held_free(mfs_held *n)
{
    handle_free((handle *)n);
}

void mfs_ops_close_all(mfs_fs *fs)
{
    mfs_held_free_all(&fs->files->open_handles, held_free);
}

int mfs_ops_readlink(mfs_fs *fs, const char *path, char *buf, size_t size)
{
    const char *r = mfs_ops_rel(fs, path);
    ssize_t n = r ? mfs_beneath_readlink(fs, r, buf, size - 1) : -1;
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    /* a relative link is followed inside the mount, where only lowercase
     * names exist */
    if (buf[0] != '/')
        mfs_casemap_fold(fs, buf);
    return 0;
}

int mfs_ops_statfs(mfs_fs *fs, struct statvfs *sv)
{
    return fstatvfs(fs->rootfd, sv) < 0 ? -errno : 0;
}

/* The bounded structures' sizes (docs/scale.md): entries held now and
 * evictions for their caps, so tests can see that the caps hold. */
static int bounds_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_views_stats vs;
    mfs_views_get_stats(fs->views, &vs);
    uint64_t kv, kv_ev, kv_bytes, dt, dn, d_ev;
    mfs_kview_stats(fs->kviews, &kv, &kv_ev, &kv_bytes);
    mfs_dirmaps_stats(fs->dirs, &dt, &dn, &d_ev);
    mfs_cache_stats cs;
    mfs_cache_get_stats(fs->cache, &cs);
    uint64_t lh, ln;
    mfs_listing_counts(fs, &lh, &ln);
    uint64_t ahead_sent, ahead_dropped, ahead_waiting;
    mfs_dirreply_counts(fs, &ahead_sent, &ahead_dropped, &ahead_waiting);
    mfs_nodes_stats ns;
    mfs_ll_nodes_stats(fs, &ns);
    return snprintf(buf, n,
                    " memo_size=%llu memo_entries=%llu memo_evictions=%llu kview_entries=%llu "
                    "kview_evictions=%llu dirmap_tables=%llu dirmap_names=%llu "
                    "dirmap_evictions=%llu listing_handles=%llu listing_names=%llu "
                    "index_records=%llu index_shard_loads=%llu index_shard_drops=%llu "
                    "cache_files_opened=%llu folder_record_hits=%llu folder_records_written=%llu "
                    "inodes=%llu inode_files=%llu inode_cap=%llu inode_drops=%llu "
                    "inodes_freed=%llu readdir_ahead_sent=%llu readdir_ahead_dropped=%llu "
                    "readdir_ahead_waiting=%llu memo_bytes=%llu memo_byte_cap=%llu "
                    "kview_bytes=%llu",
                    (unsigned long long)vs.cap, (unsigned long long)vs.entries,
                    (unsigned long long)vs.evictions, (unsigned long long)kv,
                    (unsigned long long)kv_ev, (unsigned long long)dt, (unsigned long long)dn,
                    (unsigned long long)d_ev, (unsigned long long)lh, (unsigned long long)ln,
                    (unsigned long long)cs.index_records, (unsigned long long)cs.index_shard_loads,
                    (unsigned long long)cs.index_shard_drops, (unsigned long long)cs.files_opened,
                    (unsigned long long)atomic_load(&fs->stats.folder_record_hits),
                    (unsigned long long)atomic_load(&fs->stats.folder_records_written),
                    (unsigned long long)ns.nodes, (unsigned long long)ns.files,
                    (unsigned long long)ns.cap, (unsigned long long)ns.offered,
                    (unsigned long long)ns.freed, (unsigned long long)ahead_sent,
                    (unsigned long long)ahead_dropped, (unsigned long long)ahead_waiting,
                    (unsigned long long)vs.bytes, (unsigned long long)vs.byte_cap,
                    (unsigned long long)kv_bytes);
}

static int stats_text_base(mfs_fs *fs, char *buf, size_t n);

/* The remote tier's counters (zeros without one); remote_queue is the
 * uploads waiting or in flight, so a test can wait for it to drain. */
static int remote_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_remote_stats rs = {0};
    if (fs->remote)
        mfs_remote_get_stats(fs->remote, &rs);
    return snprintf(buf, n,
                    " remote_hits=%llu remote_misses=%llu remote_errors=%llu "
                    "remote_bytes_down=%llu remote_bytes_up=%llu remote_uploads=%llu "
                    "remote_queue=%llu remote_dropped=%llu "
                    "remote_read_backoffs=%llu remote_upload_backoffs=%llu remote_repaired=%llu "
                    "remote_owed=%llu remote_owed_sent=%llu remote_owed_dropped=%llu "
                    "remote_slow=%llu",
                    (unsigned long long)rs.hits, (unsigned long long)rs.misses,
                    (unsigned long long)rs.errors, (unsigned long long)rs.bytes_down,
                    (unsigned long long)rs.bytes_up, (unsigned long long)rs.uploads,
                    (unsigned long long)rs.queue, (unsigned long long)rs.dropped,
                    (unsigned long long)rs.read_backoffs, (unsigned long long)rs.upload_backoffs,
                    (unsigned long long)rs.repaired, (unsigned long long)rs.owed,
                    (unsigned long long)rs.owed_sent, (unsigned long long)rs.owed_dropped,
                    (unsigned long long)rs.slow);
}

/* The remote tier's leases (meshfs/remote_lease.h; zeros without one). */
static int lease_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_remote_lease_stats ls = {0};
    if (fs->remote)
        mfs_remote_lease_get_stats(fs->remote, &ls);
    return snprintf(buf, n,
                    " remote_leases=%llu remote_lease_waits=%llu remote_lease_takeovers=%llu "
                    "remote_lock_unsupported=%llu remote_lease_errors=%llu",
                    (unsigned long long)ls.taken, (unsigned long long)ls.waited,
                    (unsigned long long)ls.taken_over, (unsigned long long)ls.unsupported,
                    (unsigned long long)ls.errors);
}

static int stats_text(mfs_fs *fs, char *buf, size_t n)
{
    int len = stats_text_base(fs, buf, n);
    char more[4096];
    int m = bounds_text(fs, more, sizeof more);
    if (m > 0 && (size_t)m < sizeof more)
        m += remote_text(fs, more + m, sizeof more - (size_t)m);
    if (m > 0 && (size_t)m < sizeof more)
        m += lease_text(fs, more + m, sizeof more - (size_t)m);
    if (m > 0 && (size_t)m < sizeof more)
        m += mfs_ll_share_text(fs, more + m, sizeof more - (size_t)m);
    /* the base ends in a newline: the bounds go before it, if they fit */
    if (len <= 0 || m <= 0 || (size_t)m >= sizeof more || (size_t)len + (size_t)m >= n)
        return len;
    memcpy(buf + len - 1, more, (size_t)m);
    len += m;
    buf[len - 1] = '\n';
    buf[len] = '\0';
    return len;
}

static int stats_text_base(mfs_fs *fs, char *buf, size_t n)
{
    mfs_cache_stats cs;
    mfs_cache_get_stats(fs->cache, &cs);
    pthread_mutex_lock(&fs->job_lock);
    unsigned slot_waiters = fs->jobs_fg_waiting;
    pthread_mutex_unlock(&fs->job_lock);
    return snprintf(buf, n,
                    "conversions=%llu conversion_failures=%llu views_served=%llu attr_requests=%llu "
                    "cache_hits=%llu "
                    "cache_misses=%llu cache_negative_hits=%llu cache_stores=%llu "
                    "cache_corrupt_discarded=%llu cache_evictions=%llu files_hashed=%llu "
                    "readdir_requests=%llu conversions_running=%llu conversions_peak=%llu "
                    "read_requests=%llu passthrough_opens=%llu views_renewed=%llu prefetched=%llu "
                    "prefetch_queued=%u slot_waiters=%u cache_store_failures=%llu "
                    "conversions_redone=%llu packages_redone=%llu views_evicted_at_store=%llu\n",
                    (unsigned long long)atomic_load(&fs->stats.conversions),
                    (unsigned long long)atomic_load(&fs->stats.conversion_failures),
                    (unsigned long long)atomic_load(&fs->stats.views_served),
                    (unsigned long long)atomic_load(&fs->stats.attr_requests),
                    (unsigned long long)cs.view_hits, (unsigned long long)cs.view_misses,
                    (unsigned long long)cs.negative_hits, (unsigned long long)cs.stores,
                    (unsigned long long)cs.corrupt_discarded, (unsigned long long)cs.evictions,
                    (unsigned long long)cs.files_hashed,
                    (unsigned long long)atomic_load(&fs->stats.readdir_requests),
                    (unsigned long long)atomic_load(&fs->stats.conversions_running),
                    (unsigned long long)atomic_load(&fs->stats.conversions_peak),
                    (unsigned long long)atomic_load(&fs->stats.read_requests),
                    (unsigned long long)atomic_load(&fs->stats.passthrough_opens),
                    (unsigned long long)atomic_load(&fs->stats.views_renewed),
                    (unsigned long long)atomic_load(&fs->stats.prefetched), mfs_prefetch_waiting(fs),
                    slot_waiters,
                    (unsigned long long)atomic_load(&fs->stats.cache_store_failures),
                    (unsigned long long)atomic_load(&fs->stats.conversions_redone),
                    (unsigned long long)atomic_load(&fs->stats.packages_redone),
                    (unsigned long long)atomic_load(&fs->stats.views_evicted_at_store));
}

/* The view's failure reason (for user.meshfs.error); 0 if it has none. */
static int view_error(mfs_fs *fs, const char *r, char *out, size_t n)
{
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0)
        return v == 0 ? -ENODATA : v;
    if (ref.format == MFS_FS_LGEPKG) {
        ref_free(&ref);
        return mfs_lgepkg_error(fs, dir, out, n);
    }
    mfs_view_info vi;
    mfs_err err;
    mfs_view_outcome o = mfs_view_get(fs, dir, ref.model, ref.base, ref.format, MFS_VIEW_ATTR,
                                      &vi, &err);
    ref_free(&ref);
    if (o == MFS_VIEW_HIT)
        return 0;
    if (o == MFS_VIEW_FAILED_MACHINE && !err.msg[0])
        return -EIO;
    return snprintf(out, n, "%s", err.msg[0] ? err.msg : "conversion failed");
}

/* The view's naming warning (user.meshfs.warning: its base is an FGE
 * built-in model name); 0 if it has none.  Unlike an error it does not
 * fail the view: the bytes are fine, FGE just never asks for them. */
static int view_warning(mfs_fs *fs, const char *r, char *out, size_t n)
{
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0)
        return v;
    /* the folder's package has no model of its own to warn about */
    int len = ref.format == MFS_FS_LGEPKG ? 0 : mfs_name_warning(ref.base, out, n);
    ref_free(&ref);
    return len;
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

/* user.meshfs.warnings of a view: the files its model references that its
 * import found missing (the .mtl copied in later, a glTF buffer, a texture
 * behind the white fallback), one per line; ENODATA if none. */
static int view_missing(mfs_fs *fs, const char *r, char *value, size_t size)
{
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0)
        return v == 0 ? -ENODATA : v;
    if (ref.format == MFS_FS_LGEPKG) { /* its models' views say theirs */
        ref_free(&ref);
        return -ENODATA;
    }
    char *text = malloc(65536);
    int len = text ? mfs_view_missing(fs, dir, ref.model, ref.base, ref.format, text, 65536)
                   : -ENOMEM;
    ref_free(&ref);
    if (len > 0)
        len = reply_xattr(text, len, value, size);
    free(text);
    return len == 0 ? -ENODATA : len;
}

/* user.meshfs.error of a model file: its failed views, one per line
 * (failed.c), so the reasons stay readable under -o hide_failed.  Read by
 * name only: listxattr does not offer it, so `cp -a` and `rsync -X` do not
 * copy a reason about the mount onto a copy of the model. */
static int model_error(mfs_fs *fs, const char *r, char *value, size_t size)
{
    const char *slash = strrchr(r, '/');
    if (!mfs_spawner_is_model(fs->spawner, slash ? slash + 1 : r))
        return -ENODATA;
    size_t cap = (size_t)MFS_FMT_COUNT * (MFS_ERR_MAX + 64);
    char *text = malloc(cap), *shown = malloc(cap);
    int len = text && shown ? mfs_model_errors(fs, r, text, cap) : -ENOMEM;
    if (len > 0) {
        mfs_fs_errtext(fs, text, shown, cap);
        len = reply_xattr(shown, (int)strlen(shown), value, size);
    } else if (len == 0) {
        len = -ENODATA;
    }
    free(text);
    free(shown);
    return len;
}

/* user.meshfs.explain[.json] of a view: what its model's views' keys are
 * made of and why a lookup would convert (explain.h).  Only on views, whose
 * readers may read every input the explanation names (the kernel checks
 * it: default_permissions, docs/security.md S1); meshfs-cache explain
 * finds a model's views itself.  Read by name only, like the others. */
static int explain(mfs_fs *fs, const char *r, int json, char *value, size_t size)
{
    char dir[4096];
    mfs_view_ref ref;
    int v = find_view(fs, r, dir, sizeof dir, &ref);
    if (v <= 0)
        return v == 0 ? -ENODATA : v;
    if (ref.format == MFS_FS_LGEPKG) { /* its models' views explain theirs */
        ref_free(&ref);
        return -ENODATA;
    }
    mfs_err err;
    mfs_err_clear(&err);
    char *text = mfs_view_explain(fs, dir, ref.model, ref.base, json, &err);
    ref_free(&ref);
    int len = text ? reply_xattr(text, (int)strlen(text), value, size) : -EIO;
    free(text);
    return len;
}

int mfs_ops_getxattr(mfs_fs *fs, const char *path, const char *name, char *value, size_t size)
{
    const char *r = mfs_ops_rel(fs, path);
    if (!r)
        return -errno;
    char text[MFS_ERR_MAX + 8192];
    if (!strcmp(r, ".") && !strcmp(name, XATTR_STATS))
        return reply_xattr(text, stats_text(fs, text, sizeof text), value, size);
    if (!strcmp(name, XATTR_EXPLAIN) || !strcmp(name, XATTR_EXPLAIN_JSON))
        return explain(fs, r, !strcmp(name, XATTR_EXPLAIN_JSON), value, size);
    int warning = !strcmp(name, XATTR_WARNING);
    int warnings = !strcmp(name, XATTR_WARNINGS);
    if (strcmp(name, XATTR_ERROR) && !warning && !warnings)
        return -ENODATA;
    struct stat st;
    if (warnings) /* paths relative to SRC already: nothing to rewrite */
        return mfs_beneath_stat(fs, r, &st) == 0 ? -ENODATA : view_missing(fs, r, value, size);
    if (mfs_beneath_stat(fs, r, &st) == 0) {
        if (!warning && S_ISDIR(st.st_mode)) /* entries lowercase_names hides */
            return mfs_dirmap_hidden(fs, strcmp(r, ".") ? r : "", value, size);
        return !warning && S_ISREG(st.st_mode) ? model_error(fs, r, value, size) : -ENODATA;
    }
    int len = warning ? view_warning(fs, r, text, sizeof text) : view_error(fs, r, text, sizeof text);
    if (len <= 0)
        return len == 0 ? -ENODATA : len;
    /* reasons come from everywhere: files named relative to SRC, no
     * cache or other internal path (errtext.c) */
    char shown[sizeof text];
    mfs_fs_errtext(fs, text, shown, sizeof shown);
    return reply_xattr(shown, (int)strlen(shown), value, size);
}

/* Every user.meshfs.* attribute is read by name (getfattr -n) and none is
 * listed: cp -a, rsync -X, tar --xattrs and getfattr -d see only what
 * listxattr names, and these attributes describe the mount (its counters;
 * a conversion's failure under its limits, options and cache), not bytes a
 * copy keeps.  A readable package's "left out" reasons or a root's counters
 * copied onto a game folder would be stale the moment they landed
 * (meshfs.1, EXTENDED ATTRIBUTES). */
int mfs_ops_listxattr(mfs_fs *fs, const char *path, char *list, size_t size)
{
    (void)list;
    (void)size;
    return mfs_ops_rel(fs, path) ? 0 : -errno;
}

void mfs_ops_init(mfs_fs *fs, struct fuse_conn_info *conn)
{
    conn->max_readahead = 1u << 20;
    /* Without this the kernel runs one lookup at a time per directory, so a
     * cold view's conversion holds up first lookups of its neighbours.
     * libfuse before 3.17 never passes the flag on to the kernel (upstream
     * c9905341), so on Debian 12's 3.14 the limitation stands; asking for
     * it costs nothing and lifts it with a newer libfuse. */
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    /* Attributes with every listing, not only its first part: the kernel's
     * "auto" mode sends plain READDIR after the first reply unless a lookup
     * happened in between, and find reads the whole folder before it stats
     * anything, so most names would cost a LOOKUP each. */
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    mfs_pt_init(fs, conn, fs->cfg.passthrough);
}

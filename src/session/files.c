/* The open files of one mount: what an OPEN hands the kernel and how it
 * is to read it.  The path part (is it a plain file of SRC or a view, and
 * which descriptor range serves it) is the mount's (ops.c,
 * mfs_ops_open_path); this file turns that into a handle: what the kernel
 * may keep (kview.c), whether it reads the bytes itself (passthrough.c),
 * the moves of a view to a new inode (renew.c), and READ and RELEASE on
 * the handle.  Split from ops.c so that the mount's code holds no libfuse
 * type. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../coherence/coherence.h"
#include "files.h"
#include "../mount/mount.h"
#include "held.h"
#include "llstate.h"
#include "passthrough.h"

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

mfs_files *mfs_files_new(void)
{
    mfs_files *f = calloc(1, sizeof *f);
    if (f)
        pthread_mutex_init(&f->open_handles.lock, NULL);
    return f;
}

void mfs_files_free(mfs_files *f)
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
        mfs_kview_release(h->fs->coherence.kviews, h->kv, h->direct);
    mfs_pt_release(h->fs, h->backing);
    close(h->fd);
    free(h);
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
        mfs_renew_view(&fs->coherence, path, node);
        return -ESTALE;
    }
    if (b < 0)
        return b;
    mfs_kview_open res;
    h->kv = mfs_kview_opened(fs->coherence.kviews, path, id, &h->st, &res);
    if (res.renew) {
        mfs_pt_release(fs, b);
        mfs_renew_view(&fs->coherence, path, node);
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

/* Sends an inode invalidation for kview.c (mfs_kview_invalidate), from the
 * OPEN handler itself: kview.c says why. */
typedef struct inval_ctx {
    mfs_fs *fs;
    uint64_t node;
} inval_ctx;

static void send_inval(void *arg)
{
    inval_ctx *c = arg;
    mfs_ll_invalidate_node(c->fs, c->node);
}

static void invalidate(mfs_fs *fs, uint64_t node, handle *h)
{
    inval_ctx c = {fs, node};
    mfs_kview_invalidate(fs->coherence.kviews, h->kv, send_inval, &c);
}

static int kview_open(mfs_fs *fs, const char *path, uint64_t node, struct fuse_file_info *fi, handle *h,
                      const uint8_t id[16])
{
    h->node = node;
    memcpy(h->key, id, 16);
    /* test builds (test_coherence.py): an open slow to decide, so a listing
     * can move the view's name while it resolves */
    mfs_test_delay("MESHFS_TEST_OPEN_DELAY_MS");
    mfs_err err;
    int rc = mfs_renew_open_begin(&fs->coherence, node, &err);
    if (rc < 0)
        return -mfs_err_errno(&err);
    rc = decide_open(fs, path, node, fi, h, id);
    mfs_renew_open_end(&fs->coherence);
    if (rc == 1)
        invalidate(fs, node, h);
    return rc < 0 ? rc : 0;
}

/* What a reopen of a moved view copies from a handle of the same node. */
typedef struct like {
    mfs_fs *fs;
    uint64_t node;
    handle *out;
    struct fuse_file_info *fi;
    int invalidate; /* mfs_kview_ref's answer */
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
    a->invalidate = mfs_kview_ref(a->fs->coherence.kviews, h->kv, h->direct);
    a->fi->direct_io = h->direct;
    /* the inode's pages are this entry's, unless it was told another's */
    a->fi->keep_cache = !h->direct && !h->backing && !a->invalidate;
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
    if (a.invalidate)
        invalidate(fs, node, h);
    fi->fh = keep(fs, h);
    atomic_fetch_add(&fs->stats.views_served, 1);
    if (h->backing > 0)
        atomic_fetch_add(&fs->stats.passthrough_opens, 1);
    return 0;
}

/* An OPEN of a node that is its name's; -ESTALE when it moves off. */
static int open_current(mfs_fs *fs, const char *path, uint64_t node, struct fuse_file_info *fi)
{
    mfs_ops_opened o;
    int rc = mfs_ops_open_path(fs, path, &o);
    if (rc != 0)
        return rc;
    handle *h = calloc(1, sizeof *h);
    if (!h) {
        close(o.fd);
        return -ENOMEM;
    }
    h->fd = o.fd;
    if (!o.is_view) {
        fi->fh = keep(fs, h);
        return 0;
    }
    h->is_view = 1;
    h->offset = o.offset;
    h->length = o.length;
    h->st = o.st;
    if ((rc = kview_open(fs, path, node, fi, h, o.key)) < 0) {
        close(h->fd);
        free(h);
        return rc;
    }
    fi->fh = keep(fs, h);
    atomic_fetch_add(&fs->stats.views_served, 1);
    return 0;
}

int mfs_files_getattr(mfs_fs *fs, const char *path, struct stat *st, struct fuse_file_info *fi,
                      const mfs_ops_prestat *pre)
{
    handle *fh = fi ? (handle *)(uintptr_t)fi->fh : NULL;
    if (fh && fh->is_view) {
        atomic_fetch_add(&fs->stats.attr_requests, 1);
        /* asked through an open view (a read past the size it knows): the
         * entry that handle serves, as kview.c allows */
        *st = fh->st;
        mfs_kview_handle_attr(fs->coherence.kviews, fh->kv, path, st);
        return 0;
    }
    return mfs_ops_getattr(fs, path, st, fi ? NULL : pre);
}

int mfs_files_open(mfs_fs *fs, const char *path, uint64_t node, int retry,
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
int mfs_files_read_buf(mfs_fs *fs, struct fuse_bufvec **bufp, size_t size, off_t off,
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

void mfs_files_release(mfs_fs *fs, struct fuse_file_info *fi)
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

void mfs_files_close_all(mfs_fs *fs)
{
    mfs_held_free_all(&fs->files->open_handles, held_free);
}

void mfs_files_init(mfs_fs *fs, struct fuse_conn_info *conn)
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

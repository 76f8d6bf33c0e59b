/* The kernel's requests, by node id, made into the mount-path operations
 * of ops.c and listing.c (docs/architecture.md).
 *
 * meshfs speaks libfuse's low-level protocol so that it, not libfuse,
 * keeps the table of inodes the kernel holds (nodes.c), and can bound it:
 * the high-level library keeps a node for every inode the kernel ever held
 * and gives a filesystem no id to tell the kernel to let one go
 * (docs/scale.md, "The kernel's inodes").  Beyond the cap a pruning thread
 * tells the kernel to drop the least recently used files' entries, and the
 * FORGETs that follow free them.  Everything else is what the high-level
 * library did for meshfs: a path per request, attributes with every entry,
 * and each reply's lookup counted. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirreply.h"
#include "files.h"
#include "../mount/mount.h"
#include "leasewait.h"
#include "listing.h"
#include "lowlevel.h"
#include "nodes.h"
#include "passthrough.h"
#include "share.h"

static mfs_fs *FS(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

static void wake_pruner(mfs_fs *fs)
{
    mfs_ll *ll = fs->ll;
    if (!mfs_nodes_over(ll->nodes))
        return;
    pthread_mutex_lock(&ll->pruner_lock);
    ll->pruner_wake = 1;
    pthread_cond_signal(&ll->pruner_cond);
    pthread_mutex_unlock(&ll->pruner_lock);
}

/* The kernel may not be told to drop an entry from inside a request that
 * holds its folder's lock (a LOOKUP, a READDIR), so a thread of its own
 * does it, holding no lock of ours while it writes to the device. */
static void *prune_main(void *arg)
{
    mfs_ll *ll = arg;
    mfs_node_victim *v = malloc(256 * sizeof *v);
    if (!v)
        return NULL;
    pthread_mutex_lock(&ll->pruner_lock);
    while (!ll->pruner_stop) {
        if (!ll->pruner_wake) {
            pthread_cond_wait(&ll->pruner_cond, &ll->pruner_lock);
            continue;
        }
        ll->pruner_wake = 0;
        pthread_mutex_unlock(&ll->pruner_lock);
        size_t k;
        while ((k = mfs_nodes_victims(ll->nodes, v, 256)) > 0) {
            for (size_t i = 0; i < k; i++)
                fuse_lowlevel_notify_inval_entry(ll->session, v[i].parent, v[i].name,
                                                 strlen(v[i].name));
            if (k < 256)
                break;
        }
        pthread_mutex_lock(&ll->pruner_lock);
    }
    pthread_mutex_unlock(&ll->pruner_lock);
    free(v);
    return NULL;
}

int mfs_ll_start(mfs_fs *fs, struct fuse_session *se, unsigned threads)
{
    mfs_ll *ll = fs->ll;
    ll->session = se;
    ll->pruner_stop = 0;
    unsigned cap = threads / MFS_LL_SHARE_DIVISOR;
    fs->share = mfs_share_new(cap ? cap : 1);
    fs->leasewait = mfs_leasewait_new();
    if (!fs->share || !fs->leasewait ||
        pthread_create(&ll->pruner, NULL, prune_main, ll) != 0) {
        mfs_leasewait_free(fs->leasewait);
        mfs_share_free(fs->share);
        fs->leasewait = NULL;
        fs->share = NULL;
        return -1;
    }
    ll->pruner_running = 1;
    return 0;
}

void mfs_ll_stop(mfs_fs *fs)
{
    mfs_ll *ll = fs->ll;
    if (ll->pruner_running) {
        pthread_mutex_lock(&ll->pruner_lock);
        ll->pruner_stop = 1;
        pthread_cond_signal(&ll->pruner_cond);
        pthread_mutex_unlock(&ll->pruner_lock);
        pthread_join(ll->pruner, NULL);
        ll->pruner_running = 0;
    }
    /* the request threads are gone: opens still waiting for a lease are
     * answered (EIO) while the session can still take the answer */
    mfs_leasewait_free(fs->leasewait);
    fs->leasewait = NULL;
    mfs_share_free(fs->share);
    fs->share = NULL;
    ll->session = NULL;
}

int mfs_ll_share_text(mfs_fs *fs, char *buf, size_t n)
{
    uint64_t waits;
    size_t waiting;
    mfs_leasewait_counts(fs->leasewait, &waits, &waiting);
    return snprintf(buf, n, " share_cap=%u share_queued=%llu lease_waits=%llu lease_waiting=%zu",
                    fs->share ? mfs_share_cap(fs->share) : 0,
                    (unsigned long long)(fs->share ? mfs_share_queued(fs->share) : 0),
                    (unsigned long long)waits, waiting);
}

/* The session's counters in the stats xattr (mfs_session_iface.counts). */
static void session_counts(mfs_fs *fs, mfs_session_counts *c)
{
    mfs_listing_counts(fs, &c->listing_handles, &c->listing_names);
    mfs_dirreply_counts(fs, &c->ahead_sent, &c->ahead_dropped, &c->ahead_waiting);
    mfs_nodes_stats ns;
    mfs_ll_nodes_stats(fs, &ns);
    c->nodes = ns.nodes;
    c->node_files = ns.files;
    c->node_cap = ns.cap;
    c->nodes_offered = ns.offered;
    c->nodes_freed = ns.freed;
}

/* What the mount asks of the session (mount.h, mfs_session_iface): given at mfs_ll_setup, so the
 * mount's code calls down through it and never up into this file. */
static const mfs_session_iface session_iface = {
    .renew = mfs_ll_renew,
    .node_current = mfs_ll_node_current,
    .counts = session_counts,
    .share_text = mfs_ll_share_text,
};

/* The request's path in buf; replies with the error and returns -1 if it
 * has none. */
static int path_of(fuse_req_t req, fuse_ino_t ino, char *buf)
{
    int rc = mfs_nodes_path(FS(req)->ll->nodes, ino, buf, PATH_MAX);
    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return -1;
    }
    return 0;
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
    mfs_files_init(userdata, conn);
}

static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name,
                      const mfs_ops_prestat *pre)
{
    mfs_fs *fs = FS(req);
    mfs_ll *ll = fs->ll;
    mfs_nodes *nodes = ll->nodes;
    atomic_fetch_add(&ll->tells, 1);
    char path[PATH_MAX];
    int rc = mfs_nodes_child_path(nodes, parent, name, path, sizeof path);
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    if (rc == 0)
        rc = mfs_ops_lookup(fs, path, &e.attr, pre);
    if (rc == -ENOENT && ll->negative_timeout > 0) {
        e.entry_timeout = ll->negative_timeout; /* ino 0: "not there", kept that long */
        fuse_reply_entry(req, &e);
        return;
    }
    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    e.ino = mfs_nodes_lookup(nodes, parent, name, S_ISDIR(e.attr.st_mode));
    if (!e.ino) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    e.entry_timeout = ll->entry_timeout;
    e.attr_timeout = ll->attr_timeout;
    if (fuse_reply_entry(req, &e) != 0)
        mfs_nodes_forget(nodes, e.ino, 1); /* interrupted: the kernel never got it */
    wake_pruner(fs);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    mfs_nodes_forget(FS(req)->ll->nodes, ino, nlookup);
    fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
    mfs_nodes *nodes = FS(req)->ll->nodes;
    for (size_t i = 0; i < count; i++)
        mfs_nodes_forget(nodes, f[i].ino, f[i].nlookup);
    fuse_reply_none(req);
}

static void do_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                       const mfs_ops_prestat *pre)
{
    mfs_fs *fs = FS(req);
    mfs_nodes *nodes = fs->ll->nodes;
    atomic_fetch_add(&fs->ll->tells, 1);
    char path[PATH_MAX];
    if (path_of(req, ino, path) < 0)
        return;
    struct stat st;
    /* a node whose name moved on answers for the entry its handles read;
     * asked again after the path's answer, which may be the new entry's if
     * the name moved meanwhile (renew.c moves the node first) */
    int rc = !fi && mfs_nodes_kept_attr(nodes, ino, &st) ? 0
                                                         : mfs_files_getattr(fs, path, &st, fi, pre);
    if (rc == 0 && !fi)
        mfs_nodes_kept_attr(nodes, ino, &st);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_attr(req, &st, fs->ll->attr_timeout);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
    char path[PATH_MAX], target[PATH_MAX + 1];
    if (path_of(req, ino, path) < 0)
        return;
    int rc = mfs_ops_readlink(FS(req), path, target, sizeof target);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_readlink(req, target);
}

/* The answer to an OPEN that mfs_files_open gave rc. */
static void open_reply(fuse_req_t req, fuse_ino_t ino, const char *path,
                       struct fuse_file_info *fi, int rc)
{
    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    mfs_fs *fs = FS(req);
    mfs_nodes_opened(fs->ll->nodes, ino, 1);
    if (fuse_reply_open(req, fi) != 0) {
        mfs_files_release(fs, fi); /* interrupted: no release will come */
        mfs_nodes_opened(fs->ll->nodes, ino, -1);
    }
}

/* An OPEN of a plain file (or a view whose model is) under a lease, tried
 * again by the lease waiter (leasewait.h) and answered from its thread.
 * The path is asked of the node at each try: the kernel holds the node
 * while it waits. */
typedef struct open_wait {
    mfs_leasewait_entry entry; /* first */
    fuse_req_t req;
    fuse_ino_t ino;
    int retry;
    int view; /* not a file of SRC: its open may convert */
    struct fuse_file_info fi;
} open_wait;

static int hand_back(open_wait *w);
static int may_wait(mfs_fs *fs, fuse_ino_t ino, const char *child, mfs_ops_prestat *pre);

static int open_again(mfs_leasewait_entry *e, int stopping)
{
    open_wait *w = (open_wait *)e;
    mfs_fs *fs = FS(w->req);
    char path[PATH_MAX] = "";
    int rc = stopping                       ? -EIO
             : fuse_req_interrupted(w->req) ? -EINTR /* the reader gave up (a signal) */
                                            : mfs_nodes_path(fs->ll->nodes, w->ino, path, sizeof path);
    /* a view's open may convert, which may wait (for its inputs' leases
     * too): never on this thread, which every waiting open shares.  It only
     * looks whether the model is still leased, and then hands the open
     * back to its user's share. */
    if (rc == 0 && w->view) {
        if (mfs_ops_leased(fs, path))
            return 1;
        if (hand_back(w) == 0)
            return 0;
    }
    if (rc == 0 && (rc = mfs_files_open(fs, path, w->ino, w->retry, &w->fi)) == MFS_OPS_LEASED)
        return 1;
    open_reply(w->req, w->ino, path, &w->fi, rc);
    free(w);
    return 0;
}

/* 0: the waiter has the request; -1: it could not take it (no memory). */
static int wait_lease(fuse_req_t req, fuse_ino_t ino, int retry, const struct fuse_file_info *fi)
{
    mfs_fs *fs = FS(req);
    open_wait *w = calloc(1, sizeof *w);
    if (!w || !fs->leasewait) {
        free(w);
        return -1;
    }
    *w = (open_wait){.entry.again = open_again, .req = req, .ino = ino, .retry = retry,
                     .view = may_wait(fs, ino, NULL, NULL), .fi = *fi};
    mfs_leasewait_add(fs->leasewait, &w->entry);
    return 0;
}

/* An OPEN whose retry flag (nodes.h) is known: asked at its first try. */
static void open_run(fuse_req_t req, fuse_ino_t ino, int retry, struct fuse_file_info *fi)
{
    char path[PATH_MAX];
    if (path_of(req, ino, path) < 0)
        return;
    mfs_fs *fs = FS(req);
    uint32_t tid = (uint32_t)fuse_req_ctx(req)->pid;
    int rc = mfs_files_open(fs, path, ino, retry, fi);
    /* its retry comes next (nodes.h); a retry's own ESTALE is the
     * caller's answer, and no retry follows it */
    if (rc == -ESTALE && !retry)
        mfs_nodes_refused(fs->ll->nodes, ino, tid);
    if (rc == MFS_OPS_LEASED && wait_lease(req, ino, retry, fi) == 0)
        return;
    open_reply(req, ino, path, fi, rc == MFS_OPS_LEASED ? -ENOMEM : rc);
}

static void do_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    mfs_ll *ll = FS(req)->ll;
    atomic_fetch_add(&ll->tells, 1);
    char path[PATH_MAX];
    if (path_of(req, ino, path) < 0)
        return;
    open_run(req, ino, mfs_nodes_retry_of(ll->nodes, ino, (uint32_t)fuse_req_ctx(req)->pid), fi);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)ino;
    struct fuse_bufvec *bv = NULL;
    int rc = mfs_files_read_buf(FS(req), &bv, size, off, fi);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_data(req, bv, FUSE_BUF_SPLICE_MOVE);
    free(bv);
}

/* Test builds only (tests/integration/test_passthrough.py): with
 * MESHFS_TEST_RELEASE_DELAY_MS=N, every RELEASE is handled N ms late, as a
 * busy daemon would: the kernel's close() has long returned by then. */
static void test_release_delay(void)
{
    mfs_test_delay("MESHFS_TEST_RELEASE_DELAY_MS");
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    test_release_delay();
    mfs_fs *fs = FS(req);
    mfs_files_release(fs, fi);
    mfs_nodes_opened(fs->ll->nodes, ino, -1);
    fuse_reply_err(req, 0);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    char path[PATH_MAX];
    if (path_of(req, ino, path) < 0)
        return;
    int rc = mfs_dirreply_opendir(FS(req), path, fi);
    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    if (fuse_reply_open(req, fi) != 0)
        mfs_dirreply_releasedir(FS(req), fi);
}

static void readdir_any(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi, int plus)
{
    char path[PATH_MAX];
    if (path_of(req, ino, path) < 0)
        return;
    mfs_dirreply_readdir(FS(req), req, ino, path, size, off, fi, plus);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    readdir_any(req, ino, size, off, fi, 0);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    readdir_any(req, ino, size, off, fi, 1);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    mfs_dirreply_releasedir(FS(req), fi);
    fuse_reply_err(req, 0);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    struct statvfs sv;
    int rc = mfs_ops_statfs(FS(req), &sv);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_statfs(req, &sv);
}

static void reply_xattr(fuse_req_t req, int rc, const char *value, size_t size)
{
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else if (size == 0)
        fuse_reply_xattr(req, (size_t)rc);
    else
        fuse_reply_buf(req, value, (size_t)rc);
}

static void do_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    char path[PATH_MAX];
    if (path_of(req, ino, path) < 0)
        return;
    char *value = size ? malloc(size) : NULL;
    if (size && !value) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    reply_xattr(req, mfs_ops_getxattr(FS(req), path, name, value, size), value, size);
    free(value);
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    char path[PATH_MAX];
    if (path_of(req, ino, path) < 0)
        return;
    char *list = size ? malloc(size) : NULL;
    if (size && !list) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    reply_xattr(req, mfs_ops_listxattr(FS(req), path, list, size), list, size);
    free(list);
}

/* Everything that would change something: the mount is read-only at the
 * kernel too (-o ro), so these are only reached by a kernel that asks
 * anyway. */
static void rofs(fuse_req_t req)
{
    fuse_reply_err(req, EROFS);
}
static void ll_setattr(fuse_req_t r, fuse_ino_t i, struct stat *a, int s, struct fuse_file_info *f)
{
    (void)i, (void)a, (void)s, (void)f;
    rofs(r);
}
static void ll_mknod(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, dev_t d)
{
    (void)p, (void)n, (void)m, (void)d;
    rofs(r);
}
static void ll_mkdir(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m)
{
    (void)p, (void)n, (void)m;
    rofs(r);
}
static void ll_unlink(fuse_req_t r, fuse_ino_t p, const char *n)
{
    (void)p, (void)n;
    rofs(r);
}
static void ll_symlink(fuse_req_t r, const char *l, fuse_ino_t p, const char *n)
{
    (void)l, (void)p, (void)n;
    rofs(r);
}
static void ll_rename(fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn,
                      unsigned int f)
{
    (void)p, (void)n, (void)np, (void)nn, (void)f;
    rofs(r);
}
static void ll_link(fuse_req_t r, fuse_ino_t i, fuse_ino_t np, const char *nn)
{
    (void)i, (void)np, (void)nn;
    rofs(r);
}
static void ll_write(fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o,
                     struct fuse_file_info *f)
{
    (void)i, (void)b, (void)s, (void)o, (void)f;
    rofs(r);
}
static void ll_setxattr(fuse_req_t r, fuse_ino_t i, const char *n, const char *v, size_t s, int f)
{
    (void)i, (void)n, (void)v, (void)s, (void)f;
    rofs(r);
}
static void ll_removexattr(fuse_req_t r, fuse_ino_t i, const char *n)
{
    (void)i, (void)n;
    rofs(r);
}
static void ll_create(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, struct fuse_file_info *f)
{
    (void)p, (void)n, (void)m, (void)f;
    rofs(r);
}
static void ll_fallocate(fuse_req_t r, fuse_ino_t i, int m, off_t o, off_t l,
                         struct fuse_file_info *f)
{
    (void)i, (void)m, (void)o, (void)l, (void)f;
    rofs(r);
}

/* ---- each user's share of the request threads (share.h) ----
 *
 * A request that may wait on something a user controls runs as a job of
 * its user's share, with its arguments copied, as it may run later on
 * another thread: a LOOKUP, GETATTR, OPEN or GETXATTR of a name that is
 * not a file of SRC (a view, which may wait for its conversion, and for a
 * lease on its inputs).  Everything else runs at once, as it never waits
 * for anyone: listings take no model lock they would wait for (mount.h),
 * reads read an open descriptor, and an open of a plain file under a lease
 * waits in the lease waiter, not here.  So a user's own listings and plain
 * files never queue behind that user's conversions, and RELEASE and
 * FORGET never queue at all (a RELEASE held back would keep a passthrough
 * inode bound: docs/passthrough.md). */
enum { J_LOOKUP, J_GETATTR, J_OPEN, J_GETXATTR, J_OPEN_AGAIN };

typedef struct ll_job {
    mfs_share_job share; /* first */
    fuse_req_t req;
    int op;
    fuse_ino_t ino;
    int has_fi;
    struct fuse_file_info fi;
    size_t size;
    int retry; /* J_OPEN_AGAIN: the OPEN's, from its first try */
    mfs_ops_prestat pre; /* LOOKUP's and GETATTR's: may_wait's stat */
    char name[]; /* LOOKUP's and GETXATTR's */
} ll_job;

static void run_job(mfs_share_job *sj)
{
    ll_job *j = (ll_job *)sj;
    struct fuse_file_info *fi = j->has_fi ? &j->fi : NULL;
    switch (j->op) {
    case J_LOOKUP: do_lookup(j->req, j->ino, j->name, &j->pre); break;
    case J_GETATTR: do_getattr(j->req, j->ino, fi, &j->pre); break;
    case J_OPEN: do_open(j->req, j->ino, fi); break;
    case J_GETXATTR: do_getxattr(j->req, j->ino, j->name, j->size); break;
    case J_OPEN_AGAIN: open_run(j->req, j->ino, j->retry, fi); break;
    }
    free(j);
}

/* Whether the request is about a name that is not a file of SRC (a view,
 * or nothing), so it may wait.  A stat beneath SRC, which no lease holds
 * up; a hidden source (-o hide_sources) is answered ENOENT at once; an
 * error is the request's to report, at once too. */
static int may_wait(mfs_fs *fs, fuse_ino_t ino, const char *child, mfs_ops_prestat *pre)
{
    mfs_nodes *nodes = fs->ll->nodes;
    char path[PATH_MAX];
    int rc = child ? mfs_nodes_child_path(nodes, ino, child, path, sizeof path)
                   : mfs_nodes_path(nodes, ino, path, sizeof path);
    const char *r = rc == 0 ? mfs_ops_rel(fs, path) : NULL;
    if (!r)
        return 0;
    mfs_ops_prestat own;
    mfs_ops_prestat *p = pre ? pre : &own;
    p->rc = mfs_beneath_stat(&fs->names, r, &p->st) == 0 ? 0 : -errno;
    /* the request answers from this stat (mfs_ops_prestat) */
    p->known = pre && snprintf(p->rel, sizeof p->rel, "%s", r) < (int)sizeof p->rel;
    return p->rc == -ENOENT;
}

/* 1: the request is its user's share's now (run, or queued); 0: the
 * caller runs it at once. */
static int share_job(fuse_req_t req, int op, fuse_ino_t ino, struct fuse_file_info *fi,
                     size_t size, const char *name, mfs_ops_prestat *pre)
{
    mfs_fs *fs = FS(req);
    if (!may_wait(fs, ino, op == J_LOOKUP ? name : NULL, pre))
        return 0;
    size_t nl = name ? strlen(name) + 1 : 0;
    ll_job *j = malloc(sizeof *j + nl);
    if (!j)
        return 0; /* unbounded rather than refused */
    *j = (ll_job){.share = {.uid = fuse_req_ctx(req)->uid, .run = run_job}, .req = req,
                  .op = op, .ino = ino, .has_fi = fi != NULL, .size = size};
    if (fi)
        j->fi = *fi;
    if (pre)
        j->pre = *pre;
    if (name)
        memcpy(j->name, name, nl);
    mfs_share_run(fs->share, &j->share);
    return 1;
}

/* A view's OPEN whose model's lease went (open_again): it runs as a job
 * of its user's share, on a thread of its own, which ends once the job
 * has run or is queued (the waiter counts it: mfs_leasewait_free waits for
 * it).  0, or -1 if no thread can be had (the waiter then opens it
 * itself). */
static void *hand_main(void *arg)
{
    ll_job *j = arg;
    mfs_fs *fs = FS(j->req);
    mfs_share_run(fs->share, &j->share);
    mfs_leasewait_hand_end(fs->leasewait);
    return NULL;
}

static int hand_back(open_wait *w)
{
    mfs_fs *fs = FS(w->req);
    ll_job *j = malloc(sizeof *j);
    if (!j)
        return -1;
    *j = (ll_job){.share = {.uid = fuse_req_ctx(w->req)->uid, .run = run_job}, .req = w->req,
                  .op = J_OPEN_AGAIN, .ino = w->ino, .has_fi = 1, .fi = w->fi,
                  .retry = w->retry};
    pthread_attr_t a;
    pthread_t t;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    mfs_leasewait_hand_begin(fs->leasewait);
    int rc = pthread_create(&t, &a, hand_main, j);
    pthread_attr_destroy(&a);
    if (rc != 0) {
        mfs_leasewait_hand_end(fs->leasewait);
        free(j);
        return -1;
    }
    free(w);
    return 0;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    mfs_ops_prestat pre = {0};
    if (!share_job(req, J_LOOKUP, parent, NULL, 0, name, &pre))
        do_lookup(req, parent, name, &pre);
}
static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    /* through an open handle: answered from it, no wait */
    mfs_ops_prestat pre = {0};
    if (fi || !share_job(req, J_GETATTR, ino, NULL, 0, NULL, &pre))
        do_getattr(req, ino, fi, &pre);
}
static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (!share_job(req, J_OPEN, ino, fi, 0, NULL, NULL))
        do_open(req, ino, fi);
}
static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    if (!share_job(req, J_GETXATTR, ino, NULL, size, name, NULL))
        do_getxattr(req, ino, name, size);
}

const struct fuse_lowlevel_ops mfs_ll_ops = {
    .init = ll_init,
    .lookup = ll_lookup,
    .forget = ll_forget,
    .forget_multi = ll_forget_multi,
    .getattr = ll_getattr,
    .readlink = ll_readlink,
    .open = ll_open,
    .read = ll_read,
    .release = ll_release,
    .opendir = ll_opendir,
    .readdir = ll_readdir,
    .readdirplus = ll_readdirplus,
    .releasedir = ll_releasedir,
    .statfs = ll_statfs,
    .getxattr = ll_getxattr,
    .listxattr = ll_listxattr,
    .setattr = ll_setattr,
    .mknod = ll_mknod,
    .mkdir = ll_mkdir,
    .unlink = ll_unlink,
    .rmdir = ll_unlink,
    .symlink = ll_symlink,
    .rename = ll_rename,
    .link = ll_link,
    .write = ll_write,
    .setxattr = ll_setxattr,
    .removexattr = ll_removexattr,
    .create = ll_create,
    .fallocate = ll_fallocate,
};

int mfs_ll_setup(mfs_fs *fs, size_t max_inodes, double entry_t, double attr_t, double negative_t)
{
    mfs_ll *ll = calloc(1, sizeof *ll);
    if (!ll)
        return -1;
    fs->ll = ll;
    fs->session = &session_iface;
    ll->entry_timeout = entry_t;
    ll->attr_timeout = attr_t;
    ll->negative_timeout = negative_t;
    pthread_mutex_init(&ll->pruner_lock, NULL);
    pthread_cond_init(&ll->pruner_cond, NULL);
    ll->nodes = mfs_nodes_new(max_inodes);
    fs->replies = mfs_dirreply_new(ll->nodes, entry_t, attr_t, wake_pruner);
    fs->listings = mfs_listing_new(entry_t < attr_t ? entry_t : attr_t);
    fs->pt = mfs_pt_new();
    fs->files = mfs_files_new();
    return ll->nodes && fs->replies && fs->listings && fs->pt && fs->files ? 0 : -1;
}

void mfs_ll_teardown(mfs_fs *fs)
{
    mfs_ll *ll = fs->ll;
    mfs_files_free(fs->files); /* the last use of each: the mount is ending */
    mfs_pt_free(fs->pt);
    mfs_listing_free(fs->listings);
    mfs_dirreply_free(fs->replies);
    if (!ll)
        return;
    mfs_nodes_free(ll->nodes);
    pthread_mutex_destroy(&ll->pruner_lock);
    pthread_cond_destroy(&ll->pruner_cond);
    free(ll);
    fs->ll = NULL;
    fs->session = NULL;
}

/* READDIR(PLUS) replies (dirreply.h).
 *
 * A first listing of a big cold folder alternates two kinds of work: the
 * daemon fills a reply (a stat per source, a node per entry sent with
 * attributes), then the kernel, on the lister's side, makes a dentry and
 * an inode for each of its entries, and only then asks for the next.
 * Done in turn they add up; on two cores they need not.  So once a
 * READDIRPLUS reply that stopped at the kernel's size is sent, the thread
 * that sent it goes on to fill the next one (same size, the offset after
 * its last entry) while the kernel takes in the first; the next request
 * finds it ready, or waits for it.  One reply ahead at most, per handle.
 *
 * A reply built ahead holds the lookups of its entries (nodes.h), which
 * the kernel owns only once it gets them: one that is never sent (the next
 * request asks for another offset or size, or the listing ends) gives them
 * back.  It is also dropped, and built again on request, if it could
 * overwrite something newer in the kernel: its stats were taken before
 * the request that carries it was sent, so the kernel's own guard (an
 * inode changed since the request went) does not cover them.  So it goes
 * only if no LOOKUP, GETATTR or OPEN began since it was started, no view
 * moved to a new inode (renew.c), and it is at most AHEAD_MAX_MS old.  A
 * dropped one also marks what it recorded of its views as unknown
 * (kview.c), so their next open invalidates. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "meshfs/util.h"
#include "dirreply.h"
#include "../mount/mount.h"
#include "held.h"
#include "../coherence/coherence.h"
#include "listing.h"
#include "llstate.h"

/* A streaming lister asks for the next reply within a millisecond; one
 * that pauses longer gets it built afresh. */
#define AHEAD_MAX_MS 20

/* This layer's state, one per mount (fs->replies). */
struct mfs_dirreplies {
    mfs_nodes *nodes;
    double entry_timeout, attr_timeout;
    void (*gave_lookups)(mfs_fs *);
    atomic_uint_least64_t ahead_sent, ahead_dropped, ahead_waiting;
    mfs_held_list open_handles;
};

/* One reply being filled or kept: the request it answers and the lookups
 * its entries gave. */
typedef struct reply {
    mfs_fs *fs;
    fuse_req_t req; /* NULL when built ahead (no request yet) */
    fuse_ino_t ino;
    int plus;
    off_t off;
    char *buf;
    size_t size, len;
    off_t last;     /* the offset of its last entry */
    int full;       /* it stopped at size: more entries follow */
    uint64_t *given;
    size_t ngiven;
    char **names;   /* built ahead: the given entries' names (for kview) */
    uint64_t moves; /* views moved (renew.c) when it was started */
    uint64_t tells; /* mfs_ll_tells() when it was started */
    double done;    /* when it was filled (mfs_mono_s) */
} reply;

/* This layer's handle: the listing's, and the reply built ahead. */
typedef struct dirhandle {
    mfs_held held; /* first: the kernel holds it (held.h) */
    mfs_fs *fs;    /* the mount it belongs to */
    uint64_t fh;   /* listing.c's */
    char *path;    /* the folder's mount path, "/cars" */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int building;  /* a thread is filling `ahead` */
    reply ahead;   /* .buf: filled, not sent */
} dirhandle;

mfs_dirreplies *mfs_dirreply_new(mfs_nodes *n, double entry_t, double attr_t,
                                 void (*gave)(mfs_fs *))
{
    mfs_dirreplies *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->nodes = n;
    d->entry_timeout = entry_t;
    d->attr_timeout = attr_t;
    d->gave_lookups = gave;
    pthread_mutex_init(&d->open_handles.lock, NULL);
    return d;
}

void mfs_dirreply_free(mfs_dirreplies *d)
{
    if (!d)
        return;
    pthread_mutex_destroy(&d->open_handles.lock);
    free(d);
}

static uint64_t moves_now(mfs_fs *fs)
{
    return atomic_load(&fs->coherence.views_renewed);
}

static int is_dot(const char *name)
{
    return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

static int fill(void *ctx, const char *name, const struct stat *st, off_t off,
                enum fuse_fill_dir_flags flags)
{
    reply *r = ctx;
    size_t room = r->size - r->len;
    struct stat dot;
    if (!st) { /* "." and "..": a folder, number unknown */
        memset(&dot, 0, sizeof dot);
        dot.st_mode = S_IFDIR;
        st = &dot;
        flags &= ~FUSE_FILL_DIR_PLUS;
    }
    if (!r->plus) {
        size_t need = fuse_add_direntry(r->req, NULL, 0, name, NULL, 0);
        if (need > room)
            return r->full = 1;
        fuse_add_direntry(r->req, r->buf + r->len, room, name, st, off);
        r->len += need;
        r->last = off;
        return 0;
    }
    size_t need = fuse_add_direntry_plus(r->req, NULL, 0, name, NULL, 0);
    if (need > room)
        return r->full = 1;
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    if ((flags & FUSE_FILL_DIR_PLUS) && !is_dot(name)) {
        e.attr = *st;
        mfs_dirreplies *d = r->fs->replies;
        e.ino = mfs_nodes_lookup(d->nodes, r->ino, name, S_ISDIR(st->st_mode));
        if (e.ino) {
            if (r->names)
                r->names[r->ngiven] = strdup(name); /* NULL: forgotten harmlessly */
            r->given[r->ngiven++] = e.ino;
            e.entry_timeout = d->entry_timeout;
            e.attr_timeout = d->attr_timeout;
        }
    } else {
        /* ino 0: a name without attributes; the kernel makes no inode */
        e.attr.st_ino = st->st_ino;
        e.attr.st_mode = st->st_mode;
    }
    fuse_add_direntry_plus(r->req, r->buf + r->len, room, name, &e, off);
    r->len += need;
    r->last = off;
    return 0;
}

static void reply_free(reply *r)
{
    for (size_t i = 0; r->names && i < r->ngiven; i++)
        free(r->names[i]);
    free(r->names);
    free(r->buf);
    free(r->given);
    mfs_fs *fs = r->fs;
    memset(r, 0, sizeof *r);
    r->fs = fs;
}

/* Gives back the lookups of a reply the kernel will not get, and (built
 * ahead) forgets what the listing recorded of its views as told. */
static void reply_drop(reply *r, const char *dir)
{
    for (size_t i = 0; i < r->ngiven; i++) {
        if (r->names && r->names[i]) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", strcmp(dir, "/") ? dir : "", r->names[i]);
            mfs_kview_unknown(r->fs->coherence.kviews, path);
        }
        mfs_nodes_forget(r->fs->replies->nodes, r->given[i], 1);
    }
    reply_free(r);
}

/* Fills r (its ino, plus, off and size set) from the listing.  0, or
 * -errno when nothing could be listed. */
static int reply_build(reply *r, const char *path, uint64_t fh)
{
    /* a readdirplus entry takes at least 152 bytes, so this bounds them */
    size_t most = r->size / 152 + 1;
    r->buf = malloc(r->size ? r->size : 1);
    r->given = r->plus ? malloc(most * sizeof *r->given) : NULL;
    r->names = r->plus && !r->req ? calloc(most, sizeof *r->names) : NULL;
    if (!r->buf || (r->plus && !r->given) || (r->plus && !r->req && !r->names)) {
        reply_free(r);
        return -ENOMEM;
    }
    r->moves = moves_now(r->fs);
    r->tells = mfs_ll_tells(r->fs);
    struct fuse_file_info fi = {.fh = fh};
    int rc = mfs_listing_readdir(r->fs, path, r, fill, r->off, &fi, r->plus ? FUSE_READDIR_PLUS : 0);
    if (rc < 0 && r->len == 0) {
        reply_drop(r, path);
        return rc;
    }
    r->done = mfs_mono_s();
    return 0;
}

int mfs_dirreply_opendir(mfs_fs *fs, const char *path, struct fuse_file_info *fi)
{
    dirhandle *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    int rc = mfs_listing_opendir(fs, path, fi);
    if (rc < 0) {
        free(h);
        return rc;
    }
    h->fs = fs;
    h->fh = fi->fh;
    if (!(h->path = strdup(path))) {
        mfs_listing_releasedir(fs, fi);
        free(h);
        return -ENOMEM;
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    mfs_held_add(&fs->replies->open_handles, &h->held);
    fi->fh = (uintptr_t)h;
    return 0;
}

static int fresh(const reply *a)
{
    return (mfs_mono_s() - a->done) * 1000 <= AHEAD_MAX_MS && a->moves == moves_now(a->fs) &&
           a->tells == mfs_ll_tells(a->fs);
}

/* The reply built ahead, if it answers this request: taken out of h. */
static int take_ahead(dirhandle *h, reply *r)
{
    int took = 0;
    mfs_dirreplies *d = r->fs->replies;
    pthread_mutex_lock(&h->lock);
    while (h->building)
        pthread_cond_wait(&h->cond, &h->lock);
    if (h->ahead.buf) {
        reply *a = &h->ahead;
        if (a->ino == r->ino && a->plus == r->plus && a->off == r->off && a->size == r->size &&
            fresh(a)) {
            *r = *a;
            memset(a, 0, sizeof *a);
            took = 1;
            atomic_fetch_sub(&d->ahead_waiting, 1);
        } else {
            reply_drop(a, h->path);
            atomic_fetch_sub(&d->ahead_waiting, 1);
            atomic_fetch_add(&d->ahead_dropped, 1);
        }
    }
    pthread_mutex_unlock(&h->lock);
    return took;
}

/* Fills the reply after r, sent, into h->ahead (h->building is set). */
static void build_ahead(dirhandle *h, const reply *r, const char *path)
{
    mfs_dirreplies *d = r->fs->replies;
    reply a = {.fs = r->fs, .ino = r->ino, .plus = r->plus, .off = r->last, .size = r->size};
    int ok = reply_build(&a, path, h->fh) == 0 && a.len > 0;
    if (!ok)
        reply_drop(&a, path);
    else if (a.ngiven && d->gave_lookups)
        d->gave_lookups(r->fs);
    pthread_mutex_lock(&h->lock);
    if (ok) {
        h->ahead = a;
        atomic_fetch_add(&d->ahead_waiting, 1);
    }
    h->building = 0;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

void mfs_dirreply_readdir(mfs_fs *fs, fuse_req_t req, fuse_ino_t ino, const char *path,
                          size_t size, off_t off, struct fuse_file_info *fi, int plus)
{
    dirhandle *h = (dirhandle *)(uintptr_t)fi->fh;
    mfs_dirreplies *d = fs->replies;
    atomic_fetch_add(&fs->stats.readdir_requests, 1);
    reply r = {.fs = fs, .req = req, .ino = ino, .plus = plus, .off = off, .size = size};
    int took = take_ahead(h, &r);
    if (took) {
        r.req = req;
    } else {
        int rc = reply_build(&r, path, h->fh);
        if (rc < 0) {
            fuse_reply_err(req, -rc);
            return;
        }
    }
    /* Marked before the reply goes: the kernel's next request may reach
     * another thread before this one is back from sending it, and must
     * wait rather than fill the listing beside this thread. */
    int ahead = plus && r.full && r.last > 0; /* offset 0 would start the listing over */
    if (ahead) {
        pthread_mutex_lock(&h->lock);
        h->building = 1;
        pthread_mutex_unlock(&h->lock);
    }
    if (fuse_reply_buf(req, r.buf, r.len) != 0) {
        reply_drop(&r, path);
        ahead = 0;
        pthread_mutex_lock(&h->lock);
        h->building = 0;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
    } else {
        if (took)
            atomic_fetch_add(&d->ahead_sent, 1);
        if (r.ngiven && !took && d->gave_lookups)
            d->gave_lookups(fs);
        if (ahead)
            build_ahead(h, &r, path);
        reply_free(&r);
    }
}

static void handle_free(mfs_fs *fs, dirhandle *h)
{
    mfs_dirreplies *d = fs->replies;
    pthread_mutex_lock(&h->lock);
    while (h->building)
        pthread_cond_wait(&h->cond, &h->lock);
    if (h->ahead.buf) {
        reply_drop(&h->ahead, h->path);
        atomic_fetch_add(&d->ahead_dropped, 1);
        atomic_fetch_sub(&d->ahead_waiting, 1);
    }
    pthread_mutex_unlock(&h->lock);
    free(h->path);
    struct fuse_file_info fi = {.fh = h->fh};
    mfs_listing_releasedir(fs, &fi);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    free(h);
}

void mfs_dirreply_releasedir(mfs_fs *fs, struct fuse_file_info *fi)
{
    dirhandle *h = (dirhandle *)(uintptr_t)fi->fh;
    mfs_held_remove(&fs->replies->open_handles, &h->held);
    handle_free(fs, h);
}

/* mfs_held_free_all's callback has no argument: the handle knows its mount */
static void held_free(mfs_held *n)
{
    dirhandle *h = (dirhandle *)n;
    handle_free(h->fs, h);
}

void mfs_dirreply_close_all(mfs_fs *fs)
{
    mfs_held_free_all(&fs->replies->open_handles, held_free);
}

void mfs_dirreply_counts(mfs_fs *fs, uint64_t *sent, uint64_t *dropped, uint64_t *waiting)
{
    mfs_dirreplies *d = fs->replies;
    *sent = atomic_load(&d->ahead_sent);
    *dropped = atomic_load(&d->ahead_dropped);
    *waiting = atomic_load(&d->ahead_waiting);
}

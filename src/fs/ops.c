/* The FUSE operations: a read-only mirror of SRC plus the views.
 *
 * Paths arrive as "/dir/name"; everything is resolved beneath the SRC
 * directory descriptor following no symbolic link (beneath.c), never
 * through the mount or an absolute path. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include "coherence.h"
#include "fs.h"
#include "lgepkg.h"
#include "meshfs/naming.h"
#include "ops.h"
#include "passthrough.h"
#include "prefetch.h"

#define XATTR_ERROR "user.meshfs.error"
#define XATTR_WARNING "user.meshfs.warning"
#define XATTR_STATS "user.meshfs.stats"

typedef struct handle {
    int is_view;
    int fd;
    uint64_t offset, length; /* view payload within fd */
    struct stat st;          /* view: the attributes of the entry it serves */
    void *kv;                /* view: its kview.c token */
    int direct;              /* view: opened with direct I/O (kview.c) */
    int backing;             /* view: its passthrough backing id, 0 if none */
} handle;

static mfs_fs *FS(void)
{
    return fuse_get_context()->private_data;
}

/* The one place a mount path becomes SRC-relative: the real path, in a
 * per-thread buffer valid until this thread's next call.  NULL with errno
 * set when the path shows nothing (-o lowercase_names, casemap.c). */
static const char *rel(const char *path)
{
    static _Thread_local char buf[4096];
    while (*path == '/')
        path++;
    if (!FS()->cfg.lowercase_names)
        return path[0] ? path : ".";
    int rc = mfs_casemap_path(FS(), path, buf, sizeof buf);
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
    return mfs_spawner_is_model(fs->spawner, slash ? slash + 1 : r);
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

/* The one place a resolver outcome that is not a HIT becomes an errno
 * (meshfs/views.h): a model gone, or a known failure under -o hide_failed,
 * is not there; anything else is an I/O error. */
static int failure_errno(const mfs_fs *fs, mfs_view_outcome o, const mfs_view_info *info)
{
    if (o == MFS_VIEW_FAILED_MACHINE && info->errnum == ENOENT)
        return -ENOENT;
    if (o == MFS_VIEW_FAILED_MODEL && fs->cfg.hide_failed)
        return -ENOENT; /* a known failure is not shown (-o hide_failed) */
    return -EIO;
}

static int view_attr(mfs_fs *fs, const char *dir, const mfs_view_ref *ref, struct stat *st)
{
    if (ref->format == MFS_FS_LGEPKG)
        return mfs_lgepkg_attr(fs, dir, st);
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref->model);
    struct stat mst;
    if (mfs_beneath_stat(fs, mpath, &mst) < 0)
        return -errno;
    mfs_view_info vi;
    mfs_err err;
    /* cold right after a listing (ls -l): its neighbours convert meanwhile */
    mfs_prefetch_attr(fs, dir, ref);
    mfs_view_outcome o = mfs_view_get(fs, dir, ref->model, ref->base, ref->format,
                                      MFS_VIEW_ATTR, &vi, &err);
    if (o == MFS_VIEW_FAILED_MACHINE) {
        /* failed for now (e.g. the cache disk is full): like a failed
         * conversion, an empty view whose reason can be read; with no
         * reason to read, an error */
        if (vi.errnum == ENOENT || !err.msg[0])
            return failure_errno(fs, o, &vi);
        vi.size = 0;
        vi.mtime = mst.st_mtim;
    } else if (o == MFS_VIEW_FAILED_MODEL && fs->cfg.hide_failed) {
        return failure_errno(fs, o, &vi);
    }
    mfs_view_stat(&mst, &vi, ref->format, st);
    return 0;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    mfs_fs *fs = FS();
    atomic_fetch_add(&fs->stats.attr_requests, 1);
    handle *fh = fi ? (handle *)(uintptr_t)fi->fh : NULL;
    if (fh && fh->is_view) {
        /* asked through an open view (a read past the size it knows): the
         * entry that handle serves, as kview.c allows */
        *st = fh->st;
        mfs_kview_attr(path, st);
        return 0;
    }
    const char *r = rel(path);
    if (!r)
        return -errno;
    if (mfs_beneath_stat(fs, r, st) == 0)
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
    if (rc == 0)
        mfs_kview_attr(path, st); /* what the kernel will hold (kview.c) */
    return rc;
}

/* One name of a listing, as mfs_dir_list gave it. */
typedef struct dent {
    char *name;             /* one block: name, then model and base */
    ino_t ino;              /* and the type bits: what a listing without */
    mode_t mode;            /* attributes sends */
    int is_view;
    mfs_view_ref view;      /* is_view: model and base point into name's block */
} dent;

/* An open directory: its listing, taken when reading starts at offset 0 and
 * served by offset from then on.  libfuse 3.14's high-level library drops
 * readdirplus attributes unless the filesystem gives offsets (it buffers
 * the listing and sends it with ino 0, which the kernel reads as "no
 * attributes"), and without them every name costs a LOOKUP. */
typedef struct dirh {
    char *dir;              /* relative, "" for the root */
    dent *e;
    size_t n, cap;
    int listed;
    int err;                /* collect ran out of memory */
    /* readdirplus: the stats of the passed-through entries, which come
     * first (sorted by name), as this listing took them; a view's query
     * then need not stat its model again */
    size_t nsrc;
    struct stat *src_st;    /* nsrc, made at the first stat */
    unsigned char *src_have;
    struct chunk *chunks;   /* the names' storage, newest first */
    /* the folder's record (cache.h, "folder records"): read at the first
     * view this listing asks about, and written when the listing ends if
     * it learnt a model's manifest from its model entry */
    int rec_tried;
    mfs_cache_folder *rec;
    unsigned char *rec_used; /* copies that answered: kept in the next one */
    mfs_cache_folder_builder *learnt;
} dirh;

/* The names of a listing live in a few large blocks, not one allocation
 * each: a 20,000-model folder lists 180,000 names, and their mallocs and
 * frees were a tenth of its first listing. */
#define CHUNK_BYTES (256 * 1024)
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    char data[];
} chunk;

static char *names_alloc(dirh *h, size_t n)
{
    if (!h->chunks || h->chunks->cap - h->chunks->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        chunk *c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        *c = (chunk){h->chunks, 0, cap};
        h->chunks = c;
    }
    char *p = h->chunks->data + h->chunks->used;
    h->chunks->used += n;
    return p;
}

/* Listing handles open now, and the names they hold (stats xattr).  A
 * handle's snapshot lives from opendir to releasedir: the kernel holds it
 * for the length of one listing, so their number is bounded by the
 * listings running, and each is freed (and its memory given back, see
 * op_releasedir) when that listing ends (docs/scale.md). */
static atomic_uint_least64_t listing_handles, listing_names;

static int record_key(mfs_fs *fs, const char *dir, mfs_cache_key *fk)
{
    char iopts[64];
    mfs_fs_import_options(fs, iopts, sizeof iopts);
    mfs_err err;
    return mfs_cache_folder_key(dir, iopts, MESHFS_OUTPUT_VERSION, fk, &err);
}

static void record_load(mfs_fs *fs, dirh *h)
{
    h->rec_tried = 1;
    mfs_cache_key fk;
    mfs_err err;
    mfs_err_clear(&err);
    if (record_key(fs, h->dir, &fk) < 0 || mfs_cache_folder_load(fs->cache, &fk, &h->rec, &err) != 1)
        return;
    h->rec_used = calloc(mfs_cache_folder_count(h->rec) + 1, 1);
    if (!h->rec_used) {
        mfs_cache_folder_free(h->rec);
        h->rec = NULL;
    }
}

/* What this listing learnt, and the copies that still answered, as the
 * folder's new record.  Written only when it learnt something: a listing
 * that read every model from the record leaves it as it is. */
static void record_flush(mfs_fs *fs, dirh *h)
{
    if (h->learnt && mfs_cache_folder_builder_count(h->learnt)) {
        int ok = 0;
        for (size_t i = 0; i < mfs_cache_folder_count(h->rec) && ok == 0; i++)
            if (h->rec_used[i])
                ok = mfs_cache_folder_keep(h->learnt, h->rec, i);
        mfs_cache_key fk;
        mfs_err err;
        mfs_err_clear(&err);
        if (ok == 0 && record_key(fs, h->dir, &fk) == 0) {
            int r = mfs_cache_folder_store(fs->cache, &fk, h->learnt, &err);
            if (r == 1)
                atomic_fetch_add(&fs->stats.folder_records_written, 1);
            else if (r < 0)
                mfs_fs_log_at(fs, MFS_LOG_DEBUG, "%s: %s", h->dir[0] ? h->dir : ".", err.msg);
        }
    }
    mfs_cache_folder_builder_free(h->learnt);
    mfs_cache_folder_free(h->rec);
    free(h->rec_used);
    h->learnt = NULL;
    h->rec = NULL;
    h->rec_used = NULL;
    h->rec_tried = 0;
}

static void dirh_clear(dirh *h)
{
    atomic_fetch_sub(&listing_names, h->n);
    while (h->chunks) {
        chunk *c = h->chunks;
        h->chunks = c->next;
        free(c);
    }
    free(h->e);
    free(h->src_st);
    free(h->src_have);
    h->e = NULL;
    h->src_st = NULL;
    h->src_have = NULL;
    h->n = h->cap = h->nsrc = 0;
    h->listed = 0;
    h->err = 0;
}

/* The stat this listing took of a passed-through entry named name, if it
 * has one. */
static const struct stat *listed_stat(const dirh *h, const char *name)
{
    if (!h->src_have)
        return NULL;
    size_t lo = 0, hi = h->nsrc;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(h->e[mid].name, name);
        if (c == 0)
            return h->src_have[mid] ? &h->src_st[mid] : NULL;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void keep_listed_stat(dirh *h, size_t i, const struct stat *st)
{
    if (i >= h->nsrc)
        return;
    if (!h->src_st) {
        h->src_st = malloc(h->nsrc * sizeof *h->src_st);
        h->src_have = calloc(h->nsrc, 1);
        if (!h->src_st || !h->src_have) {
            free(h->src_st);
            free(h->src_have);
            h->src_st = NULL;
            h->src_have = NULL;
            return;
        }
    }
    h->src_st[i] = *st;
    h->src_have[i] = 1;
}

static int collect(void *ctx, const char *name, const struct stat *partial,
                   const mfs_view_ref *view)
{
    dirh *h = ctx;
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        dent *ne = realloc(h->e, cap * sizeof *ne);
        if (!ne)
            return h->err = -ENOMEM;
        h->e = ne;
        h->cap = cap;
    }
    dent *d = &h->e[h->n];
    memset(d, 0, sizeof *d);
    /* one block per name (name, model, base) from the handle's chunks, no
     * struct stat: a 20,000-model folder lists 180,000 names, and each
     * handle holds them all (docs/scale.md) */
    size_t nl = strlen(name) + 1;
    size_t ml = view ? strlen(view->model) + 1 : 0, bl = view ? strlen(view->base) + 1 : 0;
    d->name = names_alloc(h, nl + ml + bl);
    if (!d->name)
        return h->err = -ENOMEM;
    memcpy(d->name, name, nl);
    d->ino = partial->st_ino;
    d->mode = partial->st_mode;
    if (view) {
        d->is_view = 1;
        d->view.model = memcpy(d->name + nl, view->model, ml);
        d->view.base = memcpy(d->name + nl + ml, view->base, bl);
        d->view.format = view->format;
    }
    h->n++;
    atomic_fetch_add(&listing_names, 1);
    return 0;
}

/* Listings the kernel keeps (cache_readdir).  A folder's names change only
 * when its entries do (its mtime and ctime move: dirmap.c's rule) or when a
 * view's state does (-o hide_failed drops failed views; any conversion or
 * failure counts, which is conservative).  opendir compares that signature
 * with the one of the folder's last listing: equal, the kernel may serve the
 * names it kept (keep_cache) and no READDIR reaches the daemon; otherwise it
 * drops them and lists afresh.  A modified file changes no name, so its
 * folder's kept listing stays right; attributes are asked for separately.
 * One slot per hash of the path: a collision only costs a fresh listing. */
#ifdef MESHFS_HAVE_FUSE_317 /* 3.14's fuse_lib_opendir drops keep_cache */
#define DIRSIG_SLOTS 256
static struct {
    char *dir;
    uint64_t sig;
} dirsigs[DIRSIG_SLOTS];
static pthread_mutex_t dirsig_lock = PTHREAD_MUTEX_INITIALIZER;

static int folder_sig(mfs_fs *fs, const char *dir, uint64_t *sig)
{
    struct stat st;
    if (mfs_beneath_stat(fs, dir[0] ? dir : ".", &st) < 0)
        return -1;
    uint64_t v[10] = {(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_mode,
                      (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec,
                      (uint64_t)st.st_ctim.tv_sec, (uint64_t)st.st_ctim.tv_nsec,
                      (uint64_t)atomic_load(&fs->stats.conversions),
                      (uint64_t)atomic_load(&fs->stats.conversion_failures), 0};
    *sig = XXH3_64bits(v, sizeof v);
    return 0;
}

/* 1 if dir's last listing had this signature; records it either way. */
static int dirsig_same(const char *dir, uint64_t sig)
{
    unsigned slot = (unsigned)(XXH3_64bits(dir, strlen(dir)) % DIRSIG_SLOTS);
    pthread_mutex_lock(&dirsig_lock);
    int same = dirsigs[slot].dir && !strcmp(dirsigs[slot].dir, dir) && dirsigs[slot].sig == sig;
    if (!same) {
        char *copy = strdup(dir);
        free(dirsigs[slot].dir);
        dirsigs[slot].dir = copy; /* NULL on out of memory: the next one lists afresh */
        dirsigs[slot].sig = sig;
    }
    pthread_mutex_unlock(&dirsig_lock);
    return same;
}
#endif

static int op_opendir(const char *path, struct fuse_file_info *fi)
{
    const char *r = rel(path);
    if (!r)
        return -errno;
    dirh *h = calloc(1, sizeof *h);
    if (!h || !(h->dir = strdup(strcmp(r, ".") ? r : ""))) {
        free(h);
        return -ENOMEM;
    }
    fi->fh = (uintptr_t)h;
    atomic_fetch_add(&listing_handles, 1);
    /* stats of its cold views may follow (ls -l): here, not in readdir,
     * because a listing the kernel kept sends no READDIR */
    mfs_prefetch_listed(FS(), h->dir);
#ifdef MESHFS_HAVE_FUSE_317
    /* libfuse before 3.16.1 drops both flags on the way to the kernel */
    uint64_t sig;
    if (folder_sig(FS(), h->dir, &sig) == 0) {
        fi->cache_readdir = 1;
        fi->keep_cache = dirsig_same(h->dir, sig);
    }
#endif
    return 0;
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
    dirh *h = (dirh *)(uintptr_t)fi->fh;
    if (h) {
        size_t n = h->n;
        record_flush(FS(), h);
        dirh_clear(h);
        free(h->dir);
        free(h);
        atomic_fetch_sub(&listing_handles, 1);
        /* a big folder's snapshot is many small blocks that malloc keeps
         * for reuse: give the pages back, or RSS stays at its largest
         * listing's high-water mark */
        if (n >= 4096)
            malloc_trim(0);
    }
    return 0;
}

/* 1 attributes known, 0 not, -1 nothing of d's model is known.
 * With readdirplus the attributes travel with the listing, saving a LOOKUP
 * per name for `ls -l` and `find -ls`.  Only attributes known without work
 * are sent: a source entry's own, a view's if its model's memo is current
 * or the cache answers without reading the model.  A cold view is listed by
 * name only, so listing a folder never converts or hashes anything.
 * same_model: d is a view of the model whose inputs were just checked. */
/* A view's attributes through mfs_view_cached_stat_hinted: with the
 * record's copy of its model's manifest, and what the query learnt kept
 * for the next record. */
static int view_attr_listed(mfs_fs *fs, dirh *h, const dent *d, struct stat *model_st,
                            mfs_view_inputs in, struct stat *st)
{
    if (!h->rec_tried)
        record_load(fs, h);

    mfs_cache_manifest copy;
    size_t at = 0;
    int have = h->rec && mfs_cache_folder_find(h->rec, d->view.model, &at, &copy);
    mfs_view_hint hint = {.man = have ? &copy : NULL};
    int r = mfs_view_cached_stat_hinted(fs, h->dir, &d->view, model_st, in, &hint, st);
    if (hint.used) {
        h->rec_used[at] = 1;
        atomic_fetch_add(&fs->stats.folder_record_hits, 1);
    }
    if (hint.learned.ndeps) {
        if (!h->learnt)
            h->learnt = mfs_cache_folder_builder_new();
        if (h->learnt)
            mfs_cache_folder_add(h->learnt, d->view.model, &hint.learned);
    }
    mfs_cache_manifest_free(&hint.learned);
    if (have)
        mfs_cache_manifest_free(&copy);
    return r;
}

static int plus_attr(mfs_fs *fs, dirh *h, const dent *d, struct stat *model_st,
                     int same_model, struct stat *st)
{
    if (d->is_view && d->view.format == MFS_FS_LGEPKG)
        return mfs_lgepkg_cached_stat(fs, h->dir, st);
    if (d->is_view) {
        mfs_view_inputs in = MFS_VIEW_INPUTS_CHECKED;
        if (!same_model) {
            const struct stat *given = listed_stat(h, d->view.model);
            in = given ? MFS_VIEW_INPUTS_GIVEN : MFS_VIEW_INPUTS_STAT;
            if (given)
                *model_st = *given;
        }
        return in == MFS_VIEW_INPUTS_CHECKED
                   ? mfs_view_cached_stat(fs, h->dir, &d->view, model_st, in, st)
                   : view_attr_listed(fs, h, d, model_st, in, st);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s%s%s", h->dir, h->dir[0] ? "/" : "", d->name);
    return mfs_beneath_stat(fs, path, st) == 0;
}

/* Offsets: 1 and 2 are "." and "..", 3 + i the listing's entry i. */
static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    mfs_fs *fs = FS();
    dirh *h = (dirh *)(uintptr_t)fi->fh;
    atomic_fetch_add(&fs->stats.readdir_requests, 1);
    if (off == 0 || !h->listed) {
        dirh_clear(h);
        int rc = mfs_dir_list(fs, h->dir, collect, h);
        if (rc == 0)
            rc = h->err;
        if (rc < 0) {
            dirh_clear(h);
            return rc;
        }
        h->listed = 1;
        while (h->nsrc < h->n && !h->e[h->nsrc].is_view)
            h->nsrc++;
    }
    if (off < 1 && filler(buf, ".", NULL, 1, 0))
        return 0;
    if (off < 2 && filler(buf, "..", NULL, 2, 0))
        return 0;
    int plus = (flags & FUSE_READDIR_PLUS) != 0;
    if (plus)
        mfs_beneath_walk_begin(fs, h->dir);
    const char *checked = NULL; /* model whose inputs the last view checked */
    const char *cold = NULL;    /* model the last view found nothing of */
    struct stat model_st;       /* and that model file's stat */
    for (size_t i = off > 2 ? (size_t)off - 2 : 0; i < h->n; i++) {
        const dent *d = &h->e[i];
        struct stat st;
        int have = 0;
        if (fs->cfg.hide_failed && d->is_view && d->view.format != MFS_FS_LGEPKG &&
            mfs_view_known_failed(fs, h->dir, &d->view))
            continue; /* -o hide_failed: a view known to have failed is not listed */
        if (plus && !(d->is_view && cold && !strcmp(cold, d->view.model))) {
            int same = d->is_view && checked && !strcmp(checked, d->view.model);
            have = plus_attr(fs, h, d, &model_st, same, &st);
            cold = d->is_view && have < 0 ? d->view.model : NULL;
            have = have > 0;
            if (have && !d->is_view)
                keep_listed_stat(h, i, &st);
            checked = d->is_view && have ? d->view.model : NULL;
            if (have && d->is_view) {
                char vpath[4200];
                snprintf(vpath, sizeof vpath, "%s/%s", strcmp(path, "/") ? path : "", d->name);
                mfs_kview_attr(vpath, &st);
            }
        }
        if (!have) {
            memset(&st, 0, sizeof st);
            st.st_ino = d->ino;
            st.st_mode = d->mode;
        }
        if (filler(buf, d->name, &st, (off_t)(i + 3),
                   have ? FUSE_FILL_DIR_PLUS : 0))
            break;
    }
    if (plus)
        mfs_beneath_walk_end();
    return 0;
}

/* How the kernel is to treat this open of a view (kview.c), and whether it
 * reads the bytes itself (passthrough.c): never with direct I/O or
 * keep_cache, which the kernel refuses with passthrough.  0 or -errno.
 * -EBUSY: a passthrough handle on an older entry of this path is open, and
 * the kernel fails any other open of the inode meanwhile (even a direct
 * I/O one served here: EIO, tried on Linux 6.18), so it is refused with an
 * errno that says so. */
static int kview_open(const char *path, struct fuse_file_info *fi, handle *h, const uint8_t id[16])
{
    int b = mfs_pt_open(path, id, h->fd, h->offset, h->length);
    if (b < 0)
        return b;
    mfs_kview_open res;
    h->kv = mfs_kview_opened(path, id, &h->st, &res);
    if (b > 0 && res.direct_io) {
        mfs_pt_release(b);
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
        atomic_fetch_add(&FS()->stats.passthrough_opens, 1);
    }
#endif
    if (res.invalidate)
        fuse_invalidate_path(fuse_get_context()->fuse, path);
    return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
    mfs_fs *fs = FS();
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & (O_TRUNC | O_CREAT)))
        return -EROFS;
    const char *r = rel(path);
    if (!r)
        return -errno;
    handle *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    struct stat st;
    if (mfs_beneath_stat(fs, r, &st) == 0 && !is_hidden_source(fs, r, &st)) {
        h->fd = mfs_beneath_open(fs, r, O_RDONLY);
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
        if ((rc = kview_open(path, fi, h, key.b)) < 0) {
            close(h->fd);
            free(h);
            return rc;
        }
        fi->fh = (uintptr_t)h;
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
    ref_free(&ref);
    struct stat mst;
    int rc = o == MFS_VIEW_HIT ? 0 : failure_errno(fs, o, &vi);
    if (rc == 0 && mfs_beneath_stat(fs, mpath, &mst) < 0)
        rc = errno == ENOENT ? -ENOENT : -EIO;
    if (rc < 0) {
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
    mfs_view_stat(&mst, &vi, format, &h->st);
    if ((rc = kview_open(path, fi, h, vi.key.b)) < 0) {
        close(h->fd);
        free(h);
        return rc;
    }
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
    atomic_fetch_add(&FS()->stats.read_requests, 1);
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
    atomic_fetch_add(&FS()->stats.read_requests, 1);
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
        if (h->is_view)
            mfs_kview_release(h->kv, h->direct);
        mfs_pt_release(h->backing);
        close(h->fd);
        free(h);
    }
    return 0;
}

static int op_readlink(const char *path, char *buf, size_t size)
{
    const char *r = rel(path);
    ssize_t n = r ? mfs_beneath_readlink(FS(), r, buf, size - 1) : -1;
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    /* a relative link is followed inside the mount, where only lowercase
     * names exist */
    if (buf[0] != '/')
        mfs_casemap_fold(FS(), buf);
    return 0;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
    return fstatvfs(FS()->rootfd, sv) < 0 ? -errno : 0;
}

/* The bounded structures' sizes (docs/scale.md): entries held now and
 * evictions for their caps, so tests can see that the caps hold. */
static int bounds_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_views_stats vs;
    mfs_views_get_stats(fs->views, &vs);
    uint64_t kv, kv_ev, dt, dn, d_ev;
    mfs_kview_stats(&kv, &kv_ev);
    mfs_dirmaps_stats(fs->dirs, &dt, &dn, &d_ev);
    mfs_cache_stats cs;
    mfs_cache_get_stats(fs->cache, &cs);
    return snprintf(buf, n,
                    " memo_size=%llu memo_entries=%llu memo_evictions=%llu kview_entries=%llu "
                    "kview_evictions=%llu dirmap_tables=%llu dirmap_names=%llu "
                    "dirmap_evictions=%llu listing_handles=%llu listing_names=%llu "
                    "index_records=%llu index_shard_loads=%llu index_shard_drops=%llu "
                    "cache_files_opened=%llu folder_record_hits=%llu folder_records_written=%llu",
                    (unsigned long long)vs.cap, (unsigned long long)vs.entries,
                    (unsigned long long)vs.evictions, (unsigned long long)kv,
                    (unsigned long long)kv_ev, (unsigned long long)dt, (unsigned long long)dn,
                    (unsigned long long)d_ev, (unsigned long long)atomic_load(&listing_handles),
                    (unsigned long long)atomic_load(&listing_names),
                    (unsigned long long)cs.index_records, (unsigned long long)cs.index_shard_loads,
                    (unsigned long long)cs.index_shard_drops, (unsigned long long)cs.files_opened,
                    (unsigned long long)atomic_load(&fs->stats.folder_record_hits),
                    (unsigned long long)atomic_load(&fs->stats.folder_records_written));
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
                    "remote_queue=%llu remote_dropped=%llu",
                    (unsigned long long)rs.hits, (unsigned long long)rs.misses,
                    (unsigned long long)rs.errors, (unsigned long long)rs.bytes_down,
                    (unsigned long long)rs.bytes_up, (unsigned long long)rs.uploads,
                    (unsigned long long)rs.queue, (unsigned long long)rs.dropped);
}

static int stats_text(mfs_fs *fs, char *buf, size_t n)
{
    int len = stats_text_base(fs, buf, n);
    char more[1024];
    int m = bounds_text(fs, more, sizeof more);
    if (m > 0 && (size_t)m < sizeof more)
        m += remote_text(fs, more + m, sizeof more - (size_t)m);
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
                    "read_requests=%llu passthrough_opens=%llu prefetched=%llu prefetch_queued=%u "
                    "slot_waiters=%u\n",
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
                    (unsigned long long)atomic_load(&fs->stats.prefetched), mfs_prefetch_waiting(fs),
                    slot_waiters);
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

static int op_getxattr(const char *path, const char *name, char *value, size_t size)
{
    mfs_fs *fs = FS();
    const char *r = rel(path);
    if (!r)
        return -errno;
    char text[MFS_ERR_MAX + 1024];
    if (!strcmp(r, ".") && !strcmp(name, XATTR_STATS))
        return reply_xattr(text, stats_text(fs, text, sizeof text), value, size);
    int warning = !strcmp(name, XATTR_WARNING);
    if (strcmp(name, XATTR_ERROR) && !warning)
        return -ENODATA;
    struct stat st;
    if (mfs_beneath_stat(fs, r, &st) == 0)
        return !warning && S_ISREG(st.st_mode) ? model_error(fs, r, value, size) : -ENODATA;
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
static int op_listxattr(const char *path, char *list, size_t size)
{
    (void)list;
    (void)size;
    return rel(path) ? 0 : -errno;
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
    /* Attributes with every listing, not only its first part: the kernel's
     * "auto" mode sends plain READDIR after the first reply unless a lookup
     * happened in between, and find reads the whole folder before it stats
     * anything, so most names would cost a LOOKUP each. */
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    mfs_pt_init(conn, ((mfs_fs *)fuse_get_context()->private_data)->cfg.passthrough);
    return fuse_get_context()->private_data;
}

const struct fuse_operations mfs_fuse_ops = {
    .init = op_init,
    .getattr = op_getattr,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
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

/* Listings (docs/listing.md): opendir, readdir and releasedir.
 *
 * A listing is taken whole into its handle when reading starts at offset
 * 0 and served by offset from then on; with readdirplus it carries every
 * attribute known without work (the source entries' own, the views' from
 * the resolver's listing query, helped by the folder's record), and it
 * never converts, hashes a source or waits for a conversion. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "meshfs/util.h"
#include "../coherence/coherence.h"
#include "../mount/mount.h"
#include "meshfs/import.h"
#include "held.h"
#include "listing.h"

/* What a view's query and the package's stat use of a source entry's stat
 * (models.c, views.c): half a struct stat, kept for every entry of a
 * listing, which may be a 100,000-model folder's.  mode 0: none taken. */
struct listed_st {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    mode_t mode;
    uid_t uid;
    gid_t gid;
};

/* An open directory: the folder's table as reading started at offset 0
 * (dirmap.c: immutable, held by reference, never copied), served by offset
 * from then on, each READDIR(PLUS) filling the kernel's buffer from where
 * the last one stopped (lowlevel.c). */
typedef struct dirh {
    mfs_held held;          /* first: the kernel holds it (held.h) */
    mfs_fs *fs;             /* the mount it belongs to */
    char *dir;              /* relative, "" for the root */
    mfs_dirtab *tab;        /* NULL until listed */
    size_t count;           /* its items (mfs_dirtab_count) */
    /* readdirplus: the stats of the folder's entries as this listing took
     * them (by entry index); a view's query then need not stat its model
     * again */
    size_t nsrc;
    struct listed_st *src_st; /* nsrc, made at the first stat */
    /* the folder's record (cache.h, "folder records"): read at the first
     * view this listing asks about, and written when the listing ends if
     * it learnt a model's manifest from its model entry */
    int rec_tried;
    mfs_cache_folder *rec;
    unsigned char *rec_used; /* copies that answered: kept in the next one */
    mfs_cache_folder_builder *learnt;
} dirh;

/* One slot per hash of the path: a collision only costs a fresh listing
 * (dirsig_keep). */
#define DIRSIG_SLOTS 256

/* The listings' state, one per mount (fs->listings). */
struct mfs_listings {
    mfs_held_list open_dirs; /* held.h */
    /* Listing handles open now, and the names they hold (stats xattr).  A
     * handle's snapshot lives from opendir to releasedir: the kernel holds
     * it for the length of one listing, so their number is bounded by the
     * listings running, and each is freed (and its memory given back, see
     * mfs_listing_releasedir) when that listing ends (docs/scale.md). */
    atomic_uint_least64_t handles, names;
    /* each folder's last listing (dirsig_keep), under dirsig_lock */
    struct {
        char *dir;
        uint64_t sig;
        double listed; /* when the daemon last listed it (opendir; mfs_mono_s) */
    } dirsigs[DIRSIG_SLOTS];
    pthread_mutex_t dirsig_lock;
    double keep_s; /* mfs_listing_new */
};

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
                mfs_errtext_log_at(&fs->names, MFS_LOG_DEBUG, "%s: %s", h->dir[0] ? h->dir : ".", err.msg);
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
    atomic_fetch_sub(&h->fs->listings->names, h->count);
    mfs_dirtab_put(h->tab);
    free(h->src_st);
    h->tab = NULL;
    h->src_st = NULL;
    h->count = h->nsrc = 0;
}

/* The stat this listing took of entry i into *st, if it has one. */
static const struct stat *listed_stat(const dirh *h, ssize_t i, struct stat *st)
{
    if (!h->src_st || i < 0 || (size_t)i >= h->nsrc || !h->src_st[i].mode)
        return NULL;
    const struct listed_st *l = &h->src_st[i];
    memset(st, 0, sizeof *st);
    st->st_dev = l->dev;
    st->st_ino = l->ino;
    st->st_size = l->size;
    st->st_mtim = l->mtime;
    st->st_ctim = l->ctime;
    st->st_mode = l->mode;
    st->st_uid = l->uid;
    st->st_gid = l->gid;
    st->st_nlink = 1;
    return st;
}

static void keep_listed_stat(dirh *h, size_t i, const struct stat *st)
{
    if (i >= h->nsrc)
        return;
    if (!h->src_st && !(h->src_st = calloc(h->nsrc, sizeof *h->src_st)))
        return;
    h->src_st[i] = (struct listed_st){st->st_dev, st->st_ino, st->st_size, st->st_mtim,
                                      st->st_ctim, st->st_mode, st->st_uid, st->st_gid};
}

/* Listings the kernel keeps (cache_readdir).  A folder's names change only
 * when its entries do (its mtime and ctime move: dirmap.c's rule) or when a
 * view's state does (-o hide_failed drops failed views; any conversion or
 * failure counts, which is conservative).  opendir compares that signature
 * with the one of the folder's last listing: equal, the kernel may serve the
 * names it kept (keep_cache) and no READDIR reaches the daemon; otherwise it
 * drops them and lists afresh.  A modified file changes no name, so its
 * folder's kept listing stays right; attributes are asked for separately.
 *
 * But only while the names and attributes that listing sent are still
 * valid in the kernel (keep_s: the shorter of the two timeouts).  Past
 * that, a kept listing makes every stat of a name its own LOOKUP (`ls -l`,
 * `find -ls`, rsync, a file manager a minute later: a round trip per name,
 * 100-270 us each on these VMs), where listing afresh sends them back with
 * their attributes, a few dozen names a request (docs/listing.md). */

mfs_listings *mfs_listing_new(double keep)
{
    mfs_listings *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    pthread_mutex_init(&l->open_dirs.lock, NULL);
    pthread_mutex_init(&l->dirsig_lock, NULL);
    l->keep_s = keep;
    return l;
}

void mfs_listing_free(mfs_listings *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < DIRSIG_SLOTS; i++)
        free(l->dirsigs[i].dir);
    pthread_mutex_destroy(&l->dirsig_lock);
    pthread_mutex_destroy(&l->open_dirs.lock);
    free(l);
}

/* *recent: the folder has not settled (mfs_input_times_settled): a further
 * change could leave its times as they are, so the kernel must not keep
 * its listing. */
static int folder_sig(mfs_fs *fs, const char *dir, uint64_t *sig, int *recent)
{
    struct stat st;
    if (mfs_beneath_stat(&fs->names, dir[0] ? dir : ".", &st) < 0)
        return -1;
    *recent = !mfs_input_times_settled(&st);
    uint64_t v[10] = {(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_mode,
                      (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec,
                      (uint64_t)st.st_ctim.tv_sec, (uint64_t)st.st_ctim.tv_nsec,
                      (uint64_t)atomic_load(&fs->stats.conversions),
                      (uint64_t)atomic_load(&fs->stats.conversion_failures), 0};
    *sig = XXH3_64bits(v, sizeof v);
    return 0;
}

/* 1 if the kernel may keep dir's listing: its last listing had this
 * signature and what it sent is still valid there.  0: a fresh listing
 * follows, recorded as dir's last. */
static int dirsig_keep(mfs_listings *l, const char *dir, uint64_t sig)
{
    unsigned slot = (unsigned)(XXH3_64bits(dir, strlen(dir)) % DIRSIG_SLOTS);
    __typeof__(l->dirsigs[0]) *dirsigs = l->dirsigs;
    pthread_mutex_lock(&l->dirsig_lock);
    int keep = dirsigs[slot].dir && !strcmp(dirsigs[slot].dir, dir) && dirsigs[slot].sig == sig &&
               mfs_mono_s() - dirsigs[slot].listed < l->keep_s;
    if (!keep) {
        if (!dirsigs[slot].dir || strcmp(dirsigs[slot].dir, dir)) {
            char *copy = strdup(dir);
            free(dirsigs[slot].dir);
            dirsigs[slot].dir = copy; /* NULL on out of memory: the next one lists afresh */
        }
        dirsigs[slot].sig = sig;
        dirsigs[slot].listed = mfs_mono_s();
    }
    pthread_mutex_unlock(&l->dirsig_lock);
    return keep;
}

int mfs_listing_opendir(mfs_fs *fs, const char *path, struct fuse_file_info *fi)
{
    const char *r = mfs_ops_rel(fs, path);
    if (!r)
        return -errno;
    dirh *h = calloc(1, sizeof *h);
    if (!h || !(h->dir = strdup(strcmp(r, ".") ? r : ""))) {
        free(h);
        return -ENOMEM;
    }
    h->fs = fs;
    fi->fh = (uintptr_t)h;
    mfs_held_add(&fs->listings->open_dirs, &h->held);
    atomic_fetch_add(&fs->listings->handles, 1);
    /* stats of its cold views may follow (ls -l): here, not in readdir,
     * because a listing the kernel kept sends no READDIR */
    mfs_prefetch_listed(fs, h->dir);
    /* the low-level reply passes both flags on, 3.14 included (its
     * high-level library dropped them before 3.16.1) */
    uint64_t sig;
    int recent;
    if (folder_sig(fs, h->dir, &sig, &recent) == 0) {
        fi->cache_readdir = 1;
        /* a listing of an unsettled folder is never kept, nor is one that
         * follows it: it may have missed a change in the same tick */
        fi->keep_cache = dirsig_keep(fs->listings, h->dir, recent ? 0 : sig | 1) && !recent;
    }
    return 0;
}

static void dirh_free(dirh *h)
{
    mfs_fs *fs = h->fs;
    record_flush(fs, h);
    dirh_clear(h);
    free(h->dir);
    free(h);
    atomic_fetch_sub(&fs->listings->handles, 1);
}

static void held_free(mfs_held *n)
{
    dirh_free((dirh *)n);
}

void mfs_listing_close_all(mfs_fs *fs)
{
    mfs_held_free_all(&fs->listings->open_dirs, held_free);
}

int mfs_listing_releasedir(mfs_fs *fs, struct fuse_file_info *fi)
{
    dirh *h = (dirh *)(uintptr_t)fi->fh;
    if (h) {
        size_t n = h->count;
        mfs_held_remove(&fs->listings->open_dirs, &h->held);
        dirh_free(h);
        /* a big folder's stats and records are blocks that malloc keeps
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
/* One model's hint from the record, between hint_begin and hint_end. */
typedef struct hint_use {
    mfs_fs *fs;
    dirh *h;
    mfs_cache_manifest copy;
    size_t at;
    int have;
} hint_use;

static void hint_begin(hint_use *u, const char *model, mfs_view_hint *hint)
{
    if (!u->h->rec_tried)
        record_load(u->fs, u->h);
    u->at = 0;
    u->have = u->h->rec && mfs_cache_folder_find(u->h->rec, model, &u->at, &u->copy);
    memset(hint, 0, sizeof *hint);
    hint->man = u->have ? &u->copy : NULL;
}

/* What the hint did: a copy that answered is kept in the next record, a
 * manifest read from the cache goes into it. */
static void hint_end(hint_use *u, const char *model, mfs_view_hint *hint)
{
    dirh *h = u->h;
    if (hint->used && !h->rec_used[u->at]) { /* counted once a model */
        h->rec_used[u->at] = 1;
        atomic_fetch_add(&u->fs->stats.folder_record_hits, 1);
    }
    if (hint->learned.ndeps) {
        if (!h->learnt)
            h->learnt = mfs_cache_folder_builder_new();
        if (h->learnt)
            mfs_cache_folder_add(h->learnt, model, &hint->learned);
    }
    mfs_cache_manifest_free(&hint->learned);
    if (u->have)
        mfs_cache_manifest_free(&u->copy);
    u->have = 0;
}

static int view_attr_listed(mfs_fs *fs, dirh *h, const mfs_dir_item *d, struct stat *model_st,
                            mfs_view_inputs in, struct stat *st)
{
    hint_use u = {.fs = fs, .h = h};
    mfs_view_hint hint;
    hint_begin(&u, d->view.model, &hint);
    int r = mfs_view_cached_stat_hinted(fs, h->dir, &d->view, model_st, in, &hint, st);
    hint_end(&u, d->view.model, &hint);
    return r;
}

/* The package's stat walks every model of the folder: with more models
 * than the memo holds, each would be read from its model entry (a sweep
 * through an LRU larger than it misses every time), so it takes the same
 * hints as the views, and the stats this listing took of the models. */
static int pkg_begin(void *ctx, const char *model, mfs_view_hint *hint, struct stat *model_st)
{
    hint_use *u = ctx;
    hint_begin(u, model, hint);
    return listed_stat(u->h, mfs_dirtab_entry(u->h->tab, model), model_st) != NULL;
}

static void pkg_end(void *ctx, const char *model, mfs_view_hint *hint)
{
    hint_end(ctx, model, hint);
}

static int plus_attr(mfs_fs *fs, dirh *h, const mfs_dir_item *d, struct stat *model_st,
                     int same_model, struct stat *st)
{
    if (d->is_view && d->view.format == MFS_FS_LGEPKG) {
        hint_use u = {.fs = fs, .h = h};
        mfs_lgepkg_hints hints = {pkg_begin, pkg_end, &u};
        return mfs_lgepkg_cached_stat_hinted(fs, h->dir, &hints, st);
    }
    if (d->is_view) {
        mfs_view_inputs in = MFS_VIEW_INPUTS_CHECKED;
        if (!same_model) {
            size_t nm;
            const mfs_dir_model *models = mfs_dirtab_models(h->tab, &nm);
            const struct stat *given = listed_stat(h, (ssize_t)models[d->model].entry, model_st);
            in = given ? MFS_VIEW_INPUTS_GIVEN : MFS_VIEW_INPUTS_STAT;
        }
        return in == MFS_VIEW_INPUTS_CHECKED
                   ? mfs_view_cached_stat(fs, h->dir, &d->view, model_st, in, st)
                   : view_attr_listed(fs, h, d, model_st, in, st);
    }
    char path[4200];
    if (mfs_join(path, sizeof path, h->dir, d->real) < 0)
        return 0;
    return mfs_beneath_stat(&fs->names, path, st) == 0;
}

/* Offsets: 1 and 2 are "." and "..", 3 + i the table's item i. */
int mfs_listing_readdir(mfs_fs *fs, const char *path, void *buf, fuse_fill_dir_t filler,
                        off_t off, struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    dirh *h = (dirh *)(uintptr_t)fi->fh;
    if (off == 0 || !h->tab) {
        dirh_clear(h);
        mfs_err err;
        if (mfs_dirtab_get(&fs->names, h->dir, 1, &h->tab, &err) < 0)
            return -mfs_err_errno(&err);
        h->count = mfs_dirtab_count(h->tab);
        atomic_fetch_add(&fs->listings->names, h->count);
        h->nsrc = mfs_dirtab_entries(h->tab);
    }
    if (off < 1 && filler(buf, ".", NULL, 1, 0))
        return 0;
    if (off < 2 && filler(buf, "..", NULL, 2, 0))
        return 0;
    int plus = (flags & FUSE_READDIR_PLUS) != 0;
    if (plus)
        mfs_beneath_walk_begin(&fs->names, h->dir);
    const size_t none = (size_t)-1;
    size_t checked = none;   /* model whose inputs the last view checked */
    size_t cold = none;      /* model the last view found nothing of */
    size_t asked = none;     /* model last asked which of its views are not there */
    unsigned hidden = 0;     /* and the answer */
    struct stat model_st;    /* and that model file's stat */
    char name[4200];
    for (size_t i = off > 2 ? (size_t)off - 2 : 0; i < h->count; i++) {
        mfs_dir_item d;
        if (!mfs_dirtab_item(&fs->names, h->tab, i, name, sizeof name, &d))
            continue;
        struct stat st;
        int have = 0;
        if (fs->cfg.hide_failed && d.is_view && d.view.format != MFS_FS_LGEPKG &&
            mfs_view_known_failed(fs, h->dir, &d.view))
            continue; /* -o hide_failed: a view known to have failed is not listed */
        int pkg = d.is_view && d.view.format == MFS_FS_LGEPKG;
        if (pkg && mfs_lgepkg_known_empty(fs, h->dir, h->tab))
            continue; /* every model failed: no package (pkgempty.c) */
        int asks = plus && !(d.is_view && !pkg && d.model == cold);
        if (asks) {
            int same = d.is_view && !pkg && d.model == checked;
            have = plus_attr(fs, h, &d, &model_st, same, &st);
            cold = d.is_view && !pkg && have < 0 ? d.model : none;
            have = have > 0;
        }
        if (d.is_view && !pkg && d.model != asked) {
            /* after plus_attr, whose query may just have learnt it */
            asked = d.model;
            hidden = mfs_view_known_hidden(fs, h->dir, &d.view);
        }
        if (d.is_view && !pkg && (hidden & (1u << d.view.format)))
            continue; /* no mesh, or left out by formats = */
        if (asks) {
            if (have && !d.is_view) {
                keep_listed_stat(h, i, &st);
                st.st_ino = mfs_inode_src(&fs->names, st.st_dev, st.st_ino);
            }
            checked = d.is_view && !pkg && have ? d.model : none;
            if (have && d.is_view) {
                char vpath[4200];
                snprintf(vpath, sizeof vpath, "%s/%s", strcmp(path, "/") ? path : "", d.name);
                mfs_renew_named_attr(&fs->coherence, vpath, NULL, &st);
            }
        }
        if (!have) {
            memset(&st, 0, sizeof st);
            st.st_ino = d.ino;
            st.st_mode = d.mode;
        }
        if (filler(buf, d.name, &st, (off_t)(i + 3), have ? FUSE_FILL_DIR_PLUS : 0))
            break;
    }
    if (plus)
        mfs_beneath_walk_end();
    return 0;
}

void mfs_listing_counts(mfs_fs *fs, uint64_t *handles, uint64_t *names)
{
    *handles = atomic_load(&fs->listings->handles);
    *names = atomic_load(&fs->listings->names);
}

/* game_resources.lgepkg in the mount (src/mount/mount.h).
 *
 * Resolving a package resolves its models' views, which may mean converting
 * them; one worker per model, up to convert_jobs at once, so a cold folder
 * of N models takes about N / convert_jobs conversions' time rather than N.
 * Per model, the resolver's own lock still makes concurrent readers
 * share one conversion.
 *
 * The assembled bytes are a cache entry keyed by the package's name and
 * version and, for each model packed, its chunk name and the keys of its
 * four views: the views' keys already stand for every input and option, so
 * the same key means the same bytes.  A failed model is not in the key (it
 * contributes no bytes); it is in user.meshfs.error. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "mount.h"
#include "meshfs/util.h"

typedef struct pkg_model {
    const char *model, *base; /* borrowed from the mfs_dir_model list */
    char name[MFS_LGE_NAME_BYTES];
    mfs_view_info vs[MFS_LGEPKG_CHUNKS];
    int ok;                   /* all four views have bytes */
    int machine;              /* else left out for the machine's sake (worth a retry) */
    char reason[MFS_ERR_MAX];  /* else why not */
} pkg_model;

typedef struct pkg {
    const char *dir;
    mfs_dirtab *tab;
    const mfs_dir_model *list; /* borrowed from tab */
    size_t n;
    pkg_model *m;
    struct stat dir_st;
    size_t packed;            /* models with ok */
    uint64_t size;            /* exact package size, when size_ok */
    int size_ok;
    char size_err[MFS_ERR_MAX];
    struct timespec mtime;
    mode_t perm;              /* read bits: narrowed over every model's views */
    mfs_cache_key key;
    atomic_size_t next;       /* fan-out: next model to resolve */
    mfs_fs *fs;
    mfs_view_mode mode;
} pkg;

static void newer(struct timespec *t, struct timespec c)
{
    if (mfs_ts_later(c, *t))
        *t = c;
}

static void pkg_free(pkg *p)
{
    for (size_t i = 0; p->m && i < p->n; i++)
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
            mfs_cache_hit_release(&p->m[i].vs[k].hit);
    free(p->m);
    mfs_dirtab_put(p->tab);
    memset(p, 0, sizeof *p);
}

/* The folder's models and their chunk names (names over every model, packed
 * or not, so a model that fails does not rename its neighbours).  0, or -1
 * with err (code: the folder's errno, ENOMEM). */
static int pkg_list(mfs_fs *fs, const char *dir, pkg *p, mfs_err *err)
{
    memset(p, 0, sizeof *p);
    p->fs = fs;
    p->dir = dir;
    if (mfs_beneath_stat(&fs->names, dir, &p->dir_st) < 0)
        return mfs_err_code(err, errno);
    if (mfs_dirtab_get(&fs->names, dir, 0, &p->tab, err) < 0)
        return -1;
    p->list = mfs_dirtab_models(p->tab, &p->n);
    p->m = calloc(p->n ? p->n : 1, sizeof *p->m);
    const char **bases = calloc(p->n ? p->n : 1, sizeof *bases);
    char(*names)[MFS_LGE_NAME_BYTES] = calloc(p->n ? p->n : 1, sizeof *names);
    mfs_err nerr;
    int rc = p->m && bases && names ? 0 : -1;
    for (size_t i = 0; p->m && i < p->n; i++)
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
            p->m[i].vs[k].hit.fd = -1; /* pkg_free releases them */
    for (size_t i = 0; rc == 0 && i < p->n; i++)
        bases[i] = p->list[i].base;
    if (rc == 0 && mfs_lgepkg_chunk_names(bases, p->n, names, &nerr) < 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        pkg_model *pm = &p->m[i];
        pm->model = p->list[i].model;
        pm->base = p->list[i].base;
        memcpy(pm->name, names[i], sizeof pm->name);
    }
    free(bases);
    free(names);
    if (rc < 0) {
        pkg_free(p);
        return mfs_err_code(err, ENOMEM);
    }
    return 0;
}

static void resolve_model(pkg *p, pkg_model *pm)
{
    pm->ok = 1;
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
        int f = mfs_lgepkg_formats[k];
        mfs_err err;
        mfs_view_outcome o = mfs_view_get(p->fs, p->dir, pm->model, pm->base, f, p->mode,
                                          &pm->vs[k], &err);
        const char *ext = mfs_format_get((mfs_format)f)->name;
        if (o == MFS_VIEW_HIT)
            continue;
        /* not a cache that refuses stores (full, read-only): packing again
         * would only convert again and fail the same way */
        pm->machine |= o == MFS_VIEW_FAILED_MACHINE && !mfs_storerr_of(err.msg) &&
                       !mfs_storerr_is_reason(err.msg);
        if (pm->ok) {
            int machine = o == MFS_VIEW_FAILED_MACHINE;
            const char *why = err.msg[0]                             ? err.msg
                              : machine && pm->vs[k].errnum == ENOENT ? "the model file is gone"
                              : machine                               ? strerror(pm->vs[k].errnum)
                                                                      : "conversion failed";
            snprintf(pm->reason, sizeof pm->reason, ".%s: %s", ext, why);
        }
        pm->ok = 0;
    }
}

static void *resolver(void *arg)
{
    pkg *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            return NULL;
        resolve_model(p, &p->m[i]);
    }
}

/* Is every view of model pm known without work?  perm: narrowed by the
 * views' read bits for a package owned like dst.  With hints (a listing's),
 * the record's copy of the model's manifest answers all four views: a memo
 * smaller than the folder may drop the model between two of them (another
 * thread's lookups, a reply built ahead), and without the copy each would
 * read the model's entry again. */
static int model_known_hinted(mfs_fs *fs, const char *dir, const mfs_dir_model *dm,
                              const mfs_lgepkg_hints *hints, uint64_t sizes[4],
                              struct timespec *mtime, const struct stat *dst, mode_t *perm)
{
    struct stat mst;
    mfs_view_hint hint;
    memset(&hint, 0, sizeof hint);
    mfs_view_inputs in = MFS_VIEW_INPUTS_STAT;
    if (hints && hints->begin(hints->ctx, dm->model, &hint, &mst))
        in = MFS_VIEW_INPUTS_GIVEN;
    int known = 1;
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
        mfs_view_ref ref = {.model = (char *)dm->model, .base = (char *)dm->base,
                            .format = mfs_lgepkg_formats[k]};
        struct stat st;
        if (mfs_view_cached_stat_hinted(fs, dir, &ref, &mst, k > 0 ? MFS_VIEW_INPUTS_CHECKED : in,
                                        hints ? &hint : NULL, &st) <= 0) {
            known = 0;
            break;
        }
        sizes[k] = (uint64_t)st.st_size;
        newer(mtime, st.st_mtim);
        *perm = mfs_perm_narrow(*perm, dst->st_uid, dst->st_gid, st.st_uid, st.st_gid, st.st_mode, 0);
    }
    if (hints)
        hints->end(hints->ctx, dm->model, &hint);
    return known;
}

static int model_known(mfs_fs *fs, const char *dir, const mfs_dir_model *dm, uint64_t sizes[4],
                       struct timespec *mtime, const struct stat *dst, mode_t *perm)
{
    return model_known_hinted(fs, dir, dm, NULL, sizes, mtime, dst, perm);
}

#define MAX_FANOUT 64

/* Resolves every model's views.  Threads only when some model is not known
 * yet: a warm stat stays on the calling thread. */
static void pkg_resolve(pkg *p, mfs_view_mode mode)
{
    p->mode = mode;
    size_t cold = 0;
    for (size_t i = 0; i < p->n; i++) {
        uint64_t sizes[4];
        struct timespec t = {0, 0};
        mode_t perm = 0;
        cold += !model_known(p->fs, p->dir, &p->list[i], sizes, &t, &p->dir_st, &perm);
    }
    size_t nth = cold < p->fs->cfg.convert_jobs ? cold : p->fs->cfg.convert_jobs;
    if (nth > MAX_FANOUT)
        nth = MAX_FANOUT;
    pthread_t th[MAX_FANOUT];
    size_t started = 0;
    atomic_store(&p->next, 0);
    if (nth > 1)
        for (; started < nth - 1; started++)
            if (pthread_create(&th[started], NULL, resolver, p) != 0)
                break;
    resolver(p); /* the caller works too, and finishes alone if no thread started */
    for (size_t t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}

/* Who may read the package (docs/security.md, S1): no one who could not
 * read every model's views, failed ones included (their reasons are in the
 * package's user.meshfs.error).  A view is an input owned like its model,
 * so the rule of viewperm.c carries over to the package's owner, the
 * folder's.  A view resolved without attributes counts as its model file. */
static void narrow_by_model(pkg *p, const pkg_model *pm)
{
    const struct stat *d = &p->dir_st;
    int fallback = 0;
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
        const mfs_view_info *vs = &pm->vs[k];
        if (vs->perm_known)
            p->perm = mfs_perm_narrow(p->perm, d->st_uid, d->st_gid, vs->uid, vs->gid, vs->perm, 0);
        else
            fallback = 1;
    }
    char path[4200];
    struct stat mst;
    snprintf(path, sizeof path, "%s%s%s", p->dir, p->dir[0] ? "/" : "", pm->model);
    if (fallback && mfs_beneath_stat(&p->fs->names, path, &mst) == 0)
        p->perm = mfs_perm_narrow(p->perm, d->st_uid, d->st_gid, mst.st_uid, mst.st_gid,
                                  mst.st_mode, 0);
}

/* Size, mtime and cache key from the resolved views.  0, or -1 with err
 * (ENOMEM). */
static int pkg_summarise(pkg *p, mfs_err *out)
{
    p->mtime = p->dir_st.st_mtim;
    p->packed = 0;
    uint64_t *sizes = calloc(p->n ? p->n * MFS_LGEPKG_CHUNKS : 1, sizeof *sizes);
    if (!sizes)
        return mfs_err_code(out, ENOMEM);
    mfs_cache_keyb kb;
    mfs_err err;
    mfs_err_clear(&err);
    if (mfs_cache_key_init(&kb, "meshfs.lgepkg.v1", &err) < 0) {
        free(sizes);
        return mfs_err_code(out, ENOMEM);
    }
    mfs_cache_key_add_str(&kb, p->fs->cfg.lgepkg_name);
    mfs_cache_key_add_str(&kb, p->fs->cfg.lgepkg_version);
    mfs_cache_key_add_str(&kb, MESHFS_OUTPUT_VERSION);
    p->perm = 0444;
    for (size_t i = 0; i < p->n; i++) {
        pkg_model *pm = &p->m[i];
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
            if (pm->vs[k].mtime.tv_sec || pm->vs[k].mtime.tv_nsec)
                newer(&p->mtime, pm->vs[k].mtime);
        narrow_by_model(p, pm);
        if (!pm->ok)
            continue;
        mfs_cache_key_add_str(&kb, pm->name);
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
            sizes[p->packed * MFS_LGEPKG_CHUNKS + k] = pm->vs[k].size;
            mfs_cache_key_add_bytes(&kb, pm->vs[k].key.b, sizeof pm->vs[k].key.b);
        }
        p->packed++;
    }
    mfs_cache_key_add_u64(&kb, p->packed);
    mfs_cache_key_final(&kb, &p->key);
    p->size_ok = mfs_lgepkg_size_of(sizes, p->packed * MFS_LGEPKG_CHUNKS, &p->size, &err) == 0;
    if (!p->size_ok)
        snprintf(p->size_err, sizeof p->size_err, "%s", err.msg);
    free(sizes);
    return 0;
}

static void pkg_stat(const pkg *p, uint64_t size, struct timespec mtime, mode_t perm,
                     struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_dev = p->dir_st.st_dev;
    st->st_ino = mfs_inode_view(p->dir_st.st_dev, p->dir_st.st_ino, 0, MFS_FS_LGEPKG);
    st->st_mode = S_IFREG | perm;
    st->st_nlink = 1;
    st->st_uid = p->dir_st.st_uid;
    st->st_gid = p->dir_st.st_gid;
    st->st_size = (off_t)size;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((size + 511) / 512);
    st->st_mtim = st->st_ctim = st->st_atim = mtime;
}

int mfs_lgepkg_present(mfs_fs *fs, const char *dir, mfs_err *err)
{
    if (!(fs->cfg.formats & MFS_FMT_LGEPKG_BIT))
        return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s%s%s", dir, dir[0] ? "/" : "", MFS_LGEPKG_FILE_NAME);
    struct stat st;
    if (mfs_beneath_stat(&fs->names, path, &st) == 0)
        return 0;
    char real[4096];
    int r = mfs_dirmap_real_name(&fs->names, dir, MFS_LGEPKG_FILE_NAME, real, sizeof real, err);
    if (r != 0)
        return r > 0 ? 0 : -1;
    mfs_dirtab *t;
    if (mfs_dirtab_get(&fs->names, dir, 0, &t, err) < 0)
        return -1;
    size_t n;
    mfs_dirtab_models(t, &n);
    int empty = n > 0 && mfs_lgepkg_known_empty(fs, dir, t);
    mfs_dirtab_put(t);
    return n > 0 && !empty;
}

/* Lists and resolves the package of folder dir.  0, or -1 with err
 * (code ENOENT: the folder shows no package). */
static int pkg_load(mfs_fs *fs, const char *dir, mfs_view_mode mode, pkg *p, mfs_err *err)
{
    int present = mfs_lgepkg_present(fs, dir, err);
    if (present <= 0)
        return present == 0 ? mfs_err_code(err, ENOENT) : -1;
    if (pkg_list(fs, dir, p, err) < 0)
        return -1;
    pkg_resolve(p, mode);
    int rc = pkg_summarise(p, err);
    if (rc == 0 && p->packed == 0 && p->size_ok)
        rc = mfs_err_code(err, ENOENT); /* no model converted: no package (pkgempty.c) */
    if (rc < 0)
        pkg_free(p);
    return rc;
}

int mfs_lgepkg_attr(mfs_fs *fs, const char *dir, struct stat *st)
{
    pkg p;
    mfs_err err;
    if (pkg_load(fs, dir, MFS_VIEW_ATTR, &p, &err) < 0)
        return -mfs_err_errno(&err);
    pkg_stat(&p, p.size_ok ? p.size : 0, p.mtime, p.perm, st);
    pkg_free(&p);
    return 0;
}

int mfs_lgepkg_cached_stat(mfs_fs *fs, const char *dir, struct stat *st)
{
    return mfs_lgepkg_cached_stat_hinted(fs, dir, NULL, st);
}

int mfs_lgepkg_cached_stat_hinted(mfs_fs *fs, const char *dir, const mfs_lgepkg_hints *hints,
                                  struct stat *st)
{
    /* the folder's models alone, not pkg_list's per-model records (about
     * 1 KiB each, with room for the views and a reason): a listing asks
     * this of a folder that may hold 20,000 models */
    pkg p;
    memset(&p, 0, sizeof p);
    mfs_err terr;
    if (mfs_beneath_stat(&fs->names, dir, &p.dir_st) < 0 || mfs_dirtab_get(&fs->names, dir, 0, &p.tab, &terr) < 0)
        return 0;
    p.list = mfs_dirtab_models(p.tab, &p.n);
    uint64_t *sizes = calloc(p.n ? p.n * MFS_LGEPKG_CHUNKS : 1, sizeof *sizes);
    struct timespec mtime = p.dir_st.st_mtim;
    size_t packed = 0;
    mode_t perm = 0444;
    int known = sizes != NULL;
    for (size_t i = 0; known && i < p.n; i++) {
        uint64_t *s = sizes + packed * MFS_LGEPKG_CHUNKS;
        known = model_known_hinted(fs, dir, &p.list[i], hints, s, &mtime, &p.dir_st, &perm);
        /* every writer of the four emits a header, so only a failed view
         * (shown empty, its reason in user.meshfs.error) has size 0 */
        if (known && s[0] && s[1] && s[2] && s[3])
            packed++;
    }
    uint64_t size;
    mfs_err err;
    if (known && mfs_lgepkg_size_of(sizes, packed * MFS_LGEPKG_CHUNKS, &size, &err) < 0)
        size = 0;
    if (known)
        pkg_stat(&p, size, mtime, perm, st);
    free(sizes);
    pkg_free(&p);
    return known;
}

/* Builds from one cache entry at a time; a mutex per stripe of folders
 * (fs->pkg_locks, MFS_PKG_STRIPES) lets concurrent first opens of one
 * package assemble it once. */

typedef struct cache_sink_ctx {
    mfs_cache_writer *w;
    mfs_err err;
} cache_sink_ctx;

static int cache_flush(mfs_sink *s, const uint8_t *p, size_t n)
{
    cache_sink_ctx *c = s->ctx;
    if (!p || !n)
        return 0;
    return mfs_cache_writer_write(c->w, p, n, &c->err) < 0 ? EIO : 0;
}

/* A packed model's four views opened while its chunks are written
 * (mfs_lgepkg_write_fetched: a folder of 20,000 models would need 80,000
 * descriptors at once), re-resolved if an entry went away meanwhile (which
 * may convert again).  A view whose key or size moved since the package was
 * planned (its model changed) fails the assembly: the package's key names
 * the views it was planned from, and its bytes must be theirs. */
typedef struct fetch_ctx {
    pkg *p;
    const size_t *packed; /* packed index -> model index */
    int moved;            /* a view was not the one planned: pack again */
} fetch_ctx;

static void release_views(void *ctx, size_t j, mfs_lge_src chunk[MFS_LGEPKG_CHUNKS])
{
    fetch_ctx *c = ctx;
    (void)chunk;
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
        mfs_cache_hit_release(&c->p->m[c->packed[j]].vs[k].hit);
}

static int fetch_views(void *ctx, size_t j, mfs_lge_src chunk[MFS_LGEPKG_CHUNKS], mfs_err *err)
{
    fetch_ctx *c = ctx;
    pkg *p = c->p;
    pkg_model *pm = &p->m[c->packed[j]];
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
        mfs_view_info *vs = &pm->vs[k];
        mfs_cache_key want = vs->key;
        uint64_t size = vs->size;
        mfs_err lerr;
        mfs_err_clear(&lerr);
        mfs_cache_hit_release(&vs->hit);
        int r = mfs_cache_lookup(p->fs->cache, &vs->key, &vs->hit, &lerr);
        if (r != 1 || vs->hit.fd < 0 || vs->hit.length != size) {
            mfs_cache_hit_release(&vs->hit);
            mfs_err verr;
            if (mfs_view_get(p->fs, p->dir, pm->model, pm->base, mfs_lgepkg_formats[k],
                             MFS_VIEW_OPEN, vs, &verr) != MFS_VIEW_HIT ||
                memcmp(vs->key.b, want.b, sizeof want.b) || vs->hit.length != size) {
                c->moved = 1;
                mfs_errf(err, "%s%s%s: .%s changed or vanished while packing it", p->dir,
                         p->dir[0] ? "/" : "", pm->model,
                         mfs_format_get(mfs_lgepkg_formats[k])->name);
                release_views(ctx, j, chunk);
                return -1;
            }
        }
        chunk[k] = (mfs_lge_src){NULL, vs->hit.fd, vs->hit.offset, vs->hit.length};
    }
    return 0;
}

/* A store that met the cache's contents removed (tmp/ or v2/ gone under
 * it): the cache's churn, worth packing again. */
static int churn_text(const char *msg)
{
    return strstr(msg, strerror(ENOENT)) != NULL;
}

/* 0 with *hit, or -1 with why: code EAGAIN if a view moved (its model
 * saved) or the cache's files went while packing (why says it; pack again
 * from the new plan), else the errno (logged). */
static int assemble(pkg *p, mfs_cache_hit *hit, mfs_err *why)
{
    mfs_lgepkg_model *mods = calloc(p->packed ? p->packed : 1, sizeof *mods);
    if (!mods)
        return mfs_err_code(why, ENOMEM);
    /* once per package made, not per stat */
    for (size_t i = 0; i < p->n; i++)
        if (!p->m[i].ok)
            mfs_errtext_log(&p->fs->names, "%s%s%s: left out %s: %s", p->dir, p->dir[0] ? "/" : "",
                            MFS_LGEPKG_FILE_NAME, p->m[i].model, p->m[i].reason);
    size_t *packed = calloc(p->packed ? p->packed : 1, sizeof *packed);
    size_t n = 0;
    int code = packed ? 0 : ENOMEM; /* the failure's errno, 0 none yet */
    for (size_t i = 0; code == 0 && i < p->n; i++) {
        if (!p->m[i].ok)
            continue;
        memcpy(mods[n].name, p->m[i].name, sizeof mods[n].name);
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
            mods[n].chunk[k] = (mfs_lge_src){NULL, -1, 0, p->m[i].vs[k].size};
        packed[n++] = i;
    }
    cache_sink_ctx c;
    mfs_err_clear(&c.err);
    if (code == 0 && mfs_cache_writer_begin(p->fs->cache, &p->key, &c.w, &c.err) < 0) {
        code = churn_text(c.err.msg) ? EAGAIN : EIO;
        snprintf(why->msg, sizeof why->msg, "cache: %s", c.err.msg);
    }
    if (code == 0) {
        fetch_ctx fc = {p, packed, 0};
        mfs_lgepkg_fetch fetch = {fetch_views, release_views, &fc};
        mfs_sink s;
        memset(&s, 0, sizeof s);
        s.cap = 256 * 1024;
        s.buf = malloc(s.cap);
        s.flush = cache_flush;
        s.ctx = &c;
        mfs_err err;
        mfs_err_clear(&err);
        if (!s.buf)
            code = ENOMEM;
        else if (mfs_lgepkg_write_fetched(p->fs->cfg.lgepkg_name, p->fs->cfg.lgepkg_version,
                                          mods, n, &fetch, &s, &err) < 0 ||
                 mfs_sink_finish(&s) != 0) {
            snprintf(why->msg, sizeof why->msg, "%s", err.msg[0] ? err.msg : c.err.msg);
            code = fc.moved || churn_text(c.err.msg) ? EAGAIN : EIO;
            if (code == EIO)
                mfs_errtext_log(&p->fs->names, "%s/%s: %s", p->dir, MFS_LGEPKG_FILE_NAME, why->msg);
        }
        free(s.buf);
        if (code == 0 && s.total != p->size) {
            mfs_errtext_log(&p->fs->names, "%s/%s: assembled %llu bytes, expected %llu", p->dir,
                            MFS_LGEPKG_FILE_NAME, (unsigned long long)s.total,
                            (unsigned long long)p->size);
            code = EIO;
        }
        if (code)
            mfs_cache_writer_abort(c.w);
        else if (mfs_cache_writer_commit(c.w, hit, &c.err) < 0) {
            snprintf(why->msg, sizeof why->msg, "cache: %s", c.err.msg);
            code = churn_text(c.err.msg) ? EAGAIN : EIO;
            if (code == EIO)
                mfs_errtext_log_at(&p->fs->names, MFS_LOG_ERROR, "cache: %s", c.err.msg);
        }
    }
    free(mods);
    free(packed);
    if (code == 0)
        return 0;
    why->code = code; /* its text, if any, stays */
    return -1;
}

/* One plan packed: 0 as mfs_lgepkg_open, or -1 with why: code EAGAIN
 * (why's text says it) when the plan no longer holds: a view moved or
 * vanished while packing, or a model was left out for the machine's sake
 * (the cache's files removed under its conversion); else the errno. */
static int open_once(mfs_fs *fs, const char *dir, int last, mfs_cache_hit *hit, mfs_cache_key *key,
                     struct stat *st, mfs_err *why)
{
    hit->fd = -1;
    hit->reason = NULL;
    pkg p;
    if (pkg_load(fs, dir, MFS_VIEW_ATTR, &p, why) < 0)
        return -1;
    for (size_t i = 0; !last && i < p.n; i++)
        if (!p.m[i].ok && p.m[i].machine) {
            snprintf(why->msg, sizeof why->msg, "left out %s: %s", p.m[i].model, p.m[i].reason);
            why->code = EAGAIN;
            pkg_free(&p);
            return -1;
        }
    if (!p.size_ok) {
        mfs_errtext_log(&fs->names, "%s%s%s: %s", dir, dir[0] ? "/" : "", MFS_LGEPKG_FILE_NAME, p.size_err);
        pkg_free(&p);
        return mfs_err_code(why, EIO);
    }
    pthread_mutex_t *lock = &fs->pkg_locks[XXH3_64bits(dir, strlen(dir)) % MFS_PKG_STRIPES];
    pthread_mutex_lock(lock);
    mfs_err err;
    mfs_err_clear(&err);
    int rc = 0;
    int r = mfs_cache_lookup(fs->cache, &p.key, hit, &err);
    if (r != 1 || hit->fd < 0 || hit->length != p.size) {
        mfs_cache_hit_release(hit);
        hit->fd = -1;
        rc = assemble(&p, hit, why);
    }
    pthread_mutex_unlock(lock);
    if (rc == 0) {
        *key = p.key; /* assemble checked that the views are the ones planned */
        pkg_stat(&p, hit->length, p.mtime, p.perm, st);
    }
    pkg_free(&p);
    if (rc < 0)
        mfs_cache_hit_release(hit);
    return rc;
}

/* A package is one version, as a view is: a plan that no longer holds
 * (a model saved while its views were packed, the cache's files removed)
 * is made again from what the folder holds now, up to three plans, the
 * reader waiting.  Said once a package, at info; only the third failure
 * fails the open. */
#define PACK_PLANS 3

int mfs_lgepkg_open(mfs_fs *fs, const char *dir, mfs_cache_hit *hit, mfs_cache_key *key,
                    struct stat *st)
{
    for (int plan = 1;; plan++) {
        mfs_err why;
        mfs_err_clear(&why);
        if (open_once(fs, dir, plan == PACK_PLANS, hit, key, st, &why) == 0)
            return 0;
        if (mfs_err_errno(&why) != EAGAIN)
            return -mfs_err_errno(&why); /* the mount's answer to the session */
        atomic_fetch_add(&fs->stats.packages_redone, 1);
        if (plan == PACK_PLANS) {
            mfs_errtext_log(&fs->names, "%s%s%s: %s (%d times in a row)", dir, dir[0] ? "/" : "",
                            MFS_LGEPKG_FILE_NAME, why.msg, PACK_PLANS);
            return -EIO;
        }
        if (plan == 1)
            mfs_errtext_log_at(&fs->names, MFS_LOG_INFO, "%s%s%s: %s; packing it again", dir, dir[0] ? "/" : "",
                               MFS_LGEPKG_FILE_NAME, why.msg);
    }
}

int mfs_lgepkg_error(mfs_fs *fs, const char *dir, char *out, size_t n)
{
    pkg p;
    mfs_err err;
    if (pkg_load(fs, dir, MFS_VIEW_ATTR, &p, &err) < 0)
        return -mfs_err_errno(&err);
    size_t len = 0;
    out[0] = '\0';
    /* one line per entry, as on a model (failed.c) */
    if (!p.size_ok)
        len += (size_t)snprintf(out, n, "%s\n", p.size_err);
    for (size_t i = 0; i < p.n && len < n; i++) {
        if (p.m[i].ok)
            continue;
        len += (size_t)snprintf(out + len, n - len, "left out: %s: %s\n", p.m[i].model,
                                p.m[i].reason);
    }
    pkg_free(&p);
    return (int)(len < n ? len : n - 1);
}

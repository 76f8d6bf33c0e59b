/* The mount's side of resolving a view (include/meshfs/views.h): the
 * resolver lives in the cache layer and holds the tier policy; this file
 * gives it what only the mount knows (the host), and is the one place the
 * mount calls it.
 *
 *   paths     every model, folder and dependency stat'ed beneath SRC, as
 *             the kernel's paths or as the worker opened it (beneath.c)
 *   who reads the views' read bits from their inputs' (viewperm.c, S1)
 *   entries   failures this mount tries again, views only a pin holds
 *             (entry.c)
 *   options   the option text in the keys (convert.c)
 *   converter a worker run (convert.c) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../coherence/coherence.h"
#include "mount.h"
#include "meshfs/views.h"
#include "meshfs/util.h"

static int host_stat(void *ctx, const char *path, mfs_view_path kind, struct stat *st,
                     mfs_err *err)
{
    mfs_fs *fs = ctx;
    int r = kind == MFS_VIEW_PATH_DEP ? mfs_beneath_stat_dep(&fs->names, path, st)
                                      : mfs_beneath_stat(&fs->names, path, st);
    return r < 0 ? mfs_err_code(err, errno) : 0;
}

static int host_hash(void *ctx, const char *path, struct stat *st, uint8_t hash[16], mfs_err *err)
{
    return mfs_beneath_hash(&((mfs_fs *)ctx)->names, path, st, hash, err);
}

/* Is folder prefix the model's own folder or one above it? */
static int on_model_path(const char *prefix, size_t len, const char *mdir)
{
    return strncmp(prefix, mdir, len) == 0 && (mdir[len] == '\0' || mdir[len] == '/');
}

static int add_dir(mfs_view_perm *p, const char *path, size_t len)
{
    for (uint32_t i = 0; i < p->ndirs; i++)
        if (strlen(p->dirs[i]) == len && !strncmp(p->dirs[i], path, len))
            return 0;
    char **np = realloc(p->dirs, (p->ndirs + 1) * sizeof *np);
    if (!np)
        return -1;
    p->dirs = np;
    struct stat *ns = realloc(p->dir_st, (p->ndirs + 1) * sizeof *ns);
    if (!ns)
        return -1;
    p->dir_st = ns;
    if (!(p->dirs[p->ndirs] = strndup(path, len)))
        return -1;
    p->ndirs++;
    return 0;
}

/* Who may read the views (docs/security.md, S1): the model's read bits,
 * narrowed by each dependency's and by the search bits of every folder a
 * dependency lies in outside the model's own path. */
static int host_perm(void *ctx, const char *model, char *const *paths, const struct stat *in,
                     uint32_t n, mfs_view_perm *out, mfs_err *err)
{
    mfs_fs *fs = ctx;
    out->perm = 0;
    out->uid = out->gid = 0;
    if (n == 0)
        return 0; /* a manifest without its model: nobody but root */
    out->uid = in[0].st_uid;
    out->gid = in[0].st_gid;
    mode_t perm = 0444;
    for (uint32_t i = 0; i < n; i++)
        perm = mfs_perm_narrow(perm, out->uid, out->gid, in[i].st_uid, in[i].st_gid,
                               in[i].st_mode, 0);
    char mdir[4096];
    const char *slash = strrchr(model, '/');
    snprintf(mdir, sizeof mdir, "%.*s", slash ? (int)(slash - model) : 0, model);
    for (uint32_t i = 1; i < n; i++) {
        /* the folders the dependency is really in: its path's, unless a
         * link is on the way, then those of where it leads */
        const char *path = paths[i];
        char real[4096];
        struct stat st;
        if (mfs_beneath_stat(&fs->names, path, &st) < 0 || S_ISLNK(st.st_mode)) {
            mfs_err derr; /* not the caller's: its reason is not this one */
            if (mfs_beneath_dep_real(&fs->names, path, real, sizeof real, &derr) < 0) {
                perm = 0; /* cannot tell where it is: only root reads */
                continue;
            }
            path = real;
        }
        for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/'))
            if (!on_model_path(path, (size_t)(p - path), mdir) &&
                add_dir(out, path, (size_t)(p - path)) < 0)
                return mfs_err_code(err, ENOMEM);
    }
    for (uint32_t i = 0; i < out->ndirs; i++) {
        if (mfs_beneath_stat(&fs->names, out->dirs[i], &out->dir_st[i]) < 0)
            return mfs_err_code(err, EAGAIN); /* changed meanwhile: resolve again */
        perm = mfs_perm_narrow(perm, out->uid, out->gid, out->dir_st[i].st_uid,
                               out->dir_st[i].st_gid, out->dir_st[i].st_mode, 1);
    }
    out->perm = perm;
    return 0;
}

static int host_peek(void *ctx, const mfs_cache_key *k, struct timespec newest,
                     mfs_cache_hit *hit, mfs_err *err)
{
    return mfs_entry_peek(&((mfs_fs *)ctx)->coherence, k, newest, hit, err);
}

static int host_open(void *ctx, const mfs_cache_key *mk, const mfs_cache_key *k,
                     mfs_cache_hit *hit, mfs_err *err)
{
    return mfs_entry_lookup(&((mfs_fs *)ctx)->coherence, mk, k, hit, err);
}

static void host_format_options(void *ctx, int format, const char *fmi_model, char *buf, size_t n)
{
    mfs_fs_format_options(ctx, format, fmi_model, buf, n);
}

static void host_import_options(void *ctx, char *buf, size_t n)
{
    mfs_fs_import_options(ctx, buf, n);
}

static int host_convert(void *ctx, const char *model, const char *fmi_model, unsigned formats,
                        mfs_cache_manifest *man, mfs_err *err)
{
    return mfs_fs_convert(ctx, model, fmi_model, formats, man, err);
}

static void host_log(void *ctx, const char *model, const char *msg)
{
    if (mfs_storerr_is_reason(msg))
        return; /* the cache's condition, said once by convert.c, not the model's */
    mfs_errtext_log(&((mfs_fs *)ctx)->names, "%s: %s", model, msg);
}

int mfs_fs_views_open(mfs_fs *fs, mfs_err *err)
{
    mfs_views_host h = {
        .ctx = fs,
        .cache = fs->cache,
        .rootfd = fs->names.rootfd,
        .formats = fs->cfg.formats,
        .version = MESHFS_OUTPUT_VERSION,
        .stat_path = host_stat,
        .hash_model = host_hash,
        .perm = host_perm,
        .entry_peek = host_peek,
        .entry_open = host_open,
        .format_options = host_format_options,
        .import_options = host_import_options,
        .convert = host_convert,
        .log = host_log,
        .memo_size = fs->cfg.memo_size,
        .remote = fs->remote,
        .count_models = 1, /* one open, one model (cache.h) */
    };
    fs->views = mfs_views_new(&h);
    return fs->views ? 0 : mfs_err_sys(err, ENOMEM, "resolver: out of memory");
}

/* ---- the mount's calls into the resolver ---- */

/* The model's path and its .fmi model= path (lowercase where FGE opens it);
 * -1 when either is longer than a path can be. */
static int view_paths(mfs_fs *fs, const char *dir, const char *name, const char *base,
                      char path[4096], char fmi_model[4096])
{
    if (mfs_join(path, 4096, dir, name) < 0 || mfs_join(fmi_model, 4096, dir, base) < 0)
        return -1;
    mfs_casemap_fold(&fs->names, fmi_model);
    return 0;
}

mfs_view_outcome mfs_view_get(mfs_fs *fs, const char *dir, const char *name, const char *base,
                              int format, mfs_view_mode mode, mfs_view_info *info, mfs_err *err)
{
    return mfs_view_get_given(fs, dir, name, base, format, mode, NULL, info, err);
}

mfs_view_outcome mfs_view_get_given(mfs_fs *fs, const char *dir, const char *name,
                                    const char *base, int format, mfs_view_mode mode,
                                    const mfs_view_given *given, mfs_view_info *info,
                                    mfs_err *err)
{
    char path[4096], fmi_model[4096];
    if (view_paths(fs, dir, name, base, path, fmi_model) < 0) {
        /* as mfs_views_resolve leaves it: no hit (fd -1, which callers
         * release), a machine failure with its reason */
        memset(info, 0, sizeof *info);
        info->hit.fd = -1;
        info->errnum = ENAMETOOLONG;
        mfs_errf(err, "%s/%s: path too long", dir, name);
        return MFS_VIEW_FAILED_MACHINE;
    }
    return mfs_views_resolve_given(fs->views, path, fmi_model, format, mode, given, info, err);
}

int mfs_view_missing(mfs_fs *fs, const char *dir, const char *name, const char *base,
                     int format, char *out, size_t n)
{
    char path[4096], fmi_model[4096];
    if (view_paths(fs, dir, name, base, path, fmi_model) < 0)
        return -ENAMETOOLONG;
    mfs_err err;
    mfs_err_clear(&err);
    int len = mfs_views_missing(fs->views, path, fmi_model, format, out, n, &err);
    return len < 0 ? -mfs_err_errno(&err) : len;
}

char *mfs_view_explain(mfs_fs *fs, const char *dir, const char *name, const char *base, int json,
                       mfs_err *err)
{
    char path[4096], fmi_model[4096];
    if (view_paths(fs, dir, name, base, path, fmi_model) < 0)
        return mfs_errf(err, "%s: name too long", name), NULL;
    mfs_explain e;
    if (mfs_views_explain(fs->views, path, fmi_model, &e, err) < 0) {
        mfs_explain_free(&e);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        (json ? mfs_explain_print_json : mfs_explain_print)(f, &e);
        fclose(f);
    }
    mfs_explain_free(&e);
    if (!text)
        mfs_errf(err, "out of memory");
    return text;
}

int mfs_view_cached_stat(mfs_fs *fs, const char *dir, const mfs_view_ref *ref,
                         struct stat *model_st, mfs_view_inputs inputs, struct stat *st)
{
    return mfs_view_cached_stat_hinted(fs, dir, ref, model_st, inputs, NULL, st);
}

int mfs_view_cached_stat_hinted(mfs_fs *fs, const char *dir, const mfs_view_ref *ref,
                                struct stat *model_st, mfs_view_inputs inputs,
                                mfs_view_hint *hint, struct stat *st)
{
    char path[4096], fmi_model[4096];
    if (view_paths(fs, dir, ref->model, ref->base, path, fmi_model) < 0)
        return 0;
    mfs_view_info info;
    mfs_view_outcome o = mfs_views_known_hinted(fs->views, path, fmi_model, ref->format, inputs,
                                                model_st, hint, &info, NULL);
    if (o == MFS_VIEW_MISS)
        return info.model_cold ? -1 : 0;
    mfs_view_stat(model_st, &info, mfs_inode_where(dir, ref->base), ref->format, st);
    return 1;
}

unsigned mfs_view_known_hidden(mfs_fs *fs, const char *dir, const mfs_view_ref *ref)
{
    char path[4096], fmi_model[4096];
    if (view_paths(fs, dir, ref->model, ref->base, path, fmi_model) < 0)
        return 0;
    return mfs_views_known_hidden(fs->views, path, fmi_model);
}

int mfs_view_known_failed(mfs_fs *fs, const char *dir, const mfs_view_ref *ref)
{
    char path[4096], fmi_model[4096];
    if (view_paths(fs, dir, ref->model, ref->base, path, fmi_model) < 0)
        return 0;
    mfs_view_info info;
    struct stat mst;
    return mfs_views_known(fs->views, path, fmi_model, ref->format, MFS_VIEW_INPUTS_STAT, &mst,
                           &info, NULL) == MFS_VIEW_FAILED_MODEL;
}

void mfs_view_stat(const struct stat *mst, const mfs_view_info *vi, uint64_t where, int format,
                   struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_dev = mst->st_dev;
    st->st_ino = mfs_inode_view(mst->st_dev, mst->st_ino, where, format);
    /* never more than the model's own read bits; with the inputs known,
     * narrowed by theirs (their owner is the model's, unless it changed
     * since: then narrowed as any input owned by someone else) */
    mode_t perm = mfs_perm_narrow(0444, mst->st_uid, mst->st_gid, mst->st_uid, mst->st_gid,
                                  mst->st_mode, 0);
    if (vi->perm_known)
        perm = mfs_perm_narrow(perm, mst->st_uid, mst->st_gid, vi->uid, vi->gid, vi->perm, 0);
    st->st_mode = S_IFREG | perm;
    st->st_nlink = 1;
    st->st_uid = mst->st_uid;
    st->st_gid = mst->st_gid;
    st->st_size = (off_t)vi->size;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((vi->size + 511) / 512);
    st->st_mtim = st->st_ctim = st->st_atim = vi->mtime;
}

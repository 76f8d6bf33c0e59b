/* A model's views: resolved from memory when nothing changed, from the cache
 * when the inputs are known, by a conversion otherwise.
 *
 * Each model has a mutex held across its slow path, so concurrent first
 * readers of one model wait for one conversion instead of starting their
 * own; other models are not held up.  The fast path only stats the inputs:
 * a warm lookup reads no source bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "coherence.h"
#include "fs.h"

typedef struct sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    uid_t uid;                /* for who may read the views (S1) */
    gid_t gid;
    mode_t mode;
} sig;

typedef struct fmt_memo {
    int known;
    int ok;
    uint64_t size;
    mfs_cache_key key;
    char *reason;             /* failures only: most views have none, and a
                                 fixed buffer per view would cost 3.5 KiB a model */
} fmt_memo;

typedef struct model {
    char *path;               /* relative to SRC */
    pthread_mutex_t lock;
    struct model *next;
    /* memo, valid while every input's sig is unchanged */
    int valid;
    char *fmi_model;          /* the fmi model= path the memo was made for */
    uint32_t ninputs;
    char **input_paths;
    sig *input_sigs;
    struct timespec newest;
    /* folders the inputs lie in beyond the model's own (whose the kernel
     * checks on the way to a view): their search bits count (viewperm.c) */
    uint32_t ndirs;
    char **dir_paths;
    sig *dir_sigs;
    mode_t perm;              /* read bits the views may have, owned uid:gid */
    uid_t uid;
    gid_t gid;
    fmt_memo fmt[MFS_FMT_COUNT];
    /* key of each view at its last open, kept across memo refreshes: the
     * kernel may keep its page cache only while the bytes are the same */
    int served[MFS_FMT_COUNT];
    mfs_cache_key served_key[MFS_FMT_COUNT];
} model;

#define NBUCKET 8192

struct mfs_models {
    pthread_mutex_t lock;
    model *bucket[NBUCKET];
};

mfs_models *mfs_models_new(void)
{
    mfs_models *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

static void memo_clear(model *m)
{
    for (uint32_t i = 0; i < m->ninputs; i++)
        free(m->input_paths[i]);
    free(m->input_paths);
    free(m->input_sigs);
    free(m->fmi_model);
    m->input_paths = NULL;
    m->input_sigs = NULL;
    m->fmi_model = NULL;
    m->ninputs = 0;
    for (uint32_t i = 0; i < m->ndirs; i++)
        free(m->dir_paths[i]);
    free(m->dir_paths);
    free(m->dir_sigs);
    m->dir_paths = NULL;
    m->dir_sigs = NULL;
    m->ndirs = 0;
    m->valid = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        free(m->fmt[f].reason);
    memset(m->fmt, 0, sizeof m->fmt);
}

void mfs_models_free(mfs_models *ms)
{
    if (!ms)
        return;
    for (int b = 0; b < NBUCKET; b++)
        while (ms->bucket[b]) {
            model *m = ms->bucket[b];
            ms->bucket[b] = m->next;
            memo_clear(m);
            pthread_mutex_destroy(&m->lock);
            free(m->path);
            free(m);
        }
    pthread_mutex_destroy(&ms->lock);
    free(ms);
}

static model *get_model(mfs_models *ms, const char *path)
{
    unsigned b = (unsigned)(XXH3_64bits(path, strlen(path)) % NBUCKET);
    pthread_mutex_lock(&ms->lock);
    model *m = ms->bucket[b];
    while (m && strcmp(m->path, path))
        m = m->next;
    if (!m) {
        m = calloc(1, sizeof *m);
        if (m && !(m->path = strdup(path))) {
            free(m);
            m = NULL;
        }
        if (m) {
            pthread_mutex_init(&m->lock, NULL);
            m->next = ms->bucket[b];
            ms->bucket[b] = m;
        }
    }
    pthread_mutex_unlock(&ms->lock);
    return m;
}

/* The model and folders are stat'ed as the kernel's paths are, following
 * no link; a dependency (dep) as the worker opened it (beneath.c). */
static int take_sig(mfs_fs *fs, const char *path, int dep, sig *s)
{
    struct stat st;
    if ((dep ? mfs_beneath_stat_dep(fs, path, &st) : mfs_beneath_stat(fs, path, &st)) < 0)
        return -errno;
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->size = st.st_size;
    s->mtime = st.st_mtim;
    s->ctime = st.st_ctim;
    s->uid = st.st_uid;
    s->gid = st.st_gid;
    s->mode = st.st_mode;
    return 0;
}

/* A folder's sig for the memo: what decides who may search it. */
static int same_dir_sig(const sig *a, const sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->uid == b->uid && a->gid == b->gid &&
           a->mode == b->mode;
}

static int same_sig(const sig *a, const sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static int memo_current(mfs_fs *fs, const model *m, const char *fmi_model)
{
    if (!m->valid || strcmp(m->fmi_model, fmi_model))
        return 0;
    for (uint32_t i = 0; i < m->ninputs; i++) {
        sig now;
        if (take_sig(fs, m->input_paths[i], i > 0, &now) < 0 || !same_sig(&now, &m->input_sigs[i]))
            return 0;
    }
    for (uint32_t i = 0; i < m->ndirs; i++) {
        sig now;
        if (take_sig(fs, m->dir_paths[i], 0, &now) < 0 || !same_dir_sig(&now, &m->dir_sigs[i]))
            return 0;
    }
    return 1;
}

/* Is folder prefix the model's own folder or one above it? */
static int on_model_path(const char *prefix, size_t len, const char *mdir)
{
    return strncmp(prefix, mdir, len) == 0 && (mdir[len] == '\0' || mdir[len] == '/');
}

static int add_dir(model *m, const char *path, size_t len)
{
    for (uint32_t i = 0; i < m->ndirs; i++)
        if (strlen(m->dir_paths[i]) == len && !strncmp(m->dir_paths[i], path, len))
            return 0;
    char **np = realloc(m->dir_paths, (m->ndirs + 1) * sizeof *np);
    if (!np)
        return -ENOMEM;
    m->dir_paths = np;
    sig *ns = realloc(m->dir_sigs, (m->ndirs + 1) * sizeof *ns);
    if (!ns)
        return -ENOMEM;
    m->dir_sigs = ns;
    if (!(m->dir_paths[m->ndirs] = strndup(path, len)))
        return -ENOMEM;
    m->ndirs++;
    return 0;
}

/* Who may read the views (docs/security.md, S1): the model's read bits,
 * narrowed by each dependency's and by the search bits of every folder a
 * dependency lies in outside the model's own path.  Called by memo_fill
 * once the inputs' sigs are taken. */
static int memo_perm(mfs_fs *fs, model *m)
{
    m->perm = 0;
    m->uid = m->gid = 0;
    if (m->ninputs == 0)
        return 0; /* a manifest without its model: nobody but root */
    m->uid = m->input_sigs[0].uid;
    m->gid = m->input_sigs[0].gid;
    mode_t perm = 0444;
    for (uint32_t i = 0; i < m->ninputs; i++)
        perm = mfs_perm_narrow(perm, m->uid, m->gid, m->input_sigs[i].uid, m->input_sigs[i].gid,
                               m->input_sigs[i].mode, 0);
    char mdir[4096];
    const char *slash = strrchr(m->path, '/');
    snprintf(mdir, sizeof mdir, "%.*s", slash ? (int)(slash - m->path) : 0, m->path);
    for (uint32_t i = 1; i < m->ninputs; i++) {
        /* the folders the dependency is really in: its path's, unless a
         * link is on the way, then those of where it leads */
        const char *path = m->input_paths[i];
        char real[4096];
        struct stat st;
        if (mfs_beneath_stat(fs, path, &st) < 0 || S_ISLNK(st.st_mode)) {
            if (mfs_beneath_dep_real(fs, path, real, sizeof real) < 0) {
                perm = 0; /* cannot tell where it is: only root reads */
                continue;
            }
            path = real;
        }
        for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/'))
            if (!on_model_path(path, (size_t)(p - path), mdir) && add_dir(m, path, (size_t)(p - path)) < 0)
                return -ENOMEM;
    }
    for (uint32_t i = 0; i < m->ndirs; i++) {
        if (take_sig(fs, m->dir_paths[i], 0, &m->dir_sigs[i]) < 0)
            return -EAGAIN; /* changed meanwhile: resolve again */
        perm = mfs_perm_narrow(perm, m->uid, m->gid, m->dir_sigs[i].uid, m->dir_sigs[i].gid,
                               m->dir_sigs[i].mode, 1);
    }
    m->perm = perm;
    return 0;
}

/* Records the inputs' current sigs and each enabled format's entry state. */
static int memo_fill(mfs_fs *fs, model *m, const mfs_cache_manifest *man, const char *fmi_model)
{
    memo_clear(m);
    m->input_paths = calloc(man->ndeps + 1, sizeof *m->input_paths);
    m->input_sigs = calloc(man->ndeps + 1, sizeof *m->input_sigs);
    m->fmi_model = strdup(fmi_model);
    if (!m->input_paths || !m->input_sigs || !m->fmi_model)
        return -ENOMEM;
    m->newest = (struct timespec){0, 0};
    for (uint32_t i = 0; i < man->ndeps; i++) {
        m->input_paths[i] = strdup(man->deps[i].path);
        if (!m->input_paths[i])
            return -ENOMEM;
        m->ninputs++;
        if (take_sig(fs, man->deps[i].path, i > 0, &m->input_sigs[i]) < 0)
            return -EAGAIN; /* vanished meanwhile: resolve again */
        struct timespec t = m->input_sigs[i].mtime;
        if (t.tv_sec > m->newest.tv_sec || (t.tv_sec == m->newest.tv_sec && t.tv_nsec > m->newest.tv_nsec))
            m->newest = t;
    }
    int prc = memo_perm(fs, m);
    if (prc < 0)
        return prc;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(fs->cfg.formats & (1u << f)))
            continue;
        /* Keys come from the inputs and today's options, not from the
         * manifest: an option that changed since only moves its own views. */
        char opts[4200];
        mfs_cache_key key;
        mfs_err err;
        mfs_err_clear(&err);
        mfs_fs_format_options(fs, f, fmi_model, opts, sizeof opts);
        if (mfs_cache_view_key(man->deps, man->ndeps, mfs_format_get((mfs_format)f)->name, opts,
                               MESHFS_VERSION, &key, &err) < 0)
            return -ENOMEM;
        const mfs_cache_key *k = &key;
        mfs_cache_hit hit = {.fd = -1};
        /* less failures tried again, plus views only a pin holds (entry.c) */
        int r = mfs_entry_peek(fs, k, m->newest, &hit, &err);
        if (r != 1) {
            mfs_cache_hit_release(&hit);
            continue;
        }
        fmt_memo *fm = &m->fmt[f];
        fm->known = 1;
        fm->key = *k;
        fm->ok = hit.reason == NULL;
        fm->size = hit.length;
        if (hit.reason) {
            fm->reason = hit.reason; /* taken over */
            hit.reason = NULL;
        }
        mfs_cache_hit_release(&hit);
    }
    m->valid = 1;
    return 0;
}

/* Which enabled formats have no entry yet for these inputs. */
static unsigned missing_formats(mfs_fs *fs, const model *m)
{
    unsigned miss = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((fs->cfg.formats & (1u << f)) && !m->fmt[f].known)
            miss |= 1u << f;
    return miss;
}

/* The model's content hash; peek: from the stat index only (1 = unknown). */
static int model_hash(mfs_fs *fs, const model *m, int peek, struct stat *st, uint8_t hash[16],
                      mfs_err *err)
{
    if (!peek)
        return mfs_beneath_hash(fs, m->path, st, hash, err) < 0 ? -(errno ? errno : EIO) : 0;
    if (mfs_beneath_stat(fs, m->path, st) < 0)
        return -errno;
    return S_ISREG(st->st_mode) && mfs_cache_file_hash_known(fs->cache, st, hash) ? 0 : 1;
}

/* Brings the memo up to date, converting if `format` has no entry for the
 * current inputs (then every enabled view still missing is made by the same
 * import).  Views already cached are never remade for another's sake, so an
 * option that moves only .fmi leaves .gmf reads conversion-free.
 *
 * peek: only what the cache already knows, reading no source bytes and
 * converting nothing; returns 1 when that is not enough.  Called with
 * m->lock held. */
static int refresh(mfs_fs *fs, model *m, const char *fmi_model, int format, int peek,
                   mfs_err *err)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        struct stat st;
        uint8_t hash[16];
        int hr = model_hash(fs, m, peek, &st, hash, err);
        if (hr != 0)
            return hr;
        char iopts[64];
        mfs_fs_import_options(fs, iopts, sizeof iopts);
        mfs_cache_key mk;
        if (mfs_cache_manifest_key(m->path, (uint64_t)st.st_size, hash, iopts, MESHFS_VERSION, &mk, err) < 0)
            return -EIO;
        mfs_cache_manifest man;
        memset(&man, 0, sizeof man);
        int have = peek ? mfs_cache_manifest_peek(fs->cache, &mk, &man, err)
                        : mfs_cache_manifest_load(fs->cache, &mk, &man, err);
        if (have == 1 && (peek ? mfs_cache_manifest_known(fs->cache, fs->rootfd, &man, err)
                               : mfs_cache_manifest_current(fs->cache, fs->rootfd, &man, err)) != 1) {
            mfs_cache_manifest_free(&man);
            have = 0;
        }
        if (peek && have != 1)
            return 1;
        unsigned need = fs->cfg.formats;
        if (have == 1) {
            /* the manifest's keys were made with the options of its time:
             * recompute them for ours, then see which entries exist */
            int rc = memo_fill(fs, m, &man, fmi_model);
            mfs_cache_manifest_free(&man);
            if (rc == -EAGAIN)
                continue;
            if (rc < 0)
                return rc;
            need = missing_formats(fs, m);
            if (!(need & (1u << format)))
                return 0;
            if (peek)
                return 1;
        }
        memset(&man, 0, sizeof man);
        if (mfs_fs_convert(fs, m->path, fmi_model, need, &man, err) < 0)
            return -EIO;
        int cur = mfs_cache_manifest_current(fs->cache, fs->rootfd, &man, err);
        /* the worker opened the model by its path itself: if that led to
         * other bytes than were hashed here (the model changed, or a folder
         * on its path was swapped for a link), its views are not this
         * path's */
        if (cur == 1 && (man.ndeps == 0 || man.deps[0].size != (uint64_t)st.st_size ||
                         memcmp(man.deps[0].hash, hash, 16) != 0))
            cur = 0;
        int rc = cur == 1 ? memo_fill(fs, m, &man, fmi_model) : -EAGAIN;
        mfs_cache_manifest_free(&man);
        if (rc == 0 && !(missing_formats(fs, m) & (1u << format)))
            return 0;
        if (rc == 0 && err->msg[0])
            return -EIO; /* this view could not be stored (disk full...): say why */
        if (rc < 0 && rc != -EAGAIN)
            return rc;
        /* an input changed while it was converting: go round again */
    }
    return mfs_errf(err, "%s: inputs kept changing during conversion", m->path), -EIO;
}

static void join_path(char *out, size_t n, const char *dir, const char *name)
{
    if (dir[0])
        snprintf(out, n, "%s/%s", dir, name);
    else
        snprintf(out, n, "%s", name);
}

int mfs_view_resolve(mfs_fs *fs, const char *dir, const char *name, const char *base,
                     int format, int want_fd, mfs_view_state *out)
{
    memset(out, 0, sizeof *out);
    out->hit.fd = -1;
    char path[4096], fmi_model[4096];
    join_path(path, sizeof path, dir, name);
    join_path(fmi_model, sizeof fmi_model, dir, base);
    mfs_casemap_fold(fs, fmi_model); /* FGE opens the lowercase path */
    model *m = get_model(fs->models, path);
    if (!m)
        return -ENOMEM;
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    mfs_err err;
    mfs_err_clear(&err);
    for (int tries = 0; tries < 2; tries++) {
        if (!memo_current(fs, m, fmi_model) || !m->fmt[format].known) {
            rc = refresh(fs, m, fmi_model, format, 0, &err);
            if (rc < 0)
                break;
        }
        fmt_memo *fm = &m->fmt[format];
        if (!fm->known) {
            rc = -EIO;
            break;
        }
        out->ok = fm->ok;
        out->size = fm->ok ? fm->size : 0;
        out->mtime = m->newest;
        out->key = fm->key;
        out->perm_known = 1;
        out->perm = m->perm;
        out->uid = m->uid;
        out->gid = m->gid;
        snprintf(out->reason, sizeof out->reason, "%s", fm->reason ? fm->reason : "");
        if (!want_fd || !fm->ok)
            break;
        int r = mfs_entry_lookup(fs, &fm->key, &out->hit, &err);
        if (r == 1 && out->hit.fd >= 0 && out->hit.length == fm->size) {
            out->same_as_last = m->served[format] &&
                                !memcmp(&m->served_key[format], &fm->key, sizeof fm->key);
            m->served[format] = 1;
            m->served_key[format] = fm->key;
            break;
        }
        /* evicted or damaged since the memo was made: convert again */
        mfs_cache_hit_release(&out->hit);
        out->hit.fd = -1;
        m->valid = 0;
        rc = -EIO;
    }
    if (rc < 0 && err.msg[0]) {
        snprintf(out->reason, sizeof out->reason, "%s", err.msg);
        mfs_fs_log(fs, "%s: %s", path, err.msg);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

int mfs_view_cached_stat(mfs_fs *fs, const char *dir, const mfs_view_ref *ref,
                         struct stat *model_st, int inputs_checked, struct stat *st)
{
    char path[4096], fmi_model[4096];
    join_path(path, sizeof path, dir, ref->model);
    join_path(fmi_model, sizeof fmi_model, dir, ref->base);
    mfs_casemap_fold(fs, fmi_model);
    model *m = get_model(fs->models, path);
    if (!m || (!inputs_checked && mfs_beneath_stat(fs, path, model_st) < 0))
        return 0;
    const struct stat mst = *model_st;
    /* never wait: a held model is converting, and a listing must not */
    if (pthread_mutex_trylock(&m->lock) != 0)
        return 0;
    int ok = 0;
    int current = inputs_checked ? m->valid && !strcmp(m->fmi_model, fmi_model)
                                 : memo_current(fs, m, fmi_model);
    if (!current) {
        /* a fresh mount over a warm cache: what the cache knows is enough.
         * A current memo already holds every entry the cache had for these
         * inputs (memo_fill peeks each format), so a view it lacks is not
         * looked for again: the stat that follows finds or makes it. */
        mfs_err err;
        mfs_err_clear(&err);
        current = refresh(fs, m, fmi_model, ref->format, 1, &err) == 0;
    }
    if (current && m->fmt[ref->format].known) {
        mfs_view_state vs;
        memset(&vs, 0, sizeof vs);
        vs.ok = m->fmt[ref->format].ok;
        vs.size = vs.ok ? m->fmt[ref->format].size : 0;
        vs.mtime = m->newest;
        vs.perm_known = 1;
        vs.perm = m->perm;
        vs.uid = m->uid;
        vs.gid = m->gid;
        mfs_view_stat(&mst, &vs, ref->format, st);
        ok = 1;
    }
    pthread_mutex_unlock(&m->lock);
    return ok;
}

void mfs_view_stat(const struct stat *mst, const mfs_view_state *vs, int format, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_dev = mst->st_dev;
    st->st_ino = mfs_view_ino(mst->st_dev, mst->st_ino, format);
    /* never more than the model's own read bits; with the inputs known,
     * narrowed by theirs (their owner is the model's, unless it changed
     * since: then narrowed as any input owned by someone else) */
    mode_t perm = mfs_perm_narrow(0444, mst->st_uid, mst->st_gid, mst->st_uid, mst->st_gid,
                                  mst->st_mode, 0);
    if (vs->perm_known)
        perm = mfs_perm_narrow(perm, mst->st_uid, mst->st_gid, vs->uid, vs->gid, vs->perm, 0);
    st->st_mode = S_IFREG | perm;
    st->st_nlink = 1;
    st->st_uid = mst->st_uid;
    st->st_gid = mst->st_gid;
    st->st_size = (off_t)vs->size;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((vs->size + 511) / 512);
    st->st_mtim = st->st_ctim = st->st_atim = vs->mtime;
}

int mfs_view_known_failed(mfs_fs *fs, const char *dir, const mfs_view_ref *ref)
{
    char path[4096], fmi_model[4096];
    join_path(path, sizeof path, dir, ref->model);
    join_path(fmi_model, sizeof fmi_model, dir, ref->base);
    mfs_casemap_fold(fs, fmi_model);
    model *m = get_model(fs->models, path);
    /* never wait, as mfs_view_cached_stat */
    if (!m || pthread_mutex_trylock(&m->lock) != 0)
        return 0;
    int current = memo_current(fs, m, fmi_model);
    if (!current) {
        mfs_err err;
        mfs_err_clear(&err);
        current = refresh(fs, m, fmi_model, ref->format, 1, &err) == 0;
    }
    int failed = current && m->fmt[ref->format].known && !m->fmt[ref->format].ok;
    pthread_mutex_unlock(&m->lock);
    return failed;
}

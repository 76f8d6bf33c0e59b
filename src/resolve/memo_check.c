/* What a memo record holds and when it still holds (memo.h): the stats of
 * the model's inputs, the folders whose one stat stands for the absent
 * paths and searches in them, who may read the views, and each enabled
 * format's entry state.  A warm lookup ends here. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "memo.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/scene.h"
#include "meshfs/settings.h"
#include "meshfs/util.h"
#include "meshfs/views.h"

/* ---- tier 1: the memo ---- */

static sig sig_of(const struct stat *st)
{
    return (sig){st->st_dev, st->st_ino,  st->st_size, st->st_mtim, st->st_ctim,
                 st->st_uid, st->st_gid, st->st_mode, 0};
}

int mfs_memo_take_sig(const mfs_views *v, const char *path, mfs_view_path kind, sig *s,
                      mfs_err *err)
{
    struct stat st;
    if (v->h.stat_path(v->h.ctx, path, kind, &st, err) < 0)
        return -1;
    *s = sig_of(&st);
    return 0;
}

/* A folder's sig for the memo: what decides who may search it. */
static int same_dir_sig(const sig *a, const sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->uid == b->uid && a->gid == b->gid &&
           a->mode == b->mode;
}

int mfs_memo_same_sig(const sig *a, const sig *b)
{
    if (a->gone || b->gone)
        return a->gone && b->gone;
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           mfs_ts_equal(a->mtime, b->mtime) && mfs_ts_equal(a->ctime, b->ctime);
}

static mfs_view_path input_kind(uint32_t i)
{
    return i > 0 ? MFS_VIEW_PATH_DEP : MFS_VIEW_PATH_MODEL;
}

/* An input's sig as the memo keeps it.  A file's stat must succeed (else
 * -1, err).  An absent path is stat'ed as it is, and its failing to stat is
 * its sig (gone): a file appearing there moves it.  A search is the stat
 * of the folder searched, whose mtime moves with any name added, removed
 * or renamed in it (the cache tier then tells whether the match did).
 * One fstatat either way; the witnesses (memo_witnesses) then let one
 * folder's stat stand for the absent paths and searches in it. */
static int input_sig(const mfs_views *v, const char *path, int kind, uint32_t i, sig *s,
                     mfs_err *err)
{
    if (kind == MFS_DEP_FILE)
        return mfs_memo_take_sig(v, path, input_kind(i), s, err);
    if (kind == MFS_DEP_UNREADABLE) /* its stat is its value: a chmod moves ctime */
        return mfs_memo_take_sig(v, path, MFS_VIEW_PATH_DEP, s, err);
    char dir[4096];
    if (kind == MFS_DEP_LISTING) {
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
                 slash ? path : ".");
        path = dir;
    }
    mfs_err serr; /* not there is this input's answer, not an error */
    if (mfs_memo_take_sig(v, path, MFS_VIEW_PATH_DEP, s, &serr) < 0)
        *s = (sig){.gone = 1};
    return 0;
}



static int entry_peek(const mfs_views *v, const mfs_cache_key *k, struct timespec newest,
                      mfs_cache_hit *hit, mfs_err *err)
{
    if (v->h.entry_peek)
        return v->h.entry_peek(v->h.ctx, k, newest, hit, err);
    return mfs_cache_peek(v->h.cache, k, hit, err);
}


/* The view with key k if the model entry embeds it, or (trust) records
 * the length of its own entry file: a listing may say that size without
 * opening the file (the key names the bytes, so the size is right even if
 * the file was evicted since; the open that follows finds out). */
const mfs_cache_view *mfs_memo_recorded_view(const mfs_cache_manifest *man, const mfs_cache_key *k,
                                           int trust)
{
    for (uint32_t i = 0; i < man->nviews; i++) {
        const mfs_cache_view *w = &man->views[i];
        if ((w->embedded || (trust && w->sized)) && !memcmp(w->key.b, k->b, sizeof k->b))
            return w;
    }
    return NULL;
}

/* Who may read the views: the host's rule over the files read (a path
 * not found or a folder searched gives nothing to read). */
static int memo_perm(const mfs_views *v, model *m, mfs_err *err)
{
    struct stat *st = calloc(m->ninputs ? m->ninputs : 1, sizeof *st);
    char **paths = calloc(m->ninputs ? m->ninputs : 1, sizeof *paths);
    if (!st || !paths) {
        free(st);
        free(paths);
        return mfs_err_code(err, ENOMEM);
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->ninputs; i++) {
        if (m->input_kinds[i] != MFS_DEP_FILE)
            continue;
        paths[n] = m->input_paths[i];
        st[n].st_dev = m->input_sigs[i].dev;
        st[n].st_ino = m->input_sigs[i].ino;
        st[n].st_uid = m->input_sigs[i].uid;
        st[n].st_gid = m->input_sigs[i].gid;
        st[n].st_mode = m->input_sigs[i].mode;
        n++;
    }
    int rc = 0;
    if (v->h.perm) {
        rc = v->h.perm(v->h.ctx, m->path, paths, st, n, &m->perm, err);
    } else if (n) {
        m->perm.perm = 0444; /* no rule: the model's owner */
        m->perm.uid = st[0].st_uid;
        m->perm.gid = st[0].st_gid;
    }
    free(st);
    free(paths);
    if (rc < 0)
        return rc;
    if (m->perm.ndirs && !(m->dir_sigs = calloc(m->perm.ndirs, sizeof *m->dir_sigs)))
        return mfs_err_code(err, ENOMEM);
    for (uint32_t i = 0; i < m->perm.ndirs; i++) {
        const struct stat *d = &m->perm.dir_st[i];
        m->dir_sigs[i] = (sig){d->st_dev, d->st_ino, d->st_size, d->st_mtim, d->st_ctim,
                               d->st_uid, d->st_gid, d->st_mode, 0};
    }
    return 0;
}

/* The folder path lies in, by its text ("." for the root). */
static const char *parent_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    snprintf(out, cap, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    return out;
}

/* Index of folder dir among the memo's witnesses, -1 if not there. */
static int find_wit(const model *m, const char *dir)
{
    for (uint32_t i = 0; i < m->nwits; i++)
        if (!strcmp(m->wit_paths[i], dir))
            return (int)i;
    return -1;
}

/* The arrays grow one witness at a time: a memo has one to three, and a
 * listing's none, where room for one per input cost 400 B a model. */
static int add_wit(model *m, const char *dir, const sig *s, mfs_err *err)
{
    char **paths = realloc(m->wit_paths, (m->nwits + 1) * sizeof *paths);
    if (paths)
        m->wit_paths = paths;
    sig *sigs = paths ? realloc(m->wit_sigs, (m->nwits + 1) * sizeof *sigs) : NULL;
    if (sigs)
        m->wit_sigs = sigs;
    if (!sigs || !(m->wit_paths[m->nwits] = strdup(dir)))
        return mfs_err_code(err, ENOMEM);
    m->wit_sigs[m->nwits] = *s;
    return (int)m->nwits++;
}

static int sig_settled(const sig *s)
{
    struct stat st = {.st_mtim = s->mtime, .st_ctim = s->ctime};
    return !s->gone && S_ISDIR(s->mode) && mfs_input_times_settled(&st);
}

static int wit_worth(const model *m, const char *dir);

/* An absent input checked through the folder its name is missing from:
 * the folder's stat is taken, then the name is found missing again, so a
 * name added after that moves the stat the memo keeps; a folder whose
 * times have not settled stands for nothing, and the name is checked by
 * itself (as it also is when anything but a missing name is on its way). */
static int wit_absent(const mfs_views *v, model *m, uint32_t i, mfs_err *err)
{
    char dir[4096], again[4096];
    if (mfs_input_witness(v->h.rootfd, m->input_paths[i], dir, sizeof dir) != 1 ||
        !wit_worth(m, dir))
        return 0;
    int w = find_wit(m, dir);
    sig s;
    if (w < 0 && mfs_memo_take_sig(v, dir, MFS_VIEW_PATH_DEP, &s, err) < 0)
        return 0;
    if (!sig_settled(w < 0 ? &s : &m->wit_sigs[w])) {
        m->wit_pending = 1;
        return 0;
    }
    if (mfs_input_witness(v->h.rootfd, m->input_paths[i], again, sizeof again) != 1 ||
        strcmp(dir, again))
        return 0;
    if (w < 0 && add_wit(m, dir, &s, err) < 0)
        return -1;
    m->by_wit[i] = 1;
    return 0;
}

static int is_absent_kind(int kind)
{
    return kind == MFS_DEP_ABSENT || kind == MFS_DEP_MISSING;
}

/* Whether folder dir is worth a witness for the absent names in it: a
 * folder's stat (open, fstat, close) costs more than a failing lookup of a
 * name, so only when it stands for two names or more, or is a stat the
 * check has anyway: the root (its descriptor is held), the model's own
 * folder (which the mount has just stat'ed to find the view: given), or a
 * searched folder. */
static int wit_worth(const model *m, const char *dir)
{
    if (!strcmp(dir, ".") || find_wit(m, dir) >= 0)
        return 1;
    char d[4096];
    if (!strcmp(parent_of(m->path, d, sizeof d), dir))
        return 1;
    int names = 0;
    for (uint32_t i = 0; i < m->ninputs && names < 2; i++)
        names += !m->by_wit[i] && is_absent_kind(m->input_kinds[i]) &&
                 !strcmp(parent_of(m->input_paths[i], d, sizeof d), dir);
    return names >= 2;
}

/* Each absent input not yet checked through a folder, whose folder is
 * worth it (wit_worth): at the memo's making, and once its folders settle
 * (memo_settle). */
static int wit_all(const mfs_views *v, model *m, mfs_err *err)
{
    m->wit_pending = 0;
    for (uint32_t i = 0; i < m->ninputs; i++) {
        if (m->by_wit[i] || !is_absent_kind(m->input_kinds[i]))
            continue;
        if (wit_absent(v, m, i, err) < 0)
            return -1;
    }
    return 0;
}

/* A memo made while a folder had not settled, or made by a listing
 * (memo_witnesses' defer), checks the absent names one by one; once a
 * resolve finds them unchanged and the folder has settled, its stat
 * stands for them (as when the memo is made). */
static void memo_settle(const mfs_views *v, model *m)
{
    mfs_err err;
    wit_all(v, m, &err); /* out of memory: the names stay checked one by one */
    mfs_memo_charge(v, m);
}

/* Whether every input, witness and permission folder still has the stat
 * the memo recorded; given (may be NULL): stats the host has just taken,
 * used for the model (input 0) and its folder instead of a second stat;
 * listing: a listing's check, which leaves memo_settle to a resolve. */
int mfs_memo_current(const mfs_views *v, model *m, const char *fmi_model,
                     const mfs_view_given *given, int listing)
{
    if (!m->valid || strcmp(m->fmi_model, fmi_model))
        return 0;
    char mdir[4096];
    const struct stat *gdir = given && given->folder && S_ISDIR(given->folder->st_mode)
                                  ? given->folder
                                  : NULL;
    if (gdir)
        parent_of(m->path, mdir, sizeof mdir);
    mfs_err err; /* a path that fails to stat is an answer here, not an error */
    for (uint32_t i = 0; i < m->nwits; i++) {
        sig now;
        if (gdir && !strcmp(m->wit_paths[i], mdir))
            now = sig_of(gdir);
        else if (mfs_memo_take_sig(v, m->wit_paths[i], MFS_VIEW_PATH_DEP, &now, &err) < 0)
            now = (sig){.gone = 1};
        if (!mfs_memo_same_sig(&now, &m->wit_sigs[i]))
            return 0;
    }
    for (uint32_t i = 0; i < m->ninputs; i++) {
        sig now;
        if (m->by_wit[i])
            continue;
        if (i == 0 && given && given->model)
            now = sig_of(given->model);
        else if (input_sig(v, m->input_paths[i], m->input_kinds[i], i, &now, &err) < 0)
            return 0;
        if (!mfs_memo_same_sig(&now, &m->input_sigs[i]))
            return 0;
    }
    for (uint32_t i = 0; i < m->perm.ndirs; i++) {
        sig now;
        if (mfs_memo_take_sig(v, m->perm.dirs[i], MFS_VIEW_PATH_MODEL, &now, &err) < 0 ||
            !same_dir_sig(&now, &m->dir_sigs[i]))
            return 0;
    }
    if (m->wit_pending && !listing)
        memo_settle(v, m);
    return 1;
}

/* The witnesses (model.by_wit): a searched folder's stat is its search's
 * sig already; absent names share their folder's (wit_absent).  So a warm
 * check stats each such folder once, however many inputs lie in it: a
 * model's settings-file candidates, its missing .mtl and its texture
 * searches cost the stats of the one or two folders they are in.
 * defer: the memo is made for a listing's sizes; the absent names' folders
 * are looked for by the first resolve that finds it current (memo_settle),
 * not for every model listed.  A listing's own checks take no stat of the
 * model's folder (a resolve is given it), so there a folder costs more
 * than the names it stands for, and finding it (mfs_input_witness, twice
 * a name) cost a fifth of a warm listing's time. */
static int memo_witnesses(const mfs_views *v, model *m, int defer, mfs_err *err)
{
    uint32_t n = m->ninputs;
    if (!(m->by_wit = calloc(n + 1, 1)))
        return mfs_err_code(err, ENOMEM);
    for (uint32_t i = 0; i < n; i++) {
        if (m->input_kinds[i] != MFS_DEP_LISTING)
            continue;
        char dir[4096];
        parent_of(m->input_paths[i], dir, sizeof dir);
        int w = find_wit(m, dir);
        if (w >= 0 && !mfs_memo_same_sig(&m->wit_sigs[w], &m->input_sigs[i]))
            return mfs_err_code(err, EAGAIN); /* the folder changed between its two stats */
        if (w < 0 && add_wit(m, dir, &m->input_sigs[i], err) < 0)
            return -1;
        m->by_wit[i] = 1;
    }
    if (defer) { /* the absent names are checked one by one until then */
        m->wit_pending = 1;
        return 0;
    }
    return wit_all(v, m, err);
}

/* Records the inputs' current sigs and each enabled format's entry state:
 * embedded in the model entry mk that man was read from, or its own entry
 * (peeked, unless trust and man records its length: recorded_view). */
static int memo_fill_in(const mfs_views *v, model *m, const mfs_cache_manifest *man,
                        const mfs_cache_key *mk, const char *fmi_model, int trust, mfs_err *err)
{
    mfs_memo_clear(m);
    m->input_paths = calloc(man->ndeps + 1, sizeof *m->input_paths);
    m->input_sigs = calloc(man->ndeps + 1, sizeof *m->input_sigs);
    m->input_kinds = calloc(man->ndeps + 1, sizeof *m->input_kinds);
    m->fmi_model = strdup(fmi_model);
    if (!m->input_paths || !m->input_sigs || !m->input_kinds || !m->fmi_model)
        return mfs_err_code(err, ENOMEM);
    m->newest = (struct timespec){0, 0};
    for (uint32_t i = 0; i < man->ndeps; i++) {
        m->input_paths[i] = strdup(man->deps[i].path);
        if (!m->input_paths[i])
            return mfs_err_code(err, ENOMEM);
        m->input_kinds[i] = man->deps[i].kind;
        m->ninputs++;
        if (input_sig(v, man->deps[i].path, man->deps[i].kind, i, &m->input_sigs[i], err) < 0)
            return mfs_err_code(err, EAGAIN); /* vanished meanwhile: resolve again */
        if (man->deps[i].kind != MFS_DEP_FILE)
            continue; /* the views' mtime is their files' newest */
        struct timespec t = m->input_sigs[i].mtime;
        if (mfs_ts_later(t, m->newest))
            m->newest = t;
    }
    if (memo_witnesses(v, m, trust, err) < 0 || memo_perm(v, m, err) < 0)
        return -1;
    m->mk = *mk;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(v->h.formats & (1u << f)))
            continue;
        mfs_cache_key key;
        if (mfs_views_key(v, man->deps, man->ndeps, f, fmi_model, &key, err) < 0)
            return mfs_err_code(err, ENOMEM);
        fmt_memo *fm = &m->fmt[f];
        const mfs_cache_view *in = mfs_memo_recorded_view(man, &key, trust);
        if (in) { /* nothing to open: the model entry was just read */
            *fm = (fmt_memo){.known = 1, .ok = 1, .embedded = in->embedded, .size = in->length,
                             .key = key};
            continue;
        }
        mfs_cache_hit hit = {.fd = -1};
        /* less failures the host tries again, plus entries only it holds */
        mfs_err perr; /* an entry not there to peek is an answer */
        if (entry_peek(v, &key, m->newest, &hit, &perr) != 1) {
            mfs_cache_hit_release(&hit);
            continue;
        }
        fm->known = 1;
        fm->key = key;
        fm->ok = hit.reason == NULL;
        fm->size = hit.length;
        fm->reason = hit.reason; /* taken over */
        hit.reason = NULL;
        mfs_cache_hit_release(&hit);
    }
    m->valid = 1;
    return 0;
}

/* memo_fill_in, and the record charged for what it holds now, however it
 * ended (the table's budget is checked when the caller lets it go). */
int mfs_memo_fill(const mfs_views *v, model *m, const mfs_cache_manifest *man,
                  const mfs_cache_key *mk, const char *fmi_model, int trust, mfs_err *err)
{
    int rc = memo_fill_in(v, m, man, mk, fmi_model, trust, err);
    mfs_memo_charge(v, m);
    return rc;
}

/* Which enabled formats have no entry yet for these inputs. */
unsigned mfs_memo_missing_formats(const mfs_views *v, const model *m)
{
    unsigned miss = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((v->h.formats & (1u << f)) && !m->fmt[f].known)
            miss |= 1u << f;
    return miss;
}

/* Statistics: whether the conversion just made left a failure among the
 * views it was asked for. */
int mfs_memo_made_failure(const mfs_views *v, const model *m, unsigned need)
{
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((need & (1u << f)) && m->fmt[f].known && !m->fmt[f].ok)
            return 1;
    return 0;
}

/* The resolver (include/meshfs/views.h): memo, local cache, conversion.
 *
 * Each model has a mutex held across its slow path, so concurrent first
 * readers of one model wait for one conversion instead of starting their
 * own; other models are not held up.  The fast path only stats the inputs:
 * a warm lookup reads no source bytes.
 *
 * Two walks share the tiers below the memo.  refresh() may hash the model,
 * mark a manifest used and convert; refresh_known() answers from the stat
 * index and entry headers alone, and the converter is not within its reach. */
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
#include "meshfs/remote.h"
#include "meshfs/scene.h"
#include "meshfs/settings.h"
#include "meshfs/util.h"
#include "meshfs/views.h"

/* mk: the model entry the view is embedded in, or NULL (its own file) */
static int entry_open(const mfs_views *v, const mfs_cache_key *mk, const mfs_cache_key *k,
                      mfs_cache_hit *hit, mfs_err *err)
{
    if (v->h.entry_open)
        return v->h.entry_open(v->h.ctx, mk, k, hit, err);
    return mk ? mfs_cache_lookup_in(v->h.cache, mk, k, hit, err)
              : mfs_cache_lookup(v->h.cache, k, hit, err);
}

/* ---- tier 2: the local cache, from the stat index alone ---- */

/* Whether a folder record's copy is the manifest of this model's bytes. */
static int hint_fits(const mfs_cache_manifest *h, const char *path, const struct stat *st,
                     const uint8_t hash[16])
{
    return h && h->ndeps && !strcmp(h->deps[0].path, path) &&
           h->deps[0].size == (uint64_t)st->st_size && !memcmp(h->deps[0].hash, hash, 16);
}

/* 0: the memo now answers for `format`; 1: not without work; 2: nothing
 * of the model is known without work; -1 (err).  model_st: the model's
 * stat, just taken.  hint (may be NULL): the listing's copy of the
 * manifest, and where a manifest read from the cache goes. */
static int refresh_known(const mfs_views *v, model *m, const char *fmi_model, int format,
                         const struct stat *model_st, mfs_view_hint *hint, mfs_err *err)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        struct stat st = *model_st;
        uint8_t hash[16];
        if (attempt && v->h.stat_path(v->h.ctx, m->path, MFS_VIEW_PATH_MODEL, &st, err) < 0)
            return -1;
        if (!S_ISREG(st.st_mode) || !mfs_cache_file_hash_known(v->h.cache, &st, hash))
            return 2;
        mfs_cache_key mk;
        if (mfs_views_manifest_key(v, m->path, (uint64_t)st.st_size, hash, &mk, err) < 0)
            return -1;
        mfs_cache_manifest own;
        memset(&own, 0, sizeof own);
        const mfs_cache_manifest *man = &own;
        if (hint && hint_fits(hint->man, m->path, &st, hash))
            man = hint->man; /* no model entry opened */
        else if (mfs_cache_manifest_peek(v->h.cache, &mk, &own, err) != 1)
            return 2; /* (a listing looks, it does not use: no LRU stamp) */
        if (mfs_cache_manifest_known(v->h.cache, v->h.rootfd, man, err) != 1) {
            mfs_cache_manifest_free(&own);
            return 2;
        }
        int rc = mfs_memo_fill(v, m, man, &mk, fmi_model, 1, err);
        if (hint && man == hint->man)
            hint->used = 1;
        if (hint && man == &own && rc == 0) {
            mfs_cache_manifest_free(&hint->learned);
            hint->learned = own; /* the listing's to record */
        } else {
            mfs_cache_manifest_free(&own);
        }
        if (rc < 0 && err->code == EAGAIN)
            continue;
        if (rc < 0)
            return -1;
        return mfs_memo_missing_formats(v, m) & (1u << format) ? 1 : 0;
    }
    return 1;
}

/* ---- tier 2b: the remote ---- */

/* One view fetched from the remote into the local cache: as
 * mfs_remote_fetch (1 it is there, 2 the server's is bad). */
static int remote_view(const mfs_views *v, const mfs_cache_manifest *man, const char *fmi_model,
                       int format)
{
    mfs_cache_key k;
    mfs_err e;
    mfs_err_clear(&e);
    if (mfs_views_key(v, man->deps, man->ndeps, format, fmi_model, &k, &e) < 0)
        return 0;
    return mfs_remote_fetch(v->h.remote, &k, 0);
}

/* The view asked for, and every other missing one the manifest lists (the
 * machine that made it stored them): a view another machine made is
 * fetched rather than converted again with the one asked for, whatever
 * order they are read in.  Views it does not list are not asked for (a
 * request each, and they are not there).  The number fetched; *bad set
 * if one was found bad there. */
static int remote_views(const mfs_views *v, const model *m, const mfs_cache_manifest *man,
                        const char *fmi_model, int format, int *bad)
{
    int got = 0;
    unsigned miss = mfs_memo_missing_formats(v, m);
    /* a server slower than the model's last conversion: convert instead
     * (issue 35 item 7; the sizes the manifest records, the time it took) */
    uint64_t bytes = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        mfs_cache_key k;
        mfs_err e;
        mfs_err_clear(&e);
        const mfs_cache_view *w;
        if ((miss & (1u << f)) &&
            mfs_views_key(v, man->deps, man->ndeps, f, fmi_model, &k, &e) == 0 &&
            (w = mfs_memo_recorded_view(man, &k, 1)))
            bytes += w->length;
    }
    if (mfs_remote_slower(v->h.remote, m->path, bytes, man->convert_ms))
        return 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(miss & (1u << f)))
            continue;
        mfs_cache_key k;
        mfs_err e;
        mfs_err_clear(&e);
        if (f != format && (mfs_views_key(v, man->deps, man->ndeps, f, fmi_model, &k, &e) < 0 ||
                            !mfs_memo_recorded_view(man, &k, 1)))
            continue;
        int r = remote_view(v, man, fmi_model, f);
        got += r == 1;
        *bad |= r == 2;
    }
    return got;
}

/* After a conversion: the views it made (never failures) and the manifest
 * are queued for upload; the queue never waits.  over: an object of this
 * model was found bad on the server, so each of them is put over what the
 * server has (a bad manifest hides which of its views are bad too). */
static void remote_upload(const mfs_views *v, const model *m, unsigned need,
                          const mfs_cache_key *mk, int over)
{
    for (int f = 0; f < MFS_FMT_COUNT; f++) /* embedded ones go with the manifest */
        if ((need & (1u << f)) && m->fmt[f].known && m->fmt[f].ok && !m->fmt[f].embedded)
            mfs_remote_enqueue(v->h.remote, &m->fmt[f].key, 0, over);
    mfs_remote_enqueue(v->h.remote, mk, 1, over);
}

/* ---- tiers 2 and 3: the local cache, then a conversion ---- */

int mfs_views_shows_image(const mfs_views *v)
{
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((v->h.formats & (1u << f)) && mfs_format_get((mfs_format)f)->reads_image)
            return 1;
    return 0;
}

/* Each referenced file the conversion found missing, in the log: once a
 * model version (its conversion), not a read. */
static void log_missing(const mfs_views *v, const char *path, const mfs_cache_manifest *man)
{
    for (uint32_t i = 0; v->h.log && i < man->ndeps; i++)
        if (mfs_input_said(man->deps, man->ndeps, i)) {
            char msg[4200];
            mfs_input_warning(&man->deps[i], msg, sizeof msg);
            v->h.log(v->h.ctx, path, msg);
        }
}

/* Was the model at path replaced since `st` was taken (a save by rename,
 * or an edit)?  Then what was looked up or converted for it answers for
 * a file no longer there, and the caller starts again from the new one. */
static int model_moved(const mfs_views *v, const char *path, const struct stat *st)
{
    struct stat now;
    mfs_err err;
    if (v->h.stat_path(v->h.ctx, path, MFS_VIEW_PATH_MODEL, &now, &err) < 0)
        return 0; /* gone: the next hash says so */
    sig a = {st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim,
             st->st_uid, st->st_gid, st->st_mode, 0};
    sig b = {now.st_dev, now.st_ino, now.st_size, now.st_mtim, now.st_ctim,
             now.st_uid, now.st_gid, now.st_mode, 0};
    return !mfs_memo_same_sig(&a, &b);
}

/* A model saved over while it is resolved is resolved again for the file
 * there now, up to this many times a request: each time took a new save,
 * so only an editor saving without pause for the whole request runs out. */
#define MOVED_TRIES 32

/* Brings the memo up to date, converting if `format` has no entry for the
 * current inputs (then every enabled view still missing is made by the same
 * import).  Views already cached are never remade for another's sake, so an
 * option that moves only .fmi leaves .gmf reads conversion-free.  Called
 * with m->lock held.  0, or -1 with err (its code the errno; its text says
 * why, if it can). */
static int refresh(const mfs_views *v, model *m, const char *fmi_model, int format, mfs_err *err)
{
    int converted = 0, moves = 0, bad = 0, leased = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        struct stat st;
        uint8_t hash[16];
        if (v->h.hash_model(v->h.ctx, m->path, &st, hash, err) < 0)
            return -1;
        mfs_cache_key mk;
        if (mfs_views_manifest_key(v, m->path, (uint64_t)st.st_size, hash, &mk, err) < 0)
            return -1;
        mfs_cache_manifest man;
        memset(&man, 0, sizeof man);
        int have = mfs_cache_manifest_load(v->h.cache, &mk, &man, err);
        /* another machine's manifest: its key is the model's content hash
         * and options, never its path on that machine */
        int got = have == 0 && v->h.remote ? mfs_remote_fetch(v->h.remote, &mk, 1) : 0;
        bad |= got == 2;
        /* the server lacks the model: before converting it, a lease
         * (remote.h, "leases"), so that machines starting together convert once */
        int absent = have == 0 && v->h.remote && got == 0;
        if (got == 1)
            have = mfs_cache_manifest_load(v->h.cache, &mk, &man, err);
        if (have == 1 && !mfs_views_shows_image(v))
            mfs_cache_manifest_drop_texture_inputs(&man);
        if (have == 1 && mfs_cache_manifest_current(v->h.cache, v->h.rootfd, &man, err) != 1) {
            mfs_cache_manifest_free(&man);
            if (model_moved(v, m->path, &st) && ++moves < MOVED_TRIES) {
                attempt--; /* the model's input did not match: it was saved over */
                continue;
            }
            have = 0;
        }
        unsigned need = v->h.formats;
        if (have == 1) {
            /* the manifest's keys were made with the options of its time:
             * recompute them for ours, then see which entries exist */
            int rc = mfs_memo_fill(v, m, &man, &mk, fmi_model, 0, err);
            if (rc == 0 && v->h.remote && (mfs_memo_missing_formats(v, m) & (1u << format)) &&
                remote_views(v, m, &man, fmi_model, format, &bad))
                rc = mfs_memo_fill(v, m, &man, &mk, fmi_model, 0, err);
            mfs_cache_manifest_free(&man);
            if (rc < 0 && err->code == EAGAIN) {
                mfs_err_clear(err);
                continue;
            }
            if (rc < 0)
                return -1;
            need = mfs_memo_missing_formats(v, m);
            if (!(need & (1u << format)))
                return 0;
        }
        memset(&man, 0, sizeof man);
        mfs_lease_outcome lease = MFS_LEASE_NONE;
        if (absent && !leased++) {
            lease = mfs_remote_lease(v->h.remote, &mk);
            if (lease == MFS_LEASE_ARRIVED) {
                attempt--; /* made elsewhere meanwhile: fetched, once */
                continue;
            }
        }
        if (!converted++) { /* one miss per request, however many tries */
            mfs_cache_note(v->h.cache, MFS_CACHE_VIEW_MISS);
            if (v->h.count_models)
                mfs_cache_note(v->h.cache, MFS_CACHE_MODEL_MISS);
            m->fresh[format] = 1;
        }
        mfs_cache_note(v->h.cache, MFS_CACHE_CONVERSION);
        int conv = v->h.convert(v->h.ctx, m->path, fmi_model, need, &man, err);
        if (conv < 0) {
            if (lease == MFS_LEASE_HELD)
                mfs_remote_lease_end(v->h.remote, &mk, 0);
            mfs_cache_manifest_free(&man);
            if (model_moved(v, m->path, &st) && ++moves < MOVED_TRIES) {
                mfs_err_clear(err); /* the run was for a file no longer there */
                attempt--;
                continue;
            }
            mfs_cache_note(v->h.cache, MFS_CACHE_CONVERSION_FAILURE);
            err->code = 0; /* the run failed (err says why): EIO, whatever its parts said */
            return -1;
        }
        if (!mfs_views_shows_image(v))
            mfs_cache_manifest_drop_texture_inputs(&man);
        int cur = mfs_cache_manifest_current(v->h.cache, v->h.rootfd, &man, err);
        /* the worker opened the model by its path itself: if that led to
         * other bytes than were hashed here (the model changed, or a folder
         * on its path was swapped for a link), its views are not this
         * path's */
        if (cur == 1 && (man.ndeps == 0 || man.deps[0].size != (uint64_t)st.st_size ||
                         memcmp(man.deps[0].hash, hash, 16) != 0))
            cur = 0;
        mfs_err ferr; /* beside err, which may hold a view's storing failure */
        mfs_err_clear(&ferr);
        int rc = cur == 1 ? mfs_memo_fill(v, m, &man, &mk, fmi_model, 0, &ferr)
                          : mfs_err_code(&ferr, EAGAIN);
        if (rc == 0)
            log_missing(v, m->path, &man);
        mfs_cache_manifest_free(&man);
        if (lease == MFS_LEASE_HELD) /* freed once its manifest is sent, or now */
            mfs_remote_lease_end(v->h.remote, &mk, rc == 0);
        if (rc == 0 && v->h.remote)
            remote_upload(v, m, need, &mk, bad);
        if (rc == 0 && (conv == 1 || mfs_memo_made_failure(v, m, need)))
            mfs_cache_note(v->h.cache, MFS_CACHE_CONVERSION_FAILURE);
        if (rc == 0 && !(mfs_memo_missing_formats(v, m) & (1u << format)))
            return 0;
        if (rc == 0 && conv == 1) {
            err->code = 0; /* this view could not be stored (disk full...): err says why */
            return -1;
        }
        if (rc < 0 && ferr.code != EAGAIN) {
            *err = ferr;
            return -1;
        }
        /* an input changed while it was converting: go round again */
        if (model_moved(v, m->path, &st) && ++moves < MOVED_TRIES)
            attempt--;
    }
    return mfs_errf(err, "%s: inputs kept changing during conversion", m->path);
}

/* ---- the two fronts ---- */

/* A failure that means the view is not there to show: the file holds no
 * mesh, or its settings' formats = leaves the view out. */
static int hidden_reason(const char *reason)
{
    return reason && (!strcmp(reason, MFS_SCENE_NO_MESH) || mfs_settings_not_shown(reason));
}

static void info_fill(const model *m, const fmt_memo *fm, mfs_view_info *info)
{
    info->size = fm->ok ? fm->size : 0;
    info->mtime = m->newest;
    info->key = fm->key;
    info->perm_known = 1;
    info->perm = m->perm.perm;
    info->uid = m->perm.uid;
    info->gid = m->perm.gid;
    info->no_views = !fm->ok && hidden_reason(fm->reason);
}

/* A remembered failure's text; "" for none. */
static mfs_view_outcome failed_model(const fmt_memo *fm, mfs_err *err)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s", fm->reason ? fm->reason : "");
    return MFS_VIEW_FAILED_MODEL;
}

mfs_view_outcome mfs_views_resolve(mfs_views *v, const char *path, const char *fmi_model,
                                   int format, mfs_view_mode mode, mfs_view_info *info,
                                   mfs_err *err)
{
    return mfs_views_resolve_given(v, path, fmi_model, format, mode, NULL, info, err);
}

mfs_view_outcome mfs_views_resolve_given(mfs_views *v, const char *path, const char *fmi_model,
                                         int format, mfs_view_mode mode,
                                         const mfs_view_given *given, mfs_view_info *info,
                                         mfs_err *err)
{
    memset(info, 0, sizeof *info);
    info->hit.fd = -1;
    mfs_err_clear(err);
    model *m = mfs_memo_get(v, path);
    if (!m) {
        info->errnum = ENOMEM;
        return MFS_VIEW_FAILED_MACHINE;
    }
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    mfs_view_outcome out = MFS_VIEW_FAILED_MACHINE;
    /* -1 below: err says why, and its code is the errno the host gives */
    /* an entry evicted or removed (clear, trim, rm -rf) between the memo
     * and the open is made again: up to three times, then EIO */
    for (int tries = 0; tries < 3; tries++) {
        /* what the host stat'ed holds for the first look only */
        if (!mfs_memo_current(v, m, fmi_model, tries ? NULL : given, 0) || !m->fmt[format].known) {
            rc = refresh(v, m, fmi_model, format, err);
            if (rc < 0)
                break;
        }
        fmt_memo *fm = &m->fmt[format];
        if (!fm->known) {
            rc = mfs_err_code(err, EIO);
            break;
        }
        info_fill(m, fm, info);
        if (!fm->ok) {
            out = failed_model(fm, err);
            break;
        }
        out = MFS_VIEW_HIT;
        if (mode != MFS_VIEW_OPEN)
            break;
        int r = entry_open(v, fm->embedded ? &m->mk : NULL, &fm->key, &info->hit, err);
        if (r == 1 && info->hit.fd >= 0 && info->hit.length == fm->size) {
            info->same_as_last = m->served[format] &&
                                 !memcmp(&m->served_key[format], &fm->key, sizeof fm->key);
            m->served[format] = 1;
            m->served_key[format] = fm->key;
            if (m->fresh[format])
                m->fresh[format] = 0; /* the request that missed */
            else {
                mfs_cache_note(v->h.cache, MFS_CACHE_VIEW_HIT);
                if (v->h.count_models)
                    mfs_cache_note(v->h.cache, MFS_CACHE_MODEL_HIT);
            }
            break;
        }
        /* evicted or damaged since the memo was made: convert again */
        mfs_cache_hit_release(&info->hit);
        info->hit.fd = -1;
        m->valid = 0;
        rc = -1;
        err->code = EIO;
        out = MFS_VIEW_FAILED_MACHINE;
    }
    if (rc < 0) {
        out = MFS_VIEW_FAILED_MACHINE;
        info->errnum = mfs_err_errno(err);
        /* EWOULDBLOCK: an input under a lease, which the host waits for
         * and asks again about, many times a second (src/session/leasewait.h) */
        if (err->msg[0] && v->h.log && info->errnum != EWOULDBLOCK)
            v->h.log(v->h.ctx, path, err->msg);
    }
    pthread_mutex_unlock(&m->lock);
    mfs_memo_put(v, m);
    return out;
}

/* The views the record knows not to be there (hidden_reason). */
static unsigned hidden_views(const model *m)
{
    unsigned mask = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if (m->fmt[f].known && !m->fmt[f].ok && hidden_reason(m->fmt[f].reason))
            mask |= 1u << f;
    return mask;
}

unsigned mfs_views_known_hidden(mfs_views *v, const char *path, const char *fmi_model)
{
    /* a peek: no record made, none moved in the LRU order */
    unsigned b = mfs_memo_bucket(path);
    pthread_mutex_lock(&v->lock);
    model *m = v->bucket[b];
    while (m && strcmp(m->path, path))
        m = m->next;
    if (m)
        m->refs++;
    pthread_mutex_unlock(&v->lock);
    if (!m)
        return 0;
    unsigned mask = 0;
    if (pthread_mutex_trylock(&m->lock) == 0) {
        mask = m->valid ? hidden_views(m) : 0;
        if (mask && !mfs_memo_current(v, m, fmi_model, NULL, 1))
            mask = 0;
        pthread_mutex_unlock(&m->lock);
    }
    mfs_memo_put(v, m);
    return mask;
}

int mfs_views_missing(mfs_views *v, const char *path, const char *fmi_model, int format,
                      char *out, size_t n, mfs_err *err)
{
    mfs_view_info info;
    mfs_view_outcome o = mfs_views_resolve(v, path, fmi_model, format, MFS_VIEW_ATTR, &info, err);
    if (o == MFS_VIEW_FAILED_MACHINE) {
        err->code = info.errnum ? info.errnum : EIO;
        return -1;
    }
    model *m = mfs_memo_get(v, path);
    if (!m)
        return mfs_err_sys(err, ENOMEM, "%s: out of memory", path);
    pthread_mutex_lock(&m->lock);
    size_t len = 0;
    mfs_dep *deps = m->valid ? calloc(m->ninputs ? m->ninputs : 1, sizeof *deps) : NULL;
    for (uint32_t i = 0; deps && i < m->ninputs; i++)
        deps[i] = (mfs_dep){.path = m->input_paths[i], .kind = m->input_kinds[i]};
    for (uint32_t i = 0; deps && i < m->ninputs; i++) {
        if (!mfs_input_said(deps, m->ninputs, i))
            continue;
        size_t at = len + (len ? 1 : 0); /* a line each */
        int k = at < n ? mfs_input_warning(&deps[i], out + at, n - at) : -1;
        if (k < 0 || (size_t)k >= n - at) {
            out[len] = '\0';
            break; /* what fits */
        }
        if (len)
            out[len] = '\n';
        len = at + (size_t)k;
    }
    int rc = m->valid && !deps ? mfs_err_sys(err, ENOMEM, "%s: out of memory", path) : (int)len;
    free(deps);
    pthread_mutex_unlock(&m->lock);
    mfs_memo_put(v, m);
    return rc;
}

mfs_view_outcome mfs_views_known(mfs_views *v, const char *path, const char *fmi_model,
                                 int format, mfs_view_inputs inputs, struct stat *model_st,
                                 mfs_view_info *info, mfs_err *err)
{
    return mfs_views_known_hinted(v, path, fmi_model, format, inputs, model_st, NULL, info, err);
}

mfs_view_outcome mfs_views_known_hinted(mfs_views *v, const char *path, const char *fmi_model,
                                        int format, mfs_view_inputs inputs,
                                        struct stat *model_st, mfs_view_hint *hint,
                                        mfs_view_info *info, mfs_err *err)
{
    memset(info, 0, sizeof *info);
    info->hit.fd = -1;
    /* the model first: a model that is not there costs no record */
    info->model_cold = 1;
    if (inputs == MFS_VIEW_INPUTS_STAT &&
        v->h.stat_path(v->h.ctx, path, MFS_VIEW_PATH_MODEL, model_st, err) < 0)
        return MFS_VIEW_MISS;
    model *m = mfs_memo_find(v, path, 0);
    if (!m) {
        /* no record: only the cache can know it, and only by the model's
         * hash in the stat index; without that, no record is made */
        uint8_t hash[16];
        if (!S_ISREG(model_st->st_mode) ||
            !mfs_cache_file_hash_known(v->h.cache, model_st, hash) || !(m = mfs_memo_get(v, path)))
            return MFS_VIEW_MISS;
    }
    /* never wait: a held model is converting, and a listing must not */
    if (pthread_mutex_trylock(&m->lock) != 0) {
        mfs_memo_put(v, m);
        return MFS_VIEW_MISS;
    }
    info->model_cold = 0;
    mfs_view_outcome out = MFS_VIEW_MISS;
    int current = inputs == MFS_VIEW_INPUTS_CHECKED
                      ? m->valid && !strcmp(m->fmi_model, fmi_model)
                      : mfs_memo_current(v, m, fmi_model, &(mfs_view_given){.model = model_st}, 1);
    /* a fresh mount over a warm cache: what the cache knows is enough.  A
     * current memo already holds every entry the cache had for these
     * inputs (memo_fill peeks each format), so a view it lacks is not
     * looked for again: the resolve that follows finds or makes it. */
    if (!current) {
        mfs_err kerr; /* not known without work is an answer, not an error */
        int r = refresh_known(v, m, fmi_model, format, model_st, hint, &kerr);
        current = r == 0;
        info->model_cold = r == 2;
    }
    const fmt_memo *fm = &m->fmt[format];
    if (current && fm->known) {
        info_fill(m, fm, info);
        out = fm->ok ? MFS_VIEW_HIT : failed_model(fm, err);
    }
    pthread_mutex_unlock(&m->lock);
    mfs_memo_put(v, m);
    return out;
}

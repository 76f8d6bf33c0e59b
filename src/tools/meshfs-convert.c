/* meshfs-convert: the mount's views in batch, without a mount.
 *
 * The batch engine (include/meshfs/batch.h) plans the inputs under the
 * mount's naming rule and resolves every view through the mount's
 * resolver and cache, so a second run over an unchanged tree converts
 * nothing, and a tree a mount (or `meshfs-cache warm`) has converted is up
 * to date here too.  Conversions run in meshfs-worker processes, as the
 * mount's do: a model that crashes or hangs the importer is a failed file
 * and the batch carries on.  This file is the command line, the output
 * tree and the report. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/batch.h"
#include "meshfs/convert.h"
#include "meshfs/inputs.h"
#include "meshfs/json.h"
#include "meshfs/optvalue.h"
#include "meshfs/rules.h"
#include "meshfs/scene.h"
#include "meshfs/settings.h"
#include "meshfs/spawner.h"
#include "meshfs/version.h"

#include "convert_lgepkg.h"

typedef struct item {
    const mfs_plan_item *p;
    char *outdir;    /* output folder: the output root joined with p->outdir */
    mfs_report rep;  /* per view: ok, size, error, note; stats and inputs */
    int done_ok;     /* 1: every view asked for is in place; -1: refused */
    mfs_batch_state state;
    int remembered;  /* failed in an earlier run, not tried again */
    char *pkg_tmp;   /* views the package needs that --formats did not ask
                        for (never left in OUTDIR) */
    int pkg_only;    /* --shard: another shard's model, resolved only for
                        its folder's package, which this shard writes */
} item;

typedef struct batch {
    mfs_plan plan;
    item *v;
    size_t n;
    mfs_batch *engine;
    const char *out_root;
    const char *cache_dir;
    int no_cache, copy_other;
    unsigned formats;
    mfs_options opts;
    mfs_limits limits;
    int lowercase_names;        /* write every output name in lowercase */
    mfs_shard shard;            /* --shard K/N (n 0: the whole tree) */
    const char *lgepkg_name;    /* game_resources.lgepkg PackageHeader fields */
    const char *lgepkg_version;
    pthread_mutex_t lock;       /* stdout lines */
    int tty, quiet;
    size_t written, unchanged;  /* output files */
    mfs_worker_user worker_user; /* --worker-user, resolved */
    mfs_spawner *spawner;        /* this run's workers (spawner.h) */
} batch;

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "meshfs-convert: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(2);
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        die("%s", "out of memory");
    return d;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *d = malloc(n);
    if (!d)
        die("%s", "out of memory");
    if (!a[0])
        snprintf(d, n, "%s", b);
    else if (!b[0])
        snprintf(d, n, "%s", a);
    else
        snprintf(d, n, "%s/%s", a, b);
    return d;
}

/* What each model's views are resolved for: those asked for, plus the four
 * a package needs when packages are on. */
static unsigned job_formats(const batch *b)
{
    return mfs_batch_views(b->engine);
}

static const char *first_error(const batch *b, const item *it)
{
    if (!it->rep.ok)
        return it->rep.error;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((job_formats(b) & (1u << f)) && !it->rep.fmt[f].ok &&
            !mfs_settings_not_shown(it->rep.fmt[f].error))
            return it->rep.fmt[f].error;
    return "";
}

/* A view made only for the package: to a private folder beside the views. */
static int pkg_view(item *it, const mfs_batch_view *v, const char *name, mfs_err *err)
{
    if (!it->pkg_tmp) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s/.meshfs-XXXXXX", it->outdir);
        if (!mfs_batch_mkdtemp(tmp))
            return mfs_errf(err, "%s: %s", it->outdir, strerror(errno));
        it->pkg_tmp = xstrdup(tmp);
    }
    char dst[PATH_MAX];
    snprintf(dst, sizeof dst, "%s/%s", it->pkg_tmp, name);
    int same;
    return mfs_batch_write_hit(&v->hit, dst, &v->readers, &same, err);
}

static int is_package_view(int f)
{
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
        if ((int)mfs_lgepkg_formats[k] == f)
            return 1;
    return 0;
}

/* The views of one resolved model, written out (unless they already are);
 * of another shard's model (pkg_only), only what its folder's package
 * needs, beside the views as a package-only view is. */
static void place_views(batch *b, item *it, mfs_batch_result *r)
{
    it->rep.ok = 1;
    if (r->have_report) {
        it->rep.stats = r->rep.stats;
        it->rep.deps = r->rep.deps; /* taken over */
        memset(&r->rep.deps, 0, sizeof r->rep.deps);
        snprintf(it->rep.repairs, sizeof it->rep.repairs, "%s", r->rep.repairs);
    }
    if (mfs_batch_mkdirs(it->outdir) < 0) {
        snprintf(it->rep.error, MFS_ERR_MAX, "%s: %s", it->outdir, strerror(errno));
        it->rep.ok = 0;
        it->state = MFS_BATCH_FAILED;
        return;
    }
    int all = 1;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job_formats(b) & (1u << f)))
            continue;
        mfs_fmt_result *fr = &it->rep.fmt[f];
        const mfs_batch_view *v = &r->view[f];
        const char *name = mfs_format_get((mfs_format)f)->name;
        if (r->have_report)
            snprintf(fr->note, sizeof fr->note, "%s", r->rep.fmt[f].note);
        if (!v->ok) {
            snprintf(fr->error, sizeof fr->error, "%s", v->error);
            all &= mfs_settings_not_shown(v->error); /* left out by formats =: no failure */
            continue;
        }
        fr->size = v->size;
        mfs_err err;
        mfs_err_clear(&err);
        int same = 0, rc;
        char dst[PATH_MAX];
        if ((b->formats & (1u << f)) && !it->pkg_only) {
            snprintf(dst, sizeof dst, "%s/%s.%s", it->outdir, it->p->base, name);
            rc = mfs_batch_write_hit(&v->hit, dst, &v->readers, &same, &err);
        } else if (!(b->formats & MFS_FMT_LGEPKG_BIT) || !is_package_view(f)) {
            fr->ok = 1; /* another shard's view: its shard writes it */
            continue;
        } else {
            snprintf(dst, sizeof dst, "%s/.meshfs-*/%s", it->outdir, name);
            rc = pkg_view(it, v, name, &err);
        }
        if (rc < 0) {
            char q[PATH_MAX + 64];
            snprintf(fr->error, sizeof fr->error, "%s: %s", mfs_batch_quote(dst, q, sizeof q), err.msg);
            all = 0;
            continue;
        }
        fr->ok = 1;
        if ((b->formats & (1u << f)) && !it->pkg_only) {
            pthread_mutex_lock(&b->lock);
            if (same)
                b->unchanged++;
            else
                b->written++;
            pthread_mutex_unlock(&b->lock);
        }
    }
    if (!all && it->state != MFS_BATCH_NO_MESH)
        it->state = MFS_BATCH_FAILED;
    it->done_ok = all;
}

/* The referenced files the model's import found missing, and what it
 * repaired to read the model, as warnings on stderr (the run's own and
 * the cached run's alike: the report carries both), like the naming
 * notes. */
static void say_missing(const item *it)
{
    const mfs_deps *d = &it->rep.deps;
    for (uint32_t i = 0; i < d->n; i++) {
        if (!mfs_input_said(d->v, d->n, i))
            continue;
        char q[PATH_MAX + 64], msg[PATH_MAX + 64];
        mfs_input_warning(&d->v[i], msg, sizeof msg);
        fprintf(stderr, "meshfs-convert: warning: %s: %s\n",
                mfs_batch_quote(it->p->shown, q, sizeof q), msg);
    }
    if (it->rep.ok && it->rep.repairs[0]) { /* what the importer repaired, kept with the report */
        char q[PATH_MAX + 64];
        fprintf(stderr, "meshfs-convert: warning: %s: %s\n", mfs_batch_quote(it->p->shown, q, sizeof q),
                it->rep.repairs);
    }
}

static mfs_batch_state each(void *ctx, size_t i, mfs_batch_result *r)
{
    batch *b = ctx;
    item *it = &b->v[i];
    if (!r) {
        snprintf(it->rep.error, MFS_ERR_MAX, "%s", it->p->refused);
        it->done_ok = -1;
        it->state = MFS_BATCH_FAILED;
    } else {
        it->state = mfs_batch_state_of(r);
        it->remembered = r->remembered;
        place_views(b, it, r);
    }
    if (it->pkg_only)
        return it->state; /* its own shard says how it went */
    pthread_mutex_lock(&b->lock);
    say_missing(it);
    pthread_mutex_unlock(&b->lock);
    if (!b->tty && !b->quiet) {
        char q[PATH_MAX + 64];
        pthread_mutex_lock(&b->lock);
        mfs_batch_quote(it->p->shown, q, sizeof q);
        if (it->done_ok == 1)
            printf("%s %s\n", it->state == MFS_BATCH_CONVERTED ? "ok" : "up to date", q);
        else if (it->state == MFS_BATCH_NO_MESH)
            printf("no views %s: %s\n", q, MFS_SCENE_NO_MESH);
        else
            printf("FAILED %s: %s\n", q, first_error(b, it));
        fflush(stdout);
        pthread_mutex_unlock(&b->lock);
    }
    return it->state;
}

/* --copy-other: everything else the mount shows, as `cp -r` of it gives. */
static size_t copy_other(batch *b)
{
    size_t failed = 0;
    for (size_t i = 0; i < b->plan.nother; i++) {
        const mfs_plan_other *o = &b->plan.other[i];
        /* a file or link is copied by the shard its path is in; every
         * shard makes the folders (the same mkdir, harmless) */
        if (o->kind != MFS_PLAN_DIR && !mfs_shard_has(&b->shard, o->dst))
            continue;
        char *dst = join(b->out_root, o->dst);
        mfs_err err;
        mfs_err_clear(&err);
        int same = 0, rc;
        if (o->kind == MFS_PLAN_DIR)
            rc = mfs_batch_mkdirs(dst) < 0 ? mfs_errf(&err, "%s", strerror(errno)) : 0;
        else if (o->kind == MFS_PLAN_FILE)
            rc = mfs_batch_copy_file(o->src, dst, &same, &err);
        else
            rc = mfs_batch_make_link(o->target, dst, &same, &err);
        if (rc < 0) {
            char q[PATH_MAX + 64], q2[PATH_MAX + 64];
            fprintf(stderr, "meshfs-convert: %s -> %s: %s\n", mfs_batch_quote(o->src, q, sizeof q),
                    mfs_batch_quote(dst, q2, sizeof q2), err.msg);
            failed++;
        } else if (o->kind != MFS_PLAN_DIR) {
            if (same)
                b->unchanged++;
            else
                b->written++;
        }
        free(dst);
    }
    return failed;
}

/* Which shard writes an output folder's package: the one its path (relative
 * to OUTDIR, "" for OUTDIR itself) is in, whichever shards its models are
 * in (docs/cache.md, "Sharding"). */
static int owns_package(const batch *b, const item *it)
{
    return mfs_shard_has(&b->shard, it->p->outdir);
}

/* Every output folder's game_resources.lgepkg, from the views just written
 * (convert_lgepkg.c); then the views made only for it are removed.
 * Returns the number of packages not written. */
static size_t write_packages(const batch *b)
{
    pkg_input *in = calloc(b->n ? b->n : 1, sizeof *in);
    char **paths = calloc(b->n * MFS_LGEPKG_CHUNKS + 1, sizeof *paths);
    char **srcdirs = calloc(b->n + 1, sizeof *srcdirs);
    if (!in || !paths || !srcdirs)
        die("%s", "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        const item *it = &b->v[i];
        if (it->done_ok < 0)
            continue; /* not a model with views (naming rule, missing input) */
        if (!owns_package(b, it))
            continue; /* its folder's package is another shard's */
        pkg_input *p = &in[n];
        char *slash = strrchr(it->p->model, '/');
        char *rel = slash ? strndup(it->p->model, (size_t)(slash - it->p->model)) : xstrdup("");
        srcdirs[n] = join(it->p->root, rel);
        free(rel);
        *p = (pkg_input){.outdir = it->outdir, .srcdir = srcdirs[n], .base = it->p->base,
                         .model = it->p->model, .why = first_error(b, it)};
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
            int f = mfs_lgepkg_formats[k];
            const char *ext = mfs_format_get((mfs_format)f)->name;
            if (!it->rep.ok || !it->rep.fmt[f].ok)
                continue;
            char path[PATH_MAX];
            if ((b->formats & (1u << f)) && !it->pkg_only)
                snprintf(path, sizeof path, "%s/%s.%s", it->outdir, it->p->base, ext);
            else
                snprintf(path, sizeof path, "%s/%s", it->pkg_tmp ? it->pkg_tmp : "", ext);
            p->view[k] = paths[n * MFS_LGEPKG_CHUNKS + k] = xstrdup(path);
        }
        n++;
    }
    size_t failed = mfs_convert_packages(in, n, b->lgepkg_name, b->lgepkg_version,
                                         b->lowercase_names, b->quiet || b->tty ? NULL : stdout);
    /* the last made first: each is then found near the head of the
     * noted names (mfs_batch_tmp_forget) */
    for (size_t i = b->n; i-- > 0;) {
        const item *it = &b->v[i];
        if (!it->pkg_tmp)
            continue;
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", it->pkg_tmp,
                     mfs_format_get(mfs_lgepkg_formats[k])->name);
            unlink(path);
        }
        rmdir(it->pkg_tmp);
        mfs_batch_tmp_forget(it->pkg_tmp);
    }
    for (size_t i = 0; i < b->n * MFS_LGEPKG_CHUNKS; i++)
        free(paths[i]);
    for (size_t i = 0; i < n; i++)
        free(srcdirs[i]);
    free(paths);
    free(srcdirs);
    free(in);
    return failed;
}

/* --report FILE, opened before any conversion (once the cache is open,
 * so that a run that cannot start leaves an earlier report alone): a
 * path that cannot be written is a usage error then, not a message after
 * a long run that still exited 0.  Its folder is made as OUTDIR's are,
 * so a report inside an OUTDIR not made yet (-o build --report
 * build/r.json) works as it did when it was written last.  A regular
 * file (or a new one) is written to a temporary name beside it and
 * renamed over it once complete, as the views are: a report that could
 * not be written whole (a full disk) leaves the earlier one, not a torn
 * one.  Anything else (/dev/stdout, a FIFO, a link) is written in place.
 * NULL (said) if it cannot be opened. */
typedef struct report_out {
    FILE *f;
    char tmp[PATH_MAX]; /* "" when written in place */
} report_out;

static int report_tmp(const char *path, report_out *r)
{
    const char *slash = strrchr(path, '/');
    if (snprintf(r->tmp, sizeof r->tmp, "%.*s.meshfs-tmp-XXXXXX", slash ? (int)(slash - path + 1) : 0,
                 path) >= (int)sizeof r->tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mfs_batch_mkstemp(r->tmp);
    if (fd < 0)
        return -1;
    if (fchmod(fd, mfs_batch_file_mode()) < 0 || !(r->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(r->tmp);
        mfs_batch_tmp_forget(r->tmp);
        errno = e;
        return -1;
    }
    return 0;
}

static int open_report(const char *path, report_out *r)
{
    r->tmp[0] = '\0';
    r->f = NULL;
    size_t len = strlen(path);
    /* what fopen refuses at once, refused at once: no name, or a folder's */
    if (!len || path[len - 1] == '/') {
        fprintf(stderr, "meshfs-convert: --report '%s': %s\n", path, strerror(len ? EISDIR : ENOENT));
        return -1;
    }
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mfs_batch_mkdirs(dir); /* if it fails, the open says why */
    }
    free(dir);
    struct stat st;
    int in_place = lstat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (in_place ? !(r->f = fopen(path, "we")) : report_tmp(path, r) < 0) {
        fprintf(stderr, "meshfs-convert: --report '%s': %s\n", path, strerror(errno));
        r->tmp[0] = '\0';
        return -1;
    }
    return 0;
}

static const char *state_name(mfs_batch_state st)
{
    return st == MFS_BATCH_CONVERTED    ? "converted"
           : st == MFS_BATCH_UP_TO_DATE ? "up to date"
           : st == MFS_BATCH_NO_MESH    ? "no mesh"
                                        : "failed";
}

/* Writes and closes the report; -1 (said on stderr) if it could not. */
static int write_report(const batch *b, report_out *r, const char *path)
{
    FILE *f = r->f;
    for (size_t i = 0; i < b->n; i++) {
        const item *it = &b->v[i];
        const mfs_stats *st = &it->rep.stats;
        if (it->pkg_only)
            continue; /* its own shard's report has it */
        fputs("{\"model\":", f);
        mfs_json_str(f, it->p->model);
        fputs(",\"root\":", f);
        mfs_json_str(f, it->p->root);
        fprintf(f, ",\"ok\":%s,\"state\":\"%s\",", it->done_ok == 1 ? "true" : "false",
                state_name(it->state));
        fprintf(f, "\"remembered\":%s,\"error\":", it->remembered ? "true" : "false");
        mfs_json_str(f, first_error(b, it));
        fprintf(f, ",\"meshes\":%u,\"nodes\":%u,\"bones\":%u,\"animations\":%u,\"vertices\":%llu,"
                   "\"triangles\":%llu,\"faces\":%llu,\"placed_triangles\":%llu,\"placed_faces\":%llu,\"min\":[%.9g,%.9g,%.9g],\"max\":[%.9g,%.9g,%.9g],\"outputs\":{",
                st->meshes, st->nodes, st->bones, st->animations, (unsigned long long)st->vertices,
                (unsigned long long)st->triangles, (unsigned long long)st->faces,
                (unsigned long long)st->placed_triangles, (unsigned long long)st->placed_faces, st->min[0], st->min[1], st->min[2], st->max[0],
                st->max[1], st->max[2]);
        int first = 1;
        for (int fm = 0; fm < MFS_FMT_COUNT; fm++) {
            if (!(b->formats & (1u << fm)))
                continue;
            const char *name = mfs_format_get((mfs_format)fm)->name;
            fprintf(f, "%s\"%s\":{\"ok\":%s,\"size\":%llu,\"path\":", first ? "" : ",", name,
                    it->rep.fmt[fm].ok ? "true" : "false", (unsigned long long)it->rep.fmt[fm].size);
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s.%s", it->outdir, it->p->base, name);
            mfs_json_str(f, p);
            fputs(",\"error\":", f);
            mfs_json_str(f, it->rep.fmt[fm].error);
            fputs(",\"note\":", f); /* written, with a remark (.tex: why the fallback) */
            mfs_json_str(f, it->rep.fmt[fm].note);
            fputc('}', f);
            first = 0;
        }
        fputs("},\"deps\":[", f);
        int any = 0;
        for (uint32_t d = 0; d < it->rep.deps.n; d++) {
            if (it->rep.deps.v[d].kind != MFS_DEP_FILE)
                continue; /* the files read; paths only looked at are not */
            if (any++)
                fputc(',', f);
            mfs_json_str(f, it->rep.deps.v[d].path);
        }
        fputs("],\"warnings\":[", f);
        for (size_t w = 0; w < it->p->nwarnings; w++) {
            if (w)
                fputc(',', f);
            mfs_json_str(f, it->p->warnings[w]);
        }
        uint32_t w = (uint32_t)it->p->nwarnings;
        for (uint32_t d = 0; d < it->rep.deps.n; d++) {
            if (!mfs_input_said(it->rep.deps.v, it->rep.deps.n, d))
                continue;
            char msg[PATH_MAX + 64];
            mfs_input_warning(&it->rep.deps.v[d], msg, sizeof msg);
            if (w++)
                fputc(',', f);
            mfs_json_str(f, msg);
        }
        if (it->rep.ok && it->rep.repairs[0]) {
            if (w++)
                fputc(',', f);
            mfs_json_str(f, it->rep.repairs);
        }
        fputs("]}\n", f);
    }
    for (size_t i = 0; i < b->plan.nnotes; i++) {
        fputs("{\"warning\":", f);
        mfs_json_str(f, b->plan.notes[i].text);
        fputs(",\"path\":", f);
        mfs_json_str(f, b->plan.notes[i].path);
        fputs("}\n", f);
    }
    int bad = ferror(f);
    errno = 0;
    int e = fclose(f) != 0 || bad ? (errno ? errno : EIO) : 0;
    /* fclose's errno when it failed; a write that failed earlier left
     * only the stream's error flag */
    if (!e && r->tmp[0] && rename(r->tmp, path) < 0)
        e = errno;
    if (r->tmp[0]) {
        if (e)
            unlink(r->tmp);
        mfs_batch_tmp_forget(r->tmp);
    }
    if (e) {
        fprintf(stderr, "meshfs-convert: --report '%s': %s%s\n", path, strerror(e),
                r->tmp[0] ? " (not written; an earlier report is left as it was)" : "");
        return -1;
    }
    return 0;
}

/* What -j, --timeout and --memory may ask (the same bounds as the mount's
 * convert_jobs, convert_timeout and convert_memory). */
#define MAX_JOBS 64
#define MAX_TIMEOUT_S (7 * 24 * 3600.0)
#define MIN_MEMORY (64ull << 20)

static void usage(FILE *f)
{
    fputs("usage: meshfs-convert [options] INPUT... [-o OUTDIR]\n"
          "Converts model files, and every model under folders (recursively), into engine\n"
          "formats, mirroring the folder layout under OUTDIR (default: current folder).\n"
          "Views come from the cache the meshfs mount uses: a model whose inputs have not\n"
          "changed since it was converted (here, by a mount or by meshfs-cache warm) is\n"
          "not converted again, and an output file that already holds its bytes is left\n"
          "alone (its mtime too).\n\n"
          "  -o, --output DIR        where converted files go\n"
          "  -f, --formats LIST      fmd,fmi,gmf,dem,vrt,tri,sph,tex and lgepkg, with ','\n"
          "                          ':' or '+' between them (one\n"
          "                          game_resources.lgepkg per output folder with models;\n"
          "                          it needs vrt,tri,tex,sph, made even when not listed)\n"
          "                          (default: all = every one of them)\n"
          "  -j, --jobs N            parallel conversions, 1 to 64 (default: number of\n"
          "                          CPUs, at most 64)\n"
          "      --fmd-raw           fmd: FMC's raw layout, node matrices not applied\n"
          "                          (default: placed geometry, as FGE draws it;\n"
          "                          --pretrans is accepted and changes nothing)\n"
          "      --vrt-layout LAYOUT vrt: skinned (64-byte vertex, default) or plain\n"
          "      --lowercase-names   write every output name in lowercase\n"
          "      --lgepkg-name NAME  game_resources.lgepkg package name (default game_resources)\n"
          "      --lgepkg-version V  its version string (default 1.0)\n"
          "      --fmi-textures      fmi: texture names instead of UNKNOWN\n"
          "      --reverse-winding   tri: reverse every triangle\n"
          "      --source-frame      keep the importer's raw coordinates (no axis/unit fix)\n"
          "      --importer NAME     auto (native glTF/OBJ parsers, assimp for the rest;\n"
          "                          default) or assimp (assimp for every format)\n"
          "      --timeout SECONDS   per model (default 60)\n"
          "      --memory SIZE       address-space cap per conversion (default 4G)\n"
          "      --worker-user USER  when run as root, the user conversions run as\n"
          "                          (default nobody; docs/security.md)\n"
          "      --cache-dir DIR     the cache (default: the mount's,\n"
          "                          ${XDG_CACHE_HOME:-$HOME/.cache}/meshfs, or\n"
          "                          /var/cache/meshfs for root)\n"
          "      --no-cache          convert everything, store nothing (a private cache\n"
          "                          in TMPDIR holding the models in flight)\n"
          "      --remote URL        a shared cache over HTTP (WebDAV): fetch views from it\n"
          "                          before converting, upload what was converted\n"
          "                          (docs/cache.md, \"Remote tier\")\n"
          "      --remote-timeout-ms MS      to connect, then for the answer to begin (default 150)\n"
          "      --remote-data-timeout-s S   a remote read's whole transfer (default 5)\n"
          "      --remote-read-only  never upload\n"
          "      --remote-token-file FILE    bearer token (a file only its owner may read)\n"
          "      --remote-owed-max SIZE  the list of uploads owed after an outage (default 64M)\n"
          "      --copy-other        also copy every other file, folder and symbolic link\n"
          "                          the mount shows (textures, sounds, configs; hidden\n"
          "                          names too; links as links), so OUTDIR equals\n"
          "                          `cp -r` of a mount with -o hide_sources\n"
          "      --report FILE       write one JSON line per model\n"
          "      --shard K/N         only the models in shard K of N (K from 1 to N): those\n"
          "                          whose path relative to INPUT has XXH3-64 mod N = K-1, so\n"
          "                          N runs (a CI matrix, a Slurm array, an indexed Job)\n"
          "                          convert the inputs once between them; a folder's\n"
          "                          package is written by the shard of its path under\n"
          "                          OUTDIR (docs/cache.md, \"Sharding\")\n"
          "  -q, --quiet             no per-model lines, no progress line, no summary\n"
          "                          unless something failed\n"
          "  -h, --help              this text\n"
          "  -V, --version           meshfs's, the formats' and the libraries' versions\n"
          "On a terminal, a progress line (done/total, models/s, ETA, current file) replaces\n"
          "the per-model lines.  The last line is the summary:\n"
          "  meshfs-convert: N converted, M up to date, K failed\n"
          "A failure is remembered in the cache, as the mount remembers it: the model is\n"
          "not tried again until it (or a file it reads) is touched or changed, or a run\n"
          "gives it more --timeout or --memory.\n"
          "Exit status: 0 if every model converted to every format, 1 otherwise, 2 on usage errors.\n",
          f);
}

/* --remote and its companions (docs/cache.md, "Remote tier") */
static mfs_remote_cfg remote_cfg;
static char *remote_token;

static void remote_log(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "meshfs-convert: %s\n", msg);
}

static void parse_args(int argc, char **argv, batch *b, const char **report, int *jobs)
{
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'},  {"formats", required_argument, 0, 'f'},
        {"jobs", required_argument, 0, 'j'},    {"pretrans", no_argument, 0, 1},
        {"fmi-textures", no_argument, 0, 2},    {"reverse-winding", no_argument, 0, 3},
        {"source-frame", no_argument, 0, 4},    {"timeout", required_argument, 0, 5},
        {"memory", required_argument, 0, 6},    {"report", required_argument, 0, 7},
        {"quiet", no_argument, 0, 'q'},         {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},       {"fmd-raw", no_argument, 0, 8},
        {"vrt-layout", required_argument, 0, 9}, {"lowercase-names", no_argument, 0, 10},
        {"lgepkg-name", required_argument, 0, 11}, {"lgepkg-version", required_argument, 0, 12},
        {"worker-user", required_argument, 0, 13}, {"importer", required_argument, 0, 14},
        {"cache-dir", required_argument, 0, 15}, {"no-cache", no_argument, 0, 16},
        {"copy-other", no_argument, 0, 17},
        {"remote", required_argument, 0, 18}, {"remote-timeout-ms", required_argument, 0, 19},
        {"remote-data-timeout-s", required_argument, 0, 20},
        {"remote-read-only", no_argument, 0, 21}, {"remote-token-file", required_argument, 0, 22},
        {"shard", required_argument, 0, 23}, {"remote-owed-max", required_argument, 0, 24},
        {0, 0, 0, 0}};
    int c;
    mfs_err err;
    while ((c = getopt_long(argc, argv, "o:f:j:qhV", longs, NULL)) != -1) {
        switch (c) {
        case 'o':
            /* "" names no folder: every model failed, with messages
             * naming neither the option nor a path (": No such file") */
            if (!optarg[0])
                die("%s", "--output: empty path (give a folder; . for the current one)");
            b->out_root = optarg;
            break;
        case 'f':
            if (mfs_format_parse_list(optarg, &b->formats, &err) < 0) {
                fprintf(stderr, "meshfs-convert: --formats=%s: %s\n", optarg, err.msg);
                exit(2);
            }
            break;
        case 'j': {
            unsigned n;
            if (mfs_optv_count("--jobs", optarg, 1, MAX_JOBS, &n, &err) < 0)
                die("%s", err.msg);
            *jobs = (int)n;
            break;
        }
        case 1: b->opts.pretrans = 1; break;
        case 2: b->opts.fmi_textures = 1; break;
        case 3: b->opts.reverse_winding = 1; break;
        case 4: b->opts.source_frame = 1; break;
        case 5:
            if (mfs_optv_seconds("--timeout", optarg, MAX_TIMEOUT_S, &b->limits.timeout_s, &err) < 0)
                die("%s", err.msg);
            break;
        case 6:
            if (mfs_optv_size("--memory", optarg, MIN_MEMORY, UINT64_MAX, &b->limits.memory, &err) < 0)
                die("%s", err.msg);
            break;
        case 7: *report = optarg; break;
        case 8: b->opts.fmd_raw = 1; break;
        case 9:
            if (mfs_options_set_vrt_layout(&b->opts, optarg, &err) < 0)
                die("--vrt-layout: %s", err.msg);
            break;
        case 10: b->lowercase_names = 1; break;
        case 11:
            if (!optarg[0] || strlen(optarg) > 19)
                die("--lgepkg-name '%s': must be 1 to 19 bytes (PackageHeader holds 20 with its NUL)", optarg);
            b->lgepkg_name = optarg;
            break;
        case 12:
            if (strlen(optarg) > 19)
                die("--lgepkg-version '%s': at most 19 bytes (PackageHeader holds 20 with its NUL)", optarg);
            b->lgepkg_version = optarg;
            break;
        case 14:
            if (mfs_importer_parse(optarg, &b->opts.importer, &err) < 0)
                die("--importer: %s", err.msg);
            break;
        case 13:
            if (mfs_worker_user_resolve(optarg, &b->worker_user, &err) < 0)
                die("--worker-user: %s", err.msg);
            break;
        case 15:
            if (!optarg[0])
                die("%s", "--cache-dir: empty path");
            b->cache_dir = optarg;
            break;
        case 16: b->no_cache = 1; break;
        case 17: b->copy_other = 1; break;
        case 18:
            if (mfs_remote_check_url("--remote", optarg, &err) < 0)
                die("%s", err.msg);
            remote_cfg.url = optarg;
            break;
        case 19:
            if (mfs_optv_count("--remote-timeout-ms", optarg, 1, 600000, &remote_cfg.timeout_ms,
                               &err) < 0)
                die("%s", err.msg);
            break;
        case 20:
            if (mfs_optv_count("--remote-data-timeout-s", optarg, 1, 3600,
                               &remote_cfg.data_timeout_s, &err) < 0)
                die("%s", err.msg);
            break;
        case 21: remote_cfg.read_only = 1; break;
        case 22:
            if (mfs_remote_read_token(optarg, &remote_token, &err) < 0)
                die("%s", err.msg);
            remote_cfg.token = remote_token;
            break;
        case 23:
            if (mfs_shard_parse("--shard", optarg, &b->shard, &err) < 0)
                die("%s", err.msg);
            break;
        case 24:
            if (mfs_optv_size("--remote-owed-max", optarg, 1, UINT64_MAX, &remote_cfg.owed_max,
                              &err) < 0)
                die("%s", err.msg);
            break;
        case 'q': b->quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': mfs_version_print(stdout, "meshfs-convert", MFS_VERSION_WORKER_LIBS); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind >= argc) {
        usage(stderr);
        /* the reason last, where the terminal leaves it */
        fputs("meshfs-convert: no INPUT given (a model file, or a folder of them)\n", stderr);
        exit(2);
    }
    if (*jobs < 1)
        *jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (*jobs < 1)
        *jobs = 1;
    if (*jobs > MAX_JOBS)
        *jobs = MAX_JOBS;
}

static void batch_free(batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        item *it = &b->v[i];
        mfs_report_free(&it->rep);
        free(it->outdir);
        free(it->pkg_tmp);
    }
    free(b->v);
    if (b->engine)
        mfs_batch_close(b->engine);
    mfs_plan_free(&b->plan);
    /* the fork server stopped and reaped, so this process's children's
     * resource usage (bench-convert's wait4) includes every conversion */
    mfs_spawner_close(b->spawner);
    b->spawner = NULL;
}

/* Nothing to convert: which inputs held no model, so status 1 has its
 * reason. */
static void no_model_found(char **inputs, int n)
{
    fputs("meshfs-convert: no model found in", stderr);
    for (int i = 0; i < n; i++) {
        char q[PATH_MAX + 64];
        fprintf(stderr, " %s", mfs_batch_quote(inputs[i], q, sizeof q));
    }
    fputs(" (a model is a file with a model extension, such as .obj, .fbx or .gltf)\n", stderr);
}

/* --shard: what this shard resolves.  Its models (by their path relative
 * to their INPUT, as in their keys), and with packages on, every model of
 * a folder whose package it writes (owns_package), whatever shard the
 * model is in: the package must hold the whole folder, and its models'
 * views come from the cache when their own shards put them there first,
 * else they are converted here too.  Returns how many models the inputs
 * hold in all. */
static int shard_keeps(void *ctx, const mfs_plan_item *it)
{
    const batch *b = ctx;
    return mfs_shard_has(&b->shard, it->model) ||
           ((b->formats & MFS_FMT_LGEPKG_BIT) && !it->refused &&
            mfs_shard_has(&b->shard, it->outdir));
}

static size_t shard_plan(batch *b)
{
    if (!b->shard.n)
        return b->plan.n;
    size_t all = b->plan.n;
    mfs_plan_keep(&b->plan, shard_keeps, b);
    return all;
}

/* 1 if a and b name the same folder. */
static int same_folder(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && S_ISDIR(sa.st_mode) &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* OUTDIR may not be an INPUT folder, nor the folder of an INPUT file: the
 * views would land beside the models, and the next run would name the
 * models' views after the views it finds there (naming.md), so every run
 * would add files.  An OUTDIR inside an INPUT folder is fine: the walk
 * does not enter it (mfs_plan_skip_folder). */
static void check_outdir(const char *out, char **inputs, int n)
{
    for (int i = 0; i < n; i++) {
        struct stat st;
        char *dir = xstrdup(inputs[i]), *slash = strrchr(dir, '/');
        if (stat(inputs[i], &st) == 0 && !S_ISDIR(st.st_mode)) {
            if (slash)
                slash[slash == dir] = '\0';
            else
                snprintf(dir, strlen(dir) + 1, ".");
        }
        int same = same_folder(out, dir);
        free(dir);
        if (same) {
            char q[PATH_MAX + 64], q2[PATH_MAX + 64];
            fprintf(stderr, "meshfs-convert: OUTDIR %s is %s %s: the views would be written "
                            "beside the models, and a second run would take them for real "
                            "files; give another folder (one inside INPUT is fine: it is "
                            "never read as input)\n",
                    mfs_batch_quote(out, q, sizeof q),
                    S_ISDIR(st.st_mode) ? "the INPUT folder" : "the folder of INPUT",
                    mfs_batch_quote(inputs[i], q2, sizeof q2));
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    batch b;
    memset(&b, 0, sizeof b);
    b.out_root = ".";
    b.formats = MFS_FMT_DEFAULT;
    b.lgepkg_name = "game_resources";
    b.lgepkg_version = "1.0";
    mfs_options_default(&b.opts);
    mfs_limits_default(&b.limits);
    pthread_mutex_init(&b.lock, NULL);
    const char *report = NULL;
    int jobs = 0;
    parse_args(argc, argv, &b, &report, &jobs);
    if (b.no_cache && b.cache_dir)
        die("%s", "--no-cache and --cache-dir: choose one");
    mfs_nofile_raise(); /* -j workers, each with its pipes and outputs */
    mfs_err err;
    /* before any thread: a ^C leaves no temporary file in OUTDIR */
    if (mfs_batch_clean_on_signal(&err) < 0)
        die("%s", err.msg);
    if (mfs_spawner_open(&b.spawner, &b.worker_user, &err) < 0 ||
        !mfs_spawner_extensions(b.spawner, &err))
        die("%s", err.msg);
    const char *sandbox = mfs_spawner_sandbox_warning(b.spawner);
    if (sandbox)
        fprintf(stderr, "meshfs-convert: warning: %s\n", sandbox);
    /* the progress line only where someone watches it */
    b.tty = isatty(2) && isatty(1) && !b.quiet;
    mfs_plan_init(&b.plan, (b.lowercase_names ? MFS_PLAN_LOWERCASE : 0) |
                               (b.copy_other ? MFS_PLAN_MOUNT_VIEW : 0),
                  "meshfs-convert", stderr, mfs_spawner_extensions(b.spawner, NULL));
    check_outdir(b.out_root, argv + optind, argc - optind);
    mfs_plan_skip_folder(&b.plan, b.out_root);
    for (int i = optind; i < argc; i++)
        mfs_plan_add_input(&b.plan, argv[i]);
    mfs_plan_settle(&b.plan);
    size_t planned = shard_plan(&b);
    b.n = b.plan.n;
    b.v = calloc(b.n ? b.n : 1, sizeof *b.v);
    if (!b.v)
        die("%s", "out of memory");
    for (size_t i = 0; i < b.n; i++) {
        b.v[i].p = &b.plan.v[i];
        b.v[i].outdir = join(b.out_root, b.plan.v[i].outdir);
        b.v[i].pkg_only = !mfs_shard_has(&b.shard, b.plan.v[i].model);
    }

    if (!remote_cfg.url && (remote_cfg.timeout_ms || remote_cfg.data_timeout_s ||
                            remote_cfg.read_only || remote_cfg.token || remote_cfg.owed_max))
        die("%s", "--remote-*: given without --remote URL");
    remote_cfg.log = remote_log;
    mfs_batch_cfg cfg = {.cache_dir = b.cache_dir, .no_cache = b.no_cache, .formats = b.formats,
                         .opts = b.opts, .limits = b.limits,
                         .remote = remote_cfg.url ? &remote_cfg : NULL, .spawner = b.spawner};
    if (mfs_batch_open(&cfg, &b.engine, &err) < 0) {
        fprintf(stderr, "meshfs-convert: %s\n", err.msg); /* the cache names itself */
        batch_free(&b);
        return 1;
    }
    report_out report_file = {NULL, ""};
    if (report && open_report(report, &report_file) < 0) {
        batch_free(&b);
        return 2;
    }
    size_t copy_failed = b.copy_other ? copy_other(&b) : 0;
    mfs_batch_run run = {.b = b.engine, .plan = &b.plan, .jobs = jobs, .each = each, .ctx = &b,
                         .progress = b.tty ? stderr : NULL};
    mfs_batch_run_all(&run);
    size_t pkg_only = 0; /* other shards' models: counted by their own */
    for (size_t i = 0; i < b.n; i++) {
        const item *it = &b.v[i];
        if (!it->pkg_only)
            continue;
        pkg_only++;
        if (it->state == MFS_BATCH_CONVERTED)
            run.converted--;
        else if (it->state == MFS_BATCH_UP_TO_DATE)
            run.up_to_date--;
        else if (it->state == MFS_BATCH_NO_MESH)
            run.no_mesh--;
        else
            run.failed--;
    }

    size_t pkg_failed = b.formats & MFS_FMT_LGEPKG_BIT ? write_packages(&b) : 0;
    int report_failed = report && write_report(&b, &report_file, report) < 0;
    if (run.failed) {
        fprintf(stderr, "meshfs-convert: %zu of %zu models failed:\n", run.failed, b.n - pkg_only);
        for (size_t i = 0; i < b.n; i++) {
            const item *it = &b.v[i];
            if (it->done_ok == 1 || it->pkg_only || it->state == MFS_BATCH_NO_MESH)
                continue;
            char q[PATH_MAX + 64];
            fprintf(stderr, "  %s: %s%s\n", mfs_batch_quote(it->p->shown, q, sizeof q),
                    first_error(&b, it),
                    it->remembered ? " (remembered from an earlier conversion: touch the model "
                                     "or a file it reads to try again)" : "");
        }
    }
    size_t unread = b.plan.unread;
    if (planned == 0) /* status 1 with no line saying why, before */
        no_model_found(argv + optind, argc - optind);
    if (unread)
        fprintf(stderr, "meshfs-convert: %zu folder%s could not be walked (said above); the "
                        "models in them were not converted\n", unread, unread == 1 ? "" : "s");
    if (!b.quiet || run.failed || copy_failed || pkg_failed || report_failed || unread) {
        fprintf(stderr, "meshfs-convert: %zu converted, %zu up to date, %zu failed",
                run.converted, run.up_to_date, run.failed);
        if (run.no_mesh) /* no failure: they have no views, as in a mount */
            fprintf(stderr, ", %zu without meshes", run.no_mesh);
        if (b.shard.n)
            fprintf(stderr, " (shard %u/%u: %zu of %zu models; %zu of other shards read for "
                            "the packages of this shard's folders)",
                    b.shard.k, b.shard.n, b.n - pkg_only, planned, pkg_only);
        fputc('\n', stderr);
    }
    batch_free(&b);
    return run.failed || copy_failed || pkg_failed || report_failed || unread || planned == 0 ? 1
                                                                                                : 0;
}

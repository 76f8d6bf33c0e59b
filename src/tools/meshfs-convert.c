/* meshfs-convert: the mount's views in batch, without a mount.
 *
 * The batch engine (include/meshfs/batch.h) plans the inputs under the
 * mount's naming rule and resolves every view through the mount's
 * resolver and cache, so a second run over an unchanged tree converts
 * nothing, and a tree a mount (or `meshfs-cache warm`) has converted is up
 * to date here too.  Conversions run in meshfs-worker processes, as the
 * mount's do: a model that crashes or hangs the importer is a failed file
 * and the batch carries on.  This file is the run and the output tree;
 * convert_args.c is the command line and convert_report.c the report
 * (convert_batch.h). */
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
#include "meshfs/import.h"
#include "meshfs/rules.h"
#include "meshfs/scene.h"
#include "meshfs/settings.h"
#include "meshfs/spawner.h"
#include "meshfs/util.h"
#include "meshfs/worker.h"

#include "convert_batch.h"
#include "convert_lgepkg.h"

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

static void remote_log(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "meshfs-convert: %s\n", msg);
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

    if (!b.remote.url && (b.remote.timeout_ms || b.remote.data_timeout_s ||
                          b.remote.read_only || b.remote.token || b.remote.owed_max))
        die("%s", "--remote-*: given without --remote URL");
    b.remote.log = remote_log;
    mfs_batch_cfg cfg = {.cache_dir = b.cache_dir, .no_cache = b.no_cache, .formats = b.formats,
                         .opts = b.opts, .limits = b.limits,
                         .remote = b.remote.url ? &b.remote : NULL, .spawner = b.spawner};
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

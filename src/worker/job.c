/* One conversion, as the worker runs it: import once, write every
 * requested format into the job's private directory. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/settings.h"
#include "meshfs/worker.h"

static void fill_stats(const mfs_scene *s, mfs_stats *st)
{
    memset(st, 0, sizeof *st);
    st->meshes = s->n_meshes;
    st->nodes = s->n_nodes;
    st->animations = s->n_animations;
    st->materials = s->n_materials;
    st->vertices = mfs_scene_vertex_count(s);
    st->triangles = mfs_scene_triangle_count(s);
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        st->bones += s->meshes[i].n_bones;
        st->faces += s->meshes[i].n_faces;
    }
    /* every placed copy of a triangle mesh, and unplaced meshes once */
    int32_t *first = malloc(sizeof(int32_t) * (s->n_meshes ? s->n_meshes : 1));
    if (first)
        mfs_scene_mesh_nodes(s, first);
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++) {
            const mfs_mesh *m = &s->meshes[s->nodes[i].meshes[k]];
            if (m->prim == MFS_PRIM_TRIANGLES)
                st->placed_triangles += m->n_faces;
            st->placed_faces += m->n_faces;
        }
    for (uint32_t i = 0; first && i < s->n_meshes; i++) {
        if (first[i] >= 0)
            continue;
        if (s->meshes[i].prim == MFS_PRIM_TRIANGLES)
            st->placed_triangles += s->meshes[i].n_faces;
        st->placed_faces += s->meshes[i].n_faces;
    }
    free(first);
    if (!mfs_scene_bounds(s, 1, st->min, st->max)) {
        memset(st->min, 0, sizeof st->min);
        memset(st->max, 0, sizeof st->max);
    }
}

/* Writes one format to outdir/<name>.  The file is complete only when the
 * report says ok; the parent never uses a file the report does not vouch
 * for. */
static void write_one(const mfs_job *job, const mfs_scene *s, mfs_prepared *prep,
                      const mfs_format_info *fi, mfs_fmt_result *res)
{
    char path[4096];
    mfs_err err;
    mfs_err_clear(&err);
    snprintf(path, sizeof path, "%s/%s", job->outdir, fi->name);
    int fd = job->out_fd ? fcntl(job->out_fd[fi->id], F_DUPFD_CLOEXEC, 0)
                         : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(res->error, sizeof res->error, "%s: cannot create output: %s", fi->name, strerror(errno));
        res->transient = 1;
        return;
    }
    mfs_sink sink;
    if (mfs_sink_init_fd(&sink, fd) < 0) {
        close(fd);
        snprintf(res->error, sizeof res->error, "%s: out of memory", fi->name);
        return;
    }
    sink.limit = job->limits.output;
    int rc = fi->write(s, prep, &job->opts, &sink, &err);
    int serr = mfs_sink_finish(&sink);
    uint64_t total = sink.total;
    mfs_sink_free(&sink);
    if (close(fd) < 0 && !serr)
        serr = errno;
    /* The sink's own error comes first: a writer that noticed it reports
     * it as its failure, but a full disk is the machine's, not the model's. */
    if (serr == EFBIG) {
        snprintf(res->error, sizeof res->error, "%s: output exceeds the %llu-byte cap", fi->name,
                 (unsigned long long)job->limits.output);
    } else if (serr) {
        snprintf(res->error, sizeof res->error, "%s: writing output: %s", fi->name, strerror(serr));
        res->transient = 1;
    } else if (rc < 0) {
        /* writers may name themselves already; say it once */
        size_t nl = strlen(fi->name);
        const char *msg = err.msg;
        if (!strncmp(msg, fi->name, nl) && msg[nl] == ':' && msg[nl + 1] == ' ')
            msg += nl + 2;
        snprintf(res->error, sizeof res->error, "%s: %s", fi->name, msg);
    } else {
        res->ok = 1;
        res->size = total;
    }
    if (!res->ok && !job->out_fd)
        unlink(path); /* an out_fd's file is the parent's to remove */
}

/* Writers are pure functions of a const scene, so they run side by side:
 * on a million-triangle model the text and gzip writers are each a
 * noticeable fraction of the import, and the import itself cannot be split.
 * What several of them derive alike (the mesh of .vrt, .tri and .sph) is
 * built once, by the first to ask, in the job's mfs_prepared (formats.h).
 * Heaviest first, so the last one to start is a short one. */
static const mfs_format write_order[MFS_FMT_COUNT] = {
    MFS_FMT_DEM, MFS_FMT_FMD, MFS_FMT_GMF, MFS_FMT_TEX, MFS_FMT_VRT, MFS_FMT_TRI, MFS_FMT_SPH,
    MFS_FMT_FMI,
};

typedef struct pool {
    const mfs_job *job;
    const mfs_scene *scene;
    mfs_prepared *prep;
    mfs_report *rep;
    unsigned write;   /* the formats to write: those reported, less any
                         that formats = leaves out */
    atomic_int next;
} pool;

static void *pool_thread(void *arg)
{
    pool *p = arg;
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= MFS_FMT_COUNT)
            return NULL;
        mfs_format f = write_order[i];
        if (p->write & (1u << f))
            write_one(p->job, p->scene, p->prep, mfs_format_get(f), &p->rep->fmt[f]);
    }
}

/* Threads besides this one: one a core up to 3, never more than formats to
 * write less one, and none for a small model, whose writers take less than
 * starting a thread does (~30-55 us a thread in a fresh worker; a 400-model
 * batch of tiny files paid it on every one). */
#define SMALL_FACES 20000

static int extra_threads(const mfs_scene *s, unsigned formats)
{
    uint64_t faces = 0;
    for (uint32_t i = 0; i < s->n_meshes; i++)
        faces += s->meshes[i].n_faces;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int extra = cpus > 4 ? 3 : cpus > 1 ? (int)cpus - 1 : 0;
    int nf = __builtin_popcount(formats & MFS_FMT_ALL);
    if (extra > nf - 1)
        extra = nf > 1 ? nf - 1 : 0;
    return faces < SMALL_FACES ? 0 : extra;
}

static void write_all(const mfs_job *job, const mfs_scene *s, mfs_report *rep, unsigned write)
{
    pool p = {job, s, mfs_prepared_new(s), rep, write, 0}; /* NULL: each writer builds its own */
    int extra = extra_threads(s, write);
    pthread_t th[3];
    int started = 0;
    for (int i = 0; i < extra; i++)
        if (pthread_create(&th[started], NULL, pool_thread, &p) == 0)
            started++;
    pool_thread(&p);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    mfs_prepared_free(p.prep);
}

/* The formats that `formats =` shows (all when no file sets it); each one
 * reported that it leaves out gets the MFS_SETTINGS_NOT_SHOWN failure,
 * naming the file and line, and is not written. */
static unsigned not_shown(const mfs_settings *st, mfs_report *rep)
{
    if (!(st->set & MFS_SET_FORMATS))
        return MFS_FMT_ALL;
    const mfs_setting_origin *og = &st->origin[__builtin_ctz(MFS_SET_FORMATS)];
    char list[128];
    mfs_format_list_text(st->formats, list, sizeof list);
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((rep->formats & (1u << f)) && !(st->formats & (1u << f)))
            snprintf(rep->fmt[f].error, sizeof rep->fmt[f].error, "%s%s:%d sets formats = %s",
                     MFS_SETTINGS_NOT_SHOWN, og->file, og->line, list);
    return st->formats & MFS_FMT_ALL;
}

int mfs_job_run(const mfs_job *job, mfs_report *rep)
{
    memset(rep, 0, sizeof *rep);
    /* What a view is made of must not depend on which other views the run
     * writes (docs/cache.md, "Keys"): the texture is searched for in every
     * run, so its files are inputs of every run, and decoded only for .tex;
     * tangents are computed in every run, since the welding compares them
     * and so they decide every view's vertices (docs/import.md). */
    mfs_import_opts io = {.source_frame = job->opts.source_frame, .importer = job->opts.importer,
                          .textures = (job->formats >> MFS_FMT_TEX) & 1,
                          .tangents = 1,
                          .model_id_known = job->model_id_known,
                          .model_dev = job->model_dev,
                          .model_ino = job->model_ino};
    /* the settings files beside the model may set per-format options for
     * it (docs/settings.md): the writers get them over the job's */
    mfs_settings *settings = malloc(sizeof *settings);
    if (settings)
        mfs_settings_init(settings);
    io.settings = settings;
    mfs_scene *s = NULL;
    mfs_err err;
    mfs_err_clear(&err);
    int imported = settings ? mfs_import(job->root, job->model, &io, &s, &rep->deps, &err)
                            : mfs_errf(&err, "out of memory");
    snprintf(rep->route, sizeof rep->route, "%s", rep->deps.route);
    if (imported < 0) {
        /* assimp turns an allocation refused by RLIMIT_AS into a plain
         * std::bad_alloc; say what it means */
        if (strstr(err.msg, "bad_alloc") || strstr(err.msg, "out of memory"))
            snprintf(rep->error, sizeof rep->error, "out of memory (limit %llu MiB): %s",
                     (unsigned long long)(job->limits.memory >> 20), err.msg);
        else
            snprintf(rep->error, sizeof rep->error, "%s", err.msg);
        free(settings);
        return 0;
    }
    mfs_job with = *job;
    mfs_settings_writer_options(settings, &with.opts);
    rep->ok = 1;
    fill_stats(s, &rep->stats);
    rep->formats = job->formats & MFS_FMT_ALL;
    unsigned write = rep->formats & not_shown(settings, rep);
    free(settings);
    write_all(&with, s, rep, write);
    mfs_fmt_result *tex = &rep->fmt[MFS_FMT_TEX];
    if ((rep->formats & (1u << MFS_FMT_TEX)) && tex->ok && s->image.note) {
        /* the mount logs it, meshfs-convert puts it in its report */
        snprintf(tex->note, sizeof tex->note, "tex: %s; wrote the 1x1 white fallback",
                 s->image.note);
    }
    /* what the importer repaired to read the model: said once, as a
     * warning, by the mount's log and meshfs-convert */
    if (s->note)
        snprintf(rep->repairs, sizeof rep->repairs, "%s", s->note);
    mfs_scene_free(s);
    return 0;
}

/* One conversion, as the worker runs it: import once, write every
 * requested format into the job's private directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    for (uint32_t i = 0; i < s->n_meshes; i++)
        st->bones += s->meshes[i].n_bones;
    if (!mfs_scene_bounds(s, st->min, st->max)) {
        memset(st->min, 0, sizeof st->min);
        memset(st->max, 0, sizeof st->max);
    }
}

/* Writes one format to outdir/<name>.  The file is complete only when the
 * report says ok; the parent never uses a file the report does not vouch
 * for. */
static void write_one(const mfs_job *job, const mfs_scene *s, const mfs_format_info *fi,
                      mfs_fmt_result *res)
{
    char path[4096];
    mfs_err err;
    mfs_err_clear(&err);
    snprintf(path, sizeof path, "%s/%s", job->outdir, fi->name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(res->error, sizeof res->error, "%s: cannot create output: %s", fi->name, strerror(errno));
        return;
    }
    mfs_sink sink;
    if (mfs_sink_init_fd(&sink, fd) < 0) {
        close(fd);
        snprintf(res->error, sizeof res->error, "%s: out of memory", fi->name);
        return;
    }
    sink.limit = job->limits.output;
    int rc = fi->write(s, &job->opts, &sink, &err);
    int serr = mfs_sink_finish(&sink);
    uint64_t total = sink.total;
    mfs_sink_free(&sink);
    if (close(fd) < 0 && !serr)
        serr = errno;
    if (rc < 0) {
        snprintf(res->error, sizeof res->error, "%s: %s", fi->name, err.msg);
    } else if (serr == EFBIG) {
        snprintf(res->error, sizeof res->error, "%s: output exceeds the %llu-byte cap", fi->name,
                 (unsigned long long)job->limits.output);
    } else if (serr) {
        snprintf(res->error, sizeof res->error, "%s: writing output: %s", fi->name, strerror(serr));
    } else {
        res->ok = 1;
        res->size = total;
    }
    if (!res->ok)
        unlink(path);
}

int mfs_job_run(const mfs_job *job, mfs_report *rep)
{
    memset(rep, 0, sizeof *rep);
    mfs_import_opts io = {.source_frame = job->opts.source_frame};
    mfs_scene *s = NULL;
    mfs_err err;
    mfs_err_clear(&err);
    if (mfs_import(job->root, job->model, &io, &s, &rep->deps, &err) < 0) {
        snprintf(rep->error, sizeof rep->error, "%s", err.msg);
        return 0;
    }
    rep->ok = 1;
    fill_stats(s, &rep->stats);
    rep->formats = job->formats & MFS_FMT_ALL;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if (rep->formats & (1u << f))
            write_one(job, s, mfs_format_get((mfs_format)f), &rep->fmt[f]);
    mfs_scene_free(s);
    return 0;
}

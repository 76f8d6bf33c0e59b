/* A job's argv (spawn_int.h). */
#include "spawn_int.h"

static void arg(argv_buf *a, const char *s)
{
    if (a->argc < 39)
        a->argv[a->argc++] = (char *)s;
    a->argv[a->argc] = NULL;
}

static void arg_num(argv_buf *a, const char *flag, unsigned long long v)
{
    if (a->used >= 8)
        return;
    snprintf(a->store[a->used], sizeof a->store[0], "%llu", v);
    arg(a, flag);
    arg(a, a->store[a->used++]);
}

/* id: whom the worker must switch to (we run as root), or NULL. */
void mfs_sp_build_argv(argv_buf *a, const char *worker, const mfs_job *job, char *formats,
                       size_t fsz, const mfs_worker_ident *id)
{
    size_t n = 0;
    formats[0] = '\0';
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if (job->formats & (1u << f))
            n += (size_t)snprintf(formats + n, fsz - n, "%s%s", n ? "," : "", mfs_format_get((mfs_format)f)->name);
    memset(a, 0, sizeof *a);
    arg(a, worker);
    arg(a, "--root");
    arg(a, job->root);
    arg(a, "--model");
    arg(a, job->model);
    arg(a, "--outdir");
    arg(a, job->outdir);
    arg(a, "--formats");
    arg(a, formats);
    if (job->opts.pretrans)
        arg(a, "--pretrans");
    if (job->opts.fmi_textures)
        arg(a, "--fmi-textures");
    if (job->opts.reverse_winding)
        arg(a, "--reverse-winding");
    if (job->opts.source_frame)
        arg(a, "--source-frame");
    if (job->opts.fmd_raw)
        arg(a, "--fmd-raw");
    if (job->opts.vrt_plain)
        arg(a, "--vrt-plain");
    if (job->opts.importer != MFS_IMPORTER_AUTO) {
        arg(a, "--importer");
        arg(a, mfs_importer_name(job->opts.importer));
    }
    if (job->opts.model_path) {
        arg(a, "--model-path");
        arg(a, job->opts.model_path);
    }
    if (job->model_id_known) {
        snprintf(a->model_id, sizeof a->model_id, "%llu:%llu", (unsigned long long)job->model_dev,
                 (unsigned long long)job->model_ino);
        arg(a, "--model-id");
        arg(a, a->model_id);
    }
    arg_num(a, "--memory", job->limits.memory);
    arg_num(a, "--cpu", job->limits.cpu_s);
    arg_num(a, "--output", job->limits.output);
    if (id) {
        arg_num(a, "--uid", id->uid);
        arg_num(a, "--gid", id->gid);
        if (id->ngroups) {
            size_t gn = 0;
            for (int i = 0; i < id->ngroups; i++)
                gn += (size_t)snprintf(a->groups + gn, sizeof a->groups - gn, "%s%u", i ? "," : "",
                                       (unsigned)id->groups[i]);
            arg(a, "--groups");
            arg(a, a->groups);
        }
    }
}

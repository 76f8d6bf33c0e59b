/* One conversion through the spawner's transport (spawn_int.h). */
#include "spawn_int.h"

/* The transport's work is the transport's (spawn_int.h); run.c turns how a
 * worker ended into the report, the same for every transport. */
int mfs_sp_spawner_run(mfs_spawner *sp, const mfs_job *job, mfs_report *rep, mfs_err *err)
{
    memset(rep, 0, sizeof *rep);
    char formats[64];
    argv_buf a;
    /* the model's owner, resolved here, in the parent (convert.h) */
    mfs_worker_ident id;
    int drop = mfs_worker_ident_for(&sp->user, job, &id);
    uid_t uid = id.uid;
    mfs_sp_build_argv(&a, sp->path, job, formats, sizeof formats, drop ? &id : NULL);
    sp_run r = {.sp = sp, .job = job, .argv = a.argv, .drop = drop, .uid = uid};
    if (sp->transport->start(sp, &r, rep, err) < 0)
        return -1;
    double t0 = mfs_sp_now_s();
    double deadline = job->limits.timeout_s > 0 ? t0 + job->limits.timeout_s : 1e300;
    sp_ended e = {0};
    r.t->wait(&r, deadline, &e);
    uint8_t *buf = e.buf;
    size_t len = e.len;
    int got = e.got, timed_out = e.timed_out, lost = e.lost, status = e.status;
    double cpu_s = e.cpu_s;
    if (got == 0 || timed_out) {
        snprintf(rep->error, sizeof rep->error, "import timed out after %g s", job->limits.timeout_s);
    } else if (got < 0) {
        snprintf(rep->error, sizeof rep->error, "worker report exceeds %u bytes", MFS_PROTO_MAX);
    } else if (lost) {
        snprintf(rep->error, sizeof rep->error, "the worker's fork server died during the conversion");
        rep->transient = 1;
    } else if (len == 0) {
        mfs_sp_describe_death(status, job, cpu_s, rep->error, sizeof rep->error, &rep->transient);
    } else {
        mfs_err derr;
        mfs_err_clear(&derr);
        if (mfs_report_decode(buf, len, rep, &derr) < 0)
            snprintf(rep->error, sizeof rep->error, "worker sent a bad report: %s", derr.msg);
        else if (WIFEXITED(status) && WEXITSTATUS(status) == MFS_SANDBOX_EXIT) {
            /* it never opened the model: the reason is the machine's */
            char why[MFS_ERR_MAX];
            snprintf(why, sizeof why, "%s", rep->error);
            mfs_report_free(rep);
            memset(rep, 0, sizeof *rep);
            snprintf(rep->error, sizeof rep->error, "worker could not enter its sandbox: %s", why);
            rep->transient = 1;
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            /* A report followed by a crash (e.g. in a destructor) is not
             * trusted: the outputs may be incomplete. */
            mfs_report_free(rep);
            memset(rep, 0, sizeof *rep);
            mfs_sp_describe_death(status, job, cpu_s, rep->error, sizeof rep->error, &rep->transient);
        }
    }
    free(buf);
    r.t->claim(&r, rep);
    return 0;
}

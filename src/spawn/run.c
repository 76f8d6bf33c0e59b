/* One conversion through either transport (spawn_int.h). */
#include "spawn_int.h"

/* Whether a conversion should try the fork server (a hint: srv_spawn
 * decides). */
static int srv_wanted(mfs_spawner *sp)
{
    const char *off = getenv("MESHFS_FORK_SERVER");
    if (off && !strcmp(off, "0"))
        return 0;
    pthread_mutex_lock(&sp->srv_mu);
    int ok = sp->srv_failures < 3;
    pthread_mutex_unlock(&sp->srv_mu);
    return ok;
}

/* The fork server's child creates no file (its Landlock ruleset grants
 * none): its outputs are made here, empty, at outdir/<fmt>, and handed to
 * it open (out, write-only, in format order; the parent closes its copies
 * once they are sent).  rd gets a read-only descriptor on each: what the
 * parent checks and claims them by, and never a writer itself, so a read
 * lease on it tells whether anyone still can write (outputs_unwritable).
 * 0, or -1 with nothing left behind. */
int mfs_sp_spawner_run(mfs_spawner *sp, const mfs_job *job, mfs_report *rep, mfs_err *err)
{
    memset(rep, 0, sizeof *rep);
    char formats[64];
    argv_buf a;
    /* the model's owner, resolved here, in the parent (sandbox.h) */
    mfs_worker_ident id;
    int drop = mfs_worker_ident_for(job, &id);
    uid_t uid = id.uid;
    mfs_sp_build_argv(&a, sp->path, job, formats, sizeof formats, drop ? &id : NULL);
    pid_t pid = 0;
    srv_child ch = {.reply = -1, .pid = 0, .pidfd = -1};
    int out[MFS_FMT_COUNT], rd[MFS_FMT_COUNT], nout = 0, dfd = -1;
    int via_srv = 0;
    int done[2] = {-1, -1};
    /* A server's child reports into a memfd, read once the child says
     * "done" (or the server says it has exited): the parent then wakes
     * once per conversion, not for the report's bytes and again for its
     * EOF. */
    int rfd = -1;
    if (srv_wanted(sp) && mfs_sp_create_outputs(job, &dfd, out, rd, &nout) == 0) {
        rfd = memfd_create("meshfs-report", MFD_CLOEXEC);
        if (rfd >= 0 && pipe2(done, O_CLOEXEC) < 0)
            done[0] = done[1] = -1;
        via_srv = rfd >= 0 && done[0] >= 0 && mfs_sp_srv_spawn(sp, a.argv, rfd, done[1], out, nout, &ch) == 0;
        /* only the child may hold them for writing now (the server closes
         * its copies once it has passed them on) */
        for (int k = 0; k < nout; k++)
            close(out[k]);
        if (done[1] >= 0)
            close(done[1]);
        if (!via_srv) {
            rep->ok = 0; /* removes them all */
            mfs_sp_claim_fd_outputs(job, rep, dfd, rd);
            if (rfd >= 0)
                close(rfd);
            if (done[0] >= 0)
                close(done[0]);
        }
    }
    int p[2] = {-1, -1};
    if (!via_srv && pipe2(p, O_CLOEXEC) < 0)
        return mfs_errf(err, "pipe: %s", strerror(errno));
    int rc = via_srv ? 0 : mfs_sp_spawn(sp, a.argv, p[1], -1, &pid, err);
    if (p[1] >= 0)
        close(p[1]);
    if (rc < 0) {
        close(p[0]);
        return -1;
    }
    double t0 = mfs_sp_now_s();
    double deadline = job->limits.timeout_s > 0 ? t0 + job->limits.timeout_s : 1e300;
    uint8_t *buf = NULL;
    size_t len = 0;
    int got;
    int timed_out;
    double cpu_s = 0;
    int lost = 0;
    int status;
    if (via_srv) {
        /* "done" before the exit (fork_server.h): once the report is
         * complete and no output can be written any more, the exit status
         * could change nothing the parent uses, so it is not waited for.
         * Anything less (no "done", an empty report, an output still
         * open for writing) waits for "ended" and its status as before. */
        if (ch.pidfd >= 0 && mfs_sp_srv_wait_done(&ch, done[0], deadline) &&
            mfs_sp_read_memfd_report(rfd, &buf, &len) == 1 && len > 0 && mfs_sp_outputs_unwritable(rd, nout)) {
            mfs_sp_srv_release(&ch);
            status = 0;
            timed_out = lost = 0;
            got = 1;
        } else {
            free(buf);
            buf = NULL;
            len = 0;
            status = mfs_sp_srv_reap(&ch, deadline, &timed_out, &cpu_s, &lost);
            got = timed_out ? 0 : mfs_sp_read_memfd_report(rfd, &buf, &len);
        }
        close(rfd);
        close(done[0]);
    } else {
        got = mfs_sp_read_report(p[0], deadline, &buf, &len);
        close(p[0]);
        status = mfs_sp_reap(pid, got == 1 ? deadline : mfs_sp_now_s(), &timed_out, &cpu_s);
    }
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
    if (via_srv)
        mfs_sp_claim_fd_outputs(job, rep, dfd, rd);
    else
        mfs_sp_claim_outputs(job, rep, drop, uid);
    return 0;
}

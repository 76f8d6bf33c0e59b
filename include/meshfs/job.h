/* One conversion job: what to convert, with which options and limits, and
 * where the outputs go.  The parent describes it (spawner.h); the worker
 * runs it (mfs_job_run, src/convert/job.c). */
#ifndef MESHFS_JOB_H
#define MESHFS_JOB_H

#include "meshfs/limits.h"
#include "meshfs/options.h"
#include "meshfs/proto.h"

#include <sys/types.h>

typedef struct mfs_job {
    const char *root;        /* source root: nothing outside it is opened */
    const char *model;       /* model path relative to root */
    unsigned formats;        /* mask of mfs_format bits */
    mfs_options opts;
    const char *outdir;      /* existing private directory; outputs go to outdir/<fmt> */
    const int *out_fd;       /* NULL, or (a fork server's child, whose sandbox
                                can create no file) out_fd[f] is the open, empty
                                file format f is written to instead */
    mfs_limits limits;
    /* the model file's owner, as the parent stat()ed it beneath root: a
     * root parent's worker runs as that user, with that user's groups
     * (mfs_worker_ident_for); unknown or uid 0: as the worker user */
    int owner_known;
    uid_t owner;
} mfs_job;

/* In the worker: import and write everything, fill the report.  Returns 0
 * when the report is meaningful (even if conversion failed). */
int mfs_job_run(const mfs_job *job, mfs_report *rep);

#endif

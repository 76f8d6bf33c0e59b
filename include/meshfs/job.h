/* One conversion job: what to convert, with which options and limits, and
 * where the outputs go.  The parent describes it (spawner.h); the worker
 * runs it (mfs_job_run, src/worker/job.c). */
#ifndef MESHFS_JOB_H
#define MESHFS_JOB_H

#include "meshfs/err.h"
#include "meshfs/limits.h"
#include "meshfs/formats.h"
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
    /* the model file, as the parent stat()ed it beneath root
     * (mfs_job_set_model_file): a root parent's worker runs as its owner
     * only when nobody else can change its bytes (mfs_worker_ident_for);
     * unknown or uid 0: as the worker user */
    int owner_known;
    uid_t owner;
    gid_t owner_group;  /* the file's group */
    int shared;         /* MFS_MODEL_* below: who else can write it */
    /* the worker refuses a model path that opens another file than this
     * one (replaced since the parent's stat): model_id_known 0: unchecked */
    int model_id_known;
    dev_t model_dev;
    ino_t model_ino;
} mfs_job;

enum {
    MFS_MODEL_PRIVATE = 0,     /* only its owner (and root) can write it */
    MFS_MODEL_GROUP_WRITE = 1, /* its group can (mode g+w) */
    MFS_MODEL_OTHERS_WRITE = 2 /* anyone can (o+w), or an ACL may let others */
};

/* Fills the model's fields of job from fd, the model opened beneath root
 * with no link followed (O_PATH is enough).  -1 with err set when it cannot
 * be stat'ed or is not a regular file: the caller fails the conversion. */
int mfs_job_set_model_file(mfs_job *job, int fd, mfs_err *err);

/* In the worker: import and write everything, fill the report.  Returns 0
 * when the report is meaningful (even if conversion failed). */
int mfs_job_run(const mfs_job *job, mfs_report *rep);

#endif

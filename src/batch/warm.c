/* `meshfs-cache warm SRC`: the batch engine with no output tree
 * (include/meshfs/batch.h).  The plan is the mount's view of SRC (names,
 * .fmi model= paths and so keys as a mount of SRC makes them), hidden
 * folders included, links not followed: the mount reaches a linked
 * folder's views through the folder itself. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "meshfs/batch.h"

static mfs_batch_state nothing_written(void *ctx, size_t i, mfs_batch_result *r)
{
    (void)ctx;
    (void)i;
    return r ? mfs_batch_state_of(r) : MFS_BATCH_FAILED;
}

int mfs_batch_warm(const mfs_batch_cfg *cfg, const char *src, unsigned plan_flags, int jobs,
                   FILE *progress, FILE *warn, mfs_batch_run *counts, mfs_err *err)
{
    struct stat st;
    if (stat(src, &st) < 0)
        return mfs_errf(err, "%s: %s", src, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return mfs_errf(err, "%s: not a folder (warm takes the folder a mount shows)", src);
    mfs_batch *b;
    if (mfs_batch_open(cfg, &b, err) < 0)
        return -1;
    mfs_plan plan;
    mfs_plan_init(&plan, plan_flags | MFS_PLAN_MOUNT_VIEW, "meshfs-cache", warn);
    mfs_plan_add_input(&plan, src);
    *counts = (mfs_batch_run){.b = b, .plan = &plan, .jobs = jobs, .each = nothing_written,
                              .progress = progress};
    mfs_batch_run_all(counts);
    counts->unread = plan.unread;
    counts->plan = NULL;
    counts->b = NULL;
    mfs_plan_free(&plan);
    mfs_batch_close(b);
    return 0;
}

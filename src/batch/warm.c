/* `meshfs-cache warm SRC`: the batch engine with no output tree
 * (include/meshfs/batch.h).  The plan is the mount's view of SRC (names,
 * .fmi model= paths and so keys as a mount of SRC makes them), hidden
 * folders included, links not followed: the mount reaches a linked
 * folder's views through the folder itself. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "meshfs/batch.h"
#include "meshfs/settings.h"

typedef struct warm_ctx {
    mfs_batch *b;
    const mfs_plan *plan;
    pthread_mutex_t mu; /* one line at a time */
} warm_ctx;

/* Why item i failed: its refusal, or its first failed view's reason. */
static const char *why(const warm_ctx *w, size_t i, const mfs_batch_result *r)
{
    if (!r)
        return w->plan->v[i].refused;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((mfs_batch_views(w->b) & (1u << f)) && !r->view[f].ok &&
            !mfs_settings_not_shown(r->view[f].error))
            return r->view[f].error[0] ? r->view[f].error : "conversion failed";
    return "conversion failed";
}

/* Nothing written; a failed model is named with its reason, as
 * meshfs-convert names it (also with -q: the count alone says nothing of
 * what to fix). */
static mfs_batch_state nothing_written(void *ctx, size_t i, mfs_batch_result *r)
{
    warm_ctx *w = ctx;
    mfs_batch_state st = r ? mfs_batch_state_of(r) : MFS_BATCH_FAILED;
    if (st == MFS_BATCH_FAILED) {
        char q[PATH_MAX + 64];
        pthread_mutex_lock(&w->mu);
        fprintf(stderr, "meshfs-cache: warm: %s: %s%s\n",
                mfs_batch_quote(w->plan->v[i].shown, q, sizeof q), why(w, i, r),
                r && r->remembered ? " (remembered from an earlier conversion)" : "");
        pthread_mutex_unlock(&w->mu);
    }
    return st;
}

int mfs_batch_warm(const mfs_batch_cfg *cfg, const char *src, unsigned plan_flags,
                   const mfs_shard *shard, int jobs, FILE *progress, FILE *warn,
                   mfs_batch_run *counts, mfs_err *err)
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
    mfs_plan_init(&plan, plan_flags | MFS_PLAN_MOUNT_VIEW, "meshfs-cache", warn,
                  mfs_spawner_extensions(cfg->spawner, NULL));
    mfs_plan_add_input(&plan, src);
    /* a shard's models: by their path relative to src, as their keys hold
     * it (shard.c); the package needs nothing of warm's (the mount packs
     * the models' views, which their own shards made) */
    size_t planned = mfs_plan_shard(&plan, shard);
    warm_ctx w = {.b = b, .plan = &plan};
    pthread_mutex_init(&w.mu, NULL);
    *counts = (mfs_batch_run){.b = b, .plan = &plan, .jobs = jobs, .each = nothing_written,
                              .ctx = &w, .progress = progress};
    mfs_batch_run_all(counts);
    pthread_mutex_destroy(&w.mu);
    counts->unread = plan.unread;
    counts->planned = planned;
    counts->plan = NULL;
    counts->b = NULL;
    mfs_plan_free(&plan);
    mfs_batch_close(b);
    return 0;
}

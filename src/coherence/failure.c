/* Whether a remembered failure still stands (coherence.h).
 *
 * A failure is stored under the view's key, which names the input bytes,
 * the options and the version, so a model is not converted again and again
 * while it stays broken.  Two things the key does not name can still
 * decide a failure:
 *
 *  - the limits.  A conversion that timed out, ran out of memory or of CPU
 *    time, or outgrew the output cap under one mount's limits may succeed
 *    under larger ones.  Every failure records the limits it ran under, and
 *    a mount with any larger limit tries it again (and records its own).
 *    Every failure, not only those that look like a limit's: an importer
 *    that runs out of memory may die of it in many ways (a crash, an odd
 *    parse error), and one more try under larger limits costs little.
 *  - a touch.  `touch model.fbx` is how a user asks for something to be
 *    done again; its bytes are the same, so its key is too.  Every failure
 *    records the newest mtime of its inputs, and a failure whose inputs
 *    have been touched since is tried again.  Views that converted are not
 *    redone by a touch: the same bytes give the same output. */
#include "coherence.h"

void mfs_failure_ctx(mfs_coherence *co, const mfs_dep *deps, uint32_t ndeps, mfs_cache_failctx *out)
{
    out->timeout_s = co->limits.timeout_s;
    out->memory = co->limits.memory;
    out->cpu_s = co->limits.cpu_s;
    out->output = co->limits.output;
    out->inputs_mtime_ns = 0;
    /* the newest mtime as the memo takes it (models.c: the model, then
     * each dependency as the worker opened it) */
    for (uint32_t i = 0; i < ndeps; i++) {
        struct stat st;
        if (deps[i].kind != MFS_DEP_FILE) /* the memo's newest is its files' */
            continue;
        if ((i ? mfs_beneath_stat_dep(co->names, deps[i].path, &st)
               : mfs_beneath_stat(co->names, deps[i].path, &st)) < 0)
            continue;
        int64_t t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (t > out->inputs_mtime_ns)
            out->inputs_mtime_ns = t;
    }
}

/* Is limit `now` larger than `then`?  0 means no limit at all. */
static int larger(double now, double then)
{
    if (then == 0)
        return 0;
    return now == 0 || now > then;
}

int mfs_failure_stands(const mfs_coherence *co, const mfs_cache_failctx *f, struct timespec newest)
{
    const mfs_limits *l = &co->limits;
    if (larger(l->timeout_s, f->timeout_s) || larger((double)l->memory, (double)f->memory) ||
        larger((double)l->cpu_s, (double)f->cpu_s) || larger((double)l->output, (double)f->output))
        return 0;
    int64_t t = (int64_t)newest.tv_sec * 1000000000 + newest.tv_nsec;
    return f->inputs_mtime_ns == 0 || f->inputs_mtime_ns == t;
}

/* One job's prepared data (meshfs/formats.h): the runtime mesh of .vrt,
 * .tri and .sph, built on first use and kept until the job frees it.
 *
 * Built lazily rather than by the job before its writers start: the job
 * runs writers side by side, and the build then overlaps the other writers
 * instead of delaying all of them.  Whichever of the three asks first
 * builds; the others wait on the mutex, which is what they would have to do
 * anyway. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

struct mfs_prepared {
    const mfs_scene *scene;
    pthread_mutex_t lock;
    int tried;            /* the build ran (guarded by lock) */
    int rc;               /* and returned this */
    mfs_err err;          /* its message when it failed */
    mfs_runtime rt;
};

mfs_prepared *mfs_prepared_new(const mfs_scene *s)
{
    mfs_prepared *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->scene = s;
    return p;
}

void mfs_prepared_free(mfs_prepared *p)
{
    if (!p)
        return;
    mfs_runtime_free(&p->rt);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

const mfs_runtime *mfs_runtime_get(const mfs_scene *s, mfs_prepared *prep, mfs_runtime *own,
                                   mfs_err *err)
{
    memset(own, 0, sizeof *own);
    /* A prep made for another scene would serve the wrong mesh; build
     * instead (a caller's mistake, but a harmless one this way). */
    if (!prep || prep->scene != s)
        return mfs_runtime_build(s, own, err) == 0 ? own : NULL;
    pthread_mutex_lock(&prep->lock);
    if (!prep->tried) {
        /* A failure is kept too: the same scene fails the same way, so the
         * other writers report it without building again. */
        prep->rc = mfs_runtime_build(s, &prep->rt, &prep->err);
        prep->tried = 1;
    }
    pthread_mutex_unlock(&prep->lock);
    if (prep->rc == 0)
        return &prep->rt;
    if (err)
        *err = prep->err;
    return NULL;
}

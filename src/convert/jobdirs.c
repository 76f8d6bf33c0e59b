/* Worker output directories kept between runs (meshfs/convert.h). */
#include "meshfs/convert.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "meshfs/formats.h"

struct mfs_jobdir {
    char path[PATH_MAX + 32];
    dev_t dev;                /* the folder made: mfs_jobdir_lost compares */
    ino_t ino;
    struct mfs_jobdir *next;
};

struct mfs_jobdirs {
    mfs_cache *cache;
    char tmpdir[PATH_MAX];
    pthread_mutex_t lock;
    mfs_jobdir *idle;
};

mfs_jobdirs *mfs_jobdirs_new(mfs_cache *cache, const char *tmpdir)
{
    mfs_jobdirs *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->cache = cache;
    snprintf(p->tmpdir, sizeof p->tmpdir, "%s", tmpdir);
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

/* What a worker left: its outputs are files named after formats, a
 * dropped-privilege worker's a subdirectory of them. */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

static void jobdir_remove(mfs_jobdir *d)
{
    if (rmdir(d->path) < 0 && errno != ENOENT)
        nftw(d->path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(d);
}

void mfs_jobdirs_free(mfs_jobdirs *p)
{
    if (!p)
        return;
    while (p->idle) {
        mfs_jobdir *d = p->idle;
        p->idle = d->next;
        jobdir_remove(d);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

mfs_jobdir *mfs_jobdirs_take(mfs_jobdirs *p, int *revived, mfs_err *err)
{
    if (revived)
        *revived = 0;
    pthread_mutex_lock(&p->lock);
    mfs_jobdir *d = p->idle;
    if (d)
        p->idle = d->next;
    pthread_mutex_unlock(&p->lock);
    if (d) {
        struct stat st;
        if (stat(d->path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_ino == d->ino &&
            st.st_dev == d->dev &&
            (int64_t)time(NULL) - (int64_t)st.st_mtim.tv_sec < MFS_CACHE_DEFAULT_TMP_AGE / 2)
            return d;
        jobdir_remove(d);
    }
    d = malloc(sizeof *d);
    if (!d) {
        mfs_errf(err, "out of memory");
        return NULL;
    }
    snprintf(d->path, sizeof d->path, "%s/job-XXXXXX", p->tmpdir);
    int made = mkdtemp(d->path) != NULL;
    if (!made && errno == ENOENT) {
        /* the cache directory (or its tmp/) was removed meanwhile */
        int r = mfs_cache_revive(p->cache, NULL);
        if (revived)
            *revived = r == 1;
        mkdir(p->tmpdir, 0700);
        snprintf(d->path, sizeof d->path, "%s/job-XXXXXX", p->tmpdir);
        made = mkdtemp(d->path) != NULL;
    }
    if (!made) {
        mfs_errf(err, "cannot make a worker directory in the cache: %s", strerror(errno));
        free(d);
        return NULL;
    }
    struct stat st;
    if (stat(d->path, &st) == 0) {
        d->dev = st.st_dev;
        d->ino = st.st_ino;
    }
    return d;
}

int mfs_jobdir_lost(const mfs_jobdir *d)
{
    struct stat st;
    return stat(d->path, &st) < 0 || st.st_dev != d->dev || st.st_ino != d->ino;
}

const char *mfs_jobdir_path(const mfs_jobdir *d)
{
    return d->path;
}

static int absent(const mfs_jobdir *d, const char *name)
{
    char path[PATH_MAX + 64];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    return lstat(path, &st) < 0 && errno == ENOENT;
}

/* Absent, or the empty output the filing left for the next run
 * (convert.h, keep_outputs): a regular file of ours, one link, no bytes. */
static int reusable(const mfs_jobdir *d, const char *name)
{
    char path[PATH_MAX + 64];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    if (lstat(path, &st) < 0)
        return errno == ENOENT;
    return S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_size == 0 && st.st_uid == geteuid();
}

void mfs_jobdirs_give(mfs_jobdirs *p, mfs_jobdir *d, unsigned formats, int clean)
{
    if (!d)
        return;
    for (int f = 0; clean && f < MFS_FMT_COUNT; f++)
        if ((formats & (1u << f)) && !reusable(d, mfs_format_get((mfs_format)f)->name))
            clean = 0;
    if (clean && !absent(d, MFS_SANDBOX_OUT_SUBDIR))
        clean = 0;
    if (!clean) {
        jobdir_remove(d);
        return;
    }
    pthread_mutex_lock(&p->lock);
    d->next = p->idle;
    p->idle = d;
    pthread_mutex_unlock(&p->lock);
}

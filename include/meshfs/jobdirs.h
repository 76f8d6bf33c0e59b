/* Worker output directories under the cache's tmp/, kept between runs.
 *
 * A conversion's worker writes its outputs into a directory of its own,
 * which the run files into the cache and leaves empty.  Making and
 * removing one per model cost an inode allocation and a free each, and on
 * ext4 without a journal every allocation scans past the inodes freed in
 * the last minute or more, so a stream of small models slowed itself down
 * (docs/benchmarks.md, "meshfs-convert's own cost beyond the spawner").
 * The pool keeps emptied directories for the next run; the mount and
 * meshfs-convert share it.  Thread-safe. */
#ifndef MESHFS_JOBDIRS_H
#define MESHFS_JOBDIRS_H

#include "meshfs/cache.h"
#include "meshfs/err.h"

typedef struct mfs_jobdirs mfs_jobdirs;
typedef struct mfs_jobdir mfs_jobdir;

/* A pool making its directories in tmpdir (the cache's tmp/).  NULL on out
 * of memory. */
mfs_jobdirs *mfs_jobdirs_new(mfs_cache *cache, const char *tmpdir);

/* Removes the kept directories; every taken one must have been given back. */
void mfs_jobdirs_free(mfs_jobdirs *p);

/* An empty directory for one run: one kept from an earlier run while it is
 * younger than half the age at which a cache open reaps tmp/ (so another
 * process's reaping never takes it from under a run), else a new one.  A
 * cache directory removed meanwhile is made again (*revived set, if given).
 * NULL with err set ("cannot make a worker directory in the cache: ..."). */
mfs_jobdir *mfs_jobdirs_take(mfs_jobdirs *p, int *revived, mfs_err *err);

const char *mfs_jobdir_path(const mfs_jobdir *d);

/* 1 if the directory is no longer the one taken: removed (an `rm -rf` of
 * the cache or of its tmp/) or replaced.  A run whose folder went failed
 * for the cache's churn, not for the model: it is worth running again. */
int mfs_jobdir_lost(const mfs_jobdir *d);

/* Back to the pool if clean and the run left each output of `formats`
 * absent or emptied (convstore.h, keep_outputs: the next run writes into
 * the same file) and no dropped-privilege worker's subdirectory; else
 * removed with whatever is in it. */
void mfs_jobdirs_give(mfs_jobdirs *p, mfs_jobdir *d, unsigned formats, int clean);

#endif

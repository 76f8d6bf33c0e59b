/* Converting a listed folder's cold models in the background (-o prefetch).
 *
 * `ls -l` and `find -ls` read a folder, then stat its names one after
 * another; a stat of a view nobody has converted yet must convert (its size
 * is exact), so N cold models would cost N conversions in series.  When such
 * a stat comes within a short while after a listing of its folder, the
 * folder's other cold models are queued here and converted by background
 * threads while the user's stats go on: the next stat finds its model
 * converted or converting (the resolver's single flight: it waits for that
 * one conversion only).  A stat or open with no listing before it (an engine
 * reading one model) queues nothing.
 *
 * Bounds: at most cfg.prefetch models wait per mount (the oldest is dropped
 * when more come); conversions share the convert_jobs slots with foreground
 * ones (convert.c), and a foreground request waiting for a slot goes first
 * (for up to 10 s: it may be waiting for the model a prefetch holds).
 * A queued model that became warm or failed meanwhile is skipped.  Unmount
 * drops what waits and lets the running conversions finish.
 *
 * A fill that runs for more than 2 s logs its progress (info level) every
 * 5 s and once when it ends. */
#ifndef MESHFS_FS_PREFETCH_H
#define MESHFS_FS_PREFETCH_H

#include "fs.h"

#define MFS_PREFETCH_DEFAULT 256u
#define MFS_PREFETCH_MAX 65536u

/* Makes fs->prefetch (NULL with cfg.prefetch 0).  No thread starts until
 * something is queued (the daemon may still fork to detach).  0 or -ENOMEM. */
int mfs_prefetch_open(mfs_fs *fs);

/* Drops what waits, lets running conversions finish, joins the threads and
 * frees fs->prefetch.  Called once the FUSE loop is over. */
void mfs_prefetch_close(mfs_fs *fs);

/* readdir listed folder `dir` (SRC-relative, "" for the root). */
void mfs_prefetch_listed(mfs_fs *fs, const char *dir);

/* A stat of view ref in `dir` is about to resolve it: if the view is cold
 * and its folder was just listed, queue the folder's cold models (this one
 * first, then the others in name order) before the caller converts; the
 * caller's own conversion gets a slot first (mfs_fs_fg_coming: the caller
 * ends it with mfs_fs_fg_done). */
void mfs_prefetch_attr(mfs_fs *fs, const char *dir, const mfs_view_ref *ref);

/* Whether the calling thread is one of the prefetcher's (convert.c's slot
 * gate lets foreground requests go first). */
int mfs_prefetch_on_this_thread(void);

/* Whether the prefetcher is stopping: a background conversion not started
 * yet is not started. */
int mfs_prefetch_stopping(const mfs_fs *fs);

/* Models waiting now (user.meshfs.stats prefetch_queued). */
unsigned mfs_prefetch_waiting(mfs_fs *fs);

#endif

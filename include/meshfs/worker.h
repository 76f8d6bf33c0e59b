/* Conversions in a separate worker process: everything at once, for the
 * files that use several of its parts.  Each part has its own header:
 *
 *   proto.h    the wire protocol: report fds, the report and its codec
 *   limits.h   what one conversion may use
 *   job.h      the job a worker runs (mfs_job_run, in the worker)
 *   spawner.h  the parent's side: starting workers, the model extensions
 *
 * New code includes the one it needs. */
#ifndef MESHFS_WORKER_H
#define MESHFS_WORKER_H

#include "meshfs/job.h"
#include "meshfs/limits.h"
#include "meshfs/proto.h"
#include "meshfs/spawner.h"

#endif

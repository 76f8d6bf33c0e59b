/* Starting meshfs-worker from a parent (the mount daemon, meshfs-convert).
 *
 * assimp crashes, hangs and over-allocates on malformed input, so no parent
 * ever runs it in its own address space.  Each conversion is one fresh
 * `meshfs-worker` process (spawned, never forked from a multithreaded
 * parent) that imports the model once, writes every requested format into
 * a private output directory, and reports back over a pipe (convert.h).
 *
 * A spawner is the parent's state for that: the worker's path, the
 * lifeline pipe every worker inherits (EOF there: the parent died, so the
 * worker exits), and the model extensions the worker's importer accepts,
 * asked of it once when the spawner is opened, and the user root's workers
 * run as.  Its owner holds it: the mount daemon (mfs_fs.spawner), a
 * meshfs-convert or meshfs-cache run (mfs_batch_cfg.spawner); there is no
 * process-wide one.  Nothing here spawns a process behind a caller's back:
 * only mfs_spawner_open (the extension list), mfs_spawner_convert and
 * mfs_spawner_sandbox_warning start workers.
 *
 * Thread safety: every function may be called from any number of threads
 * at once, except open and close. */
#ifndef MESHFS_SPAWNER_H
#define MESHFS_SPAWNER_H

#include "meshfs/convert.h"
#include "meshfs/err.h"

typedef struct mfs_spawner mfs_spawner;

/* Finds the worker ($MESHFS_WORKER, else next to the running executable,
 * else the install libexecdir), makes the lifeline and asks the worker for
 * its extensions.  user: who root's workers run as (NULL or not known:
 * "nobody", else the overflow id 65534); ignored when not root.  How
 * workers are reached is chosen here, once: through the fork server, or,
 * with MESHFS_FORK_SERVER=0 in the environment, spawned directly.  A worker that cannot answer is not an error here (a
 * conversion will say why it cannot start); mfs_spawner_extensions says
 * so.  -1 only on out of memory. */
int mfs_spawner_open(mfs_spawner **out, const mfs_worker_user *user, mfs_err *err);
void mfs_spawner_close(mfs_spawner *sp);

const char *mfs_spawner_path(const mfs_spawner *sp);

/* Runs meshfs-worker for job, waits within the limits and decodes its
 * report.  The worker is a child forked by the spawner's fork server
 * (started on first use, restarted after it died), or a process spawned
 * directly: with MESHFS_FORK_SERVER=0 at open, and, as the fork server's
 * own fallback, for a conversion the server cannot take (it failed to
 * start three times in a row, or the request could not be made or sent).  A crash, timeout or garbled report becomes a failed report whose
 * error says which ("importer crashed: SIGSEGV", "import timed out after
 * 60 s", "out of memory"); rep->transient is set when the failure is the
 * machine's, not the model's.  Returns -1 only if the worker could not be
 * started at all. */
int mfs_spawner_convert(mfs_spawner *sp, const mfs_job *job, mfs_report *rep, mfs_err *err);

/* Lower-case extensions (without dot) the worker's importer accepts, minus
 * the generic ones meshfs deliberately leaves alone (docs/import.md), as
 * asked at open; NULL-terminated, or NULL with the reason. */
const char *const *mfs_spawner_extensions(const mfs_spawner *sp, mfs_err *err);


/* True if name's extension is in mfs_spawner_extensions(sp). */
int mfs_spawner_is_model(const mfs_spawner *sp, const char *name);

/* The sandbox's warning for this kernel (Landlock or seccomp missing), or
 * NULL; asked of the worker on the first call.  The text has no level in
 * it: the daemon logs it at warning ("meshfs: warning: ..."), and
 * meshfs-convert prints "meshfs-convert: warning: ". */
const char *mfs_spawner_sandbox_warning(mfs_spawner *sp);

/* How many fork servers this spawner has started (convert.h): 1 for
 * any number of conversions, plus one per server that died and was
 * replaced; 0 when every conversion was spawned directly. */
unsigned long mfs_spawner_server_spawns(mfs_spawner *sp);

/* The worker's path as mfs_spawner_open would find it, for a caller with
 * no spawner (an error text); no process is started.  The text is this
 * thread's, until its next call. */
const char *mfs_worker_path(void);

#endif

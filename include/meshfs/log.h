/* The daemon's log: one line per event, with a level, to stderr while the
 * daemon runs in the foreground (-f, -d) and to syslog (the journal, on a
 * systemd machine) once it has detached from the terminal.
 *
 * Levels, most important first (-o log_level=, default warning):
 *   error    meshfs itself cannot do its job (the cache cannot be written);
 *   warning  a model or a view failed, or something the user should fix
 *            (a name conflict, a cache too small);
 *   info     what the mount does: each conversion, the read path in use;
 *   debug    why it did it that way (the importer's fallback reason).
 * A line is written when its level is at or above the one set.
 *
 * On stderr a line reads "meshfs: LEVEL: text"; in syslog the level is the
 * priority (LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG) and the text stands
 * alone after "meshfs[PID]: ".  Lines about a model name it relative to SRC:
 * the fs layer's callers go through mfs_fs_log (src/fs/errtext.c), which
 * rewrites absolute, cache and worker paths first (docs/security.md).
 *
 * The level and destination are set once at start-up, before any thread;
 * writing is safe from any thread (one write per line).  Writing never
 * blocks on syslog: a line that finds the syslog socket full is dropped and
 * counted, and "N log lines dropped" precedes the next one sent (log.c). */
#ifndef MESHFS_LOG_H
#define MESHFS_LOG_H

#include <stdarg.h>

#include "meshfs/err.h"

typedef enum mfs_log_level {
    MFS_LOG_ERROR,
    MFS_LOG_WARNING,
    MFS_LOG_INFO,
    MFS_LOG_DEBUG,
} mfs_log_level;

#define MFS_LOG_DEFAULT MFS_LOG_WARNING

/* "error", "warning", "info" or "debug".  Fails with a message naming the
 * option as the user wrote it (`name`, e.g. "-o log_level") and the value. */
int mfs_log_level_parse(const char *name, const char *s, mfs_log_level *out, mfs_err *err);
const char *mfs_log_level_name(mfs_log_level level);

/* The lines written from now on: those at `level` or above.  `ident`
 * starts every line ("meshfs"); it is kept, not copied. */
void mfs_log_setup(const char *ident, mfs_log_level level);
mfs_log_level mfs_log_get_level(void);

/* From now on to syslog (facility daemon), not stderr: called once the
 * daemon has detached, when stderr is /dev/null.  To the log file instead
 * if one was opened. */
void mfs_log_to_syslog(void);

/* -o log_file=PATH: opens PATH for appending (created 0640), before the
 * daemon detaches; once it has (mfs_log_to_syslog), lines go there as
 * "YYYY-mm-dd HH:MM:SS meshfs[PID]: level: text" instead of to syslog.
 * Fails naming the option and the path. */
int mfs_log_file_open(const char *path, mfs_err *err);

/* Whether a syslog socket (/dev/log) accepts a connection now: without
 * one and without a log file, a detached daemon's lines are lost. */
int mfs_log_syslog_reachable(void);

/* Whether a line at `level` would be written: lets a caller skip building
 * an expensive one. */
int mfs_log_enabled(mfs_log_level level);

void mfs_log(mfs_log_level level, const char *fmt, ...) MFS_PRINTF(2, 3);
void mfs_vlog(mfs_log_level level, const char *fmt, va_list ap) MFS_PRINTF(2, 0);

/* Another library's own message (libfuse's, prefixed "fuse: ", ending in a
 * newline), passed on unfiltered (that library decides what it says, and
 * -d is how its debug output is asked for) and without meshfs's prefix. */
void mfs_vlog_foreign(mfs_log_level level, const char *fmt, va_list ap) MFS_PRINTF(2, 0);

#endif

/* The mount's auto_unmount: a small process that unmounts MNT when the
 * daemon is gone, whatever killed it (SIGKILL, a crash, the OOM killer),
 * so no dead mount ("Transport endpoint is not connected") stays behind.
 *
 * libfuse's own auto_unmount cannot be used with the libfuse 3.17 meshfs
 * builds: 3.17 spawns `fusermount3 --auto-unmount`, a flag Debian 12's
 * fusermount3 (3.14, the only one installed) rejects, and the library does
 * not notice (docs/dependencies.md). */
#ifndef MESHFS_FS_UNMOUNT_GUARD_H
#define MESHFS_FS_UNMOUNT_GUARD_H

/* Call right after MNT is mounted, before daemonizing.  Forks the guard,
 * which waits for every copy of the daemon's end of a close-on-exec pipe to
 * close, then unmounts MNT lazily if the mount there is still this one (same
 * device number); a clean unmount first leaves it nothing to do.  Returns 0,
 * or -1 with a message on stderr (the mount then simply has no guard). */
int mfs_unmount_guard_start(const char *mnt);

#endif

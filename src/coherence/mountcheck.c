/* A mount point the daemon could not serve (coherence.h).
 *
 * Workers open the model through SRC's path.  With MNT inside SRC, a
 * listing of SRC shows MNT, whose lookups come back to this daemon while
 * it is busy answering them: `meshfs ~/models ~/models/mnt` hung the first
 * `ls -R`.  With MNT equal to SRC, or SRC inside MNT, SRC's path leads
 * into the mount itself.  All three are refused before mounting.
 *
 * Paths are compared by identity, not by spelling: each folder from MNT up
 * to / is compared (device and inode) with SRC, and each from SRC up with
 * MNT, so a symbolic link or a bind mount of SRC is caught as well.
 *
 * MNT must be a folder too: the kernel takes the root's type from the
 * mount point, so over a regular file the mount came up (status 0) as a
 * file that every access answered with EIO. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coherence.h"

/* Is `inner` (a real path) `outer` or inside it?  1, 0. */
static int within(const char *inner, const struct stat *outer)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", inner);
    for (;;) {
        struct stat st;
        if (stat(buf[0] ? buf : "/", &st) == 0 && st.st_dev == outer->st_dev &&
            st.st_ino == outer->st_ino)
            return 1;
        char *slash = strrchr(buf, '/');
        if (!slash || !buf[0])
            return 0;
        *slash = '\0';
    }
}

int mfs_mount_point_check(const char *src_real, const char *mnt, mfs_err *err)
{
    char mreal[PATH_MAX];
    struct stat sst, mst;
    if (!mnt || !realpath(mnt, mreal) || stat(mreal, &mst) < 0 || stat(src_real, &sst) < 0)
        return 0;
    if (!S_ISDIR(mst.st_mode))
        return mfs_errf(err, "mount point %s: not a folder (meshfs shows SRC as a folder, and "
                             "can only mount it over one)", mnt);
    if (within(mreal, &sst))
        return mfs_errf(err, "mount point %s is %s the source folder %s: the daemon would read "
                             "through its own mount and hang; mount it outside SRC",
                        mnt, (mst.st_dev == sst.st_dev && mst.st_ino == sst.st_ino) ? "the same folder as"
                                                                                     : "inside",
                        src_real);
    if (within(src_real, &mst))
        return mfs_errf(err, "source folder %s is inside the mount point %s: the mount would hide "
                             "it from the daemon; mount it elsewhere",
                        src_real, mnt);
    return 0;
}

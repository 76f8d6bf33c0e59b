/* The parent's look at the model before a run (include/meshfs/convert.h): who
 * may run it, and which file the worker must find under its name. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "meshfs/convert.h"

/* An access ACL may grant named users or groups write access the mode
 * bits do not show (the group bits are then the mask): it is not read
 * entry by entry, any ACL counts as "others may write". */
static int has_acl(int fd)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    ssize_t n = getxattr(p, "system.posix_acl_access", NULL, 0);
    if (n >= 0)
        return 1;
    /* no ACL, or a file system without them: nothing beyond the mode */
    return errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP ? 0 : -1;
}

int mfs_job_set_model_file(mfs_job *job, int fd, mfs_err *err)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return mfs_errf(err, "%s: cannot stat the model: %s", job->model, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return mfs_errf(err, "%s: not a regular file", job->model);
    int acl = has_acl(fd);
    if (acl < 0)
        return mfs_errf(err, "%s: cannot read the model's ACL: %s", job->model, strerror(errno));
    job->owner_known = 1;
    job->owner = st.st_uid;
    job->owner_group = st.st_gid;
    job->shared = (st.st_mode & S_IWOTH) || acl ? MFS_MODEL_OTHERS_WRITE
                  : (st.st_mode & S_IWGRP)       ? MFS_MODEL_GROUP_WRITE
                                                 : MFS_MODEL_PRIVATE;
    job->model_id_known = 1;
    job->model_dev = st.st_dev;
    job->model_ino = st.st_ino;
    return 0;
}

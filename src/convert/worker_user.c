/* The parent's half of the worker sandbox (include/meshfs/convert.h): which
 * user root's workers become, and the descriptor limit. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "meshfs/convert.h"

static int resolve(const char *name, uid_t *uid, gid_t *gid, mfs_err *err)
{
    /* getpwnam_r: the daemon is multithreaded */
    char buf[4096];
    struct passwd pw, *res = NULL;
    int e = getpwnam_r(name, &pw, buf, sizeof buf, &res);
    if (!res)
        return mfs_errf(err, "worker user '%s': %s", name,
                        e ? strerror(e) : "no such user (create it, or name another)");
    if (pw.pw_uid == 0)
        return mfs_errf(err, "worker user '%s': has uid 0; the worker must not run as root", name);
    *uid = pw.pw_uid;
    *gid = pw.pw_gid;
    return 0;
}

int mfs_worker_user_resolve(const char *name, mfs_worker_user *u, mfs_err *err)
{
    uid_t uid;
    gid_t gid;
    if (resolve(name ? name : "nobody", &uid, &gid, err) < 0)
        return -1;
    *u = (mfs_worker_user){1, uid, gid};
    return 0;
}

mfs_worker_user mfs_worker_user_or_default(const mfs_worker_user *u)
{
    if (u && u->known)
        return *u;
    /* nobody asked: "nobody"; lacking even that, the kernel's overflow
     * id, which owns nothing */
    mfs_worker_user d = {1, 65534, 65534};
    if (resolve("nobody", &d.uid, &d.gid, NULL) < 0)
        d.uid = d.gid = 65534;
    return d;
}

int mfs_worker_ident_for(const mfs_worker_user *user, const mfs_job *job, mfs_worker_ident *id)
{
    memset(id, 0, sizeof *id);
    if (geteuid() != 0)
        return 0;
    id->uid = user->uid;
    id->gid = user->gid;
    uid_t owner = job->owner;
    if (!job->owner_known || owner == 0 || job->shared == MFS_MODEL_OTHERS_WRITE)
        return 1; /* the worker user, its own group only */
    if (job->shared == MFS_MODEL_GROUP_WRITE) {
        id->gid = job->owner_group; /* the group's reach, no user's */
        return 1;
    }
    id->uid = owner;
    /* getpwuid_r: the daemon is multithreaded */
    char buf[16384];
    struct passwd pw, *res = NULL;
    if (getpwuid_r(owner, &pw, buf, sizeof buf, &res) != 0 || !res)
        return 1; /* a uid nobody is named: its own files, and the world's */
    id->gid = pw.pw_gid;
    int n = MFS_WORKER_GROUPS_MAX;
    if (getgrouplist(pw.pw_name, pw.pw_gid, id->groups, &n) < 0)
        n = MFS_WORKER_GROUPS_MAX; /* more than fit: the first ones */
    id->ngroups = n < 0 ? 0 : n > MFS_WORKER_GROUPS_MAX ? MFS_WORKER_GROUPS_MAX : n;
    return 1;
}

void mfs_nofile_raise(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

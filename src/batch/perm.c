/* Who may read what meshfs-convert writes (docs/security.md, S1; issue 33).
 *
 * A view's readers are the mount's: its model's owner and group, with the
 * read bits every input grants (the model, each dependency, the folders a
 * dependency lies in outside the model's own path).  A file that holds it
 * is the writer's, so its bits are narrowed again by the same rule, from
 * the view to the file: only a class of users who could read the view
 * through the mount may read the file.  The writer keeps its own read and
 * write: it read every input to make it. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/batch.h"

static int on_model_path(const char *path, size_t len, const char *model, size_t mdir)
{
    return len <= mdir && strncmp(path, model, len) == 0 && (len == mdir || model[len] == '/');
}

int mfs_batch_view_perm(int rootfd, const char *model, char *const *paths, const struct stat *in,
                        uint32_t n, mfs_view_perm *out, mfs_err *err)
{
    out->perm = 0;
    out->uid = out->gid = 0;
    out->dirs = NULL;
    out->dir_st = NULL;
    out->ndirs = 0;
    if (n == 0)
        return 0; /* no inputs known: only the writer */
    out->uid = in[0].st_uid;
    out->gid = in[0].st_gid;
    mode_t perm = 0444;
    for (uint32_t i = 0; i < n; i++)
        perm = mfs_perm_narrow(perm, out->uid, out->gid, in[i].st_uid, in[i].st_gid,
                               in[i].st_mode, 0);
    const char *slash = strrchr(model, '/');
    size_t mdir = slash ? (size_t)(slash - model) : 0;
    for (uint32_t i = 1; i < n && perm; i++)
        for (const char *p = strchr(paths[i], '/'); p && perm; p = strchr(p + 1, '/')) {
            size_t len = (size_t)(p - paths[i]);
            if (on_model_path(paths[i], len, model, mdir))
                continue;
            char dir[4096];
            struct stat st;
            if (len >= sizeof dir)
                return mfs_err_sys(err, ENAMETOOLONG, "%s: path too long", paths[i]);
            memcpy(dir, paths[i], len);
            dir[len] = '\0';
            if (fstatat(rootfd, dir, &st, 0) < 0) {
                perm = 0; /* cannot tell: only the writer */
                break;
            }
            perm = mfs_perm_narrow(perm, out->uid, out->gid, st.st_uid, st.st_gid, st.st_mode, 1);
        }
    out->perm = perm;
    return 0;
}

int mfs_batch_settle_mode(int fd, const mfs_batch_readers *r, mode_t base, mfs_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return mfs_errf(err, "%s", strerror(errno));
    mode_t want = base;
    if (r && r->known) {
        /* root gives the file the view's group, so a group the mount lets
         * read the view reads the file too; anyone else keeps their own */
        if (geteuid() == 0 && st.st_gid != r->gid) {
            if (fchown(fd, (uid_t)-1, r->gid) < 0)
                return mfs_errf(err, "%s", strerror(errno));
            st.st_gid = r->gid;
        }
        mode_t read = mfs_perm_narrow(0444, st.st_uid, st.st_gid, r->uid, r->gid, r->perm, 0);
        want &= (mode_t)(S_IRUSR | S_IWUSR | ((read & S_IRGRP) ? S_IRGRP | S_IWGRP : 0) |
                         ((read & S_IROTH) ? S_IROTH | S_IWOTH : 0));
    }
    if ((st.st_mode & 07777) != want && fchmod(fd, want) < 0)
        return mfs_errf(err, "%s", strerror(errno));
    return 0;
}

void mfs_batch_readers_narrow(mfs_batch_readers *acc, uid_t uid, gid_t gid, const struct stat *file)
{
    if (!acc->known) {
        *acc = (mfs_batch_readers){.known = 1, .perm = 0444, .uid = uid, .gid = gid};
    }
    acc->perm = mfs_perm_narrow(acc->perm, acc->uid, acc->gid, file->st_uid, file->st_gid,
                                file->st_mode, 0);
}

/* Claiming and purging output folders (spawn_int.h). */
#include "spawn_int.h"

/* Empties the directory open at fd, depth levels deep at most. */
static void purge(int fd, int depth)
{
    int own = dup(fd);
    DIR *d = own >= 0 ? fdopendir(own) : NULL;
    if (!d) {
        if (own >= 0)
            close(own);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (unlinkat(fd, de->d_name, 0) == 0 || errno != EISDIR || depth <= 1)
            continue;
        int sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
            purge(sub, depth - 1);
            close(sub);
        }
        unlinkat(fd, de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

/* Makes the outputs what the parent expects: regular files with one link
 * at outdir/<fmt>.  A worker that switched user wrote them in its own
 * subdirectory: each is checked without following links, given to us and
 * moved up; the subdirectory and anything else in it go.  A vouched-for
 * output that fails the check fails its format (a sound worker never
 * leaves a link or a directory there). */
void mfs_sp_claim_outputs(const mfs_job *job, mfs_report *rep, int drop, uid_t uid)
{
    int dfd = open(job->outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    int wfd = drop ? openat(dfd, MFS_SANDBOX_OUT_SUBDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                   : -1;
    int from = wfd >= 0 ? wfd : dfd;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job->formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        int fd = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            continue; /* not written: the report says why */
        struct stat st;
        int good = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                   (wfd < 0 || st.st_uid == uid);
        if (good && wfd >= 0)
            good = fchown(fd, geteuid(), getegid()) == 0 && renameat(wfd, name, dfd, name) == 0;
        if (fd >= 0)
            close(fd);
        if (good)
            continue;
        unlinkat(from, name, 0);
        if (rep->ok && rep->fmt[f].ok) {
            rep->fmt[f].ok = 0;
            snprintf(rep->fmt[f].error, sizeof rep->fmt[f].error,
                     "%s: the worker's output is not a regular file of its own", name);
        }
    }
    if (wfd >= 0) {
        purge(wfd, 8);
        close(wfd);
        unlinkat(dfd, MFS_SANDBOX_OUT_SUBDIR, AT_REMOVEDIR);
    }
    close(dfd);
}

int mfs_sp_create_outputs(const mfs_job *job, int *dfd, int *out, int *rd, int *nout)
{
    *nout = 0;
    *dfd = open(job->outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dfd < 0)
        return -1;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job->formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        /* an emptied output of an earlier run of this directory is used
         * again (convert.h, keep_outputs): no inode allocated a view.
         * Its writer is gone: that run's child is dead, or held no
         * writable handle (the lease) and can open none (its sandbox). */
        int fd = openat(*dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        int r = fd >= 0 ? openat(*dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
        if (r < 0) {
            if (fd >= 0) {
                close(fd);
                unlinkat(*dfd, name, 0);
            }
            for (int g = f - 1, k = *nout - 1; g >= 0; g--)
                if (job->formats & (1u << g)) {
                    unlinkat(*dfd, mfs_format_get((mfs_format)g)->name, 0);
                    close(out[k]);
                    close(rd[k--]);
                }
            close(*dfd);
            *dfd = -1;
            *nout = 0;
            return -1;
        }
        out[*nout] = fd;
        rd[(*nout)++] = r;
    }
    return 0;
}

/* claim_outputs for files made by create_outputs: a format the report
 * vouches for keeps its file if it is still the one made here (a regular
 * file with one link); every other file goes.  The child can neither
 * create, link nor remove a file (its sandbox; it holds only the open
 * files), so a file that is no longer the one made here was removed or
 * replaced from outside (the job folder deleted under the run): the
 * machine's failure, not the model's, so transient and never remembered
 * against the model. */
void mfs_sp_claim_fd_outputs(const mfs_job *job, mfs_report *rep, int dfd, const int *out)
{
    for (int f = 0, k = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job->formats & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        int fd = out[k++];
        int vouched = rep->ok && rep->fmt[f].ok;
        struct stat a, b;
        const char *why = NULL;
        if (vouched && (fstat(fd, &a) < 0 || fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0))
            why = errno == ENOENT ? "it was removed during the run" : strerror(errno);
        else if (vouched && (a.st_dev != b.st_dev || a.st_ino != b.st_ino || !S_ISREG(b.st_mode)))
            why = "it was replaced during the run";
        else if (vouched && b.st_nlink != 1)
            why = "it was linked elsewhere during the run";
        int good = vouched && !why;
        close(fd);
        if (good)
            continue;
        unlinkat(dfd, name, 0);
        if (vouched) {
            rep->outputs_lost = 1;
            rep->fmt[f].ok = 0;
            rep->fmt[f].transient = 1;
            snprintf(rep->fmt[f].error, sizeof rep->fmt[f].error,
                     "%s: the worker's output is not the file it was given (%s)", name, why);
        }
    }
    close(dfd);
}

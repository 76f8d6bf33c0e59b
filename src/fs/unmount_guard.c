/* auto_unmount done by meshfs itself (unmount_guard.h says why). */
#include "unmount_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "meshfs/log.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *o++ = *s;
        }
    }
    *o = 0;
}

/* The device ("major:minor") of the topmost fuse.meshfs mount at mnt, into
 * dev; 0 if there is one, -1 if not. */
static int mount_dev(const char *mnt, char *dev, size_t devlen)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int found = -1;
    while (getline(&line, &cap, f) > 0) {
        /* id parent major:minor root mountpoint opts... - fstype source super */
        char *sep = strstr(line, " - ");
        char *save, *fields[5];
        int n = 0;
        if (!sep)
            continue;
        *sep = 0;
        for (char *t = strtok_r(line, " ", &save); t && n < 5; t = strtok_r(NULL, " ", &save))
            fields[n++] = t;
        if (n < 5 || strncmp(sep + 3, "fuse.meshfs ", 12) != 0)
            continue;
        unescape(fields[4]);
        if (strcmp(fields[4], mnt) == 0) {
            snprintf(dev, devlen, "%s", fields[2]); /* later lines are mounted on top */
            found = 0;
        }
    }
    free(line);
    fclose(f);
    return found;
}

static void guard(int rfd, const char *mnt, const char *dev)
{
    char buf[1], now[64];
    while (read(rfd, buf, 1) < 0 && errno == EINTR)
        ;
    if (mount_dev(mnt, now, sizeof now) < 0 || strcmp(now, dev) != 0)
        _exit(0); /* unmounted cleanly, or no longer ours */
    if (geteuid() == 0) {
        umount2(mnt, MNT_DETACH);
        _exit(0);
    }
    /* a user's mount: only the setuid helper may unmount it */
    execlp("fusermount3", "fusermount3", "-u", "-z", "-q", "--", mnt, (char *)NULL);
    _exit(127);
}

int mfs_unmount_guard_start(const char *mnt)
{
    char real[PATH_MAX], dev[64];
    /* realpath of a fresh FUSE mount's root would ask the daemon, which is
     * not serving yet: resolve the parent instead */
    char *copy = strdup(mnt), *slash;
    if (!copy)
        return -1;
    while ((slash = strrchr(copy, '/')) && slash != copy && !slash[1])
        *slash = 0; /* trailing slashes */
    slash = strrchr(copy, '/');
    const char *parent = !slash ? "." : slash == copy ? "/" : copy;
    const char *base = slash ? slash + 1 : copy;
    if (slash && slash != copy)
        *slash = 0;
    char rparent[PATH_MAX];
    int ok = realpath(parent, rparent) != NULL;
    if (ok)
        snprintf(real, sizeof real, "%s%s%s", rparent, strcmp(rparent, "/") ? "/" : "", base);
    free(copy);
    if (!ok || mount_dev(real, dev, sizeof dev) < 0) {
        mfs_log(MFS_LOG_WARNING, "%s: mount not found in /proc/self/mountinfo; no auto_unmount",
                mnt);
        return -1;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        mfs_log(MFS_LOG_WARNING, "auto_unmount: pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        mfs_log(MFS_LOG_WARNING, "auto_unmount: fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        /* its own session, deaf to the signals that stop the daemon, and
         * holding nothing of the daemon's (above all not /dev/fuse, whose
         * last close is what aborts a dead daemon's connection) */
        setsid();
        prctl(PR_SET_NAME, "meshfs-umount"); /* ps/pgrep tell it from the daemon */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        int rfd = dup2(p[0], 3) < 0 ? p[0] : 3;
        close_range(rfd == 3 ? 4 : 3, ~0u, 0);
        int null = open("/dev/null", O_RDWR); /* nor a caller's pipe */
        for (int fd = 0; null >= 0 && fd < 3; fd++)
            dup2(null, fd);
        guard(rfd, real, dev);
    }
    close(p[0]);
    /* p[1] stays open, never written, until the daemon is gone */
    return 0;
}

/* Writing the output tree (include/meshfs/batch.h).
 *
 * A file already holding exactly the bytes to write is left alone: its
 * mtime stays, so `rsync -a` (which compares size and mtime) sends nothing
 * for an unchanged view, and make-style rules downstream do not rebuild.
 * Comparing costs a read of the old file, which is far cheaper than the
 * network copy or rebuild it saves.  Everything else is written to a
 * temporary name beside dst and renamed over it, so a reader never sees a
 * half-written file and an interrupted run leaves the old one.  Each
 * temporary name is noted while it exists, and a run stopped by SIGINT,
 * SIGTERM or SIGHUP removes them before it ends (mfs_batch_clean_on_signal):
 * no partial file stays in OUTDIR for an `rsync -a` to ship.  A view
 * that is its cache entry's whole file shares its extents where the file
 * system can (clone_whole). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/batch.h"

#define CHUNK (1u << 20)

/* The umask can only be read by setting it, and the tool never changes
 * it: read once, not twice a file (and never set while another thread
 * creates a file). */
static mode_t umask_mode;
static pthread_once_t umask_once = PTHREAD_ONCE_INIT;

static void read_umask(void)
{
    mode_t u = umask(0);
    umask(u);
    umask_mode = 0666 & ~u;
}

static mode_t file_mode(void)
{
    pthread_once(&umask_once, read_umask);
    return umask_mode;
}

mode_t mfs_batch_file_mode(void)
{
    return file_mode();
}

/* ---- temporary names, removed when a signal stops the run ---- */

typedef struct tmp_name {
    struct tmp_name *next;
    int dir; /* 0 a file, 1 a folder of files, 2 a tree (a private cache) */
    char path[];
} tmp_name;

/* Held from a name's creation to its noting, and by the signal thread
 * from the signal to the end: no name is made that it does not remove. */
static pthread_mutex_t tmp_mu = PTHREAD_MUTEX_INITIALIZER;
static tmp_name *tmp_names;

/* Under tmp_mu.  Out of memory: not noted (only left behind on a signal). */
static void tmp_note(const char *path, int dir)
{
    size_t n = strlen(path) + 1;
    tmp_name *t = malloc(sizeof *t + n);
    if (!t)
        return;
    t->dir = dir;
    memcpy(t->path, path, n);
    t->next = tmp_names;
    tmp_names = t;
}

void mfs_batch_tmp_forget(const char *path)
{
    pthread_mutex_lock(&tmp_mu);
    for (tmp_name **p = &tmp_names; *p; p = &(*p)->next)
        if (!strcmp((*p)->path, path)) {
            tmp_name *t = *p;
            *p = t->next;
            free(t);
            break;
        }
    pthread_mutex_unlock(&tmp_mu);
}

int mfs_batch_mkstemp(char *tmpl)
{
    pthread_mutex_lock(&tmp_mu);
    int fd = mkstemp(tmpl);
    if (fd >= 0)
        tmp_note(tmpl, 0);
    pthread_mutex_unlock(&tmp_mu);
    return fd;
}

static char *mkdtemp_noted(char *tmpl, int kind)
{
    pthread_mutex_lock(&tmp_mu);
    char *d = mkdtemp(tmpl);
    if (d)
        tmp_note(tmpl, kind);
    pthread_mutex_unlock(&tmp_mu);
    return d;
}

char *mfs_batch_mkdtemp(char *tmpl)
{
    return mkdtemp_noted(tmpl, 1);
}

char *mfs_batch_mkdtemp_tree(char *tmpl)
{
    return mkdtemp_noted(tmpl, 2);
}

/* A symbolic link at a temporary name: 0, or -1 with errno. */
static int tmp_symlink(const char *target, const char *tmp)
{
    pthread_mutex_lock(&tmp_mu);
    int rc = symlink(target, tmp);
    if (rc == 0)
        tmp_note(tmp, 0);
    pthread_mutex_unlock(&tmp_mu);
    return rc;
}

/* A temporary folder holds only files (the package's views). */
static void remove_tmp_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char sub[PATH_MAX];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
            unlink(sub);
    if (d)
        closedir(d);
    rmdir(path);
}

/* For nftw: removes a tree whole. */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

void mfs_batch_remove_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A tree other threads and the workers may still be writing into (the
 * private cache, while the run is being stopped): removed again until it
 * is gone, for at most a second; what stays is swept by the next
 * --no-cache run (engine.c, orphans). */
static void remove_busy_tree(const char *path)
{
    struct stat st;
    for (int i = 0; i < 100 && lstat(path, &st) == 0; i++) {
        if (i)
            usleep(10000);
        mfs_batch_remove_tree(path);
    }
}

/* What the run's owner of a tree must do before it is removed on a stop
 * (engine.c: its private cache stops reviving); under tmp_mu. */
static void (*stop_hook)(void *);
static void *stop_ctx;

void mfs_batch_on_stop(void (*fn)(void *), void *ctx)
{
    pthread_mutex_lock(&tmp_mu);
    stop_hook = fn;
    stop_ctx = ctx;
    pthread_mutex_unlock(&tmp_mu);
}

static sigset_t stop_signals;

/* Waits for a stop signal; removes every temporary name (files first,
 * then the folders that held them, then the trees), then ends the process by that signal,
 * as it would have ended without this thread. */
static void *clean_on_signal(void *arg)
{
    (void)arg;
    int sig;
    while (sigwait(&stop_signals, &sig) != 0)
        ;
    pthread_mutex_lock(&tmp_mu); /* never released: no name is made now */
    if (stop_hook)
        stop_hook(stop_ctx);
    for (int dirs = 0; dirs < 3; dirs++)
        for (tmp_name *t = tmp_names; t; t = t->next)
            if (t->dir == dirs) {
                if (dirs == 2)
                    remove_busy_tree(t->path);
                else if (dirs)
                    remove_tmp_dir(t->path);
                else
                    unlink(t->path);
            }
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    _exit(128 + sig);
}

int mfs_batch_clean_on_signal(mfs_err *err)
{
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(&stop_signals);
    int n = 0;
    for (size_t i = 0; i < sizeof stops / sizeof *stops; i++) {
        /* one ignored stays ignored (nohup; a background job's SIGINT):
         * blocked, it would be queued for sigwait and end the run */
        struct sigaction sa;
        if (sigaction(stops[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            continue;
        sigaddset(&stop_signals, stops[i]);
        n++;
    }
    if (!n)
        return 0;
    int e = pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    pthread_t t;
    if (!e)
        e = pthread_create(&t, NULL, clean_on_signal, NULL);
    if (e)
        return mfs_errf(err, "cannot watch for signals: %s", strerror(e));
    pthread_detach(t);
    return 0;
}

/* 1 if the file at dst holds exactly `len` bytes equal to src's from off. */
static int same_bytes(int src, uint64_t off, uint64_t len, const char *dst)
{
    int fd = open(dst, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    struct stat st;
    int same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == len;
    char *a = same ? malloc(CHUNK) : NULL, *b = same ? malloc(CHUNK) : NULL;
    if (same && (!a || !b))
        same = 0;
    for (uint64_t done = 0; same && done < len;) {
        size_t want = len - done < CHUNK ? (size_t)(len - done) : CHUNK;
        ssize_t ra = pread(src, a, want, (off_t)(off + done));
        ssize_t rb = pread(fd, b, want, (off_t)done);
        if (ra <= 0 || ra != rb || memcmp(a, b, (size_t)ra) != 0)
            same = 0;
        else
            done += (uint64_t)ra;
    }
    free(a);
    free(b);
    close(fd);
    return same;
}

/* 1 if fd (empty) now shares src's extents: when the bytes are src's whole
 * file (a view kept in an entry file of its own), on a file system that
 * shares extents (XFS, Btrfs) with the cache's.  A metadata operation, and
 * no second copy of the bytes on disk.  Elsewhere FICLONE fails at once
 * (EOPNOTSUPP, EXDEV, EINVAL) and the caller copies.  copy_file_range
 * would share them too, but where it cannot it copies through a pipe:
 * on ext4, 15% slower than the caller's loop (benchmarks.md). */
static int clone_whole(int src, uint64_t off, uint64_t len, int fd)
{
    struct stat st;
    return off == 0 && len > 0 && fstat(src, &st) == 0 && (uint64_t)st.st_size == len &&
           ioctl(fd, FICLONE, src) == 0;
}

/* 1 if the file open at fd is no longer as was says (written since). */
static int changed(int fd, const struct stat *was)
{
    struct stat now;
    return fstat(fd, &now) < 0 || now.st_size != was->st_size ||
           now.st_mtim.tv_sec != was->st_mtim.tv_sec ||
           now.st_mtim.tv_nsec != was->st_mtim.tv_nsec ||
           now.st_ctim.tv_sec != was->st_ctim.tv_sec || now.st_ctim.tv_nsec != was->st_ctim.tv_nsec;
}

/* Writes len bytes of src from off to dst through a temporary name.  With
 * was (src's stat before), bytes written while they were read are a
 * failure, not a copy mixing old and new bytes. */
static int write_bytes(int src, uint64_t off, uint64_t len, const struct stat *was,
                       const char *dst, const mfs_batch_readers *readers, mfs_err *err)
{
    char tmp[PATH_MAX];
    const char *slash = strrchr(dst, '/');
    if (snprintf(tmp, sizeof tmp, "%.*s.meshfs-tmp-XXXXXX", slash ? (int)(slash - dst + 1) : 0,
                 dst) >= (int)sizeof tmp)
        return mfs_errf(err, "%s", strerror(ENAMETOOLONG));
    int fd = mfs_batch_mkstemp(tmp);
    if (fd < 0)
        return mfs_errf(err, "%s", strerror(errno));
    uint64_t done = clone_whole(src, off, len, fd) ? len : 0;
    char *buf = done < len ? malloc(CHUNK) : NULL;
    int rc = buf || done == len ? 0 : mfs_errf(err, "out of memory");
    while (rc == 0 && done < len) {
        size_t want = len - done < CHUNK ? (size_t)(len - done) : CHUNK;
        ssize_t r = pread(src, buf, want, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = mfs_errf(err, "reading: %s", r < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        for (ssize_t w = 0; rc == 0 && w < r;) {
            ssize_t k = pwrite(fd, buf + w, (size_t)(r - w), (off_t)(done + (uint64_t)w));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                rc = mfs_errf(err, "%s", strerror(errno));
            else
                w += k;
        }
        done += (uint64_t)r;
    }
    free(buf);
    if (rc == 0 && was && changed(src, was))
        rc = mfs_errf(err, "changed while it was copied (not copied; run again)");
    if (rc == 0)
        rc = mfs_batch_settle_mode(fd, readers, file_mode(), err);
    if (close(fd) < 0 && rc == 0)
        rc = mfs_errf(err, "%s", strerror(errno));
    if (rc == 0 && rename(tmp, dst) < 0)
        rc = mfs_errf(err, "%s", strerror(errno));
    if (rc < 0)
        unlink(tmp);
    mfs_batch_tmp_forget(tmp);
    return rc;
}

/* An unchanged file's mode, as a new one would get it: an earlier run
 * (or an older meshfs-convert) may have left it readable by more. */
static int settle_existing(const char *dst, const mfs_batch_readers *readers, mfs_err *err)
{
    int fd = open(dst, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return mfs_errf(err, "%s", strerror(errno));
    int rc = mfs_batch_settle_mode(fd, readers, file_mode(), err);
    close(fd);
    return rc;
}

int mfs_batch_write_hit(const mfs_cache_hit *hit, const char *dst,
                        const mfs_batch_readers *readers, int *unchanged, mfs_err *err)
{
    *unchanged = same_bytes(hit->fd, hit->offset, hit->length, dst);
    return *unchanged ? settle_existing(dst, readers, err)
                      : write_bytes(hit->fd, hit->offset, hit->length, NULL, dst, readers, err);
}

int mfs_batch_copy_file(const char *src, const char *dst, int *unchanged, mfs_err *err)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return mfs_errf(err, "%s", strerror(e));
    }
    /* a plain file through the mount is the file itself, its own bits */
    mfs_batch_readers own = {1, st.st_mode & 0444, st.st_uid, st.st_gid};
    *unchanged = same_bytes(fd, 0, (uint64_t)st.st_size, dst);
    int rc = *unchanged ? settle_existing(dst, &own, err)
                        : write_bytes(fd, 0, (uint64_t)st.st_size, &st, dst, &own, err);
    close(fd);
    return rc;
}

int mfs_batch_make_link(const char *target, const char *dst, int *unchanged, mfs_err *err)
{
    char now[PATH_MAX];
    ssize_t n = readlink(dst, now, sizeof now - 1);
    if (n >= 0) {
        now[n] = '\0';
        if (!strcmp(now, target)) {
            *unchanged = 1;
            return 0;
        }
    }
    *unchanged = 0;
    char tmp[PATH_MAX];
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, sizeof tmp, "%s.meshfs-tmp-%d-%d", dst, (int)getpid(), attempt);
        if (tmp_symlink(target, tmp) == 0)
            break;
        if (errno != EEXIST)
            return mfs_errf(err, "%s", strerror(errno));
    }
    int rc = rename(tmp, dst) < 0 ? mfs_errf(err, "%s", strerror(errno)) : 0;
    if (rc < 0)
        unlink(tmp);
    mfs_batch_tmp_forget(tmp);
    return rc;
}

int mfs_batch_mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0777) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

const char *mfs_batch_quote(const char *s, char *buf, size_t n)
{
    int plain = 1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            plain = 0;
    if (plain) {
        snprintf(buf, n, "%s", s);
        return buf;
    }
    size_t o = 0;
#define PUT(c) do { if (o + 1 < n) buf[o++] = (c); } while (0)
    PUT('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\n') {
            PUT('\\'); PUT('n');
        } else if (*p == '\t') {
            PUT('\\'); PUT('t');
        } else if (*p == '\r') {
            PUT('\\'); PUT('r');
        } else if (*p == '"' || *p == '\\') {
            PUT('\\'); PUT((char)*p);
        } else if (*p < 0x20 || *p == 0x7f) {
            static const char hex[] = "0123456789abcdef";
            PUT('\\'); PUT('x'); PUT(hex[*p >> 4]); PUT(hex[*p & 15]);
        } else {
            PUT((char)*p);
        }
    }
    PUT('"');
#undef PUT
    buf[o < n ? o : n - 1] = '\0';
    return buf;
}

/* The daemon's log (include/meshfs/util.h, "log").
 *
 * Syslog lines are sent here, not with syslog(3): glibc's socket blocks, so
 * a syslog daemon that stops reading (a stuck journald, a full queue of 10
 * datagrams) would stop every FUSE thread that logs, and with them the
 * mount.  Lines that find the socket full are dropped and counted instead,
 * and the count is sent before the next line that gets through. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "meshfs/util.h"

static const char *const names[] = {"error", "warning", "info", "debug"};
static const int priorities[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

static const char *ident = "meshfs";
static atomic_int threshold = MFS_LOG_DEFAULT;
static atomic_int use_syslog;

int mfs_log_level_parse(const char *name, const char *s, mfs_log_level *out, mfs_err *err)
{
    for (int i = 0; i <= MFS_LOG_DEBUG; i++)
        if (s && !strcmp(s, names[i])) {
            *out = (mfs_log_level)i;
            return 0;
        }
    return mfs_errf(err, "%s=%s: expected error, warning, info or debug", name, s ? s : "");
}

const char *mfs_log_level_name(mfs_log_level level)
{
    return level >= MFS_LOG_ERROR && level <= MFS_LOG_DEBUG ? names[level] : "?";
}

void mfs_log_setup(const char *id, mfs_log_level level)
{
    ident = id;
    atomic_store(&threshold, level);
}

mfs_log_level mfs_log_get_level(void)
{
    return (mfs_log_level)atomic_load(&threshold);
}

/* ---- syslog: RFC 3164 datagrams to /dev/log, as glibc writes them ---- */

static pthread_mutex_t sl_lock = PTHREAD_MUTEX_INITIALIZER;
static int sl_fd = -1;
static pid_t sl_pid;
static unsigned long sl_dropped;

static void sl_connect(void)
{
    if (sl_fd >= 0)
        close(sl_fd);
    sl_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", _PATH_LOG);
    if (sl_fd >= 0 && connect(sl_fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(sl_fd);
        sl_fd = -1;
    }
}

/* 0 sent, -1 not (the line is lost).  With sl_lock held. */
static int sl_put(int priority, const char *text)
{
    char line[2300], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof stamp, "%b %e %T", &tm))
        stamp[0] = '\0';
    int n = snprintf(line, sizeof line, "<%d>%s %s[%d]: %s", LOG_DAEMON | priority, stamp, ident,
                     (int)sl_pid, text);
    if (n < 0)
        return -1;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (sl_fd < 0)
            sl_connect();
        if (sl_fd >= 0 && send(sl_fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
            return 0;
        if (sl_fd >= 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
            return -1; /* the reader is behind: not worth waiting for */
        /* the syslog daemon restarted (ECONNREFUSED, ENOTCONN): once more
         * on a new socket */
        if (sl_fd >= 0)
            close(sl_fd);
        sl_fd = -1;
    }
    return -1;
}

static void sl_send(int priority, const char *text)
{
    pthread_mutex_lock(&sl_lock);
    if (sl_dropped) {
        char note[128];
        snprintf(note, sizeof note, "%lu log line%s dropped: syslog was not reading", sl_dropped,
                 sl_dropped == 1 ? "" : "s");
        if (sl_put(LOG_WARNING, note) == 0)
            sl_dropped = 0;
    }
    if (sl_put(priority, text) < 0)
        sl_dropped++;
    pthread_mutex_unlock(&sl_lock);
}

/* ---- -o log_file: lines appended to a file instead of syslog ---------- */

/* Opened before the daemon detaches (a bad path is a usage error then),
 * written once it has; one write(2) a line on an O_APPEND descriptor, so
 * lines of several threads never interleave. */
static int file_fd = -1;

int mfs_log_file_open(const char *path, mfs_err *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    if (fd < 0)
        return mfs_errf(err, "-o log_file=%s: %s", path, strerror(errno));
    /* above 2: detaching puts /dev/null on 0, 1 and 2 */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    if (high < 0)
        return mfs_errf(err, "-o log_file=%s: %s", path, strerror(errno));
    file_fd = high;
    return 0;
}

static void file_send(mfs_log_level level, const char *text)
{
    char line[2300], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm))
        stamp[0] = '\0';
    int n = snprintf(line, sizeof line, "%s %s[%d]: %s: %s\n", stamp, ident, (int)sl_pid,
                     names[level], text);
    if (n > 0) {
        size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
        ssize_t w = write(file_fd, line, len);
        (void)w; /* nowhere left to say it */
    }
}

int mfs_log_syslog_reachable(void)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", _PATH_LOG);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

void mfs_log_to_syslog(void)
{
    pthread_mutex_lock(&sl_lock);
    sl_pid = getpid(); /* the detached daemon's */
    sl_connect();      /* now, so a missing /dev/log costs one try per line later */
    pthread_mutex_unlock(&sl_lock);
    atomic_store(&use_syslog, 1);
}

int mfs_log_enabled(mfs_log_level level)
{
    return (int)level <= atomic_load(&threshold);
}

void mfs_vlog(mfs_log_level level, const char *fmt, va_list ap)
{
    if (level < MFS_LOG_ERROR || level > MFS_LOG_DEBUG || !mfs_log_enabled(level))
        return;
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* one line each: a newline in a file name must not start a line that
     * looks like another event */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (atomic_load(&use_syslog) && file_fd >= 0)
        file_send(level, msg);
    else if (atomic_load(&use_syslog))
        sl_send(priorities[level], msg);
    else
        fprintf(stderr, "%s: %s: %s\n", ident, names[level], msg);
}

void mfs_log(mfs_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mfs_vlog(level, fmt, ap);
    va_end(ap);
}

void mfs_vlog_foreign(mfs_log_level level, const char *fmt, va_list ap)
{
    if (level < MFS_LOG_ERROR || level > MFS_LOG_DEBUG)
        level = MFS_LOG_ERROR;
    if (!atomic_load(&use_syslog)) {
        vfprintf(stderr, fmt, ap);
        return;
    }
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0'; /* one line, like meshfs's own */
    if (file_fd >= 0)
        file_send(level, msg);
    else
        sl_send(priorities[level], msg);
}

/* The remote tier's settings checked at mount time (include/meshfs/remote.h):
 * the remote= URL, the token file, and the URL as messages show it, never
 * with its password. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/util.h"
#include "meshfs/remote.h"

/* url without the user:password@ of its authority, malloc'd: log lines
 * name the server, never a password. */
char *mfs_remote_public_name(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    size_t alen = strcspn(host, "/");
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (host[i] == '@')
            at = host + i;
    size_t pre = (size_t)(host - url);
    const char *rest = at ? at + 1 : host;
    size_t n = pre + strlen(rest) + 1;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%.*s%s", (int)pre, url, rest);
    return out;
}

/* shown: url as messages show it, without user:password@ */
static int check_url(const char *what, const char *url, const char *shown, mfs_err *err)
{
    const char *rest = !strncmp(url, "http://", 7) ? url + 7 : !strncmp(url, "https://", 8) ? url + 8 : NULL;
    if (!rest)
        return mfs_errf(err, "%s=%s: must start with http:// or https://", what, shown);
    if (!rest[0] || rest[0] == '/' || rest[0] == ':')
        return mfs_errf(err, "%s=%s: no host", what, shown);
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#')
            return mfs_errf(err, "%s=%s: spaces, '?' and '#' are not allowed", what, shown);
    return 0;
}

int mfs_remote_check_url(const char *what, const char *url, mfs_err *err)
{
    char *shown = mfs_remote_public_name(url);
    if (!shown)
        return mfs_errf(err, "out of memory");
    int rc = check_url(what, url, shown, err);
    free(shown);
    return rc;
}

int mfs_remote_read_token(const char *path, char **token, mfs_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return mfs_errf(err, "remote_token_file=%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return mfs_errf(err, "remote_token_file=%s: not a regular file", path);
    }
    if (st.st_mode & 0077) {
        close(fd);
        return mfs_errf(err, "remote_token_file=%s: mode %04o gives group or others access to it; "
                        "chmod 600 it", path, (unsigned)(st.st_mode & 07777));
    }
    char buf[4096];
    int64_t n = mfs_pread_full(fd, buf, sizeof buf - 1, 0);
    int e = errno;
    close(fd);
    if (n < 0)
        return mfs_errf(err, "remote_token_file=%s: %s", path, strerror(e));
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!buf[0])
        return mfs_errf(err, "remote_token_file=%s: empty", path);
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < ' ' || (unsigned char)*p > '~')
            return mfs_errf(err, "remote_token_file=%s: the token has a byte a header cannot carry",
                            path);
    *token = strdup(buf);
    return *token ? 0 : mfs_errf(err, "out of memory");
}

/* Descriptors over a unix socket (include/meshfs/convert.h): one place for
 * the control-message arithmetic the server and its parent both need. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "meshfs/convert.h"

#define MAX_FDS 16

int mfs_send_fds(int sock, const void *buf, size_t n, const int *fds, int nfds, int flags)
{
    union {
        char b[CMSG_SPACE(MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {(void *)buf, n};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds < 0 || nfds > MAX_FDS)
        return -1;
    if (nfds > 0) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.b;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
    }
    ssize_t w;
    while ((w = sendmsg(sock, &mh, MSG_NOSIGNAL | flags)) < 0 && errno == EINTR)
        ;
    return w == (ssize_t)n ? 0 : -1;
}

ssize_t mfs_recv_fds(int sock, void *buf, size_t cap, int flags, int *fds, int max, int *nfds,
                     int *truncated)
{
    union {
        char b[CMSG_SPACE(MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {buf, cap};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                        .msg_controllen = sizeof u.b};
    *nfds = 0;
    if (truncated)
        *truncated = 0;
    ssize_t r;
    while ((r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags)) < 0 && errno == EINTR)
        ;
    if (r < 0)
        return -1; /* the control buffer was not written: no descriptor came */
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (*nfds < max)
                    fds[(*nfds)++] = fd;
                else
                    close(fd);
            }
        }
    if (truncated)
        *truncated = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    return r;
}

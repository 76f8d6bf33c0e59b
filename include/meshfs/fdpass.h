/* One record and its descriptors over a unix socket (SCM_RIGHTS): what the
 * fork server and its parent pass each other (fork_server.h). */
#ifndef MESHFS_FDPASS_H
#define MESHFS_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* Sends buf[0..n) with nfds descriptors (at most 16), retrying on EINTR;
 * flags are added to MSG_NOSIGNAL (MSG_DONTWAIT).  0, or -1 (the peer is
 * gone, the socket is full under MSG_DONTWAIT, or too many descriptors). */
int mfs_send_fds(int sock, const void *buf, size_t n, const int *fds, int nfds, int flags);

/* Receives one record into buf (cap bytes), retrying on EINTR; flags are
 * added to MSG_CMSG_CLOEXEC.  Keeps at most max descriptors in fds (*nfds
 * of them) and closes the rest.  *truncated (may be NULL) says whether the
 * record or its descriptors did not fit.  Returns the record's length, 0
 * at EOF, -1 on error (errno; nothing kept). */
ssize_t mfs_recv_fds(int sock, void *buf, size_t cap, int flags, int *fds, int max, int *nfds,
                     int *truncated);

#endif

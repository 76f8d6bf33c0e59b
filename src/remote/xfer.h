/* One HTTP exchange of the remote tier (tier.c, upload.c, lease.c), held to the two bounds a
 * hostile or broken server must not be able to break (docs/security.md):
 *
 *  - its answer begins within the remote timeout of the request being
 *    sent, whatever the status: a 404 after 4 s is a fault, not a miss;
 *  - a download stays within the object's size limit (a Content-Length
 *    over it is refused before the body is read, a longer body is cut
 *    there) and is counted against the cache's cap while it grows in tmp/
 *    (mfs_cache_reserve), so no number of downloads leaves the cache over
 *    its cap. */
#ifndef MESHFS_REMOTE_XFER_H
#define MESHFS_REMOTE_XFER_H

#include <curl/curl.h>

#include "meshfs/cache.h"

/* Why a download was stopped by us rather than by the server. */
enum { MFS_RX_OK, MFS_RX_OVER_LIMIT, MFS_RX_NO_ROOM, MFS_RX_DISK };

typedef struct mfs_rx {
    /* set by the caller */
    mfs_cache *c;
    int fd;         /* the download's file in tmp/; -1: no body (HEAD) */
    uint64_t limit; /* the largest object accepted, bytes */
    /* set by the exchange */
    CURL *h;
    int answered;      /* a header line came */
    uint64_t n;        /* body bytes written to fd */
    uint64_t declared; /* a 2xx answer's Content-Length; 0 none */
    uint64_t reserved; /* held against the cache's cap */
    int refused;       /* MFS_RX_* */
    int err;           /* errno of a failed write (MFS_RX_DISK) */
} mfs_rx;

/* Makes x h's header and body callbacks. */
void mfs_rx_attach(CURL *h, mfs_rx *x);
/* Runs h to its end.  No header line within answer_ms of the request
 * being sent (the connection is bounded by h's own connect timeout): the
 * exchange is dropped, *late set, CURLE_OPERATION_TIMEDOUT. */
CURLcode mfs_rx_perform(CURL *h, mfs_rx *x, unsigned answer_ms, int *late);
/* Gives back x's reservation; kept: bytes of it now an entry (0: the file
 * was discarded). */
void mfs_rx_release(mfs_rx *x, uint64_t kept);

#endif

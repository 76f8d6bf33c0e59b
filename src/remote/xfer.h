/* One HTTP exchange of the libcurl backend (http.c), held to the two
 * bounds a hostile or broken server must not be able to break
 * (docs/security.md):
 *
 *  - its answer begins within the remote timeout of the request being
 *    sent, whatever the status: a 404 after 4 s is a fault, not a miss;
 *  - a download's body goes to the tier's sink (include/meshfs/remote.h),
 *    which bounds it (the object's size limit, the cache's cap) and may
 *    stop it: a declared length before any of the body is read, then each
 *    piece. */
#ifndef MESHFS_REMOTE_XFER_H
#define MESHFS_REMOTE_XFER_H

#include <curl/curl.h>

#include "meshfs/remote.h"

typedef struct mfs_rx {
    /* set by the caller */
    const mfs_remote_sink *sink; /* NULL: no body (HEAD) */
    /* set by the exchange */
    CURL *h;
    int answered; /* a header line came */
    uint64_t n;   /* body bytes given to the sink */
    int stopped;  /* the sink stopped it */
} mfs_rx;

/* Makes x h's header and body callbacks. */
void mfs_rx_attach(CURL *h, mfs_rx *x);
/* Runs h to its end.  No header line within answer_ms of the request
 * being sent (the connection is bounded by h's own connect timeout): the
 * exchange is dropped, *late set, CURLE_OPERATION_TIMEDOUT. */
CURLcode mfs_rx_perform(CURL *h, mfs_rx *x, unsigned answer_ms, int *late);

#endif

/* Leases on the remote tier: one conversion per model per studio, even when
 * machines start at the same instant (issue 35 item 4; docs/remote-cache.md,
 * "Leases").
 *
 * Before converting a model whose manifest the server lacks, a machine
 * takes a lease on it through the same server: a WebDAV LOCK (exclusive,
 * write, Depth 0, Timeout: Second-<bound>) on
 * <url>/v<container version>/lease/<the manifest key's 32 hex>, and an
 * UNLOCK with its Lock-Token once the manifest's upload is done (or at
 * once when there is nothing to upload).  nginx's dav_ext answers a LOCK
 * in a folder that does not exist with 409, and keeps that lock anyway
 * until it times out: that model is converted without a lease (whoever
 * else asks waits for its upload), and the folder is made, once a
 * session, by a PUT of <url>/v<N>/lease/README.
 *
 * A machine that finds the model leased (423 Locked) does not convert: it
 * polls the manifest with HEAD, 100 ms doubling to 1 s, and between polls
 * asks for the lease again.  It ends when the manifest is there (the
 * caller then fetches it), when the lease is free again without one (the
 * holder died and the server's lock timed out, or its upload failed: it
 * now holds the lease and converts), or when its bound passes
 * (convert_timeout plus twice remote_data_timeout_s: it converts without
 * one).  Nothing waits forever, and a server that fails meanwhile ends the
 * wait at once.
 *
 * A server without LOCK (405, 501; 401/403: the token may not lock) is
 * said once in the log, and the session converts as it did before leases.
 * Read-only sessions, and sessions whose reads or uploads are backing off,
 * never lock.  Everything the server answers is untrusted: a Lock-Token
 * that is not a Coded-URL (<...>, at most 256 bytes of visible ASCII) is an
 * error named in the log, and a body is read to 64 KiB at most. */
#ifndef MESHFS_REMOTE_LEASE_H
#define MESHFS_REMOTE_LEASE_H

#include <stdint.h>

#include "meshfs/cache.h"
#include "meshfs/remote.h"

typedef enum mfs_lease_outcome {
    MFS_LEASE_NONE,    /* no lease: convert as without leases */
    MFS_LEASE_HELD,    /* this machine holds it: convert, then mfs_remote_lease_end */
    MFS_LEASE_ARRIVED, /* the manifest is on the server now: fetch it */
} mfs_lease_outcome;

typedef struct mfs_remote_lease_stats {
    uint64_t taken;       /* leases this machine took (takeovers included) */
    uint64_t waited;      /* models found leased by another machine */
    uint64_t taken_over;  /* waits that ended without the object: the lease
                             expired or was freed (then taken), or the
                             bound passed (then converted without one) */
    uint64_t unsupported; /* 1 once the server refused LOCK (405, 501, 401,
                             403): the session then takes no leases */
    uint64_t errors;      /* LOCK or UNLOCK that failed otherwise (transport,
                             5xx, a bad Lock-Token, 409 ...) */
} mfs_remote_lease_stats;

/* Before converting the model whose manifest key is mk, which the server
 * lacks.  May wait (see above).  r NULL: MFS_LEASE_NONE. */
mfs_lease_outcome mfs_remote_lease(mfs_remote *r, const mfs_cache_key *mk);
/* After the conversion of a model this machine holds the lease on (a
 * no-op otherwise).  after_upload: the manifest mk was just queued for
 * upload, and the lease is freed when the upload thread is done with it;
 * else freed now. */
void mfs_remote_lease_end(mfs_remote *r, const mfs_cache_key *mk, int after_upload);

void mfs_remote_lease_get_stats(mfs_remote *r, mfs_remote_lease_stats *out);

#endif

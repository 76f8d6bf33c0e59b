/* The glue between the remote tier (remote.c) and its leases
 * (remote_lease.c; contract in include/meshfs/remote_lease.h).  The
 * client owns one mfs_lease, made with it and freed with it. */
#ifndef MESHFS_CACHE_REMOTE_LEASE_H
#define MESHFS_CACHE_REMOTE_LEASE_H

#include <curl/curl.h>

#include "meshfs/remote_lease.h"

typedef struct mfs_lease mfs_lease;

typedef struct mfs_lease_cfg {
    mfs_remote *r;           /* the client, for mfs_remote_leasable */
    const char *url, *name;  /* the client's: outlive the leases */
    const char *auth;        /* "Authorization: ..." or NULL */
    unsigned timeout_ms, data_timeout_s;
    unsigned convert_timeout_s; /* 0: the default (60) */
    CURLSH *share;
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
} mfs_lease_cfg;

/* NULL: out of memory (the client then runs without leases). */
mfs_lease *mfs_lease_new(const mfs_lease_cfg *cfg);
/* Frees every lease still held (an UNLOCK each, best effort). */
void mfs_lease_free(mfs_lease *l);
/* The upload thread is done with the object (key, manifest), sent or not. */
void mfs_lease_uploaded(mfs_lease *l, const mfs_cache_key *key, int manifest);

/* remote.c: the client's lease set (may be NULL), and whether a lease is
 * worth asking for now: uploads allowed this session, and neither
 * direction backing off (a lease promises an upload). */
mfs_lease *mfs_remote_lease_set(mfs_remote *r);
int mfs_remote_leasable(mfs_remote *r);

#endif

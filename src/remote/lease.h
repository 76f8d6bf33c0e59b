/* The leases of one remote client (lease.c; contract in
 * include/meshfs/remote.h, "leases").  The client (tier.c) owns one
 * mfs_lease, made and freed with it; the lease set never calls back into
 * the client. */
#ifndef MESHFS_REMOTE_LEASE_INT_H
#define MESHFS_REMOTE_LEASE_INT_H

#include "meshfs/remote.h"

typedef struct mfs_lease mfs_lease;

typedef struct mfs_lease_cfg {
    const mfs_remote_backend *be; /* the client's: outlives the leases */
    const char *name;             /* the server as log lines show it: too */
    unsigned data_timeout_s;
    unsigned convert_timeout_s; /* 0: the default (60) */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
} mfs_lease_cfg;

/* NULL: out of memory (the client then runs without leases). */
mfs_lease *mfs_lease_new(const mfs_lease_cfg *cfg);
/* Frees every lease still held (an UNLOCK each, best effort). */
void mfs_lease_free(mfs_lease *l);
/* The upload thread is done with the object (key, manifest), sent or not. */
void mfs_lease_uploaded(mfs_lease *l, const mfs_cache_key *key, int manifest);

/* What mfs_remote_lease, mfs_remote_lease_end and
 * mfs_remote_lease_get_stats do (tier.c holds the client's set and
 * asks only when the client may upload now); l may be NULL but in take. */
mfs_lease_outcome mfs_lease_take(mfs_lease *l, const mfs_cache_key *mk);
void mfs_lease_end(mfs_lease *l, const mfs_cache_key *mk, int after_upload);
void mfs_lease_get_stats(mfs_lease *l, mfs_remote_lease_stats *out);

#endif

/* The remote tier: a shared cache over plain HTTP (GET, HEAD, PUT on a
 * WebDAV folder such as nginx's dav module; docs/cache.md, "Remote tier").
 *
 * An object is one local container file in the TRAILER form (payload, then
 * the 56-byte record) at <url>/v<container version>/<kind>/<2 hex>/<30 hex>,
 * kind "view" or "manifest".  A fetched object is checked whole by the
 * store's own check (magic, version, kind, key, length, checksum) before it
 * is renamed into the local cache; a bad one is a miss, logged once.
 *
 * Reads wait at most the connect timeout plus the data timeout, and an
 * answer that has not begun within timeout_ms of the request is a fault
 * whatever its status would be; after such an answer, a transport error or
 * a 5xx that direction (reads: GET; uploads: HEAD and PUT) skips the server
 * for a back-off (30 s, doubling to 5 min), and the other goes on.  A
 * download is bounded by the object's limit (a manifest's, view_max for a
 * view, the cache's cap) and counted against the cap while in tmp/.  Uploads go through one background thread with a bounded queue
 * (HEAD, then PUT if absent); a full queue drops.  401/403 on PUT makes the
 * session read-only.  The token is never logged nor shown. */
#ifndef MESHFS_REMOTE_H
#define MESHFS_REMOTE_H

#include <stdint.h>

#include "meshfs/cache.h"
#include "meshfs/err.h"

#define MFS_REMOTE_TIMEOUT_MS_DEFAULT 150
#define MFS_REMOTE_DATA_TIMEOUT_S_DEFAULT 5
#define MFS_REMOTE_QUEUE_CAP 256

typedef struct mfs_remote_cfg {
    const char *url;          /* http:// or https://, no trailing '/' needed */
    unsigned timeout_ms;      /* connect, and the answer's start; 0: default */
    unsigned data_timeout_s;  /* whole transfer of a read; 0: default */
    uint64_t view_max;        /* the output cap (mfs_limits.output); 0: none */
    int read_only;
    const char *token;        /* bearer token or NULL; copied */
    unsigned convert_timeout_s; /* the host's convert_timeout (0: 60): bounds a
                                   lease's wait (remote_lease.h) */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
} mfs_remote_cfg;

typedef struct mfs_remote_stats {
    uint64_t hits, misses, errors, bytes_down, bytes_up, queue, dropped, uploads;
    uint64_t read_backoffs, upload_backoffs; /* back-offs begun, each direction */
    uint64_t repaired; /* uploads that replaced an object found bad (not skipped
                          by HEAD): counted in uploads too */
} mfs_remote_stats;

typedef struct mfs_remote mfs_remote;

/* The upload thread starts with the first upload.  NULL with err on failure. */
mfs_remote *mfs_remote_new(const mfs_remote_cfg *cfg, mfs_cache *cache, mfs_err *err);
/* Drains nothing: queued uploads still waiting are dropped, and one in
 * flight is cut short (within a second), each said in the log. */
void mfs_remote_free(mfs_remote *r);

/* Fetches the view entry (manifest = 0) or manifest (1) with key k into the
 * local cache.  1 now there; 2 not, the server's object is bad (a checksum
 * or length that does not match its name: the caller's upload of what it
 * converts should replace it); 0 not (absent, backing off, error). */
int mfs_remote_fetch(mfs_remote *r, const mfs_cache_key *k, int manifest);
/* Queues an upload of the local entry k (never waits).  over: put it even
 * if the server has an object of that name (one found bad); otherwise a
 * HEAD that finds one skips the upload. */
void mfs_remote_enqueue(mfs_remote *r, const mfs_cache_key *k, int manifest, int over);

void mfs_remote_get_stats(mfs_remote *r, mfs_remote_stats *out);

/* A batch run's end: waits until every queued upload is done, at most
 * timeout_s.  The mount never calls it (its uploads live with the daemon). */
void mfs_remote_drain(mfs_remote *r, unsigned timeout_s);

/* The token file: must be a regular file not readable by group or others;
 * its first line, malloc'd in *token.  0 or -1 (err names the file). */
int mfs_remote_read_token(const char *path, char **token, mfs_err *err);
/* Checks a remote= value: http:// or https:// with a host.  0 or -1. */
int mfs_remote_check_url(const char *what, const char *url, mfs_err *err);
/* url without the user:password@ of its authority, malloc'd (NULL: out of
 * memory): what log lines and messages show. */
char *mfs_remote_public_name(const char *url);

#endif

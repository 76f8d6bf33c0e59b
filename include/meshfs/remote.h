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
 * (HEAD, then PUT if absent).  An upload that could not be sent (the
 * server down or failing, backing off, the queue full, the client
 * stopping) is owed: recorded in the cache's owed/ folder, bounded in
 * bytes, and sent by the upload thread when the server answers again, or
 * by mfs_remote_push.  401/403 on PUT makes the session read-only.  The
 * token is never logged nor shown. */
#ifndef MESHFS_REMOTE_H
#define MESHFS_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/cache.h"
#include "meshfs/err.h"

#define MFS_REMOTE_TIMEOUT_MS_DEFAULT 150
#define MFS_REMOTE_DATA_TIMEOUT_S_DEFAULT 5
#define MFS_REMOTE_QUEUE_CAP 256
/* The owed list's bound: 16384 records of 4 KiB each (src/remote/owed.h) */
#define MFS_REMOTE_OWED_MAX_DEFAULT (64ull << 20)

typedef struct mfs_remote_cfg {
    const char *url;          /* http:// or https://, no trailing '/' needed */
    unsigned timeout_ms;      /* connect, and the answer's start; 0: default */
    unsigned data_timeout_s;  /* whole transfer of a read; 0: default */
    uint64_t view_max;        /* the output cap (mfs_limits.output); 0: none */
    int read_only;
    const char *token;        /* bearer token or NULL; copied */
    uint64_t owed_max;        /* the owed list's bound in bytes; 0: default */
    int no_owed;              /* keep no owed list (a cache removed at exit) */
    unsigned convert_timeout_s; /* the host's convert_timeout (0: 60): bounds a
                                   lease's wait ("leases" below) */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
} mfs_remote_cfg;

typedef struct mfs_remote_stats {
    uint64_t hits, misses, errors, bytes_down, bytes_up, queue, dropped, uploads;
    uint64_t read_backoffs, upload_backoffs; /* back-offs begun, each direction */
    uint64_t repaired; /* uploads that replaced an object found bad (not skipped
                          by HEAD): counted in uploads too */
    /* the owed list: records now (every process's, as last counted),
     * owed uploads sent later, and uploads neither sent nor kept owed (the
     * list's bound, an entry evicted before it was sent): `dropped` too */
    uint64_t owed, owed_sent, owed_dropped;
    uint64_t slow; /* models converted rather than fetched: the server slower
                      than their last conversion (mfs_remote_slower) */
} mfs_remote_stats;

typedef struct mfs_remote mfs_remote;

/* The upload thread starts with the first upload.  NULL with err on failure. */
mfs_remote *mfs_remote_new(const mfs_remote_cfg *cfg, mfs_cache *cache, mfs_err *err);
/* Drains nothing: queued uploads still waiting are owed, and one in
 * flight is cut short (within a second) and owed, each said in the log. */
void mfs_remote_free(mfs_remote *r);

/* Starts the upload thread now if owed uploads wait (it is otherwise made
 * on first use): a mount calls it once detached, so what an earlier
 * session owes is sent without waiting for a read.  NULL: nothing. */
void mfs_remote_start(mfs_remote *r);

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

/* Whether to convert a model rather than fetch `bytes` of its views, its
 * last conversion having taken convert_ms (0: unknown), at the server's
 * throughput measured from this client's downloads (src/remote/pace.h).
 * 1: convert (counted in `slow`); 0: fetch.  Slower at all is said once in
 * the log, naming the server, the model (what) and the figures. */
int mfs_remote_slower(mfs_remote *r, const char *what, uint64_t bytes, uint64_t convert_ms);

/* A batch run's end: waits until every queued upload is done, at most
 * timeout_s, and says in the log how many were not sent and are owed.
 * The mount never calls it (its uploads live with the daemon). */
void mfs_remote_drain(mfs_remote *r, unsigned timeout_s);

/* ---- the owed list (docs/remote-cache.md, "Uploads an outage skipped") -- */

/* One owed object pushed: its name ("view/3f/<30 hex>"), and why not if
 * it was not sent (NULL: sent, or the server had it). */
enum { MFS_PUSH_SENT, MFS_PUSH_NOT_SENT, MFS_PUSH_DROPPED };
typedef void (*mfs_remote_push_fn)(void *ctx, const char *object, int outcome, const char *why);
typedef struct mfs_remote_push_result {
    uint64_t sent;      /* on the server now (sent, or it had them) */
    uint64_t not_sent;  /* still owed */
    uint64_t dropped;   /* no longer in the local cache: nothing to send */
} mfs_remote_push_result;
/* Sends every owed upload of the cache now, in this thread, one after the
 * other (uploads that back off are not sent, and said so).  0, or -1 if
 * the owed list could not be read (err says why). */
int mfs_remote_push(mfs_remote *r, mfs_remote_push_fn fn, void *ctx, mfs_remote_push_result *res,
                    mfs_err *err);
/* The records on a cache's owed list now: 0 with *n, or -1 (errno). */
int mfs_remote_owed_count(mfs_cache *c, uint64_t *n);

/* The token file: must be a regular file not readable by group or others;
 * its first line, malloc'd in *token.  0 or -1 (err names the file). */
int mfs_remote_read_token(const char *path, char **token, mfs_err *err);
/* Checks a remote= value: http:// or https:// with a host.  0 or -1. */
int mfs_remote_check_url(const char *what, const char *url, mfs_err *err);
/* url without the user:password@ of its authority, malloc'd (NULL: out of
 * memory): what log lines and messages show. */
char *mfs_remote_public_name(const char *url);

/* ==== the backend: where objects are kept ================================
 * The tier above (what to fetch and upload, the owed list, pacing, leases,
 * back-off; src/remote/tier.c, upload.c, lease.c) talks to its server only
 * through this table, as ccache's storage/remote/ does; the libcurl
 * HTTP/WebDAV backend (src/remote/http.c, mfs_remote_http_new) is the one
 * the tools use, and the unit tests drive the tier through an in-memory
 * one.  Names are relative to the server's root, '/'-separated:
 * "v2/view/3f/<30 hex>", "v2/manifest/...", "v2/lease/<32 hex>".
 *
 * Every call fills an mfs_remote_result: a status, and the facts the tier
 * logs and paces by.  A backend must be safe to call from several threads
 * at once (reads come from any FUSE thread, uploads from the upload
 * thread), and never calls back into the tier except through the sink or
 * source it is handed. */

typedef enum mfs_remote_status {
    MFS_RB_OK,          /* get: the body went to the sink whole; head: the object is
                           there; put: stored; lock: taken (token); unlock: freed */
    MFS_RB_ABSENT,      /* no such object (HTTP 404, 410) */
    MFS_RB_BUSY,        /* lock: another client holds it (423) */
    MFS_RB_UNSUPPORTED, /* lock: the server takes no lock, or none from us
                           (405, 501, 401, 403) */
    MFS_RB_NO_FOLDER,   /* lock: the name's folder does not exist (409); a put
                           of a file in it makes it */
    MFS_RB_BAD_ANSWER,  /* lock: taken, but with no usable token (detail says) */
    MFS_RB_TOO_LARGE,   /* put: the server takes no object this large (413) */
    MFS_RB_REFUSED,     /* get, head, put: an answer asking again will not change
                           (a redirect, a refused token, 405, another 4xx) */
    MFS_RB_FAILED,      /* no answer (down, unreachable, late), or "not now"
                           (5xx, 408, 429); lock, unlock: any other answer */
    MFS_RB_STOPPED,     /* get: the sink stopped it; put: the source's stop */
} mfs_remote_status;

#define MFS_REMOTE_TOKEN_MAX 256 /* a lock token (a Coded-URL), bytes */

typedef struct mfs_remote_result {
    mfs_remote_status status;
    long code;              /* the server's status code; 0: no answer */
    int no_answer;          /* FAILED without any answer: down, unreachable, late */
    int late;               /* no answer begun within the answer timeout */
    int too_long;           /* lock, unlock: an answer body past its bound */
    unsigned retry_after_s; /* FAILED: the server's Retry-After (0: none), at
                               most the longest back-off (300 s) */
    uint64_t bytes;         /* get: body bytes given to the sink */
    char detail[512];       /* what happened, for a log line ("HTTP 403, the
                               token was refused", "no answer within 150 ms
                               (remote_timeout_ms)", ...) */
    char brief[200];        /* the same, shorter ("HTTP 403", "no answer in
                               time"): what lock, unlock and the lease folder's
                               put say */
    char token[MFS_REMOTE_TOKEN_MAX + 1]; /* lock OK: the lock's token */
    unsigned lock_timeout_s; /* lock OK: how long the server keeps it (0: unsaid) */
} mfs_remote_result;

/* Where a get's body goes.  declared: a successful answer's length, before
 * any body (not called when unknown); write: the body in order.  Each
 * returns 0, or -1 to stop the transfer (status STOPPED). */
typedef struct mfs_remote_sink {
    int (*declared)(void *ctx, uint64_t len);
    int (*write)(void *ctx, const void *p, size_t n);
    void *ctx;
} mfs_remote_sink;

/* What a put sends: size bytes, read in order by read (the count, 0 at the
 * end, -1 an error that ends the put as FAILED); stop (may be NULL) is
 * asked about once a second and ends the put (STOPPED) when nonzero.
 * Or a short text (text set, read NULL): sent whole with its content type,
 * its answer awaited as a lock's is (begun within the answer timeout, the
 * whole exchange bounded, a body read to 64 KiB and dropped), for the
 * small files the tier writes itself (the lease folder's README). */
typedef struct mfs_remote_source {
    uint64_t size;
    int64_t (*read)(void *ctx, void *p, size_t n, uint64_t off);
    int (*stop)(void *ctx);
    void *ctx;
    const char *text;
    const char *content_type; /* with text: "text/plain", ... */
} mfs_remote_source;

typedef struct mfs_remote_backend {
    void *ctx;
    void (*get)(void *ctx, const char *name, const mfs_remote_sink *sink, mfs_remote_result *res);
    void (*head)(void *ctx, const char *name, mfs_remote_result *res);
    void (*put)(void *ctx, const char *name, const mfs_remote_source *src, mfs_remote_result *res);
    /* An exclusive write lock on name for timeout_s (the server may keep it
     * shorter or longer: res->lock_timeout_s). */
    void (*lock)(void *ctx, const char *name, unsigned timeout_s, mfs_remote_result *res);
    void (*unlock)(void *ctx, const char *name, const char *token, mfs_remote_result *res);
    void (*free)(void *ctx);
} mfs_remote_backend;

/* The libcurl backend for cfg->url (checked: mfs_remote_check_url), with
 * cfg's token and timeouts.  0, or -1 with err. */
int mfs_remote_http_new(const mfs_remote_cfg *cfg, mfs_remote_backend *out, mfs_err *err);

/* mfs_remote_new with a backend of the caller's (the tier owns it from
 * here, and frees it with itself, failure included); cfg->url only names
 * the server in log lines. */
mfs_remote *mfs_remote_new_with(const mfs_remote_cfg *cfg, const mfs_remote_backend *be,
                                mfs_cache *cache, mfs_err *err);

/* ==== leases ==============================================================
 * One conversion per model per studio, even when machines start at the
 * same instant (issue 35 item 4; docs/remote-cache.md, "Leases").
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

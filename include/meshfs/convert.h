/* convert/'s face: what a parent (the mount, meshfs-convert) and the worker
 * share about one conversion, and what the parent does around it:
 *
 *   the job          what to convert, with which options, limits and user
 *                    (model_file.c fills the model's part)
 *   the report       the worker's wire protocol (proto.c)
 *   passing fds      one record and its descriptors (fdpass.c)
 *   the fork server  its wire protocol (the client: src/spawn/, the
 *                    server: src/worker/)
 *   the worker user  who root's workers run as (worker_user.c)
 *   job folders      output directories kept between runs (jobdirs.c)
 *   filing a run     outputs into the cache (convstore.c)
 *
 * Running the worker is spawner.h's (src/spawn/); the worker's own code is
 * worker.h's (src/worker/). */
#ifndef MESHFS_CONVERT_H
#define MESHFS_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "meshfs/cache.h"
#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/formats.h"
#include "meshfs/rules.h"
#include "meshfs/views.h"

/* ==== the report (src/convert/proto.c) ==== */

/* The worker's wire protocol: what one conversion reports to its parent.
 *
 * The worker (src/tools/meshfs-worker.c) writes one versioned message to
 * fd MFS_REPORT_FD and exits; the parent decodes it as untrusted input
 * (src/convert/proto.c: every length checked against the bytes left). */

#define MFS_PROTO_MAGIC 0x5746534du /* "MSFW" little-endian */
#define MFS_PROTO_VERSION 9         /* 3: per-format note; 4: model_unopened; 5: route;
                                       6: dependency kind; 7: unkeyed;
                                       8: the kind's bit 7, mfs_dep.texture;
                                       9: repairs */
#define MFS_REPORT_FD 3             /* the worker writes its report here */
#define MFS_LIFELINE_FD 4           /* EOF here: the parent died, so must the worker */
#define MFS_PROTO_MAX (16u << 20)   /* no report is larger; bigger is hostile */

typedef struct mfs_stats {
    uint32_t meshes, nodes, bones, animations, materials;
    uint64_t vertices, triangles;
    uint64_t faces;          /* all faces: triangles, lines and points */
    uint64_t placed_triangles; /* triangles at every node placing them (unplaced: once) */
    uint64_t placed_faces;   /* all faces (points, lines too) likewise: what a
                                placed .fmd stores */
    float min[3], max[3];    /* canonical model-space box of the triangles (zeros if none) */
} mfs_stats;

typedef struct mfs_fmt_result {
    int ok;                  /* output file written completely */
    int transient;           /* failed for the machine's sake (e.g. ENOSPC), not
                                the model's: not to be remembered as its failure */
    uint64_t size;
    char error[MFS_ERR_MAX];
    char note[MFS_ERR_MAX];  /* written, but with something to say that is not a
                                failure (.tex: why it is the white fallback);
                                "" if nothing */
} mfs_fmt_result;

/* What one conversion produced. */
typedef struct mfs_report {
    int ok;                  /* import succeeded (formats may still fail) */
    char error[MFS_ERR_MAX]; /* import failure reason */
    char route[MFS_ERR_MAX]; /* which importer read the model, and why the native
                                one declined (mfs_deps.route): the mount
                                logs it at debug level */
    char repairs[MFS_ERR_MAX]; /* what the importer repaired to read the model
                                (mfs_scene.note: names made UTF-8, faces
                                dropped, ...), said once as a warning; "" if
                                nothing */
    int transient;           /* the failure was not the model's (the worker was
                                killed from outside): set by the parent, never
                                read from the wire */
    int outputs_lost;        /* an output file was removed or replaced from
                                outside during the run (the job folder's
                                contents removed with the cache's): set by the
                                parent, never read from the wire */
    uint64_t wall_ms;        /* the run's wall time: set by the parent, never
                                read from the wire */
    mfs_deps deps;           /* every input read, model first */
    mfs_stats stats;
    unsigned formats;        /* mask of formats reported */
    mfs_fmt_result fmt[MFS_FMT_COUNT];
} mfs_report;

void mfs_report_free(mfs_report *r);

/* Wire format (both directions of trust live in proto.c). */
int mfs_report_encode(const mfs_report *r, uint8_t **buf, size_t *len);
int mfs_report_decode(const uint8_t *buf, size_t len, mfs_report *r, mfs_err *err);

/* ==== the job (src/convert/model_file.c) ==== */

/* One conversion job: what to convert, with which options and limits, and
 * where the outputs go.  The parent describes it (spawner.h); the worker
 * runs it (mfs_job_run, worker.h). */

typedef struct mfs_job {
    const char *root;        /* source root: nothing outside it is opened */
    const char *model;       /* model path relative to root */
    unsigned formats;        /* mask of mfs_format bits */
    mfs_options opts;
    const char *outdir;      /* existing private directory; outputs go to outdir/<fmt> */
    const int *out_fd;       /* NULL, or (a fork server's child, whose sandbox
                                can create no file) out_fd[f] is the open, empty
                                file format f is written to instead */
    mfs_limits limits;
    /* the model file, as the parent stat()ed it beneath root
     * (mfs_job_set_model_file): a root parent's worker runs as its owner
     * only when nobody else can change its bytes (mfs_worker_ident_for);
     * unknown or uid 0: as the worker user */
    int owner_known;
    uid_t owner;
    gid_t owner_group;  /* the file's group */
    int shared;         /* MFS_MODEL_* below: who else can write it */
    /* the worker refuses a model path that opens another file than this
     * one (replaced since the parent's stat): model_id_known 0: unchecked */
    int model_id_known;
    dev_t model_dev;
    ino_t model_ino;
} mfs_job;

enum {
    MFS_MODEL_PRIVATE = 0,     /* only its owner (and root) can write it */
    MFS_MODEL_GROUP_WRITE = 1, /* its group can (mode g+w) */
    MFS_MODEL_OTHERS_WRITE = 2 /* anyone can (o+w), or an ACL may let others */
};

/* Fills the model's fields of job from fd, the model opened beneath root
 * with no link followed (O_PATH is enough).  -1 with err set when it cannot
 * be stat'ed or is not a regular file: the caller fails the conversion. */
int mfs_job_set_model_file(mfs_job *job, int fd, mfs_err *err);

/* ==== the worker user (src/convert/worker_user.c) ==== */

/* The most supplementary groups a worker is given (--groups): the parent
 * passes at most this many of the owner's, which can only read less. */
#define MFS_WORKER_GROUPS_MAX 256

/* The output subdirectory a worker that switched user writes into: the
 * parent's private directory stays the parent's, and the worker's user owns
 * only this.  The parent moves what it vouches for up one level. */
#define MFS_SANDBOX_OUT_SUBDIR "w"

/* Exit status of a worker that could not enter its sandbox: the machine's
 * problem, not the model's.  Its report (if any) carries the reason. */
#define MFS_SANDBOX_EXIT 72

/* The user root's workers run as, resolved once by its owner (the mount's
 * configuration, meshfs-convert's -u) and handed to its spawner
 * (mfs_spawner_open): no process-wide copy. */
typedef struct mfs_worker_user {
    int known; /* 0: none given (the spawner takes "nobody", or lacking it
                  the kernel's overflow id 65534, which owns nothing) */
    uid_t uid;
    gid_t gid;
} mfs_worker_user;

/* Resolves name (NULL: "nobody") into *u.  Refuses an unknown user and any
 * user with uid 0.  Only matters when the calling process is root. */
int mfs_worker_user_resolve(const char *name, mfs_worker_user *u, mfs_err *err);

/* u itself when known, else the default above. */
mfs_worker_user mfs_worker_user_or_default(const mfs_worker_user *u);

/* Who a worker runs as (see mfs_worker_ident_for). */
typedef struct mfs_worker_ident {
    uid_t uid;
    gid_t gid;
    int ngroups;
    gid_t groups[MFS_WORKER_GROUPS_MAX];
} mfs_worker_ident;

/* 1 with id filled when a worker started by this process must switch
 * user (it runs as root), else 0.  The worker runs as the model's owner
 * only when nobody else can change the model's bytes (job->shared, see
 * mfs_job_set_model_file): else whoever wrote them would read with the
 * owner's rights.
 *   - private (no g+w, no o+w, no ACL), owned by a user other than root:
 *     that user, with the primary group and supplementary groups the user
 *     database gives it (getpwuid_r and getgrouplist, here in the parent:
 *     a sandboxed child reads no name service); an owner it does not know:
 *     that uid with the worker user's group and no others;
 *   - group-writable (g+w, no o+w, no ACL): the worker user's uid with the
 *     file's group as its only group: what the group's members can write,
 *     they can read already;
 *   - o+w or any access ACL, a root-owned model, or an owner not known
 *     (owner_known 0): the worker user with its own group only.
 * At most MFS_WORKER_GROUPS_MAX groups are kept: fewer can only read less. */
int mfs_worker_ident_for(const mfs_worker_user *user, const mfs_job *job, mfs_worker_ident *id);

/* Raises RLIMIT_NOFILE's soft limit to the hard limit: every file open
 * through the mount holds a descriptor in the daemon, and systemd's soft
 * default of 1024 would let one user's open files starve everyone's. */
void mfs_nofile_raise(void);

/* ==== passing descriptors (src/convert/fdpass.c) ==== */

/* One record and its descriptors over a unix socket (SCM_RIGHTS): what the
 * fork server and its parent pass each other (fork_server.h). */

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

/* ==== the fork server's wire protocol ==== */

/* The fork server: one pre-initialised meshfs-worker that forks a child per
 * conversion (docs/worker.md, docs/security.md).
 *
 * Exec'ing a fresh worker costs ~3 ms of dynamic loading (libassimp and its
 * dependencies) before any work.  The parent (src/spawn/fork_client.c) instead
 * posix_spawns `meshfs-worker --server` once, lazily, and asks it for
 * children.  The server is single-threaded (it forks) and holds only: fd
 * 0-2, the request socket at MFS_REPORT_FD, the parent's lifeline at
 * MFS_LIFELINE_FD, and the server's end of each child's reply socket.
 *
 * The spare: each child is forked and confined *before* its job is known,
 * while the previous conversion runs (on a second core that setup is off
 * the conversion's path).  It runs exactly what a directly spawned worker
 * runs, minus the output directory and the user: the sandbox for the
 * request's SRC root and MESHFS_* environment (the key: Landlock's read
 * rule is per root), then blocks on its job socket.  A root server's
 * spare waits as root with CAP_SETUID and CAP_SETGID only, and switches
 * to the job's --uid/--gid/--groups (the model's owner) when it comes.
 * The server hands the
 * spare to the parent, which sends it its job itself (one wake-up and one
 * descriptor pass less than through the server) and asks for the next
 * one; a spare of another key is retired unused (its socket closed).  A
 * child never runs a second job, and the server wipes each request it
 * sees from its memory before it forks the next spare, so no child holds
 * another model's request.
 *
 * Lifetime: each child has PR_SET_PDEATHSIG SIGKILL (set again after its
 * user switch, which clears it), so it dies with the server, which dies with
 * the parent through the lifeline; a child needs no watcher thread.
 *
 * Outputs: the parent creates the job's output files itself and passes
 * them open; the child writes only to those (mfs_job.out_fd), so its
 * Landlock ruleset lets it create or change no file at all.
 *
 * Protocol, on SOCK_SEQPACKET sockets (one message = one record):
 *  request  (parent -> server, request socket; when the parent holds no
 *           spare for the key): mfs_fs_request followed by argc
 *           NUL-terminated argv strings, then NUL-terminated "K=V"
 *           MESHFS_* environment entries (the child's MESHFS_* environment
 *           is exactly these); SCM_RIGHTS [the report's memfd, reply
 *           socket, the write end of the "done" pipe, then one open output
 *           file per requested format in format order].  The server forks
 *           a child for it and forwards the message as it is, with
 *           SCM_RIGHTS [report memfd, "done", output files]; then it
 *           offers the next spare.
 *  started  (server -> parent, the request's reply socket): mfs_fs_started;
 *           SCM_RIGHTS [pidfd] when the kernel has pidfd_open, so the
 *           parent can kill the child at its deadline without a pid-reuse
 *           race.
 *  spare    (server -> parent, request socket; one for each request and
 *           each "next", in order, so the parent knows the key of each):
 *           mfs_fs_spare; SCM_RIGHTS [the spare's job socket, its reply
 *           socket, its pidfd (when the kernel has pidfd_open)], or none
 *           with pid 0 when no spare could be made.
 *  job      (parent -> spare, its job socket): what a request is, with
 *           SCM_RIGHTS [report memfd, "done", output files].
 *  next     (parent -> server, request socket; after it gave a spare its
 *           job): mfs_fs_request with magic MFS_FS_NEXT and only the key's
 *           argv (argv[0], --root) and environment: make the
 *           next spare for this key.
 *  done     (child -> parent, one byte on the "done" pipe; only after a
 *           report it could write and exit 0 with): the report in the
 *           memfd is complete and the child has closed every output.  The
 *           parent may then use the report without waiting for the exit,
 *           once it has checked that no output is still open for writing
 *           (src/spawn/run.c); else it waits for "ended".
 *  ended    (server -> parent, reply socket): mfs_fs_ended, the child's
 *           wait status and CPU time, then the server closes the socket.
 * EOF on the reply socket before "ended" means the server died. */

#define MFS_FS_MAGIC 0x32524653u   /* "SFR2": a request */
#define MFS_FS_NEXT 0x5458454eu    /* "NEXT": make the next spare for a key */
#define MFS_FS_SPARE 0x52415053u   /* "SPAR": a spare for the parent */
#define MFS_FS_READY 0x59444552u   /* "REDY": the server's first message */
#define MFS_FS_MSG_MAX (64u << 10) /* a request is a few paths */
#define MFS_FS_MAX_FDS 16           /* report, reply, done and one file per format */

typedef struct mfs_fs_request {
    uint32_t magic;
    uint32_t argc;
} mfs_fs_request;

typedef struct mfs_fs_started {
    int32_t pid;   /* 0: fork failed, err says why */
    int32_t err;   /* errno */
} mfs_fs_started;

typedef struct mfs_fs_spare {
    uint32_t magic; /* MFS_FS_SPARE */
    int32_t pid;    /* 0: none was made, err says why */
    int32_t err;    /* errno */
} mfs_fs_spare;

typedef struct mfs_fs_ended {
    int32_t status;  /* as from wait4 */
    int32_t pad;
    int64_t cpu_us;  /* user + system time of the child */
} mfs_fs_ended;

/* ==== job folders (src/convert/jobdirs.c) ==== */

/* Worker output directories under the cache's tmp/, kept between runs.
 *
 * A conversion's worker writes its outputs into a directory of its own,
 * which the run files into the cache and leaves empty.  Making and
 * removing one per model cost an inode allocation and a free each, and on
 * ext4 without a journal every allocation scans past the inodes freed in
 * the last minute or more, so a stream of small models slowed itself down
 * (docs/benchmarks.md, "meshfs-convert's own cost beyond the spawner").
 * The pool keeps emptied directories for the next run; the mount and
 * meshfs-convert share it.  Thread-safe. */

typedef struct mfs_jobdirs mfs_jobdirs;
typedef struct mfs_jobdir mfs_jobdir;

/* A pool making its directories in tmpdir (the cache's tmp/).  NULL on out
 * of memory. */
mfs_jobdirs *mfs_jobdirs_new(mfs_cache *cache, const char *tmpdir);

/* Removes the kept directories; every taken one must have been given back. */
void mfs_jobdirs_free(mfs_jobdirs *p);

/* An empty directory for one run: one kept from an earlier run while it is
 * younger than half the age at which a cache open reaps tmp/ (so another
 * process's reaping never takes it from under a run), else a new one.  A
 * cache directory removed meanwhile is made again (*revived set, if given).
 * NULL with err set ("cannot make a worker directory in the cache: ..."). */
mfs_jobdir *mfs_jobdirs_take(mfs_jobdirs *p, int *revived, mfs_err *err);

const char *mfs_jobdir_path(const mfs_jobdir *d);

/* 1 if the directory is no longer the one taken: removed (an `rm -rf` of
 * the cache or of its tmp/) or replaced.  A run whose folder went failed
 * for the cache's churn, not for the model: it is worth running again. */
int mfs_jobdir_lost(const mfs_jobdir *d);

/* Back to the pool if clean and the run left each output of `formats`
 * absent or emptied (convstore.h, keep_outputs: the next run writes into
 * the same file) and no dropped-privilege worker's subdirectory; else
 * removed with whatever is in it. */
void mfs_jobdirs_give(mfs_jobdirs *p, mfs_jobdir *d, unsigned formats, int clean);

/* ==== filing a run (src/convert/convstore.c) ==== */

/* Filing a conversion in the cache: what the mount (src/mount/convert.c) and
 * meshfs-convert (src/batch/) do with a worker run's outputs, in one place.
 *
 * The worker writes into a private directory; each output it vouches for is
 * copied into a cache entry under the key built from the inputs the worker
 * actually read (mfs_views_key: the one recipe), each failure becomes a
 * negative entry under the same key (so it is not retried until an input
 * changes or is touched, or the limits grow), and the model's manifest
 * records the inputs for the next lookup. */

typedef struct mfs_convstore {
    void *ctx;
    mfs_cache *cache;
    const mfs_views *views; /* the key recipe */
    /* the model's content hash, as the host reads it (used when the worker
     * died before naming its inputs): 0, or -1 with err */
    int (*hash_model)(void *ctx, const char *relpath, struct stat *st, uint8_t hash[16],
                      mfs_err *err);
    /* what a failure is recorded under (the limits, the inputs' newest mtime) */
    void (*failctx)(void *ctx, const mfs_dep *deps, uint32_t ndeps, mfs_cache_failctx *out);
    /* a failure's text as users will read it (NULL: as the worker said it) */
    void (*errtext)(void *ctx, const char *in, char *out, size_t n);
    /* a line for the log */
    void (*log)(void *ctx, const char *msg);
    /* The cache's file system refused to store some of this run's results
     * (errnum ENOSPC, EDQUOT, EROFS or EIO; meshfs/storerr.h): called once
     * per run, in place of a log line per view, and *err then holds
     * mfs_storerr_reason.  NULL: nothing said but *err, which then reads
     * "cache: storing views: <strerror>" (meshfs-convert, warm). */
    void (*store_failed)(void *ctx, const char *relpath, int errnum);
    /* Every result of the run stored, the model entry included (NULL:
     * not told): the host may say the cache stores again. */
    void (*stored)(void *ctx);
    /* An extra blob the host files with the model (meshfs-convert's report
     * of the run; NULL: none): given the run's inputs and report, fills
     * *key and a malloc'd *bytes (taken over), 0; or -1 for none.  Kept
     * inside the model entry under its key when small (a file less a
     * model), as a view is; never in *man. */
    int (*extra)(void *ctx, const mfs_dep *deps, uint32_t ndeps, const mfs_report *rep,
                 mfs_cache_key *key, uint8_t **bytes, size_t *len);
    /* The host reuses its job directory (meshfs/jobdirs.h): each output is
     * left there empty, and the next run of that directory writes into the
     * same file, instead of removed. */
    int keep_outputs;
} mfs_convstore;

/* After a worker run of relpath into tmp (report rep, which it may mark
 * transient): stores each view of `formats` or its failure, fills *man (the
 * inputs and the views' keys; caller frees) and stores it as the model's
 * entry under *mk_out (may be NULL): views of at most MFS_CACHE_EMBED_MAX
 * bytes inside it (man->views[i].embedded), larger ones in entries of
 * their own.  hits[f'] receives a descriptor of man->views[f'] (fd -1 if
 * none; for an embedded view the model entry's, at its offset): still
 * readable if the cache evicts the entry at once.  Returns 0, 1 (done, but
 * a view failed for the machine's sake: err says the first), or -1 (err). */
int mfs_convstore_file(const mfs_convstore *h, const char *relpath, const char *tmp,
                       const char *fmi_model, unsigned formats, mfs_report *rep,
                       mfs_cache_manifest *man, mfs_cache_key *mk_out,
                       mfs_cache_hit hits[MFS_FMT_COUNT], mfs_err *err);

/* Streams the file at path into a cache entry under k: it must be `size`
 * bytes.  hit (may be NULL) as mfs_cache_writer_commit. */
int mfs_convstore_output(mfs_cache *c, const char *path, const mfs_cache_key *k, uint64_t size,
                         mfs_cache_hit *hit, mfs_err *err);

/* The failure rule shared by every host (docs/cache.md, "Negative
 * entries"): a remembered failure stands unless the run's limits are
 * larger than those it was recorded under, or an input was touched since
 * (newest: the inputs' newest mtime now). */
int mfs_convstore_failure_stands(const mfs_limits *l, const mfs_cache_failctx *f,
                                 struct timespec newest);

#endif

/* The mount (src/mount/): one mount's state, and what maps an
 * SRC-relative path to attributes, a handle, a listing's views or an
 * errno.  This is the folder's whole face.  The session above it
 * (src/session/) is the only code that speaks libfuse; nothing here names
 * a libfuse type.  The mount's state (mfs_fs) is defined here, with the
 * lock order of every mutex the daemon takes; it embeds the states of
 * names/ and coherence/ below (mfs_fs.names, mfs_fs.coherence, declared
 * in their headers), and their functions take those, never mfs_fs.  See
 * docs/architecture.md for the path of a read().
 *
 * Errors (include/meshfs/err.h): what the session calls answers 0 (or a
 * length) or -errno, the one place -errno crosses a boundary: ops.c's
 * mfs_ops_*, the package's mfs_lgepkg_*, mfs_model_errors and
 * mfs_view_missing (getxattr answers).  The resolver's
 * calls (mfs_view_get*) answer an outcome with an mfs_err (meshfs/views.h);
 * the rest -1 (or NULL) with an mfs_err, or 1/0 as each says.  What
 * names/ and coherence/ answer (-1 with an mfs_err) becomes -errno only
 * here, where it is handed to the session. */
#ifndef MESHFS_MOUNT_H
#define MESHFS_MOUNT_H

#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "meshfs/cache.h"
#include "meshfs/convert.h"
#include "meshfs/formats.h"
#include "meshfs/rules.h"
#include "meshfs/util.h"
#include "meshfs/spawner.h"
#include "meshfs/views.h"
#include "meshfs/formats.h"
#include "../coherence/coherence.h" /* and names.h */

typedef struct mfs_fs_config {
    char *src;              /* absolute path of SRC */
    char *cache_dir;        /* NULL: default */
    uint64_t cache_size;
    unsigned formats;       /* views converted: those shown, plus the four
                               game_resources.lgepkg needs when packages are
                               on (MFS_FMT_LGEPKG_BIT, set here too) */
    unsigned shown;         /* views listed (per-model bits of -o formats) */
    int hide_sources;
    int hide_failed;        /* a view known to have failed is not shown */
    int passthrough;        /* -o passthrough=: MFS_PT_* (passthrough.h) */
    mfs_options opts;       /* what the writers read (options.h) */
    int lowercase_names;    /* every name shown in lowercase (FGE lowercases before opening) */
    const char *lgepkg_name;    /* game_resources.lgepkg PackageHeader name (<= 19 bytes) */
    const char *lgepkg_version; /* and version string (<= 19 bytes) */
    mfs_limits limits;
    unsigned convert_jobs;  /* concurrent workers */
    unsigned prefetch;      /* -o prefetch: models queued at most (prefetch.c); 0 off */
    size_t memo_size;       /* -o memo_size: models whose records are kept
                               (0: MFS_VIEWS_MEMO_DEFAULT; docs/scale.md) */
    int foreground;
    /* -o remote=... (NULL: no remote tier; docs/cache.md, "Remote tier") */
    const char *remote;
    unsigned remote_timeout_ms, remote_data_timeout_s;
    int remote_read_only;
    uint64_t remote_owed_max; /* -o remote_owed_max: the owed list's bound */
    char *remote_token;     /* from remote_token_file: never logged or shown */
} mfs_fs_config;

typedef struct mfs_fs_stats {
    atomic_uint_least64_t conversions;    /* workers run */
    atomic_uint_least64_t conversion_failures;
    atomic_uint_least64_t views_served;   /* opens of views */
    atomic_uint_least64_t attr_requests;  /* stats (LOOKUP, GETATTR) that reached
                                             the daemon: a listing with
                                             attributes saves one per name */
    atomic_uint_least64_t read_requests;     /* READ that reached the daemon */
    atomic_uint_least64_t passthrough_opens; /* opens the kernel serves itself */
    atomic_uint_least64_t readdir_requests;  /* READDIR that reached the daemon
                                                (0 for a listing the kernel kept) */
    atomic_uint_least64_t conversions_running;  /* workers running now */
    atomic_uint_least64_t conversions_peak;     /* most ever running at once */
    atomic_uint_least64_t prefetched;           /* conversions the prefetcher ran */
    atomic_uint_least64_t folder_record_hits;   /* models a listing answered from
                                                   its folder record */
    atomic_uint_least64_t folder_records_written;
    atomic_uint_least64_t cache_store_failures; /* conversions whose results the cache's
                                                   file system refused to store
                                                   (meshfs/storerr.h) */
    atomic_uint_least64_t conversions_redone;   /* runs redone: the cache's files
                                                   vanished under them (convert.c) */
    atomic_uint_least64_t packages_redone;      /* packages packed again: a view moved
                                                   or vanished while packing (lgepkg.c) */
} mfs_fs_stats;

typedef struct mfs_prefetch mfs_prefetch;
typedef struct mfs_share mfs_share;
typedef struct mfs_leasewait mfs_leasewait;
#define MFS_PKG_STRIPES 64 /* package locks, by a hash of the folder (lgepkg.c) */
/* The session layer's state, one of each per mount (made by mfs_ll_setup,
 * freed by mfs_ll_teardown; each defined in its own file). */
typedef struct mfs_ll mfs_ll;                 /* llstate.h: session, node table, pruner */
typedef struct mfs_dirreplies mfs_dirreplies; /* dirreply.c: replies built ahead */
typedef struct mfs_listings mfs_listings;     /* listing.c: open listings, folder signatures */
typedef struct mfs_pt mfs_pt;                 /* passthrough.c: backing ids by node */
typedef struct mfs_files mfs_files;           /* files.c: the open files' handles */

/* What the mount asks of the session above it, given by the session at
 * mfs_ll_setup (fs->session; NULL before and after), as the resolver's
 * host interface is given to the resolver (meshfs/views.h): the mount's
 * code calls down through it and never includes the session's headers.
 * coherence/ asks renew and node_current through its own callbacks, which
 * parts.c points here. */
typedef struct mfs_fs mfs_fs;
typedef struct mfs_session_counts {
    uint64_t listing_handles, listing_names;          /* listing.c */
    uint64_t ahead_sent, ahead_dropped, ahead_waiting; /* dirreply.c */
    uint64_t nodes, node_files, node_cap, nodes_offered, nodes_freed; /* nodes.c */
} mfs_session_counts;
typedef struct mfs_session_iface {
    /* The view at path moves to a new kernel inode (its node `node`, or
     * its name's now when 0), answering GETATTR with `kept` until the
     * kernel forgets it: 1 if it moved now, 0 if it had already. */
    int (*renew)(mfs_fs *fs, const char *path, uint64_t node, const struct stat *kept);
    /* Whether node is still its name's (not moved off by renew). */
    int (*node_current)(mfs_fs *fs, uint64_t node);
    /* The session's counters and share text for the stats xattr. */
    void (*counts)(mfs_fs *fs, mfs_session_counts *c);
    int (*share_text)(mfs_fs *fs, char *buf, size_t n);
} mfs_session_iface;

/* One mount's state, owned here and passed to every function that needs
 * it; the session layer reaches it from the FUSE session's userdata
 * (lowlevel.c).  Nothing in the daemon keeps a process-wide copy.
 *
 * Lock order.  Every mutex the daemon takes, outermost first.  A thread
 * that holds several takes them in this order and releases in reverse;
 * nothing is taken against it.  ThreadSanitizer's lock-order check runs
 * on the mount tests (docs/testing.md), so an inversion fails CI.
 *
 *   Resolution (a view's bytes):
 *   0. a folder's package lock (lgepkg.c, fs->pkg_locks: one stripe per folder), held
 *      while the package is assembled, so across its models' resolutions.
 *   1. a model's lock (src/resolve/views.c: one per model, held across its whole
 *      resolution, conversion included: the single flight).  Never two
 *      models' at once; listings only try it (trylock) and never wait.
 *   2. job_lock (convert.c: the job slots), held only to count a slot, never
 *      across a conversion.  The prefetcher's own lock is released before
 *      it (mfs_prefetch_close).
 *   3. the spawner's locks (src/spawn/: the fork server's srv_mu, the
 *      sandbox probe's sandbox_mu), the job folders' (jobdirs.c), and the
 *      cache's own (cache.h: its stats, the stat index, eviction, revival,
 *      the remote tier's), each held only inside one call of its module.
 *      Inside the cache: revival's lock (revive.c) before an index's
 *      (index.c); a thread holding an index's lock only tries revival's.
 *
 *   Opens and replies (the session layer):
 *   4. one of these three, never two at once, and never while 0-3 are held
 *      (an open decides after its resolution returned):
 *      - fs->coherence.moving (renew.c), held while an open decides (passthrough,
 *        kview) and while a view moves to a new node;
 *      - the open files' list lock (files.c, fs->files), held while a
 *        reopen of a moved view copies a handle (files.c, open_moved): it takes
 *        passthrough's lock for the backing id and kview's;
 *      - a listing handle's lock (dirreply.c), held while a reply built
 *        ahead is dropped: it takes kview's and the node table's.
 *   5. passthrough's lock (passthrough.c, fs->pt), held across the
 *      backing-id ioctl; it may log (the log's lock, a leaf).
 *
 * Leaves, held for a lookup with no other lock taken inside them: kview.c's,
 * pins.c's, the node table's (nodes.c), prefetch.c's, the dirmap and
 * models tables' (dirmap.c; src/resolve/memo.h, mfs_views), the listings' folder
 * signatures (listing.c), the held lists (held.c), each user's share
 * (share.c) and the lease waiter (leasewait.c: both run their jobs and
 * callbacks unlocked), the pruner's (lowlevel.c), the prepared views'
 * (formats/prepared.c) and the log's (log.c).
 *
 * So a listing (readdir, and the attributes it sends) never waits for a
 * conversion: it takes only leaves, 4 and 5, and trylocks model locks. */
struct mfs_fs {
    mfs_fs_config cfg;
    const mfs_session_iface *session; /* the session above (mfs_ll_setup) */
    mfs_names_state names;  /* names/: SRC's descriptor, the folder tables */
    mfs_coherence coherence; /* coherence/: kviews, pins, the moving lock */
    mfs_spawner *spawner;   /* the workers: path, lifeline, model extensions */
    mfs_worker_user worker_user; /* -o worker_user, resolved (for the spawner) */
    mfs_cache *cache;
    mfs_views *views;       /* the resolver over the cache (models.c) */
    mfs_remote *remote;     /* the remote tier, or NULL (remote.h) */
    mfs_fs_stats stats;
    mfs_latch store_refused; /* the cache cannot store: said once (convert.c) */
    atomic_uint_least64_t revivals_said; /* the cache's revivals logged (convert.c) */
    char tmpdir[4096];      /* worker output dirs live here (same fs as the cache) */
    mfs_jobdirs *jobdirs;   /* and are kept between conversions (meshfs/jobdirs.h) */
    pthread_mutex_t job_lock;
    pthread_cond_t job_cond;
    unsigned jobs_running;
    unsigned jobs_fg_waiting; /* requests (not prefetches) waiting for a slot */
    struct {                  /* requests about to ask for one (mfs_fs_fg_coming), */
        uint64_t model;       /* by model path hash; 0: a free entry */
        unsigned n;
    } jobs_fg_coming[16];
    mfs_prefetch *prefetch;   /* prefetch.c; NULL with -o prefetch=0 */
    mfs_share *share;         /* each user's share of the request threads (share.h) */
    mfs_leasewait *leasewait; /* opens waiting for a lease (leasewait.h) */
    mfs_ll *ll;
    mfs_dirreplies *replies;
    mfs_listings *listings;
    mfs_pt *pt;
    mfs_files *files;
    pthread_mutex_t pkg_locks[MFS_PKG_STRIPES]; /* lgepkg.c: a package built once */
};

/* ---- parts.c: the states of names/ and coherence/ inside the mount's ---- */

/* Copies into fs->names and fs->coherence what they read of the mount's
 * configuration (parsed, never changed after), lends them the cache and
 * the spawner, and gives coherence/ its callbacks up into the session
 * (fs->session, NULL before mfs_ll_setup and after: then no view moves and
 * no node is current).  Called once the spawner and the cache are open and
 * the cache's size is known (main.c, open_state).  The parts they own
 * (SRC's descriptor, tables, records, pins, the moving lock) are made
 * there too, not here. */
void mfs_fs_parts_init(mfs_fs *fs);

/* ---- models.c: the resolver's host, and the mount's calls into it ----
 *
 * A view's bytes are resolved by the cache layer's resolver
 * (meshfs/views.h: memo, cache, conversion, single flight per model); the
 * mount crosses into it here only, and only ops.c turns its outcomes
 * into -errno. */

/* Makes fs->views, with this mount as its host.  0, or -1 with err
 * (ENOMEM). */
int mfs_fs_views_open(mfs_fs *fs, mfs_err *err);

/* View `format` of model `name` in folder `dir` (relative to SRC, "" for
 * the root), whose views are named `base`.<fmt>: mfs_views_resolve. */
mfs_view_outcome mfs_view_get(mfs_fs *fs, const char *dir, const char *name, const char *base,
                              int format, mfs_view_mode mode, mfs_view_info *info, mfs_err *err);
/* The same, with the stats the caller has just taken of the model and its
 * folder (mfs_view_given: the memo does not take them again). */
mfs_view_outcome mfs_view_get_given(mfs_fs *fs, const char *dir, const char *name,
                                    const char *base, int format, mfs_view_mode mode,
                                    const mfs_view_given *given, mfs_view_info *info,
                                    mfs_err *err);

/* The referenced files the view's model was found missing by its import,
 * one per line (mfs_views_missing): the length, 0 none, or -errno. */
/* user.meshfs.explain (json 0) and user.meshfs.explain.json of a view:
 * what its model's views' keys are made of and why a lookup would convert
 * (include/meshfs/views.h, "explain"), malloc'd; NULL with err. */
char *mfs_view_explain(mfs_fs *fs, const char *dir, const char *name, const char *base, int json,
                       mfs_err *err);
int mfs_view_missing(mfs_fs *fs, const char *dir, const char *name, const char *base,
                     int format, char *out, size_t n);

/* A view's attributes if they are known without converting, hashing or
 * waiting (mfs_views_known: HIT or FAILED_MODEL): 1 with *st filled, else
 * 0, or -1 when nothing of the model is known (its other views need not be
 * asked about).  For listings with attributes (readdirplus).  model_st receives the
 * model file's stat; with MFS_VIEW_INPUTS_CHECKED the caller has just had
 * a 1 for another view of the same model and passes that call's model_st
 * back, so neither the model nor its inputs are stat'ed again. */
int mfs_view_cached_stat(mfs_fs *fs, const char *dir, const mfs_view_ref *ref,
                         struct stat *model_st, mfs_view_inputs inputs, struct stat *st);
/* The same with the listing's folder record copy (views.h, mfs_view_hint). */
int mfs_view_cached_stat_hinted(mfs_fs *fs, const char *dir, const mfs_view_ref *ref,
                                struct stat *model_st, mfs_view_inputs inputs,
                                mfs_view_hint *hint, struct stat *st);

/* The attributes of a view whose model file has stat mst, where its
 * mfs_inode_where.  Its mode: the read bits of mst, narrowed by vi's
 * (docs/security.md, S1). */
void mfs_view_stat(const struct stat *mst, const mfs_view_info *vi, uint64_t where, int format,
                   struct stat *st);

/* ---- convert.c: run a worker for a model and file its outputs ---- */

/* The resolver's converter (mfs_view_converter): converts relpath for
 * every format in `formats`, storing each output (or a negative entry) in
 * the cache and the manifest for the model.  deps and per-format keys come
 * back in *man (caller frees).  Returns 0 (a failed conversion is a 0 with
 * negative entries), 1 when some view failed for the machine's sake (err
 * says the first), or -1 with err (no conversion). */
int mfs_fs_convert(mfs_fs *fs, const char *relpath, const char *fmi_model, unsigned formats,
                   mfs_cache_manifest *man, mfs_err *err);

/* A request on this thread is about to convert model `dir`/`model`, and has
 * just queued prefetches that would otherwise take the free slots first (a
 * stat after a listing): prefetches of other models yield to it as to a
 * request waiting, until it asks for its slot, a prefetch of its model
 * takes one, or mfs_fs_fg_done says it needed none. */
void mfs_fs_fg_coming(mfs_fs *fs, const char *dir, const char *model);
void mfs_fs_fg_done(mfs_fs *fs);

/* The calling thread is one of the prefetcher's, which stops when *stop
 * is set: its conversions let foreground requests take the slots first,
 * and one not started when the prefetcher stops is not started. */
void mfs_fs_slots_background(const atomic_int *stop);

/* Option text for a format's cache key (fmi_model: the .fmi model= path),
 * and for the manifest. */
void mfs_fs_format_options(const mfs_fs *fs, int format, const char *fmi_model, char *buf,
                           size_t n);
void mfs_fs_import_options(const mfs_fs *fs, char *buf, size_t n);

/* Test builds only: sleeps the milliseconds the environment variable `var`
 * gives (MESHFS_TEST_RELEASE_DELAY_MS, _FG_DELAY_MS, _OPEN_DELAY_MS; each
 * named where it is used); does nothing in other builds. */
void mfs_test_delay(const char *var);


/* ==== failed.c and models.c: failed and hidden views, known without work ==== */

/* ---- failed.c: failed views under -o hide_failed, and on the model ---- */

/* models.c: 1 if the view is known to have failed, from what is known
 * without converting, hashing or waiting (mfs_views_known: FAILED_MODEL). */
int mfs_view_known_failed(mfs_fs *fs, const char *dir, const mfs_view_ref *ref);
/* models.c: the formats whose views of the view's model are known not to
 * be there (no mesh, or left out by formats =), so they are not listed
 * (mfs_views_known_hidden: from the memo alone). */
unsigned mfs_view_known_hidden(mfs_fs *fs, const char *dir, const mfs_view_ref *ref);

/* The model file at SRC-relative path r: its views' failures, one line
 * "<view name>: <reason>" each (user.meshfs.error on the model).  Resolves
 * (converts) what is not known.  Length, 0 if none failed, -errno. */
int mfs_model_errors(mfs_fs *fs, const char *r, char *out, size_t n);

/* ==== lgepkg.c: game_resources.lgepkg ==== */

/* Internal to the mount daemon: game_resources.lgepkg, the one file per
 * folder that packs every model's .vrt .tri .tex .sph views for the LGE
 * engine (docs/formats/lgepkg.md).
 *
 * The package is a view of views: its bytes are assembled from the four
 * views of each model (resolved, and converted if need be, by the
 * resolver, mfs_view_get) and stored as a cache entry of its own, keyed by what
 * it is made of, then served like any view (fd + offset + length). */




/* Does folder dir show a package?  Packages on (formats), at least one
 * model with views (mfs_dirmap_models), and no real entry shown under that
 * name (a real file wins).  1, 0, or -1 with err (its code: the folder's
 * errno).  mfs_dir_list applies the same rule to a listing. */
int mfs_lgepkg_present(mfs_fs *fs, const char *dir, mfs_err *err);

/* pkgempty.c: 1 if every model of folder dir (table t) is known, without
 * converting, to have a failed package view, so its package would hold no
 * model and is not shown; else 0. */
int mfs_lgepkg_known_empty(mfs_fs *fs, const char *dir, const mfs_dirtab *t);

/* The package's attributes, its exact size included: every model's four
 * views are resolved (converted as needed, up to convert_jobs at once).  A
 * package that cannot be made (it would pass 2 GiB) has size 0 and a reason,
 * like a failed view.  Returns 0 or -errno. */
int mfs_lgepkg_attr(mfs_fs *fs, const char *dir, struct stat *st);

/* Attributes if known without any work (every view of every model answers
 * mfs_view_cached_stat): 1 with *st filled, else 0.  For listings. */
int mfs_lgepkg_cached_stat(mfs_fs *fs, const char *dir, struct stat *st);

/* What a listing knows of a model that the memo may have forgotten: the
 * copy of its manifest in the folder's record, and the stat it took of the
 * model file.  begin fills the hint (and *model_st, returning 1, if it has
 * the stat); end is called once after each begin, with what the hint did. */
typedef struct mfs_lgepkg_hints {
    int (*begin)(void *ctx, const char *model, mfs_view_hint *hint, struct stat *model_st);
    void (*end)(void *ctx, const char *model, mfs_view_hint *hint);
    void *ctx;
} mfs_lgepkg_hints;

/* mfs_lgepkg_cached_stat with hints: a folder of more models than the memo
 * holds is answered from the folder's record, not one model entry opened
 * a model (the package's stat walks every model). */
int mfs_lgepkg_cached_stat_hinted(mfs_fs *fs, const char *dir, const mfs_lgepkg_hints *hints,
                                  struct stat *st);

/* Opens the package's bytes: found in the cache, or assembled and stored
 * there first.  hit: fd, offset, length (caller releases); key: the entry's
 * key, naming its bytes; st: the attributes of exactly those bytes.  0 or
 * -errno. */
int mfs_lgepkg_open(mfs_fs *fs, const char *dir, mfs_cache_hit *hit, mfs_cache_key *key,
                    struct stat *st);

/* user.meshfs.error: the models left out, each with its reason (and why
 * the package could not be made, if so).  Returns the text length, 0 when
 * nothing is wrong, or -errno. */
int mfs_lgepkg_error(mfs_fs *fs, const char *dir, char *out, size_t n);


/* ==== prefetch.c: a listed folder's cold models, converted in the background ==== */

/* Converting a listed folder's cold models in the background (-o prefetch).
 *
 * `ls -l` and `find -ls` read a folder, then stat its names one after
 * another; a stat of a view nobody has converted yet must convert (its size
 * is exact), so N cold models would cost N conversions in series.  When such
 * a stat comes within a short while after a listing of its folder, the
 * folder's other cold models are queued here and converted by background
 * threads while the user's stats go on: the next stat finds its model
 * converted or converting (the resolver's single flight: it waits for that
 * one conversion only).  A stat or open with no listing before it (an engine
 * reading one model) queues nothing.
 *
 * Bounds: at most cfg.prefetch models wait per mount (the oldest is dropped
 * when more come); conversions share the convert_jobs slots with foreground
 * ones (convert.c), and a foreground request waiting for a slot goes first
 * (for up to 10 s: it may be waiting for the model a prefetch holds).
 * A queued model that became warm or failed meanwhile is skipped.  Unmount
 * drops what waits and lets the running conversions finish.
 *
 * A fill that runs for more than 2 s logs its progress (info level) every
 * 5 s and once when it ends. */


#define MFS_PREFETCH_DEFAULT 256u
#define MFS_PREFETCH_MAX 65536u

/* Makes fs->prefetch (NULL with cfg.prefetch 0).  No thread starts until
 * something is queued (the daemon may still fork to detach).  0, or -1
 * with err (ENOMEM). */
int mfs_prefetch_open(mfs_fs *fs, mfs_err *err);

/* Drops what waits, lets running conversions finish, joins the threads and
 * frees fs->prefetch.  Called once the FUSE loop is over. */
void mfs_prefetch_close(mfs_fs *fs);

/* readdir listed folder `dir` (SRC-relative, "" for the root). */
void mfs_prefetch_listed(mfs_fs *fs, const char *dir);

/* A stat of view ref in `dir` is about to resolve it: if the view is cold
 * and its folder was just listed, queue the folder's cold models (this one
 * first, then the others in name order) before the caller converts; the
 * caller's own conversion gets a slot first (mfs_fs_fg_coming: the caller
 * ends it with mfs_fs_fg_done). */
void mfs_prefetch_attr(mfs_fs *fs, const char *dir, const mfs_view_ref *ref);

/* Models waiting now (user.meshfs.stats prefetch_queued). */
unsigned mfs_prefetch_waiting(mfs_fs *fs);


/* ==== ops.c: a mount path to attributes, a handle's bytes or an errno ==== */

/* The operations on mount paths ("/a/b") of mount fs; lowlevel.c calls
 * them with the path of each request's node and the mount from the
 * session's userdata.  Each answers 0 (or a length) or -errno: this is
 * the one place -errno crosses into the session.  The write operations
 * are lowlevel.c's (EROFS); the directory ones listing.c's; the open
 * handles files.c's.  No libfuse type here. */
int mfs_ops_readlink(mfs_fs *fs, const char *path, char *buf, size_t size);
int mfs_ops_statfs(mfs_fs *fs, struct statvfs *sv);
int mfs_ops_getxattr(mfs_fs *fs, const char *path, const char *name, char *value, size_t size);
int mfs_ops_listxattr(mfs_fs *fs, const char *path, char *list, size_t size);
/* OPEN of the file at path (files.c's mfs_files_open makes the
 * kernel's handle of it): 0 with *out filled (a descriptor of the caller's
 * own: a plain file of SRC, or a view's entry with its payload's range,
 * the attributes of exactly those bytes and the entry's key), or -errno.
 * MFS_OPS_LEASED: a plain file, or a view's model, under another
 * process's lease (leasewait.h): nothing was opened; the caller asks
 * again later, from outside the request threads, until it answers
 * otherwise.  Write access is refused before (EROFS). */
#define MFS_OPS_LEASED 1
typedef struct mfs_ops_opened {
    int is_view;
    int fd;
    uint64_t offset, length; /* a view's payload within fd */
    struct stat st;          /* a view: the attributes of the entry it serves */
    uint8_t key[16];         /* a view: its entry's key */
} mfs_ops_opened;
int mfs_ops_open_path(mfs_fs *fs, const char *path, mfs_ops_opened *out);

/* For an open answered MFS_OPS_LEASED: whether the file at path, or the
 * model of the view at path, is still under a lease (an O_NONBLOCK open
 * of it answers EWOULDBLOCK).  Converts nothing, waits for nothing. */
int mfs_ops_leased(mfs_fs *fs, const char *path);

/* A stat of a request's SRC path taken before the request ran (lowlevel.c
 * takes one to tell a view from a file of SRC): LOOKUP and GETATTR answer
 * from it rather than stat the path a second time.  An answer as of a
 * moment after the request came, so as true as one taken later. */
typedef struct mfs_ops_prestat {
    int known;
    int rc;                 /* 0, or -errno */
    struct stat st;
    char rel[PATH_MAX];     /* the SRC-relative path it is of */
} mfs_ops_prestat;

/* LOOKUP of path: its attributes, 0 or -errno, as GETATTR; a view whose
 * inode holds an older entry for open handles moves to a new one first
 * (fs->session->renew, renew.c), so the path shows the new entry and the handles keep
 * the old. */
int mfs_ops_lookup(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre);

/* GETATTR of path by name, as LOOKUP without the move (a GETATTR through
 * an open handle is files.c's); pre may be NULL. */
int mfs_ops_getattr(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre);

/* The one place a mount path becomes SRC-relative (ops.c): the real path,
 * in a per-thread buffer valid until this thread's next call; NULL with
 * errno set when the path shows nothing (-o lowercase_names). */
const char *mfs_ops_rel(mfs_fs *fs, const char *path);

#endif

/* Internal to the mount daemon (src/fs/): the state one mount shares
 * between FUSE threads.  See docs/architecture.md for the path of a read(). */
#ifndef MESHFS_FS_H
#define MESHFS_FS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "meshfs/cache.h"
#include "meshfs/convert.h"
#include "meshfs/formats.h"
#include "meshfs/latch.h"
#include "meshfs/log.h"
#include "meshfs/rules.h"
#include "meshfs/spawner.h"
#include "meshfs/views.h"

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
    unsigned prefetch;      /* -o prefetch: models queued at most (prefetch.h); 0 off */
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
    atomic_uint_least64_t views_renewed;     /* views moved to a new kernel inode (ops.c) */
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
    atomic_uint_least64_t views_evicted_at_store; /* views too big for the room
                                                     the cache could make (pins.c) */
} mfs_fs_stats;

typedef struct mfs_dirmaps mfs_dirmaps;
typedef struct mfs_prefetch mfs_prefetch;
typedef struct mfs_share mfs_share;
typedef struct mfs_leasewait mfs_leasewait;
#define MFS_PKG_STRIPES 64 /* package locks, by a hash of the folder (lgepkg.c) */
/* The session layer's state, one of each per mount (made by mfs_ll_setup,
 * freed by mfs_ll_teardown; each defined in its own file). */
typedef struct mfs_ll mfs_ll;                 /* lowlevel.c: session, node table, pruner */
typedef struct mfs_dirreplies mfs_dirreplies; /* dirreply.c: replies built ahead */
typedef struct mfs_listings mfs_listings;     /* listing.c: open listings, folder signatures */
typedef struct mfs_pt mfs_pt;                 /* passthrough.c: backing ids by node */
typedef struct mfs_files mfs_files;           /* ops.c: the open files' handles */
typedef struct mfs_kviews mfs_kviews;         /* kview.c: what the kernel holds of views */
typedef struct mfs_pins mfs_pins;             /* pins.c: entries evicted as soon as stored */

/* One mount's state, owned here and passed to every function that needs
 * it; the session layer reaches it from the FUSE session's userdata
 * (lowlevel.c).  Nothing in src/fs/ keeps a process-wide copy.
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
 *      - fs->moving (renew.c), held while an open decides (passthrough,
 *        kview) and while a view moves to a new node;
 *      - the open files' list lock (ops.c, fs->files), held while a
 *        reopen of a moved view copies a handle (open_moved): it takes
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
typedef struct mfs_fs {
    mfs_fs_config cfg;
    int rootfd;             /* SRC, O_PATH|O_DIRECTORY */
    dev_t src_dev;          /* SRC's device (mfs_src_ino) */
    mfs_spawner *spawner;   /* the workers: path, lifeline, model extensions */
    mfs_worker_user worker_user; /* -o worker_user, resolved (for the spawner) */
    mfs_cache *cache;
    mfs_views *views;       /* the resolver over the cache (models.c) */
    mfs_remote *remote;     /* the remote tier, or NULL (remote.h) */
    mfs_dirmaps *dirs;
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
    mfs_prefetch *prefetch;   /* prefetch.h; NULL with -o prefetch=0 */
    mfs_share *share;         /* each user's share of the request threads (share.h) */
    mfs_leasewait *leasewait; /* opens waiting for a lease (leasewait.h) */
    mfs_pins *pins;           /* coherence.h */
    mfs_ll *ll;
    mfs_dirreplies *replies;
    mfs_listings *listings;
    mfs_pt *pt;
    mfs_files *files;
    mfs_kviews *kviews;       /* coherence.h */
    pthread_mutex_t moving;   /* renew.c: one view moved to a new inode at a time */
    pthread_mutex_t pkg_locks[MFS_PKG_STRIPES]; /* lgepkg.c: a package built once */
} mfs_fs;

/* ---- dirmap.c: which names in a folder are views of which model ---- */

typedef struct mfs_view_ref {
    char *model;            /* model file name in the folder */
    char *base;             /* view base name: "car" or "car.fbx" */
    int format;             /* mfs_format */
    struct stat dir_st;     /* the folder's, as the lookup found it (the
                               memo takes it as given: mfs_view_given) */
} mfs_view_ref;

mfs_dirmaps *mfs_dirmaps_new(void);
void mfs_dirmaps_free(mfs_dirmaps *d);
/* Tables and their weight (entries plus models) held now, and tables
 * evicted for the cap (a weight of 8 x memo_size, least recently used
 * folder out first). */
void mfs_dirmaps_stats(mfs_dirmaps *d, uint64_t *tables, uint64_t *names, uint64_t *evictions);

/* If `name` in folder `dir` (relative, "" for the root) is a view, fills ref
 * (model is a malloc'd copy) and returns 1; 0 if not; -errno on error. */
int mfs_dirmap_lookup(mfs_fs *fs, const char *dir, const char *name, mfs_view_ref *ref);

/* Stable inode numbers: a source entry keeps its own, a view gets a hash of
 * (device, model inode, where, format) with the top bit set.  where is
 * mfs_view_where(folder, view base), or 0 for a folder's package: hard links
 * to one model under two names or in two folders are one inode, but their
 * views are different files (their .fmi and .fmd name the model). */
uint64_t mfs_view_ino(dev_t dev, ino_t ino, uint64_t where, int format);
uint64_t mfs_view_where(const char *dir, const char *base);
/* The inode number the kernel is told for a source entry: its own on SRC's
 * device; on another file system mounted inside SRC (all share the mount's
 * one st_dev) a hash of (device, inode) with bit 62 set and the top bit
 * clear, so two such file systems' small inode numbers do not make two
 * files one to tar, cp -a, du or find. */
uint64_t mfs_src_ino(const mfs_fs *fs, dev_t dev, ino_t ino);

/* With lowercase_names: the real name of the entry folder `dir` shows as
 * `shown`, into out; 1 if found, 0 if `shown` is no shown entry (a view,
 * or nothing), -ENOENT if entries of different owners have that lowercase
 * name (it reaches none of them), -errno.  Without lowercase_names
 * always 0. */
int mfs_dirmap_real_name(mfs_fs *fs, const char *dir, const char *shown, char *out, size_t n);
/* With lowercase_names: why entries of folder `dir` are not shown, a line
 * each (its user.meshfs.error), into out as getxattr answers: the length
 * (without the NUL; out may be NULL when n is 0), -ENODATA if every entry
 * is shown, -ERANGE if n is too small, -errno. */
int mfs_dirmap_hidden(mfs_fs *fs, const char *dir, char *out, size_t n);

/* A model with views, as the folder's table names it. */
typedef struct mfs_dir_model {
    const char *model;      /* real file name in the folder */
    const char *base;       /* view base (views are base.<fmt>) */
    size_t entry;           /* the model file's index among the entries */
    ino_t ino;              /* the model file's, as the folder said */
} mfs_dir_model;

/* A folder's table: its entries and its models with views, as one read of
 * it found them.  Immutable and shared: holders take a reference and drop
 * it with mfs_dirtab_put; it lives until the last one does, even after a
 * newer table replaced it.  A listing holds one for its whole length. */
typedef struct mfs_dirtab mfs_dirtab;

/* The current table of folder `dir` (relative, "" for the root), read again
 * if the folder's mtime or ctime moved; with fresh, also if it was built
 * before the folder's times settled (mfs_input_times_settled, inputs.h), unless the
 * caller waited for that very build.  0 or -errno. */
int mfs_dirtab_get(mfs_fs *fs, const char *dir, int fresh, mfs_dirtab **out);
/* The same, with the folder's stat it was checked against into *st. */
int mfs_dirtab_get_st(mfs_fs *fs, const char *dir, int fresh, mfs_dirtab **out, struct stat *st);
void mfs_dirtab_put(mfs_dirtab *t);

/* Every model of the table that has views, in byte order of base (the same
 * list and order meshfs-convert uses); borrowed from t. */
const mfs_dir_model *mfs_dirtab_models(const mfs_dirtab *t, size_t *n);
/* The model whose file is named `model`, or NULL. */
const mfs_dir_model *mfs_dirtab_model(const mfs_dirtab *t, const char *model);
/* Copies of dm's model and base into *model and *base (both set or both
 * NULL).  1, or -ENOMEM. */
int mfs_dir_model_copy(const mfs_dir_model *dm, char **model, char **base);
/* The index of the entry of that real name, or -1. */
ssize_t mfs_dirtab_entry(const mfs_dirtab *t, const char *name);

/* One name of a folder as the mount lists it. */
typedef struct mfs_dir_item {
    const char *name;       /* borrowed from the table or the caller's buf */
    const char *real;       /* an entry's real name (lowercase_names) */
    ino_t ino;
    mode_t mode;            /* the type bits */
    int is_view;
    size_t model;           /* a view's model: index into the models */
    mfs_view_ref view;      /* is_view: borrowed from the table */
} mfs_dir_item;

/* Items 0 .. count-1 are the folder's entries (sorted by name), then each
 * model's views (models by base, formats by name), then the package.
 * mfs_dirtab_item fills item i and returns 1, or 0 if it is not shown (a
 * model file under hide_sources, an entry lowercase_names hides). */
size_t mfs_dirtab_count(const mfs_dirtab *t);
/* The folder's entries: items 0 .. entries-1. */
size_t mfs_dirtab_entries(const mfs_dirtab *t);
int mfs_dirtab_item(const mfs_fs *fs, const mfs_dirtab *t, size_t i, char *buf, size_t bufsz,
                    mfs_dir_item *out);

/* ---- casemap.c: shown paths to real ones (-o lowercase_names) ---- */

/* The SRC-relative real path of a shown path (no leading '/'; "" is SRC
 * itself), translated component by component through each folder's table.
 * Returns 0, or -ENOENT when a component is not a shown name (a name with
 * a capital letter, a folder hidden by a lowercase collision), -errno.  A
 * last component that is no shown entry is kept as given: it may be a
 * view.  Without lowercase_names the path is copied unchanged. */
int mfs_casemap_path(mfs_fs *fs, const char *shown, char *real, size_t n);

/* The shown form of a real SRC-relative path: lowercased in place with
 * lowercase_names (the .fmi model= path must be what FGE will open). */
void mfs_casemap_fold(const mfs_fs *fs, char *path);

/* The owners the naming rule asks for (mfs_name_owner_fn): ctx is one of
 * these, e the entries of folder dir as handed to mfs_names_plan. */
struct mfs_name_entry;
struct mfs_names;
typedef struct mfs_casemap_owners {
    const mfs_fs *fs;
    const char *dir;
    const struct mfs_name_entry *e;
} mfs_casemap_owners;
int mfs_casemap_owner(void *ctx, size_t entry, unsigned long *uid);
/* The plan's CASE and OWNERS notes, a line each, once each (malloc'd), or
 * NULL: none (errno 0) or out of memory (errno ENOMEM). */
char *mfs_casemap_hidden_text(const struct mfs_names *p);

/* ---- models.c: the resolver's host, and the fs layer's calls into it ----
 *
 * A view's bytes are resolved by the cache layer's resolver
 * (meshfs/views.h: memo, cache, conversion, single flight per model); the
 * fs layer crosses into it here only, and only ops.c turns its outcomes
 * into -errno. */

/* Makes fs->views, with this mount as its host.  0 or -ENOMEM. */
int mfs_fs_views_open(mfs_fs *fs);

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
 * (include/meshfs/explain.h), malloc'd; NULL with err. */
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
 * mfs_view_where.  Its mode: the read bits of mst, narrowed by vi's
 * (docs/security.md, S1). */
void mfs_view_stat(const struct stat *mst, const mfs_view_info *vi, uint64_t where, int format,
                   struct stat *st);

/* dir "/" name into out, or name alone when dir is "" (SRC itself): its
 * length, or -1 with out empty when it does not fit in n.  Not snprintf:
 * a cold folder's first listing joins a path or two for each model, and
 * formatting them was 7% of the daemon's time there. */
static inline int mfs_join(char *out, size_t n, const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name), len = dl ? dl + 1 + nl : nl;
    if (len >= n) {
        if (n)
            out[0] = '\0';
        return -1;
    }
    if (dl) {
        memcpy(out, dir, dl);
        out[dl] = '/';
        dl++;
    }
    memcpy(out + dl, name, nl + 1);
    return (int)len;
}

/* ---- beneath.c: every path under SRC (docs/security.md, S2) ---- */

/* A path as the kernel gives it (relative to SRC, "" or "." for SRC):
 * resolved beneath SRC with no symbolic link followed anywhere, the last
 * component included (O_NOFOLLOW is implied).  -1 with errno (ELOOP: a
 * link on the way, EXDEV: ".." out of SRC). */
int mfs_beneath_open(const mfs_fs *fs, const char *rel, int flags);
/* lstat of such a path; 0 or -1 with errno. */
int mfs_beneath_stat(const mfs_fs *fs, const char *rel, struct stat *st);
/* Between these, on this thread, mfs_beneath_stat of a name directly in
 * dir costs one fstatat on dir's descriptor (opened beneath SRC at begin)
 * instead of a resolution from SRC: a listing stats every name of its
 * folder.  Same answers; paths elsewhere as usual. */
void mfs_beneath_walk_begin(const mfs_fs *fs, const char *dir);
void mfs_beneath_walk_end(void);
/* readlink of such a path (no NUL added); length or -1 with errno. */
ssize_t mfs_beneath_readlink(const mfs_fs *fs, const char *rel, char *buf, size_t n);

/* A dependency's path (mfs_dep.path): resolved as the worker resolved it,
 * beneath SRC, following links that stay beneath. */
int mfs_beneath_open_dep(const mfs_fs *fs, const char *rel, int flags);
int mfs_beneath_stat_dep(const mfs_fs *fs, const char *rel, struct stat *st);
/* The SRC-relative path with no links in it that a dependency path leads
 * to, into out.  0 or -errno. */
int mfs_beneath_dep_real(const mfs_fs *fs, const char *rel, char *out, size_t n);
/* The content hash of the regular file at such a kernel path (through the
 * cache's stat index, so an unchanged file is not read); st receives its
 * stat.  0, or -1 with err and errno set. */
int mfs_beneath_hash(mfs_fs *fs, const char *rel, struct stat *st, uint8_t hash[16], mfs_err *err);

/* ---- errtext.c: reasons and log lines as users see them ---- */

/* in with SRC's absolute path made relative, and the cache directory (with
 * the names inside it) and the worker's location left out. */
void mfs_fs_errtext(const mfs_fs *fs, const char *in, char *out, size_t n);

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

/* Option text for a format's cache key (fmi_model: the .fmi model= path),
 * and for the manifest. */
void mfs_fs_format_options(const mfs_fs *fs, int format, const char *fmi_model, char *buf,
                           size_t n);
void mfs_fs_import_options(const mfs_fs *fs, char *buf, size_t n);

/* errtext.c: a line for the log (meshfs/log.h: stderr in the foreground,
 * else syslog), its text as mfs_fs_errtext shows it.  mfs_fs_log writes at
 * warning level: a model or view failed, or something to fix. */
void mfs_fs_log(mfs_fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mfs_fs_log_at(mfs_fs *fs, mfs_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Test builds only: sleeps the milliseconds the environment variable `var`
 * gives (MESHFS_TEST_RELEASE_DELAY_MS, _FG_DELAY_MS, _OPEN_DELAY_MS; each
 * named where it is used); does nothing in other builds. */
void mfs_test_delay(const char *var);

#endif

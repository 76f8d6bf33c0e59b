/* Names (src/names/): which names a folder shows and what each is (an
 * entry of SRC, a view of which model, the folder's package), shown paths
 * to real ones (-o lowercase_names), every path resolved beneath SRC, and
 * the text of reasons and log lines.  This is the folder's whole face.
 *
 * Its state is its own (mfs_names_state below), one per mount, embedded
 * in the mount's (mfs_fs.names, src/mount/mount.h, which includes this
 * header: the mount is above, names/ never sees it).  Its functions take
 * that: SRC's descriptor, the options names depend on and the folder
 * tables.  A unit test makes one without a mount (tests/unit/test_names.c).
 *
 * Errors, one rule (include/meshfs/err.h): a call that can fail returns -1
 * (or NULL) with an mfs_err, whose code (mfs_err_errno) is the errno the
 * mount answers the kernel with: ENOENT for a name that is not there,
 * ENOMEM, a folder's own errno.  beneath.c's wrappers of single system
 * calls (mfs_beneath_open, _stat, _readlink and their _dep forms) answer
 * as those calls do, -1 with errno, so they stand in for them (the
 * resolver's host takes mfs_beneath_stat as its stat).  Nothing here
 * returns -errno. */
#ifndef MESHFS_NAMES_H
#define MESHFS_NAMES_H

#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "meshfs/cache.h"
#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/util.h"

typedef struct mfs_dirmaps mfs_dirmaps;
typedef struct mfs_spawner mfs_spawner;

/* One mount's names (mfs_fs.names).  Not struct mfs_names: that is the
 * naming rule's plan (meshfs/rules.h).  SRC's descriptor and the folder
 * tables are owned here (the mount opens and frees them); the options are
 * the mount's, copied in once they are parsed and never changed after
 * (mfs_fs_parts_init, src/mount/parts.c); cache and spawner are the
 * mount's, borrowed (NULL until it opens them: the log then leaves their
 * paths as they are). */
typedef struct mfs_names_state {
    int rootfd;             /* SRC, O_PATH|O_DIRECTORY */
    dev_t src_dev;          /* SRC's device (mfs_inode_src) */
    mfs_dirmaps *dirs;      /* the folder tables (dirmap.c) */
    const char *src;        /* SRC's absolute path (for the log's text) */
    int lowercase_names;    /* -o lowercase_names */
    int hide_sources;       /* -o hide_sources */
    unsigned formats;       /* views converted (MFS_FMT_LGEPKG_BIT: packages) */
    unsigned shown;         /* views listed */
    size_t memo_size;       /* -o memo_size (the tables' cap is 8 x it) */
    mfs_cache *cache;       /* borrowed: file hashes, the log's cache dir */
    mfs_spawner *spawner;   /* borrowed: model extensions, the worker's path */
} mfs_names_state;

/* mfs_view_ref.format of a folder's package (game_resources.lgepkg,
 * src/mount/lgepkg.c): after every per-model format. */
#define MFS_FS_LGEPKG MFS_FMT_COUNT

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
 * (model is a malloc'd copy) and returns 1; 0 if not; -1 with err (its
 * code: the folder's errno, ENOMEM). */
int mfs_dirmap_lookup(mfs_names_state *ns, const char *dir, const char *name, mfs_view_ref *ref,
                      mfs_err *err);

/* inode.c: stable inode numbers.  A source entry keeps its own, a view gets a hash of
 * (device, model inode, where, format) with the top bit set.  where is
 * mfs_inode_where(folder, view base), or 0 for a folder's package: hard links
 * to one model under two names or in two folders are one inode, but their
 * views are different files (their .fmi and .fmd name the model). */
uint64_t mfs_inode_view(dev_t dev, ino_t ino, uint64_t where, int format);
uint64_t mfs_inode_where(const char *dir, const char *base);
/* The inode number the kernel is told for a source entry: its own on SRC's
 * device; on another file system mounted inside SRC (all share the mount's
 * one st_dev) a hash of (device, inode) with bit 62 set and the top bit
 * clear, so two such file systems' small inode numbers do not make two
 * files one to tar, cp -a, du or find. */
uint64_t mfs_inode_src(const mfs_names_state *ns, dev_t dev, ino_t ino);

/* With lowercase_names: the real name of the entry folder `dir` shows as
 * `shown`, into out; 1 if found, 0 if `shown` is no shown entry (a view,
 * or nothing), -1 with err: code ENOENT if entries of different owners have
 * that lowercase name (it reaches none of them), or the folder's errno.
 * Without lowercase_names
 * always 0. */
int mfs_dirmap_real_name(mfs_names_state *ns, const char *dir, const char *shown, char *out, size_t n,
                         mfs_err *err);
/* With lowercase_names: why entries of folder `dir` are not shown, a line
 * each (its user.meshfs.error), into out as getxattr answers: the length
 * (without the NUL; out may be NULL when n is 0), or -1 with err: code
 * ENODATA if every entry is shown, ERANGE if n is too small, or the
 * folder's errno. */
int mfs_dirmap_hidden(mfs_names_state *ns, const char *dir, char *out, size_t n, mfs_err *err);

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
 * before the folder's times settled (mfs_input_times_settled, import.h), unless the
 * caller waited for that very build.  0, or -1 with err (code: the
 * folder's errno, ENOTDIR, ENOMEM). */
int mfs_dirtab_get(mfs_names_state *ns, const char *dir, int fresh, mfs_dirtab **out, mfs_err *err);
/* The same, with the folder's stat it was checked against into *st. */
int mfs_dirtab_get_st(mfs_names_state *ns, const char *dir, int fresh, mfs_dirtab **out, struct stat *st,
                      mfs_err *err);
void mfs_dirtab_put(mfs_dirtab *t);

/* Every model of the table that has views, in byte order of base (the same
 * list and order meshfs-convert uses); borrowed from t. */
const mfs_dir_model *mfs_dirtab_models(const mfs_dirtab *t, size_t *n);
/* The model whose file is named `model`, or NULL. */
const mfs_dir_model *mfs_dirtab_model(const mfs_dirtab *t, const char *model);
/* Copies of dm's model and base into *model and *base (both set or both
 * NULL).  1, or -1 with err (ENOMEM). */
int mfs_dir_model_copy(const mfs_dir_model *dm, char **model, char **base, mfs_err *err);
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
int mfs_dirtab_item(const mfs_names_state *ns, const mfs_dirtab *t, size_t i, char *buf, size_t bufsz,
                    mfs_dir_item *out);

/* ---- casenotes.c: owners and hidden entries as a table is built ---- */

/* The owners the naming rule asks for (mfs_name_owner_fn): ctx is one of
 * these, e the entries of folder dir as handed to mfs_names_plan. */
struct mfs_name_entry;
struct mfs_names;
typedef struct mfs_casenotes_owners {
    const mfs_names_state *ns;
    const char *dir;
    const struct mfs_name_entry *e;
} mfs_casenotes_owners;
int mfs_casenotes_owner(void *ctx, size_t entry, unsigned long *uid);
/* The plan's CASE and OWNERS notes, a line each, once each (malloc'd), or
 * NULL: none (errno 0) or out of memory (errno ENOMEM). */
char *mfs_casenotes_text(const struct mfs_names *p);

/* ---- casemap.c: shown paths to real ones (-o lowercase_names) ---- */

/* The SRC-relative real path of a shown path (no leading '/'; "" is SRC
 * itself), translated component by component through each folder's table.
 * Returns 0, or -1 with err: code ENOENT when a component is not a shown
 * name (a name with a capital letter, a folder hidden by a lowercase
 * collision), ENAMETOOLONG, or a folder's errno.  A
 * last component that is no shown entry is kept as given: it may be a
 * view.  Without lowercase_names the path is copied unchanged. */
int mfs_casemap_path(mfs_names_state *ns, const char *shown, char *real, size_t n, mfs_err *err);

/* The shown form of a real SRC-relative path: lowercased in place with
 * lowercase_names (the .fmi model= path must be what FGE will open). */
void mfs_casemap_fold(const mfs_names_state *ns, char *path);


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
int mfs_beneath_open(const mfs_names_state *ns, const char *rel, int flags);
/* lstat of such a path; 0 or -1 with errno. */
int mfs_beneath_stat(const mfs_names_state *ns, const char *rel, struct stat *st);
/* Between these, on this thread, mfs_beneath_stat of a name directly in
 * dir costs one fstatat on dir's descriptor (opened beneath SRC at begin)
 * instead of a resolution from SRC: a listing stats every name of its
 * folder.  Same answers; paths elsewhere as usual. */
void mfs_beneath_walk_begin(const mfs_names_state *ns, const char *dir);
void mfs_beneath_walk_end(void);
/* readlink of such a path (no NUL added); length or -1 with errno. */
ssize_t mfs_beneath_readlink(const mfs_names_state *ns, const char *rel, char *buf, size_t n);

/* A dependency's path (mfs_dep.path): resolved as the worker resolved it,
 * beneath SRC, following links that stay beneath. */
int mfs_beneath_open_dep(const mfs_names_state *ns, const char *rel, int flags);
int mfs_beneath_stat_dep(const mfs_names_state *ns, const char *rel, struct stat *st);
/* The SRC-relative path with no links in it that a dependency path leads
 * to, into out.  0, or -1 with err (its errno: ENOENT, EXDEV, ...). */
int mfs_beneath_dep_real(const mfs_names_state *ns, const char *rel, char *out, size_t n, mfs_err *err);
/* The content hash of the regular file at such a kernel path (through the
 * cache's stat index, so an unchanged file is not read); st receives its
 * stat.  0, or -1 with err, whose code is the errno (EWOULDBLOCK: the
 * file is under another process's lease). */
int mfs_beneath_hash(mfs_names_state *ns, const char *rel, struct stat *st, uint8_t hash[16], mfs_err *err);

/* ---- errtext.c: reasons and log lines as users see them ---- */

/* in with SRC's absolute path made relative, and the cache directory (with
 * the names inside it) and the worker's location left out. */
void mfs_errtext(const mfs_names_state *ns, const char *in, char *out, size_t n);

/* errtext.c: a line for the log (util.h, "log": stderr in the foreground,
 * else syslog), its text as mfs_errtext shows it.  mfs_errtext_log writes at
 * warning level: a model or view failed, or something to fix. */
void mfs_errtext_log(const mfs_names_state *ns, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mfs_errtext_log_at(const mfs_names_state *ns, mfs_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


#endif

/* Coherence (src/coherence/), the folder's whole face: keeping what
 * readers see consistent when sources change, limits change, or the cache
 * cannot hold what it should (docs/coherence.md): what the kernel may keep
 * of a view, when a view moves to a new inode, pins, remembered failures,
 * and the mount points the daemon could not serve.  Its state is its own
 * (mfs_coherence below), one per mount, embedded in the mount's
 * (mfs_fs.coherence, src/mount/mount.h, which includes this header: the
 * mount is above, coherence/ never sees it).  It uses names/ below it
 * (the log, paths beneath SRC); what only the layers above know (whether
 * a kernel node is still its name's, moving a name to a new node) it asks
 * through the callbacks the mount gives it.
 *
 * Errors, one rule (include/meshfs/err.h): a call that can fail returns -1
 * with an mfs_err, its code (mfs_err_errno) the errno that matters
 * (ESTALE: the kernel must look again); the entry lookups answer as the
 * cache's (meshfs/cache.h).  Nothing here returns -errno. */
#ifndef MESHFS_COHERENCE_H
#define MESHFS_COHERENCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "meshfs/cache.h"
#include "meshfs/rules.h"
#include "meshfs/views.h"
#include "../names/names.h"

typedef struct mfs_kviews mfs_kviews; /* kview.c: what the kernel holds of views */
typedef struct mfs_pins mfs_pins;     /* pins.c: entries evicted as soon as stored */

/* One mount's coherence (mfs_fs.coherence).  The records, the pins and
 * the mutex are owned here (the mount makes and frees them); the limits
 * and the cache's size are the mount's, copied in once known and never
 * changed after; cache and names are the mount's, borrowed.  renew and
 * node_current are the layers above (the session's node table, through
 * the mount: mfs_fs_parts_init, src/mount/parts.c), called with ctx:
 * renew moves the view at path to a new kernel inode (its node `node`, or
 * its name's now when 0), answering GETATTR with `kept` until the kernel
 * forgets it, 1 if it moved now, 0 if it had already or there is no
 * session; node_current says whether node is still its name's. */
typedef struct mfs_coherence {
    mfs_kviews *kviews;
    mfs_pins *pins;
    pthread_mutex_t moving;   /* renew.c: one view moved to a new inode at a time */
    atomic_uint_least64_t views_renewed;          /* views moved to a new kernel inode */
    atomic_uint_least64_t views_evicted_at_store; /* views too big for the room
                                                     the cache could make (pins.c) */
    mfs_limits limits;        /* the mount's, for remembered failures (failure.c) */
    uint64_t cache_size;      /* the cache's cap, for the log (pins.c) */
    mfs_cache *cache;         /* borrowed */
    const mfs_names_state *names; /* borrowed: the log, paths beneath SRC */
    int (*renew)(void *ctx, const char *path, uint64_t node, const struct stat *kept);
    int (*node_current)(void *ctx, uint64_t node);
    void *ctx;
} mfs_coherence;

/* ---- kview.c: what the kernel holds about each view ----
 *
 * The kernel keeps one size and one page cache per file, for up to a second
 * (attr_timeout) past the moment we told it.  A view's bytes change when
 * its model does, so without care an open of the new entry would be read
 * through the old size (cut short) or the old pages.  Every attribute reply
 * for a view and every view open goes through here, keyed by the view's
 * path in the mount, so each open can tell whether the kernel's state
 * matches the entry it serves. */

typedef struct mfs_kview_open {
    int keep_cache; /* the kernel's pages are this entry's: keep them */
    int direct_io;  /* no record could be made (out of memory): read around
                       the page cache, whose pages may be another entry's */
    int invalidate; /* the kernel may hold another entry's size or pages:
                       the caller must mfs_kview_invalidate() before replying */
    int renew;      /* handles on another entry hold this inode: the view
                       needs a new one (mfs_kview_detach, then a new node id) */
} mfs_kview_open;

/* A view open serving entry id (any 16 bytes naming its content) with
 * attributes st.  Returns the token for mfs_kview_release; NULL when
 * res->renew or res->direct_io says the open cannot be recorded. */
void *mfs_kview_opened(mfs_kviews *k, const char *path, const uint8_t id[16],
                       const struct stat *st, mfs_kview_open *res);
void mfs_kview_release(mfs_kviews *k, void *token, int direct_io);

/* After an open told to invalidate (mfs_kview_opened, mfs_kview_ref):
 * send(arg) tells the kernel to drop the inode's attributes and pages, and
 * the record then knows the kernel holds none.  Until it has been sent,
 * every other open of the record invalidates too: an open that trusted an
 * invalidation still on its way was answered while the kernel kept
 * another entry's size (test_coherence, under ThreadSanitizer). */
void mfs_kview_invalidate(mfs_kviews *k, void *token, void (*send)(void *arg), void *arg);

/* One more handle on token's entry (a handle opened as a copy of another:
 * files.c's reopen of a moved view); released like the others.  1 when
 * the caller must mfs_kview_invalidate before replying: the inode was
 * told other attributes, or an invalidation is on its way. */
int mfs_kview_ref(mfs_kviews *k, void *token, int direct_io);

/* The path's view moves to a new kernel inode (a new node id): its record
 * leaves with the old inode's handles, whose tokens stay valid until
 * released, and the path starts afresh, as a file the kernel never held. */
void mfs_kview_detach(mfs_kviews *k, const char *path);

/* What the kernel holds of path is not known any more (a listing reply
 * that recorded attributes for it was never sent, dirreply.c): its next
 * open invalidates. */
void mfs_kview_unknown(mfs_kviews *k, const char *path);

/* 1 with *served (the attributes they read) when handles are open on the
 * path's inode on another entry than the one the kernel is about to be
 * told by name: id, when the caller knows the current entry's (a LOOKUP);
 * else, when st is given, only if st has a later mtime (a listing may carry
 * attributes from a moment before; an entry that differs otherwise is
 * caught at its open, where mfs_kview_opened compares ids); with neither,
 * whenever handles are open.  The view then needs a new inode. */
int mfs_kview_held(mfs_kviews *k, const char *path, const uint8_t id[16], const struct stat *st,
                   struct stat *served);

/* The kernel is about to be told st by name (id as for mfs_kview_held): 0
 * when st was recorded, as mfs_kview_attr does; 1 with nothing recorded
 * when mfs_kview_held says the view needs a new inode first. */
int mfs_kview_named(mfs_kviews *k, const char *path, const uint8_t id[16], struct stat *st,
                    struct stat *served);

/* Attributes about to be told to the kernel for a view (getattr, a
 * listing's readdirplus): while handles are open on the path's inode, the
 * kernel must keep their entry's size, so st becomes theirs.  Records what
 * is told. */
void mfs_kview_attr(mfs_kviews *k, const char *path, struct stat *st);

/* The same, asked through the open handle `token` (a GETATTR with a file
 * handle): st stays the handle's own entry when its inode is no longer the
 * path's. */
void mfs_kview_handle_attr(mfs_kviews *k, void *token, const char *path, struct stat *st);


/* The most records kept (0: the default), least recently used out first;
 * never one with cached handles open (kview.c); and at most
 * MFS_KVIEW_RECORD_BYTES a record of that cap in bytes (a record holds its
 * path, up to PATH_MAX).  And how many are held now, have been evicted,
 * and their bytes, for the stats xattr. */
#define MFS_KVIEW_DEFAULT_CAP (8 * (size_t)MFS_VIEWS_MEMO_DEFAULT)
#define MFS_KVIEW_RECORD_BYTES 512
void mfs_kview_set_cap(mfs_kviews *k, size_t n);
/* The records of one mount (mfs_coherence.kviews), at most n (0: the default);
 * NULL: out of memory.  Freed after the session, with no handle left. */
mfs_kviews *mfs_kviews_new(size_t n);
void mfs_kviews_free(mfs_kviews *k);
void mfs_kview_stats(mfs_kviews *k, uint64_t *entries, uint64_t *evicted, uint64_t *bytes);

/* ---- renew.c: a view moves to a new kernel inode ---- */

/* An open's decisions (passthrough.c, kview.c) are taken between these, so
 * that no view moves meanwhile.  0; or -1 with err, code ESTALE, holding
 * nothing, when `node` is no longer its name's (the name moved on after the kernel
 * walked to it): the open answers ESTALE and the kernel looks again. */
int mfs_renew_open_begin(mfs_coherence *co, uint64_t node, mfs_err *err);
void mfs_renew_open_end(mfs_coherence *co);

/* Between those, from an open of node `node` that the kernel cannot serve
 * on that inode (its handles hold an older entry): the view's name moves to
 * a new node, and the open answers ESTALE, so the kernel looks again. */
void mfs_renew_view(mfs_coherence *co, const char *path, uint64_t node);

/* A view's attributes st, about to be given with its name (LOOKUP,
 * readdirplus; id: its entry's key when known): recorded (mfs_kview_attr),
 * and the name moved to a new node first if handles hold its inode on
 * another entry (mfs_kview_held). */
void mfs_renew_named_attr(mfs_coherence *co, const char *path, const uint8_t id[16], struct stat *st);

/* ---- pins.c: entries evicted as soon as they were stored ----
 *
 * A cache smaller than one model's views evicts the first views a
 * conversion stores while it stores the others.  Their descriptors, opened
 * before the rename (mfs_cache_writer_commit's hit), still read the bytes:
 * the last few are kept here, so such views are served anyway. */

/* One mount's pins (mfs_coherence.pins), made with its state; NULL: no memory. */
mfs_pins *mfs_pins_new(void);
void mfs_pins_free(mfs_pins *ps);
/* Takes over hit's descriptor. */
void mfs_pins_put(mfs_pins *ps, const mfs_cache_key *k, mfs_cache_hit *hit);
/* 1 with *length if k is pinned. */
int mfs_pins_peek(mfs_pins *ps, const mfs_cache_key *k, uint64_t *length);
/* 1 with hit filled (a descriptor of the caller's own) if k is pinned. */
int mfs_pins_open(mfs_pins *ps, const mfs_cache_key *k, mfs_cache_hit *hit);
/* After a conversion of relpath stored its views (hits[i]: the commit's
 * descriptor for man->views[i], or fd -1) and its model entry mk: pins
 * those the cache no longer has, releases the rest.  If the size cap took
 * some (the cache's fresh_evictions moved from fresh_before, read before
 * the run was filed), logs that the cache is too small and counts them
 * in views_evicted_at_store; else they were removed from outside (clear,
 * trim, rm -rf), which is said only at info. */
void mfs_pins_keep(mfs_coherence *co, const char *relpath, const mfs_cache_key *mk,
                   const mfs_cache_manifest *man, mfs_cache_hit *hits, uint64_t fresh_before);

/* ---- entry.c: an entry as the mount sees it ---- */

/* mfs_cache_peek, then: a failure that no longer stands (failure.c) is a
 * miss, and a key missing from the cache but pinned (pins.c) is a hit with
 * its length.  newest: the inputs' newest mtime.  Returns like the peek. */
int mfs_entry_peek(mfs_coherence *co, const mfs_cache_key *k, struct timespec newest,
                   mfs_cache_hit *hit, mfs_err *err);
/* mfs_cache_lookup (mk NULL) or mfs_cache_lookup_in the model entry mk,
 * falling back to the pin when the cache has no entry. */
int mfs_entry_lookup(mfs_coherence *co, const mfs_cache_key *mk, const mfs_cache_key *k,
                     mfs_cache_hit *hit, mfs_err *err);

/* ---- failure.c: whether a remembered failure still stands ---- */

/* What a failure of these inputs is recorded under: this mount's limits
 * and the newest mtime of the inputs (as the memo takes them). */
void mfs_failure_ctx(mfs_coherence *co, const mfs_dep *deps, uint32_t ndeps, mfs_cache_failctx *out);
/* 1 if the failure f holds for this mount and inputs whose newest mtime is
 * newest; 0 if it is to be tried again (a limit it ran under is lower than
 * this mount's, or an input was touched since). */
int mfs_failure_stands(const mfs_coherence *co, const mfs_cache_failctx *f, struct timespec newest);

/* ---- mountcheck.c: a mount point the daemon could not serve ---- */

/* MNT inside SRC (or SRC itself, or SRC inside MNT) would make the daemon
 * read through its own mount; MNT not a folder would give a dead mount.
 * -1 with the reason, 0 if fine or MNT does not exist (libfuse says so
 * then). */
int mfs_mount_point_check(const char *src_real, const char *mnt, mfs_err *err);

/* mountlive.c: -1 with the reason when the topmost mount at MNT is a live
 * meshfs mount of the same SRC (a second one would stack over it), unless
 * `stack` (-o stack) asks for that; 0 otherwise, with `under` (n bytes) the
 * SRC of the meshfs mount this one goes over, or "" if none. */
int mfs_mount_point_live(const char *src_real, const char *mnt, int stack, char *under,
                         size_t n, mfs_err *err);

#endif

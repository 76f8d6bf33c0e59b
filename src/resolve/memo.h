/* The resolver's memo (tier 1 of include/meshfs/views.h), shared by its
 * three files and by nothing else:
 *
 *   memo_table.c  the records: one per model, a hash table under an LRU
 *                 list, bounded in count and bytes (docs/scale.md)
 *   memo_check.c  what a record holds and when it still holds: its inputs'
 *                 stats (and the folders that stand for absent ones), who
 *                 may read the views, each format's entry state
 *   views.c       the tier policy: memo, local cache, remote, conversion
 *
 * Locking: mfs_views.lock guards the table and the LRU list (a leaf); a
 * record's own lock is held by whoever reads or changes what it holds,
 * from mfs_memo_get to mfs_memo_put. */
#ifndef MESHFS_CACHE_MEMO_H
#define MESHFS_CACHE_MEMO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "meshfs/formats.h"
#include "meshfs/views.h"

typedef struct sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    uid_t uid;
    gid_t gid;
    mode_t mode;
    int gone;                 /* an absent input's path, or a searched
                                 folder, that the stat did not find */
} sig;

typedef struct fmt_memo {
    int known;
    int ok;
    int embedded;             /* inside the model entry (model.mk) */
    uint64_t size;
    mfs_cache_key key;
    char *reason;             /* failures only: most views have none, and a
                                 fixed buffer per view would cost 3.5 KiB a model */
} fmt_memo;

typedef struct model {
    char *path;               /* relative to the root */
    pthread_mutex_t lock;
    struct model *next;
    /* the memo's bound (below): under mfs_views.lock */
    unsigned refs;            /* callers between get_model and put_model */
    struct model *newer, *older; /* the LRU list */
    /* memo, valid while every input's sig is unchanged */
    int valid;
    char *fmi_model;          /* the fmi model= path the memo was made for */
    mfs_cache_key mk;         /* the model entry the memo was made from */
    uint32_t ninputs;
    char **input_paths;
    sig *input_sigs;
    uint8_t *input_kinds;     /* mfs_dep_kind: what is stat'ed for each
                                 (a searched folder's path is its own) */
    /* folders whose one stat stands for several inputs: a searched
     * folder, and the folder an absent input's name is missing from
     * (mfs_input_witness); inputs checked so have by_wit set */
    uint8_t *by_wit;
    int wit_pending;          /* a folder had not settled: try again later */
    uint32_t nwits;
    char **wit_paths;
    sig *wit_sigs;
    struct timespec newest;
    mfs_view_perm perm;       /* the host's answer, with the folders it watches */
    sig *dir_sigs;
    fmt_memo fmt[MFS_FMT_COUNT];
    /* key of each view at its last open, kept across memo refreshes: the
     * kernel may keep its page cache only while the bytes are the same */
    int served[MFS_FMT_COUNT];
    mfs_cache_key served_key[MFS_FMT_COUNT];
    /* converted for a request not yet served: its open is that miss, not a
     * hit (statistics: a stat converts, the open that follows reads it) */
    int fresh[MFS_FMT_COUNT];
    size_t bytes;             /* what the record holds on the heap, as
                                 charged to mfs_views.bytes (charge()) */
} model;

#define NBUCKET 8192

/* The memo's bound (docs/scale.md).  At most memo_size model records are
 * kept, least recently used out first.  A record is only a shortcut: the
 * stat index and the cache entries are the truth, so a model whose record
 * went costs a re-stat and a peek of its manifest and entries on its next
 * query, never another answer.  A record in use (refs: a caller between
 * get_model and put_model, which covers whoever holds or waits for its
 * lock, so a conversion's single flight) is never evicted; the table may
 * then hold more than the cap until those calls end.  What eviction
 * forgets beyond the memo is served_key, so the next open of such a view
 * says same_as_last = 0: the conservative answer; and fresh, so an open
 * long after its conversion may count as a hit (statistics only). */
struct mfs_views {
    mfs_views_host h;
    pthread_mutex_t lock;     /* the table and the LRU list; a leaf */
    model *bucket[NBUCKET];
    model *newest, *oldest;   /* LRU list, most recently used first */
    size_t cap, count;
    /* and a budget in bytes (MFS_VIEWS_RECORD_BYTES a record of the cap):
     * a record's size follows its paths and inputs, so a count alone
     * bounds nothing for models of many long-named inputs */
    size_t byte_cap;
    atomic_size_t bytes;      /* every record's charge; changed under the
                                 record's lock, read under v->lock */
    uint64_t evictions;
};

/* ---- the table (memo_table.c) ---- */

/* The model's record, held (refs) until mfs_memo_put; made if there is
 * none and create says so (else NULL). */
model *mfs_memo_find(mfs_views *v, const char *path, int create);
/* mfs_memo_find(v, path, 1) */
model *mfs_memo_get(mfs_views *v, const char *path);
void mfs_memo_put(mfs_views *v, model *m);
/* The table bucket of a model's path. */
unsigned mfs_memo_bucket(const char *path);
/* Brings the record's charge to what it holds now (under its lock). */
void mfs_memo_charge(const mfs_views *v, model *m);
/* Forgets what the record holds (not its path, lock or served keys). */
void mfs_memo_clear(model *m);

/* ---- what a record holds (memo_check.c) ---- */

/* The stat of path as the host takes it: 0, or -1 with err's code. */
int mfs_memo_take_sig(const mfs_views *v, const char *path, mfs_view_path kind, sig *s,
                      mfs_err *err);
int mfs_memo_same_sig(const sig *a, const sig *b);
/* Whether every input (or the folder standing for it) and every folder of
 * who-may-read still has the stat the record holds; given (NULL: none):
 * stats the host has just taken.  listing: the check is a listing's (a
 * view's size), which leaves the absent names' folders to be looked for
 * by the next resolve (memo_check.c, memo_settle).  Under the record's
 * lock. */
int mfs_memo_current(const mfs_views *v, model *m, const char *fmi_model,
                     const mfs_view_given *given, int listing);
/* Fills the record from manifest man (read from model entry mk): inputs'
 * stats, who may read, each enabled format's entry.  trust (a listing's
 * fill): a view whose length man records is taken as there, and the
 * absent inputs' folders are looked for at the first check.  0, or -1 with err's code ENOMEM,
 * or EAGAIN (an input changed meanwhile: resolve again). */
int mfs_memo_fill(const mfs_views *v, model *m, const mfs_cache_manifest *man,
                  const mfs_cache_key *mk, const char *fmi_model, int trust, mfs_err *err);
/* The enabled formats the record has no entry for. */
unsigned mfs_memo_missing_formats(const mfs_views *v, const model *m);
/* Whether a format in need ended as a model's failure. */
int mfs_memo_made_failure(const mfs_views *v, const model *m, unsigned need);
/* The view with key k if man's model entry embeds it, or (trust) records
 * its length. */
const mfs_cache_view *mfs_memo_recorded_view(const mfs_cache_manifest *man,
                                             const mfs_cache_key *k, int trust);

#endif

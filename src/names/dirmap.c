/* Which names in a folder are views, and of which model.
 *
 * A lookup of "car.fmd" must find car.fbx without scanning the folder each
 * time, so each folder has a table: its entries and its models with their
 * view bases, both sorted, rebuilt when the folder's mtime or ctime moves
 * (entries added, removed or renamed).  A view name is parsed, not stored:
 * "car.fmd" is base "car" and format fmd, and the base is looked up among
 * the models, so a table costs per model, not per view.  Naming follows
 * include/meshfs/rules.h, the same rule meshfs-convert uses; the table is
 * also where -o lowercase_names finds a shown name's real entry
 * (casemap.c), and where the rule's notes are logged, once per change.
 *
 * A table is immutable once built and counted: a listing holds the one it
 * started with to its end (listing.c), and a rebuild makes a new one.
 *
 * Bounded (docs/scale.md): the tables in the map together weigh at most
 * 8 x memo_size (entries plus models) besides the two most recently used;
 * past it the least recently used folders' tables go.  So a folder larger
 * than the cap is still served whole, and lookups alternating between it
 * and another folder (a game loading a model and then its textures) do not
 * rebuild it (a readdir of all its entries) each time.  A table is only a
 * shortcut over the folder itself: one that went is rebuilt from a readdir
 * when next asked for. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "names.h"
#include "meshfs/import.h"
#include "meshfs/rules.h"
#include "meshfs/spawner.h"
#include "meshfs/util.h"
#include "meshfs/views.h"
#include "meshfs/settings.h"

/* A folder's table: its entries (sorted by name) and its models with views
 * (sorted by base), built from one read of the folder and never changed
 * after, so a listing holds it by reference for as long as it lasts instead
 * of copying it: a 20,000-model folder is 20,000 entries and 20,000 models
 * (~75 B each), where a table of every view name and a listing's copy of it
 * were ~1.3 KiB a model (docs/scale.md). */
typedef struct tentry {
    const char *name;    /* real name */
    const char *shown;   /* the name shown (lowercase_names), NULL if none */
    ino_t ino;
    unsigned char type;  /* DT_* */
    unsigned char model; /* a regular file of a model's type */
    unsigned char hide;  /* hidden by hide_sources: a model, or a settings
                            file (which has no views of its own) */
    uint32_t mi;         /* 1 + its index among the models, 0 if none */
} tentry;

typedef struct cname {
    const char *shown;   /* "crate.obj" */
    const char *real;    /* "Crate.OBJ"; NULL: entries of different owners
                            have that name, and it reaches none of them */
} cname;

typedef struct arena {
    struct arena *next;
    size_t used, cap;
    char data[];
} arena;

struct mfs_dirtab {
    atomic_uint refs;
    struct timespec mtime, ctime; /* the folder's, before it was read */
    dev_t dev;
    ino_t ino;
    uint64_t dir_seed;   /* XXH3 of its path: views' inode numbers */
    int racy;            /* changed too recently for its times to tell a
                            later change: listings read the folder again */
    tentry *e;
    size_t n;
    mfs_dir_model *models;
    size_t nmodels;
    cname *c;            /* lowercase_names: shown entries by shown name,
                            and the names hidden for a collision of owners */
    size_t nc;
    const char *hidden;  /* lowercase_names: why entries are not shown, a
                            line each (the folder's user.meshfs.error), or
                            NULL */
    int nf;              /* formats shown, and in name order: */
    int order[MFS_FMT_COUNT];
    int pkg;             /* the folder's package is listed */
    arena *strings;
};

typedef struct dirmap {
    char *path;
    mfs_dirtab *tab;     /* NULL until the first is built */
    int building;        /* a thread reads the folder: others wait for it */
    struct dirmap *next; /* hash chain */
    uint64_t used;       /* LRU stamp */
} dirmap;

#define NBUCKET 4096

struct mfs_dirmaps {
    pthread_mutex_t lock;
    pthread_cond_t built;  /* a slot's building ended */
    dirmap *bucket[NBUCKET];
    uint64_t clock;
    size_t tables, names;  /* held now */
    uint64_t evictions;    /* tables dropped for the cap */
};

mfs_dirmaps *mfs_dirmaps_new(void)
{
    mfs_dirmaps *d = calloc(1, sizeof *d);
    if (d) {
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->built, NULL);
    }
    return d;
}

/* Strings of a table: a few blocks, not one allocation each (a
 * 20,000-model folder's 40,000 names were a tenth of its first listing as
 * single mallocs, each with 16 B of overhead).  Each block twice the last,
 * from 512 B up to 64 KiB: a first block of 64 KiB made a tree of 2,000
 * folders of four models cost 75 KiB a folder, most of it never written. */
#define ARENA_FIRST 512
#define ARENA_BYTES (64 * 1024)
static char *arena_dup(arena **a, const char *s, size_t len)
{
    if (!*a || (*a)->cap - (*a)->used < len + 1) {
        size_t want = *a ? (*a)->cap * 2 : ARENA_FIRST;
        if (want > ARENA_BYTES)
            want = ARENA_BYTES;
        size_t cap = len + 1 > want ? len + 1 : want;
        arena *n = malloc(sizeof *n + cap);
        if (!n)
            return NULL;
        *n = (arena){*a, 0, cap};
        *a = n;
    }
    char *p = (*a)->data + (*a)->used;
    memcpy(p, s, len);
    p[len] = '\0';
    (*a)->used += len + 1;
    return p;
}

static void tab_free(mfs_dirtab *t)
{
    while (t->strings) {
        arena *a = t->strings;
        t->strings = a->next;
        free(a);
    }
    free(t->e);
    free(t->models);
    free(t->c);
    free(t);
}

void mfs_dirtab_put(mfs_dirtab *t)
{
    if (t && atomic_fetch_sub(&t->refs, 1) == 1)
        tab_free(t);
}

static mfs_dirtab *tab_ref(mfs_dirtab *t)
{
    atomic_fetch_add(&t->refs, 1);
    return t;
}

static size_t names_of(const mfs_dirtab *t)
{
    return t ? t->n + t->nmodels + t->nc : 0;
}

static void map_free(dirmap *m)
{
    mfs_dirtab_put(m->tab);
    free(m->path);
    free(m);
}

void mfs_dirmaps_free(mfs_dirmaps *d)
{
    if (!d)
        return;
    for (int b = 0; b < NBUCKET; b++)
        while (d->bucket[b]) {
            dirmap *m = d->bucket[b];
            d->bucket[b] = m->next;
            map_free(m);
        }
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->built);
    free(d);
}

/* mfs_inode_where (inode.c) with the folder's hash taken once a table. */
static uint64_t where_in(uint64_t dir_seed, const char *base, size_t bl)
{
    return XXH3_64bits_withSeed(base, bl, dir_seed);
}

/* ---- reading a folder ---- */

static int cmp_tentry(const void *a, const void *b)
{
    return strcmp(((const tentry *)a)->name, ((const tentry *)b)->name);
}

/* Byte order of names, as strcmp's, at a sort's pace: a name's first 8
 * bytes as one big-endian number (0-padded) decide most pairs without
 * reading the names, which come in the file system's hash order, so that
 * nearly every read of one misses the cache.  A 20,000-model folder's
 * sort took a quarter of its table's build with strcmp alone. */
typedef struct sortkey {
    uint64_t k;
    const char *name;
    size_t i;
} sortkey;

static uint64_t name_key(const char *s)
{
    uint64_t k = 0;
    int i = 0;
    for (; i < 8 && s[i]; i++)
        k = k << 8 | (unsigned char)s[i];
    return i ? k << (8 * (8 - i)) : 0; /* no shift by 64 */
}

static int cmp_sortkey(const void *a, const void *b)
{
    const sortkey *x = a, *y = b;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* t's entries in byte order of their names.  0, or -1 with err. */
static int sort_entries(mfs_dirtab *t, mfs_err *err)
{
    sortkey *k = malloc((t->n ? t->n : 1) * sizeof *k);
    tentry *sorted = malloc((t->n ? t->n : 1) * sizeof *sorted);
    if (!k || !sorted) {
        free(k);
        free(sorted);
        return mfs_err_sys(err, ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < t->n; i++)
        k[i] = (sortkey){name_key(t->e[i].name), t->e[i].name, i};
    qsort(k, t->n, sizeof *k, cmp_sortkey);
    for (size_t i = 0; i < t->n; i++)
        sorted[i] = t->e[k[i].i];
    free(k);
    free(t->e);
    t->e = sorted;
    return 0;
}

/* t's entries, sorted, with types resolved.  0, or -1 with err. */
static int read_entries(mfs_names_state *ns, const char *dir, mfs_dirtab *t, mfs_err *err)
{
    int fd = mfs_beneath_open(ns, dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return mfs_err_sys(err, errno, "%s", strerror(errno));
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return mfs_err_sys(err, e, "%s", strerror(e));
    }
    size_t cap = 32;
    t->e = malloc(cap * sizeof *t->e);
    int rc = t->e ? 0 : -ENOMEM;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (t->n == UINT32_MAX) { /* models are counted in 32 bits */
            rc = -EFBIG;
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (t->n == cap) {
            tentry *ne = realloc(t->e, 2 * cap * sizeof *ne);
            if (!ne) {
                rc = -ENOMEM;
                break;
            }
            t->e = ne;
            cap *= 2;
        }
        tentry *e = &t->e[t->n];
        memset(e, 0, sizeof *e);
        e->name = arena_dup(&t->strings, de->d_name, strlen(de->d_name));
        if (!e->name) {
            rc = -ENOMEM;
            break;
        }
        e->type = de->d_type;
        e->ino = de->d_ino;
        if (e->type == DT_UNKNOWN) {
            /* one name in the folder just opened beneath SRC, not followed:
             * nothing on the way to resolve */
            struct stat st;
            if (fstatat(dirfd(d), e->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                e->type = IFTODT(st.st_mode);
        }
        e->model = e->type == DT_REG && mfs_spawner_is_model(ns->spawner, e->name);
        e->hide = e->model || (e->type == DT_REG && mfs_settings_is_file(e->name));
        t->n++;
    }
    closedir(d);
    if (rc < 0)
        return mfs_err_sys(err, -rc, "%s", strerror(-rc));
    return sort_entries(t, err);
}

static unsigned naming_flags(const mfs_names_state *ns)
{
    return ns->lowercase_names ? MFS_NAMES_LOWERCASE : 0;
}

static int cmp_cname(const void *a, const void *b)
{
    return strcmp(((const cname *)a)->shown, ((const cname *)b)->shown);
}

static int cmp_format_name(const void *a, const void *b)
{
    return strcmp(mfs_format_get((mfs_format) * (const int *)a)->name,
                  mfs_format_get((mfs_format) * (const int *)b)->name);
}

/* The formats shown, in byte order of their names: a model's views are
 * listed in that order. */
static void format_order(const mfs_names_state *ns, mfs_dirtab *t)
{
    t->nf = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if (ns->shown & (1u << f))
            t->order[t->nf++] = f;
    qsort(t->order, (size_t)t->nf, sizeof *t->order, cmp_format_name);
}

/* The naming rule over t's entries (include/meshfs/rules.h): its models
 * and, with lowercase_names, the shown names.  Logs what the rule had to
 * decide when log is set (once per change of the folder). */
static int plan_models(mfs_names_state *ns, const char *dir, mfs_dirtab *t, int log, mfs_err *err)
{
    mfs_name_entry *ne = malloc((t->n ? t->n : 1) * sizeof *ne);
    if (!ne)
        return mfs_err_sys(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < t->n; i++)
        ne[i] = (mfs_name_entry){t->e[i].name, t->e[i].model};
    mfs_names p;
    mfs_casenotes_owners oc = {ns, dir, ne};
    int rc = mfs_names_plan(ne, t->n, naming_flags(ns), mfs_casenotes_owner, &oc, &p) < 0 ? -ENOMEM : 0;
    free(ne);
    if (rc < 0)
        return mfs_err_sys(err, ENOMEM, "out of memory");
    for (size_t i = 0; log && i < p.nnotes; i++)
        if (i == 0 || strcmp(p.notes[i].text, p.notes[i - 1].text)) /* OWNERS: once */
            mfs_errtext_log(ns, "%s: %s", dir[0] ? dir : ".", p.notes[i].text);
    t->models = calloc(p.nmodels + 1, sizeof *t->models);
    t->c = ns->lowercase_names ? calloc(t->n + p.nhidden + 1, sizeof *t->c) : NULL;
    rc = t->models && (t->c || !ns->lowercase_names) ? 0 : -ENOMEM;
    for (size_t i = 0; i < p.nmodels && rc == 0; i++) {
        const mfs_name_model *pm = &p.models[i];
        mfs_dir_model *dm = &t->models[t->nmodels++];
        dm->entry = pm->entry;
        dm->model = t->e[pm->entry].name;
        dm->ino = t->e[pm->entry].ino;
        t->e[pm->entry].mi = (uint32_t)t->nmodels;
        dm->base = arena_dup(&t->strings, pm->base, strlen(pm->base));
        if (!dm->base)
            rc = -ENOMEM;
    }
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        const char *shown = t->e[i].name;
        if (ns->lowercase_names) {
            shown = p.shown[i];
            if (shown && strcmp(shown, t->e[i].name) &&
                !(shown = arena_dup(&t->strings, shown, strlen(shown))))
                rc = -ENOMEM;
            else if (shown && !strcmp(shown, t->e[i].name))
                shown = t->e[i].name;
        }
        t->e[i].shown = shown;
        if (t->c && shown)
            t->c[t->nc++] = (cname){shown, t->e[i].name};
        /* a real file of the package's name wins */
        if (shown && !strcmp(shown, MFS_LGEPKG_FILE_NAME))
            t->pkg = -1;
    }
    for (size_t i = 0; i < p.nhidden && rc == 0 && t->c; i++) {
        const char *h = arena_dup(&t->strings, p.hidden[i], strlen(p.hidden[i]));
        if (!h)
            rc = -ENOMEM;
        else
            t->c[t->nc++] = (cname){h, NULL};
        /* real files of the package's name, hidden: it is no package */
        if (h && !strcmp(h, MFS_LGEPKG_FILE_NAME))
            t->pkg = -1;
    }
    char *why = rc == 0 ? mfs_casenotes_text(&p) : NULL;
    if (why && !(t->hidden = arena_dup(&t->strings, why, strlen(why))))
        rc = -ENOMEM;
    else if (rc == 0 && !why && errno == ENOMEM)
        rc = -ENOMEM;
    free(why);
    mfs_names_free(&p);
    if (rc == 0 && t->c)
        qsort(t->c, t->nc, sizeof *t->c, cmp_cname);
    t->pkg = t->pkg == 0 && t->nmodels && (ns->formats & MFS_FMT_LGEPKG_BIT);
    return rc < 0 ? mfs_err_sys(err, -rc, "%s", strerror(-rc)) : 0;
}

/* A fresh table of folder dir, whose stat (taken before reading it) is st. */
static int build_tab(mfs_names_state *ns, const char *dir, const struct stat *st, int log,
                     mfs_dirtab **out, mfs_err *err)
{
    mfs_dirtab *t = calloc(1, sizeof *t);
    if (!t)
        return mfs_err_sys(err, ENOMEM, "out of memory");
    atomic_init(&t->refs, 1);
    t->mtime = st->st_mtim;
    t->ctime = st->st_ctim;
    t->dev = st->st_dev;
    t->ino = st->st_ino;
    t->dir_seed = XXH3_64bits(dir, strlen(dir));
    t->racy = !mfs_input_times_settled(st);
    format_order(ns, t);
    int rc = read_entries(ns, dir, t, err);
    if (rc == 0)
        rc = plan_models(ns, dir, t, log, err);
    if (rc < 0) {
        tab_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

/* Drops least recently used tables other than keep (the one just asked
 * for) and the one used before it, until the others hold at most
 * 8 x memo_size names (entries and models).  A scan of the buckets per
 * eviction: tables are few (folders), and this runs only past the cap.
 * A listing holding a dropped table keeps it until it ends.  Called
 * locked. */
static void evict_tables(mfs_names_state *ns, const dirmap *keep)
{
    mfs_dirmaps *d = ns->dirs;
    size_t cap = 8 * (ns->memo_size ? ns->memo_size : MFS_VIEWS_MEMO_DEFAULT);
    while (d->names > cap) {
        const dirmap *prev = NULL;
        for (int b = 0; b < NBUCKET; b++)
            for (dirmap *m = d->bucket[b]; m; m = m->next)
                if (m != keep && (!prev || m->used > prev->used))
                    prev = m;
        size_t held = (keep ? names_of(keep->tab) : 0) + (prev ? names_of(prev->tab) : 0);
        if (d->names - held <= cap)
            return;
        dirmap **victim = NULL;
        for (int b = 0; b < NBUCKET; b++)
            for (dirmap **pp = &d->bucket[b]; *pp; pp = &(*pp)->next)
                if (*pp != keep && *pp != prev && !(*pp)->building &&
                    (!victim || (*pp)->used < (*victim)->used))
                    victim = pp;
        if (!victim)
            return;
        dirmap *m = *victim;
        *victim = m->next;
        d->names -= names_of(m->tab);
        d->tables--;
        d->evictions++;
        map_free(m);
    }
}

void mfs_dirmaps_stats(mfs_dirmaps *d, uint64_t *tables, uint64_t *names, uint64_t *evictions)
{
    pthread_mutex_lock(&d->lock);
    *tables = d->tables;
    *names = d->names;
    *evictions = d->evictions;
    pthread_mutex_unlock(&d->lock);
}

static unsigned bucket_of(const char *dir)
{
    return (unsigned)(XXH3_64bits(dir, strlen(dir)) % NBUCKET);
}

/* The folder's table, rebuilt if the folder's mtime or ctime moved since
 * it was made (or, for fresh, if it was made too close to its last change
 * to tell), with a reference for the caller.  The folder is read outside
 * the lock: a first listing of a huge folder does not hold up lookups in
 * others.  0, or -1 with err. */
static dirmap *find_slot(mfs_dirmaps *d, unsigned b, const char *dir)
{
    dirmap *m = d->bucket[b];
    while (m && strcmp(m->path, dir))
        m = m->next;
    return m;
}

static void drop_slot(mfs_dirmaps *d, unsigned b, dirmap *m)
{
    for (dirmap **pp = &d->bucket[b]; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    d->names -= names_of(m->tab);
    d->tables--;
    map_free(m);
}

int mfs_dirtab_get(mfs_names_state *ns, const char *dir, int fresh, mfs_dirtab **out, mfs_err *err)
{
    struct stat st;
    return mfs_dirtab_get_st(ns, dir, fresh, out, &st, err);
}

/* The folder's name in a reason: "." for SRC itself. */
static const char *shown_dir(const char *dir)
{
    return dir[0] ? dir : ".";
}

int mfs_dirtab_get_st(mfs_names_state *ns, const char *dir, int fresh, mfs_dirtab **out,
                      struct stat *dir_st, mfs_err *err)
{
    mfs_dirmaps *d = ns->dirs;
    unsigned b = bucket_of(dir);
    int waited = 0, restats = 0;
    for (;;) {
        struct stat st;
        if (mfs_beneath_stat(ns, dir, &st) < 0)
            return mfs_err_sys(err, errno, "%s: %s", shown_dir(dir), strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return mfs_err_sys(err, ENOTDIR, "%s: %s", shown_dir(dir), strerror(ENOTDIR));
        *dir_st = st;
        pthread_mutex_lock(&d->lock);
        dirmap *m = find_slot(d, b, dir);
        int changed = 1;
        if (m && m->tab) {
            changed = !mfs_ts_equal(m->tab->mtime, st.st_mtim) ||
                      !mfs_ts_equal(m->tab->ctime, st.st_ctim);
            /* racy matters only to a listing, and not to one that waited
             * for this very table: it was read after the listing began */
            if (!changed && !(fresh && m->tab->racy && !waited)) {
                m->used = ++d->clock;
                *out = tab_ref(m->tab);
                pthread_mutex_unlock(&d->lock);
                return 0;
            }
            if (mfs_ts_later(m->tab->ctime, st.st_ctim) && restats++ < 3) {
                /* a newer table went in since this stat: stat again (a
                 * few times: a clock set back would keep it newer) */
                pthread_mutex_unlock(&d->lock);
                continue;
            }
        }
        if (m && m->building) { /* one read of a folder at a time */
            while ((m = find_slot(d, b, dir)) && m->building)
                pthread_cond_wait(&d->built, &d->lock);
            pthread_mutex_unlock(&d->lock);
            waited = 1;
            continue; /* its stat again: the table just built may be current */
        }
        if (!m) {
            m = calloc(1, sizeof *m);
            if (!m || !(m->path = strdup(dir))) {
                free(m);
                pthread_mutex_unlock(&d->lock);
                return mfs_err_sys(err, ENOMEM, "%s: out of memory", shown_dir(dir));
            }
            m->next = d->bucket[b];
            d->bucket[b] = m;
            d->tables++;
        }
        m->building = 1;
        pthread_mutex_unlock(&d->lock);
        mfs_dirtab *t = NULL;
        int rc = build_tab(ns, dir, &st, changed, &t, err);
        pthread_mutex_lock(&d->lock);
        m->building = 0;
        if (rc == 0) {
            d->names -= names_of(m->tab);
            mfs_dirtab_put(m->tab);
            m->tab = tab_ref(t);
            d->names += names_of(t);
            m->used = ++d->clock;
            evict_tables(ns, m);
        } else if (!m->tab) {
            drop_slot(d, b, m);
        }
        pthread_cond_broadcast(&d->built);
        pthread_mutex_unlock(&d->lock);
        if (rc == 0)
            *out = t;
        else
            mfs_err_prefix(err, "%s", shown_dir(dir));
        return rc;
    }
}

/* The model whose views have base `base`: bsearch of the models. */
static const mfs_dir_model *find_base(const mfs_dirtab *t, const char *base, size_t len)
{
    size_t lo = 0, hi = t->nmodels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *b = t->models[mid].base;
        int c = strncmp(b, base, len);
        if (c == 0)
            c = b[len] ? 1 : 0;
        if (c == 0)
            return &t->models[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int mfs_dirmap_lookup(mfs_names_state *ns, const char *dir, const char *name, mfs_view_ref *ref,
                      mfs_err *err)
{
    mfs_dirtab *t;
    int rc = mfs_dirtab_get_st(ns, dir, 0, &t, &ref->dir_st, err);
    if (rc < 0)
        return rc;
    size_t nl = strlen(name);
    for (int k = 0; k < t->nf && rc == 0; k++) {
        int f = t->order[k];
        const char *ext = mfs_format_get((mfs_format)f)->name;
        size_t el = strlen(ext);
        if (nl < el + 2 || name[nl - el - 1] != '.' || memcmp(name + nl - el, ext, el))
            continue;
        const mfs_dir_model *dm = find_base(t, name, nl - el - 1);
        if (!dm)
            continue;
        ref->format = f;
        rc = mfs_dir_model_copy(dm, &ref->model, &ref->base, err);
    }
    mfs_dirtab_put(t);
    return rc;
}

size_t mfs_dirtab_entries(const mfs_dirtab *t)
{
    return t->n;
}

size_t mfs_dirtab_count(const mfs_dirtab *t)
{
    return t->n + t->nmodels * (size_t)t->nf + (t->pkg ? 1 : 0);
}

int mfs_dirtab_item(const mfs_names_state *ns, const mfs_dirtab *t, size_t i, char *buf, size_t bufsz,
                    mfs_dir_item *out)
{
    memset(out, 0, sizeof *out);
    if (i < t->n) {
        const tentry *e = &t->e[i];
        if (!e->shown || (ns->hide_sources && e->hide))
            return 0;
        out->name = e->shown;
        out->real = e->name;
        out->ino = mfs_inode_src(ns, t->dev, e->ino);
        out->mode = DTTOIF(e->type);
        return 1;
    }
    i -= t->n;
    if (i < t->nmodels * (size_t)t->nf) {
        const mfs_dir_model *dm = &t->models[i / (size_t)t->nf];
        int f = t->order[i % (size_t)t->nf];
        /* not snprintf: a 20,000-model folder's listing makes 160,000 */
        const char *ext = mfs_format_get((mfs_format)f)->name;
        size_t bl = strlen(dm->base), el = strlen(ext);
        if (bl + el + 2 > bufsz)
            return 0;
        memcpy(buf, dm->base, bl);
        buf[bl] = '.';
        memcpy(buf + bl + 1, ext, el + 1);
        out->name = buf;
        out->ino = mfs_inode_view(t->dev, dm->ino, where_in(t->dir_seed, dm->base, bl), f);
        out->mode = S_IFREG;
        out->is_view = 1;
        out->model = i / (size_t)t->nf;
        out->view = (mfs_view_ref){.model = (char *)dm->model, .base = (char *)dm->base, .format = f};
        return 1;
    }
    if (i == t->nmodels * (size_t)t->nf && t->pkg) {
        out->name = MFS_LGEPKG_FILE_NAME;
        out->ino = mfs_inode_view(t->dev, t->ino, 0, MFS_FS_LGEPKG);
        out->mode = S_IFREG;
        out->is_view = 1;
        out->model = (size_t)-1;
        out->view = (mfs_view_ref){.model = "", .base = MFS_LGEPKG_DEFAULT_NAME, .format = MFS_FS_LGEPKG};
        return 1;
    }
    return 0;
}

const mfs_dir_model *mfs_dirtab_models(const mfs_dirtab *t, size_t *n)
{
    *n = t->nmodels;
    return t->models;
}

int mfs_dir_model_copy(const mfs_dir_model *dm, char **model, char **base, mfs_err *err)
{
    *model = strdup(dm->model);
    *base = strdup(dm->base);
    if (*model && *base)
        return 1;
    free(*model);
    free(*base);
    *model = *base = NULL;
    return mfs_err_sys(err, ENOMEM, "out of memory");
}

ssize_t mfs_dirtab_entry(const mfs_dirtab *t, const char *name)
{
    tentry key = {.name = name};
    const tentry *e = bsearch(&key, t->e, t->n, sizeof *t->e, cmp_tentry);
    return e ? e - t->e : -1;
}

const mfs_dir_model *mfs_dirtab_model(const mfs_dirtab *t, const char *model)
{
    ssize_t i = mfs_dirtab_entry(t, model);
    return i >= 0 && t->e[i].mi ? &t->models[t->e[i].mi - 1] : NULL;
}

int mfs_dirmap_real_name(mfs_names_state *ns, const char *dir, const char *shown, char *out, size_t n,
                         mfs_err *err)
{
    mfs_dirtab *t;
    int rc = mfs_dirtab_get(ns, dir, 0, &t, err);
    if (rc < 0)
        return rc;
    if (t->c) {
        cname key = {shown, NULL};
        cname *hit = bsearch(&key, t->c, t->nc, sizeof *t->c, cmp_cname);
        if (hit && !hit->real) /* owners collide: it is none of theirs */
            rc = mfs_err_sys(err, ENOENT, "%s: entries of different owners are named so",
                             shown);
        else if (hit)
            rc = snprintf(out, n, "%s", hit->real) < (int)n
                     ? 1
                     : mfs_err_sys(err, ENAMETOOLONG, "%s: %s", shown, strerror(ENAMETOOLONG));
    }
    mfs_dirtab_put(t);
    return rc;
}

int mfs_dirmap_hidden(mfs_names_state *ns, const char *dir, char *out, size_t n, mfs_err *err)
{
    if (!ns->lowercase_names)
        return mfs_err_sys(err, ENODATA, "every entry is shown");
    mfs_dirtab *t;
    int rc = mfs_dirtab_get(ns, dir, 0, &t, err);
    if (rc < 0)
        return rc;
    size_t len = t->hidden ? strlen(t->hidden) : 0;
    if (!t->hidden)
        rc = mfs_err_sys(err, ENODATA, "every entry is shown");
    else if (n && len > n)
        rc = mfs_err_sys(err, ERANGE, "%zu bytes do not fit in %zu", len, n);
    else if (n)
        memcpy(out, t->hidden, len);
    if (t->hidden && rc == 0)
        rc = (int)len;
    mfs_dirtab_put(t);
    return rc;
}

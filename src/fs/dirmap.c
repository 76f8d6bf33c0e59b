/* Which names in a folder are views, and of which model.
 *
 * A lookup of "car.fmd" must find car.fbx without scanning the folder each
 * time, so each folder's view names are kept in a sorted table, rebuilt when
 * the folder's mtime or ctime moves (entries added, removed or renamed).
 * Naming follows include/meshfs/naming.h, the same rule meshfs-convert uses;
 * the table is also where -o lowercase_names finds a shown name's real
 * entry (casemap.c), and where the rule's notes are logged, once per
 * rebuild.
 *
 * Bounded (docs/scale.md): the tables together hold at most
 * 8 x memo_size names (views plus lowercase_names' shown names) besides
 * the two most recently used; past it the least recently used folders'
 * tables go.  So a folder larger than the cap is still served whole, and
 * lookups alternating between it and another folder (a game loading a
 * model and then its textures) do not rebuild it (a readdir of all its
 * entries) each time.  A table is only a shortcut over the folder
 * itself: one that went is rebuilt from a readdir when next asked for.
 * Every caller copies what it needs out under the lock, so nothing outside
 * holds a table. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fs.h"
#include "lgepkg.h"
#include "meshfs/naming.h"

typedef struct vname {
    char *name;   /* "car.fmd" */
    char *model;  /* "car.fbx": the table's models[] copy, shared by its views */
    int format;
    ino_t ino;    /* the model file's, as the folder said when the table was made */
} vname;

typedef struct cname {
    char *shown;  /* "crate.obj" */
    char *real;   /* "Crate.OBJ" */
} cname;

typedef struct dirmap {
    char *path;
    struct timespec mtime, ctime;
    vname *v;
    size_t n;
    cname *c;     /* lowercase_names: shown entries by shown name */
    size_t nc;
    mfs_dir_model *models; /* by view base */
    size_t nmodels;
    char *names;  /* every view name, one block (v[i].name points into it) */
    struct dirmap *next; /* hash chain */
    uint64_t used;       /* LRU stamp */
} dirmap;

#define NBUCKET 4096

struct mfs_dirmaps {
    pthread_mutex_t lock;
    dirmap *bucket[NBUCKET];
    uint64_t clock;
    size_t tables, names;  /* held now */
    uint64_t evictions;    /* tables dropped for the cap */
};

mfs_dirmaps *mfs_dirmaps_new(void)
{
    mfs_dirmaps *d = calloc(1, sizeof *d);
    if (d)
        pthread_mutex_init(&d->lock, NULL);
    return d;
}

static void map_clear(dirmap *m)
{
    free(m->names);
    m->names = NULL;
    free(m->v);
    for (size_t i = 0; i < m->nc; i++) {
        free(m->c[i].shown);
        free(m->c[i].real);
    }
    free(m->c);
    mfs_dir_models_free(m->models, m->nmodels);
    m->v = NULL;
    m->c = NULL;
    m->models = NULL;
    m->n = m->nc = m->nmodels = 0;
}

static void map_free(dirmap *m)
{
    map_clear(m);
    free(m->path);
    free(m);
}

void mfs_dir_models_free(mfs_dir_model *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].model);
        free(v[i].base);
    }
    free(v);
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
    free(d);
}

uint64_t mfs_view_ino(dev_t dev, ino_t ino, int format)
{
    uint64_t k[3] = {(uint64_t)dev, (uint64_t)ino, (uint64_t)format};
    return XXH3_64bits(k, sizeof k) | (1ull << 63);
}

/* ---- reading a folder ---- */

typedef struct entry {
    char *name;
    unsigned char type; /* DT_* */
    ino_t ino;
} entry;

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static void free_entries(entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].name);
    free(e);
}

static int open_dir(mfs_fs *fs, const char *dir)
{
    return mfs_beneath_open(fs, dir, O_RDONLY | O_DIRECTORY);
}

/* Sorted entries of a folder, with types resolved. */
static int read_entries(mfs_fs *fs, const char *dir, entry **out, size_t *n)
{
    int fd = open_dir(fs, dir);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return -e;
    }
    size_t cap = 32;
    entry *v = malloc(cap * sizeof *v);
    *n = 0;
    struct dirent *de;
    int rc = 0;
    while (v && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (*n == cap) {
            entry *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
            cap *= 2;
        }
        entry *e = &v[*n];
        e->name = strdup(de->d_name);
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
        (*n)++;
    }
    closedir(d);
    if (!v)
        return -ENOMEM;
    if (rc < 0) {
        free_entries(v, *n);
        return rc;
    }
    qsort(v, *n, sizeof *v, cmp_entry);
    *out = v;
    return 0;
}

static int is_model_entry(const mfs_fs *fs, const entry *e)
{
    return e->type == DT_REG && mfs_spawner_is_model(fs->spawner, e->name);
}

static int cmp_vname(const void *a, const void *b)
{
    return strcmp(((const vname *)a)->name, ((const vname *)b)->name);
}

static unsigned naming_flags(const mfs_fs *fs)
{
    return fs->cfg.lowercase_names ? MFS_NAMES_LOWERCASE : 0;
}

/* The naming rule over a folder's entries (include/meshfs/naming.h). */
static int plan_names(mfs_fs *fs, const entry *e, size_t n, mfs_names *p)
{
    mfs_name_entry *ne = malloc((n ? n : 1) * sizeof *ne);
    if (!ne)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        ne[i] = (mfs_name_entry){e[i].name, is_model_entry(fs, &e[i])};
    int rc = mfs_names_plan(ne, n, naming_flags(fs), p);
    free(ne);
    return rc < 0 ? -ENOMEM : 0;
}

static int cmp_cname(const void *a, const void *b)
{
    return strcmp(((const cname *)a)->shown, ((const cname *)b)->shown);
}

/* Fills m's tables (views; shown names; models) from the folder's
 * entries, and logs what the rule had to decide. */
static int cmp_format_name(const void *a, const void *b)
{
    return strcmp(mfs_format_get((mfs_format) * (const int *)a)->name,
                  mfs_format_get((mfs_format) * (const int *)b)->name);
}

/* Every format, in byte order of its name. */
static void format_order(int order[MFS_FMT_COUNT])
{
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        order[f] = f;
    qsort(order, MFS_FMT_COUNT, sizeof *order, cmp_format_name);
}

/* "<base>.<ext>" written at *at, which moves past it.  The view names of
 * a table are one block, not one allocation each: 160,000 of them for a
 * 20,000-model folder (asprintf's formatting was a tenth of its first
 * listing, and each allocation 16 B of overhead). */
static char *join_name(char **at, const char *base, const char *ext)
{
    size_t bl = strlen(base), el = strlen(ext);
    char *s = *at;
    memcpy(s, base, bl);
    s[bl] = '.';
    memcpy(s + bl + 1, ext, el + 1);
    *at += bl + el + 2;
    return s;
}

static int build_views(mfs_fs *fs, const char *dir, entry *e, size_t n, dirmap *m)
{
    mfs_names p;
    if (plan_names(fs, e, n, &p) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < p.nnotes; i++)
        mfs_fs_log(fs, "%s: %s", dir[0] ? dir : ".", p.notes[i].text);
    size_t nf = 0;
    for (unsigned f = 0; f < MFS_FMT_COUNT; f++)
        nf += (fs->cfg.shown >> f) & 1;
    size_t bytes = 1;
    for (size_t i = 0; i < p.nmodels; i++)
        for (unsigned f = 0; f < MFS_FMT_COUNT; f++)
            if (fs->cfg.shown & (1u << f))
                bytes += strlen(p.models[i].base) + strlen(mfs_format_get((mfs_format)f)->name) + 2;
    char *at = m->names = malloc(bytes);
    m->v = calloc(p.nmodels * nf + 1, sizeof *m->v);
    m->models = calloc(p.nmodels + 1, sizeof *m->models);
    m->c = fs->cfg.lowercase_names ? calloc(n + 1, sizeof *m->c) : NULL;
    int rc = m->names && m->v && m->models && (m->c || !fs->cfg.lowercase_names) ? 0 : -ENOMEM;
    /* models come sorted by base, and formats are taken in name order, so
     * the names are made in order unless a base is a prefix of another
     * followed by a byte below '.' ("a.dem" > "a-b.dem"): checked below,
     * sorted only then (160,000 names sorted were a sixth of a 20,000-model
     * folder's first listing) */
    int order[MFS_FMT_COUNT];
    format_order(order);
    for (size_t i = 0; i < p.nmodels && rc == 0; i++) {
        const mfs_name_model *pm = &p.models[i];
        entry key = {(char *)pm->model, 0, 0};
        const entry *src = bsearch(&key, e, n, sizeof *e, cmp_entry);
        mfs_dir_model *dm = &m->models[m->nmodels++];
        dm->model = strdup(pm->model);
        dm->base = strdup(pm->base);
        if (!dm->model || !dm->base)
            rc = -ENOMEM;
        for (int k = 0; k < MFS_FMT_COUNT && rc == 0; k++) {
            int f = order[k];
            if (!(fs->cfg.shown & (1u << f)))
                continue;
            vname *v = &m->v[m->n++];
            v->format = f;
            v->model = dm->model;
            v->ino = src ? src->ino : 0;
            v->name = join_name(&at, pm->base, mfs_format_get((mfs_format)f)->name);
            if (!v->model)
                rc = -ENOMEM;
        }
    }
    for (size_t i = 0; m->c && i < n && rc == 0; i++) {
        if (!p.shown[i])
            continue;
        cname *c = &m->c[m->nc++];
        c->shown = strdup(p.shown[i]);
        c->real = strdup(e[i].name);
        if (!c->shown || !c->real)
            rc = -ENOMEM;
    }
    mfs_names_free(&p);
    if (rc < 0) {
        map_clear(m);
        return rc;
    }
    for (size_t i = 1; i < m->n; i++)
        if (strcmp(m->v[i - 1].name, m->v[i].name) > 0) {
            qsort(m->v, m->n, sizeof *m->v, cmp_vname);
            break;
        }
    if (m->c)
        qsort(m->c, m->nc, sizeof *m->c, cmp_cname);
    return 0;
}

static size_t names_of(const dirmap *m)
{
    return m->n + m->nc;
}

/* Drops least recently used tables other than keep (the one just asked
 * for) and the one used before it, until the others hold at most
 * 8 x memo_size names.  A scan of the buckets per eviction: tables are few
 * (folders), and this runs only past the cap.  Called locked. */
static void evict_tables(mfs_fs *fs, const dirmap *keep)
{
    mfs_dirmaps *d = fs->dirs;
    size_t cap = 8 * (fs->cfg.memo_size ? fs->cfg.memo_size : MFS_VIEWS_MEMO_DEFAULT);
    while (d->names > cap) {
        const dirmap *prev = NULL;
        for (int b = 0; b < NBUCKET; b++)
            for (dirmap *m = d->bucket[b]; m; m = m->next)
                if (m != keep && (!prev || m->used > prev->used))
                    prev = m;
        size_t held = (keep ? names_of(keep) : 0) + (prev ? names_of(prev) : 0);
        if (d->names - held <= cap)
            return;
        dirmap **victim = NULL;
        for (int b = 0; b < NBUCKET; b++)
            for (dirmap **pp = &d->bucket[b]; *pp; pp = &(*pp)->next)
                if (*pp != keep && *pp != prev && (!victim || (*pp)->used < (*victim)->used))
                    victim = pp;
        if (!victim)
            return;
        dirmap *m = *victim;
        *victim = m->next;
        d->names -= names_of(m);
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

static int same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* The folder's table, current against its mtime/ctime; called locked. */
/* The folder's table, rebuilt if the folder changed since it was made.
 * A caller that just read the folder passes its entries and the folder's
 * stat taken before reading them (a rebuild then reads nothing: a first
 * listing reads a folder once, not twice); else both are NULL.  Built from
 * entries older than a change, the table records the older times, so the
 * next call rebuilds it. */
static dirmap *current_map_from(mfs_fs *fs, const char *dir, const struct stat *before,
                                entry *given, size_t ngiven, int *err)
{
    struct stat st;
    if (before) {
        st = *before;
    } else if (mfs_beneath_stat(fs, dir, &st) < 0) {
        *err = -errno;
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        *err = -ENOTDIR;
        return NULL;
    }
    mfs_dirmaps *d = fs->dirs;
    unsigned b = bucket_of(dir);
    dirmap **pp = &d->bucket[b];
    for (; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->path, dir))
            break;
    dirmap *m = *pp;
    if (m && same_time(m->mtime, st.st_mtim) && same_time(m->ctime, st.st_ctim)) {
        m->used = ++d->clock;
        return m;
    }
    entry *e = given;
    size_t n = ngiven;
    int rc = given ? 0 : read_entries(fs, dir, &e, &n);
    if (rc < 0) {
        *err = rc;
        return NULL;
    }
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m || !(m->path = strdup(dir))) {
            free(m);
            if (!given)
                free_entries(e, n);
            *err = -ENOMEM;
            return NULL;
        }
        m->next = d->bucket[b];
        d->bucket[b] = m;
        d->tables++;
    } else {
        d->names -= names_of(m);
        map_clear(m);
    }
    rc = build_views(fs, dir, e, n, m);
    if (!given)
        free_entries(e, n);
    d->names += names_of(m);
    m->used = ++d->clock;
    evict_tables(fs, m);
    if (rc < 0) {
        /* an empty table that a later call rebuilds */
        m->mtime = m->ctime = (struct timespec){0, 0};
        *err = rc;
        return NULL;
    }
    m->mtime = st.st_mtim;
    m->ctime = st.st_ctim;
    return m;
}

static dirmap *current_map(mfs_fs *fs, const char *dir, int *err)
{
    return current_map_from(fs, dir, NULL, NULL, 0, err);
}

int mfs_dirmap_lookup(mfs_fs *fs, const char *dir, const char *name, mfs_view_ref *ref)
{
    pthread_mutex_lock(&fs->dirs->lock);
    int err = 0;
    dirmap *m = current_map(fs, dir, &err);
    int rc = 0;
    if (!m) {
        rc = err;
    } else {
        vname key = {.name = (char *)name};
        vname *hit = bsearch(&key, m->v, m->n, sizeof *m->v, cmp_vname);
        if (hit) {
            ref->model = strdup(hit->model);
            size_t ext = strlen(mfs_format_get((mfs_format)hit->format)->name) + 1;
            ref->base = strndup(hit->name, strlen(hit->name) - ext);
            ref->format = hit->format;
            rc = ref->model && ref->base ? 1 : -ENOMEM;
        }
    }
    pthread_mutex_unlock(&fs->dirs->lock);
    return rc;
}

int mfs_dir_list(mfs_fs *fs, const char *dir, mfs_dir_fill fill, void *ctx)
{
    /* the folder's stat first: the table may be built from these entries */
    struct stat dst;
    int have_dst = mfs_beneath_stat(fs, dir, &dst) == 0 && S_ISDIR(dst.st_mode);
    dev_t dev = have_dst ? dst.st_dev : 0;
    entry *e;
    size_t n;
    int rc = read_entries(fs, dir, &e, &n);
    if (rc < 0)
        return rc;
    /* lowercase_names: the entries' shown names, from these very entries
     * (the table's notes were logged when it was built) */
    mfs_names shown = {0};
    if (fs->cfg.lowercase_names && plan_names(fs, e, n, &shown) < 0) {
        free_entries(e, n);
        return -ENOMEM;
    }
    int stop = 0, real_pkg = 0;
    for (size_t i = 0; i < n && !stop; i++) {
        if (fs->cfg.hide_sources && is_model_entry(fs, &e[i]))
            continue;
        const char *name = shown.shown ? shown.shown[i] : e[i].name;
        if (!name)
            continue;
        real_pkg |= !strcmp(name, MFS_LGEPKG_FILE_NAME); /* a real file wins */
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_ino = e[i].ino;
        st.st_mode = DTTOIF(e[i].type);
        stop = fill(ctx, name, &st, NULL);
    }
    mfs_names_free(&shown);
    /* The views straight from the table, under its lock: fill only copies
     * (fs.h), and a copy of a 20,000-model folder's table would be 320,000
     * allocations and ~13 MiB more at the listing's peak. */
    pthread_mutex_lock(&fs->dirs->lock);
    int err = 0;
    dirmap *m = have_dst ? current_map_from(fs, dir, &dst, e, n, &err) : current_map(fs, dir, &err);
    size_t nmodels = m ? m->nmodels : 0;
    for (size_t i = 0; m && i < m->n && !stop; i++) {
        const vname *v = &m->v[i];
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_ino = mfs_view_ino(dev, v->ino, v->format);
        st.st_mode = S_IFREG;
        char base[4096];
        size_t bl = strlen(v->name) - strlen(mfs_format_get((mfs_format)v->format)->name) - 1;
        if (bl >= sizeof base)
            continue;
        memcpy(base, v->name, bl);
        base[bl] = '\0';
        mfs_view_ref ref = {v->model, base, v->format};
        stop = fill(ctx, v->name, &st, &ref);
    }
    pthread_mutex_unlock(&fs->dirs->lock);
    if (!stop && m && nmodels && !real_pkg && (fs->cfg.formats & MFS_FMT_LGEPKG_BIT)) {
        /* the folder's package, the same rule as mfs_lgepkg_present */
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_ino = mfs_view_ino(dev, dev ? dst.st_ino : 0, MFS_FS_LGEPKG);
        st.st_mode = S_IFREG;
        mfs_view_ref ref = {"", MFS_LGEPKG_DEFAULT_NAME, MFS_FS_LGEPKG};
        fill(ctx, MFS_LGEPKG_FILE_NAME, &st, &ref);
    }
    free_entries(e, n);
    return m ? 0 : err;
}

int mfs_dirmap_real_name(mfs_fs *fs, const char *dir, const char *shown, char *out, size_t n)
{
    pthread_mutex_lock(&fs->dirs->lock);
    int err = 0;
    dirmap *m = current_map(fs, dir, &err);
    int rc = m ? 0 : err;
    if (m && m->c) {
        cname key = {(char *)shown, NULL};
        cname *hit = bsearch(&key, m->c, m->nc, sizeof *m->c, cmp_cname);
        if (hit)
            rc = snprintf(out, n, "%s", hit->real) < (int)n ? 1 : -ENAMETOOLONG;
    }
    pthread_mutex_unlock(&fs->dirs->lock);
    return rc;
}

int mfs_dirmap_models(mfs_fs *fs, const char *dir, mfs_dir_model **out, size_t *n)
{
    pthread_mutex_lock(&fs->dirs->lock);
    int err = 0;
    dirmap *m = current_map(fs, dir, &err);
    int rc = m ? 0 : err;
    *out = NULL;
    *n = 0;
    if (m) {
        mfs_dir_model *v = calloc(m->nmodels + 1, sizeof *v);
        int ok = v != NULL;
        for (size_t k = 0; ok && k < m->nmodels; k++) {
            v[k].model = strdup(m->models[k].model);
            v[k].base = strdup(m->models[k].base);
            ok = v[k].model && v[k].base;
        }
        if (!ok) {
            rc = -ENOMEM;
            mfs_dir_models_free(v, v ? m->nmodels : 0); /* calloc'd: unset ones are NULL */
        } else {
            *out = v;
            *n = m->nmodels;
        }
    }
    pthread_mutex_unlock(&fs->dirs->lock);
    return rc;
}

/* Which names in a folder are views, and of which model.
 *
 * A lookup of "car.fmd" must find car.fbx without scanning the folder each
 * time, so each folder's view names are kept in a sorted table, rebuilt when
 * the folder's mtime or ctime moves (entries added, removed or renamed).
 * Naming follows include/meshfs/naming.h, the same rule meshfs-convert uses. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fs.h"
#include "meshfs/naming.h"

typedef struct vname {
    char *name;   /* "car.fmd" */
    char *model;  /* "car.fbx" */
    int format;
} vname;

typedef struct dirmap {
    char *path;
    struct timespec mtime, ctime;
    vname *v;
    size_t n;
    struct dirmap *next; /* hash chain */
} dirmap;

#define NBUCKET 4096

struct mfs_dirmaps {
    pthread_mutex_t lock;
    dirmap *bucket[NBUCKET];
};

mfs_dirmaps *mfs_dirmaps_new(void)
{
    mfs_dirmaps *d = calloc(1, sizeof *d);
    if (d)
        pthread_mutex_init(&d->lock, NULL);
    return d;
}

static void map_free(dirmap *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].name);
        free(m->v[i].model);
    }
    free(m->v);
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
    return openat(fs->rootfd, dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
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

static int is_model_entry(const entry *e)
{
    return e->type == DT_REG && mfs_is_model_name(e->name);
}

static int cmp_vname(const void *a, const void *b)
{
    return strcmp(((const vname *)a)->name, ((const vname *)b)->name);
}

/* Builds the view table of a folder from its entries. */
static int build_views(mfs_fs *fs, entry *e, size_t n, vname **out, size_t *nout)
{
    const char **names = malloc((n ? n : 1) * sizeof *names);
    size_t nf = 0;
    for (unsigned f = 0; f < MFS_FMT_COUNT; f++)
        nf += (fs->cfg.formats >> f) & 1;
    size_t nm = 0;
    for (size_t i = 0; i < n; i++)
        nm += is_model_entry(&e[i]);
    vname *v = calloc(nm * nf + 1, sizeof *v);
    if (!names || !v) {
        free(names);
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        names[i] = e[i].name;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_model_entry(&e[i]))
            continue;
        char base[4096];
        if (mfs_view_base(e[i].name, names, n, mfs_is_model_name, base, sizeof base - 8) < 0)
            continue;
        for (int f = 0; f < MFS_FMT_COUNT; f++) {
            if (!(fs->cfg.formats & (1u << f)))
                continue;
            const char *ext = mfs_format_get((mfs_format)f)->name;
            size_t bl = strlen(base);
            v[k].name = malloc(bl + strlen(ext) + 2);
            v[k].model = strdup(e[i].name);
            if (!v[k].name || !v[k].model) {
                free(v[k].name);
                free(v[k].model);
                continue;
            }
            memcpy(v[k].name, base, bl);
            v[k].name[bl] = '.';
            strcpy(v[k].name + bl + 1, ext);
            v[k].format = f;
            k++;
        }
    }
    free(names);
    qsort(v, k, sizeof *v, cmp_vname);
    *out = v;
    *nout = k;
    return 0;
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
static dirmap *current_map(mfs_fs *fs, const char *dir, int *err)
{
    struct stat st;
    if (fstatat(fs->rootfd, dir[0] ? dir : ".", &st, AT_SYMLINK_NOFOLLOW) < 0) {
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
    if (m && same_time(m->mtime, st.st_mtim) && same_time(m->ctime, st.st_ctim))
        return m;
    entry *e;
    size_t n;
    int rc = read_entries(fs, dir, &e, &n);
    if (rc < 0) {
        *err = rc;
        return NULL;
    }
    vname *v;
    size_t nv;
    rc = build_views(fs, e, n, &v, &nv);
    free_entries(e, n);
    if (rc < 0) {
        *err = rc;
        return NULL;
    }
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m || !(m->path = strdup(dir))) {
            free(m);
            for (size_t i = 0; i < nv; i++) {
                free(v[i].name);
                free(v[i].model);
            }
            free(v);
            *err = -ENOMEM;
            return NULL;
        }
        m->next = d->bucket[b];
        d->bucket[b] = m;
    } else {
        for (size_t i = 0; i < m->n; i++) {
            free(m->v[i].name);
            free(m->v[i].model);
        }
        free(m->v);
    }
    m->v = v;
    m->n = nv;
    m->mtime = st.st_mtim;
    m->ctime = st.st_ctim;
    return m;
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
        vname key = {(char *)name, NULL, 0};
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
    entry *e;
    size_t n;
    int rc = read_entries(fs, dir, &e, &n);
    if (rc < 0)
        return rc;
    struct stat dst;
    dev_t dev = fstatat(fs->rootfd, dir[0] ? dir : ".", &dst, 0) == 0 ? dst.st_dev : 0;
    int stop = 0;
    for (size_t i = 0; i < n && !stop; i++) {
        if (fs->cfg.hide_sources && is_model_entry(&e[i]))
            continue;
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_ino = e[i].ino;
        st.st_mode = DTTOIF(e[i].type);
        stop = fill(ctx, e[i].name, &st, NULL);
    }
    /* The view table is copied out, so the callback (which may stat a
     * model's inputs) runs without the lock every lookup needs. */
    pthread_mutex_lock(&fs->dirs->lock);
    int err = 0;
    dirmap *m = current_map(fs, dir, &err);
    size_t nv = m ? m->n : 0;
    vname *views = calloc(nv ? nv : 1, sizeof *views);
    for (size_t i = 0; views && i < nv; i++) {
        views[i].name = strdup(m->v[i].name);
        views[i].model = strdup(m->v[i].model);
        views[i].format = m->v[i].format;
    }
    pthread_mutex_unlock(&fs->dirs->lock);
    if (!views)
        err = -ENOMEM;
    for (size_t i = 0; views && i < nv; i++) {
        if (!stop && views[i].name && views[i].model) {
            struct stat st;
            memset(&st, 0, sizeof st);
            entry key = {views[i].model, 0, 0};
            entry *src = bsearch(&key, e, n, sizeof *e, cmp_entry);
            st.st_ino = mfs_view_ino(dev, src ? src->ino : 0, views[i].format);
            st.st_mode = S_IFREG;
            size_t ext = strlen(mfs_format_get((mfs_format)views[i].format)->name) + 1;
            char *base = strndup(views[i].name, strlen(views[i].name) - ext);
            mfs_view_ref ref = {views[i].model, base, views[i].format};
            if (base)
                stop = fill(ctx, views[i].name, &st, &ref);
            free(base);
        }
        free(views[i].name);
        free(views[i].model);
    }
    free(views);
    free_entries(e, n);
    return m ? 0 : err;
}

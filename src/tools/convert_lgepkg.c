/* game_resources.lgepkg for meshfs-convert (convert_lgepkg.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert_lgepkg.h"
#include "meshfs/batch.h"

static int by_dir_then_base(const void *a, const void *b)
{
    const pkg_input *x = *(const pkg_input *const *)a, *y = *(const pkg_input *const *)b;
    int c = strcmp(x->outdir, y->outdir);
    return c ? c : strcmp(x->base, y->base);
}

/* Does the source folder hold an entry the mount would show under the
 * package's name?  (The mount then shows that file, not a package.) */
static int real_package_in(const char *srcdir, int lowercase_names)
{
    DIR *d = opendir(srcdir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)))
        found = lowercase_names ? !strcasecmp(e->d_name, MFS_LGEPKG_FILE_NAME)
                                : !strcmp(e->d_name, MFS_LGEPKG_FILE_NAME);
    closedir(d);
    return found;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* real_package_in for the source folders of n models that share an output
 * folder: each folder listed once (they are mostly one folder, and listing
 * it once a model made a folder of n models cost n listings of n names). */
static int any_real_package_in(pkg_input *const *m, size_t n, int lowercase_names)
{
    const char **dirs = malloc(n * sizeof *dirs);
    int found = 0;
    if (!dirs) { /* the slow way, still right */
        for (size_t k = 0; k < n && !found; k++)
            found = real_package_in(m[k]->srcdir, lowercase_names);
        return found;
    }
    for (size_t k = 0; k < n; k++)
        dirs[k] = m[k]->srcdir;
    qsort(dirs, n, sizeof *dirs, cmp_str);
    for (size_t k = 0; k < n && !found; k++)
        if (k == 0 || strcmp(dirs[k], dirs[k - 1]))
            found = real_package_in(dirs[k], lowercase_names);
    free(dirs);
    return found;
}

/* Each packed model's four view files, opened only while its chunks are
 * written (mfs_lgepkg_write_fetched): a folder of thousands of models
 * would need four descriptors each at once. */
typedef struct fetch_ctx {
    pkg_input *const *m;
    const size_t *packed; /* packed index -> index in m */
} fetch_ctx;

static int fetch(void *ctx, size_t j, mfs_lge_src chunk[MFS_LGEPKG_CHUNKS], mfs_err *err)
{
    fetch_ctx *c = ctx;
    const pkg_input *in = c->m[c->packed[j]];
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
        int fd = open(in->view[k], O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
            mfs_errf(err, "%s: %s", in->view[k], strerror(errno));
            if (fd >= 0)
                close(fd);
            while (k-- > 0)
                close(chunk[k].fd);
            return -1;
        }
        chunk[k] = (mfs_lge_src){NULL, fd, 0, (uint64_t)st.st_size};
    }
    return 0;
}

static void release(void *ctx, size_t j, mfs_lge_src chunk[MFS_LGEPKG_CHUNKS])
{
    (void)ctx;
    (void)j;
    for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
        close(chunk[k].fd);
}

/* A sink that writes nothing: it compares what a writer puts with the
 * bytes of an existing file, and stops the writer at the first
 * difference (a sticky error), so an unchanged package costs a read of
 * the old one and no file made in its folder (whose mtime rsync -a would
 * otherwise copy). */
typedef struct cmp_ctx {
    int fd;
    uint64_t off;
    int differs;
    uint8_t buf[65536];
} cmp_ctx;

static int cmp_flush(mfs_sink *s, const uint8_t *p, size_t n)
{
    cmp_ctx *c = s->ctx;
    while (n && !c->differs) {
        size_t want = n < sizeof c->buf ? n : sizeof c->buf;
        ssize_t r = pread(c->fd, c->buf, want, (off_t)c->off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || memcmp(c->buf, p, (size_t)r) != 0)
            c->differs = 1;
        else {
            c->off += (uint64_t)r;
            p += r;
            n -= (size_t)r;
        }
    }
    return c->differs ? ECANCELED : 0;
}

/* 1 if the package at path holds exactly the bytes these models make, and
 * the mode a new one would get. */
static int same_package(const char *path, const char *name, const char *version,
                        const mfs_lgepkg_model *pm, size_t np, fetch_ctx *fc)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0)
        return 0;
    cmp_ctx *c = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
                     ? calloc(1, sizeof *c)
                     : NULL;
    mfs_sink s;
    int same = 0;
    if (c && mfs_sink_init_fd(&s, fd) == 0) {
        c->fd = fd;
        s.flush = cmp_flush;
        s.ctx = c;
        mfs_err err;
        mfs_err_clear(&err);
        mfs_lgepkg_fetch f = {fetch, release, fc};
        int rc = mfs_lgepkg_write_fetched(name, version, pm, np, &f, &s, &err);
        same = rc == 0 && mfs_sink_finish(&s) == 0 && !c->differs &&
               c->off == (uint64_t)st.st_size;
        mfs_sink_free(&s);
    }
    free(c);
    close(fd);
    return same;
}

/* The package of the n models at m (one folder, sorted by base). */
static int write_one(pkg_input *const *m, size_t n, const char *name, const char *version,
                     FILE *out)
{
    const char *dir = m[0]->outdir;
    char path[PATH_MAX], tmp[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, MFS_LGEPKG_FILE_NAME);
    const char **bases = calloc(n, sizeof *bases);
    char(*names)[MFS_LGE_NAME_BYTES] = calloc(n, sizeof *names);
    mfs_lgepkg_model *pm = calloc(n, sizeof *pm);
    size_t *packed = calloc(n, sizeof *packed);
    mfs_err err;
    mfs_err_clear(&err);
    int rc = bases && names && pm && packed ? 0 : mfs_errf(&err, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        bases[i] = m[i]->base;
    /* names over every model, packed or not, as the mount does */
    if (rc == 0)
        rc = mfs_lgepkg_chunk_names(bases, n, names, &err);
    size_t np = 0;
    mfs_batch_readers readers = {0}; /* narrowed over every packed view */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int all = 1;
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
            all &= m[i]->view[k] != NULL;
        if (!all) {
            fprintf(stderr, "meshfs-convert: %s: left out %s: %s\n", path, m[i]->model,
                    m[i]->why && m[i]->why[0] ? m[i]->why : "conversion failed");
            continue;
        }
        memcpy(pm[np].name, names[i], sizeof pm[np].name);
        for (int k = 0; k < MFS_LGEPKG_CHUNKS && rc == 0; k++) {
            struct stat st;
            if (stat(m[i]->view[k], &st) < 0) {
                rc = mfs_errf(&err, "%s: %s", m[i]->view[k], strerror(errno));
                break;
            }
            pm[np].chunk[k] = (mfs_lge_src){NULL, -1, 0, (uint64_t)st.st_size};
            /* the package shows every view it packs: its readers are the
             * classes every one of those files lets read (issue 33) */
            mfs_batch_readers_narrow(&readers, geteuid(), getegid(), &st);
        }
        packed[np++] = i;
    }
    fetch_ctx fc = {m, packed};
    /* the package there already: kept, with its inode and mtime (a second
     * run rewrites nothing, rsync -a sends nothing) */
    int same = rc == 0 && same_package(path, name, version, pm, np, &fc);
    int fd = -1;
    if (rc == 0 && np == 0) {
        /* a package of no model loads nothing, as in the mount, where the
         * folder shows none; one an earlier run wrote is stale */
        if (unlink(path) < 0 && errno != ENOENT)
            rc = mfs_errf(&err, "%s: %s", path, strerror(errno));
        else
            fprintf(stderr, "meshfs-convert: %s: no model converted: none written\n", path);
        goto done;
    }
    if (same) { /* its bytes kept; its mode as a new one's (settle_mode) */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        mfs_err merr;
        if (fd < 0)
            rc = mfs_errf(&err, "%s: %s", path, strerror(errno));
        else if (mfs_batch_settle_mode(fd, &readers, mfs_batch_file_mode(), &merr) < 0)
            rc = mfs_errf(&err, "%s: %s", path, merr.msg);
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    if (rc == 0 && !same) {
        snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, MFS_LGEPKG_FILE_NAME);
        fd = mfs_batch_mkstemp(tmp);
        if (fd < 0)
            rc = mfs_errf(&err, "%s: %s", tmp, strerror(errno));
    }
    if (rc == 0 && !same) {
        mfs_sink s;
        if (mfs_sink_init_fd(&s, fd) < 0) {
            rc = mfs_errf(&err, "out of memory");
        } else {
            mfs_lgepkg_fetch f = {fetch, release, &fc};
            rc = mfs_lgepkg_write_fetched(name, version, pm, np, &f, &s, &err);
            int e = mfs_sink_finish(&s);
            if (rc == 0 && e)
                rc = mfs_errf(&err, "%s: %s", tmp, strerror(e));
            mfs_sink_free(&s);
        }
        /* readers: as of a file of the run's user (settle_mode carries
         * them over to the package's own owner and group) */
        mfs_err merr;
        if (mfs_batch_settle_mode(fd, &readers, mfs_batch_file_mode(), &merr) < 0 && rc == 0)
            rc = mfs_errf(&err, "%s: %s", tmp, merr.msg);
        if (close(fd) < 0 && rc == 0)
            rc = mfs_errf(&err, "%s: %s", tmp, strerror(errno));
        if (rc == 0 && rename(tmp, path) < 0)
            rc = mfs_errf(&err, "%s: %s", path, strerror(errno));
        if (rc < 0)
            unlink(tmp);
        mfs_batch_tmp_forget(tmp);
    }
done:
    if (rc < 0)
        fprintf(stderr, "meshfs-convert: %s: %s\n", path, err.msg);
    else if (out && np)
        fprintf(out, "ok %s (%zu of %zu models)\n", path, np, n);
    free(bases);
    free(names);
    free(pm);
    free(packed);
    return rc;
}

size_t mfs_convert_packages(const pkg_input *in, size_t n, const char *name, const char *version,
                            int lowercase_names, FILE *out)
{
    if (n == 0)
        return 0;
    pkg_input **v = malloc(n * sizeof *v);
    if (!v) {
        fprintf(stderr, "meshfs-convert: out of memory writing packages\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (pkg_input *)&in[i];
    qsort(v, n, sizeof *v, by_dir_then_base);
    size_t failed = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(v[j]->outdir, v[i]->outdir))
            j++;
        int shadowed = any_real_package_in(v + i, j - i, lowercase_names);
        if (shadowed)
            fprintf(stderr, "meshfs-convert: %s: the source folder has its own %s, which wins "
                    "(as in the mount): none written\n", v[i]->outdir, MFS_LGEPKG_FILE_NAME);
        else if (write_one(v + i, j - i, name, version, out) < 0)
            failed++;
        i = j;
    }
    free(v);
    return failed;
}

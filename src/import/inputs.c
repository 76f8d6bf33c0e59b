/* Absent and listing inputs (include/meshfs/import.h, "inputs"): the one definition
 * the importers record and the cache checks.  Here, beside the importers
 * that record them, and compiled into the core library, whose cache checks
 * them in a mount that links no importer. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "meshfs/import.h"

static int open_beneath(int rootfd, const char *rel, uint64_t flags)
{
    struct open_how how = {
        .flags = flags | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) /* kernel < 5.6 */
        fd = openat(rootfd, rel, (int)how.flags);
    return fd;
}

int mfs_input_absent(int rootfd, const char *path)
{
    int fd = open_beneath(rootfd, path, O_PATH);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV ? 1 : -1;
    struct stat st;
    int r = fstat(fd, &st) < 0 ? -1 : !S_ISREG(st.st_mode);
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

int mfs_input_witness(int rootfd, const char *path, char *dir, size_t cap)
{
    char way[4096];
    if (snprintf(way, sizeof way, "%s", path) >= (int)sizeof way) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (;;) {
        char *slash = strrchr(way, '/');
        const char *name = slash ? slash + 1 : way;
        if (slash)
            *slash = '\0';
        const char *folder = slash ? way : ".";
        int fd = open_beneath(rootfd, folder, O_PATH | O_DIRECTORY);
        if (fd < 0) {
            if (errno == ENOENT && slash)
                continue; /* the folder is missing too: its parent stands */
            return errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV ? 0
                                                                                          : -1;
        }
        struct stat st;
        int r = *name ? fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) : 0;
        int e = errno;
        close(fd);
        if (r == 0 || e != ENOENT)
            return 0; /* something is there (a link, "..", a folder), or cannot tell */
        if (snprintf(dir, cap, "%s", folder) >= (int)cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        return 1;
    }
}

int mfs_input_times_settled(const struct stat *st)
{
    /* whole seconds in both times: a file system that keeps no more (FAT
     * keeps 2 s); else the kernel's clock tick (4-10 ms) with room to
     * spare; a folder whose clock runs ahead of ours stays unsettled */
    int64_t window = st->st_mtim.tv_nsec == 0 && st->st_ctim.tv_nsec == 0 ? 2000000000LL
                                                                         : 50000000LL;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t n = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    int64_t m = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    int64_t c = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
    return (m > c ? m : c) <= n - window;
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* In the order a stem search prefers them: what the importer decodes
 * first (stb_image reads no DDS; a .dds found still settles the search,
 * and .tex says it cannot be decoded). */
static const char *const image_exts[] = {"tga", "png", "jpg", "jpeg", "bmp", "dds"};
#define N_IMAGE_EXTS (sizeof image_exts / sizeof *image_exts)

static int image_ext_rank(const char *ext)
{
    for (size_t i = 0; i < N_IMAGE_EXTS; i++)
        if (strcasecmp(ext, image_exts[i]) == 0)
            return (int)i;
    return -1;
}

int mfs_input_name_rank(const char *pattern, const char *name)
{
    size_t pn = strlen(pattern);
    if (pn < 2 || strcmp(pattern + pn - 2, ".*") != 0)
        return strcasecmp(name, pattern) == 0 ? 0 : -1;
    size_t stem = pn - 2;
    if (stem == 0 || strncasecmp(name, pattern, stem) != 0 || name[stem] != '.')
        return -1;
    return image_ext_rank(name + stem + 1);
}

int mfs_input_stem_pattern(const char *base, char *out, size_t cap)
{
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base && image_ext_rank(dot + 1) >= 0 ? (size_t)(dot - base)
                                                                     : strlen(base);
    if (stem == 0 || stem + 3 > cap)
        return -1;
    memcpy(out, base, stem);
    memcpy(out + stem, ".*", 3);
    return 0;
}

/* The folder of "folder/pattern" ("." for the root) opened for reading,
 * and where its pattern starts; NULL when it cannot be opened (no match). */
static DIR *open_listing(int rootfd, const char *path, const char **pattern)
{
    const char *slash = strrchr(path, '/');
    *pattern = slash ? slash + 1 : path;
    char dir[4096];
    if (slash && (size_t)(slash - path) >= sizeof dir) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    int fd = open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (fd >= 0 && !d)
        close(fd);
    return d;
}

int mfs_input_search(int rootfd, const char *path, char *best, size_t cap)
{
    const char *pattern;
    DIR *d = open_listing(rootfd, path, &pattern);
    int best_rank = -1;
    best[0] = '\0';
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        int r = mfs_input_name_rank(pattern, e->d_name);
        if (r < 0 || strlen(e->d_name) >= cap)
            continue;
        if (best_rank < 0 || r < best_rank || (r == best_rank && strcmp(e->d_name, best) < 0)) {
            best_rank = r;
            snprintf(best, cap, "%s", e->d_name);
        }
    }
    if (d)
        closedir(d);
    return best_rank >= 0;
}

int mfs_input_listing(int rootfd, const char *path, uint64_t *count, uint8_t hash[16])
{
    const char *name;
    DIR *d = open_listing(rootfd, path, &name);
    char **found = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (mfs_input_name_rank(name, e->d_name) < 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 4;
            char **nf = realloc(found, nc * sizeof *nf);
            if (!nf) {
                rc = -1;
                break;
            }
            found = nf;
            cap = nc;
        }
        if (!(found[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    if (d)
        closedir(d);
    if (n) /* found is NULL for an empty folder */
        qsort(found, n, sizeof *found, by_bytes);
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        rc = -1;
    if (rc == 0) {
        XXH3_128bits_reset(st);
        for (size_t i = 0; i < n; i++)
            XXH3_128bits_update(st, found[i], strlen(found[i]) + 1);
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
        memcpy(hash, c.digest, 16);
        *count = n;
    }
    XXH3_freeState(st);
    for (size_t i = 0; i < n; i++)
        free(found[i]);
    free(found);
    return rc;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int mfs_input_said(const mfs_dep *deps, uint32_t n, uint32_t i)
{
    if (i < n && deps[i].kind == MFS_DEP_UNREADABLE)
        return 1; /* there, under this very path: said as it is */
    if (i >= n || deps[i].kind != MFS_DEP_MISSING)
        return 0;
    const char *b = base_name(deps[i].path);
    for (uint32_t j = 0; j < n; j++)
        if (j != i && (deps[j].kind == MFS_DEP_FILE || (deps[j].kind == MFS_DEP_MISSING && j < i)) &&
            strcmp(base_name(deps[j].path), b) == 0)
            return 0;
    return 1;
}

int mfs_input_warning(const mfs_dep *d, char *buf, size_t n)
{
    if (d->kind == MFS_DEP_UNREADABLE)
        return snprintf(buf, n, "referenced file '%s' cannot be read by the model's owner: converted without it",
                        d->path);
    return snprintf(buf, n, "referenced file '%s' is missing", d->path);
}

int mfs_input_stat_hash(int rootfd, const char *path, uint8_t hash[16])
{
    int fd = open_beneath(rootfd, path, O_PATH);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV ? 1 : -1;
    struct stat st;
    int r = fstat(fd, &st);
    int e = errno;
    close(fd);
    if (r < 0) {
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode))
        return 1;
    /* fixed-width fields, in one order: the same value in the worker and
     * in every check, whatever the struct's padding */
    uint64_t f[11] = {(uint64_t)st.st_dev,          (uint64_t)st.st_ino,          (uint64_t)st.st_size,
                      (uint64_t)st.st_mtim.tv_sec,  (uint64_t)st.st_mtim.tv_nsec, (uint64_t)st.st_ctim.tv_sec,
                      (uint64_t)st.st_ctim.tv_nsec, (uint64_t)st.st_mode,         (uint64_t)st.st_uid,
                      (uint64_t)st.st_gid,          0};
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(f, sizeof f));
    memcpy(hash, c.digest, 16);
    return 0;
}

int mfs_input_holds(int rootfd, const mfs_dep *d)
{
    if (d->kind == MFS_DEP_ABSENT || d->kind == MFS_DEP_MISSING)
        return mfs_input_absent(rootfd, d->path);
    if (d->kind == MFS_DEP_UNREADABLE) {
        uint8_t h[16];
        int r = mfs_input_stat_hash(rootfd, d->path, h);
        return r < 0 ? -1 : r == 0 && memcmp(h, d->hash, 16) == 0;
    }
    if (d->kind != MFS_DEP_LISTING) {
        errno = EINVAL;
        return -1;
    }
    uint64_t n;
    uint8_t h[16];
    if (mfs_input_listing(rootfd, d->path, &n, h) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return n == d->size && memcmp(h, d->hash, 16) == 0;
}

/* Iterating the entry directory (walk.h), and the usage totals it gives
 * (cache.h, "managing a cache directory").  Shards are listed in order, 00 to ff; a shard not yet
 * created is simply empty. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/cache.h"
#include "walk.h"

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

/* The key a shard and file name spell, if they spell one: 2 + 30
 * lowercase hex digits, then ".e" or ".m". */
static int parse_name(const char *shard_hex, const char *name, mfs_cache_key *k, char *suffix)
{
    char hex[32];
    if (strlen(name) != 32 || name[30] != '.' || (name[31] != 'e' && name[31] != 'm'))
        return -1;
    memcpy(hex, shard_hex, 2);
    memcpy(hex + 2, name, 30);
    for (int i = 0; i < 16; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        k->b[i] = (uint8_t)(hi << 4 | lo);
    }
    *suffix = name[31];
    return 0;
}

static int walk_shard(mfs_cache *c, int i, mfs_cache_walk_fn fn, void *ctx)
{
    char shard[16], hex[3];
    snprintf(hex, sizeof hex, "%02x", i);
    snprintf(shard, sizeof shard, "%s/%s", MFS_CACHE_ENTRY_DIR, hex);
    int fd = openat(c->dirfd, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    int r = 0;
    struct dirent *de;
    while (r == 0 && (de = readdir(d)) != NULL) {
        mfs_cache_key k;
        char suffix;
        struct stat st;
        if (parse_name(hex, de->d_name, &k, &suffix) < 0 ||
            fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        /* the path key.c gives this key: the same name, by construction
         * of the layout, and the one every other part of the cache uses */
        char path[MFS_CACHE_PATH_MAX];
        mfs_cache_key_path(&k, suffix, path);
        r = fn(ctx, c, path, &k, suffix, &st);
    }
    closedir(d);
    return r;
}

int mfs_cache_walk(mfs_cache *c, mfs_cache_walk_fn fn, void *ctx)
{
    for (int i = 0; i < 256; i++)
        if (walk_shard(c, i, fn, ctx) < 0)
            return -1;
    return 0;
}

/* What kind of .m file path is, and how many views a model entry holds
 * inside: its record and table, no checksum pass (a census). */
static void count_model_file(mfs_cache *c, const char *path, mfs_cache_usage *u)
{
    int fd = openat(c->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(c->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return; /* evicted since the listing */
    mfs_cache_entry_info info;
    if (mfs_cache_entry_record(fd, 'm', &info) == 1) {
        if (info.kind == MFS_KIND_FOLDER) {
            u->folder_records++;
        } else {
            u->model_entries++;
            uint8_t *buf = info.kind == MFS_KIND_MODEL && info.length <= (64u << 20)
                               ? malloc(info.length ? (size_t)info.length : 1)
                               : NULL;
            mfs_cache_manifest m;
            uint64_t used;
            if (buf && mfs_pread_full(fd, buf, (size_t)info.length, 0) == (int64_t)info.length &&
                mfs_manifest_get_table(buf, info.length, &used, &m) == 0) {
                for (uint32_t i = 0; i < m.nviews; i++)
                    u->views_inside += m.views[i].embedded != 0;
                mfs_cache_manifest_free(&m);
            }
            free(buf);
        }
    }
    close(fd);
}

static int add_usage(void *ctx, mfs_cache *c, const char *path, const mfs_cache_key *k,
                     char suffix, const struct stat *st)
{
    mfs_cache_usage *u = ctx;
    if (suffix == 'm') {
        u->manifests++;
        count_model_file(c, path, u);
    } else {
        u->entries++;
    }
    u->bytes += (uint64_t)st->st_size;
    return 0;
}

int mfs_cache_usage_scan(mfs_cache *c, mfs_cache_usage *out, mfs_err *err)
{
    memset(out, 0, sizeof *out);
    return mfs_cache_walk(c, add_usage, out);
}

/* The owed list on disk (owed.h).
 *
 * A folder of small files rather than one log: each record is made and
 * removed on its own (rename in, unlink out), so a mount's upload thread
 * and a `meshfs-cache push` of the same cache never rewrite each other's
 * records, and a crash leaves each record whole or absent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/remote.h"
#include "meshfs/util.h"
#include "owed.h"

#define MAGIC "mfsowed1"
#define REC_LEN 16
#define FLAG_OVER 1u

static void rec_name(const mfs_cache_key *k, int manifest, char out[64])
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", k->b[i]);
    snprintf(out, 64, MFS_OWED_DIR "/%s.%c", hex, manifest ? 'm' : 'e');
}

static int read_rec(mfs_cache *c, const char *path, uint8_t rec[REC_LEN])
{
    int fd = openat(mfs_cache_dirfd(c), path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int64_t n = mfs_pread_full(fd, rec, REC_LEN, 0);
    close(fd);
    return n == REC_LEN && !memcmp(rec, MAGIC, 8) ? 0 : -1;
}

int mfs_owed_put(mfs_cache *c, const mfs_owed_item *it, int may_add)
{
    char path[64];
    rec_name(&it->key, it->manifest, path);
    uint8_t rec[REC_LEN];
    int had = read_rec(c, path, rec) == 0;
    if (had && (!it->over || (rec[8] & FLAG_OVER)))
        return 0;
    if (!had && !may_add)
        return -2;
    if (mkdirat(mfs_cache_dirfd(c), MFS_OWED_DIR, 0700) < 0 && errno != EEXIST)
        return -1;
    memset(rec, 0, sizeof rec);
    memcpy(rec, MAGIC, 8);
    rec[8] = it->over ? FLAG_OVER : 0;
    /* unique while it exists: one thread writes one key's record at once */
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld", path, (long)getpid(), (long)gettid());
    int fd = openat(mfs_cache_dirfd(c), tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int e = mfs_pwrite_full(fd, rec, sizeof rec, 0) < 0 ? errno : 0;
    if (close(fd) < 0 && !e)
        e = errno;
    if (e || renameat(mfs_cache_dirfd(c), tmp, mfs_cache_dirfd(c), path) < 0) {
        e = e ? e : errno;
        unlinkat(mfs_cache_dirfd(c), tmp, 0);
        errno = e;
        return -1;
    }
    return had ? 0 : 1;
}

int mfs_owed_done(mfs_cache *c, const mfs_cache_key *k, int manifest)
{
    char path[64];
    rec_name(k, manifest, path);
    return unlinkat(mfs_cache_dirfd(c), path, 0) == 0;
}

static int hexval(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* <32 hex>.e or .m: the record's item, else -1 (a temporary file, or a
 * name that is not ours). */
static int parse_name(const char *n, mfs_owed_item *it)
{
    if (strlen(n) != 34 || n[32] != '.' || (n[33] != 'e' && n[33] != 'm'))
        return -1;
    for (int i = 0; i < 16; i++) {
        int hi = hexval(n[2 * i]), lo = hexval(n[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        it->key.b[i] = (uint8_t)(hi << 4 | lo);
    }
    it->manifest = n[33] == 'm';
    it->over = 0;
    return 0;
}

long mfs_owed_list(mfs_cache *c, mfs_owed_item *out, size_t max, uint64_t *total)
{
    if (total)
        *total = 0;
    int fd = openat(mfs_cache_dirfd(c), MFS_OWED_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    size_t n = 0;
    uint64_t all = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        mfs_owed_item it;
        if (parse_name(de->d_name, &it) < 0)
            continue;
        all++;
        if (n >= max)
            continue;
        char path[64];
        uint8_t rec[REC_LEN];
        snprintf(path, sizeof path, MFS_OWED_DIR "/%s", de->d_name);
        if (read_rec(c, path, rec) < 0) {
            all--; /* sent meanwhile, or not a record of ours */
            continue;
        }
        it.over = (rec[8] & FLAG_OVER) != 0;
        out[n++] = it;
    }
    closedir(d);
    if (total)
        *total = all;
    return (long)n;
}

int mfs_remote_owed_count(mfs_cache *c, uint64_t *n)
{
    return mfs_owed_list(c, NULL, 0, n) < 0 ? -1 : 0;
}

void mfs_owed_name(const mfs_owed_item *it, char *out, size_t n)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", it->key.b[i]);
    snprintf(out, n, "%s/%.2s/%s", it->manifest ? "manifest" : "view", hex, hex + 2);
}

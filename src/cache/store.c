/* Entries: the container format, writing by temp file + rename, and
 * lookup with checksum verification on first open (docs/cache.md).
 *
 * Container version 2: the payload is the file, from offset 0, so the
 * mount can hand an entry to the kernel as a view's backing file
 * (passthrough) with no copy.  What says what the bytes are is a 56-byte
 * record:
 *
 *   0   8  magic "mfscache"
 *   8   4  u32 container version (2)
 *  12   4  u32 kind (1 view, 2 negative, 3 manifest, 4 negative with context,
 *                   5 model entry: a manifest embedding small views,
 *                   6 folder record: copies of a folder's manifests)
 *  16  16  key
 *  32   8  u64 payload length n
 *  40  16  XXH3-128 (canonical) of payload bytes 0..n-1 then record bytes 0..39
 *
 * kept in the extended attribute user.meshfs.entry (the xattr form: file
 * size n), or, where the file system has no user xattrs, appended as a
 * trailer at offset n (the trailer form: file size n + 56).  Only the
 * xattr form can be passed through: the kernel reads a backing file to its
 * own end, and would show a trailer as the view's last bytes.  Either way
 * the record is written before the rename, so a final name always has it.
 *
 * The checksum takes the payload first so a streaming writer, which learns
 * n only at the end, needs a single pass. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache_int.h"
#include "meshfs/util.h"

#define VERIFY_CHUNK (256 * 1024)
#define REASON_MAX (64 * 1024)
#define SMALL_MAX MFS_CACHE_SMALL_MAX
#define REC MFS_CACHE_REC_LEN
#define DESC MFS_CACHE_DESC_LEN

struct mfs_cache_writer {
    mfs_cache_wr w;
};

static void st_u64(uint8_t *p, uint64_t v)
{
    mfs_st_u32(p, (uint32_t)v);
    mfs_st_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t ld_u64(const uint8_t *p)
{
    return mfs_ld_u32(p) | ((uint64_t)mfs_ld_u32(p + 4) << 32);
}

static char kind_suffix(int kind)
{
    return kind == MFS_KIND_MANIFEST || kind == MFS_KIND_MODEL || kind == MFS_KIND_FOLDER ? 'm'
                                                                                         : 'e';
}

static void build_desc(uint8_t d[DESC], int kind, const mfs_cache_key *k, uint64_t len)
{
    memcpy(d, MFS_CACHE_MAGIC, 8);
    mfs_st_u32(d + 8, MFS_CACHE_VERSION);
    mfs_st_u32(d + 12, (uint32_t)kind);
    memcpy(d + 16, k->b, 16);
    st_u64(d + 32, len);
}

/* The record of the file open at fd (size bytes): its xattr if it has one,
 * else its last REC bytes.  1 found (*form set), 0 none, -1 read error. */
static int read_record(int fd, uint64_t size, uint8_t rec[REC], int *form)
{
    ssize_t x = fgetxattr(fd, MFS_CACHE_XATTR, rec, REC);
    if (x == REC) {
        *form = MFS_CACHE_FORM_XATTR;
        return 1;
    }
    if (x >= 0 || errno == ERANGE)
        return 0; /* an attribute of another size: not one we wrote */
    if (errno != ENODATA && errno != ENOTSUP)
        return -1;
    if (size < REC)
        return 0;
    int64_t got = mfs_pread_full(fd, rec, REC, size - REC);
    if (got < 0)
        return -1;
    *form = MFS_CACHE_FORM_TRAILER;
    return got == REC;
}

/* Which kinds may live under a name: a manifest's, or an entry's. */
static int kind_fits(uint32_t kd, char suffix)
{
    if (suffix == 'm')
        return kd == MFS_KIND_MANIFEST || kd == MFS_KIND_MODEL || kd == MFS_KIND_FOLDER;
    return kd == MFS_KIND_VIEW || kd == MFS_KIND_NEGATIVE || kd == MFS_KIND_FAILURE;
}

/* Record consistent with its file and name?  NULL yes, else why not. */
static const char *parse_record(const uint8_t rec[REC], int form, const mfs_cache_key *k,
                                uint64_t file_size, char suffix, mfs_cache_entry_info *info)
{
    if (memcmp(rec, MFS_CACHE_MAGIC, 8) != 0)
        return "no entry record (bad magic)";
    if (mfs_ld_u32(rec + 8) != MFS_CACHE_VERSION)
        return "another container version";
    if (k && memcmp(rec + 16, k->b, 16) != 0)
        return "its key is not the one its name says";
    uint32_t kd = mfs_ld_u32(rec + 12);
    if (!kind_fits(kd, suffix))
        return "a kind that does not belong under its name";
    uint64_t n = ld_u64(rec + 32);
    uint64_t extra = form == MFS_CACHE_FORM_TRAILER ? REC : 0;
    if (file_size < extra || n != file_size - extra)
        return "its length does not match the file's size";
    info->kind = (int)kd;
    memcpy(info->key.b, rec + 16, 16);
    info->length = n;
    info->size = file_size;
    info->form = form;
    return NULL;
}

/* The record at fd, read and parsed.  NULL valid, else why not; *ioerr
 * set when the reason is a failed read. */
static const char *check_record(int fd, const mfs_cache_key *k, char suffix, uint8_t rec[REC],
                                mfs_cache_entry_info *info, int *ioerr)
{
    struct stat st;
    *ioerr = 0;
    if (fstat(fd, &st) < 0) {
        *ioerr = errno;
        return "cannot stat it";
    }
    if (!S_ISREG(st.st_mode))
        return "not a regular file";
    int form = 0;
    int r = read_record(fd, (uint64_t)st.st_size, rec, &form);
    if (r < 0) {
        *ioerr = errno;
        return "cannot read its record";
    }
    if (r == 0)
        return "no entry record";
    info->dev = (uint64_t)st.st_dev;
    info->ino = (uint64_t)st.st_ino;
    return parse_record(rec, form, k, (uint64_t)st.st_size, suffix, info);
}

/* ---- verified set ----------------------------------------------------- */

static size_t vset_slot(const mfs_vset *v, const mfs_cache_key *k)
{
    /* Keys are hashes already: their first bytes are a fine bucket index. */
    size_t i = (size_t)ld_u64(k->b) & (v->cap - 1);
    while (v->slots[i].used && memcmp(v->slots[i].key.b, k->b, 16) != 0)
        i = (i + 1) & (v->cap - 1);
    return i;
}

static int vset_has(mfs_cache *c, const mfs_cache_key *k, const struct stat *st)
{
    int found = 0;
    pthread_mutex_lock(&c->mu);
    if (c->vset.cap) {
        const mfs_vset_slot *s = &c->vset.slots[vset_slot(&c->vset, k)];
        found = s->used && s->dev == (uint64_t)st->st_dev && s->ino == (uint64_t)st->st_ino &&
                s->size == (uint64_t)st->st_size;
    }
    pthread_mutex_unlock(&c->mu);
    return found;
}

static int vset_grow(mfs_vset *v)
{
    size_t cap = v->cap ? v->cap * 2 : 256;
    mfs_vset_slot *old = v->slots;
    size_t oldcap = v->cap;
    v->slots = calloc(cap, sizeof *v->slots);
    if (!v->slots) {
        v->slots = old;
        return -1;
    }
    v->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].used)
            v->slots[vset_slot(v, &old[i].key)] = old[i];
    free(old);
    return 0;
}

/* Bounded (docs/scale.md): at most VSET_MAX keys (3.5 MiB of table), then
 * the set starts afresh.  Forgetting only costs a second verification (one
 * read of the entry) on the next open, never a wrong answer. */
#define VSET_MAX (1u << 15)

/* Out of memory only costs a second verification later. */
static void vset_put(mfs_cache *c, const mfs_cache_key *k, const struct stat *st)
{
    pthread_mutex_lock(&c->mu);
    mfs_vset *v = &c->vset;
    if (v->n >= VSET_MAX) {
        memset(v->slots, 0, v->cap * sizeof *v->slots);
        v->n = 0;
    }
    if ((v->n + 1) * 2 > v->cap && vset_grow(v) < 0) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    mfs_vset_slot *s = &v->slots[vset_slot(v, k)];
    if (!s->used)
        v->n++;
    *s = (mfs_vset_slot){*k, (uint64_t)st->st_dev, (uint64_t)st->st_ino,
                         (uint64_t)st->st_size, 1};
    pthread_mutex_unlock(&c->mu);
}

/* ---- writing ---------------------------------------------------------- */

int mfs_cache_wr_begin(mfs_cache_wr *w, mfs_cache *c, const mfs_cache_key *k, int kind,
                       mfs_err *err)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    w->key = *k;
    w->kind = kind;
    w->hash = XXH3_createState();
    if (!w->hash)
        return mfs_errf(err, "cache: out of memory");
    XXH3_128bits_reset(w->hash);
    w->fd = mfs_cache_tmp_create(c, w->tmp, err);
    if (w->fd < 0) {
        XXH3_freeState(w->hash);
        return -1;
    }
    return 0;
}

int mfs_cache_wr_write(mfs_cache_wr *w, const void *p, size_t n, mfs_err *err)
{
    if (!w->err)
        w->err = mfs_pwrite_full(w->fd, p, n, w->len) < 0 ? errno : 0;
    if (w->err)
        return mfs_errf(err, "cache %s: writing %s: %s", w->c->dir, w->tmp, strerror(w->err));
    XXH3_128bits_update(w->hash, p, n);
    w->len += n;
    return 0;
}

static void wr_release(mfs_cache_wr *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    XXH3_freeState(w->hash);
    w->hash = NULL;
}

void mfs_cache_wr_abort(mfs_cache_wr *w)
{
    if (w->fd >= 0)
        unlinkat(w->c->dirfd, w->tmp, 0);
    wr_release(w);
}

/* Record, LRU stamp.  No fsync: a killed process cannot lose what it
 * wrote (the page cache keeps it), and after a power loss a torn entry
 * fails its checksum on first open and is rebuilt.  An fsync would only add
 * the disk's latency to every first read of a view.
 *
 * The record goes in the xattr unless this handle learnt that the file
 * system has no user xattrs (or a test asked for trailers); any refusal
 * of the attribute falls back to the trailer for this file. */
static int wr_seal(mfs_cache_wr *w, mfs_err *err)
{
    uint8_t rec[REC];
    build_desc(rec, w->kind, &w->key, w->len);
    XXH3_128bits_update(w->hash, rec, DESC);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(w->hash));
    memcpy(rec + DESC, sum.digest, 16);
    mfs_cache *c = w->c;
    int e = -1;
    if (!(c->flags & MFS_CACHE_TRAILER_FORM) && !atomic_load(&c->no_xattr)) {
        e = fsetxattr(w->fd, MFS_CACHE_XATTR, rec, REC, 0) == 0 ? 0 : errno;
        if (e == ENOTSUP)
            atomic_store(&c->no_xattr, 1);
    }
    if (e)
        e = mfs_pwrite_full(w->fd, rec, REC, w->len) < 0 ? errno : 0;
    int64_t now = mfs_cache_now_ns();
    struct timespec ts[2] = {{0, UTIME_OMIT}, {now / 1000000000, now % 1000000000}};
    futimens(w->fd, ts); /* best effort: only LRU order depends on it */
    if (e)
        return mfs_errf(err, "cache %s: writing %s: %s", c->dir, w->tmp, strerror(e));
    return 0;
}

int mfs_cache_wr_commit(mfs_cache_wr *w, mfs_cache_hit *hit, mfs_err *err)
{
    mfs_cache *c = w->c;
    if (hit)
        *hit = (mfs_cache_hit){.fd = -1};
    if (w->err) {
        mfs_errf(err, "cache %s: writing %s: %s", c->dir, w->tmp, strerror(w->err));
        mfs_cache_wr_abort(w);
        return -1;
    }
    struct stat st;
    int ro = -1;
    if (wr_seal(w, err) < 0 || fstat(w->fd, &st) < 0) {
        mfs_cache_wr_abort(w);
        return -1;
    }
    /* Opened before the rename: this inode is the caller's even if another
     * process evicts the new name a moment later. */
    if (hit && (ro = openat(c->dirfd, w->tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        mfs_errf(err, "cache %s: reopening %s: %s", c->dir, w->tmp, strerror(errno));
        mfs_cache_wr_abort(w);
        return -1;
    }
    char final[MFS_CACHE_PATH_MAX];
    mfs_cache_key_path(&w->key, kind_suffix(w->kind), final);
    if (mfs_cache_rename_into(c, w->tmp, final, err) < 0) {
        if (ro >= 0)
            close(ro);
        mfs_cache_wr_abort(w);
        return -1;
    }
    vset_put(c, &w->key, &st);
    if (hit)
        *hit = (mfs_cache_hit){.fd = ro, .offset = 0, .length = w->len};
    wr_release(w);
    MFS_CACHE_STAT_ADD(c, stores, 1);
    mfs_cache_fresh_add(c, &w->key, kind_suffix(w->kind));
    mfs_cache_account(c, (uint64_t)st.st_size);
    return 0;
}

int mfs_cache_writer_begin(mfs_cache *c, const mfs_cache_key *k, mfs_cache_writer **out,
                           mfs_err *err)
{
    *out = malloc(sizeof **out);
    if (!*out)
        return mfs_errf(err, "cache: out of memory");
    if (mfs_cache_wr_begin(&(*out)->w, c, k, MFS_KIND_VIEW, err) < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int mfs_cache_writer_write(mfs_cache_writer *w, const void *p, size_t n, mfs_err *err)
{
    return mfs_cache_wr_write(&w->w, p, n, err);
}

int mfs_cache_writer_commit(mfs_cache_writer *w, mfs_cache_hit *hit, mfs_err *err)
{
    int r = mfs_cache_wr_commit(&w->w, hit, err);
    free(w);
    return r;
}

void mfs_cache_writer_abort(mfs_cache_writer *w)
{
    if (!w)
        return;
    mfs_cache_wr_abort(&w->w);
    free(w);
}

int mfs_cache_store_kind(mfs_cache *c, const mfs_cache_key *k, int kind, const void *p, size_t n,
                         mfs_cache_hit *hit, mfs_err *err)
{
    mfs_cache_wr w;
    if (mfs_cache_wr_begin(&w, c, k, kind, err) < 0)
        return -1;
    if (mfs_cache_wr_write(&w, p, n, err) < 0) {
        mfs_cache_wr_abort(&w);
        return -1;
    }
    return mfs_cache_wr_commit(&w, hit, err);
}

int mfs_cache_store(mfs_cache *c, const mfs_cache_key *k, const void *p, size_t n,
                    mfs_cache_hit *hit, mfs_err *err)
{
    return mfs_cache_store_kind(c, k, MFS_KIND_VIEW, p, n, hit, err);
}

int mfs_cache_store_negative(mfs_cache *c, const mfs_cache_key *k, const char *reason,
                             mfs_err *err)
{
    return mfs_cache_store_failure(c, k, reason, NULL, err);
}

/* Kind 4 payload: f64 timeout_s, u64 memory, u64 cpu_s, u64 output,
 * i64 inputs_mtime_ns (little-endian, the double as its IEEE bits), then
 * the reason. */
int mfs_cache_store_failure(mfs_cache *c, const mfs_cache_key *k, const char *reason,
                            const mfs_cache_failctx *ctx, mfs_err *err)
{
    static const mfs_cache_failctx none;
    if (!ctx)
        ctx = &none;
    size_t n = strlen(reason);
    if (n > REASON_MAX - MFS_CACHE_FAILCTX_LEN)
        n = REASON_MAX - MFS_CACHE_FAILCTX_LEN;
    uint8_t *buf = malloc(MFS_CACHE_FAILCTX_LEN + n);
    if (!buf)
        return mfs_errf(err, "cache: out of memory");
    uint64_t t;
    memcpy(&t, &ctx->timeout_s, sizeof t);
    st_u64(buf, t);
    st_u64(buf + 8, ctx->memory);
    st_u64(buf + 16, ctx->cpu_s);
    st_u64(buf + 24, ctx->output);
    st_u64(buf + 32, (uint64_t)ctx->inputs_mtime_ns);
    memcpy(buf + MFS_CACHE_FAILCTX_LEN, reason, n);
    int r = mfs_cache_store_kind(c, k, MFS_KIND_FAILURE, buf, MFS_CACHE_FAILCTX_LEN + n, NULL, err);
    free(buf);
    return r;
}

static int remove_entry(mfs_cache *c, const mfs_cache_key *k, char suffix, mfs_err *err)
{
    char path[MFS_CACHE_PATH_MAX];
    mfs_cache_key_path(k, suffix, path);
    if (unlinkat(c->dirfd, path, 0) < 0 && errno != ENOENT)
        return mfs_errf(err, "cache %s: removing %s: %s", c->dir, path, strerror(errno));
    return 0;
}

int mfs_cache_remove(mfs_cache *c, const mfs_cache_key *k, mfs_err *err)
{
    return remove_entry(c, k, 'e', err);
}

int mfs_cache_remove_model(mfs_cache *c, const mfs_cache_key *mk, mfs_err *err)
{
    return remove_entry(c, mk, 'm', err);
}

/* ---- reading ---------------------------------------------------------- */

void mfs_cache_discard(mfs_cache *c, const char *path, int fd)
{
    /* Another process may have renamed a good entry over the bad one since
     * we opened it; only the file we judged is removed. */
    struct stat a, b;
    if (fstat(fd, &a) == 0 && fstatat(c->dirfd, path, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlinkat(c->dirfd, path, 0);
    MFS_CACHE_STAT_ADD(c, corrupt_discarded, 1);
}

/* 1 if the record's checksum matches payload + descriptor, 0 if not, -1
 * if unreadable (errno). */
static int checksum_ok(int fd, const uint8_t rec[REC], uint64_t len)
{
    uint8_t *buf = malloc(VERIFY_CHUNK);
    XXH3_state_t *st = XXH3_createState();
    int ok = -1;
    if (!buf || !st) {
        errno = ENOMEM;
        goto out;
    }
    XXH3_128bits_reset(st);
    for (uint64_t off = 0; off < len;) {
        size_t want = len - off < VERIFY_CHUNK ? (size_t)(len - off) : VERIFY_CHUNK;
        int64_t got = mfs_pread_full(fd, buf, want, off);
        if (got != (int64_t)want) {
            if (got >= 0) /* shorter than its record says: torn (else pread's errno) */
                ok = 0;
            goto out;
        }
        XXH3_128bits_update(st, buf, want);
        off += want;
    }
    XXH3_128bits_update(st, rec, DESC);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(st));
    ok = memcmp(rec + DESC, sum.digest, 16) == 0;
out:
    XXH3_freeState(st);
    free(buf);
    return ok;
}

int mfs_cache_entry_record(int fd, char suffix, mfs_cache_entry_info *info)
{
    uint8_t rec[REC];
    int ioerr;
    *info = (mfs_cache_entry_info){0};
    return check_record(fd, NULL, suffix, rec, info, &ioerr) ? 0 : 1;
}

int mfs_cache_entry_check(int fd, const mfs_cache_key *k, char suffix, mfs_cache_entry_info *info,
                          const char **why)
{
    uint8_t rec[REC];
    int ioerr;
    *info = (mfs_cache_entry_info){0};
    *why = check_record(fd, k, suffix, rec, info, &ioerr);
    if (*why) {
        errno = ioerr;
        return ioerr ? -1 : 0;
    }
    int r = checksum_ok(fd, rec, info->length);
    if (r < 0) {
        *why = "cannot read its payload";
        return -1;
    }
    if (r == 0)
        *why = "checksum mismatch";
    return r;
}

/* Validates the entry open at fd: record always, checksum once per inode
 * per handle.  1 valid, 0 discarded as corrupt. */
static int validate(mfs_cache *c, const mfs_cache_key *k, int fd, const char *path,
                    mfs_cache_entry_info *info)
{
    uint8_t rec[REC];
    int ioerr;
    if (check_record(fd, k, 'e', rec, info, &ioerr))
        goto corrupt;
    struct stat st = {.st_dev = (dev_t)info->dev, .st_ino = (ino_t)info->ino,
                      .st_size = (off_t)info->size};
    if (vset_has(c, k, &st))
        return 1;
    if (checksum_ok(fd, rec, info->length) != 1)
        goto corrupt;
    vset_put(c, k, &st);
    MFS_CACHE_STAT_ADD(c, verified, 1);
    return 1;
corrupt:
    mfs_cache_discard(c, path, fd);
    return 0;
}

static void touch(int fd)
{
    /* mtime is the LRU stamp (atime is unreliable under noatime/relatime).
     * An explicit clock reading rather than UTIME_NOW: file timestamps tick
     * at jiffy granularity, too coarse to order uses close together. */
    int64_t now = mfs_cache_now_ns();
    struct timespec ts[2] = {{0, UTIME_OMIT}, {now / 1000000000, now % 1000000000}};
    futimens(fd, ts);
}

/* A negative entry's reason (and, kind 4, what it was recorded under). */
static int read_reason(int fd, int kind, uint64_t len, mfs_cache_hit *hit)
{
    uint64_t skip = kind == MFS_KIND_FAILURE ? MFS_CACHE_FAILCTX_LEN : 0;
    if (len > REASON_MAX || len < skip)
        return -1;
    char *r = malloc((size_t)len + 1);
    if (!r || mfs_pread_full(fd, r, (size_t)len, 0) != (int64_t)len) {
        free(r);
        return -1;
    }
    memset(&hit->fail, 0, sizeof hit->fail);
    if (skip) {
        const uint8_t *b = (const uint8_t *)r;
        uint64_t t = ld_u64(b);
        memcpy(&hit->fail.timeout_s, &t, sizeof t);
        hit->fail.memory = ld_u64(b + 8);
        hit->fail.cpu_s = ld_u64(b + 16);
        hit->fail.output = ld_u64(b + 24);
        hit->fail.inputs_mtime_ns = (int64_t)ld_u64(b + 32);
        memmove(r, r + skip, (size_t)(len - skip));
    }
    r[len - skip] = '\0';
    hit->reason = r;
    return 0;
}

static int lookup_miss(mfs_cache *c, int r)
{
    MFS_CACHE_STAT_ADD(c, misses, 1);
    return r;
}

/* Opens a cache file for reading without touching its atime: the first
 * read after a write would otherwise dirty the inode (relatime), and a
 * listing that peeks at thousands of fresh entries would queue as many
 * journal updates.  Recency lives in mtime (mfs_cache_lookup's stamp), so
 * atime is never needed.  O_NOATIME is refused (EPERM) on files the caller
 * does not own, which a shared cache may hold. */
static int open_ro(mfs_cache *c, const char *path)
{
    int fd = openat(c->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(c->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0)
        MFS_CACHE_STAT_ADD(c, files_opened, 1);
    return fd;
}

/* Opens the entry file for key k: 1 with *fd, 0 if absent, -1 on error. */
static int open_entry(mfs_cache *c, const mfs_cache_key *k, char path[MFS_CACHE_PATH_MAX], int *fd,
                      mfs_err *err)
{
    mfs_cache_key_path(k, 'e', path);
    *fd = open_ro(c, path);
    if (*fd >= 0)
        return 1;
    if (errno == ENOENT || errno == ENOTDIR)
        return 0;
    return mfs_errf(err, "cache %s: opening %s: %s", c->dir, path, strerror(errno));
}

int mfs_cache_lookup(mfs_cache *c, const mfs_cache_key *k, mfs_cache_hit *hit, mfs_err *err)
{
    *hit = (mfs_cache_hit){.fd = -1};
    char path[MFS_CACHE_PATH_MAX];
    int fd;
    int o = open_entry(c, k, path, &fd, err);
    if (o <= 0)
        return lookup_miss(c, o);
    mfs_cache_entry_info info;
    if (!validate(c, k, fd, path, &info)) {
        close(fd);
        return lookup_miss(c, 0);
    }
    int kind = info.kind;
    uint64_t len = info.length;
    touch(fd);
    if (kind == MFS_KIND_NEGATIVE || kind == MFS_KIND_FAILURE) {
        int r = read_reason(fd, kind, len, hit);
        close(fd);
        if (r < 0) {
            mfs_errf(err, "cache %s: reading %s: failed", c->dir, path);
            return lookup_miss(c, -1);
        }
        pthread_mutex_lock(&c->mu);
        c->st.hits++;
        c->st.negative_hits++;
        pthread_mutex_unlock(&c->mu);
        return 1;
    }
    *hit = (mfs_cache_hit){.fd = fd, .offset = 0, .length = len};
    MFS_CACHE_STAT_ADD(c, hits, 1);
    mfs_cache_fresh_served(c, k, 'e');
    return 1;
}

int mfs_cache_peek(mfs_cache *c, const mfs_cache_key *k, mfs_cache_hit *hit, mfs_err *err)
{
    *hit = (mfs_cache_hit){.fd = -1};
    char path[MFS_CACHE_PATH_MAX];
    int fd;
    int o = open_entry(c, k, path, &fd, err);
    if (o <= 0)
        return o;
    uint8_t rec[REC];
    mfs_cache_entry_info info;
    int ioerr, r = 0;
    if (!check_record(fd, k, 'e', rec, &info, &ioerr)) {
        r = 1;
        hit->length = info.length;
        if ((info.kind == MFS_KIND_NEGATIVE || info.kind == MFS_KIND_FAILURE) &&
            read_reason(fd, info.kind, info.length, hit) < 0)
            r = 0;
    }
    close(fd);
    return r;
}

void mfs_cache_hit_release(mfs_cache_hit *h)
{
    if (h->fd >= 0)
        close(h->fd);
    free(h->reason);
    *h = (mfs_cache_hit){.fd = -1};
}

int mfs_cache_read_small(mfs_cache *c, const mfs_cache_key *k, mfs_cache_use use,
                         uint8_t **payload, uint64_t *len, int *kind, int *fd_out, mfs_err *err)
{
    char path[MFS_CACHE_PATH_MAX];
    mfs_cache_key_path(k, 'm', path);
    *payload = NULL;
    if (fd_out)
        *fd_out = -1;
    int fd = open_ro(c, path);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return mfs_errf(err, "cache %s: opening %s: %s", c->dir, path, strerror(errno));
    }
    /* Small and read whole anyway, so verified on every load: no set. */
    uint8_t rec[REC];
    mfs_cache_entry_info info;
    int ioerr;
    uint8_t *buf = NULL;
    if (check_record(fd, k, 'm', rec, &info, &ioerr) || info.length > SMALL_MAX)
        goto corrupt;
    *len = info.length;
    *kind = info.kind;
    if (!(buf = malloc(info.length ? (size_t)info.length : 1))) {
        close(fd);
        return mfs_errf(err, "cache: out of memory");
    }
    if (mfs_pread_full(fd, buf, (size_t)*len, 0) != (int64_t)*len)
        goto corrupt;
    XXH3_state_t *hs = XXH3_createState();
    if (!hs) {
        free(buf);
        close(fd);
        return mfs_errf(err, "cache: out of memory");
    }
    XXH3_128bits_reset(hs);
    XXH3_128bits_update(hs, buf, (size_t)*len);
    XXH3_128bits_update(hs, rec, DESC);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(hs));
    XXH3_freeState(hs);
    if (memcmp(rec + DESC, sum.digest, 16) != 0)
        goto corrupt;
    if (use == MFS_CACHE_USE)
        touch(fd);
    if (fd_out)
        *fd_out = fd;
    else
        close(fd);
    *payload = buf;
    return 1;
corrupt:
    free(buf);
    mfs_cache_discard(c, path, fd);
    close(fd);
    return 0;
}

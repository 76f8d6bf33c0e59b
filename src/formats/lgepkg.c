/* game_resources.lgepkg assembly (include/meshfs/formats.h, "lgepkg";
 * docs/formats/lgepkg.md). */
#include <errno.h>
#include <md5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "meshfs/util.h"
#include "meshfs/formats.h"

const mfs_format mfs_lgepkg_formats[MFS_LGEPKG_CHUNKS] = {MFS_FMT_VRT, MFS_FMT_TRI, MFS_FMT_TEX,
                                                          MFS_FMT_SPH};

/* MetaAppender's md5.cpp builds each word from digest bytes [4i .. 4i+3]
 * most significant first, then XORs the four. */
uint32_t mfs_lge_hash_word(const uint8_t d[16])
{
    uint32_t h = 0;
    for (int i = 0; i < 4; i++)
        h ^= (uint32_t)d[4 * i] << 24 | (uint32_t)d[4 * i + 1] << 16 |
             (uint32_t)d[4 * i + 2] << 8 | (uint32_t)d[4 * i + 3];
    return h;
}

uint32_t mfs_lge_hash(const void *p, size_t n)
{
    MD5_CTX c;
    uint8_t d[MD5_DIGEST_LENGTH];
    MD5Init(&c);
    MD5Update(&c, p, n);
    MD5Final(d, &c);
    return mfs_lge_hash_word(d);
}

/* strncpy semantics on purpose: the field is zero-filled after the text
 * (the samples' 0xFE fill is MSVC debug memory, not part of the format). */
static void put_field(uint8_t *dst, size_t cap, const char *s)
{
    memset(dst, 0, cap);
    size_t n = s ? strlen(s) : 0;
    if (n > cap - 1)
        n = cap - 1;
    memcpy(dst, s, n);
}

void mfs_lgepkg_encode_header(uint8_t out[MFS_LGEPKG_HEADER_BYTES], const char *name,
                              const char *version, int32_t num_chunks, int32_t total_size)
{
    put_field(out, MFS_LGEPKG_FIELD_BYTES, name);
    put_field(out + 20, MFS_LGEPKG_FIELD_BYTES, version);
    mfs_st_u32(out + 40, (uint32_t)num_chunks);
    mfs_st_u32(out + 44, (uint32_t)total_size);
}

void mfs_lge_encode_header(uint8_t out[MFS_LGE_HEADER_BYTES], uint32_t type, const char *name,
                           int32_t size, uint32_t hash)
{
    mfs_st_u32(out, type);
    put_field(out + 4, MFS_LGE_NAME_BYTES, name);
    mfs_st_u32(out + 36, (uint32_t)size);
    mfs_st_u32(out + 40, hash);
}

/* ---- chunk names ---- */

#define HASHED_PREFIX 22 /* + '~' + 8 hex digits = 31 */

/* Open-addressing set of the names given out so far. */
typedef struct name_set {
    const char **slot;
    size_t cap; /* power of two */
} name_set;

static size_t slot_of(const name_set *s, const char *name)
{
    size_t i = (size_t)XXH3_64bits(name, strlen(name)) & (s->cap - 1);
    while (s->slot[i] && strcmp(s->slot[i], name))
        i = (i + 1) & (s->cap - 1);
    return i;
}

/* 1 if name was free (and is now taken), 0 if already taken. */
static int take(name_set *s, const char *name)
{
    size_t i = slot_of(s, name);
    if (s->slot[i])
        return 0;
    s->slot[i] = name;
    return 1;
}

/* The longest prefix of s of at most max bytes that ends on a UTF-8
 * character boundary (a byte 10xxxxxx continues the previous character). */
static size_t cut_utf8(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static void hashed_name(const char *base, unsigned salt, char out[MFS_LGE_NAME_BYTES])
{
    uint32_t h;
    if (salt == 0) {
        h = mfs_lge_hash(base, strlen(base));
    } else {
        MD5_CTX c;
        uint8_t d[MD5_DIGEST_LENGTH];
        char tail[16];
        int tn = snprintf(tail, sizeof tail, "#%u", salt);
        MD5Init(&c);
        MD5Update(&c, (const uint8_t *)base, strlen(base));
        MD5Update(&c, (const uint8_t *)tail, (size_t)tn);
        MD5Final(d, &c);
        h = mfs_lge_hash_word(d);
    }
    size_t p = cut_utf8(base, HASHED_PREFIX);
    snprintf(out, MFS_LGE_NAME_BYTES, "%.*s~%08x", (int)p, base, h);
}

int mfs_lgepkg_chunk_names(const char *const *bases, size_t n,
                           char (*names)[MFS_LGE_NAME_BYTES], mfs_err *err)
{
    name_set set = {NULL, 16};
    while (set.cap < 2 * n + 2)
        set.cap *= 2;
    set.slot = calloc(set.cap, sizeof *set.slot);
    unsigned char *named = calloc(n ? n : 1, 1);
    if (!set.slot || !named) {
        free(set.slot);
        free(named);
        return mfs_errf(err, "out of memory naming %zu chunks", n);
    }
    /* A short name is what a user would look up: it keeps its own name
     * whenever it is the first to claim it. */
    for (size_t i = 0; i < n; i++) {
        if (strlen(bases[i]) >= MFS_LGE_NAME_BYTES || !bases[i][0])
            continue;
        snprintf(names[i], MFS_LGE_NAME_BYTES, "%s", bases[i]);
        named[i] = take(&set, names[i]);
    }
    for (size_t i = 0; i < n; i++) {
        for (unsigned salt = 0; !named[i]; salt++) {
            hashed_name(bases[i], salt, names[i]);
            named[i] = take(&set, names[i]);
        }
    }
    free(set.slot);
    free(named);
    return 0;
}

/* ---- sizes ---- */

int mfs_lgepkg_size_of(const uint64_t *sizes, size_t n_chunks, uint64_t *size, mfs_err *err)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n_chunks; i++) {
        if (sizes[i] > INT32_MAX)
            return mfs_errf(err, "chunk %zu is %llu bytes; ChunkHeader's i32 size holds at most %d",
                            i, (unsigned long long)sizes[i], INT32_MAX);
        total += MFS_LGE_HEADER_BYTES + sizes[i];
        if (total > INT32_MAX)
            return mfs_errf(err, "package would exceed %d bytes, the most PackageHeader's i32 "
                            "totalSize can state", INT32_MAX);
    }
    if (n_chunks > INT32_MAX)
        return mfs_errf(err, "too many chunks (%zu)", n_chunks);
    *size = MFS_LGEPKG_HEADER_BYTES + total;
    return 0;
}

int mfs_lgepkg_size(const mfs_lgepkg_model *m, size_t n, uint64_t *size, mfs_err *err)
{
    if (n > SIZE_MAX / MFS_LGEPKG_CHUNKS / sizeof(uint64_t))
        return mfs_errf(err, "too many models (%zu)", n);
    uint64_t *sizes = malloc((n ? n : 1) * MFS_LGEPKG_CHUNKS * sizeof *sizes);
    if (!sizes)
        return mfs_errf(err, "out of memory");
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++)
            sizes[i * MFS_LGEPKG_CHUNKS + k] = m[i].chunk[k].length;
    int rc = mfs_lgepkg_size_of(sizes, n * MFS_LGEPKG_CHUNKS, size, err);
    free(sizes);
    return rc;
}

/* ---- assembly ---- */

#define COPY_BUF (1u << 20)

/* Feeds the payload to md5 (md5 non-NULL) or to out, in pieces. */
static int pass(const mfs_lge_src *src, uint8_t *buf, MD5_CTX *md5, mfs_sink *out,
                mfs_err *err)
{
    if (src->mem) {
        if (md5)
            MD5Update(md5, src->mem, (size_t)src->length);
        else
            mfs_put(out, src->mem, (size_t)src->length);
        return 0;
    }
    uint64_t done = 0;
    while (done < src->length) {
        uint64_t want = src->length - done;
        if (want > COPY_BUF)
            want = COPY_BUF;
        ssize_t r = pread(src->fd, buf, (size_t)want, (off_t)(src->offset + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return mfs_errf(err, "reading payload at %llu: %s",
                            (unsigned long long)(src->offset + done), strerror(errno));
        if (r == 0)
            return mfs_errf(err, "payload ends after %llu of %llu bytes",
                            (unsigned long long)done, (unsigned long long)src->length);
        if (md5)
            MD5Update(md5, buf, (size_t)r);
        else
            mfs_put(out, buf, (size_t)r);
        done += (uint64_t)r;
    }
    return 0;
}

/* Model i's four chunks: the header and payload of each. */
static int write_model(const mfs_lgepkg_model *mi, const mfs_lge_src src[MFS_LGEPKG_CHUNKS],
                       uint8_t *buf, mfs_sink *out, mfs_err *err)
{
    int rc = 0;
    for (int k = 0; k < MFS_LGEPKG_CHUNKS && rc == 0; k++) {
        if (src[k].length != mi->chunk[k].length)
            rc = mfs_errf(err, "changed while packing: %llu bytes, were %llu",
                          (unsigned long long)src[k].length,
                          (unsigned long long)mi->chunk[k].length);
        MD5_CTX c;
        uint8_t d[MD5_DIGEST_LENGTH];
        MD5Init(&c);
        if (rc == 0)
            rc = pass(&src[k], buf, &c, NULL, err);
        if (rc == 0) {
            MD5Final(d, &c);
            uint8_t ch[MFS_LGE_HEADER_BYTES];
            mfs_lge_encode_header(ch, MFS_LGE_VERTICES + (uint32_t)k, mi->name,
                                  (int32_t)src[k].length, mfs_lge_hash_word(d));
            mfs_put(out, ch, sizeof ch);
            rc = pass(&src[k], buf, NULL, out, err);
        }
        if (rc < 0)
            mfs_err_prefix(err, "chunk '%s' (.%s)", mi->name,
                           mfs_format_get(mfs_lgepkg_formats[k])->name);
    }
    return rc;
}

int mfs_lgepkg_write(const char *name, const char *version, const mfs_lgepkg_model *m,
                     size_t n, mfs_sink *out, mfs_err *err)
{
    return mfs_lgepkg_write_fetched(name, version, m, n, NULL, out, err);
}

int mfs_lgepkg_write_fetched(const char *name, const char *version, const mfs_lgepkg_model *m,
                             size_t n, const mfs_lgepkg_fetch *f, mfs_sink *out, mfs_err *err)
{
    if (strlen(name) >= MFS_LGEPKG_FIELD_BYTES || strlen(version) >= MFS_LGEPKG_FIELD_BYTES)
        return mfs_errf(err, "package name and version must be at most %d bytes",
                        MFS_LGEPKG_FIELD_BYTES - 1);
    uint64_t size;
    if (mfs_lgepkg_size(m, n, &size, err) < 0)
        return -1;
    uint8_t hdr[MFS_LGEPKG_HEADER_BYTES];
    mfs_lgepkg_encode_header(hdr, name, version, (int32_t)(n * MFS_LGEPKG_CHUNKS),
                             (int32_t)(size - MFS_LGEPKG_HEADER_BYTES));
    mfs_put(out, hdr, sizeof hdr);
    uint8_t *buf = malloc(COPY_BUF);
    if (!buf)
        return mfs_errf(err, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!f) {
            rc = write_model(&m[i], m[i].chunk, buf, out, err);
            continue;
        }
        mfs_lge_src src[MFS_LGEPKG_CHUNKS];
        memset(src, 0, sizeof src);
        if ((rc = f->fetch(f->ctx, i, src, err)) < 0) {
            mfs_err_prefix(err, "chunk '%s'", m[i].name);
            break;
        }
        rc = write_model(&m[i], src, buf, out, err);
        f->release(f->ctx, i, src);
    }
    free(buf);
    if (rc == 0 && out->err)
        rc = mfs_errf(err, "writing package: %s", strerror(out->err));
    return rc;
}

/* Readers for LGE packages (.lgepkg, DataPackager) and single chunks (.lge,
 * MetaAppender), from research/dem_vrt.md Topic B, walked the way the
 * engine's ResourceUnpacker::FindPackageChunk walks them:
 *
 *   PackageHeader  char packageName[20], char versionString[20],
 *                  i32 numChunks, i32 totalSize (= sum of 44 + chunkSize)
 *   numChunks times:
 *   ChunkHeader    u32 type, char chunkName[32], i32 chunkSize, u32 hashNum
 *                  then chunkSize payload bytes
 *
 * hashNum is the XOR of the payload's MD5 digest read as four big-endian
 * words.  The engine looks chunks up by type and name (strncmp over 32
 * bytes) and skips the rest by chunkSize.
 *
 * The committed MetaAppender samples predate the 32-byte name: their name
 * field is 20 bytes (a 32-byte header).  Which layout a file uses is told
 * by size consistency; the old one is read with a warning, since the
 * engine today reads 44-byte headers.
 *
 * Each payload is handed to the reader of its type (.vrt .tri .tex .sph),
 * checked as a file of that type would be, .tri and .sph with the Vertices
 * chunk of the same name as their sibling .vrt; what that reader finds
 * wrong is a violation here, named by chunk. */
#include "readers.h"

#include <md5.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/util.h"

#define PKG_HEADER 48
#define PKG_FIELD 20
#define CHUNK_HEADER 44
#define OLD_CHUNK_HEADER 32
#define TYPE_BASE 0xA0000000u

typedef struct chunk {
    size_t off;         /* of its header */
    uint32_t type;
    const uint8_t *name_field;
    size_t name_cap;    /* 32, or 20 in the old layout */
    char name[33];      /* up to the NUL (or the field's end) */
    uint32_t size;
    uint32_t hash;
    const uint8_t *payload;
} chunk;

static const char *const type_names[] = {"Vertices", "Triangles", "Texture", "BoundingSphere",
                                         "Animation"};
static const char *const type_exts[] = {"vrt", "tri", "tex", "sph", NULL};

static int known_type(uint32_t t)
{
    return t >= TYPE_BASE && t <= TYPE_BASE + 4;
}

static const char *type_name(uint32_t t)
{
    return known_type(t) ? type_names[t - TYPE_BASE] : "unknown";
}

/* MetaAppender's md5.cpp: each word assembled from four digest bytes, most
 * significant first, then XORed. */
static uint32_t md5_word(const uint8_t *p, size_t n)
{
    MD5_CTX c;
    uint8_t d[MD5_DIGEST_LENGTH];
    MD5Init(&c);
    MD5Update(&c, p, n);
    MD5Final(d, &c);
    uint32_t h = 0;
    for (int i = 0; i < 16; i += 4)
        h ^= (uint32_t)d[i] << 24 | (uint32_t)d[i + 1] << 16 | (uint32_t)d[i + 2] << 8 | d[i + 3];
    return h;
}

/* One ChunkHeader at off and its payload; structural trouble is an error. */
static int read_chunk(mfs_rd *r, const uint8_t *p, size_t n, size_t off, size_t hdr, chunk *c)
{
    if (n - off < hdr)
        return mfs_errf(r->err, "offset %zu: chunk header needs %zu bytes but only %zu remain",
                        off, hdr, n - off);
    size_t cap = hdr - 12;
    memset(c, 0, sizeof *c);
    c->off = off;
    c->type = mfs_ld_u32(p + off);
    c->name_field = p + off + 4;
    c->name_cap = cap;
    mfs_rd_name(c->name, sizeof c->name, (const char *)c->name_field, cap);
    int32_t size = mfs_ld_i32(p + off + 4 + cap);
    c->hash = mfs_ld_u32(p + off + 8 + cap);
    if (size < 0)
        return mfs_errf(r->err, "offset %zu: chunk '%s' has a negative size (%ld)", off + 4 + cap,
                        c->name, (long)size);
    if ((uint64_t)size > n - off - hdr)
        return mfs_errf(r->err, "offset %zu: chunk '%s' declares %ld payload bytes but only %zu "
                        "remain", off + 4 + cap, c->name, (long)size, n - off - hdr);
    c->size = (uint32_t)size;
    c->payload = p + off + hdr;
    return 0;
}

/* Walks count chunks from off with headers of hdr bytes; 0 with *end, or
 * -1 with r->err set.  *out grows as chunks are read. */
static int walk(mfs_rd *r, const uint8_t *p, size_t n, size_t off, uint32_t count, size_t hdr,
                chunk **out, size_t *cap, size_t *got, size_t *end)
{
    *got = 0;
    for (uint32_t i = 0; i < count; i++) {
        /* a count beyond what the bytes can hold fails at the first
         * missing header, before anything large is allocated */
        if (mfs_rd_grow(r, (void **)out, cap, *got + 1, sizeof **out) < 0)
            return -1;
        if (read_chunk(r, p, n, off, hdr, &(*out)[*got]) < 0)
            return mfs_err_prefix(r->err, "chunk %lu of %lu", (unsigned long)i,
                                  (unsigned long)count);
        off += hdr + (*out)[*got].size;
        (*got)++;
    }
    *end = off;
    return 0;
}

/* Checks one chunk's own fields (not its payload). */
static void check_fields(mfs_rd *r, size_t i, const chunk *c, int *noted_fill)
{
    if (!known_type(c->type))
        mfs_rd_violation(r, "chunk %zu '%s' at offset %zu: type 0x%08lX is no ChunkType "
                         "(0xA0000000..0xA0000004)", i, c->name, c->off, (unsigned long)c->type);
    const uint8_t *nul = memchr(c->name_field, 0, c->name_cap);
    if (!nul)
        mfs_rd_violation(r, "chunk %zu at offset %zu: name is not NUL-terminated within its %zu "
                         "bytes", i, c->off + 4, c->name_cap);
    else if (nul == c->name_field)
        mfs_rd_warn(r, "chunk %zu at offset %zu: empty name", i, c->off + 4);
    for (const uint8_t *q = nul ? nul : c->name_field + c->name_cap;
         !*noted_fill && q < c->name_field + c->name_cap; q++)
        if (*q) {
            mfs_rd_warn(r, "chunk %zu '%s': name field holds non-zero bytes after its NUL "
                        "(0x%02x at offset %zu; MSVC debug fill?)", i, c->name, *q,
                        (size_t)(q - c->name_field) + c->off + 4);
            *noted_fill = 1;
        }
    uint32_t h = md5_word(c->payload, c->size);
    if (h != c->hash)
        mfs_rd_violation(r, "chunk %zu '%s' at offset %zu: hashNum is 0x%08lX, the payload's "
                         "MD5 folds to 0x%08lX", i, c->name, c->off + c->name_cap + 8,
                         (unsigned long)c->hash, (unsigned long)h);
}

/* The Vertices chunk named like c, for .tri/.sph checks. */
static const chunk *vertices_of(const chunk *v, size_t n, const chunk *c)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].type == TYPE_BASE && !strcmp(v[i].name, c->name))
            return &v[i];
    return NULL;
}

/* Reads c's payload into sub as `meshfs-inspect --check label` would read
 * it as a file: 0, or -1 with e set ("label: reason").  v: the Vertices
 * chunk a .tri or .sph is checked against, or NULL. */
static int read_payload(const chunk *c, const chunk *v, const char *label, mfs_summary *sub,
                        mfs_err *e)
{
    mfs_rd pr;
    mfs_rd_begin(&pr, sub, 1, e);
    const uint8_t *vp = v ? v->payload : NULL;
    size_t vn = v ? v->size : 0;
    int rc;
    switch (c->type - TYPE_BASE) {
    case 0: rc = mfs_read_vrt(&pr, c->payload, c->size); break;
    case 1: rc = mfs_read_tri(&pr, c->payload, c->size, vp, vn, "sibling .vrt"); break;
    case 2: rc = mfs_read_tex(&pr, c->payload, c->size); break;
    default: /* BoundingSphere, the last type with a reader (type_exts) */
        rc = mfs_read_sph(&pr, c->payload, c->size, vp, vn, "sibling .vrt");
        break;
    }
    return mfs_rd_finish(&pr, rc, label);
}

/* Runs the type's reader on c's payload and folds its findings in. */
static void check_payload(mfs_rd *r, size_t i, const chunk *c, const chunk *all, size_t n)
{
    if (!known_type(c->type))
        return;
    const char *ext = type_exts[c->type - TYPE_BASE];
    if (!ext) {
        mfs_rd_warn(r, "chunk %zu '%s': %s payload not checked (no reader)", i, c->name,
                    type_name(c->type));
        return;
    }
    char label[64];
    snprintf(label, sizeof label, "%s.%s", c->name, ext);
    const chunk *v = c->type == TYPE_BASE + 1 || c->type == TYPE_BASE + 3 ? vertices_of(all, n, c)
                                                                          : NULL;
    mfs_summary *sub = malloc(sizeof *sub);
    if (!sub) {
        mfs_rd_violation(r, "chunk %zu '%s': out of memory checking its payload", i, c->name);
        return;
    }
    mfs_err e;
    int rc = read_payload(c, v, label, sub, &e);
    if (rc < 0)
        mfs_rd_violation(r, "chunk %zu at offset %zu: payload: %s", i, c->off, e.msg);
    unsigned kept = sub->n_warnings < MFS_SUMMARY_MAX_WARN ? sub->n_warnings
                                                           : MFS_SUMMARY_MAX_WARN;
    for (unsigned w = 0; w < kept; w++)
        mfs_rd_warn(r, "chunk %zu %s: %s", i, label, sub->warnings[w]);
    mfs_summary *s = r->sum;
    if (c->type == TYPE_BASE) {
        s->meshes++;
        s->vertices += sub->vertices;
    }
    if (c->type == TYPE_BASE + 1)
        s->triangles += sub->triangles;
    if (sub->has_bounds && c->type == TYPE_BASE) {
        mfs_rd_point(r, sub->min);
        mfs_rd_point(r, sub->max);
    }
    free(sub);
}

static int cmp_type_name(const void *a, const void *b)
{
    const chunk *x = *(const chunk *const *)a, *y = *(const chunk *const *)b;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->off < y->off ? -1 : x->off > y->off);
}

/* The engine finds the first chunk of a type and name; a second is dead. */
static void check_unique(mfs_rd *r, chunk *v, size_t n)
{
    if (n < 2)
        return;
    chunk **s = malloc(n * sizeof *s);
    if (!s) {
        mfs_rd_violation(r, "out of memory checking chunk names");
        return;
    }
    for (size_t i = 0; i < n; i++)
        s[i] = &v[i];
    qsort(s, n, sizeof *s, cmp_type_name);
    for (size_t i = 1; i < n; i++)
        if (s[i]->type == s[i - 1]->type && !strcmp(s[i]->name, s[i - 1]->name))
            mfs_rd_violation(r, "chunk at offset %zu repeats %s '%s' of offset %zu: the engine "
                             "only ever finds the first", s[i]->off, type_name(s[i]->type),
                             s[i]->name, s[i - 1]->off);
    free(s);
}

static void check_chunks(mfs_rd *r, chunk *v, size_t n)
{
    int noted_fill = 0;
    for (size_t i = 0; i < n; i++)
        check_fields(r, i, &v[i], &noted_fill);
    check_unique(r, v, n);
    for (size_t i = 0; i < n; i++)
        check_payload(r, i, &v[i], v, n);
}

static void old_layout_warning(mfs_rd *r)
{
    mfs_rd_warn(r, "old MetaAppender layout: 20-byte chunk names (32-byte chunk headers); "
                   "the engine today reads 32-byte names (44-byte headers)");
}

static void check_field(mfs_rd *r, const uint8_t *f, size_t off, const char *what)
{
    if (!memchr(f, 0, PKG_FIELD))
        mfs_rd_violation(r, "offset %zu: %s is not NUL-terminated within %d bytes", off, what,
                         PKG_FIELD);
}

int mfs_read_lgepkg(mfs_rd *r, const uint8_t *p, size_t n)
{
    if (n < PKG_HEADER)
        return mfs_errf(r->err, "file is %zu bytes, shorter than the %d-byte PackageHeader", n,
                        PKG_HEADER);
    mfs_rd_name(r->sum->name, sizeof r->sum->name, (const char *)p, PKG_FIELD);
    check_field(r, p, 0, "packageName");
    check_field(r, p + PKG_FIELD, PKG_FIELD, "versionString");
    int32_t num = mfs_ld_i32(p + 40), total = mfs_ld_i32(p + 44);
    if (num < 0)
        return mfs_errf(r->err, "offset 40: negative numChunks (%ld)", (long)num);
    chunk *v = NULL;
    size_t cap = 0, got = 0, end = 0;
    int rc = walk(r, p, n, PKG_HEADER, (uint32_t)num, CHUNK_HEADER, &v, &cap, &got, &end);
    if (rc < 0 || end != n) {
        /* a package of old chunks reads consistently only with 32 */
        mfs_err keep = *r->err;
        mfs_err scratch;
        mfs_rd alt = *r;
        alt.err = &scratch;
        size_t got2 = 0, end2 = 0;
        if (walk(&alt, p, n, PKG_HEADER, (uint32_t)num, OLD_CHUNK_HEADER, &v, &cap, &got2,
                 &end2) == 0 && end2 == n) {
            old_layout_warning(r);
            rc = 0;
            got = got2;
            end = end2;
        } else if (rc < 0) {
            *r->err = keep;
        } else {
            /* the 44-byte walk stands; re-read it (the retry overwrote v) */
            walk(r, p, n, PKG_HEADER, (uint32_t)num, CHUNK_HEADER, &v, &cap, &got, &end);
        }
    }
    if (rc < 0) {
        free(v);
        return -1;
    }
    if ((int64_t)total != (int64_t)(end - PKG_HEADER))
        mfs_rd_violation(r, "offset 44: totalSize %ld, but the %lu chunks take %zu bytes",
                         (long)total, (unsigned long)got, end - PKG_HEADER);
    if (end < n)
        mfs_rd_violation(r, "offset %zu: %zu bytes after the last chunk", end, n - end);
    /* the engine loads nothing from it: every model of its folder failed */
    if (got == 0)
        mfs_rd_violation(r, "offset 40: numChunks 0, a package with no model");
    check_chunks(r, v, got);
    free(v);
    return 0;
}

int mfs_read_lge(mfs_rd *r, const uint8_t *p, size_t n)
{
    if (n < OLD_CHUNK_HEADER)
        return mfs_errf(r->err, "file is %zu bytes, shorter than a chunk header", n);
    size_t hdr = 0;
    if (n >= CHUNK_HEADER && mfs_ld_i32(p + 36) >= 0 &&
        (uint64_t)mfs_ld_i32(p + 36) == n - CHUNK_HEADER)
        hdr = CHUNK_HEADER;
    else if (mfs_ld_i32(p + 24) >= 0 && (uint64_t)mfs_ld_i32(p + 24) == n - OLD_CHUNK_HEADER)
        hdr = OLD_CHUNK_HEADER;
    if (!hdr)
        return mfs_errf(r->err, "chunkSize disagrees with the file's %zu bytes both as a 44-byte "
                        "header (offset 36: %ld) and as an old 32-byte one (offset 24: %ld)",
                        n, n >= CHUNK_HEADER ? (long)mfs_ld_i32(p + 36) : -1L,
                        (long)mfs_ld_i32(p + 24));
    if (hdr == OLD_CHUNK_HEADER)
        old_layout_warning(r);
    chunk c;
    if (read_chunk(r, p, n, 0, hdr, &c) < 0)
        return -1;
    snprintf(r->sum->name, sizeof r->sum->name, "%s", c.name);
    check_chunks(r, &c, 1);
    return 0;
}

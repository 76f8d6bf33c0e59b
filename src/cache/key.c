/* Cache keys: what a view's bytes depend on, hashed with XXH3-128.
 *
 * The hashed stream is a sequence of tagged fields (docs/cache.md, "Keys"):
 *   'S' u64 len, bytes            a string or byte run
 *   'U' u64                       an integer
 *   'D' u64 len, path, u64 size, 16-byte hash    one input file
 *   'A' u64 len, path                           a path tried, not found
 *   'L' u64 len, path, u64 count, 16-byte hash  a folder searched for a name
 * with all integers little-endian.  Each field says how long it is, so the
 * stream parses back into exactly one field sequence: no two different
 * sequences hash the same bytes. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cache_int.h"
#include "meshfs/util.h"

/* The key layouts' versions.  A change to what a key holds moves its
 * domain, so entries of the old layout are simply never asked for (and
 * age out by LRU), without touching the output version:
 *   view v2, manifest v3: the set of formats a run or mount is configured
 *     with left the option text (tangents and the texture search in every
 *     conversion, docs/cache.md "Keys"), and a view that does not read the
 *     texture leaves the texture search's inputs out; view v1 and manifest
 *     v2 held "tangents;" and "textures;" and so keyed apart what is now
 *     shared. */
#define VIEW_DOMAIN "meshfs.view.v2"
#define MANIFEST_DOMAIN "meshfs.manifest.v3"

static void put_u64(XXH3_state_t *st, uint64_t v)
{
    uint8_t b[8];
    mfs_st_u32(b, (uint32_t)v);
    mfs_st_u32(b + 4, (uint32_t)(v >> 32));
    XXH3_128bits_update(st, b, 8);
}

static void put_tag(XXH3_state_t *st, char tag)
{
    XXH3_128bits_update(st, &tag, 1);
}

static void put_run(XXH3_state_t *st, const void *p, size_t n)
{
    put_u64(st, n);
    if (n)
        XXH3_128bits_update(st, p, n);
}

int mfs_cache_key_init(mfs_cache_keyb *kb, const char *domain, mfs_err *err)
{
    XXH3_state_t *st = XXH3_createState();
    if (!st) {
        kb->state = NULL;
        return mfs_errf(err, "cache key: out of memory");
    }
    XXH3_128bits_reset(st);
    kb->state = st;
    mfs_cache_key_add_str(kb, domain);
    return 0;
}

void mfs_cache_key_add_bytes(mfs_cache_keyb *kb, const void *p, size_t n)
{
    put_tag(kb->state, 'S');
    put_run(kb->state, p, n);
}

void mfs_cache_key_add_str(mfs_cache_keyb *kb, const char *s)
{
    mfs_cache_key_add_bytes(kb, s ? s : "", s ? strlen(s) : 0);
}

void mfs_cache_key_add_u64(mfs_cache_keyb *kb, uint64_t v)
{
    put_tag(kb->state, 'U');
    put_u64(kb->state, v);
}

void mfs_cache_key_add_dep(mfs_cache_keyb *kb, const char *path, uint64_t size,
                           const uint8_t hash[16])
{
    put_tag(kb->state, 'D');
    put_run(kb->state, path ? path : "", path ? strlen(path) : 0);
    put_u64(kb->state, size);
    XXH3_128bits_update(kb->state, hash, 16);
}

void mfs_cache_key_final(mfs_cache_keyb *kb, mfs_cache_key *out)
{
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(kb->state));
    memcpy(out->b, canon.digest, 16);
    mfs_cache_key_discard(kb);
}

void mfs_cache_key_discard(mfs_cache_keyb *kb)
{
    XXH3_freeState(kb->state);
    kb->state = NULL;
}

void mfs_cache_key_hex(const mfs_cache_key *k, char out[33])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = digits[k->b[i] >> 4];
        out[2 * i + 1] = digits[k->b[i] & 15];
    }
    out[32] = '\0';
}

void mfs_cache_key_path(const mfs_cache_key *k, char suffix, char out[MFS_CACHE_PATH_MAX])
{
    /* v2/ab/<30 hex>.e : the first byte picks one of 256 shard directories,
     * enough to keep a 2 GiB cache of ~100 KiB views near 100 files each. */
    char hex[33];
    mfs_cache_key_hex(k, hex);
    size_t n = 0;
    memcpy(out, MFS_CACHE_ENTRY_DIR "/", sizeof MFS_CACHE_ENTRY_DIR);
    n += sizeof MFS_CACHE_ENTRY_DIR;
    out[n++] = hex[0];
    out[n++] = hex[1];
    out[n++] = '/';
    memcpy(out + n, hex + 2, 30);
    n += 30;
    out[n++] = '.';
    out[n++] = suffix;
    out[n] = '\0';
}

int mfs_cache_view_key(const mfs_dep *deps, uint32_t ndeps, const char *format,
                       const char *options, const char *version, mfs_cache_key *out,
                       mfs_err *err)
{
    return mfs_cache_view_key_for(deps, ndeps, 1, format, options, version, out, err);
}

int mfs_cache_view_key_for(const mfs_dep *deps, uint32_t ndeps, int texture_inputs,
                           const char *format, const char *options, const char *version,
                           mfs_cache_key *out, mfs_err *err)
{
    mfs_cache_keyb kb;
    if (mfs_cache_key_init(&kb, VIEW_DOMAIN, err) < 0)
        return -1;
    for (uint32_t i = 0; i < ndeps; i++) {
        const mfs_dep *d = &deps[i];
        if (d->texture && !texture_inputs)
            continue; /* the texture search's: an input of .tex alone */
        if (d->kind == MFS_DEP_FILE) {
            mfs_cache_key_add_dep(&kb, d->path, d->size, d->hash);
            continue;
        }
        put_tag(kb.state, d->kind == MFS_DEP_LISTING ? 'L' : d->kind == MFS_DEP_UNREADABLE ? 'U' : 'A');
        put_run(kb.state, d->path ? d->path : "", d->path ? strlen(d->path) : 0);
        if (d->kind == MFS_DEP_LISTING) {
            put_u64(kb.state, d->size);
            XXH3_128bits_update(kb.state, d->hash, 16);
        } else if (d->kind == MFS_DEP_UNREADABLE) {
            XXH3_128bits_update(kb.state, d->hash, 16);
        }
    }
    mfs_cache_key_add_str(&kb, format);
    mfs_cache_key_add_str(&kb, options);
    mfs_cache_key_add_str(&kb, version);
    mfs_cache_key_final(&kb, out);
    return 0;
}

int mfs_cache_manifest_key(const char *model_path, uint64_t model_size,
                           const uint8_t model_hash[16], const char *options,
                           const char *version, mfs_cache_key *out, mfs_err *err)
{
    mfs_cache_keyb kb;
    if (mfs_cache_key_init(&kb, MANIFEST_DOMAIN, err) < 0)
        return -1;
    mfs_cache_key_add_dep(&kb, model_path, model_size, model_hash);
    mfs_cache_key_add_str(&kb, options);
    mfs_cache_key_add_str(&kb, version);
    mfs_cache_key_final(&kb, out);
    return 0;
}

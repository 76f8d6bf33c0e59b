/* game_resources.lgepkg: the LGE engine's resource package (DataPackager's
 * output), assembled from the .vrt .tri .tex .sph views of the models in one
 * folder (docs/formats/lgepkg.md; layout from research/dem_vrt.md Topic B).
 *
 *   PackageHeader (48 B): char name[20], char version[20], i32 numChunks,
 *                         i32 totalSize = sum over chunks of (44 + payload)
 *   per model, in order, four chunks .vrt .tri .tex .sph, each
 *   ChunkHeader (44 B):   u32 type (0xA0000000 + 0..3), char name[32],
 *                         i32 payload size, u32 hash
 *   followed by the payload: the view's exact bytes.
 *
 * The hash is MetaAppender's "compressed MD5": the XOR of the four words of
 * the payload's MD5 digest, each word read big-endian.  MD5 comes from libmd.
 *
 * This part is pure: names, headers, sizes and the assembly itself.  Where
 * the views come from (the mount's cache, meshfs-convert's output files) is
 * the caller's business; it hands over each payload as bytes or an fd range. */
#ifndef MESHFS_LGEPKG_H
#define MESHFS_LGEPKG_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/util.h"

#define MFS_LGEPKG_FILE_NAME "game_resources.lgepkg" /* the engine hard-codes it */
#define MFS_LGEPKG_HEADER_BYTES 48
#define MFS_LGEPKG_FIELD_BYTES 20   /* name and version fields, NUL included */
#define MFS_LGE_HEADER_BYTES 44     /* ChunkHeader, 32-byte name (current source) */
#define MFS_LGE_OLD_HEADER_BYTES 32 /* the committed samples: 20-byte name */
#define MFS_LGE_NAME_BYTES 32       /* name field, NUL included: <= 31 bytes */
#define MFS_LGE_OLD_NAME_BYTES 20
#define MFS_LGEPKG_CHUNKS 4         /* per model */
#define MFS_LGEPKG_DEFAULT_NAME "game_resources"
#define MFS_LGEPKG_DEFAULT_VERSION "1.0"

/* ChunkType (MetaAppender's ChunkHeader.h; "Trianges" sic in the source). */
enum {
    MFS_LGE_VERTICES = 0xA0000000u,
    MFS_LGE_TRIANGLES = 0xA0000001u,
    MFS_LGE_TEXTURE = 0xA0000002u,
    MFS_LGE_SPHERE = 0xA0000003u,
    MFS_LGE_ANIMATION = 0xA0000004u,
};

/* The views a package needs, in chunk order; chunk k has type
 * MFS_LGE_VERTICES + k. */
extern const mfs_format mfs_lgepkg_formats[MFS_LGEPKG_CHUNKS];
#define MFS_LGEPKG_NEEDS ((1u << MFS_FMT_VRT) | (1u << MFS_FMT_TRI) | (1u << MFS_FMT_TEX) | \
                          (1u << MFS_FMT_SPH))

/* XOR of the four big-endian words of an MD5 digest. */
uint32_t mfs_lge_hash_word(const uint8_t digest[16]);

/* MD5 of bytes in memory, folded to the hash word. */
uint32_t mfs_lge_hash(const void *p, size_t n);

/* Encoders; names longer than their field are cut (callers validate). */
void mfs_lgepkg_encode_header(uint8_t out[MFS_LGEPKG_HEADER_BYTES], const char *name,
                              const char *version, int32_t num_chunks, int32_t total_size);
void mfs_lge_encode_header(uint8_t out[MFS_LGE_HEADER_BYTES], uint32_t type, const char *name,
                           int32_t size, uint32_t hash);

/* Chunk names for a folder's models.  bases[i] is model i's view base name
 * (as the views are named: lowercased with lowercase_names).  A base of at
 * most 31 bytes is its own chunk name.  A longer one becomes its first
 * bytes (at most 22, not splitting a UTF-8 sequence), '~' and 8 lowercase
 * hex digits of mfs_lge_hash(base): 31 bytes at most.  Since the engine
 * looks chunks up by type and name, no two models may share a name: short
 * names are placed first, in the given order; a name already taken (a
 * duplicate base, a short name shaped like a hashed one, a hash collision)
 * is replaced by the hashed form of "<base>#1", "#2", ... until unique.
 * Names depend only on the set of bases and their order.
 * Returns 0, or -1 (out of memory). */
int mfs_lgepkg_chunk_names(const char *const *bases, size_t n,
                           char (*names)[MFS_LGE_NAME_BYTES], mfs_err *err);

/* One payload: bytes in memory (mem non-NULL), or length bytes of fd from
 * offset (read with pread, so one fd may serve several sources). */
typedef struct mfs_lge_src {
    const uint8_t *mem;
    int fd;
    uint64_t offset, length;
} mfs_lge_src;

/* A model's four chunks under one name, in mfs_lgepkg_formats order. */
typedef struct mfs_lgepkg_model {
    char name[MFS_LGE_NAME_BYTES];
    mfs_lge_src chunk[MFS_LGEPKG_CHUNKS];
} mfs_lgepkg_model;

/* The package's exact size: 48 + sum(44 + payload length), from the
 * lengths alone.  totalSize and each payload size are i32 on disk: -1 with
 * err when the package or a payload would not fit. */
int mfs_lgepkg_size_of(const uint64_t *payload_sizes, size_t n_chunks, uint64_t *size,
                       mfs_err *err);
int mfs_lgepkg_size(const mfs_lgepkg_model *m, size_t n, uint64_t *size, mfs_err *err);

/* Writes the whole package to out: the header, then each model's four
 * chunks.  Every payload is read twice (hashed, then copied), so nothing
 * needs to fit in memory; a payload that reads short is an error.
 * name/version: at most 19 bytes each.  Returns 0 or -1 with err; the sink
 * is not finished. */
int mfs_lgepkg_write(const char *name, const char *version, const mfs_lgepkg_model *m,
                     size_t n, mfs_sink *out, mfs_err *err);

/* Payloads fetched one model at a time: a folder of 20,000 models holding
 * every view open at once would need 80,000 descriptors, past the usual
 * limit ("Too many open files").  fetch fills model i's four sources;
 * release(ctx, i, chunk) follows each fetch that succeeded. */
typedef struct mfs_lgepkg_fetch {
    int (*fetch)(void *ctx, size_t i, mfs_lge_src chunk[MFS_LGEPKG_CHUNKS], mfs_err *err);
    void (*release)(void *ctx, size_t i, mfs_lge_src chunk[MFS_LGEPKG_CHUNKS]);
    void *ctx;
} mfs_lgepkg_fetch;

/* mfs_lgepkg_write with payloads from f: m gives the names and each
 * chunk's length (the package's size and header are made from them first),
 * f the bytes; a fetched source of another length is an error ("...
 * changed while packing"). */
int mfs_lgepkg_write_fetched(const char *name, const char *version, const mfs_lgepkg_model *m,
                             size_t n, const mfs_lgepkg_fetch *f, mfs_sink *out, mfs_err *err);

#endif

/* The formats layer's face (src/formats/), in three parts: the conversion
 * options, the output formats and their writers, and the LGE resource
 * package assembled from four of them. */
#ifndef MESHFS_FORMATS_H
#define MESHFS_FORMATS_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/scene.h"
#include "meshfs/util.h"

/* ---- options ---- */

/* Conversion options: everything besides input bytes that decides output.
 *
 * Each format declares which options it reads (mfs_format_info.options), and
 * only those enter its cache key, so changing an option that affects .fmi
 * alone leaves the cached .gmf valid. */

struct mfs_err;

typedef enum mfs_opt_bit {
    MFS_OPT_PRETRANS = 1u << 0,        /* accepted for compatibility; no writer reads it
                                          (placed geometry is .fmd's default, see fmd_raw) */
    MFS_OPT_FMI_TEXTURES = 1u << 1,    /* fmi: texture lines instead of UNKNOWN */
    MFS_OPT_REVERSE_WINDING = 1u << 2, /* tri: reverse every triangle */
    MFS_OPT_SOURCE_FRAME = 1u << 3,    /* import: keep the importer's raw frame */
    MFS_OPT_MODEL_PATH = 1u << 4,      /* fmi model= line, dem model name (model_path) */
    MFS_OPT_VRT_PLAIN = 1u << 5,       /* vrt: the document's 8-float vertex, not the engine's 64 bytes */
    MFS_OPT_FMD_RAW = 1u << 6,         /* fmd: FMC's raw layout (node matrices not applied) */
} mfs_opt_bit;

typedef struct mfs_options {
    int pretrans;
    int fmi_textures;
    int reverse_winding;
    int source_frame;
    int vrt_plain;          /* vrt_layout=plain (default: skinned, 64-byte vertices) */
    int fmd_raw;            /* fmd: vertices as stored in the source, not placed */
    int importer;           /* mfs_importer (meshfs/import.h): auto or assimp; every
                               view depends on it (src/mount/convert.c keys it) */
    /* Path of the model relative to the engine's models/ folder, without
     * extension, e.g. "vehicles/car".  Set by the caller from the output
     * layout; the .fmi model= line and the .dem model name use it
     * (docs/formats/fmi.md, dem.md). */
    const char *model_path;
} mfs_options;

void mfs_options_default(mfs_options *o);

/* Sets vrt_plain from a vrt_layout value ("skinned" or "plain"); -1 with err
 * naming the value otherwise.  Shared by the mount and meshfs-convert. */
int mfs_options_set_vrt_layout(mfs_options *o, const char *value, struct mfs_err *err);

/* Canonical text of the options selected by mask ("pretrans=1;..."), for
 * cache keys and logs.  Returns the length written (truncated to n-1). */
size_t mfs_options_key(const mfs_options *o, unsigned mask, char *buf, size_t n);

/* ---- formats ---- */

/* The output formats and their writers.
 *
 * One writer per file in src/formats/, one page per format in docs/formats/.
 * A writer takes a validated scene in the canonical frame (scene.h), what
 * has been prepared from it (optional, below) and the options, writes its
 * whole output to the sink, and returns 0, or -1 with err set.  Writers are
 * pure: same scene and options give the same bytes, with or without the
 * prepared data. */

typedef enum mfs_format {
    MFS_FMT_FMD,
    MFS_FMT_FMI,
    MFS_FMT_GMF,
    MFS_FMT_DEM,
    MFS_FMT_VRT,
    MFS_FMT_TRI,
    MFS_FMT_SPH,
    MFS_FMT_TEX,
    MFS_FMT_COUNT
} mfs_format;

#define MFS_FMT_ALL ((1u << MFS_FMT_COUNT) - 1)

/* game_resources.lgepkg is not a per-model writer but one file per folder
 * (meshfs/lgepkg.h).  It has the bit after the writers' in a format mask;
 * MFS_FMT_ALL stays the per-model writers, the only ones a worker is asked
 * for.  The default is every view plus the package. */
#define MFS_FMT_LGEPKG_BIT (1u << MFS_FMT_COUNT)
#define MFS_FMT_DEFAULT (MFS_FMT_ALL | MFS_FMT_LGEPKG_BIT)

/* What several writers derive alike from one scene, made once per job and
 * passed to each writer of the job: today the merged model-space mesh behind
 * .vrt, .tri and .sph (src/formats/runtime.h), built by the first of them
 * to ask.  It lives with the job, not in a process-wide cache, so nothing
 * outlives the conversion and no writer needs to know which others run.
 * Writers may share it from several threads at once.  A writer given NULL
 * (a unit test, a one-off call) builds what it needs itself. */
typedef struct mfs_prepared mfs_prepared;

/* Prepared data for s, which must outlive it; nothing is built yet.  NULL
 * when out of memory: the writers then each build their own. */
mfs_prepared *mfs_prepared_new(const mfs_scene *s);
void mfs_prepared_free(mfs_prepared *p);

/* prep: made for s, or NULL. */
typedef int (*mfs_writer_fn)(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o,
                             mfs_sink *out, mfs_err *err);

typedef struct mfs_format_info {
    mfs_format id;
    const char *name;      /* "fmd": also the file extension */
    mfs_writer_fn write;
    unsigned options;      /* mfs_opt_bit set this writer reads */
    int reads_image;       /* reads scene->image (the texture), so its key
                              holds the texture search's inputs
                              (mfs_dep.texture) */
} mfs_format_info;

const mfs_format_info *mfs_format_get(mfs_format f);

/* By name or extension ("fmd", case-insensitive); NULL if unknown. */
const mfs_format_info *mfs_format_find(const char *name);

/* Parses "fmd,gmf,..." (or "fmd:gmf", "fmd+gmf": inside a mount's -o list
 * commas separate options) into a bit mask; -1 with err on an unknown name.
 * "lgepkg" sets MFS_FMT_LGEPKG_BIT, "all" means MFS_FMT_DEFAULT. */
int mfs_format_parse_list(const char *list, unsigned *mask, mfs_err *err);
/* The other way: "dem:gmf:lgepkg" (names in format order, lgepkg last)
 * into buf, cut to n like snprintf; what mfs_format_parse_list reads back. */
void mfs_format_list_text(unsigned mask, char *buf, size_t n);

/* The writers (src/formats/<name>.c). */
int mfs_write_fmd(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_fmi(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_gmf(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_dem(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_vrt(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_tri(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_sph(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_tex(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);

/* ---- lgepkg ---- */

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

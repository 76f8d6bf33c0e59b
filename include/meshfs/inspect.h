/* Strict readers for every meshfs output format (docs/inspect.md).
 *
 * These readers are the project's second opinion on the writers: they are
 * written from the format documents, share nothing with src/formats/ but the
 * byte helpers, and never trust a count.  Every count is checked against the
 * bytes left before anything is allocated or read, recursion is bounded, and
 * a corrupt file yields an error naming the reason (and offset or line).
 *
 * Two kinds of findings:
 *   - errors: the structure cannot be read (truncation, impossible counts,
 *     bad magic); the call fails whatever `check` says;
 *   - violations: the structure reads but breaks an invariant (index out of
 *     range, weights not summing to 1, bytes after the end, ...).  With
 *     `check` the first one fails the call; without it they are recorded as
 *     warnings and the call succeeds.
 * Warnings proper (tolerated oddities such as the mislabeled colour arrays of
 * real Leadwerks files) never fail a call. */
#ifndef MESHFS_INSPECT_H
#define MESHFS_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "meshfs/err.h"

#define MFS_SUMMARY_MAX_WARN 16
#define MFS_SUMMARY_WARN_LEN 240
#define MFS_SUMMARY_MAX_ANIMS 32
#define MFS_SUMMARY_NAME_LEN 64

/* Deepest node/block nesting a reader follows before giving up. */
#define MFS_INSPECT_MAX_DEPTH 256

typedef struct mfs_summary {
    char format[8];       /* "fmd" "fmi" "gmf" "dem" "vrt" "tri" "sph" "tex" "lgepkg" "lge"
                             (.mdl reads as "gmf") */
    int version;          /* fmd 1, gmf 1 or 2, dem 10; 0 where the format has none */
    char name[MFS_SUMMARY_NAME_LEN]; /* model name where the format has one
                                        (fmi model=, dem model, gmf root name,
                                        lgepkg packageName, lge chunkName) */
    uint64_t meshes, vertices, triangles, bones, nodes, animations;

    /* Axis-aligned box of all vertices where the target engine draws them,
     * in the file's own frame (docs/inspect.md, "Bounds"): gmf sums only
     * NODE/MESH translations, as the legacy Leadwerks loader does; fmd is
     * the vertices as stored, as FGE draws them; dem and vrt are model space
     * as stored; lgepkg/lge the union of their Vertices chunks; tri and tex
     * have none.  cmin/cmax: the same box in meshfs's canonical frame
     * (right-handed, +Y up).  For .sph: the sphere's box. */
    int has_bounds;
    float min[3], max[3];
    float cmin[3], cmax[3];

    /* .sph only */
    int has_sphere;
    float center[3], radius;

    /* .tri/.sph: the sibling .vrt that was read ("" when none was found). */
    char sibling[256];

    /* Animation names in file order (gmf v2, dem sequences); "" when the
     * format stores none.  animations may exceed the names kept here. */
    unsigned n_anim_names;
    char anim_names[MFS_SUMMARY_MAX_ANIMS][MFS_SUMMARY_NAME_LEN];

    /* Warnings (and, without check, violations).  n_warnings counts all of
     * them; only the first MFS_SUMMARY_MAX_WARN are kept. */
    unsigned n_warnings;
    char warnings[MFS_SUMMARY_MAX_WARN][MFS_SUMMARY_WARN_LEN];

    /* Violations found (each also either failed the call or became a
     * warning). */
    unsigned n_violations;

    /* .tex only: the TextureHeader as read (TexelFormat 0 RGB, 1 BGR,
     * 2 BGRA, 3 RGBA). */
    int has_texture;
    int32_t tex_width, tex_height, tex_depth;
    unsigned tex_gpu_format, tex_image_format;
} mfs_summary;

/* Reads the file at path (format by extension, else by magic).  For .tri and
 * .sph the sibling .vrt with the same stem in the same folder is read too and
 * indices/sphere are checked against it; a missing sibling is a warning.
 * Returns 0, or -1 with err set ("path: reason").  out is filled as far as
 * the file could be read, also on failure. */
int mfs_inspect_file(const char *path, int check, mfs_summary *out, mfs_err *err);

/* Same for bytes in memory; name picks the format by its extension (else by
 * magic) and prefixes messages.  No sibling lookup. */
int mfs_inspect_buffer(const char *name, const uint8_t *data, size_t n, int check,
                       mfs_summary *out, mfs_err *err);

/* Like mfs_inspect_buffer, with the sibling .vrt given explicitly for a .tri
 * or .sph (vrt NULL: treated as missing). */
int mfs_inspect_buffer_with_vrt(const char *name, const uint8_t *data, size_t n,
                                const uint8_t *vrt, size_t vrt_n, int check,
                                mfs_summary *out, mfs_err *err);

/* Writes the summary as one JSON object on one line followed by '\n'; the
 * fields are documented in docs/inspect.md.  error is NULL when the file
 * was read (and checked) without error. */
void mfs_summary_json(FILE *out, const char *file, const mfs_summary *s, const char *error);

/* Writes the human-readable summary (a few lines, "file: ..." first); the
 * caller reports an error itself. */
void mfs_summary_print(FILE *out, const char *file, const mfs_summary *s);

/* The readers themselves and their helpers are internal to src/inspect/
 * (reader.h, readers.h there). */

#endif

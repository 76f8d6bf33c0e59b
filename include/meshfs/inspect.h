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

/* ------------------------------------------------------------------------
 * Reader internals, shared by the files in src/inspect/ only (they define
 * MFS_INSPECT_READER before including this header).
 */
#ifdef MFS_INSPECT_READER

/* One reading in progress. */
typedef struct mfs_rd {
    int check;
    /* The name ends in .mdl: Leadwerks 3/4 composes full limb matrices, so a
     * rotated or scaled NODE/MESH is only a warning there; a .gmf (or a file
     * told by its magic) is for the legacy loader that keeps translations. */
    int mdl;
    mfs_summary *sum;
    mfs_err *err;
    char first_violation[MFS_ERR_MAX];
} mfs_rd;

/* A bounds-checked cursor over bytes. */
typedef struct mfs_cur {
    const uint8_t *p;
    size_t n, off;
} mfs_cur;

/* Counts elements failing one invariant, remembering the first. */
typedef struct mfs_tally {
    uint64_t n, first;
    double value;
} mfs_tally;

static inline void mfs_tally_add(mfs_tally *t, uint64_t index, double value)
{
    if (t->n++ == 0) {
        t->first = index;
        t->value = value;
    }
}

static inline size_t mfs_cur_left(const mfs_cur *c) { return c->n - c->off; }

void mfs_rd_warn(mfs_rd *r, const char *fmt, ...) MFS_PRINTF(2, 3);
void mfs_rd_violation(mfs_rd *r, const char *fmt, ...) MFS_PRINTF(2, 3);

/* r = a * b for row-major 4x4 floats (r may alias a or b).  Column-vector
 * files (fmd) compose parent * child with it, row-vector ones (gmf)
 * child * parent. */
void mfs_rd_mat_mul(float r[16], const float a[16], const float b[16]);

/* Grows the model-space box by p (file frame). */
void mfs_rd_point(mfs_rd *r, const float p[3]);

/* The row (or column) that makes a matrix affine is 0 0 0 1; importers
 * leave float noise there (1e-8, 0.99999994), so 1e-5 is allowed. */
int mfs_rd_affine_row(float a, float b, float c, float d);

/* 0: unit within 1e-3; 1: exactly zero; 2: otherwise (len set). */
int mfs_rd_normal_class(const float n[3], double *len);
int mfs_rd_finite3(const float p[3]);

/* Cursor reads: -1 with r->err set ("offset N: <what> needs 4 bytes, ...")
 * when the bytes are not there. */
int mfs_cur_need(mfs_rd *r, const mfs_cur *c, uint64_t bytes, const char *what);
int mfs_cur_i32(mfs_rd *r, mfs_cur *c, int32_t *v, const char *what);
int mfs_cur_u32(mfs_rd *r, mfs_cur *c, uint32_t *v, const char *what);
/* A count: non-negative, and count * unit bytes must remain. */
int mfs_cur_count(mfs_rd *r, mfs_cur *c, uint64_t unit, const char *what, uint32_t *count);
void mfs_cur_floats(mfs_cur *c, float *out, unsigned k); /* caller checked */

/* Grows *arr (elements of size sz) to hold at least need; -1 on ENOMEM. */
int mfs_rd_grow(mfs_rd *r, void **arr, size_t *cap, size_t need, size_t sz);

/* Copies at most n bytes of s as a printable name into dst (cap bytes). */
void mfs_rd_name(char *dst, size_t cap, const char *s, size_t n);
void mfs_rd_anim_name(mfs_rd *r, const char *s, size_t n);

int mfs_read_fmd(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_fmi(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_gmf(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_dem(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_vrt(mfs_rd *r, const uint8_t *p, size_t n);
/* vrt: the sibling's bytes or NULL; vrt_name for messages. */
int mfs_read_tri(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name);
int mfs_read_sph(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name);
int mfs_read_tex(mfs_rd *r, const uint8_t *p, size_t n);
/* LGE package and single chunk (src/inspect/lgepkg.c); payloads go through
 * the readers above by their type. */
int mfs_read_lgepkg(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_lge(mfs_rd *r, const uint8_t *p, size_t n);

#endif /* MFS_INSPECT_READER */

#endif

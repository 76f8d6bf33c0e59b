/* What every format reader in src/inspect/ reads with: the reading in
 * progress (mfs_rd) and how it records findings, a bounds-checked cursor,
 * and small geometry checks (src/inspect/reader.c).
 *
 * Its own header, apart from the public meshfs/inspect.h and from the
 * dispatcher (inspect.c), so that the readers depend on these helpers only:
 * a reader that runs another (lgepkg.c on its payloads) goes through
 * readers.h, never back through the dispatcher.
 *
 * Internal to src/inspect/; not part of the public contract. */
#ifndef MESHFS_INSPECT_READER_H
#define MESHFS_INSPECT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/inspect.h"

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

/* Starts a reading into sum (cleared, as is err; neither may be NULL). */
void mfs_rd_begin(mfs_rd *r, mfs_summary *sum, int check, mfs_err *err);

/* Ends it: rc is the reader's result.  With check, a structure that read
 * but broke an invariant fails here, with the first violation (and how
 * many more) as the error; a failure's message is prefixed with "name: ".
 * Returns the final result. */
int mfs_rd_finish(mfs_rd *r, int rc, const char *name);

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

#endif

/* The neighbour search behind smoothing and tangents (near.h).
 *
 * assimp's SpatialSort sorts the vertices by their distance along a fixed
 * direction and scans the slab [d - r, d + r) around a query: on a large
 * surface that slab holds hundreds of vertices for every one that is near
 * (most of the time of a cold conversion of a 1M-triangle OBJ went there).
 * Here a hash grid with cells of 4r (a little more) narrows the candidates
 * to the cells within r of the point (one to eight, 3.4 on average); each candidate then passes SpatialSort's
 * own tests (the slab, then the float distance), so the same vertices are
 * found, and the few found are sorted by SpatialSort's key so that they come
 * in its order.  No Debian library answers a fixed-radius query with those
 * exact float tests (meshoptimizer only welds exact duplicates), so the grid
 * is a short one of our own.
 *
 * Why the 8 cells hold every answer: a vertex q passes the distance test
 * only if |q_k - p_k| < r on every axis (the float sum of squares is at
 * least each square, and rounding is monotonic), and with cells of
 * 4r (1 + 2^-10) computed in double, the cell coordinates of p and q then
 * differ by less than 0.2498, a margin far beyond the rounding of the
 * double arithmetic (cell coordinates are below 2^21): a neighbour cell on
 * an axis is needed only when p is within its first or last quarter. */
#include "near.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NEAR_MAX_CELL (1u << 20) /* per axis; keys pack 3 x 21 bits */

/* assimp's SpatialSort plane: the direction and the float projection. */
static void plane_normal(float n[3])
{
    n[0] = 0.8523f, n[1] = 0.34321f, n[2] = 0.5736f;
    float l = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]), inv = 1.0f / l;
    n[0] *= inv, n[1] *= inv, n[2] *= inv;
}

static float project(const mfs_near *f, const float p[3])
{
    return (p[0] - f->centroid[0]) * f->normal[0] + (p[1] - f->centroid[1]) * f->normal[1] +
           (p[2] - f->centroid[2]) * f->normal[2];
}

/* SpatialSort's order: by key, ties by index (std::sort on its small
 * arrays keeps insertion order, which is index order). */
static int before(const float *proj, uint32_t a, uint32_t b)
{
    float x = proj[a], y = proj[b];
    if (x != y)
        return x < y;
    return a < b;
}

static int cmp_proj(const void *a, const void *b, void *by_vertex)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    return before(by_vertex, i, j) ? -1 : before(by_vertex, j, i) ? 1 : 0;
}

static void sort_found(const float *proj, uint32_t *v, uint32_t k)
{
    if (k > 32) {
        qsort_r(v, k, sizeof *v, cmp_proj, (void *)proj);
        return;
    }
    for (uint32_t i = 1; i < k; i++) {
        uint32_t x = v[i], j = i;
        for (; j > 0 && before(proj, x, v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static uint64_t cell_key(uint64_t cx, uint64_t cy, uint64_t cz)
{
    return (cx << 42) | (cy << 21) | cz;
}

static uint32_t slot_of(const struct mfs_near_slot *slots, uint32_t mask, uint64_t key)
{
    uint32_t s = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (slots[s].key && slots[s].key != key + 1)
        s = (s + 1) & mask;
    return s;
}

/* Doubles the table (cells are few next to vertices: duplicates and close
 * corners share one, so the table starts small and stays in cache). */
static int grow(mfs_near *f)
{
    uint32_t cap = (f->mask + 1) * 2;
    struct mfs_near_slot *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (uint32_t s = 0; s <= f->mask; s++)
        if (f->slots[s].key)
            t[slot_of(t, cap - 1, f->slots[s].key - 1)] = f->slots[s];
    free(f->slots);
    f->slots = t;
    f->mask = cap - 1;
    return 0;
}

/* Builds the grid; 1 when the positions or radius do not suit one (then
 * the sorted fallback answers), -1 out of memory. */
static int grid_build(mfs_near *f)
{
    const float (*pos)[3] = f->pos;
    uint32_t n = f->n;
    if (!(f->r > 0) || !isfinite(f->r))
        return 1;
    double lo[3], hi[3], cell = 4.0 * (double)f->r * (1.0 + 1.0 / 1024);
    for (int k = 0; k < 3; k++)
        lo[k] = hi[k] = pos[0][k];
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            double v = pos[i][k];
            if (!isfinite(v))
                return 1;
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
    for (int k = 0; k < 3; k++)
        if ((hi[k] - lo[k]) / cell >= NEAR_MAX_CELL - 2)
            return 1;
    memcpy(f->origin, lo, sizeof lo);
    f->inv_cell = 1.0 / cell;
    f->mask = 1023;
    f->slots = calloc(f->mask + 1, sizeof *f->slots);
    f->cell_start = calloc((size_t)n + 1, sizeof *f->cell_start); /* counts first */
    f->members = malloc(sizeof *f->members * n);
    uint32_t *cell_of = malloc(sizeof *cell_of * n);
    if (!f->slots || !f->cell_start || !f->members || !cell_of) {
        free(cell_of);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c[3];
        for (int k = 0; k < 3; k++)
            c[k] = (uint64_t)floor(((double)pos[i][k] - f->origin[k]) * f->inv_cell);
        uint64_t key = cell_key(c[0], c[1], c[2]);
        uint32_t s = slot_of(f->slots, f->mask, key);
        if (!f->slots[s].key) {
            if (2 * (f->n_cells + 1) > f->mask + 1) {
                if (grow(f) < 0) {
                    free(cell_of);
                    return -1;
                }
                s = slot_of(f->slots, f->mask, key);
            }
            f->slots[s].key = key + 1;
            f->slots[s].cell = f->n_cells++;
        }
        cell_of[i] = f->slots[s].cell;
        f->cell_start[cell_of[i] + 1]++;
    }
    for (uint32_t c = 0; c < f->n_cells; c++)
        f->cell_start[c + 1] += f->cell_start[c];
    /* ascending index within a cell (SpatialSort's tie order) */
    for (uint32_t i = 0; i < n; i++)
        f->members[f->cell_start[cell_of[i]]++] = i;
    /* each start has moved to its cell's end, the next one's start */
    for (uint32_t c = f->n_cells; c > 0; c--)
        f->cell_start[c] = f->cell_start[c - 1];
    f->cell_start[0] = 0;
    free(cell_of);
    f->grid = 1;
    return 0;
}

static int sorted_build(mfs_near *f)
{
    uint32_t n = f->n;
    f->order = malloc(sizeof *f->order * (n ? n : 1));
    f->sorted = malloc(sizeof *f->sorted * (n ? n : 1));
    if (!f->order || !f->sorted)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        f->order[i] = i;
    qsort_r(f->order, n, sizeof *f->order, cmp_proj, f->proj);
    for (uint32_t i = 0; i < n; i++)
        f->sorted[i] = f->proj[f->order[i]];
    return 0;
}

int mfs_near_init(mfs_near *f, const float (*pos)[3], uint32_t n, float r)
{
    memset(f, 0, sizeof *f);
    f->pos = pos;
    f->n = n;
    f->r = r;
    plane_normal(f->normal);
    /* the centroid exactly as SpatialSort sums it: it moves the keys' bits */
    float scale = 1.0f / (float)(n ? n : 1);
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            f->centroid[k] += scale * pos[i][k];
    f->proj = malloc(sizeof *f->proj * (n ? n : 1));
    if (!f->proj)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        f->proj[i] = project(f, pos[i]);
    int rc = n ? grid_build(f) : 1;
    if (rc == 1)
        rc = sorted_build(f);
    if (rc < 0) {
        mfs_near_free(f);
        return -1;
    }
    return 0;
}

void mfs_near_free(mfs_near *f)
{
    free(f->proj);
    free(f->members);
    free(f->slots);
    free(f->cell_start);
    free(f->order);
    free(f->sorted);
    memset(f, 0, sizeof *f);
}

static int passes(const mfs_near *f, uint32_t q, const float p[3], float lo, float hi, float r2)
{
    if (!(f->proj[q] >= lo && f->proj[q] < hi))
        return 0;
    const float *v = f->pos[q];
    float dx = v[0] - p[0], dy = v[1] - p[1], dz = v[2] - p[2];
    return dx * dx + dy * dy + dz * dz < r2;
}

static uint32_t scan_sorted(const mfs_near *f, const float p[3], uint32_t *out)
{
    float r = f->r, d = project(f, p), lo = d - r, hi = d + r, r2 = r * r;
    uint32_t a = 0, b = f->n;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (f->sorted[mid] < lo)
            a = mid + 1;
        else
            b = mid;
    }
    uint32_t k = 0;
    for (uint32_t i = a; i < f->n && f->sorted[i] < hi; i++) {
        const float *q = f->pos[f->order[i]];
        float dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
        if (dx * dx + dy * dy + dz * dz < r2)
            out[k++] = f->order[i];
    }
    return k;
}

uint32_t mfs_near_find(const mfs_near *f, const float p[3], uint32_t *out)
{
    if (!f->grid)
        return scan_sorted(f, p, out);
    float r = f->r, d = project(f, p), lo = d - r, hi = d + r, r2 = r * r;
    /* per axis, p's cell and a neighbour when p is in its first or last
     * quarter (a vertex within r is less than 0.2498 cells away) */
    int64_t c0[3], c1[3];
    for (int k = 0; k < 3; k++) {
        double t = ((double)p[k] - f->origin[k]) * f->inv_cell;
        if (!(t > -2.0 && t < (double)NEAR_MAX_CELL + 2.0))
            return 0; /* far outside the mesh (or NaN): nothing near */
        double c = floor(t);
        c0[k] = (int64_t)c - (t - c < 0.25 ? 1 : 0);
        c1[k] = (int64_t)c + (t - c > 0.75 ? 1 : 0);
    }
    uint32_t k = 0;
    for (int64_t x = c0[0]; x <= c1[0]; x++)
        for (int64_t y = c0[1]; y <= c1[1]; y++)
            for (int64_t z = c0[2]; z <= c1[2]; z++) {
                if (x < 0 || y < 0 || z < 0 || x >= NEAR_MAX_CELL || y >= NEAR_MAX_CELL ||
                    z >= NEAR_MAX_CELL)
                    continue;
                const struct mfs_near_slot *sl =
                    &f->slots[slot_of(f->slots, f->mask, cell_key((uint64_t)x, (uint64_t)y, (uint64_t)z))];
                if (!sl->key)
                    continue;
                const uint32_t *m = f->members + f->cell_start[sl->cell];
                for (uint32_t j = 0, cnt = f->cell_start[sl->cell + 1] - f->cell_start[sl->cell]; j < cnt; j++)
                    if (passes(f, m[j], p, lo, hi, r2))
                        out[k++] = m[j];
            }
    sort_found(f->proj, out, k);
    return k;
}

uint32_t mfs_near_find_sorted(mfs_near *f, const float p[3], uint32_t *out)
{
    if (!f->order && sorted_build(f) < 0)
        return 0;
    return scan_sorted(f, p, out);
}

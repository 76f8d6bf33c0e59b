/* "Vertices at the same position" for the normal and tangent steps
 * (native_normals.c): every vertex strictly closer than r to a point, found
 * and ordered exactly as assimp 5.2.5's SpatialSort finds them, because the
 * order decides the last bits of the sums built from them (docs/import.md,
 * "Normals and tangents").  Internal to the importer. */
#ifndef MESHFS_IMPORT_NEAR_H
#define MESHFS_IMPORT_NEAR_H

#include <stdint.h>

typedef struct mfs_near {
    const float (*pos)[3];
    uint32_t n;
    float r;
    float normal[3], centroid[3];
    float *proj;      /* SpatialSort's key of each vertex, by vertex index */
    /* the hash grid: cells of 4r, vertices grouped by cell (ascending index) */
    int grid;
    double origin[3], inv_cell;
    uint32_t *members;
    uint32_t n_cells;
    uint32_t *cell_start; /* cell id -> first member; n_cells + 1 entries */
    struct mfs_near_slot { uint64_t key; uint32_t cell; } *slots; /* key + 1, 0: empty */
    uint32_t mask;
    /* the fallback (non-finite positions or radius, a degenerate grid):
     * SpatialSort itself, vertices sorted by their key */
    uint32_t *order;
    float *sorted;
} mfs_near;

/* Indexes the n positions (kept by reference) for queries of radius r.
 * -1 when out of memory. */
int mfs_near_init(mfs_near *f, const float (*pos)[3], uint32_t n, float r);
void mfs_near_free(mfs_near *f);

/* The vertices strictly closer than f's r to p, as SpatialSort returns them:
 * those whose key is within [key(p) - r, key(p) + r) and whose float distance
 * squared is below r * r, in ascending (key, index) order.  out holds n; the
 * count. */
uint32_t mfs_near_find(const mfs_near *f, const float p[3], uint32_t *out);

/* The same answer by SpatialSort's own method (a sorted scan; slow on large
 * meshes): the reference the tests hold mfs_near_find to. */
uint32_t mfs_near_find_sorted(mfs_near *f, const float p[3], uint32_t *out);

#endif

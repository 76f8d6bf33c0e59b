/* Welding: one vertex per distinct combination of attributes, with
 * meshoptimizer's vertex remap (bitwise comparison of every stream) in place
 * of assimp's JoinIdenticalVertices.
 *
 * The result is laid out as JoinIdenticalVertices lays it out, so the views
 * are the same whichever did it: vertices no face uses are dropped, and the
 * survivors keep the order of their first occurrence in the vertex array
 * (not in the index buffer).  Two deliberate differences, both where assimp
 * 5.2.5 merges vertices that are not the same (docs/import.md): vertices
 * that differ only in colour or in the second UV set stay apart, and the
 * comparison is exact where assimp allows 1e-5 (no format meshfs reads
 * natively writes near-equal copies of one vertex). */
#include <stdlib.h>
#include <string.h>

#include <meshoptimizer.h>

#include "weld.h"

/* Drops unused vertices of every per-vertex array of m, in place. */
static void compact_array(void *a, size_t elem, const uint32_t *map, uint32_t n)
{
    if (!a)
        return;
    unsigned char *p = a;
    for (uint32_t i = 0; i < n; i++)
        if (map[i] != UINT32_MAX && map[i] != i)
            memcpy(p + (size_t)map[i] * elem, p + (size_t)i * elem, elem);
}

static int remap_array(void **a, size_t elem, uint32_t n, uint32_t unique, const uint32_t *remap)
{
    if (!*a)
        return 0;
    void *d = malloc(elem * (unique ? unique : 1));
    if (!d)
        return -1;
    meshopt_remapVertexBuffer(d, *a, n, elem, remap);
    free(*a);
    *a = d;
    return 0;
}

int mfs_weld_mesh(mfs_mesh *m, mfs_err *err)
{
    uint32_t n = m->n_vertices;
    size_t ni = (size_t)m->n_faces * m->prim;
    if (!n)
        return 0;
    uint32_t *map = malloc(sizeof *map * n);
    uint32_t *remap = malloc(sizeof *remap * n);
    if (!map || !remap) {
        free(map);
        free(remap);
        return mfs_errf(err, "out of memory");
    }
    /* 1. the vertices faces use, in vertex order */
    for (uint32_t i = 0; i < n; i++)
        map[i] = UINT32_MAX;
    for (size_t i = 0; i < ni; i++)
        map[m->indices[i]] = 0;
    uint32_t used = 0;
    for (uint32_t i = 0; i < n; i++)
        if (map[i] == 0)
            map[i] = used++;
    compact_array(m->positions, sizeof *m->positions, map, n);
    compact_array(m->normals, sizeof *m->normals, map, n);
    compact_array(m->tangents, sizeof *m->tangents, map, n);
    compact_array(m->bitangents, sizeof *m->bitangents, map, n);
    for (int k = 0; k < MFS_MAX_UV; k++)
        compact_array(m->uv[k], sizeof *m->uv[k], map, n);
    compact_array(m->colors, sizeof *m->colors, map, n);

    /* 2. one vertex per distinct attribute set, first occurrence first */
    struct meshopt_Stream st[8];
    size_t ns = 0;
#define STREAM(p)                                                                                  \
    if (p)                                                                                         \
        st[ns++] = (struct meshopt_Stream){p, sizeof *(p), sizeof *(p)};
    STREAM(m->positions)
    STREAM(m->normals)
    STREAM(m->tangents)
    STREAM(m->bitangents)
    STREAM(m->uv[0])
    STREAM(m->uv[1])
    STREAM(m->colors)
#undef STREAM
    /* An identity index list (meshoptimizer 0.18 wants whole triangles, so
     * the last vertex repeats): first occurrence is vertex order. */
    size_t nid = ((size_t)used + 2) / 3 * 3;
    uint32_t *ident = malloc(sizeof *ident * (nid ? nid : 1));
    if (!ident) {
        free(map);
        free(remap);
        return mfs_errf(err, "out of memory");
    }
    for (size_t i = 0; i < nid; i++)
        ident[i] = (uint32_t)(i < used ? i : used - 1);
    uint32_t unique = used ? (uint32_t)meshopt_generateVertexRemapMulti(remap, ident, nid, used, st, ns) : 0;
    free(ident);
    int bad = remap_array((void **)&m->positions, sizeof *m->positions, used, unique, remap) < 0 ||
              remap_array((void **)&m->normals, sizeof *m->normals, used, unique, remap) < 0 ||
              remap_array((void **)&m->tangents, sizeof *m->tangents, used, unique, remap) < 0 ||
              remap_array((void **)&m->bitangents, sizeof *m->bitangents, used, unique, remap) < 0 ||
              remap_array((void **)&m->uv[0], sizeof *m->uv[0], used, unique, remap) < 0 ||
              remap_array((void **)&m->uv[1], sizeof *m->uv[1], used, unique, remap) < 0 ||
              remap_array((void **)&m->colors, sizeof *m->colors, used, unique, remap) < 0;
    if (bad) {
        free(map);
        free(remap);
        return mfs_errf(err, "out of memory");
    }
    for (size_t i = 0; i < ni; i++)
        m->indices[i] = remap[map[m->indices[i]]];

    /* 3. bone weights follow their vertex; the first weight a bone gives a
     * merged vertex is the one kept (as JoinIdenticalVertices keeps it) */
    uint32_t *seen = m->n_bones ? calloc(unique ? unique : 1, sizeof *seen) : NULL;
    if (m->n_bones && !seen) {
        free(map);
        free(remap);
        return mfs_errf(err, "out of memory");
    }
    for (uint32_t b = 0; b < m->n_bones; b++) {
        mfs_bone *bo = &m->bones[b];
        uint32_t k = 0;
        for (uint32_t w = 0; w < bo->n_weights; w++) {
            uint32_t v = bo->weights[w].vertex;
            if (v >= n || map[v] == UINT32_MAX)
                continue;
            uint32_t nv = remap[map[v]];
            if (seen[nv] == b + 1)
                continue;
            seen[nv] = b + 1;
            bo->weights[k].vertex = nv;
            bo->weights[k].weight = bo->weights[w].weight;
            k++;
        }
        bo->n_weights = k;
    }
    free(seen);
    free(map);
    free(remap);
    m->n_vertices = unique;
    return 0;
}

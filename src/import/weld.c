/* Welding: one vertex per distinct combination of attributes, with
 * meshoptimizer's vertex remap (bitwise comparison of every stream) in place
 * of assimp's JoinIdenticalVertices.
 *
 * Both importers weld here (assimp's JoinIdenticalVertices is not used), so
 * a model's vertex layout does not depend on who parsed it.  The result is
 * laid out as JoinIdenticalVertices lays it out: vertices no face uses are
 * dropped, and the survivors keep the order of their first occurrence in the
 * vertex array (not in the index buffer).  Three deliberate differences,
 * all where assimp 5.2.5 merges vertices that are not the same
 * (docs/import.md, "Welding"): vertices that differ only in colour, in the
 * second UV set or in their bone weights stay apart, and the comparison is
 * exact where assimp allows 1e-5. */
#include <math.h>
#include <stdint.h>
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

/* One id per vertex such that two vertices have the same id exactly when
 * their bone influences are the same: the same (bone, weight bits) pairs in
 * the same order (bone order, then the bone's own weight order).  The id is
 * the index of the first vertex with that list, so it is deterministic.
 * Compared exactly, not hashed alone, so that a collision cannot merge
 * differently skinned vertices.  map takes the file's vertex index to the
 * compacted one (UINT32_MAX: unused). */
static uint32_t *weight_ids(const mfs_mesh *m, const uint32_t *map, uint32_t n, uint32_t used)
{
    uint32_t *start = calloc((size_t)used + 1, sizeof *start);
    uint32_t *id = malloc(sizeof *id * (used ? used : 1));
    if (!start || !id)
        goto fail;
    for (uint32_t b = 0; b < m->n_bones; b++)
        for (uint32_t w = 0; w < m->bones[b].n_weights; w++) {
            uint32_t v = m->bones[b].weights[w].vertex;
            if (v < n && map[v] != UINT32_MAX)
                start[map[v] + 1]++;
        }
    for (uint32_t i = 0; i < used; i++)
        start[i + 1] += start[i];
    uint64_t *inf = malloc(sizeof *inf * (start[used] ? start[used] : 1));
    uint32_t *fill = malloc(sizeof *fill * (used ? used : 1));
    size_t cap = 16;
    while (cap < (size_t)used * 2)
        cap *= 2;
    uint32_t *table = malloc(sizeof *table * cap);
    if (!inf || !fill || !table) {
        free(inf), free(fill), free(table);
        goto fail;
    }
    memcpy(fill, start, sizeof *fill * used);
    for (uint32_t b = 0; b < m->n_bones; b++)
        for (uint32_t w = 0; w < m->bones[b].n_weights; w++) {
            uint32_t v = m->bones[b].weights[w].vertex;
            if (v >= n || map[v] == UINT32_MAX)
                continue;
            uint32_t bits;
            memcpy(&bits, &m->bones[b].weights[w].weight, sizeof bits);
            inf[fill[map[v]]++] = (uint64_t)b << 32 | bits;
        }
    free(fill);
    for (size_t i = 0; i < cap; i++)
        table[i] = UINT32_MAX;
    for (uint32_t v = 0; v < used; v++) {
        const uint64_t *a = inf + start[v];
        uint32_t na = start[v + 1] - start[v];
        uint64_t h = 1469598103934665603ull ^ na; /* FNV-1a over the pairs */
        for (uint32_t k = 0; k < na; k++)
            h = (h ^ a[k]) * 1099511628211ull;
        size_t slot = (size_t)(h ^ h >> 29) & (cap - 1);
        for (;; slot = (slot + 1) & (cap - 1)) {
            uint32_t o = table[slot];
            if (o == UINT32_MAX) {
                table[slot] = id[v] = v;
                break;
            }
            if (start[o + 1] - start[o] == na && memcmp(inf + start[o], a, sizeof *a * na) == 0) {
                id[v] = o;
                break;
            }
        }
    }
    free(table);
    free(inf);
    free(start);
    return id;
fail:
    free(start);
    free(id);
    return NULL;
}

/* -0.0 and +0.0 are the same number, so the same vertex, although not the
 * same bits (importers write both: a negated zero, a cross product), and
 * assimp's join merged them.  For the comparison every -0.0 becomes +0.0;
 * the signs are remembered, one bit per component of a vertex (*neg, made
 * on the first -0.0), and given back to the vertex that survives, so the
 * kept vertex has its bits exactly as before. */
enum { NEG_COMPONENTS = 3 + 3 + 3 + 3 + 2 * MFS_MAX_UV + 4 };
_Static_assert(NEG_COMPONENTS <= 32 && MFS_MAX_UV == 2, "one 32-bit mask per vertex; NEG_STREAMS lists two UV sets");

static int positive_zeros(void *a, uint32_t used, int comps, int first_bit, uint32_t **neg)
{
    if (!a)
        return 0;
    float *f = a;
    for (uint32_t v = 0; v < used; v++)
        for (int c = 0; c < comps; c++) {
            float *x = &f[(size_t)v * comps + c];
            if (*x == 0.0f && signbit(*x)) {
                if (!*neg && !(*neg = calloc(used, sizeof **neg)))
                    return -1;
                (*neg)[v] |= 1u << (first_bit + c);
                *x = 0.0f;
            }
        }
    return 0;
}

static void negative_zeros(void *a, int comps, int first_bit, const uint32_t *neg, const uint32_t *remap,
                           uint32_t used)
{
    if (!a)
        return;
    float *f = a;
    uint32_t next = 0; /* remap numbers vertices in order of first occurrence */
    for (uint32_t v = 0; v < used; v++) {
        if (remap[v] != next)
            continue;
        for (int c = 0; c < comps; c++)
            if (neg[v] >> (first_bit + c) & 1)
                f[(size_t)next * comps + c] = -0.0f;
        next++;
    }
}

#define NEG_STREAMS(X)                                                                             \
    X(m->positions, 3, 0)                                                                          \
    X(m->normals, 3, 3)                                                                            \
    X(m->tangents, 3, 6)                                                                           \
    X(m->bitangents, 3, 9)                                                                         \
    X(m->uv[0], 2, 12)                                                                             \
    X(m->uv[1], 2, 14)                                                                             \
    X(m->colors, 4, 16)

/* Step 2 of welding: remap takes each used vertex to its merged one,
 * *unique is how many remain; the attribute arrays are rewritten.  -1: out
 * of memory. */
static int merge_vertices(mfs_mesh *m, const uint32_t *map, uint32_t n, uint32_t used, uint32_t *remap,
                          uint32_t *unique)
{
    uint32_t *neg = NULL;
    int nomem = 0;
#define POSITIVE(p, comps, bit) nomem |= positive_zeros(p, used, comps, bit, &neg) < 0;
    NEG_STREAMS(POSITIVE)
#undef POSITIVE
    if (nomem) {
        free(neg);
        return -1;
    }

    /* 2. one vertex per distinct attribute set, first occurrence first */
    uint32_t *wid = NULL;
    if (m->n_bones && !(wid = weight_ids(m, map, n, used))) {
        free(neg);
        return -1;
    }
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
    STREAM(wid)
#undef STREAM
    /* An identity index list (meshoptimizer 0.18 wants whole triangles, so
     * the last vertex repeats): first occurrence is vertex order. */
    size_t nid = ((size_t)used + 2) / 3 * 3;
    uint32_t *ident = malloc(sizeof *ident * (nid ? nid : 1));
    if (!ident) {
        free(wid);
        free(neg);
        return -1;
    }
    for (size_t i = 0; i < nid; i++)
        ident[i] = (uint32_t)(i < used ? i : used - 1);
    *unique = used ? (uint32_t)meshopt_generateVertexRemapMulti(remap, ident, nid, used, st, ns) : 0;
    free(ident);
    free(wid);
    int bad = remap_array((void **)&m->positions, sizeof *m->positions, used, *unique, remap) < 0 ||
              remap_array((void **)&m->normals, sizeof *m->normals, used, *unique, remap) < 0 ||
              remap_array((void **)&m->tangents, sizeof *m->tangents, used, *unique, remap) < 0 ||
              remap_array((void **)&m->bitangents, sizeof *m->bitangents, used, *unique, remap) < 0 ||
              remap_array((void **)&m->uv[0], sizeof *m->uv[0], used, *unique, remap) < 0 ||
              remap_array((void **)&m->uv[1], sizeof *m->uv[1], used, *unique, remap) < 0 ||
              remap_array((void **)&m->colors, sizeof *m->colors, used, *unique, remap) < 0;
    if (neg && !bad) {
#define NEGATIVE(p, comps, bit) negative_zeros(p, comps, bit, neg, remap, used);
        NEG_STREAMS(NEGATIVE)
#undef NEGATIVE
    }
    free(neg);
    if (bad)
        return -1;
    return 0;
}

static int weld(mfs_mesh *m, int merge, mfs_err *err)
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
    /* 1. the vertices faces use, in vertex order (an index out of range is
     * refused here, before it is used to index anything) */
    for (uint32_t i = 0; i < n; i++)
        map[i] = UINT32_MAX;
    for (size_t i = 0; i < ni; i++) {
        if (m->indices[i] >= n) {
            uint32_t bad = m->indices[i];
            free(map);
            free(remap);
            return mfs_errf(err, "mesh '%s': vertex index %u out of range (%u vertices)",
                            m->name ? m->name : "", bad, n);
        }
        map[m->indices[i]] = 0;
    }
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
    uint32_t unique = used;
    if (!merge) {
        /* the kept vertices stay apart, in vertex order */
        for (uint32_t i = 0; i < used; i++)
            remap[i] = i;
    } else if (merge_vertices(m, map, n, used, remap, &unique) < 0) {
        free(map);
        free(remap);
        return mfs_errf(err, "out of memory");
    }
    for (size_t i = 0; i < ni; i++)
        m->indices[i] = remap[map[m->indices[i]]];

    /* 3. bone weights follow their vertex; merged vertices had the same
     * influences, so one copy of each (bone, vertex) weight is kept: the
     * first, as JoinIdenticalVertices keeps it */
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

int mfs_weld_mesh(mfs_mesh *m, mfs_err *err)
{
    return weld(m, 1, err);
}

int mfs_drop_unused_vertices(mfs_mesh *m, mfs_err *err)
{
    return weld(m, 0, err);
}

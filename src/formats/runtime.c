/* The one model-space mesh behind .vrt, .tri and .sph (docs/formats/vrt.md):
 * every triangle mesh placed by its node, its vertices given their four
 * strongest skin influences as indices into one model-wide bone list,
 * merged, identical vertices reduced (on the 64-byte vertex, then again on
 * the plain 32-byte one), and a bounding sphere around the result
 * (sphere.c).  How the three writers share one build is prepared.c's. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Inline: the reducer hashes one 64-byte key per vertex, where a call into
 * the shared library costs as much as the hash. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "runtime.h"

#define NONE UINT32_MAX

/* Vertices reduced per batch: the table slots of a whole batch are
 * prefetched before the first probe, so their cache misses overlap instead
 * of queueing (the table outgrows the caches for large models). */
#define BATCH 64

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* ------------------------------------------------------------------ */
/* Placement: where each mesh sits in model space                      */
/* ------------------------------------------------------------------ */

/* One placed copy of a mesh: a mesh appears once for every node that places
 * it (instancing), and once where it is if no node does. */
typedef struct instance {
    uint32_t mesh;
    int32_t node;         /* -1: not placed, identity */
} instance;

typedef struct placement {
    mfs_mat4 *world;      /* per node */
    instance *inst;       /* pre-order of nodes, then unplaced meshes */
    uint32_t n_inst;
    int32_t *bone;        /* per node: index in the model-wide bone list, or -1 */
    uint32_t n_bones;
} placement;

/* Point and line meshes have no place in a triangle buffer. */
static int is_merged(const mfs_mesh *m)
{
    return m->prim == MFS_PRIM_TRIANGLES && m->n_faces > 0;
}

/* The model-wide bone list (docs/formats/vrt.md, "Bone order"): every node
 * a bone of a merged mesh links to, plus the nodes on the way from each of
 * them up to their lowest common ancestor (that ancestor only if linked
 * itself), numbered in the scene's depth-first pre-order, i.e. by node
 * index.  That is the joint list a converter writing the engine's animation
 * chunk walks in pre-order, so the two index the same joints. */
static int skeleton(const mfs_scene *s, placement *pl, mfs_err *err)
{
    size_t nn = s->n_nodes ? s->n_nodes : 1;
    uint32_t *depth = malloc(sizeof(uint32_t) * nn);
    unsigned char *use = malloc(s->n_meshes ? s->n_meshes : 1);
    if (!depth || !use) {
        free(depth);
        free(use);
        return mfs_errf(err, "out of memory listing bones");
    }
    for (uint32_t i = 0; i < s->n_meshes; i++)
        use[i] = (unsigned char)is_merged(&s->meshes[i]);
    mfs_scene_depths(s, depth);
    mfs_scene_mark_skeleton(s, depth, use, pl->bone);
    free(depth);
    free(use);
    for (uint32_t n = 0; n < s->n_nodes; n++)
        if (pl->bone[n] == 0)
            pl->bone[n] = (int32_t)pl->n_bones++;
    return 0;
}

static int placement_init(placement *pl, const mfs_scene *s, mfs_err *err)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        n += s->nodes[i].n_meshes;
    pl->world = malloc(sizeof(mfs_mat4) * (s->n_nodes ? s->n_nodes : 1));
    pl->inst = malloc(sizeof(instance) * (size_t)(n + s->n_meshes + 1));
    pl->bone = malloc(sizeof(int32_t) * (s->n_nodes ? s->n_nodes : 1));
    int32_t *first = malloc(sizeof(int32_t) * (s->n_meshes ? s->n_meshes : 1));
    pl->n_inst = 0;
    pl->n_bones = 0;
    if (!pl->world || !pl->inst || !pl->bone || !first) {
        free(first);
        return mfs_errf(err, "out of memory placing %u nodes", s->n_nodes);
    }
    mfs_scene_world(s, pl->world);
    mfs_scene_mesh_nodes(s, first);
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
            pl->inst[pl->n_inst++] = (instance){s->nodes[i].meshes[k], (int32_t)i};
    for (uint32_t i = 0; i < s->n_meshes; i++)
        if (first[i] < 0)
            pl->inst[pl->n_inst++] = (instance){i, -1};
    free(first);
    return skeleton(s, pl, err);
}

static void placement_free(placement *pl)
{
    free(pl->world);
    free(pl->inst);
    free(pl->bone);
}

/* Per-mesh transform, prepared once so the per-vertex work is a few
 * multiplies.  Identity parts are skipped so that untransformed meshes keep
 * their source bits exactly (renormalising a unit normal can move its last
 * bit). */
typedef struct mesh_xf {
    mfs_mat4 world;
    mfs_mat4 nrm;
    int world_identity;
    int nrm_identity;
    int mirror;           /* det < 0: swap two corners to stay counter-clockwise */
} mesh_xf;

static void mesh_xf_init(mesh_xf *x, const placement *pl, const instance *in)
{
    int32_t node = in->node;
    if (node >= 0)
        x->world = pl->world[node];
    else
        mfs_mat4_identity(&x->world);
    x->world_identity = mfs_mat4_is_identity(&x->world);
    mfs_mat4_normal_matrix(&x->nrm, &x->world);
    x->nrm_identity = mfs_mat4_is_identity(&x->nrm);
    x->mirror = mfs_mat4_det3(&x->world) < 0.0f;
}

static int model_position(const mesh_xf *x, const mfs_mesh *m, uint32_t v, float out[3],
                          mfs_err *err)
{
    if (x->world_identity)
        memcpy(out, m->positions[v], sizeof(float) * 3);
    else
        mfs_mat4_point(&x->world, m->positions[v], out);
    if (!isfinite(out[0]) || !isfinite(out[1]) || !isfinite(out[2]))
        return mfs_errf(err, "mesh '%s': vertex %u is not finite in model space",
                        m->name ? m->name : "", v);
    return 0;
}

static void model_normal(const mesh_xf *x, const mfs_mesh *m, uint32_t v, float out[3])
{
    if (x->nrm_identity) {
        memcpy(out, m->normals[v], sizeof(float) * 3);
        return;
    }
    mfs_mat4_vector(&x->nrm, m->normals[v], out);
    mfs_normalize3(out);
}

static void corner_uv(const mfs_mesh *m, uint32_t v, float out[2])
{
    if (m->uv[0]) {
        out[0] = m->uv[0][v][0];
        out[1] = m->uv[0][v][1];
    } else {
        out[0] = out[1] = 0.0f;
    }
}

/* ------------------------------------------------------------------ */
/* Skinning: the four strongest influences of each vertex               */
/* ------------------------------------------------------------------ */

/* One vertex's skin, as written: weights strongest first (ties: lower bone
 * index first), summing to 1; unused slots weight 0, index 0.  All zero for
 * a vertex no bone moves. */
typedef struct skin {
    float w[MFS_RT_SKIN];
    uint32_t b[MFS_RT_SKIN];
} skin;

typedef struct infl {
    uint32_t bone;        /* model-wide index */
    double w;
} infl;

static int infl_before(const infl *a, const infl *b)
{
    return a->w > b->w || (a->w == b->w && a->bone < b->bone);
}

/* One vertex's influences (all of them, any order): a bone named twice
 * counts once with the sum of its weights, then the four strongest are
 * kept and renormalised to sum to 1. */
static void vertex_skin(infl *f, uint32_t n, skin *out, uint32_t *max_joint)
{
    uint32_t u = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = 0;
        while (j < u && f[j].bone != f[i].bone)
            j++;
        if (j < u)
            f[j].w += f[i].w;
        else
            f[u++] = f[i];
    }
    infl top[MFS_RT_SKIN];
    uint32_t k = 0;
    for (uint32_t i = 0; i < u; i++) {
        if (k == MFS_RT_SKIN && !infl_before(&f[i], &top[k - 1]))
            continue;
        uint32_t j = k < MFS_RT_SKIN ? k++ : k - 1;
        while (j > 0 && infl_before(&f[i], &top[j - 1])) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = f[i];
    }
    memset(out, 0, sizeof *out);
    double sum = 0;
    for (uint32_t i = 0; i < k; i++)
        sum += top[i].w;
    for (uint32_t i = 0; i < k; i++) {
        out->w[i] = (float)(top[i].w / sum);
        out->b[i] = top[i].bone;
        if (top[i].bone + 1 > *max_joint)
            *max_joint = top[i].bone + 1;
    }
}

/* The skin of every vertex of m.  Influences of a bone linked to no node,
 * and weights that are not positive and finite, are dropped (nothing could
 * move the vertex by them). */
static int mesh_skin(const mfs_mesh *m, const int32_t *bone_of_node, skin *out,
                     uint32_t *max_joint, mfs_err *err)
{
    uint32_t nv = m->n_vertices;
    uint32_t *start = calloc((size_t)nv + 2, sizeof(uint32_t));
    if (!start)
        return mfs_errf(err, "mesh '%s': out of memory gathering weights", m->name ? m->name : "");
    uint64_t total = 0;
    for (uint32_t b = 0; b < m->n_bones; b++) {
        const mfs_bone *bo = &m->bones[b];
        if (bo->node < 0)
            continue;
        for (uint32_t k = 0; k < bo->n_weights; k++) {
            float w = bo->weights[k].weight;
            if (w > 0 && isfinite(w)) {
                start[bo->weights[k].vertex + 2]++;
                total++;
            }
        }
    }
    infl *all = total <= UINT32_MAX ? malloc(sizeof(infl) * (size_t)(total ? total : 1)) : NULL;
    if (!all) {
        free(start);
        return mfs_errf(err, "mesh '%s': out of memory gathering %llu weights",
                        m->name ? m->name : "", (unsigned long long)total);
    }
    /* counting sort by vertex: start[v + 1] is where v's run begins while
     * filling, and where it ends afterwards */
    for (uint32_t v = 2; v < nv + 2; v++)
        start[v] += start[v - 1];
    for (uint32_t b = 0; b < m->n_bones; b++) {
        const mfs_bone *bo = &m->bones[b];
        if (bo->node < 0)
            continue;
        for (uint32_t k = 0; k < bo->n_weights; k++) {
            float w = bo->weights[k].weight;
            if (w > 0 && isfinite(w))
                all[start[bo->weights[k].vertex + 1]++] =
                    (infl){(uint32_t)bone_of_node[bo->node], (double)w};
        }
    }
    for (uint32_t v = 0; v < nv; v++)
        vertex_skin(all + start[v], start[v + 1] - start[v], &out[v], max_joint);
    free(all);
    free(start);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Reduction: open-addressing hash set over the vertices' words        */
/* ------------------------------------------------------------------ */

typedef struct slot {
    uint32_t tag;         /* high hash bits: most mismatches end here */
    uint32_t index;       /* into reducer.v, NONE when empty */
} slot;

typedef struct reducer {
    slot *table;
    size_t mask;
    uint32_t *v;          /* n vertices of `words` words each */
    unsigned words;
    uint32_t n;
} reducer;

/* Equality is on bit patterns, after folding -0.0 into +0.0 and every NaN
 * into one quiet NaN: values that compare equal then merge, and the bytes
 * written never depend on which of two equal spellings came first. */
static uint32_t canon_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7fffffffu) == 0)
        return 0;
    if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu))
        return 0x7fc00000u;
    return b;
}

static int reducer_init(reducer *r, uint64_t bound, unsigned words, mfs_err *err)
{
    memset(r, 0, sizeof *r);
    r->words = words;
    if (bound > SIZE_MAX / (sizeof(uint32_t) * words) || bound > SIZE_MAX / 4 / sizeof(slot))
        return mfs_errf(err, "out of memory reducing %llu vertices", (unsigned long long)bound);
    size_t size = 16;
    while (size < bound * 2)
        size *= 2;
    r->table = malloc(size * sizeof(slot));
    r->v = malloc((size_t)(bound ? bound : 1) * sizeof(uint32_t) * words);
    if (!r->table || !r->v)
        return mfs_errf(err, "out of memory reducing %llu vertices", (unsigned long long)bound);
    memset(r->table, 0xff, size * sizeof(slot));
    r->mask = size - 1;
    return 0;
}

static void reducer_free(reducer *r)
{
    free(r->table);
    free(r->v);
}

/* A vertex ready for the table: its words and their hash. */
typedef struct vkey {
    uint32_t bits[MFS_RT_WORDS];
    uint64_t hash;
} vkey;

/* vert: x y z u v nx ny nz; sk NULL for a vertex no bone moves. */
static void make_key(const float vert[MFS_RT_PLAIN_WORDS], const skin *sk, vkey *k)
{
    for (int i = 0; i < MFS_RT_PLAIN_WORDS; i++)
        k->bits[i] = canon_bits(vert[i]);
    for (int i = 0; i < MFS_RT_SKIN; i++) {
        k->bits[8 + i] = sk ? canon_bits(sk->w[i]) : 0;
        k->bits[12 + i] = sk ? sk->b[i] : 0;
    }
    k->hash = XXH3_64bits(k->bits, sizeof k->bits);
}

/* Index of k among the unique vertices, appending it if new.  The caller
 * sized the table for every possible insertion, so it stays at most half
 * full and a probe always ends. */
static uint32_t intern(reducer *r, const vkey *k)
{
    uint32_t tag = (uint32_t)(k->hash >> 32);
    size_t bytes = sizeof(uint32_t) * r->words;
    for (size_t i = (size_t)k->hash & r->mask;; i = (i + 1) & r->mask) {
        slot *sl = &r->table[i];
        if (sl->index == NONE) {
            sl->tag = tag;
            sl->index = r->n;
            memcpy(r->v + (size_t)r->n * r->words, k->bits, bytes);
            return r->n++;
        }
        if (sl->tag == tag && memcmp(r->v + (size_t)sl->index * r->words, k->bits, bytes) == 0)
            return sl->index;
    }
}

/* Interns keys in order (so first-reference order is kept). */
static void intern_batch(reducer *r, const vkey *keys, uint32_t n, uint32_t *out)
{
    for (uint32_t i = 0; i < n; i++)
        PREFETCH(&r->table[(size_t)keys[i].hash & r->mask]);
    for (uint32_t i = 0; i < n; i++)
        out[i] = intern(r, &keys[i]);
}

/* ------------------------------------------------------------------ */
/* Merging                                                              */
/* ------------------------------------------------------------------ */

static void corners(const mfs_mesh *m, const mesh_xf *x, uint32_t f, uint32_t c[3])
{
    const uint32_t *ix = &m->indices[(size_t)f * 3];
    c[0] = ix[0];
    c[1] = x->mirror ? ix[2] : ix[1];
    c[2] = x->mirror ? ix[1] : ix[2];
}

/* sk: the mesh's skin table, NULL for a static mesh. */
static int smooth_key(const mfs_mesh *m, const mesh_xf *x, const skin *sk, uint32_t v, vkey *k,
                      mfs_err *err)
{
    float vert[MFS_RT_PLAIN_WORDS];
    if (model_position(x, m, v, vert, err) < 0)
        return -1;
    corner_uv(m, v, vert + 3);
    model_normal(x, m, v, vert + 5);
    make_key(vert, sk ? &sk[v] : NULL, k);
    return 0;
}

/* A mesh with normals: every source vertex becomes one vertex, made and
 * reduced once.  First the corners are walked to list the referenced
 * vertices in first-reference order (order), then those are reduced in
 * batches, then the triangles are written through remap. */
static int merge_smooth(reducer *r, const mfs_mesh *m, const mesh_xf *x, const skin *sk,
                        uint32_t *remap, uint32_t *order, uint32_t (*out)[3], mfs_err *err)
{
    uint32_t n = 0;
    for (uint32_t v = 0; v < m->n_vertices; v++)
        remap[v] = NONE;
    for (uint32_t f = 0; f < m->n_faces; f++) {
        uint32_t c[3];
        corners(m, x, f, c);
        for (int k = 0; k < 3; k++)
            if (remap[c[k]] == NONE) {
                remap[c[k]] = 0;
                order[n++] = c[k];
            }
    }
    vkey keys[BATCH];
    uint32_t idx[BATCH];
    for (uint32_t i = 0; i < n; i += BATCH) {
        uint32_t b = n - i < BATCH ? n - i : BATCH;
        for (uint32_t j = 0; j < b; j++)
            if (smooth_key(m, x, sk, order[i + j], &keys[j], err) < 0)
                return -1;
        intern_batch(r, keys, b, idx);
        for (uint32_t j = 0; j < b; j++)
            remap[order[i + j]] = idx[j];
    }
    for (uint32_t f = 0; f < m->n_faces; f++) {
        uint32_t c[3];
        corners(m, x, f, c);
        for (int k = 0; k < 3; k++)
            out[f][k] = remap[c[k]];
    }
    return 0;
}

static void face_normal(const float p[3][3], float n[3])
{
    double a[3], b[3];
    for (int k = 0; k < 3; k++) {
        a[k] = (double)p[1][k] - p[0][k];
        b[k] = (double)p[2][k] - p[0][k];
    }
    double c[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                   a[0] * b[1] - a[1] * b[0]};
    double l = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    for (int k = 0; k < 3; k++)
        n[k] = l > 0 ? (float)(c[k] / l) : 0.0f;
}

static int faceted_keys(const mfs_mesh *m, const mesh_xf *x, const skin *sk, uint32_t f,
                        vkey k[3], mfs_err *err)
{
    uint32_t c[3];
    float p[3][3], n[3];
    corners(m, x, f, c);
    for (int i = 0; i < 3; i++)
        if (model_position(x, m, c[i], p[i], err) < 0)
            return -1;
    face_normal(p, n);
    for (int i = 0; i < 3; i++) {
        float vert[MFS_RT_PLAIN_WORDS];
        memcpy(vert, p[i], sizeof p[i]);
        corner_uv(m, c[i], vert + 3);
        memcpy(vert + 5, n, sizeof n);
        make_key(vert, sk ? &sk[c[i]] : NULL, &k[i]);
    }
    return 0;
}

/* A mesh without normals: each corner takes its face's normal (flat
 * shading), so vertices are made per corner, a batch of faces at a time. */
static int merge_faceted(reducer *r, const mfs_mesh *m, const mesh_xf *x, const skin *sk,
                         uint32_t (*out)[3], mfs_err *err)
{
    enum { FACES = BATCH / 3 };
    vkey keys[FACES * 3];
    uint32_t idx[FACES * 3];
    for (uint32_t f = 0; f < m->n_faces; f += FACES) {
        uint32_t b = m->n_faces - f < FACES ? m->n_faces - f : FACES;
        for (uint32_t j = 0; j < b; j++)
            if (faceted_keys(m, x, sk, f + j, &keys[j * 3], err) < 0)
                return -1;
        intern_batch(r, keys, b * 3, idx);
        memcpy(out[f], idx, sizeof(uint32_t) * 3 * b);
    }
    return 0;
}

/* Upper bounds that size every buffer once: triangles, unique vertices,
 * the largest per-mesh remap table and the largest skinned mesh. */
typedef struct sizes {
    uint64_t triangles, vertices;
    uint32_t remap, skin;
} sizes;

static void count(const mfs_scene *s, const placement *pl, sizes *z)
{
    memset(z, 0, sizeof *z);
    for (uint32_t j = 0; j < pl->n_inst; j++) {
        const mfs_mesh *m = &s->meshes[pl->inst[j].mesh];
        if (!is_merged(m))
            continue;
        uint64_t refs = (uint64_t)m->n_faces * 3;
        z->triangles += m->n_faces;
        if (m->normals) {
            z->vertices += refs < m->n_vertices ? refs : m->n_vertices;
            if (m->n_vertices > z->remap)
                z->remap = m->n_vertices;
        } else {
            z->vertices += refs;
        }
        if (mfs_mesh_is_skinned(m) && m->n_vertices > z->skin)
            z->skin = m->n_vertices;
    }
}

/* The plain layout: the vertices reduced again on their first 8 words, in
 * order, so each plain vertex keeps its first reference.  Only vertices
 * that differ in skinning alone can merge, so a model without skinning
 * skips this (plain stays NULL: the identity). */
static int reduce_plain(mfs_runtime *rt, mfs_err *err)
{
    rt->n_plain = rt->n_vertices;
    if (rt->max_joint == 0)
        return 0;
    reducer r;
    uint32_t *of = malloc(sizeof(uint32_t) * (rt->n_vertices ? rt->n_vertices : 1));
    if (reducer_init(&r, rt->n_vertices, MFS_RT_PLAIN_WORDS, err) < 0 || !of) {
        free(of);
        reducer_free(&r);
        return mfs_errf(err, "out of memory reducing %u vertices", rt->n_vertices);
    }
    vkey keys[BATCH];
    for (uint32_t i = 0; i < rt->n_vertices; i += BATCH) {
        uint32_t b = rt->n_vertices - i < BATCH ? rt->n_vertices - i : BATCH;
        for (uint32_t j = 0; j < b; j++) {
            memcpy(keys[j].bits, rt->vertices[i + j], sizeof(uint32_t) * MFS_RT_PLAIN_WORDS);
            keys[j].hash = XXH3_64bits(keys[j].bits, sizeof(uint32_t) * MFS_RT_PLAIN_WORDS);
        }
        intern_batch(&r, keys, b, of + i);
    }
    free(r.table);
    if (r.n == rt->n_vertices) {
        free(r.v);
        free(of);
        return 0;
    }
    rt->n_plain = r.n;
    rt->plain_of = of;
    rt->plain = realloc(r.v, sizeof *rt->plain * r.n);
    if (!rt->plain)
        rt->plain = (uint32_t(*)[MFS_RT_PLAIN_WORDS])r.v;
    return 0;
}

/* The sphere over the plain layout's positions: every position occurs
 * there, and both layouts get the same sphere. */
static int runtime_sphere(mfs_runtime *rt, mfs_err *err)
{
    if (rt->n_plain == 0)
        return 0;
    float (*pos)[3] = malloc(sizeof *pos * rt->n_plain);
    if (!pos)
        return mfs_errf(err, "out of memory bounding %u vertices", rt->n_plain);
    for (uint32_t i = 0; i < rt->n_plain; i++)
        memcpy(pos[i], mfs_runtime_vertex(rt, 1, i), sizeof pos[i]);
    mfs_runtime_sphere(&pos[0][0], 3, rt->n_plain, rt->center, &rt->radius);
    free(pos);
    return 0;
}

static int build_placed(const mfs_scene *s, const placement *pl, mfs_runtime *rt, mfs_err *err)
{
    sizes z;
    count(s, pl, &z);
    if (z.triangles > MFS_RT_MAX_TRIANGLES)
        return mfs_errf(err, "model has %llu triangles, the int32 size field allows at most %d",
                        (unsigned long long)z.triangles, (int)MFS_RT_MAX_TRIANGLES);

    reducer r;
    uint32_t *remap = malloc(sizeof(uint32_t) * (z.remap ? z.remap : 1));
    uint32_t *order = malloc(sizeof(uint32_t) * (z.remap ? z.remap : 1));
    skin *sk = malloc(sizeof(skin) * (z.skin ? z.skin : 1));
    rt->triangles = malloc(sizeof *rt->triangles * (size_t)z.triangles);
    rt->n_bones = pl->n_bones;
    int rc = reducer_init(&r, z.vertices, MFS_RT_WORDS, err);
    if (rc == 0 && (!remap || !order || !sk || !rt->triangles))
        rc = mfs_errf(err, "out of memory merging %llu triangles",
                      (unsigned long long)z.triangles);

    uint32_t t = 0;
    int32_t skin_of = -1; /* mesh whose skin sk holds */
    for (uint32_t j = 0; rc == 0 && j < pl->n_inst; j++) {
        uint32_t mi = pl->inst[j].mesh;
        const mfs_mesh *m = &s->meshes[mi];
        if (!is_merged(m))
            continue;
        const skin *msk = NULL;
        if (mfs_mesh_is_skinned(m)) {
            if (skin_of != (int32_t)mi &&
                (rc = mesh_skin(m, pl->bone, sk, &rt->max_joint, err)) < 0)
                break;
            skin_of = (int32_t)mi;
            msk = sk;
        }
        mesh_xf x;
        mesh_xf_init(&x, pl, &pl->inst[j]);
        rc = m->normals ? merge_smooth(&r, m, &x, msk, remap, order, rt->triangles + t, err)
                        : merge_faceted(&r, m, &x, msk, rt->triangles + t, err);
        t += m->n_faces;
    }
    free(remap);
    free(order);
    free(sk);
    if (rc == 0 && r.n > MFS_RT_MAX_VERTICES)
        rc = mfs_errf(err, "model has %u unique vertices, the int32 size field allows at most %d",
                      r.n, (int)MFS_RT_MAX_VERTICES);
    if (rc < 0) {
        reducer_free(&r);
        return -1;
    }

    rt->n_triangles = t;
    rt->n_vertices = r.n;
    /* give back the bound's slack (not with 0: realloc would free it) */
    rt->vertices = r.n ? realloc(r.v, sizeof *rt->vertices * r.n) : NULL;
    if (!rt->vertices)
        rt->vertices = (uint32_t(*)[MFS_RT_WORDS])r.v;
    free(r.table);
    if (reduce_plain(rt, err) < 0 || runtime_sphere(rt, err) < 0)
        return -1;
    return 0;
}

/* Process-wide, but only a statistic: nothing reads it to decide anything. */
static atomic_uint_fast64_t builds;

uint64_t mfs_runtime_builds(void)
{
    return atomic_load(&builds);
}

int mfs_runtime_build(const mfs_scene *s, mfs_runtime *rt, mfs_err *err)
{
    memset(rt, 0, sizeof *rt);
    atomic_fetch_add(&builds, 1);
    placement pl;
    int rc = placement_init(&pl, s, err);
    if (rc == 0)
        rc = build_placed(s, &pl, rt, err);
    placement_free(&pl);
    return rc;
}

void mfs_runtime_free(mfs_runtime *rt)
{
    free(rt->vertices);
    free(rt->triangles);
    free(rt->plain);
    free(rt->plain_of);
    memset(rt, 0, sizeof *rt);
}

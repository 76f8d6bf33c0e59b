/* Leadwerks Game Model Format (.gmf, version 1) writer.
 * Layout, frame and every decision: docs/formats/gmf.md.
 *
 * A gmf file is a tree of blocks whose `size` counts only the block's own
 * payload, never its children.  So no size depends on a subtree and the file
 * is streamed in one pre-order walk; the only things to know before writing
 * a header are child counts, which the plan below works out first (surfaces
 * per node, the skeleton, the split of big meshes into surfaces).
 *
 * Leadwerks' legacy loader keeps only the translation of NODE/MESH matrices
 * and ignores BONE matrices, so every NODE/MESH matrix written is a pure
 * translation and each mesh carries its node's world rotation and scale in
 * its vertices; gmf_frames.c works out those frames, and gmf_plan.c the
 * plan (gmf_plan.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "meshfs/formats.h"

#include "gmf_plan.h"

enum { /* block tags */
    GMF_FILE = 1,
    GMF_NODE = 2,
    GMF_MESH = 3,
    GMF_BONE = 4,
    GMF_VERTEXARRAY = 5,
    GMF_INDICEARRAY = 6,
    GMF_PROPERTIES = 7,
    GMF_ANIMATIONKEYS = 8,
    GMF_SURFACE = 10,
};

enum { /* vertex array kinds */
    GMF_POSITION = 1,
    GMF_NORMAL = 2,
    GMF_TEXTURE_COORD = 3,
    GMF_COLOR = 4,
    GMF_TANGENT = 5,
    GMF_BINORMAL = 6,
    GMF_BONEINDICE = 7,
    GMF_BONEWEIGHT = 8,
};

enum { /* component types, primitive modes */
    GMF_UNSIGNED_BYTE = 2,
    GMF_UNSIGNED_SHORT = 4,
    GMF_FLOAT = 8,
    GMF_TRIANGLES = 7,
};

#define GMF_VERSION 1
#define STACK_BONE 0x80000000u  /* walk item: BONE block rather than MESH/NODE */

/* ---- low-level output ---- */

/* Writes 0 for -0: mirroring must not turn an identity's zeros into -0. */
static inline float pz(float x)
{
    return x + 0.0f;
}

static inline float neg(float x)
{
    return 0.0f - x;
}

static void put_header(mfs_sink *o, int32_t tag, uint32_t nkids, uint32_t size)
{
    mfs_put_i32(o, tag);
    mfs_put_u32(o, nkids);
    mfs_put_u32(o, size);
}

/* Canonical column-vector matrix -> gmf: conjugate by S = diag(1,1,-1) to
 * mirror Z, then transpose so translation lands at elements 12..14.  The
 * right column is written as exactly 0,0,0,1: Leadwerks matrices are affine,
 * and importers leave rounding noise in the bottom row (ASE gives 0.9999999). */
static void put_matrix(mfs_sink *o, const mfs_mat4 *m)
{
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 3; c++) {
            float v = m->m[c * 4 + r];
            mfs_put_f32(o, pz(((r == 2) != (c == 2)) ? neg(v) : v));
        }
        mfs_put_f32(o, r == 3 ? 1.0f : 0.0f);
    }
}

/* Property strings end at NUL and readers also stop at CR/LF, so those
 * become '_' (one byte for one: lengths, and so sizes, do not change). */
static void put_cstr(mfs_sink *o, const char *str)
{
    while (*str) {
        size_t n = strcspn(str, "\r\n");
        mfs_put(o, str, n);
        str += n;
        if (*str) {
            mfs_put_u8(o, '_');
            str++;
        }
    }
    mfs_put_u8(o, 0);
}

static void put_prop(mfs_sink *o, const char *key, const char *value)
{
    put_header(o, GMF_PROPERTIES, 0, (uint32_t)(4 + strlen(key) + 1 + strlen(value) + 1));
    mfs_put_i32(o, 1);
    put_cstr(o, key);
    put_cstr(o, value);
}

static void put_va_header(mfs_sink *o, uint32_t nv, int32_t kind, int32_t type, uint32_t el,
                          uint32_t elsize)
{
    put_header(o, GMF_VERTEXARRAY, 0, 16 + nv * el * elsize);
    mfs_put_u32(o, nv);
    mfs_put_i32(o, kind);
    mfs_put_i32(o, type);
    mfs_put_u32(o, el);
}

/* Vertex and index data go through a stack buffer: one sink call per few
 * kilobytes instead of one per float keeps 1M-triangle models cheap. */
typedef struct batch {
    mfs_sink *o;
    size_t n;
    uint8_t b[16384];
} batch;

static inline uint8_t *batch_room(batch *bt, size_t need)
{
    if (bt->n + need > sizeof bt->b) {
        mfs_put(bt->o, bt->b, bt->n);
        bt->n = 0;
    }
    return bt->b + bt->n;
}

static inline void batch_f32x3(batch *bt, float x, float y, float z)
{
    uint8_t *p = batch_room(bt, 12);
    mfs_st_f32(p, x);
    mfs_st_f32(p + 4, y);
    mfs_st_f32(p + 8, z);
    bt->n += 12;
}

static void batch_flush(batch *bt)
{
    mfs_put(bt->o, bt->b, bt->n);
    bt->n = 0;
}

/* ---- surfaces ---- */

/* The vertices of one surface: all of the mesh, or a split-off chunk. */
typedef struct vsrc {
    const mfs_mesh *m;
    const uint32_t *list; /* NULL: vertex i is mesh vertex i */
    uint32_t nv;
    const mfs_mat4 *xf;   /* into the host's space, NULL if already there */
    mfs_mat4 nxf;         /* normal matrix of xf */
    const infl *skin;     /* NULL if not skinned */
} vsrc;

static inline uint32_t vid(const vsrc *v, uint32_t i)
{
    return v->list ? v->list[i] : i;
}

static void put_positions(batch *bt, const vsrc *v)
{
    put_va_header(bt->o, v->nv, GMF_POSITION, GMF_FLOAT, 3, 4);
    for (uint32_t i = 0; i < v->nv; i++) {
        float q[3];
        const float *p = v->m->positions[vid(v, i)];
        if (v->xf) {
            mfs_mat4_point(v->xf, p, q);
            p = q;
        }
        batch_f32x3(bt, p[0], p[1], neg(p[2]));
    }
    batch_flush(bt);
}

/* Directions: normals and tangents mirror Z like positions.  The binormal
 * also flips as a whole because v is flipped: Leadwerks' binormal points
 * along +v as stored, canonical bitangents along +v before the flip. */
static void put_dirs(batch *bt, const vsrc *v, float (*d)[3], const mfs_mat4 *xf, int32_t kind,
                     int binormal)
{
    put_va_header(bt->o, v->nv, kind, GMF_FLOAT, 3, 4);
    for (uint32_t i = 0; i < v->nv; i++) {
        float q[3];
        const float *p = d[vid(v, i)];
        if (xf) {
            mfs_mat4_vector(xf, p, q);
            mfs_normalize3(q);
            p = q;
        }
        if (binormal)
            batch_f32x3(bt, neg(p[0]), neg(p[1]), p[2]);
        else
            batch_f32x3(bt, p[0], p[1], neg(p[2]));
    }
    batch_flush(bt);
}

static uint8_t unorm8(float c)
{
    if (!(c > 0))
        return 0;
    if (c >= 1)
        return 255;
    return (uint8_t)(c * 255.0f + 0.5f);
}

static void put_colors(batch *bt, const vsrc *v)
{
    put_va_header(bt->o, v->nv, GMF_COLOR, GMF_UNSIGNED_BYTE, 4, 1);
    for (uint32_t i = 0; i < v->nv; i++) {
        const float *c = v->m->colors[vid(v, i)];
        uint8_t *p = batch_room(bt, 4);
        for (int k = 0; k < 4; k++)
            p[k] = unorm8(c[k]);
        bt->n += 4;
    }
    batch_flush(bt);
}

static void put_uvs(batch *bt, const vsrc *v, float (*uv)[2])
{
    put_va_header(bt->o, v->nv, GMF_TEXTURE_COORD, GMF_FLOAT, 2, 4);
    for (uint32_t i = 0; i < v->nv; i++) {
        const float *t = uv[vid(v, i)];
        uint8_t *p = batch_room(bt, 8);
        mfs_st_f32(p, t[0]);
        mfs_st_f32(p + 4, 1.0f - t[1]);
        bt->n += 8;
    }
    batch_flush(bt);
}

static void put_skin(batch *bt, const vsrc *v, int weights)
{
    put_va_header(bt->o, v->nv, weights ? GMF_BONEWEIGHT : GMF_BONEINDICE, GMF_UNSIGNED_BYTE, 4, 1);
    for (uint32_t i = 0; i < v->nv; i++) {
        const infl *f = &v->skin[vid(v, i)];
        memcpy(batch_room(bt, 4), weights ? f->q : f->id, 4);
        bt->n += 4;
    }
    batch_flush(bt);
}

/* Clockwise from the front in Leadwerks: each triangle reversed, unless the
 * placement into the host is itself a mirror, which reverses it again. */
static void put_indices(gmf *g, batch *bt, const vsrc *v, const chunk *c, int reverse)
{
    const mfs_mesh *m = v->m;
    uint32_t tri0 = c ? c->tri0 : 0, ntri = c ? c->ntri : m->n_faces;
    put_header(bt->o, GMF_INDICEARRAY, 0, 12 + ntri * 6);
    mfs_put_u32(bt->o, ntri * 3);
    mfs_put_i32(bt->o, GMF_TRIANGLES);
    mfs_put_i32(bt->o, GMF_UNSIGNED_SHORT);
    const uint32_t *ix = &m->indices[(size_t)tri0 * 3];
    for (uint32_t f = 0; f < ntri; f++, ix += 3) {
        uint32_t t[3] = {ix[0], ix[1], ix[2]};
        if (v->list)
            for (int k = 0; k < 3; k++)
                t[k] = g->local[t[k]];
        uint8_t *p = batch_room(bt, 6);
        for (int k = 0; k < 3; k++)
            mfs_st_u16(p + 2 * k, (uint16_t)t[reverse ? 2 - k : k]);
        bt->n += 6;
    }
    batch_flush(bt);
}

/* Lists a chunk's vertices in first-use order and maps mesh -> surface ids. */
static void chunk_vertices(gmf *g, const mfs_mesh *m, const chunk *c)
{
    uint32_t st = ++g->stamp, nl = 0;
    const uint32_t *ix = &m->indices[(size_t)c->tri0 * 3];
    for (size_t k = 0; k < (size_t)c->ntri * 3; k++) {
        uint32_t v = ix[k];
        if (g->mark[v] != st) {
            g->mark[v] = st;
            g->local[v] = nl;
            g->list[nl++] = v;
        }
    }
}

static uint32_t array_count(const mfs_mesh *m, int skinned)
{
    uint32_t n = 1 + (m->normals != NULL) + (m->colors != NULL) + (m->uv[0] != NULL);
    n += m->uv[0] && m->uv[1];
    n += m->tangents ? 2 : 0;
    n += skinned ? 2 : 0;
    return n;
}

static void put_surface(gmf *g, batch *bt, vsrc *v, const chunk *c, int reverse)
{
    mfs_sink *o = g->out;
    const mfs_mesh *m = v->m;
    const char *mat = m->material >= 0 ? g->matval[m->material] : NULL;
    put_header(o, GMF_SURFACE, (mat != NULL) + array_count(m, v->skin != NULL) + 1, 0);
    if (mat)
        put_prop(o, "material", mat);
    put_positions(bt, v);
    if (m->normals)
        put_dirs(bt, v, m->normals, v->xf ? &v->nxf : NULL, GMF_NORMAL, 0);
    if (m->colors)
        put_colors(bt, v);
    for (int k = 0; k < MFS_MAX_UV && m->uv[k]; k++)
        put_uvs(bt, v, m->uv[k]);
    if (m->tangents) {
        put_dirs(bt, v, m->tangents, v->xf, GMF_TANGENT, 0);
        put_dirs(bt, v, m->bitangents, v->xf, GMF_BINORMAL, 1);
    }
    if (v->skin) {
        put_skin(bt, v, 0);
        put_skin(bt, v, 1);
    }
    put_indices(g, bt, v, c, reverse);
}

/* Binds every vertex of m wholly to one bone: a rigid mesh that rides on a
 * bone is written as a skinned surface of the host (put_host_surfaces). */
static int rigid_skin(gmf *g, const mfs_mesh *m, uint8_t id, mfs_err *err)
{
    free(g->skin);
    g->skin = calloc(m->n_vertices, sizeof(infl));
    if (!g->skin)
        return mfs_errf(err, "mesh '%s': out of memory for skin weights", m->name);
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        g->skin[v].id[0] = id;
        g->skin[v].q[0] = 255;
    }
    return 0;
}

/* All surfaces of one mesh.  xf takes its vertices into the space of the
 * block that holds them (NULL: they are already there); rigid_bone >= 0
 * binds a rigid mesh wholly to that BONE id. */
static int put_mesh_surfaces(gmf *g, uint32_t mi, const mfs_mat4 *xf, int rigid_bone,
                             mfs_err *err)
{
    const mfs_mesh *m = &g->s->meshes[mi];
    const mesh_plan *p = &g->plan[mi];
    if (xf && mfs_mat4_is_identity(xf))
        xf = NULL;
    vsrc v = {.m = m, .xf = xf, .nv = m->n_vertices};
    if (xf)
        mfs_mat4_normal_matrix(&v.nxf, xf);
    if (p->skinned || rigid_bone >= 0) {
        if ((p->skinned ? gmf_build_skin(g, m, err) : rigid_skin(g, m, (uint8_t)rigid_bone, err)) < 0)
            return -1;
        v.skin = g->skin;
    }
    /* Z is mirrored, so triangles are reversed; a mirror baked into the
     * vertices reverses them back, keeping the front face in front. */
    int reverse = !(xf && mfs_mat4_det3(xf) < 0);
    batch *bt = malloc(sizeof *bt);
    if (!bt)
        return mfs_errf(err, "out of memory");
    bt->o = g->out;
    bt->n = 0;
    if (!p->chunks)
        put_surface(g, bt, &v, NULL, reverse);
    for (uint32_t c = 0; p->chunks && c < p->n_chunks; c++) {
        chunk_vertices(g, m, &p->chunks[c]);
        v.list = g->list;
        v.nv = p->chunks[c].nvert;
        put_surface(g, bt, &v, &p->chunks[c], reverse);
    }
    free(bt);
    return 0;
}

/* ---- what goes where ---- */

/* Meshes a node places that are written under its own MESH: rigid ones,
 * unless the node rides on a bone (those go to the host, bound to the
 * bone).  Node 0 also takes the meshes no node places. */
static int own_mesh(const gmf *g, uint32_t n, uint32_t mi)
{
    return g->plan[mi].eligible && !g->plan[mi].skinned && g->frame[n].bone < 0;
}

static uint32_t node_rigid_surfaces(const gmf *g, uint32_t n)
{
    const mfs_node *nd = &g->s->nodes[n];
    uint32_t k = 0;
    for (uint32_t i = 0; i < nd->n_meshes; i++)
        if (own_mesh(g, n, nd->meshes[i]))
            k += g->plan[nd->meshes[i]].n_chunks;
    if (n == 0)
        for (uint32_t i = 0; i < g->s->n_meshes; i++)
            if (g->mesh_node[i] < 0 && !g->plan[i].skinned)
                k += g->plan[i].n_chunks;
    return k;
}

/* Surfaces of the host: every skinned mesh, and every rigid mesh placed by
 * a bone or a node below one. */
static uint32_t host_surfaces(const gmf *g)
{
    const mfs_scene *s = g->s;
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n_meshes; i++)
        if (g->plan[i].skinned)
            k += g->plan[i].n_chunks;
    for (uint32_t n = 1; n < s->n_nodes; n++)
        for (uint32_t i = 0; g->frame[n].bone >= 0 && i < s->nodes[n].n_meshes; i++) {
            const mesh_plan *p = &g->plan[s->nodes[n].meshes[i]];
            if (p->eligible && !p->skinned)
                k += p->n_chunks;
        }
    return k;
}

/* Rigid meshes keep their node's world rotation and scale in their
 * vertices (the node's block is a translation); meshes no node places stay
 * where they are in model space. */
static int put_rigid_surfaces(gmf *g, uint32_t n, mfs_err *err)
{
    const mfs_node *nd = &g->s->nodes[n];
    for (uint32_t i = 0; i < nd->n_meshes; i++)
        if (own_mesh(g, n, nd->meshes[i]) &&
            put_mesh_surfaces(g, nd->meshes[i], &g->frame[n].bake, -1, err) < 0)
            return -1;
    if (n != 0)
        return 0;
    mfs_mat4 back;
    mfs_mat4_identity(&back);
    back.m[3] = neg(g->frame[0].at.m[3]);
    back.m[7] = neg(g->frame[0].at.m[7]);
    back.m[11] = neg(g->frame[0].at.m[11]);
    for (uint32_t i = 0; i < g->s->n_meshes; i++)
        if (g->mesh_node[i] < 0 && g->plan[i].eligible && !g->plan[i].skinned &&
            put_mesh_surfaces(g, i, &back, -1, err) < 0)
            return -1;
    return 0;
}

/* xf = inverse(host frame) x where: into the host's (translation-only)
 * frame. */
static void into_host(const gmf *g, const mfs_mat4 *where, mfs_mat4 *xf)
{
    *xf = *where;
    const mfs_mat4 *h = &g->frame[g->host].at;
    xf->m[3] -= h->m[3];
    xf->m[7] -= h->m[7];
    xf->m[11] -= h->m[11];
}

/* Skinned meshes are stored at bind pose in the host's frame, which is a
 * translation: the host's world rotation and scale are in the vertices, and
 * the top BONE matrices are relative to the same frame (bind_locals), so
 * skinning still gives the source pose.  A rigid mesh on a bone is stored
 * where the bone's bind pose carries it and bound wholly to that bone: a
 * loader that skins moves it with the bone, one that does not (and ignores
 * BONE matrices) still draws it in place. */
static int put_host_surfaces(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    mfs_mat4 xf;
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        if (!g->plan[i].skinned)
            continue;
        into_host(g, &g->world[gmf_place_of(g, i)], &xf);
        if (put_mesh_surfaces(g, i, &xf, -1, err) < 0)
            return -1;
    }
    for (uint32_t n = 1; n < s->n_nodes; n++) {
        const gmf_frame *f = &g->frame[n];
        if (f->bone < 0)
            continue;
        into_host(g, &f->target, &xf);
        for (uint32_t i = 0; i < s->nodes[n].n_meshes; i++) {
            uint32_t mi = s->nodes[n].meshes[i];
            if (g->plan[mi].eligible && !g->plan[mi].skinned &&
                put_mesh_surfaces(g, mi, &xf, g->bone_id[f->bone], err) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- animation keys ---- */

static double frame_time(const mfs_animation *an, uint32_t k)
{
    double t = k / GMF_FPS * an->ticks_per_second;
    return t < an->duration ? t : an->duration;
}

static void node_local_at(const gmf *g, uint32_t a, double t, uint32_t n, mfs_mat4 *out)
{
    const mfs_scene *s = g->s;
    int32_t c = g->chan[(size_t)a * s->n_nodes + n];
    if (c < 0)
        *out = s->nodes[n].local;
    else
        mfs_channel_sample(&s->animations[a].channels[c], t, &s->nodes[n].local, out);
}

static void node_world_at(const gmf *g, uint32_t a, double t, uint32_t n, mfs_mat4 *out)
{
    node_local_at(g, a, t, n, out);
    for (int32_t p = g->s->nodes[n].parent; p >= 0; p = g->s->nodes[p].parent) {
        mfs_mat4 l;
        node_local_at(g, a, t, (uint32_t)p, &l);
        mfs_mat4_mul(out, &l, out);
    }
}

/* A top bone's parent in the file is the host, not its scene parent, so its
 * key is its pose relative to the host as posed: world(host, t) x unbake. */
static void top_bone_at(const gmf *g, uint32_t a, double t, uint32_t n, mfs_mat4 *out)
{
    mfs_mat4 hw, ih;
    node_world_at(g, a, t, n, out);
    node_world_at(g, a, t, (uint32_t)g->host, &hw);
    if (mfs_mat4_invert(&ih, &hw) == 0)
        mfs_mat4_mul(out, &ih, out);
    mfs_mat4_mul(out, &g->frame[g->host].bake, out);
}

/* A MESH/NODE posed is world(n, t) x unbake(n) (its rest frame is
 * world x unbake, gmf_frames.h), so relative to its parent block the key is
 * bake(parent) x local(n, t) x unbake(n).  A BONE parent has no bake. */
static void limb_at(const gmf *g, uint32_t a, double t, uint32_t n, mfs_mat4 *out)
{
    int32_t p = g->s->nodes[n].parent;
    node_local_at(g, a, t, n, out);
    mfs_mat4_mul(out, out, &g->frame[n].unbake);
    if (p >= 0)
        mfs_mat4_mul(out, &g->frame[p].bake, out);
}

enum { KEYS_LIMB, KEYS_BONE };

/* Bones carry every frame of every animation; other limbs only the
 * animations that move them, and a 0-frame placeholder for the rest, so
 * that the k-th ANIMATIONKEYS block of every limb is animation k. */
static void put_keys(gmf *g, uint32_t n, int kind)
{
    const mfs_scene *s = g->s;
    int top = kind == KEYS_BONE && (s->nodes[n].parent < 0 || g->bone_id[s->nodes[n].parent] < 0);
    for (uint32_t a = 0; a < s->n_animations; a++) {
        int moves = kind == KEYS_BONE || g->chan[(size_t)a * s->n_nodes + n] >= 0;
        uint32_t nf = moves ? g->frames[a] : 0;
        put_header(g->out, GMF_ANIMATIONKEYS, 0, 4 + 64 * nf);
        mfs_put_u32(g->out, nf);
        for (uint32_t k = 0; k < nf; k++) {
            double t = frame_time(&s->animations[a], k);
            mfs_mat4 l;
            if (top)
                top_bone_at(g, a, t, n, &l);
            else if (kind == KEYS_BONE)
                node_local_at(g, a, t, n, &l);
            else
                limb_at(g, a, t, n, &l);
            put_matrix(g->out, &l);
        }
    }
}

/* ---- the tree ---- */

typedef struct walk {
    uint32_t *stack;
    uint32_t sp;
} walk;

static int is_bone(const gmf *g, uint32_t n)
{
    return g->bone_id[n] >= 0;
}

/* MESH (or NODE when it holds no surface) for a scene node that is not a
 * bone, with a pure translation for matrix (gmf_frames.h).  Children: keys,
 * name, surfaces, then BONEs (on the host) and child limbs, which are
 * pushed for the walk. */
static int put_limb(gmf *g, uint32_t n, walk *w, mfs_err *err)
{
    const mfs_node *nd = &g->s->nodes[n];
    int host = (int32_t)n == g->host;
    uint32_t nsurf = node_rigid_surfaces(g, n) + (host ? host_surfaces(g) : 0);
    uint32_t nlimb = 0;
    for (uint32_t c = 0; c < nd->n_children; c++)
        nlimb += !is_bone(g, nd->children[c]);
    uint32_t kids = g->s->n_animations + 1 + nsurf + (host ? g->n_top : 0) + nlimb;
    put_header(g->out, n == 0 || nsurf ? GMF_MESH : GMF_NODE, kids, 64);
    mfs_mat4 m;
    mfs_mat4_identity(&m);
    float t[3];
    gmf_limb_translation(g->s, g->frame, n, t);
    m.m[3] = t[0];
    m.m[7] = t[1];
    m.m[11] = t[2];
    put_matrix(g->out, &m);
    put_keys(g, n, KEYS_LIMB);
    put_prop(g->out, "name", nd->name);
    if (put_rigid_surfaces(g, n, err) < 0 || (host && put_host_surfaces(g, err) < 0))
        return -1;
    for (uint32_t c = nd->n_children; c-- > 0;)
        if (!is_bone(g, nd->children[c]))
            w->stack[w->sp++] = nd->children[c];
    if (host)
        for (uint32_t i = g->n_top; i-- > 0;)
            w->stack[w->sp++] = g->top[i] | STACK_BONE;
    return 0;
}

/* BONE: bind matrix, id; children: name, keys, child BONEs, then the
 * non-bone children hanging from it (node 0's stay on the root).  Meshes
 * the bone places are on the host (put_host_surfaces), so BONE blocks hold
 * only what real files show. */
static int put_bone(gmf *g, uint32_t n, walk *w)
{
    const mfs_node *nd = &g->s->nodes[n];
    uint32_t nbone = 0, nlimb = 0;
    for (uint32_t c = 0; c < nd->n_children; c++) {
        nbone += is_bone(g, nd->children[c]);
        nlimb += n != 0 && !is_bone(g, nd->children[c]);
    }
    put_header(g->out, GMF_BONE, 1 + g->s->n_animations + nbone + nlimb, 68);
    put_matrix(g->out, &g->bind_local[n]);
    mfs_put_i32(g->out, g->bone_id[n]);
    put_prop(g->out, "name", nd->name);
    put_keys(g, n, KEYS_BONE);
    for (uint32_t c = nd->n_children; c-- > 0 && n != 0;)
        if (!is_bone(g, nd->children[c]))
            w->stack[w->sp++] = nd->children[c];
    for (uint32_t c = nd->n_children; c-- > 0;)
        if (is_bone(g, nd->children[c]))
            w->stack[w->sp++] = nd->children[c] | STACK_BONE;
    return 0;
}

/* Pre-order walk with an explicit stack: scene trees can be deeper than a
 * worker thread's stack would like. */
static int put_tree(gmf *g, mfs_err *err)
{
    walk w = {malloc(sizeof(uint32_t) * (g->s->n_nodes + 2)), 0};
    if (!w.stack)
        return mfs_errf(err, "out of memory");
    put_header(g->out, GMF_FILE, 1, 4);
    mfs_put_i32(g->out, GMF_VERSION);
    w.stack[w.sp++] = 0;
    int rc = 0;
    while (w.sp && !g->out->err && rc == 0) {
        uint32_t item = w.stack[--w.sp];
        if (item & STACK_BONE)
            rc = put_bone(g, item & ~STACK_BONE, &w);
        else
            rc = put_limb(g, item, &w, err);
    }
    free(w.stack);
    return rc;
}

int mfs_write_gmf(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    (void)prep; /* nothing prepared is of use here */
    (void)o; /* no gmf option: source_frame only changes what the importer delivers */
    gmf g;
    memset(&g, 0, sizeof g);
    g.s = s;
    g.out = out;
    int rc = gmf_plan(&g, err);
    if (rc == 0)
        rc = put_tree(&g, err);
    gmf_free(&g);
    return rc;
}

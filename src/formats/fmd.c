/* Frenetic .fmd writer (docs/formats/fmd.md).
 *
 * The layout is FreneticModelConverter's; what goes into it follows what
 * FreneticGameEngine's reader actually does with it (research/fmd.md), which
 * is stricter than the spec: FGE silently drops texcoords or normals whose
 * count differs from the vertex count, builds collisioncomplex_ shapes from
 * consecutive vertices (ignoring indices), and hands each mesh's bones to the
 * mesh at the same index among *visible* meshes.
 *
 * FGE draws a static mesh at its stored vertices and never applies the node
 * tree to it, so by default every mesh is written placed: once per node that
 * places it, with that node's full world matrix baked in.  fmd_raw keeps
 * FMC's raw layout (one copy per mesh, mesh-local vertices). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frenetic.h"
#include "meshfs/formats.h"

/* libdeflate level for the gzip payload.  Measured on a 1M-triangle mesh
 * (docs/formats/fmd.md, "Compression level"): level 1 takes 0.16 s where
 * zlib's level 1 took 0.40 s and libdeflate's default (6) 0.44 s, for a file
 * 5 % larger than either, and the writers share a tight time budget. */
#define FMD_GZIP_LEVEL 1

#define I32_MAX_U 0x7fffffffu

/* One mesh record of the file: a scene mesh and the node that places this
 * copy (-1: no node places the mesh, or the raw layout). */
typedef struct fmd_entry {
    uint32_t mesh;
    int32_t node;
} fmd_entry;

/* Everything one write needs, computed once. */
typedef struct fmd_writer {
    const mfs_scene *s;
    mfs_sink *z;        /* the gzip stream the payload goes into */
    mfs_mat4 basis;     /* canonical frame -> FGE frame (identity for source_frame) */
    int placed;         /* bake each copy's placement (the default; !fmd_raw) */
    mfs_mat4 *world;    /* per node, model space (canonical frame); placed only */
    fmd_entry *entries; /* the file's mesh records, scene mesh order */
    uint64_t n_entries;
} fmd_writer;

/* How one mesh's vertex data is written. */
typedef struct mesh_xf {
    int bake;           /* transform positions and normals */
    int mirror;         /* bake matrix has det < 0: keep the winding as is */
    mfs_mat4 point;     /* basis * world of the placing node */
    mfs_mat4 normal;    /* its normal matrix */
} mesh_xf;

/* ---- names FGE treats specially (src/formats/frenetic.c) ---- */

static int fge_soup(const char *name)
{
    return mfs_fge_has_prefix(name, "collisioncomplex_");
}

/* ---- primitives ---- */

static void put_mat(mfs_sink *z, const mfs_mat4 *m)
{
    uint8_t b[64];
    for (int i = 0; i < 16; i++)
        mfs_st_f32(b + 4 * i, m->m[i]);
    mfs_put(z, b, sizeof b);
}

static void put_vec3(mfs_sink *z, const float v[3])
{
    uint8_t b[12];
    mfs_st_f32(b, v[0]);
    mfs_st_f32(b + 4, v[1]);
    mfs_st_f32(b + 8, v[2]);
    mfs_put(z, b, sizeof b);
}

static void put_string(mfs_sink *z, const char *str)
{
    size_t n = strlen(str);
    mfs_put_i32(z, (int32_t)n);
    mfs_put(z, str, n);
}

/* ---- canonical -> FGE ---- */

/* FGE is right-handed Z-up (PhysicsSpace gravity (0,0,-9.8), Camera3D.Up =
 * UnitZ, BasicEntity.RotateYToZ): (x, y, z) -> (x, -z, y), a +90 degree turn
 * about X, the same turn RotateYToZ applies. */
static void fge_basis(mfs_mat4 *a)
{
    memset(a, 0, sizeof *a);
    a->m[0] = 1;
    a->m[6] = -1;
    a->m[9] = 1;
    a->m[15] = 1;
}

/* The full world matrix of the placing node, parents included: FMC's
 * pretrans bakes Root x Node only and drops every intermediate parent
 * (docs/formats/fmd.md, departure 2). */
static void mesh_transform(const fmd_writer *w, int32_t node, mesh_xf *xf)
{
    memset(xf, 0, sizeof *xf);
    xf->bake = w->placed;
    if (!xf->bake)
        return;
    if (node >= 0)
        mfs_mat4_mul(&xf->point, &w->basis, &w->world[node]);
    else
        xf->point = w->basis;
    mfs_mat4_normal_matrix(&xf->normal, &xf->point);
    xf->mirror = mfs_mat4_det3(&xf->point) < 0;
}

static void put_position(mfs_sink *z, const float p[3], const mesh_xf *xf)
{
    if (!xf->bake) {
        put_vec3(z, p);
        return;
    }
    float q[3];
    mfs_mat4_point(&xf->point, p, q);
    put_vec3(z, q);
}

/* Unit length whatever happened before: FGE's debug build rejects normals
 * off unit length, and a normal matrix with scale stretches them.  A normal
 * that cannot be made unit (zero, NaN) becomes +Z, FGE's own fallback. */
static void put_normal(mfs_sink *z, const float n[3], const mesh_xf *xf)
{
    float v[3] = {n[0], n[1], n[2]};
    if (xf->bake)
        mfs_mat4_vector(&xf->normal, n, v);
    double l2 = (double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2];
    if (!(l2 > 1e-24) || !isfinite(l2)) {
        v[0] = 0;
        v[1] = 0;
        v[2] = 1;
    } else if (fabs(l2 - 1.0) > 1e-6) {
        mfs_normalize3(v);
    }
    put_vec3(z, v);
}

/* ---- faces ---- */

/* The triangle written for face f.  FMC imports with FlipWindingOrder, so
 * canonical (a,b,c) is written (c,b,a); points and lines become the
 * degenerate triangles FMC writes for them after that flip. */
static void face_corners(const mfs_mesh *m, uint32_t f, int mirror, uint32_t t[3])
{
    const uint32_t *ix = &m->indices[(size_t)f * m->prim];
    switch (m->prim) {
    case MFS_PRIM_POINTS:
        t[0] = t[1] = t[2] = ix[0];
        break;
    case MFS_PRIM_LINES:
        t[0] = ix[1];
        t[1] = ix[0];
        t[2] = ix[1];
        break;
    default:
        /* A mirroring bake turns the canonical CCW into CW already. */
        t[0] = mirror ? ix[0] : ix[2];
        t[1] = ix[1];
        t[2] = mirror ? ix[2] : ix[0];
        break;
    }
}

/* Area-weighted vertex normals from the canonical (CCW) triangles, for a
 * mesh the scene gives without normals.  Vertices no triangle touches stay
 * zero and are written as +Z by put_normal. */
static float (*smooth_normals(const mfs_mesh *m))[3]
{
    float(*n)[3] = calloc(m->n_vertices ? m->n_vertices : 1, sizeof *n);
    if (!n || m->prim != MFS_PRIM_TRIANGLES)
        return n;
    for (uint32_t f = 0; f < m->n_faces; f++) {
        const uint32_t *ix = &m->indices[(size_t)f * 3];
        const float *a = m->positions[ix[0]], *b = m->positions[ix[1]], *c = m->positions[ix[2]];
        float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        float cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                       e1[0] * e2[1] - e1[1] * e2[0]};
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 3; j++)
                n[ix[k]][j] += cr[j];
    }
    for (uint32_t v = 0; v < m->n_vertices; v++)
        mfs_normalize3(n[v]);
    return n;
}

/* ---- mesh body ---- */

static const float zero_uv[2] = {0, 0};

/* Vertex data in mesh order, faces as indices into it. */
static void put_indexed(mfs_sink *z, const mfs_mesh *m, const float (*nrm)[3], const mesh_xf *xf)
{
    mfs_put_i32(z, (int32_t)m->n_vertices);
    for (uint32_t v = 0; v < m->n_vertices; v++)
        put_position(z, m->positions[v], xf);
    mfs_put_i32(z, (int32_t)m->n_faces);
    for (uint32_t f = 0; f < m->n_faces; f++) {
        uint32_t t[3];
        face_corners(m, f, xf->mirror, t);
        uint8_t b[12];
        mfs_st_u32(b, t[0]);
        mfs_st_u32(b + 4, t[1]);
        mfs_st_u32(b + 8, t[2]);
        mfs_put(z, b, sizeof b);
    }
    /* Counts always equal the vertex count: FGE throws away the whole set
     * otherwise.  A mesh without UVs gets (0,0), what FGE would use. */
    mfs_put_i32(z, (int32_t)m->n_vertices);
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        const float *uv = m->uv[0] ? m->uv[0][v] : zero_uv;
        mfs_put_f32(z, uv[0]);
        mfs_put_f32(z, uv[1]);
    }
    mfs_put_i32(z, (int32_t)m->n_vertices);
    for (uint32_t v = 0; v < m->n_vertices; v++)
        put_normal(z, nrm[v], xf);
}

/* collisioncomplex_: FGE makes one triangle of every three consecutive
 * vertices and ignores the indices, so each written triangle gets its own
 * three vertices, in face order, and the indices are 0..n-1. */
static void put_soup(mfs_sink *z, const mfs_mesh *m, const float (*nrm)[3], const mesh_xf *xf)
{
    uint32_t n = m->n_faces * 3;
    uint32_t t[3];
    mfs_put_i32(z, (int32_t)n);
    for (uint32_t f = 0; f < m->n_faces; f++) {
        face_corners(m, f, xf->mirror, t);
        for (int k = 0; k < 3; k++)
            put_position(z, m->positions[t[k]], xf);
    }
    mfs_put_i32(z, (int32_t)m->n_faces);
    for (uint32_t i = 0; i < n; i++)
        mfs_put_u32(z, i);
    mfs_put_i32(z, (int32_t)n);
    for (uint32_t f = 0; f < m->n_faces; f++) {
        face_corners(m, f, xf->mirror, t);
        for (int k = 0; k < 3; k++) {
            const float *uv = m->uv[0] ? m->uv[0][t[k]] : zero_uv;
            mfs_put_f32(z, uv[0]);
            mfs_put_f32(z, uv[1]);
        }
    }
    mfs_put_i32(z, (int32_t)n);
    for (uint32_t f = 0; f < m->n_faces; f++) {
        face_corners(m, f, xf->mirror, t);
        for (int k = 0; k < 3; k++)
            put_normal(z, nrm[t[k]], xf);
    }
}

/* Bones FGE can attach: the mesh must be visible (FGE pairs bone lists with
 * visible meshes by file index) and the bone must name a node (FGE
 * dereferences the node it finds by name without a null check). */
static int bone_written(const mfs_mesh *m, const mfs_bone *b)
{
    return !mfs_fge_hidden(m->name) && b->node >= 0;
}

static void put_bones(mfs_sink *z, const mfs_mesh *m, const mesh_xf *xf)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->n_bones; i++)
        n += (uint32_t)bone_written(m, &m->bones[i]);
    mfs_put_i32(z, (int32_t)n);
    /* Placed vertices are no longer in mesh space; the offsets take them
     * back there first so skinning gives the same result. */
    mfs_mat4 unbake;
    int fix = xf->bake && mfs_mat4_invert(&unbake, &xf->point) == 0;
    for (uint32_t i = 0; i < m->n_bones; i++) {
        const mfs_bone *b = &m->bones[i];
        if (!bone_written(m, b))
            continue;
        put_string(z, b->name);
        mfs_put_i32(z, (int32_t)b->n_weights);
        for (uint32_t k = 0; k < b->n_weights; k++) {
            mfs_put_u32(z, b->weights[k].vertex);
            mfs_put_f32(z, b->weights[k].weight);
        }
        mfs_mat4 off = b->offset;
        if (fix)
            mfs_mat4_mul(&off, &b->offset, &unbake);
        put_mat(z, &off);
    }
}

static int put_mesh(fmd_writer *w, const fmd_entry *e, mfs_err *err)
{
    const mfs_mesh *m = &w->s->meshes[e->mesh];
    char *name = mfs_fge_mesh_name(m->name);
    float(*own)[3] = m->normals ? NULL : smooth_normals(m);
    if (!name || (!m->normals && !own)) {
        free(name);
        free(own);
        return mfs_errf(err, "mesh '%s': out of memory", m->name);
    }
    mesh_xf xf;
    mesh_transform(w, e->node, &xf);
    put_string(w->z, name);
    const float(*nrm)[3] = m->normals ? (const float(*)[3])m->normals : (const float(*)[3])own;
    if (fge_soup(m->name))
        put_soup(w->z, m, nrm, &xf);
    else
        put_indexed(w->z, m, nrm, &xf);
    put_bones(w->z, m, &xf);
    free(name);
    free(own);
    return 0;
}

/* ---- node tree ---- */

/* Pre-order with child counts, following the children lists; iterative so
 * a deep chain cannot exhaust the stack. */
static int put_nodes(fmd_writer *w, mfs_err *err)
{
    const mfs_scene *s = w->s;
    uint32_t *stack = malloc(sizeof *stack * s->n_nodes);
    if (!stack)
        return mfs_errf(err, "node tree: out of memory");
    uint32_t top = 0;
    stack[top++] = 0;
    while (top) {
        const mfs_node *n = &s->nodes[stack[--top]];
        put_string(w->z, n->name);
        mfs_mat4 m = n->local;
        if (n == &s->nodes[0])
            mfs_mat4_mul(&m, &w->basis, &n->local);
        put_mat(w->z, &m);
        mfs_put_i32(w->z, (int32_t)n->n_children);
        for (uint32_t c = n->n_children; c-- > 0;)
            stack[top++] = n->children[c];
    }
    free(stack);
    return 0;
}

/* ---- limits, checked before anything is written ---- */

static int check_limits(const mfs_scene *s, mfs_err *err)
{
    if (s->n_meshes == 0)
        return mfs_errf(err, "scene has no meshes (FGE refuses a model without one)");
    if (s->n_meshes > I32_MAX_U || s->n_nodes > I32_MAX_U)
        return mfs_errf(err, "%u meshes, %u nodes: counts exceed int32", s->n_meshes, s->n_nodes);
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        const mfs_mesh *m = &s->meshes[i];
        uint64_t verts = fge_soup(m->name) ? (uint64_t)m->n_faces * 3 : m->n_vertices;
        if (verts > I32_MAX_U || m->n_faces > I32_MAX_U)
            return mfs_errf(err, "mesh '%s': %llu vertices, %u faces exceed int32 counts", m->name,
                            (unsigned long long)verts, m->n_faces);
        for (uint32_t b = 0; b < m->n_bones; b++)
            if (m->bones[b].n_weights > I32_MAX_U)
                return mfs_errf(err, "mesh '%s': bone '%s': %u weights exceed int32", m->name,
                                m->bones[b].name, m->bones[b].n_weights);
    }
    return 0;
}

/* ---- the file ---- */

/* Visible meshes first, each group in entry order: FGE gives mesh i's bones
 * to the i-th *visible* mesh, which is only the same mesh when no hidden
 * mesh comes before it. */
static int put_meshes(fmd_writer *w, mfs_err *err)
{
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = 0; i < w->n_entries; i++)
            if (mfs_fge_hidden(w->s->meshes[w->entries[i].mesh].name) == pass &&
                put_mesh(w, &w->entries[i], err) < 0)
                return -1;
    return 0;
}

static int put_payload(fmd_writer *w, mfs_err *err)
{
    mfs_mat4 root;
    mfs_mat4_mul(&root, &w->basis, &w->s->nodes[0].local);
    put_mat(w->z, &root);
    mfs_put_i32(w->z, (int32_t)w->n_entries);
    if (put_meshes(w, err) < 0)
        return -1;
    return put_nodes(w, err);
}

/* Raw layout: one record per scene mesh, in scene order. */
static int raw_entries(fmd_writer *w, mfs_err *err)
{
    const mfs_scene *s = w->s;
    w->entries = malloc(sizeof *w->entries * s->n_meshes);
    if (!w->entries)
        return mfs_errf(err, "out of memory");
    for (uint32_t i = 0; i < s->n_meshes; i++)
        w->entries[i] = (fmd_entry){i, -1};
    w->n_entries = s->n_meshes;
    return 0;
}

/* Placed layout: FGE draws each record once, where its vertices are, so a
 * mesh several nodes place (instancing) gets one record per placement:
 * scene mesh order, and for each mesh its placing nodes in pre-order; a
 * mesh no node places gets one record, where it is. */
static int placed_entries(fmd_writer *w, mfs_err *err)
{
    const mfs_scene *s = w->s;
    uint64_t *count = calloc(s->n_meshes, sizeof *count);
    if (!count)
        return mfs_errf(err, "out of memory");
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
            count[s->nodes[i].meshes[k]]++;
    uint64_t total = 0;
    for (uint32_t m = 0; m < s->n_meshes; m++)
        total += count[m] ? count[m] : 1;
    if (total > I32_MAX_U) {
        free(count);
        return mfs_errf(err, "%llu placed meshes exceed the int32 mesh count",
                        (unsigned long long)total);
    }
    w->entries = malloc(sizeof *w->entries * (size_t)total);
    if (!w->entries) {
        free(count);
        return mfs_errf(err, "out of memory");
    }
    /* count becomes each mesh's next free slot */
    uint64_t at = 0;
    for (uint32_t m = 0; m < s->n_meshes; m++) {
        uint64_t n = count[m];
        count[m] = at;
        w->entries[at] = (fmd_entry){m, -1};
        at += n ? n : 1;
    }
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++) {
            uint32_t m = s->nodes[i].meshes[k];
            w->entries[count[m]++] = (fmd_entry){m, (int32_t)i};
        }
    w->n_entries = total;
    free(count);
    return 0;
}

/* fmd_raw alone chooses the layout; the pretrans option is accepted for
 * compatibility and read by no one (placement is the default). */
static int setup(fmd_writer *w, const mfs_scene *s, const mfs_options *o, mfs_err *err)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->placed = !(o && o->fmd_raw);
    if (o && o->source_frame)
        mfs_mat4_identity(&w->basis);
    else
        fge_basis(&w->basis);
    if (!w->placed)
        return raw_entries(w, err);
    w->world = malloc(sizeof *w->world * s->n_nodes);
    if (!w->world)
        return mfs_errf(err, "out of memory");
    mfs_scene_world(s, w->world);
    return placed_entries(w, err);
}

/* A gzip failure that is really the destination's (EFBIG at the output
 * cap, a write error) stays on the destination for the caller to report. */
static int finish_gzip(mfs_sink *gz, mfs_sink *out, mfs_err *err)
{
    int e = mfs_sink_finish(gz);
    if (!e || (out->err && out->err == e))
        return 0;
    return mfs_errf(err, "compressing: %s", strerror(e));
}

int mfs_write_fmd(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    (void)prep; /* nothing prepared is of use here */
    if (check_limits(s, err) < 0)
        return -1;
    fmd_writer w;
    mfs_sink gz;
    int rc = -1;
    if (setup(&w, s, o, err) < 0)
        goto done_setup;
    mfs_put(out, "FMD001", 6);
    if (mfs_sink_init_gzip(&gz, out, FMD_GZIP_LEVEL) < 0) {
        mfs_errf(err, "cannot start gzip stream: out of memory");
        goto done_setup;
    }
    w.z = &gz;
    if (put_payload(&w, err) == 0)
        rc = finish_gzip(&gz, out, err);
    mfs_sink_free(&gz);
done_setup:
    free(w.world);
    free(w.entries);
    return rc;
}

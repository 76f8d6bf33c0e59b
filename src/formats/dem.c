/* Despair Engine Model (.dem) writer.  Grammar, frame and every departure
 * from the README and the Blender exporter: docs/formats/dem.md.
 *
 * DEM is line-based text read by splitting on single spaces, with no node
 * hierarchy: meshes are written in model space (node transforms baked),
 * skinned meshes carry MD5-style weights against a flat joint list (rigid
 * meshes that node animation moves are bound whole to their node's joint,
 * since DEM animates joints only), and each animation becomes a sequence of
 * per-frame local joint transforms. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/formats.h"
#include "meshfs/util.h"

#include "dem_text.h"

/* Longest line built in memory: a keyword, at most 4 integers and 11
 * numbers (a skinned `v` line has 3 integers and 11 numbers), each at most
 * 22 bytes with its space; MFS_F32_BUF of slack because mfs_fmt_f32 may use
 * its whole buffer as scratch. */
#define LINE_MAX_BYTES (16 * 22 + 16 + MFS_F32_BUF)

/* Sequences longer than this are refused rather than written (a broken
 * duration would otherwise produce gigabytes of `f` lines). */
#define MAX_FRAMES 100000u

/* Frame rate used when the animation's own tick rate is not a whole number
 * of frames per second in [MIN_NATIVE_RATE, MAX_NATIVE_RATE]. */
#define DEFAULT_RATE 30
#define MIN_NATIVE_RATE 10
#define MAX_NATIVE_RATE 60

/* Every `f` line carries all nine components: tx ty tz rx ry rz sx sy sz. */
#define COMPONENTS 9
#define ALL_COMPONENTS_FLAGS 511

typedef struct dem_joint {
    uint32_t node;
    int32_t parent;        /* joint index, -1 for the root */
    mfs_mat4 bind;         /* model space at bind pose, canonical frame */
    mfs_mat4 bind_inv;
    int from_bone;         /* bind taken from a bone offset */
    int has_box;           /* weight positions seen for this joint */
    float bmin[3], bmax[3]; /* box of its weight positions, joint space */
} dem_joint;

typedef struct dem_plan {
    const mfs_scene *s;
    mfs_mat4 *world;         /* rest pose, per node */
    int32_t *mesh_node;      /* per mesh */
    int32_t *joint_of_node;  /* per node, -1 if not a joint */
    unsigned char *moved;    /* per node: node animation moves it */
    dem_joint *joints;
    uint32_t n_joints;
    uint32_t n_meshes;       /* triangle meshes, the ones written */
    float smin[3], smax[3];  /* box of the vertices that never move */
} dem_plan;

/* ---- frame: canonical (right-handed, +Y up) -> Blender (right-handed,
 * +Z up): (x, y, z) -> (x, -z, y), a rotation, so winding is unchanged ---- */

static void to_dem(const float c[3], float d[3])
{
    float x = c[0], y = c[1], z = c[2];
    d[0] = x;
    d[1] = -z;
    d[2] = y;
}

/* Rotation part of a canonical transform as a unit quaternion in the DEM
 * frame, w >= 0 (see docs: the reader derives w from x, y, z). */
static void quat_to_dem(const float q[4], float d[4])
{
    float x = q[0], y = q[1], z = q[2], w = q[3];
    d[0] = x;
    d[1] = -z;
    d[2] = y;
    d[3] = w;
    if (d[3] < 0)
        for (int i = 0; i < 4; i++)
            d[i] = -d[i];
}

/* Translation, rotation and scale of a canonical transform, in the DEM
 * frame.  Mapping the components equals decomposing R * m * R^T, because R
 * is a rotation: scale (sx, sy, sz) becomes (sx, sz, sy). */
static void decompose_dem(const mfs_mat4 *m, float t[3], float q[4], float sc[3])
{
    float ct[3], cq[4], cs[3];
    if (mfs_mat4_decompose(m, ct, cq, cs) < 0) {
        ct[0] = m->m[3];
        ct[1] = m->m[7];
        ct[2] = m->m[11];
        cq[0] = cq[1] = cq[2] = 0;
        cq[3] = 1;
        cs[0] = cs[1] = cs[2] = 0; /* singular: a zero scale collapsed it */
    }
    to_dem(ct, t);
    quat_to_dem(cq, q);
    sc[0] = cs[0];
    sc[1] = cs[2];
    sc[2] = cs[1];
}

static void box_empty(float mn[3], float mx[3])
{
    for (int k = 0; k < 3; k++) {
        mn[k] = FLT_MAX;
        mx[k] = -FLT_MAX;
    }
}

static void box_add(float mn[3], float mx[3], const float p[3])
{
    for (int k = 0; k < 3; k++) {
        if (p[k] < mn[k])
            mn[k] = p[k];
        if (p[k] > mx[k])
            mx[k] = p[k];
    }
}

/* ---- plan: what gets written ---- */

static void plan_free(dem_plan *pl)
{
    free(pl->world);
    free(pl->mesh_node);
    free(pl->joint_of_node);
    free(pl->moved);
    free(pl->joints);
}

static int is_written(const mfs_mesh *m)
{
    return m->prim == MFS_PRIM_TRIANGLES;
}

static void mesh_world(const dem_plan *pl, uint32_t mi, mfs_mat4 *w)
{
    if (pl->mesh_node[mi] >= 0)
        *w = pl->world[pl->mesh_node[mi]];
    else
        mfs_mat4_identity(w);
}

/* Whether the copy of mesh m placed by node is a rigid mesh that node
 * animation moves: it is bound whole to that node's joint. */
static int rides_node(const dem_plan *pl, const mfs_mesh *m, int32_t node)
{
    return node >= 0 && pl->moved[node] && !mfs_mesh_is_skinned(m);
}

/* Joints: every node a bone of a written mesh names, and every node that
 * places a rigid written mesh that node animation moves, plus all their
 * ancestors, in node (pre-)order, so a parent precedes its children and
 * every joint's parent node is a joint too. */
static void mark_joints(dem_plan *pl)
{
    const mfs_scene *s = pl->s;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        pl->joint_of_node[i] = -1;
    for (uint32_t mi = 0; mi < s->n_meshes; mi++) {
        const mfs_mesh *m = &s->meshes[mi];
        if (!is_written(m))
            continue;
        for (uint32_t b = 0; b < m->n_bones; b++)
            for (int32_t n = m->bones[b].node; n >= 0 && pl->joint_of_node[n] < 0;
                 n = s->nodes[n].parent)
                pl->joint_of_node[n] = 0;
    }
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++) {
            const mfs_mesh *m = &s->meshes[s->nodes[i].meshes[k]];
            if (!is_written(m) || !rides_node(pl, m, (int32_t)i))
                continue;
            for (int32_t n = (int32_t)i; n >= 0 && pl->joint_of_node[n] < 0; n = s->nodes[n].parent)
                pl->joint_of_node[n] = 0;
        }
    pl->n_joints = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (pl->joint_of_node[i] == 0)
            pl->joint_of_node[i] = (int32_t)pl->n_joints++;
        else
            pl->joint_of_node[i] = -1;
}

/* Bind pose of each joint in model space: from the first bone (mesh order)
 * that names it, bind = mesh world * inverse(offset), which is what makes
 * joint * weight position = the model-space vertex for that mesh; joints
 * no bone names (ancestors only) use their rest world matrix. */
static void set_binds(dem_plan *pl)
{
    const mfs_scene *s = pl->s;
    uint32_t j = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (pl->joint_of_node[i] < 0)
            continue;
        dem_joint *jt = &pl->joints[j++];
        memset(jt, 0, sizeof *jt);
        jt->node = i;
        int32_t p = s->nodes[i].parent;
        jt->parent = p >= 0 ? pl->joint_of_node[p] : -1;
        jt->bind = pl->world[i];
    }
    for (uint32_t mi = 0; mi < s->n_meshes; mi++) {
        const mfs_mesh *m = &s->meshes[mi];
        if (!is_written(m))
            continue;
        mfs_mat4 w;
        mesh_world(pl, mi, &w);
        for (uint32_t b = 0; b < m->n_bones; b++) {
            const mfs_bone *bo = &m->bones[b];
            if (bo->node < 0)
                continue;
            dem_joint *jt = &pl->joints[pl->joint_of_node[bo->node]];
            mfs_mat4 inv;
            if (jt->from_bone || mfs_mat4_invert(&inv, &bo->offset) < 0)
                continue;
            mfs_mat4_mul(&jt->bind, &w, &inv);
            jt->from_bone = 1;
        }
    }
    for (uint32_t k = 0; k < pl->n_joints; k++) {
        dem_joint *jt = &pl->joints[k];
        if (mfs_mat4_invert(&jt->bind_inv, &jt->bind) < 0)
            mfs_mat4_identity(&jt->bind_inv);
        box_empty(jt->bmin, jt->bmax);
    }
}

static int plan_init(dem_plan *pl, const mfs_scene *s, mfs_err *err)
{
    memset(pl, 0, sizeof *pl);
    pl->s = s;
    size_t nn = s->n_nodes ? s->n_nodes : 1, nm = s->n_meshes ? s->n_meshes : 1;
    pl->world = malloc(nn * sizeof *pl->world);
    pl->mesh_node = malloc(nm * sizeof *pl->mesh_node);
    pl->joint_of_node = malloc(nn * sizeof *pl->joint_of_node);
    pl->moved = malloc(nn);
    if (!pl->world || !pl->mesh_node || !pl->joint_of_node || !pl->moved)
        return mfs_errf(err, "out of memory");
    mfs_scene_moved_nodes(s, pl->moved);
    mfs_scene_world(s, pl->world);
    mfs_scene_mesh_nodes(s, pl->mesh_node);
    /* a mesh is written at every node that places it (instancing), and
     * once, where it is, if no node does */
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
            pl->n_meshes += is_written(&s->meshes[s->nodes[i].meshes[k]]);
    for (uint32_t i = 0; i < s->n_meshes; i++)
        pl->n_meshes += pl->mesh_node[i] < 0 && is_written(&s->meshes[i]);
    mark_joints(pl);
    pl->joints = malloc((pl->n_joints ? pl->n_joints : 1) * sizeof *pl->joints);
    if (!pl->joints)
        return mfs_errf(err, "out of memory");
    set_binds(pl);
    box_empty(pl->smin, pl->smax);
    return 0;
}

/* ---- header and joints ---- */

static void write_header(const dem_plan *pl, const mfs_options *o, mfs_sink *out)
{
    mfs_put_str(out, "DEM 10\nmodel ");
    dem_put_model_name(out, pl->s, o);
    mfs_put_u8(out, '\n');
    dem_put_count(out, "joints", pl->n_joints);
    dem_put_count(out, "meshes", pl->n_meshes);
    dem_put_count(out, "sequences", pl->s->n_animations);
}

/* j name parent px py pz qx qy qz: bind pose in model space. */
static void write_joints(const dem_plan *pl, mfs_sink *out)
{
    char line[LINE_MAX_BYTES];
    for (uint32_t k = 0; k < pl->n_joints; k++) {
        const dem_joint *jt = &pl->joints[k];
        float t[3], q[4], sc[3];
        decompose_dem(&jt->bind, t, q, sc);
        mfs_put_str(out, "j ");
        dem_put_name(out, pl->s->nodes[jt->node].name, "joint");
        char *p = dem_put_int(line, jt->parent);
        for (int i = 0; i < 3; i++)
            p = dem_put_num(p, t[i]);
        for (int i = 0; i < 3; i++)
            p = dem_put_num(p, q[i]);
        dem_end_line(out, line, p);
    }
}

/* ---- meshes ---- */

/* Vertex data of one mesh, ready to print: model space, canonical frame. */
typedef struct mesh_data {
    float (*pos)[3];
    float (*nrm)[3];
    /* skinning, grouped by vertex: weights start[v] .. start[v]+count[v]-1 */
    uint32_t *start, *count;
    uint32_t *w_joint;
    float *w_bias;
    uint32_t n_weights;
    int mirror; /* placement has det < 0: triangles are written (a, c, b) */
} mesh_data;

static void mesh_data_free(mesh_data *md)
{
    free(md->pos);
    free(md->nrm);
    free(md->start);
    free(md->count);
    free(md->w_joint);
    free(md->w_bias);
}

/* Smooth normals for meshes that have none: area-weighted sum of the face
 * normals around each vertex (the cross product's length is twice the
 * area), so the loader gets usable lighting rather than zeros. */
static void smooth_normals(const mfs_mesh *m, float (*pos)[3], float (*nrm)[3], int mirror)
{
    memset(nrm, 0, sizeof *nrm * m->n_vertices);
    for (uint32_t f = 0; f < m->n_faces; f++) {
        const uint32_t *t = &m->indices[3 * (size_t)f];
        float e1[3], e2[3], n[3];
        for (int k = 0; k < 3; k++) {
            e1[k] = pos[t[1]][k] - pos[t[0]][k];
            e2[k] = pos[t[2]][k] - pos[t[0]][k];
        }
        n[0] = e1[1] * e2[2] - e1[2] * e2[1];
        n[1] = e1[2] * e2[0] - e1[0] * e2[2];
        n[2] = e1[0] * e2[1] - e1[1] * e2[0];
        if (mirror) /* the triangle is written (a, c, b): its front is the other side */
            for (int k = 0; k < 3; k++)
                n[k] = -n[k];
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++)
                nrm[t[c]][k] += n[k];
    }
    for (uint32_t v = 0; v < m->n_vertices; v++)
        mfs_normalize3(nrm[v]);
}

/* Positions and normals placed in model space by the mesh's node.  An
 * identity placement keeps the source values bit for bit. */
static int place_vertices(const dem_plan *pl, uint32_t mi, int32_t node, mesh_data *md,
                          mfs_err *err)
{
    const mfs_mesh *m = &pl->s->meshes[mi];
    size_t nv = m->n_vertices ? m->n_vertices : 1;
    md->pos = malloc(nv * sizeof *md->pos);
    md->nrm = malloc(nv * sizeof *md->nrm);
    if (!md->pos || !md->nrm)
        return mfs_errf(err, "out of memory");
    mfs_mat4 w, nm;
    if (node >= 0)
        w = pl->world[node];
    else
        mfs_mat4_identity(&w);
    int ident = mfs_mat4_is_identity(&w);
    /* A mirroring placement turns counter-clockwise triangles clockwise;
     * DEM's front faces are counter-clockwise (research/dem_vrt.md,
     * Topic A, "Winding"), so such a mesh's triangles get two corners
     * swapped. */
    md->mirror = !ident && mfs_mat4_det3(&w) < 0;
    if (ident) {
        memcpy(md->pos, m->positions, sizeof *md->pos * m->n_vertices);
    } else {
        for (uint32_t v = 0; v < m->n_vertices; v++)
            mfs_mat4_point(&w, m->positions[v], md->pos[v]);
    }
    if (!m->normals) {
        smooth_normals(m, md->pos, md->nrm, md->mirror);
    } else if (ident) {
        memcpy(md->nrm, m->normals, sizeof *md->nrm * m->n_vertices);
    } else {
        mfs_mat4_normal_matrix(&nm, &w);
        for (uint32_t v = 0; v < m->n_vertices; v++) {
            mfs_mat4_vector(&nm, m->normals[v], md->nrm[v]);
            mfs_normalize3(md->nrm[v]);
        }
    }
    return 0;
}

/* MD5 skinning (and the bounds below) take a vertex as a convex
 * combination of its weights; sources are often off by float rounding or
 * by dropped weights (0.999, 1.002), so each vertex's biases are scaled to
 * sum to 1. */
static void normalise_biases(uint32_t n_vertices, mesh_data *md)
{
    for (uint32_t v = 0; v < n_vertices; v++) {
        double sum = 0;
        for (uint32_t i = md->start[v]; i < md->start[v] + md->count[v]; i++)
            sum += md->w_bias[i];
        if (sum > 0 && sum != 1.0)
            for (uint32_t i = md->start[v]; i < md->start[v] + md->count[v]; i++)
                md->w_bias[i] = (float)(md->w_bias[i] / sum);
    }
}

/* A rigid mesh that node animation moves: every vertex weighted 1 to the
 * joint of the node that places this copy, so the sequence carries it. */
static int bind_rigid(const dem_plan *pl, const mfs_mesh *m, int32_t node, mesh_data *md,
                      mfs_err *err)
{
    size_t nv = m->n_vertices ? m->n_vertices : 1;
    md->start = malloc(nv * sizeof *md->start);
    md->count = malloc(nv * sizeof *md->count);
    md->w_joint = malloc(nv * sizeof *md->w_joint);
    md->w_bias = malloc(nv * sizeof *md->w_bias);
    if (!md->start || !md->count || !md->w_joint || !md->w_bias)
        return mfs_errf(err, "out of memory");
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        md->start[v] = v;
        md->count[v] = 1;
        md->w_joint[v] = (uint32_t)pl->joint_of_node[node];
        md->w_bias[v] = 1.0f;
    }
    md->n_weights = m->n_vertices;
    return 0;
}

/* Weights of bones whose node is known and whose weight is positive,
 * grouped by vertex in bone order (MD5 layout), biases summing to 1. */
static int gather_weights(const dem_plan *pl, const mfs_mesh *m, mesh_data *md, mfs_err *err)
{
    size_t nv = m->n_vertices ? m->n_vertices : 1;
    md->start = calloc(nv, sizeof *md->start);
    md->count = calloc(nv, sizeof *md->count);
    if (!md->start || !md->count)
        return mfs_errf(err, "out of memory");
    uint64_t total = 0;
    for (uint32_t b = 0; b < m->n_bones; b++) {
        const mfs_bone *bo = &m->bones[b];
        if (bo->node < 0)
            continue;
        for (uint32_t i = 0; i < bo->n_weights; i++)
            if (bo->weights[i].weight > 0 && bo->weights[i].weight <= FLT_MAX) {
                md->count[bo->weights[i].vertex]++;
                total++;
            }
    }
    if (total > UINT32_MAX)
        return mfs_errf(err, "%llu weights exceed the 2^32-1 a count can hold",
                        (unsigned long long)total);
    md->n_weights = (uint32_t)total;
    md->w_joint = malloc((total ? total : 1) * sizeof *md->w_joint);
    md->w_bias = malloc((total ? total : 1) * sizeof *md->w_bias);
    if (!md->w_joint || !md->w_bias)
        return mfs_errf(err, "out of memory");
    uint32_t acc = 0;
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        md->start[v] = acc;
        acc += md->count[v];
        md->count[v] = 0; /* refilled below as a cursor */
    }
    for (uint32_t b = 0; b < m->n_bones; b++) {
        const mfs_bone *bo = &m->bones[b];
        if (bo->node < 0)
            continue;
        uint32_t jt = (uint32_t)pl->joint_of_node[bo->node];
        for (uint32_t i = 0; i < bo->n_weights; i++) {
            const mfs_weight *wt = &bo->weights[i];
            if (!(wt->weight > 0 && wt->weight <= FLT_MAX))
                continue;
            uint32_t at = md->start[wt->vertex] + md->count[wt->vertex]++;
            md->w_joint[at] = jt;
            md->w_bias[at] = wt->weight;
        }
    }
    normalise_biases(m->n_vertices, md);
    return 0;
}

static void write_vertices(const mfs_mesh *m, const mesh_data *md, mfs_sink *out)
{
    char line[LINE_MAX_BYTES];
    static const char white[] = " 1.0 1.0 1.0";
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        float d[3];
        line[0] = 'v';
        char *p = dem_put_uint(line + 1, v);
        to_dem(md->pos[v], d);
        for (int k = 0; k < 3; k++)
            p = dem_put_num(p, d[k]);
        to_dem(md->nrm[v], d);
        for (int k = 0; k < 3; k++)
            p = dem_put_num(p, d[k]);
        if (m->uv[0]) {
            p = dem_put_num(p, m->uv[0][v][0]);
            p = dem_put_num(p, m->uv[0][v][1]);
        } else {
            memcpy(p, " 0.0 0.0", 8);
            p += 8;
        }
        if (m->colors) {
            for (int k = 0; k < 3; k++)
                p = dem_put_num(p, m->colors[v][k]);
        } else {
            memcpy(p, white, sizeof white - 1);
            p += sizeof white - 1;
        }
        if (md->start) {
            p = dem_put_uint(p, md->start[v]);
            p = dem_put_uint(p, md->count[v]);
        }
        dem_end_line(out, line, p);
    }
}

static void write_triangles(const mfs_mesh *m, int mirror, mfs_sink *out)
{
    char line[LINE_MAX_BYTES];
    dem_put_count(out, "tris", m->n_faces);
    for (uint32_t f = 0; f < m->n_faces; f++) {
        const uint32_t *t = &m->indices[3 * (size_t)f];
        line[0] = 't';
        char *p = dem_put_uint(line + 1, f);
        p = dem_put_uint(p, t[0]);
        p = dem_put_uint(p, t[mirror ? 2 : 1]);
        p = dem_put_uint(p, t[mirror ? 1 : 2]);
        dem_end_line(out, line, p);
    }
}

/* w index joint bias px py pz, position in the joint's bind space; also
 * grows each joint's weight box (for the sequences' bounds) and the static
 * box with vertices that have no weight. */
static void write_weights(dem_plan *pl, const mfs_mesh *m, const mesh_data *md, mfs_sink *out)
{
    char line[LINE_MAX_BYTES];
    dem_put_count(out, "weights", md->n_weights);
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        if (md->count[v] == 0)
            box_add(pl->smin, pl->smax, md->pos[v]);
        for (uint32_t i = md->start[v]; i < md->start[v] + md->count[v]; i++) {
            dem_joint *jt = &pl->joints[md->w_joint[i]];
            float jp[3], d[3];
            mfs_mat4_point(&jt->bind_inv, md->pos[v], jp);
            box_add(jt->bmin, jt->bmax, jp);
            jt->has_box = 1;
            to_dem(jp, d);
            line[0] = 'w';
            char *p = dem_put_uint(line + 1, i);
            p = dem_put_uint(p, md->w_joint[i]);
            p = dem_put_num(p, md->w_bias[i]);
            for (int k = 0; k < 3; k++)
                p = dem_put_num(p, d[k]);
            dem_end_line(out, line, p);
        }
    }
}

static const char *material_name(const mfs_scene *s, const mfs_mesh *m, char *buf, size_t n)
{
    if (m->material < 0)
        return "default";
    const char *name = s->materials[m->material].name;
    if (name && *name)
        return name;
    snprintf(buf, n, "material_%d", m->material);
    return buf;
}

/* Mesh mi as placed by node (-1: where it is). */
static int write_mesh(dem_plan *pl, uint32_t mi, int32_t node, mfs_sink *out, mfs_err *err)
{
    const mfs_scene *s = pl->s;
    const mfs_mesh *m = &s->meshes[mi];
    mesh_data md;
    memset(&md, 0, sizeof md);
    char fallback[32], matbuf[32];
    snprintf(fallback, sizeof fallback, "mesh_%u", mi);
    const char *name = m->name;
    if ((!name || !*name) && node >= 0)
        name = s->nodes[node].name;

    int rc = place_vertices(pl, mi, node, &md, err);
    if (rc == 0 && mfs_mesh_is_skinned(m))
        rc = gather_weights(pl, m, &md, err);
    else if (rc == 0 && rides_node(pl, m, node))
        rc = bind_rigid(pl, m, node, &md, err);
    if (rc < 0) {
        mesh_data_free(&md);
        return mfs_err_prefix(err, "mesh '%s'", m->name);
    }
    dem_put_named(out, "mesh", name, fallback);
    dem_put_named(out, "mat", material_name(s, m, matbuf, sizeof matbuf), "default");
    dem_put_count(out, "verts", m->n_vertices);
    write_vertices(m, &md, out);
    write_triangles(m, md.mirror, out);
    if (md.start) {
        write_weights(pl, m, &md, out);
    } else {
        dem_put_count(out, "weights", 0);
        for (uint32_t v = 0; v < m->n_vertices; v++)
            box_add(pl->smin, pl->smax, md.pos[v]);
    }
    mesh_data_free(&md);
    return 0;
}

/* ---- sequences ---- */

static uint32_t sequence_rate(const mfs_animation *a)
{
    double t = a->ticks_per_second;
    if (t >= MIN_NATIVE_RATE && t <= MAX_NATIVE_RATE && t == floor(t))
        return (uint32_t)t;
    return DEFAULT_RATE;
}

/* Frames 0..n-1 at `rate`, the last one at (or just past, clamped to) the
 * end: round(duration in seconds * rate) + 1. */
static int sequence_frames(const mfs_animation *a, uint32_t rate, uint32_t *n, mfs_err *err)
{
    double f = floor(a->duration / a->ticks_per_second * rate + 0.5);
    if (!(f < MAX_FRAMES))
        return mfs_errf(err, "animation '%s': %.0f frames at %u fps exceed the %u-frame limit",
                        a->name, f + 1, rate, MAX_FRAMES);
    *n = (uint32_t)f + 1;
    return 0;
}

static double frame_time(const mfs_animation *a, uint32_t rate, uint32_t f)
{
    double t = (double)f * a->ticks_per_second / rate;
    return t < a->duration ? t : a->duration;
}

/* World matrix of each joint at this pose (parents precede children). */
static void pose_joints(const dem_plan *pl, const mfs_mat4 *local, mfs_mat4 *jw)
{
    for (uint32_t k = 0; k < pl->n_joints; k++) {
        const dem_joint *jt = &pl->joints[k];
        if (jt->parent < 0)
            jw[k] = local[jt->node];
        else
            mfs_mat4_mul(&jw[k], &jw[jt->parent], &local[jt->node]);
    }
}

/* Box around the skinned model at one pose: each joint's weight box moved
 * by the joint (all 8 corners), plus the vertices that never move.  A
 * vertex whose biases sum to 1 is a convex combination of points inside
 * those boxes, so the box contains it. */
static void pose_bounds(const dem_plan *pl, const mfs_mat4 *jw, float mn[3], float mx[3])
{
    box_empty(mn, mx);
    if (pl->smin[0] <= pl->smax[0]) {
        box_add(mn, mx, pl->smin);
        box_add(mn, mx, pl->smax);
    }
    for (uint32_t k = 0; k < pl->n_joints; k++) {
        const dem_joint *jt = &pl->joints[k];
        if (!jt->has_box)
            continue;
        for (int c = 0; c < 8; c++) {
            float p[3] = {(c & 1) ? jt->bmax[0] : jt->bmin[0], (c & 2) ? jt->bmax[1] : jt->bmin[1],
                          (c & 4) ? jt->bmax[2] : jt->bmin[2]};
            float w[3];
            mfs_mat4_point(&jw[k], p, w);
            box_add(mn, mx, w);
        }
    }
    if (mn[0] > mx[0]) { /* nothing at all */
        memset(mn, 0, 3 * sizeof *mn);
        memset(mx, 0, 3 * sizeof *mx);
    }
}

static void write_sequence_joints(const dem_plan *pl, mfs_sink *out)
{
    char line[LINE_MAX_BYTES];
    dem_put_count(out, "joints", pl->n_joints);
    for (uint32_t k = 0; k < pl->n_joints; k++) {
        mfs_put_str(out, "j ");
        dem_put_name(out, pl->s->nodes[pl->joints[k].node].name, "joint");
        char *p = dem_put_int(line, pl->joints[k].parent);
        p = dem_put_uint(p, ALL_COMPONENTS_FLAGS);
        p = dem_put_uint(p, (uint64_t)k * COMPONENTS);
        dem_end_line(out, line, p);
    }
}

static int write_sequence(const dem_plan *pl, uint32_t ai, mfs_sink *out, mfs_err *err)
{
    const mfs_scene *s = pl->s;
    const mfs_animation *a = &s->animations[ai];
    uint32_t rate = sequence_rate(a), nf = 0;
    if (sequence_frames(a, rate, &nf, err) < 0)
        return -1;
    mfs_mat4 *local = malloc((s->n_nodes ? s->n_nodes : 1) * sizeof *local);
    mfs_mat4 *jw = malloc((pl->n_joints ? pl->n_joints : 1) * sizeof *jw);
    if (!local || !jw) {
        free(local);
        free(jw);
        return mfs_errf(err, "animation '%s': out of memory", a->name);
    }
    char fallback[32], line[LINE_MAX_BYTES];
    snprintf(fallback, sizeof fallback, "sequence_%u", ai);
    dem_put_named(out, "sequence", a->name, fallback);
    dem_put_count(out, "rate", rate);
    dem_put_count(out, "components", COMPONENTS);
    write_sequence_joints(pl, out);

    /* Two passes over the poses (bounds, then frames): sampling is cheap
     * next to printing, and nothing per frame needs storing. */
    dem_put_count(out, "bounds", nf);
    for (uint32_t f = 0; f < nf && !out->err; f++) {
        float mn[3], mx[3], dmn[3], dmx[3];
        mfs_scene_pose(s, a, frame_time(a, rate, f), local);
        pose_joints(pl, local, jw);
        pose_bounds(pl, jw, mn, mx);
        /* (x, y, z) -> (x, -z, y) swaps which end of z is the minimum */
        float lo[3] = {mn[0], mn[1], mx[2]}, hi[3] = {mx[0], mx[1], mn[2]};
        to_dem(lo, dmn);
        to_dem(hi, dmx);
        line[0] = 'b';
        char *p = line + 1;
        for (int k = 0; k < 3; k++)
            p = dem_put_num(p, dmn[k]);
        for (int k = 0; k < 3; k++)
            p = dem_put_num(p, dmx[k]);
        dem_end_line(out, line, p);
    }
    dem_put_count(out, "events", 0);
    dem_put_count(out, "frames", nf);
    for (uint32_t f = 0; f < nf && !out->err; f++) {
        mfs_scene_pose(s, a, frame_time(a, rate, f), local);
        for (uint32_t k = 0; k < pl->n_joints; k++) {
            float t[3], q[4], sc[3];
            decompose_dem(&local[pl->joints[k].node], t, q, sc);
            line[0] = 'f';
            char *p = dem_put_uint(line + 1, f);
            p = dem_put_uint(p, k);
            for (int i = 0; i < 3; i++)
                p = dem_put_num(p, t[i]);
            for (int i = 0; i < 3; i++)
                p = dem_put_num(p, q[i]);
            for (int i = 0; i < 3; i++)
                p = dem_put_num(p, sc[i]);
            dem_end_line(out, line, p);
        }
    }
    free(local);
    free(jw);
    return 0;
}

/* ---- entry ---- */

int mfs_write_dem(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    (void)prep; /* nothing prepared is of use here */
    dem_plan pl;
    int rc = plan_init(&pl, s, err);
    if (rc == 0) {
        write_header(&pl, o, out);
        write_joints(&pl, out);
        for (uint32_t ni = 0; ni < s->n_nodes && rc == 0 && !out->err; ni++)
            for (uint32_t k = 0; k < s->nodes[ni].n_meshes && rc == 0; k++) {
                uint32_t mi = s->nodes[ni].meshes[k];
                if (is_written(&s->meshes[mi]))
                    rc = write_mesh(&pl, mi, (int32_t)ni, out, err);
            }
        for (uint32_t mi = 0; mi < s->n_meshes && rc == 0 && !out->err; mi++)
            if (pl.mesh_node[mi] < 0 && is_written(&s->meshes[mi]))
                rc = write_mesh(&pl, mi, -1, out, err);
        for (uint32_t ai = 0; ai < s->n_animations && rc == 0 && !out->err; ai++)
            rc = write_sequence(&pl, ai, out, err);
    }
    plan_free(&pl);
    if (rc == 0 && out->err)
        rc = mfs_errf(err, "%s", strerror(out->err));
    if (rc < 0)
        return mfs_err_prefix(err, "dem");
    return 0;
}

/* Folding assimp's FBX helper chains into their real nodes.
 *
 * Why not let assimp fold them (AI_CONFIG_IMPORT_FBX_PRESERVE_PIVOTS off)?
 * In 5.2.5 its folded path multiplies PostRotation in uninverted and lets a
 * node's children inherit its geometric transform, and animation channels
 * meant for helper nodes then target nothing (measured and read in its
 * source: shared/research/fbx_transforms.md).  The preserved chain is right,
 * so it is imported as is and collapsed here, where the rule is ours:
 *
 *   chain of node N, top down (all optional, each a helper node):
 *     Translation RotationOffset RotationPivot PreRotation Rotation
 *     PostRotation (already inverted) RotationPivotInverse ScalingOffset
 *     ScalingPivot Scaling ScalingPivotInverse        -> N's local matrix
 *     GeometricTranslation GeometricRotation GeometricScaling
 *                                                     -> N's meshes only
 *   N (identity, carries the meshes)
 *     GeometricScalingInverse GeometricRotationInverse
 *     GeometricTranslationInverse                     -> dropped
 *       N's children
 *
 * The general tool is a per-node list of matrices ("elements") that
 * premultiply the node's own local matrix in the folded scene.  An element
 * may come from a removed helper whose channels then animate it; the node's
 * new channel samples the whole list at the union of its key times.
 *
 * FBX's InheritType, the other correction of an FBX scene, is
 * fbx_inherit.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fbx_chain.h"

typedef enum kind { K_NODE, K_PRE, K_GEO, K_POST } kind;

/* One factor of a folded local matrix: rest matrix m, animated by the
 * channels of old node `node` when that is >= 0. */
typedef struct elem {
    int32_t node;
    mfs_mat4 m;
} elem;

typedef struct kept {
    uint32_t old;
    int32_t parent;      /* new index */
    elem *pre;           /* premultiplied into the local, top first */
    uint32_t n_pre;
    int32_t postrot;     /* old index of the chain's PostRotation helper, or -1 */
    int real;            /* the real node of a chain assimp built */
} kept;

typedef struct fold {
    mfs_scene *s;
    mfs_err *err;
    kind *kinds;
    uint32_t *prefix;    /* length of the name before the mark */
    int32_t *real_of;    /* helper -> its real node (old index), -1 if dissolved */
    int32_t *postrot;    /* real node -> its PostRotation helper */
    uint8_t *is_real;    /* the node a matched chain ends at */
    mfs_mat4 *geo;       /* real node -> product of its Geometric* helpers */
    uint8_t *has_geo;
    int32_t *new_index;  /* old -> new, -1 when removed */
    kept *kept;
    uint32_t n_kept;
    elem *stack;         /* elements pending for the next kept node; each
                            kept node's children start above its own */
    double size;         /* the model's size, for how closely keys follow */
} fold;

/* Every other element (Translation ... ScalingPivotInverse) is a factor of
 * the local matrix. */
static const char *const GEO_NAMES[] = {"GeometricTranslation", "GeometricRotation", "GeometricScaling"};
static const char *const POST_NAMES[] = {"GeometricScalingInverse", "GeometricRotationInverse",
                                         "GeometricTranslationInverse"};

static int in_list(const char *el, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(el, list[i]) == 0)
            return 1;
    return 0;
}

/* Kind of a node by its name; an element assimp may add in a later version
 * is treated like the pivots (a factor of the local matrix), so that its
 * name never reaches a view either. */
static kind classify(const char *name, uint32_t *prefix)
{
    const char *mark = strstr(name, MFS_FBX_HELPER_MARK);
    if (!mark)
        return K_NODE;
    *prefix = (uint32_t)(mark - name);
    const char *el = mark + strlen(MFS_FBX_HELPER_MARK);
    if (in_list(el, GEO_NAMES, sizeof GEO_NAMES / sizeof *GEO_NAMES))
        return K_GEO;
    if (in_list(el, POST_NAMES, sizeof POST_NAMES / sizeof *POST_NAMES))
        return K_POST;
    return K_PRE;
}

static int is_postrotation(const char *name, uint32_t prefix)
{
    return strcmp(name + prefix + strlen(MFS_FBX_HELPER_MARK), "PostRotation") == 0;
}

/* Node b is a helper (or the real node) of the chain of helper a. */
static int same_prefix(const fold *f, uint32_t a, uint32_t b)
{
    const mfs_scene *s = f->s;
    uint32_t n = f->prefix[a];
    if (f->kinds[b] == K_NODE)
        return strlen(s->nodes[b].name) == n && strncmp(s->nodes[b].name, s->nodes[a].name, n) == 0;
    return f->prefix[b] == n && strncmp(s->nodes[b].name, s->nodes[a].name, n) == 0;
}

/* Finds the chains assimp builds: from a top helper, single-child helpers
 * of one prefix down to the node of that name (no meshes on the way), then
 * that node's Geometric*Inverse helpers.  Everything else stays unmatched
 * (real_of -1) and is dissolved. */
static void match_chains(fold *f)
{
    const mfs_scene *s = f->s;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if ((f->kinds[i] != K_PRE && f->kinds[i] != K_GEO) || f->real_of[i] >= 0)
            continue;
        uint32_t j = i;
        while ((f->kinds[j] == K_PRE || f->kinds[j] == K_GEO) && same_prefix(f, i, j) &&
               s->nodes[j].n_children == 1 && s->nodes[j].n_meshes == 0)
            j = s->nodes[j].children[0];
        if (f->kinds[j] != K_NODE || !same_prefix(f, i, j))
            continue;
        f->is_real[j] = 1;
        for (uint32_t k = i; k != j; k = s->nodes[k].children[0]) {
            f->real_of[k] = (int32_t)j;
            if (is_postrotation(s->nodes[k].name, f->prefix[k]))
                f->postrot[j] = (int32_t)k;
        }
        /* the inverse helpers: a single-child run below the real node */
        uint32_t k = j;
        while (s->nodes[k].n_children == 1) {
            uint32_t c = s->nodes[k].children[0];
            if (f->kinds[c] != K_POST || !same_prefix(f, i, c) || s->nodes[c].n_meshes)
                break;
            f->real_of[c] = (int32_t)j;
            k = c;
        }
    }
}

static int near_identity(const mfs_mat4 *m)
{
    for (int i = 0; i < 16; i++)
        if (fabsf(m->m[i] - ((i % 5 == 0) ? 1.0f : 0.0f)) > 1e-5f)
            return 0;
    return 1;
}

static void product(mfs_mat4 *r, const elem *e, uint32_t n)
{
    mfs_mat4_identity(r);
    for (uint32_t i = 0; i < n; i++)
        mfs_mat4_mul(r, r, &e[i].m);
}

/* Walks the old tree in pre-order, deciding the new tree: helpers push
 * their matrix as an element for the next kept node below them.  The
 * pending elements are stack[base .. base+depth). */
static int visit(fold *f, uint32_t i, int32_t np, uint32_t base, uint32_t depth)
{
    mfs_scene *s = f->s;
    mfs_node *n = &s->nodes[i];
    kind k = f->kinds[i];
    int matched = k != K_NODE && f->real_of[i] >= 0;
    if (k != K_NODE && (matched || n->n_meshes == 0)) {
        if (matched && k == K_GEO) {
            uint32_t r = (uint32_t)f->real_of[i];
            mfs_mat4_mul(&f->geo[r], &f->geo[r], &n->local);
            f->has_geo[r] = 1;
        } else {
            /* pre-chain and dissolved helpers animate their element;
             * the inverse helpers are constant (never animated) */
            f->stack[base + depth] = (elem){k == K_POST ? -1 : (int32_t)i, n->local};
            depth++;
        }
        for (uint32_t c = 0; c < n->n_children; c++)
            if (visit(f, n->children[c], np, base, depth) < 0)
                return -1;
        return 0;
    }
    /* a node that stays (or an unmatched helper that carries meshes: it
     * stays under its prefix name) */
    kept *kp = &f->kept[f->n_kept];
    memset(kp, 0, sizeof *kp);
    kp->old = i;
    kp->parent = np;
    kp->postrot = f->postrot[i];
    kp->real = f->is_real[i];
    if (depth) {
        kp->pre = malloc(sizeof *kp->pre * depth);
        if (!kp->pre)
            return mfs_errf(f->err, "out of memory");
        memcpy(kp->pre, f->stack + base, sizeof *kp->pre * depth);
        kp->n_pre = depth;
        /* a run of constant factors that cancels out (the geometric
         * transform and its inverse) leaves the matrix bit for bit alone */
        int constant = 1;
        for (uint32_t e = 0; e < depth; e++)
            constant &= kp->pre[e].node < 0;
        mfs_mat4 p;
        product(&p, kp->pre, depth);
        if (constant && near_identity(&p)) {
            free(kp->pre);
            kp->pre = NULL;
            kp->n_pre = 0;
        }
    }
    int32_t me = (int32_t)f->n_kept++;
    f->new_index[i] = me;
    /* The meshes get B = R^-1 G R (R the real node's own matrix, the
     * identity as assimp builds it, so B = G); its children, which sit
     * under the inverse helpers, start from B too, so that they see the
     * node without G. */
    uint32_t cbase = base + depth, cdepth = 0;
    if (f->has_geo[i]) {
        mfs_mat4 rin, t;
        if (!mfs_mat4_is_identity(&n->local) && mfs_mat4_invert(&rin, &n->local) == 0) {
            mfs_mat4_mul(&t, &rin, &f->geo[i]);
            mfs_mat4_mul(&f->geo[i], &t, &n->local);
        }
        f->stack[cbase] = (elem){-1, f->geo[i]};
        cdepth = 1;
    }
    for (uint32_t c = 0; c < n->n_children; c++)
        if (visit(f, n->children[c], me, cbase, cdepth) < 0)
            return -1;
    return 0;
}

/* ---- meshes: the geometric transform ---- */

static void *dup_mem(const void *p, size_t n, int *fail)
{
    if (!p || !n)
        return NULL;
    void *d = malloc(n);
    if (!d)
        *fail = 1;
    else
        memcpy(d, p, n);
    return d;
}

/* Deep copy of every field of mfs_mesh (keep in step with scene.h). */
static int mesh_copy(mfs_mesh *d, const mfs_mesh *m)
{
    int fail = 0;
    size_t nv = m->n_vertices;
    memset(d, 0, sizeof *d);
    d->name = mfs_strdup(m->name);
    d->material = m->material;
    d->prim = m->prim;
    d->n_vertices = m->n_vertices;
    d->positions = dup_mem(m->positions, sizeof *m->positions * nv, &fail);
    d->normals = dup_mem(m->normals, sizeof *m->normals * nv, &fail);
    d->tangents = dup_mem(m->tangents, sizeof *m->tangents * nv, &fail);
    d->bitangents = dup_mem(m->bitangents, sizeof *m->bitangents * nv, &fail);
    for (int k = 0; k < MFS_MAX_UV; k++)
        d->uv[k] = dup_mem(m->uv[k], sizeof *m->uv[k] * nv, &fail);
    d->colors = dup_mem(m->colors, sizeof *m->colors * nv, &fail);
    d->n_faces = m->n_faces;
    d->indices = dup_mem(m->indices, sizeof *m->indices * (size_t)m->n_faces * m->prim, &fail);
    if (m->n_bones) {
        d->bones = calloc(m->n_bones, sizeof *d->bones);
        if (!d->bones)
            fail = 1;
        else
            d->n_bones = m->n_bones;
        for (uint32_t b = 0; d->bones && b < m->n_bones; b++) {
            d->bones[b] = m->bones[b];
            d->bones[b].name = mfs_strdup(m->bones[b].name);
            d->bones[b].weights = dup_mem(m->bones[b].weights,
                                          sizeof *m->bones[b].weights * m->bones[b].n_weights, &fail);
            if (!d->bones[b].name || (m->bones[b].n_weights && !d->bones[b].weights))
                fail = 1;
        }
    }
    if (!d->name)
        fail = 1;
    return fail ? -1 : 0;
}

static void bake(mfs_mesh *m, const mfs_mat4 *g)
{
    mfs_mat4 nm;
    mfs_mat4_normal_matrix(&nm, g);
    for (uint32_t v = 0; v < m->n_vertices; v++) {
        float t[3];
        mfs_mat4_point(g, m->positions[v], t);
        memcpy(m->positions[v], t, sizeof t);
        if (m->normals) {
            mfs_mat4_vector(&nm, m->normals[v], t);
            mfs_normalize3(t);
            memcpy(m->normals[v], t, sizeof t);
        }
        if (m->tangents) {
            mfs_mat4_vector(g, m->tangents[v], t);
            mfs_normalize3(t);
            memcpy(m->tangents[v], t, sizeof t);
            mfs_mat4_vector(g, m->bitangents[v], t);
            mfs_normalize3(t);
            memcpy(m->bitangents[v], t, sizeof t);
        }
    }
    if (mfs_mat4_det3(g) < 0 && m->prim == MFS_PRIM_TRIANGLES)
        for (uint32_t f = 0; f < m->n_faces; f++) {
            uint32_t t = m->indices[f * 3 + 1];
            m->indices[f * 3 + 1] = m->indices[f * 3 + 2];
            m->indices[f * 3 + 2] = t;
        }
}

/* Bakes each real node's geometric transform into its meshes; a mesh placed
 * elsewhere too is copied first (FBX instances share one Geometry, and the
 * other instances must not move). */
static int apply_geometric(fold *f)
{
    mfs_scene *s = f->s;
    uint32_t *refs = calloc(s->n_meshes ? s->n_meshes : 1, sizeof *refs);
    if (!refs)
        return mfs_errf(f->err, "out of memory");
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
            if (s->nodes[i].meshes[k] < s->n_meshes)
                refs[s->nodes[i].meshes[k]]++;
    int rc = 0;
    for (uint32_t i = 0; i < s->n_nodes && rc == 0; i++) {
        mfs_node *n = &s->nodes[i];
        if (!f->has_geo[i] || mfs_mat4_is_identity(&f->geo[i]))
            continue;
        const mfs_mat4 b = f->geo[i];
        for (uint32_t k = 0; k < n->n_meshes; k++) {
            uint32_t mi = n->meshes[k];
            if (mi >= s->n_meshes)
                continue;
            if (refs[mi] > 1) {
                mfs_mesh *grown = realloc(s->meshes, sizeof *grown * (s->n_meshes + 1));
                if (!grown) {
                    rc = mfs_errf(f->err, "out of memory");
                    break;
                }
                s->meshes = grown;
                if (mesh_copy(&s->meshes[s->n_meshes], &s->meshes[mi]) < 0) {
                    s->n_meshes++; /* freed with the scene */
                    rc = mfs_errf(f->err, "out of memory");
                    break;
                }
                refs[mi]--;
                mi = s->n_meshes++;
                n->meshes[k] = mi;
            }
            bake(&s->meshes[mi], &b);
        }
    }
    free(refs);
    return rc;
}

/* ---- animation ---- */

static const mfs_channel *channel_of(const mfs_animation *a, int32_t node)
{
    for (uint32_t c = 0; c < a->n_channels; c++)
        if (a->channels[c].node == node)
            return &a->channels[c];
    return NULL;
}

static int cmp_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quat_mul(float r[4], const float a[4], const float b[4])
{
    double x = (double)a[3] * b[0] + (double)a[0] * b[3] + (double)a[1] * b[2] - (double)a[2] * b[1];
    double y = (double)a[3] * b[1] - (double)a[0] * b[2] + (double)a[1] * b[3] + (double)a[2] * b[0];
    double z = (double)a[3] * b[2] + (double)a[0] * b[1] - (double)a[1] * b[0] + (double)a[2] * b[3];
    double w = (double)a[3] * b[3] - (double)a[0] * b[0] - (double)a[1] * b[1] - (double)a[2] * b[2];
    double l = sqrt(x * x + y * y + z * z + w * w);
    if (!(l > 0))
        l = 1;
    r[0] = (float)(x / l);
    r[1] = (float)(y / l);
    r[2] = (float)(z / l);
    r[3] = (float)(w / l);
}

static int copy_keys(mfs_channel *d, const mfs_channel *c)
{
    mfs_vec_key *pos = malloc(sizeof *pos * (c->n_pos + 1));
    mfs_quat_key *rot = malloc(sizeof *rot * (c->n_rot + 1));
    mfs_vec_key *scale = malloc(sizeof *scale * (c->n_scale + 1));
    if (!pos || !rot || !scale) {
        free(pos);
        free(rot);
        free(scale);
        return -1;
    }
    if (c->n_pos)
        memcpy(pos, c->pos, sizeof *pos * c->n_pos);
    if (c->n_rot)
        memcpy(rot, c->rot, sizeof *rot * c->n_rot);
    if (c->n_scale)
        memcpy(scale, c->scale, sizeof *scale * c->n_scale);
    *d = *c;
    d->pos = pos;
    d->rot = rot;
    d->scale = scale;
    return 0;
}

/* assimp's simple channel holds T . Rpre . R . Rpost . S, where the FBX rule
 * has Rpost^-1; the PostRotation helper holds h = Rpost^-1, so R . Rpost . h . h
 * is the right rotation.  The channel stands for the whole local matrix, so
 * the chain's other factors are not applied again. */
static int simple_channel(fold *f, const kept *kp, const mfs_channel *c, mfs_channel *out)
{
    if (copy_keys(out, c) < 0)
        return mfs_errf(f->err, "out of memory");
    if (kp->postrot < 0)
        return 0;
    float t[3], h[4], sc[3];
    if (mfs_mat4_decompose(&f->s->nodes[kp->postrot].local, t, h, sc) < 0)
        return 0;
    for (uint32_t k = 0; k < out->n_rot; k++) {
        float q[4];
        quat_mul(q, out->rot[k].q, h);
        quat_mul(out->rot[k].q, q, h);
    }
    return 0;
}

typedef struct chain_ctx {
    const fold *f;
    const kept *kp;
    const mfs_animation *a;
} chain_ctx;

/* The node's element list and its own matrix at time t, multiplied. */
static void chain_pose(void *ctx, double time, float t[3], float q[4], float sc[3])
{
    const chain_ctx *cc = ctx;
    const kept *kp = cc->kp;
    const mfs_scene *s = cc->f->s;
    mfs_mat4 m, l;
    mfs_mat4_identity(&m);
    for (uint32_t e = 0; e < kp->n_pre + 1; e++) {
        int32_t node = e < kp->n_pre ? kp->pre[e].node : (int32_t)kp->old;
        const mfs_mat4 *rest = e < kp->n_pre ? &kp->pre[e].m : &s->nodes[kp->old].local;
        const mfs_channel *c = node >= 0 ? channel_of(cc->a, node) : NULL;
        if (c)
            mfs_channel_sample(c, time, rest, &l);
        else
            l = *rest;
        mfs_mat4_mul(&m, &m, &l);
    }
    if (mfs_mat4_decompose(&m, t, q, sc) < 0) {
        t[0] = m.m[3], t[1] = m.m[7], t[2] = m.m[11];
        q[0] = q[1] = q[2] = 0, q[3] = 1;
        sc[0] = sc[1] = sc[2] = 0;
    }
}

/* Samples the node's element list and its own matrix at the union of the
 * key times of every channel among them, one T/R/S key per time, and
 * between them wherever interpolating the keys would leave the chain's path
 * (a turn about a pivot moves the origin on an arc, not on the chord). */
static int composite_channel(fold *f, const kept *kp, const mfs_animation *a, mfs_channel *out)
{
    uint32_t n_src = kp->n_pre + 1;
    size_t n_times = 0;
    for (uint32_t e = 0; e < n_src; e++) {
        int32_t node = e < kp->n_pre ? kp->pre[e].node : (int32_t)kp->old;
        const mfs_channel *c = node >= 0 ? channel_of(a, node) : NULL;
        if (c)
            n_times += (size_t)c->n_pos + c->n_rot + c->n_scale;
    }
    double *times = malloc(sizeof *times * (n_times + 1));
    if (!times)
        return mfs_errf(f->err, "out of memory");
    size_t nt = 0;
    for (uint32_t e = 0; e < n_src; e++) {
        int32_t node = e < kp->n_pre ? kp->pre[e].node : (int32_t)kp->old;
        const mfs_channel *c = node >= 0 ? channel_of(a, node) : NULL;
        if (!c)
            continue;
        for (uint32_t k = 0; k < c->n_pos; k++)
            times[nt++] = c->pos[k].time;
        for (uint32_t k = 0; k < c->n_rot; k++)
            times[nt++] = c->rot[k].time;
        for (uint32_t k = 0; k < c->n_scale; k++)
            times[nt++] = c->scale[k].time;
    }
    qsort(times, nt, sizeof *times, cmp_time);
    size_t u = 0;
    for (size_t k = 0; k < nt; k++)
        if (u == 0 || times[k] != times[u - 1])
            times[u++] = times[k];
    chain_ctx cc = {f, kp, a};
    int rc = mfs_channel_follow(out, times, u, chain_pose, &cc, f->size, f->err);
    free(times);
    return rc;
}

static int animated_pre(const kept *kp, const mfs_animation *a)
{
    for (uint32_t e = 0; e < kp->n_pre; e++)
        if (kp->pre[e].node >= 0 && channel_of(a, kp->pre[e].node))
            return 1;
    return 0;
}

/* Rebuilds one animation's channel list for the new node numbering:
 * channels of nodes whose matrix did not change move over as they are (in
 * their order), the others are made from the chain. */
static int fold_animation(fold *f, mfs_animation *a)
{
    mfs_channel *nc = calloc(a->n_channels + f->n_kept + 1, sizeof *nc);
    if (!nc)
        return mfs_errf(f->err, "out of memory");
    uint32_t n = 0;
    int rc = 0;
    for (uint32_t c = 0; c < a->n_channels; c++) {
        mfs_channel *ch = &a->channels[c];
        int32_t k = ch->node >= 0 && (uint32_t)ch->node < f->s->n_nodes ? f->new_index[ch->node] : -1;
        if (k < 0 || f->kept[k].n_pre)
            continue;
        nc[n] = *ch;
        nc[n++].node = k;
        ch->pos = NULL;
        ch->rot = NULL;
        ch->scale = NULL;
    }
    for (uint32_t k = 0; k < f->n_kept && rc == 0; k++) {
        const kept *kp = &f->kept[k];
        if (!kp->n_pre)
            continue;
        const mfs_channel *own = channel_of(a, (int32_t)kp->old);
        int pre = animated_pre(kp, a);
        if (!own && !pre)
            continue;
        if (own && kp->real && !pre)
            rc = simple_channel(f, kp, own, &nc[n]);
        else
            rc = composite_channel(f, kp, a, &nc[n]);
        nc[n++].node = (int32_t)k;
    }
    for (uint32_t c = 0; c < a->n_channels; c++) {
        free(a->channels[c].pos);
        free(a->channels[c].rot);
        free(a->channels[c].scale);
    }
    free(a->channels);
    a->channels = nc;
    a->n_channels = n;
    return rc;
}

/* ---- the new node array ---- */

static int rebuild_nodes(fold *f)
{
    mfs_scene *s = f->s;
    mfs_node *nodes = calloc(f->n_kept ? f->n_kept : 1, sizeof *nodes);
    uint32_t *nkids = calloc(f->n_kept ? f->n_kept : 1, sizeof *nkids);
    if (!nodes || !nkids) {
        free(nodes);
        free(nkids);
        return mfs_errf(f->err, "out of memory");
    }
    for (uint32_t k = 0; k < f->n_kept; k++)
        if (f->kept[k].parent >= 0)
            nkids[f->kept[k].parent]++;
    int rc = 0;
    for (uint32_t k = 0; k < f->n_kept; k++) {
        kept *kp = &f->kept[k];
        mfs_node *o = &s->nodes[kp->old], *d = &nodes[k];
        d->name = o->name;
        d->meshes = o->meshes;
        d->n_meshes = o->n_meshes;
        o->name = NULL;
        o->meshes = NULL;
        d->parent = kp->parent;
        d->children = calloc(nkids[k] ? nkids[k] : 1, sizeof *d->children);
        if (!d->children)
            rc = -1;
        if (kp->n_pre) {
            mfs_mat4 p;
            product(&p, kp->pre, kp->n_pre);
            mfs_mat4_mul(&d->local, &p, &o->local);
        } else {
            d->local = o->local;
        }
        /* an unmatched helper that carries meshes keeps them, under its
         * prefix name */
        if (f->kinds[kp->old] != K_NODE)
            d->name[f->prefix[kp->old]] = '\0';
        if (kp->parent >= 0 && nodes[kp->parent].children)
            nodes[kp->parent].children[nodes[kp->parent].n_children++] = k;
    }
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        free(s->nodes[i].name);
        free(s->nodes[i].children);
        free(s->nodes[i].meshes);
    }
    free(s->nodes);
    free(nkids);
    s->nodes = nodes;
    s->n_nodes = f->n_kept;
    return rc < 0 ? mfs_errf(f->err, "out of memory") : 0;
}

static void renumber_bones(fold *f)
{
    mfs_scene *s = f->s;
    for (uint32_t m = 0; m < s->n_meshes; m++)
        for (uint32_t b = 0; b < s->meshes[m].n_bones; b++) {
            mfs_bone *bo = &s->meshes[m].bones[b];
            if (bo->node < 0)
                continue;
            int32_t old = bo->node;
            if (f->new_index[old] < 0 && f->real_of[old] >= 0)
                old = f->real_of[old];
            bo->node = f->new_index[old];
        }
}

static void fold_free(fold *f)
{
    for (uint32_t k = 0; k < f->n_kept; k++)
        free(f->kept[k].pre);
    free(f->kinds);
    free(f->prefix);
    free(f->real_of);
    free(f->postrot);
    free(f->is_real);
    free(f->geo);
    free(f->has_geo);
    free(f->new_index);
    free(f->kept);
    free(f->stack);
}

int mfs_fbx_fold_chains(mfs_scene *s, mfs_err *err)
{
    uint32_t n = s->n_nodes, helpers = 0;
    for (uint32_t i = 0; i < n; i++)
        helpers += strstr(s->nodes[i].name, MFS_FBX_HELPER_MARK) != NULL;
    if (!helpers)
        return 0; /* the common case costs one scan of the names */
    fold f = {.s = s, .err = err, .size = mfs_scene_size(s)};
    f.kinds = calloc(n, sizeof *f.kinds);
    f.prefix = calloc(n, sizeof *f.prefix);
    f.real_of = malloc(sizeof *f.real_of * n);
    f.postrot = malloc(sizeof *f.postrot * n);
    f.is_real = calloc(n, 1);
    f.geo = malloc(sizeof *f.geo * n);
    f.has_geo = calloc(n, 1);
    f.new_index = malloc(sizeof *f.new_index * n);
    f.kept = calloc(n, sizeof *f.kept);
    f.stack = malloc(sizeof *f.stack * (2 * (size_t)n + 2));
    int rc = -1;
    if (!f.kinds || !f.prefix || !f.real_of || !f.postrot || !f.is_real || !f.geo || !f.has_geo || !f.new_index ||
        !f.kept || !f.stack) {
        mfs_errf(err, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        f.kinds[i] = classify(s->nodes[i].name, &f.prefix[i]);
        f.real_of[i] = f.postrot[i] = f.new_index[i] = -1;
        mfs_mat4_identity(&f.geo[i]);
    }
    match_chains(&f);
    if (s->nodes[0].parent >= 0 || f.kinds[0] != K_NODE) {
        /* the root is assimp's "RootNode"; a helper there has nowhere to go */
        f.kinds[0] = K_NODE;
        f.real_of[0] = -1;
    }
    if (visit(&f, 0, -1, 0, 0) < 0)
        goto done;
    for (uint32_t a = 0; a < s->n_animations; a++)
        if (fold_animation(&f, &s->animations[a]) < 0)
            goto done;
    if (rebuild_nodes(&f) < 0)
        goto done;
    renumber_bones(&f);
    /* geometric baking needs the new nodes (mesh lists) and the old
     * geo table, indexed by old node: translate it */
    {
        mfs_mat4 *geo = malloc(sizeof *geo * (f.n_kept ? f.n_kept : 1));
        uint8_t *has = calloc(f.n_kept ? f.n_kept : 1, 1);
        if (!geo || !has) {
            free(geo);
            free(has);
            mfs_errf(err, "out of memory");
            goto done;
        }
        for (uint32_t k = 0; k < f.n_kept; k++) {
            geo[k] = f.geo[f.kept[k].old];
            has[k] = f.has_geo[f.kept[k].old];
        }
        free(f.geo);
        free(f.has_geo);
        f.geo = geo;
        f.has_geo = has;
    }
    if (apply_geometric(&f) < 0)
        goto done;
    rc = 0;
done:
    fold_free(&f);
    return rc;
}

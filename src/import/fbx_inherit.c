/* FBX's InheritType (RrSs, Rrs) applied to the rest pose: assimp 5.2.5
 * reads every node as RSrs, so a node with another type gets the local
 * matrix that gives the FBX SDK's world matrix (fbx_chain.h,
 * mfs_fbx_apply_inherit; shared/research/fbx_transforms.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fbx_chain.h"

typedef double dmat3[3][3];

static void lin_of(const mfs_mat4 *m, dmat3 r)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[i][j] = m->m[i * 4 + j];
}

static void mul3(dmat3 r, dmat3 a, dmat3 b)
{
    dmat3 t;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
    memcpy(r, t, sizeof t);
}

static double det3(dmat3 a)
{
    return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
           a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
           a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
}

/* a = R * D: R's columns are a's made orthonormal (Gram-Schmidt, x first),
 * with a mirror carried on x so that R is a rotation; d the diagonal.
 * For a local FBX matrix (rotations times scaling) this is exact. */
static int split_rs(dmat3 a, dmat3 r, double d[3])
{
    double c[3][3];
    for (int j = 0; j < 3; j++) {
        for (int i = 0; i < 3; i++)
            c[j][i] = a[i][j];
        for (int k = 0; k < j; k++) {
            double p = c[j][0] * c[k][0] + c[j][1] * c[k][1] + c[j][2] * c[k][2];
            for (int i = 0; i < 3; i++)
                c[j][i] -= p * c[k][i];
        }
        double len = sqrt(c[j][0] * c[j][0] + c[j][1] * c[j][1] + c[j][2] * c[j][2]);
        if (!(len > 1e-12))
            return -1;
        d[j] = len;
        for (int i = 0; i < 3; i++)
            c[j][i] /= len;
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[i][j] = c[j][i];
    if (det3(r) < 0) {
        for (int i = 0; i < 3; i++)
            r[i][0] = -r[i][0];
        d[0] = -d[0];
    }
    return 0;
}

static void transpose3(dmat3 r, dmat3 a)
{
    dmat3 t;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[i][j] = a[j][i];
    memcpy(r, t, sizeof t);
}

static int node_animated(const mfs_scene *s, uint32_t node)
{
    for (uint32_t a = 0; a < s->n_animations; a++)
        for (uint32_t c = 0; c < s->animations[a].n_channels; c++)
            if (s->animations[a].channels[c].node == (int32_t)node)
                return 1;
    return 0;
}

typedef struct {
    mfs_scene *s;
    const int *type;       /* per node */
    const double (*ls)[3]; /* per node: its local scaling before any correction */
    uint32_t changed;
} inherit_walk;

/* The FBX SDK's world matrix of node n (RrSs or Rrs) under the parent's
 * world pw; returns 0 and the new local matrix, or -1 (degenerate). */
static int inherit_local(const inherit_walk *w, uint32_t n, const mfs_mat4 *pw, mfs_mat4 *out)
{
    const mfs_node *nd = &w->s->nodes[n];
    dmat3 pl, gr, grt, gs, l, lr, rs;
    double pd[3], ld[3];
    lin_of(pw, pl);
    lin_of(&nd->local, l);
    if (split_rs(pl, gr, pd) < 0 || split_rs(l, lr, ld) < 0)
        return -1;
    transpose3(grt, gr);
    mul3(gs, grt, pl); /* GS = GR^-1 * linear(World(parent)) */
    if (w->type[n] == MFS_FBX_INHERIT_RRS) {
        const double *pls = w->ls[nd->parent];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                gs[i][j] /= pls[j]; /* GS * PLS^-1 */
    }
    dmat3 lsd = {{ld[0], 0, 0}, {0, ld[1], 0}, {0, 0, ld[2]}};
    mul3(rs, gr, lr);
    mul3(rs, rs, gs);
    mul3(rs, rs, lsd);
    float lt[3] = {nd->local.m[3], nd->local.m[7], nd->local.m[11]}, wt[3];
    mfs_mat4_point(pw, lt, wt);
    mfs_mat4 world, inv;
    mfs_mat4_identity(&world);
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            world.m[i * 4 + j] = (float)rs[i][j];
        world.m[i * 4 + 3] = wt[i];
    }
    if (mfs_mat4_invert(&inv, pw) < 0)
        return -1;
    mfs_mat4_mul(out, &inv, &world);
    out->m[12] = out->m[13] = out->m[14] = 0;
    out->m[15] = 1;
    return 0;
}

static void inherit_node(inherit_walk *w, uint32_t n, const mfs_mat4 *pw, int animated, int depth)
{
    mfs_node *nd = &w->s->nodes[n];
    animated = animated || node_animated(w->s, n);
    int t = w->type[n];
    mfs_mat4 nl;
    if (nd->parent >= 0 && !animated && (t == MFS_FBX_INHERIT_RRSS || t == MFS_FBX_INHERIT_RRS) &&
        inherit_local(w, n, pw, &nl) == 0) {
        double size = 1, diff = 0;
        for (int i = 0; i < 12; i++) {
            size = fmax(size, fabs(nd->local.m[i]));
            diff = fmax(diff, fabs(nl.m[i] - nd->local.m[i]));
        }
        if (diff > 1e-6 * size) {
            nd->local = nl;
            w->changed++;
        }
    }
    mfs_mat4 world;
    mfs_mat4_mul(&world, pw, &nd->local);
    if (depth >= MFS_MAX_NODE_DEPTH)
        return;
    for (uint32_t k = 0; k < nd->n_children; k++)
        inherit_node(w, nd->children[k], &world, animated, depth + 1);
}

uint32_t mfs_fbx_apply_inherit(mfs_scene *s, const char *const *names, const int *types, size_t n)
{
    if (n == 0 || s->n_nodes == 0)
        return 0;
    int *type = malloc(sizeof *type * s->n_nodes);
    double (*ls)[3] = malloc(sizeof *ls * s->n_nodes);
    if (!type || !ls) {
        free(type);
        free(ls);
        return 0; /* out of memory: the scene stays as assimp placed it */
    }
    int any = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        type[i] = MFS_FBX_INHERIT_RSRS;
        for (size_t k = 0; k < n; k++)
            if (s->nodes[i].name && strcmp(s->nodes[i].name, names[k]) == 0) {
                type[i] = types[k];
                any |= types[k] != MFS_FBX_INHERIT_RSRS;
                break;
            }
        dmat3 l, r;
        lin_of(&s->nodes[i].local, l);
        if (split_rs(l, r, ls[i]) < 0)
            ls[i][0] = ls[i][1] = ls[i][2] = 1;
    }
    inherit_walk w = {s, type, (const double (*)[3])ls, 0};
    if (any) {
        mfs_mat4 id;
        mfs_mat4_identity(&id);
        inherit_node(&w, 0, &id, 0, 0);
    }
    free(type);
    free(ls);
    return w.changed;
}

/* Folding assimp's FBX helper chains (src/import/fbx_chain.c) on scenes
 * built by hand the way assimp 5.2.5 builds them with pivots preserved
 * (shared/research/fbx_transforms.md): expected placements follow the FBX
 * rule L = T Roff Rp Rpre R Rpost^-1 Rp^-1 Soff Sp S Sp^-1, geometric
 * G = Gt Gr Gs on the node's own meshes only. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/import/fbx_chain.h"

#define MARK MFS_FBX_HELPER_MARK
#define EPS 1e-5

/* ---- building scenes ---- */

static mfs_mat4 T(float x, float y, float z)
{
    mfs_mat4 m;
    mfs_mat4_identity(&m);
    m.m[3] = x, m.m[7] = y, m.m[11] = z;
    return m;
}

static mfs_mat4 S(float x, float y, float z)
{
    mfs_mat4 m;
    mfs_mat4_identity(&m);
    m.m[0] = x, m.m[5] = y, m.m[10] = z;
    return m;
}

static void quat_z(float deg, float q[4])
{
    double h = deg * M_PI / 360.0;
    q[0] = q[1] = 0;
    q[2] = (float)sin(h);
    q[3] = (float)cos(h);
}

static mfs_mat4 Rz(float deg)
{
    float q[4], t[3] = {0, 0, 0}, s[3] = {1, 1, 1};
    quat_z(deg, q);
    mfs_mat4 m;
    mfs_mat4_compose(&m, t, q, s);
    return m;
}

static mfs_mat4 I(void)
{
    mfs_mat4 m;
    mfs_mat4_identity(&m);
    return m;
}

/* Appends a node (call in pre-order); returns its index. */
static uint32_t add(mfs_scene *s, const char *name, int32_t parent, mfs_mat4 local)
{
    s->nodes = realloc(s->nodes, sizeof *s->nodes * (s->n_nodes + 1));
    assert_non_null(s->nodes);
    uint32_t i = s->n_nodes++;
    mfs_node *n = &s->nodes[i];
    memset(n, 0, sizeof *n);
    n->name = mfs_strdup(name);
    n->local = local;
    n->parent = parent;
    n->children = calloc(1, sizeof *n->children);
    n->meshes = calloc(1, sizeof *n->meshes);
    if (parent >= 0) {
        mfs_node *p = &s->nodes[parent];
        p->children = realloc(p->children, sizeof *p->children * (p->n_children + 1));
        p->children[p->n_children++] = i;
    }
    return i;
}

/* "Name_$AssimpFbx$_Element" */
static uint32_t helper(mfs_scene *s, const char *name, const char *el, int32_t parent, mfs_mat4 m)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s" MARK "%s", name, el);
    return add(s, buf, parent, m);
}

static void place(mfs_scene *s, uint32_t node, uint32_t mesh)
{
    mfs_node *n = &s->nodes[node];
    n->meshes = realloc(n->meshes, sizeof *n->meshes * (n->n_meshes + 1));
    n->meshes[n->n_meshes++] = mesh;
}

/* An axis-aligned box lo..hi: 8 corners (corner i takes x from bit 0, y
 * from bit 1, z from bit 2), normals pointing out of the centre, 12
 * counter-clockwise triangles. */
static uint32_t box(mfs_scene *s, const char *name, float lx, float ly, float lz, float hx, float hy,
                    float hz)
{
    static const uint32_t quads[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4},
                                         {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
    s->meshes = realloc(s->meshes, sizeof *s->meshes * (s->n_meshes + 1));
    uint32_t mi = s->n_meshes++;
    mfs_mesh *m = &s->meshes[mi];
    memset(m, 0, sizeof *m);
    m->name = mfs_strdup(name);
    m->material = -1;
    m->prim = MFS_PRIM_TRIANGLES;
    m->n_vertices = 8;
    m->positions = malloc(sizeof *m->positions * 8);
    m->normals = malloc(sizeof *m->normals * 8);
    for (int i = 0; i < 8; i++) {
        float p[3] = {i & 1 ? hx : lx, i & 2 ? hy : ly, i & 4 ? hz : lz};
        memcpy(m->positions[i], p, sizeof p);
        float c[3] = {(lx + hx) / 2, (ly + hy) / 2, (lz + hz) / 2};
        for (int k = 0; k < 3; k++)
            m->normals[i][k] = p[k] - c[k];
        mfs_normalize3(m->normals[i]);
    }
    m->n_faces = 12;
    m->indices = malloc(sizeof *m->indices * 36);
    for (int q = 0; q < 6; q++) {
        const uint32_t *v = quads[q];
        uint32_t t[6] = {v[0], v[1], v[2], v[0], v[2], v[3]};
        memcpy(m->indices + q * 6, t, sizeof t);
    }
    return mi;
}

static mfs_animation *anim(mfs_scene *s, double duration)
{
    s->animations = realloc(s->animations, sizeof *s->animations * (s->n_animations + 1));
    mfs_animation *a = &s->animations[s->n_animations++];
    memset(a, 0, sizeof *a);
    a->name = mfs_strdup("take");
    a->duration = duration;
    a->ticks_per_second = 30;
    return a;
}

/* A channel with rotation keys about Z at the given times and degrees,
 * and one position and one scale key at t = 0 (the shape of both of
 * assimp's channel kinds). */
static mfs_channel *chan_z(mfs_animation *a, uint32_t node, int n, const double *t, const float *deg,
                           const float pos[3])
{
    a->channels = realloc(a->channels, sizeof *a->channels * (a->n_channels + 1));
    mfs_channel *c = &a->channels[a->n_channels++];
    memset(c, 0, sizeof *c);
    c->node = (int32_t)node;
    c->rot = calloc((size_t)n, sizeof *c->rot);
    for (int k = 0; k < n; k++) {
        c->rot[k].time = t[k];
        quat_z(deg[k], c->rot[k].q);
    }
    c->n_rot = (uint32_t)n;
    c->pos = calloc(1, sizeof *c->pos);
    memcpy(c->pos[0].v, pos, sizeof c->pos[0].v);
    c->n_pos = 1;
    c->scale = calloc(1, sizeof *c->scale);
    c->scale[0].v[0] = c->scale[0].v[1] = c->scale[0].v[2] = 1;
    c->n_scale = 1;
    return c;
}

/* ---- looking at the result ---- */

static int32_t find(const mfs_scene *s, const char *name)
{
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (strcmp(s->nodes[i].name, name) == 0)
            return (int32_t)i;
    return -1;
}

static void assert_no_helper(const mfs_scene *s)
{
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (strstr(s->nodes[i].name, MARK))
            fail_msg("node %u is still a helper: %s", i, s->nodes[i].name);
}

static void world_point(const mfs_scene *s, const mfs_mat4 *local, uint32_t node, const float p[3],
                        float out[3])
{
    mfs_mat4 w = local[node];
    for (int32_t q = s->nodes[node].parent; q >= 0; q = s->nodes[q].parent)
        mfs_mat4_mul(&w, &local[q], &w);
    mfs_mat4_point(&w, p, out);
}

static void assert_vec(const float *got, double x, double y, double z)
{
    double want[3] = {x, y, z};
    for (int k = 0; k < 3; k++)
        if (fabs(got[k] - want[k]) > EPS)
            fail_msg("(%g, %g, %g), expected (%g, %g, %g)", got[0], got[1], got[2], x, y, z);
}

static void assert_mat_exact(const mfs_mat4 *a, const mfs_mat4 *b)
{
    assert_memory_equal(a->m, b->m, sizeof a->m);
}

static void bounds(const mfs_scene *s, float mn[3], float mx[3])
{
    assert_true(mfs_scene_bounds(s, 1, mn, mx));
}

static void fold_ok(mfs_scene *s)
{
    mfs_err err;
    assert_int_equal(mfs_fbx_fold_chains(s, &err), 0);
    if (mfs_scene_validate(s, &err) < 0)
        fail_msg("invalid after folding: %s", err.msg);
    assert_no_helper(s);
}

/* ---- tests ---- */

/* A scene without helpers is left exactly as it was. */
static void test_no_helpers_untouched(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t a = add(s, "A", 0, T(1, 2, 3));
    place(s, a, box(s, "m", 0, 0, 0, 1, 1, 1));
    mfs_animation *an = anim(s, 10);
    double t[2] = {0, 10};
    float d[2] = {0, 90}, p[3] = {1, 2, 3};
    mfs_channel *c = chan_z(an, a, 2, t, d, p);
    mfs_quat_key *keys = c->rot;
    fold_ok(s);
    assert_int_equal(s->n_nodes, 2);
    mfs_mat4 want = T(1, 2, 3);
    assert_mat_exact(&s->nodes[1].local, &want);
    assert_int_equal(s->animations[0].n_channels, 1);
    assert_ptr_equal(s->animations[0].channels[0].rot, keys);
    mfs_scene_free(s);
}

/* PostRotation 40 deg about Z on a Null (the helper holds it inverted), a
 * child cube at (1, 0, 0): the child lands at Rz(-40) (1, 0, 0). */
static void test_post_rotation(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t h = helper(s, "Parent", "PostRotation", 0, Rz(-40));
    uint32_t p = add(s, "Parent", (int32_t)h, I());
    uint32_t c = add(s, "Child", (int32_t)p, T(1, 0, 0));
    place(s, c, box(s, "cube", -0.1f, -0.1f, -0.1f, 0.1f, 0.1f, 0.1f));
    fold_ok(s);
    assert_int_equal(s->n_nodes, 3);
    int32_t pi = find(s, "Parent"), ci = find(s, "Child");
    assert_int_equal(pi, 1);
    assert_int_equal(ci, 2);
    assert_int_equal(s->nodes[ci].parent, pi);
    assert_int_equal(s->nodes[pi].parent, 0);
    assert_int_equal(s->nodes[0].n_children, 1);
    mfs_mat4 local[3];
    for (int i = 0; i < 3; i++)
        local[i] = s->nodes[i].local;
    float o[3] = {0, 0, 0}, w[3];
    world_point(s, local, (uint32_t)ci, o, w);
    assert_vec(w, cos(40 * M_PI / 180), -sin(40 * M_PI / 180), 0);
    mfs_mat4 want = T(1, 0, 0);
    assert_mat_exact(&s->nodes[ci].local, &want);
    mfs_scene_free(s);
}

/* The full pivot chain multiplies, top down, into the real node. */
static void test_pivot_chain_product(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    mfs_mat4 chain[5] = {T(0.5f, 0, 0), T(1, 0, 0), Rz(90), Rz(30), T(-1, 0, 0)};
    const char *els[5] = {"Translation", "RotationPivot", "PreRotation", "Rotation",
                          "RotationPivotInverse"};
    uint32_t prev = 0;
    for (int i = 0; i < 5; i++)
        prev = helper(s, "Arm", els[i], (int32_t)prev, chain[i]);
    uint32_t arm = add(s, "Arm", (int32_t)prev, I());
    uint32_t hand = add(s, "Hand", (int32_t)arm, T(2, 0, 0));
    place(s, hand, box(s, "h", -0.1f, -0.1f, -0.1f, 0.1f, 0.1f, 0.1f));
    float bmin[3], bmax[3], amin[3], amax[3];
    bounds(s, bmin, bmax);
    fold_ok(s);
    assert_int_equal(s->n_nodes, 3);
    int32_t ai = find(s, "Arm");
    mfs_mat4 want = I();
    for (int i = 0; i < 5; i++)
        mfs_mat4_mul(&want, &want, &chain[i]);
    for (int i = 0; i < 16; i++)
        assert_true(fabsf(s->nodes[ai].local.m[i] - want.m[i]) < EPS);
    /* T(0.5) Rp Rz(120) Rp^-1 applied to (2,0,0): (0.5,0,0)+(1,0,0)+Rz(120)(1,0,0) */
    mfs_mat4 local[3];
    for (int i = 0; i < 3; i++)
        local[i] = s->nodes[i].local;
    float o[3] = {0, 0, 0}, w[3];
    world_point(s, local, (uint32_t)find(s, "Hand"), o, w);
    assert_vec(w, 1.5 + cos(120 * M_PI / 180), sin(120 * M_PI / 180), 0);
    bounds(s, amin, amax);
    assert_vec(amin, bmin[0], bmin[1], bmin[2]);
    assert_vec(amax, bmax[0], bmax[1], bmax[2]);
    mfs_scene_free(s);
}

/* Geometric T (0,2,0), R 90 Z, S 2 on a parent cube with a child at
 * (1,0,0); the parent's mesh is also placed by another node.  The child
 * must stay at (1,0,0), the parent's cube goes to G, and the other
 * placement keeps the untouched mesh. */
static void test_geometric(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t g1 = helper(s, "P", "GeometricTranslation", 0, T(0, 2, 0));
    uint32_t g2 = helper(s, "P", "GeometricRotation", (int32_t)g1, Rz(90));
    uint32_t g3 = helper(s, "P", "GeometricScaling", (int32_t)g2, S(2, 2, 2));
    uint32_t p = add(s, "P", (int32_t)g3, I());
    uint32_t cube = box(s, "cube", -0.5f, -0.5f, -0.5f, 0.5f, 0.5f, 1.5f);
    place(s, p, cube);
    uint32_t i1 = helper(s, "P", "GeometricScalingInverse", (int32_t)p, S(0.5f, 0.5f, 0.5f));
    uint32_t i2 = helper(s, "P", "GeometricRotationInverse", (int32_t)i1, Rz(-90));
    uint32_t i3 = helper(s, "P", "GeometricTranslationInverse", (int32_t)i2, T(0, -2, 0));
    uint32_t c = add(s, "C", (int32_t)i3, T(1, 0, 0));
    place(s, c, box(s, "small", -0.1f, -0.1f, -0.1f, 0.1f, 0.1f, 0.1f));
    uint32_t other = add(s, "Other", 0, T(-3, 0, 0));
    place(s, other, cube);
    /* a channel on a geometric helper cannot be kept: it is dropped */
    mfs_animation *an = anim(s, 10);
    double t[1] = {0};
    float d[1] = {0}, z[3] = {0, 0, 0};
    chan_z(an, g2, 1, t, d, z);
    fold_ok(s);
    assert_int_equal(s->n_nodes, 4);
    assert_int_equal(s->animations[0].n_channels, 0);
    int32_t pi = find(s, "P"), ci = find(s, "C"), oi = find(s, "Other");
    assert_int_equal(s->nodes[ci].parent, pi);
    mfs_mat4 id = I(), tc = T(1, 0, 0);
    assert_mat_exact(&s->nodes[pi].local, &id);
    assert_mat_exact(&s->nodes[ci].local, &tc); /* G and its inverse cancel exactly */
    /* P's mesh is a copy with G baked in; Other keeps the original */
    assert_int_equal(s->n_meshes, 3);
    assert_int_equal(s->nodes[oi].meshes[0], cube);
    uint32_t pm = s->nodes[pi].meshes[0];
    assert_int_equal(pm, 2);
    assert_vec(s->meshes[cube].positions[7], 0.5, 0.5, 1.5);
    /* corner 7 (0.5, 0.5, 1.5) -> S2 (1, 1, 3) -> Rz90 (-1, 1, 3) -> +(0,2,0) */
    assert_vec(s->meshes[pm].positions[7], -1, 3, 3);
    /* its normal turns with it (still unit length) */
    float n0[3];
    memcpy(n0, s->meshes[cube].normals[7], sizeof n0);
    assert_vec(s->meshes[pm].normals[7], -n0[1], n0[0], n0[2]);
    assert_memory_equal(s->meshes[pm].indices, s->meshes[cube].indices, 36 * sizeof(uint32_t));
    mfs_scene_free(s);
}

/* A mirroring geometric scale keeps front faces counter-clockwise. */
static void test_geometric_mirror_flips_winding(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t g = helper(s, "M", "GeometricScaling", 0, S(-1, 1, 1));
    uint32_t m = add(s, "M", (int32_t)g, I());
    place(s, m, box(s, "b", 0, 0, 0, 1, 1, 1));
    uint32_t before[3];
    memcpy(before, s->meshes[0].indices, sizeof before);
    fold_ok(s);
    assert_int_equal(s->n_meshes, 1); /* placed once: baked in place */
    assert_int_equal(s->meshes[0].indices[0], before[0]);
    assert_int_equal(s->meshes[0].indices[1], before[2]);
    assert_int_equal(s->meshes[0].indices[2], before[1]);
    assert_vec(s->meshes[0].positions[1], -1, 0, 0);
    mfs_scene_free(s);
}

/* An animated rotation behind a pivot: assimp animates the Rotation helper
 * (dummy position and scale keys); the real node gets one channel that
 * samples the whole chain at the union of key times. */
static void test_helper_channel_composed(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t h1 = helper(s, "Arm", "Translation", 0, T(0, 1, 0));
    uint32_t h2 = helper(s, "Arm", "RotationPivot", (int32_t)h1, T(1, 0, 0));
    uint32_t h3 = helper(s, "Arm", "PreRotation", (int32_t)h2, Rz(90));
    uint32_t h4 = helper(s, "Arm", "Rotation", (int32_t)h3, I());
    uint32_t h5 = helper(s, "Arm", "RotationPivotInverse", (int32_t)h4, T(-1, 0, 0));
    uint32_t arm = add(s, "Arm", (int32_t)h5, I());
    add(s, "Hand", (int32_t)arm, T(2, 0, 0));
    uint32_t other = add(s, "Other", 0, I());
    mfs_animation *an = anim(s, 10);
    double t[3] = {0, 4, 10}, t2[2] = {0, 6};
    float d[3] = {0, 20, 60}, d2[2] = {0, 10}, z[3] = {0, 0, 0};
    chan_z(an, h4, 3, t, d, z);
    chan_z(an, other, 2, t2, d2, z);
    fold_ok(s);
    assert_int_equal(s->n_nodes, 4);
    int32_t ai = find(s, "Arm"), hi = find(s, "Hand"), oi = find(s, "Other");
    mfs_animation *a = &s->animations[0];
    assert_int_equal(a->n_channels, 2);
    /* the untouched node's channel first, as it was */
    assert_int_equal(a->channels[0].node, oi);
    assert_int_equal(a->channels[0].n_rot, 2);
    const mfs_channel *c = &a->channels[1];
    assert_int_equal(c->node, ai);
    /* the union of the helper channel's key times, 0 (its dummy keys), 4
     * and 10, and keys between them: the turn about the pivot moves the
     * node's origin on an arc that translation keys at 0, 4, 10 would cut
     * (docs/import.md, "Keys that follow the source") */
    assert_true(c->n_rot > 3);
    assert_int_equal(c->n_pos, c->n_rot);
    int at4 = 0;
    for (uint32_t k = 0; k < c->n_rot; k++)
        at4 += c->rot[k].time == 4;
    assert_true(c->rot[0].time == 0 && at4 == 1 && c->rot[c->n_rot - 1].time == 10);
    /* at t = 10: T(0,1,0) Rp Rz(90) Rz(60) Rp^-1 (2,0,0) */
    mfs_mat4 *pose = malloc(sizeof *pose * s->n_nodes);
    mfs_scene_pose(s, a, 10, pose);
    float o[3] = {0, 0, 0}, w[3];
    world_point(s, pose, (uint32_t)hi, o, w);
    assert_vec(w, 1 + cos(150 * M_PI / 180), 1 + sin(150 * M_PI / 180), 0);
    mfs_scene_pose(s, a, 0, pose);
    world_point(s, pose, (uint32_t)hi, o, w);
    assert_vec(w, 1, 2, 0);
    /* between keys, on the arc: at t = 7 the helper turns 40 degrees
     * (20 at 4, 60 at 10), so the hand is at the pivot (1, 1) plus
     * Rz(130) (1, 0, 0); keys at 4 and 10 alone would put it on the chord,
     * 0.06 nearer the pivot */
    mfs_scene_pose(s, a, 7, pose);
    world_point(s, pose, (uint32_t)hi, o, w);
    assert_true(fabs(w[0] - (1 + cos(130 * M_PI / 180))) < 1e-4);
    assert_true(fabs(w[1] - (1 + sin(130 * M_PI / 180))) < 1e-4);
    /* rest pose equals the chain at rest */
    mfs_scene_pose(s, NULL, 0, pose);
    world_point(s, pose, (uint32_t)hi, o, w);
    assert_vec(w, 1, 2, 0);
    free(pose);
    mfs_scene_free(s);
}

/* assimp's simple channel on a joint with a PostRotation holds
 * R(t) . Rpost; the FBX rule wants R(t) . Rpost^-1.  The helper holds
 * Rpost^-1 = Rz(-30): keys of 30 and 75 degrees become -30 and 15, and the
 * chain's Translation helper is not applied a second time. */
static void test_simple_channel_post_rotation(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t h1 = helper(s, "Bone", "Translation", 0, T(0, 0.5f, 0));
    uint32_t h2 = helper(s, "Bone", "PostRotation", (int32_t)h1, Rz(-30));
    uint32_t bone = add(s, "Bone", (int32_t)h2, I());
    uint32_t tip = add(s, "Tip", (int32_t)bone, T(1, 0, 0));
    uint32_t skin = add(s, "Skin", 0, I());
    uint32_t mesh = box(s, "skin", 0.75f, 0.25f, -0.25f, 1.25f, 0.75f, 0.25f);
    place(s, skin, mesh);
    mfs_mesh *m = &s->meshes[mesh];
    m->n_bones = 1;
    m->bones = calloc(1, sizeof *m->bones);
    m->bones[0].name = mfs_strdup("Tip");
    m->bones[0].node = (int32_t)tip;
    mfs_mat4_identity(&m->bones[0].offset);
    m->bones[0].n_weights = 8;
    m->bones[0].weights = calloc(8, sizeof(mfs_weight));
    for (uint32_t v = 0; v < 8; v++)
        m->bones[0].weights[v] = (mfs_weight){v, 1};
    mfs_animation *an = anim(s, 10);
    double t[2] = {0, 10};
    float d[2] = {30, 75}, p[3] = {0, 0.5f, 0};
    chan_z(an, bone, 2, t, d, p);
    fold_ok(s);
    int32_t bi = find(s, "Bone"), ti = find(s, "Tip");
    assert_int_equal(s->n_nodes, 4);
    assert_int_equal(s->meshes[mesh].bones[0].node, ti); /* renumbered */
    const mfs_channel *c = &s->animations[0].channels[0];
    assert_int_equal(c->node, bi);
    float want[4];
    quat_z(-30, want);
    for (int k = 0; k < 4; k++)
        assert_true(fabsf(c->rot[0].q[k] - want[k]) < EPS);
    quat_z(15, want);
    for (int k = 0; k < 4; k++)
        assert_true(fabsf(c->rot[1].q[k] - want[k]) < EPS);
    mfs_mat4 *pose = malloc(sizeof *pose * s->n_nodes);
    float o[3] = {0, 0, 0}, w[3];
    mfs_scene_pose(s, &s->animations[0], 10, pose);
    world_point(s, pose, (uint32_t)ti, o, w);
    assert_vec(w, cos(15 * M_PI / 180), 0.5 + sin(15 * M_PI / 180), 0);
    /* the rest matrix is the chain: T(0,0.5,0) Rz(-30) */
    mfs_scene_pose(s, NULL, 0, pose);
    world_point(s, pose, (uint32_t)ti, o, w);
    assert_vec(w, cos(30 * M_PI / 180), 0.5 - sin(30 * M_PI / 180), 0);
    free(pose);
    mfs_scene_free(s);
}

/* A PreRotation joint with a simple channel: the key already holds
 * Rpre . R, so the PreRotation helper must not apply again. */
static void test_simple_channel_pre_rotation_once(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t h1 = helper(s, "Arm", "Translation", 0, T(0, 1, 0));
    uint32_t h2 = helper(s, "Arm", "PreRotation", (int32_t)h1, Rz(90));
    uint32_t arm = add(s, "Arm", (int32_t)h2, I());
    add(s, "Hand", (int32_t)arm, T(2, 0, 0));
    mfs_animation *an = anim(s, 10);
    double t[2] = {0, 10};
    float d[2] = {90, 135}, p[3] = {0, 1, 0};
    chan_z(an, arm, 2, t, d, p);
    fold_ok(s);
    mfs_mat4 *pose = malloc(sizeof *pose * s->n_nodes);
    float o[3] = {0, 0, 0}, w[3];
    mfs_scene_pose(s, &s->animations[0], 10, pose);
    world_point(s, pose, (uint32_t)find(s, "Hand"), o, w);
    assert_vec(w, 2 * cos(135 * M_PI / 180), 1 + 2 * sin(135 * M_PI / 180), 0);
    free(pose);
    mfs_scene_free(s);
}

/* A helper that does not sit in a chain as assimp builds it (here: two
 * children, no real node below) is dissolved into its children, matrices
 * kept, and its name goes with it. */
static void test_odd_helper_dissolved(void **state)
{
    mfs_scene *s = mfs_scene_new();
    add(s, "RootNode", -1, I());
    uint32_t h = helper(s, "X", "Translation", 0, T(0, 3, 0));
    uint32_t a = add(s, "A", (int32_t)h, T(1, 0, 0));
    place(s, a, box(s, "a", 0, 0, 0, 1, 1, 1));
    uint32_t b = add(s, "B", (int32_t)h, T(-1, 0, 0));
    place(s, b, box(s, "b", 0, 0, 0, 1, 1, 1));
    float bmin[3], bmax[3], amin[3], amax[3];
    bounds(s, bmin, bmax);
    fold_ok(s);
    assert_int_equal(s->n_nodes, 3);
    assert_int_equal(s->nodes[0].n_children, 2);
    mfs_mat4 want = T(1, 3, 0);
    assert_mat_exact(&s->nodes[find(s, "A")].local, &want);
    bounds(s, amin, amax);
    assert_vec(amin, bmin[0], bmin[1], bmin[2]);
    assert_vec(amax, bmax[0], bmax[1], bmax[2]);
    mfs_scene_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_helpers_untouched),
        cmocka_unit_test(test_post_rotation),
        cmocka_unit_test(test_pivot_chain_product),
        cmocka_unit_test(test_geometric),
        cmocka_unit_test(test_geometric_mirror_flips_winding),
        cmocka_unit_test(test_helper_channel_composed),
        cmocka_unit_test(test_simple_channel_post_rotation),
        cmocka_unit_test(test_simple_channel_pre_rotation_once),
        cmocka_unit_test(test_odd_helper_dissolved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

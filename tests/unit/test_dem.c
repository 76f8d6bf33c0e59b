/* .dem writer: exact text for the hand-built fixtures (worked out from
 * fixtures.h and docs/formats/dem.md, not from the writer), skinning and
 * sequence lines for the two-bone strip, name rules, placement baking,
 * determinism, and the README example cube's numbers.
 *
 * The author's loader (research/dem_vrt.md, "measured"): std::stof throws
 * on subnormal and overflowing text, tokens are split on single spaces,
 * names are one word, the header is exactly `DEM 10`.  meshfs-inspect's
 * --check applies those rules; the last tests hold the writer's output to
 * it and make sure it refuses each breach. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "meshfs/formats.h"
#include "meshfs/inspect.h"
#include "meshfs/util.h"

/* Writes scene s as .dem and returns the text (NUL-terminated, caller
 * frees); fails the test on a writer error. */
static char *dem_text(const mfs_scene *s, const char *model_path)
{
    mfs_err err = {0};
    char *text = fixture_dem_text(s, model_path, &err);
    if (!text)
        fail_msg("%s", err.msg);
    return text;
}

/* The block of text from the line starting with `from` up to (not
 * including) the line starting with `to` (or the end when to is NULL);
 * caller frees. */
static char *block(const char *text, const char *from, const char *to)
{
    const char *a = strstr(text, from);
    if (!a)
        fail_msg("no '%s' in output", from);
    const char *b = to ? strstr(a, to) : a + strlen(a);
    if (!b)
        fail_msg("no '%s' after '%s'", to, from);
    size_t n = (size_t)(b - a);
    char *r = malloc(n + 1);
    memcpy(r, a, n);
    r[n] = '\0';
    return r;
}

static int count_prefix(const char *text, const char *prefix)
{
    int n = 0;
    size_t k = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, prefix, k) == 0;
    return n;
}

/* ---- the cube ---- */

/* Worked out from fixture_cube(): each face's corners 0.5 n +- 0.5 u
 * +- 0.5 v mapped (x, y, z) -> (x, -z, y), normals likewise, UV as given,
 * no colours -> 1.0 1.0 1.0, triangles unchanged. */
static const char cube_expected[] =
    "DEM 10\n"
    "model root\n"
    "joints 0\n"
    "meshes 1\n"
    "sequences 0\n"
    "mesh cube\n"
    "mat cube_mat\n"
    "verts 24\n"
    "v 0 0.5 -0.5 -0.5 1.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"
    "v 1 0.5 0.5 -0.5 1.0 0.0 0.0 1.0 0.0 1.0 1.0 1.0\n"
    "v 2 0.5 0.5 0.5 1.0 0.0 0.0 1.0 1.0 1.0 1.0 1.0\n"
    "v 3 0.5 -0.5 0.5 1.0 0.0 0.0 0.0 1.0 1.0 1.0 1.0\n"
    "v 4 -0.5 0.5 -0.5 -1.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"
    "v 5 -0.5 -0.5 -0.5 -1.0 0.0 0.0 1.0 0.0 1.0 1.0 1.0\n"
    "v 6 -0.5 -0.5 0.5 -1.0 0.0 0.0 1.0 1.0 1.0 1.0 1.0\n"
    "v 7 -0.5 0.5 0.5 -1.0 0.0 0.0 0.0 1.0 1.0 1.0 1.0\n"
    "v 8 -0.5 -0.5 0.5 0.0 0.0 1.0 0.0 0.0 1.0 1.0 1.0\n"
    "v 9 0.5 -0.5 0.5 0.0 0.0 1.0 1.0 0.0 1.0 1.0 1.0\n"
    "v 10 0.5 0.5 0.5 0.0 0.0 1.0 1.0 1.0 1.0 1.0 1.0\n"
    "v 11 -0.5 0.5 0.5 0.0 0.0 1.0 0.0 1.0 1.0 1.0 1.0\n"
    "v 12 -0.5 0.5 -0.5 0.0 0.0 -1.0 0.0 0.0 1.0 1.0 1.0\n"
    "v 13 0.5 0.5 -0.5 0.0 0.0 -1.0 1.0 0.0 1.0 1.0 1.0\n"
    "v 14 0.5 -0.5 -0.5 0.0 0.0 -1.0 1.0 1.0 1.0 1.0 1.0\n"
    "v 15 -0.5 -0.5 -0.5 0.0 0.0 -1.0 0.0 1.0 1.0 1.0 1.0\n"
    "v 16 -0.5 -0.5 -0.5 0.0 -1.0 0.0 0.0 0.0 1.0 1.0 1.0\n"
    "v 17 0.5 -0.5 -0.5 0.0 -1.0 0.0 1.0 0.0 1.0 1.0 1.0\n"
    "v 18 0.5 -0.5 0.5 0.0 -1.0 0.0 1.0 1.0 1.0 1.0 1.0\n"
    "v 19 -0.5 -0.5 0.5 0.0 -1.0 0.0 0.0 1.0 1.0 1.0 1.0\n"
    "v 20 0.5 0.5 -0.5 0.0 1.0 0.0 0.0 0.0 1.0 1.0 1.0\n"
    "v 21 -0.5 0.5 -0.5 0.0 1.0 0.0 1.0 0.0 1.0 1.0 1.0\n"
    "v 22 -0.5 0.5 0.5 0.0 1.0 0.0 1.0 1.0 1.0 1.0 1.0\n"
    "v 23 0.5 0.5 0.5 0.0 1.0 0.0 0.0 1.0 1.0 1.0 1.0\n"
    "tris 12\n"
    "t 0 0 1 2\n"
    "t 1 0 2 3\n"
    "t 2 4 5 6\n"
    "t 3 4 6 7\n"
    "t 4 8 9 10\n"
    "t 5 8 10 11\n"
    "t 6 12 13 14\n"
    "t 7 12 14 15\n"
    "t 8 16 17 18\n"
    "t 9 16 18 19\n"
    "t 10 20 21 22\n"
    "t 11 20 22 23\n"
    "weights 0\n"
    ;

static void test_cube_full_text(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    char *t = dem_text(s, NULL);
    assert_string_equal(t, cube_expected);
    free(t);
    mfs_scene_free(s);
}

/* What the author's loader needs: single-space tokens, `v` with id + 12
 * numbers, `t` with id + 3 indices, LF endings, final newline. */
static void test_cube_tokenises(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    char *t = dem_text(s, NULL);
    assert_null(strchr(t, '\r'));
    assert_null(strstr(t, "  "));
    assert_int_equal(t[strlen(t) - 1], '\n');
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        int tokens = 1;
        for (char *c = line; *c; c++)
            tokens += *c == ' ';
        assert_int_not_equal(line[strlen(line) - 1], ' ');
        if (line[0] == 'v' && line[1] == ' ')
            assert_int_equal(tokens, 13);
        if (line[0] == 't' && line[1] == ' ')
            assert_int_equal(tokens, 5);
    }
    free(t);
    mfs_scene_free(s);
}

static void test_model_name(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    static const struct {
        const char *path, *line;
    } cases[] = {
        {"props/box", "DEM 10\nmodel box\njoints 0\n"},
        {"box", "DEM 10\nmodel box\n"},
        {"vehicles/car/", "DEM 10\nmodel car\n"},
        {"a b/my crate", "DEM 10\nmodel my_crate\n"},
        {"", "DEM 10\nmodel root\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = dem_text(s, cases[i].path);
        if (strncmp(t, cases[i].line, strlen(cases[i].line)) != 0)
            fail_msg("model_path '%s': got '%.40s'", cases[i].path, t);
        free(t);
    }
    mfs_scene_free(s);
}

/* Names become one token: ASCII space/control bytes and invalid UTF-8
 * bytes -> '_', valid UTF-8 kept, empty -> fallback. */
static void test_names_sanitised(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    free(s->meshes[0].name);
    s->meshes[0].name = mfs_strdup("my mesh\tn\xc3\xa9w\xff");
    free(s->materials[0].name);
    s->materials[0].name = mfs_strdup("");
    char *t = dem_text(s, NULL);
    assert_non_null(strstr(t, "\nmesh my_mesh_n\xc3\xa9w_\nmat material_0\nverts 24\n"));
    free(t);

    /* no mesh name: the placing node's name; no material: "default" */
    s->meshes[0].name[0] = '\0';
    s->meshes[0].material = -1;
    free(s->nodes[1].name);
    s->nodes[1].name = mfs_strdup("Crate 01");
    t = dem_text(s, NULL);
    assert_non_null(strstr(t, "\nmesh Crate_01\nmat default\nverts 24\n"));
    free(t);
    mfs_scene_free(s);
}

/* Node placement is baked: rotate the cube's node 90 degrees about +Y and
 * scale it by 2 (local = R * S, exact 0/1 entries), so canonical
 * (x, y, z) -> (2z, 2y, -2x) and normals (x, y, z) -> (z, y, -x) after
 * renormalising.  Vertex 0: (0.5, -0.5, 0.5) -> (1, -1, -1) -> DEM
 * (1, 1, -1); normal (1, 0, 0) -> (0, 0, -1) -> DEM (0, 1, 0). */
static void test_placement_baked(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    float *m = s->nodes[1].local.m;
    memset(m, 0, sizeof s->nodes[1].local.m);
    m[2] = 2;   /* x' = 2z */
    m[5] = 2;   /* y' = 2y */
    m[8] = -2;  /* z' = -2x */
    m[15] = 1;
    char *t = dem_text(s, NULL);
    assert_non_null(strstr(t, "\nv 0 1.0 1.0 -1.0 0.0 1.0 0.0 0.0 0.0 1.0 1.0 1.0\n"));
    free(t);
    mfs_scene_free(s);
}

/* Research (dem_vrt.md, Topic A, "Winding"): DEM front faces are
 * counter-clockwise, n = (b - a) x (c - a) points out of the solid.  A node
 * that mirrors (scale -1 on X, det < 0) turns the baked triangles clockwise,
 * so the writer must swap two corners of each.  Checked on the cube, which is
 * centred on the origin: every written triangle's (b - a) x (c - a) points
 * away from the centre and along its corners' normals, with the source's
 * normals and with normals the writer computes. */
static void check_dem_outward(const char *t)
{
    static float pos[64][3], nrm[64][3];
    int nv = 0, nt = 0;
    for (const char *p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        unsigned i, a, b, c;
        float x[6];
        if (sscanf(p, "v %u %f %f %f %f %f %f", &i, &x[0], &x[1], &x[2], &x[3], &x[4], &x[5]) == 7) {
            assert_true(i < 64);
            memcpy(pos[i], x, sizeof pos[i]);
            memcpy(nrm[i], x + 3, sizeof nrm[i]);
            nv++;
        } else if (sscanf(p, "t %u %u %u %u", &i, &a, &b, &c) == 4) {
            assert_true(a < 64 && b < 64 && c < 64);
            float e1[3], e2[3], n[3], cen[3];
            for (int k = 0; k < 3; k++) {
                e1[k] = pos[b][k] - pos[a][k];
                e2[k] = pos[c][k] - pos[a][k];
                cen[k] = pos[a][k] + pos[b][k] + pos[c][k];
            }
            n[0] = e1[1] * e2[2] - e1[2] * e2[1];
            n[1] = e1[2] * e2[0] - e1[0] * e2[2];
            n[2] = e1[0] * e2[1] - e1[1] * e2[0];
            double out = n[0] * cen[0] + n[1] * cen[1] + n[2] * cen[2];
            if (out <= 0)
                fail_msg("triangle %u (%u %u %u) is clockwise seen from outside", i, a, b, c);
            unsigned cs[3] = {a, b, c};
            for (int k = 0; k < 3; k++) {
                const float *vn = nrm[cs[k]];
                if (n[0] * vn[0] + n[1] * vn[1] + n[2] * vn[2] <= 0)
                    fail_msg("triangle %u faces away from vertex %u's normal", i, cs[k]);
            }
            nt++;
        }
    }
    assert_int_equal(nv, 24);
    assert_int_equal(nt, 12);
}

static void test_mirror_keeps_ccw(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->nodes[1].local.m[0] = -1.0f; /* mirror x */
    char *t = dem_text(s, NULL);
    check_dem_outward(t);
    free(t);

    free(s->meshes[0].normals);
    s->meshes[0].normals = NULL;
    t = dem_text(s, NULL);
    check_dem_outward(t);
    free(t);
    mfs_scene_free(s);

    s = fixture_cube(); /* the unmirrored cube passes the same check */
    t = dem_text(s, NULL);
    check_dem_outward(t);
    free(t);
    mfs_scene_free(s);
}

/* Missing normals are computed (area-weighted face normals; the cube's
 * vertices each touch one face, so exactly the face normal); colours come
 * from the colour set, alpha dropped. */
static void test_computed_normals_and_colours(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_mesh *me = &s->meshes[0];
    free(me->normals);
    me->normals = NULL;
    me->colors = calloc(24, sizeof *me->colors);
    for (int v = 0; v < 24; v++) {
        me->colors[v][0] = 0.25f;
        me->colors[v][1] = 0.5f;
        me->colors[v][2] = 0.75f;
        me->colors[v][3] = 0.125f;
    }
    char *t = dem_text(s, NULL);
    /* v 0 as in cube_expected, face +X, normal DEM (1, 0, 0) */
    assert_non_null(strstr(t, "\nv 0 0.5 -0.5 -0.5 1.0 0.0 0.0 0.0 0.0 0.25 0.5 0.75\n"));
    /* v 8: face +Y, normal (0, 1, 0) -> DEM (0, 0, 1) */
    assert_non_null(strstr(t, "\nv 8 -0.5 -0.5 0.5 0.0 0.0 1.0 0.0 0.0 0.25 0.5 0.75\n"));
    free(t);
    mfs_scene_free(s);
}

/* Point and line meshes are not written; the count says so. */
static void test_skips_non_triangles(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    s->meshes = realloc(s->meshes, 2 * sizeof *s->meshes);
    mfs_mesh *ln = &s->meshes[1];
    memset(ln, 0, sizeof *ln);
    ln->name = mfs_strdup("edge");
    ln->material = -1;
    ln->prim = MFS_PRIM_LINES;
    ln->n_vertices = 2;
    ln->positions = calloc(2, sizeof *ln->positions);
    ln->n_faces = 1;
    ln->indices = calloc(2, sizeof(uint32_t));
    ln->indices[1] = 1;
    s->n_meshes = 2;
    mfs_node *n = &s->nodes[1];
    n->meshes = realloc(n->meshes, 2 * sizeof(uint32_t));
    n->meshes[1] = 1;
    n->n_meshes = 2;
    char *t = dem_text(s, NULL);
    assert_string_equal(t, cube_expected);
    free(t);
    mfs_scene_free(s);
}

/* ---- the skinned strip ---- */

/* Joints: bone0 (node 2), bone1 (node 3) and their ancestor root (node 0),
 * in node order; "strip" (node 1) is not one.  Bind poses: root = rest
 * (identity); bone0 = inverse(offset identity); bone1 = inverse(offset
 * translate(0,-1,0)) = translate(0,1,0) -> DEM (0, 0, 1).  Rotations are
 * identity -> quaternion xyz 0 0 0. */
static void test_strip_header_and_joints(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    char *t = dem_text(s, NULL);
    char *head = block(t, "DEM 10", "mesh ");
    assert_string_equal(head, "DEM 10\n"
                              "model root\n"
                              "joints 3\n"
                              "meshes 1\n"
                              "sequences 1\n"
                              "j root -1 0.0 0.0 0.0 0.0 0.0 0.0\n"
                              "j bone0 0 0.0 0.0 0.0 0.0 0.0 0.0\n"
                              "j bone1 1 0.0 0.0 1.0 0.0 0.0 0.0\n");
    free(head);
    free(t);
    mfs_scene_free(s);
}

/* Vertices (x, y, 0) -> DEM (x, 0, y), normal (0,0,1) -> (0,-1,0), UV
 * (x, y/2); trailing startWeight countWeight: v0 bone0; v1 bone0; v2
 * bone0+bone1; v3 bone0+bone1; v4 bone1; v5 bone1 -> starts 0 1 2 4 6 7.
 * w positions are in the joint's bind space: bone0 bind = identity, so the
 * vertex itself; bone1 bind = translate(0,1,0), so vertex - (0,1,0); then
 * mapped to DEM (x, -z, y). */
static void test_strip_vertices_and_weights(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    char *t = dem_text(s, NULL);
    char *mesh = block(t, "mesh strip", "sequence ");
    assert_string_equal(mesh, "mesh strip\n"
                              "mat strip_mat\n"
                              "verts 6\n"
                              "v 0 0.0 0.0 0.0 0.0 -1.0 0.0 0.0 0.0 1.0 1.0 1.0 0 1\n"
                              "v 1 1.0 0.0 0.0 0.0 -1.0 0.0 1.0 0.0 1.0 1.0 1.0 1 1\n"
                              "v 2 0.0 0.0 1.0 0.0 -1.0 0.0 0.0 0.5 1.0 1.0 1.0 2 2\n"
                              "v 3 1.0 0.0 1.0 0.0 -1.0 0.0 1.0 0.5 1.0 1.0 1.0 4 2\n"
                              "v 4 0.0 0.0 2.0 0.0 -1.0 0.0 0.0 1.0 1.0 1.0 1.0 6 1\n"
                              "v 5 1.0 0.0 2.0 0.0 -1.0 0.0 1.0 1.0 1.0 1.0 1.0 7 1\n"
                              "tris 4\n"
                              "t 0 0 1 3\n"
                              "t 1 0 3 2\n"
                              "t 2 2 3 5\n"
                              "t 3 2 5 4\n"
                              "weights 8\n"
                              "w 0 1 1.0 0.0 0.0 0.0\n"  /* v0 (0,0,0) in bone0 */
                              "w 1 1 1.0 1.0 0.0 0.0\n"  /* v1 (1,0,0) */
                              "w 2 1 0.5 0.0 0.0 1.0\n"  /* v2 (0,1,0) */
                              "w 3 2 0.5 0.0 0.0 0.0\n"  /* v2 - (0,1,0) in bone1 */
                              "w 4 1 0.5 1.0 0.0 1.0\n"  /* v3 (1,1,0) */
                              "w 5 2 0.5 1.0 0.0 0.0\n"  /* v3 - (0,1,0) = (1,0,0) */
                              "w 6 2 1.0 0.0 0.0 1.0\n"  /* v4 - (0,1,0) = (0,1,0) */
                              "w 7 2 1.0 1.0 0.0 1.0\n"); /* v5 - (0,1,0) = (1,1,0) */
    free(mesh);
    free(t);
    mfs_scene_free(s);
}

/* Biases are scaled to sum to 1 per vertex: v0's lone 0.5 becomes 1.0,
 * v2's 0.25 + 0.5 become 1/3 and 2/3 (float 0.33333334, 0.6666667). */
static void test_weights_normalised(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    s->meshes[0].bones[0].weights[0].weight = 0.5f;  /* v0 */
    s->meshes[0].bones[0].weights[2].weight = 0.25f; /* v2, bone0 */
    char *t = dem_text(s, NULL);
    assert_non_null(strstr(t, "\nw 0 1 1.0 0.0 0.0 0.0\n"));
    assert_non_null(strstr(t, "\nw 2 1 0.33333334 0.0 0.0 1.0\nw 3 2 0.6666667 0.0 0.0 0.0\n"));
    free(t);
    mfs_scene_free(s);
}

/* A bone whose name matched no node (node -1) contributes nothing: bone1's
 * weights go, v2/v3 keep bone0 alone (renormalised to 1), v4/v5 have no
 * weight (count 0), and bone1 is no joint (root and bone0 remain). */
static void test_bone_without_node(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    s->meshes[0].bones[1].node = -1;
    char *t = dem_text(s, NULL);
    char *head = block(t, "joints ", "mesh ");
    assert_string_equal(head, "joints 2\n"
                              "meshes 1\n"
                              "sequences 1\n"
                              "j root -1 0.0 0.0 0.0 0.0 0.0 0.0\n"
                              "j bone0 0 0.0 0.0 0.0 0.0 0.0 0.0\n");
    free(head);
    char *w = block(t, "\nv 2 ", "sequence ");
    assert_string_equal(w, "\nv 2 0.0 0.0 1.0 0.0 -1.0 0.0 0.0 0.5 1.0 1.0 1.0 2 1\n"
                           "v 3 1.0 0.0 1.0 0.0 -1.0 0.0 1.0 0.5 1.0 1.0 1.0 3 1\n"
                           "v 4 0.0 0.0 2.0 0.0 -1.0 0.0 0.0 1.0 1.0 1.0 1.0 4 0\n"
                           "v 5 1.0 0.0 2.0 0.0 -1.0 0.0 1.0 1.0 1.0 1.0 1.0 4 0\n"
                           "tris 4\n"
                           "t 0 0 1 3\n"
                           "t 1 0 3 2\n"
                           "t 2 2 3 5\n"
                           "t 3 2 5 4\n"
                           "weights 4\n"
                           "w 0 1 1.0 0.0 0.0 0.0\n"
                           "w 1 1 1.0 1.0 0.0 0.0\n"
                           "w 2 1 1.0 0.0 0.0 1.0\n"
                           "w 3 1 1.0 1.0 0.0 1.0\n");
    free(w);
    free(t);
    mfs_scene_free(s);
}

/* Reads n numbers after the first `skip` spaces of the line found by
 * prefix (which starts with "\n"). */
static void line_numbers(const char *text, const char *prefix, int skip, double *v, int n)
{
    const char *l = strstr(text, prefix);
    if (!l)
        fail_msg("no line '%s'", prefix);
    for (int i = 0; i < skip; i++)
        l = strchr(l, ' ') + 1;
    char *end;
    for (int i = 0; i < n; i++) {
        v[i] = strtod(l, &end);
        assert_true(end != l);
        l = end;
    }
    assert_true(*l == '\n');
}

/* "bend": 10 ticks at 10 ticks/s -> rate 10 (the tick rate is a whole
 * number in 10..60), 1 s -> 11 frames (0..10 inclusive).  Sequence joints
 * as in the model with flags 511 (all nine components) and start component
 * 9 * index.  Frame 5 (t = 5 ticks) of bone1: translation (0,1,0) -> DEM
 * (0,0,1); rotation slerp halfway to 90 degrees about +Z = 45 degrees,
 * q = (0, 0, sin 22.5, cos 22.5) -> DEM (x, -z, y) = (0, -0.38268343, 0);
 * scale 1.  Bounds: frame 0 = the strip at rest, (0..1, 0..2, 0) -> DEM
 * min (0,0,0) max (1,0,2); frame 10: bone1's weight box (0..1, 0..1)
 * turned 90 degrees and lifted by 1 covers x -1..0, y 1..2; with bone0's
 * box -> x -1..1, y 0..2 -> DEM min (-1,0,0) max (1,0,2). */
static void test_strip_sequence(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    char *t = dem_text(s, NULL);
    char *head = block(t, "sequence ", "bounds ");
    assert_string_equal(head, "sequence bend\n"
                              "rate 10\n"
                              "components 9\n"
                              "joints 3\n"
                              "j root -1 511 0\n"
                              "j bone0 0 511 9\n"
                              "j bone1 1 511 18\n");
    free(head);
    char *bounds = block(t, "bounds ", "events ");
    assert_int_equal(count_prefix(bounds, "b "), 11);
    assert_non_null(strstr(bounds, "bounds 11\nb 0.0 0.0 0.0 1.0 0.0 2.0\n"));
    free(bounds);
    assert_non_null(strstr(t, "\nevents 0\nframes 11\nf 0 0 "));
    char *frames = block(t, "frames ", NULL);
    assert_int_equal(count_prefix(frames, "f "), 33);
    free(frames);
    /* last line is frame 10, joint 2 */
    assert_non_null(strstr(t, "\nf 10 2 "));
    assert_null(strstr(t, "\nf 11 "));

    double v[9];
    line_numbers(t, "\nf 5 2 ", 3, v, 9);
    const double want[9] = {0, 0, 1, 0, -0.38268343236, 0, 1, 1, 1};
    for (int i = 0; i < 9; i++)
        if (fabs(v[i] - want[i]) > 1e-6)
            fail_msg("f 5 2 component %d: %.9g, want %.9g", i, v[i], want[i]);
    /* the root and bone0 never move */
    assert_non_null(strstr(t, "\nf 5 0 0.0 0.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"));
    assert_non_null(strstr(t, "\nf 5 1 0.0 0.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"));

    /* frame 10 bounds: the 11th b line */
    const char *b = strstr(t, "\nbounds 11\n");
    for (int i = 0; i < 11; i++)
        b = strchr(b + 1, '\n');
    const double bw[6] = {-1, 0, 0, 1, 0, 2};
    line_numbers(b, "\nb ", 1, v, 6);
    for (int i = 0; i < 6; i++)
        if (fabs(v[i] - bw[i]) > 1e-6)
            fail_msg("frame 10 bound %d: %.9g, want %.9g", i, v[i], bw[i]);
    free(t);
    mfs_scene_free(s);
}

/* A rate that is not a whole number in 10..60 resamples at 30 fps: 25.5
 * ticks/s, 51 ticks = 2 s -> 61 frames. */
static void test_default_rate(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    s->animations[0].ticks_per_second = 25.5;
    s->animations[0].duration = 51;
    char *t = dem_text(s, NULL);
    assert_non_null(strstr(t, "\nrate 30\ncomponents 9\n"));
    assert_non_null(strstr(t, "\nbounds 61\n"));
    assert_non_null(strstr(t, "\nframes 61\n"));
    assert_non_null(strstr(t, "\nf 60 2 "));
    free(t);
    mfs_scene_free(s);
}

static void test_too_many_frames(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    s->animations[0].duration = 1e9;
    mfs_options o;
    mfs_options_default(&o);
    mfs_err err = {0};
    mfs_sink out;
    mfs_sink_init_mem(&out);
    assert_int_equal(mfs_write_dem(s, NULL, &o, &out, &err), -1);
    assert_non_null(strstr(err.msg, "dem: animation 'bend': "));
    assert_non_null(strstr(err.msg, "frame limit"));
    mfs_sink_free(&out);
    mfs_scene_free(s);
}

static void test_deterministic(void **state)
{
    (void)state;
    mfs_scene *a = fixture_skinned_strip(), *b = fixture_skinned_strip();
    char *ta = dem_text(a, "x/strip"), *tb = dem_text(b, "x/strip"), *tc = dem_text(a, "x/strip");
    assert_string_equal(ta, tb);
    assert_string_equal(ta, tc);
    free(ta);
    free(tb);
    free(tc);
    mfs_scene_free(a);
    mfs_scene_free(b);
}

/* ---- the loader's rules ---- */

/* meshfs-inspect --check on text: 0 or -1 with err. */
static int strict(const char *text, mfs_err *err)
{
    mfs_summary sum;
    return mfs_inspect_buffer("t.dem", (const uint8_t *)text, strlen(text), 1, &sum, err);
}

static void expect_strict_ok(const char *text)
{
    mfs_err err = {0};
    if (strict(text, &err) != 0)
        fail_msg("--check refused writer output: %s", err.msg);
}

/* Subnormal values print as 0.0 (std::stof throws on "1e-40"); the
 * smallest normal float, FLT_MIN, is kept.  Vertex 0 of the cube is
 * canonical (0.5, -0.5, 0.5) with normal (1, 0, 0); x = 1e-40 stays x,
 * z = -1e-40 becomes DEM y = 1e-40, the normal's y = -1e-40 becomes DEM
 * z; u of vertex 1 = FLT_MIN. */
static void test_subnormals_flushed(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_mesh *m = &s->meshes[0];
    m->positions[0][0] = 1e-40f;
    m->positions[0][2] = -1e-40f;
    m->normals[0][1] = -1e-40f;
    m->uv[0][1][0] = FLT_MIN;
    m->uv[0][2][1] = -FLT_TRUE_MIN;
    assert_true(fpclassify(m->positions[0][0]) == FP_SUBNORMAL);
    char *t = dem_text(s, NULL);
    assert_non_null(strstr(t, "\nv 0 0.0 0.0 -0.5 1.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"));
    assert_non_null(strstr(t, "\nv 1 0.5 0.5 -0.5 1.0 0.0 0.0 1.1754944e-38 0.0 1.0 1.0 1.0\n"));
    assert_non_null(strstr(t, "\nv 2 0.5 0.5 0.5 1.0 0.0 0.0 1.0 0.0 1.0 1.0 1.0\n"));
    assert_null(strstr(t, "e-40"));
    assert_null(strstr(t, "e-45"));
    assert_null(strstr(t, "-0.0"));
    expect_strict_ok(t);
    free(t);
    mfs_scene_free(s);
}

/* Names with spaces, tabs and line breaks come out as one word; empty
 * names get their documented placeholders; the result passes --check. */
static void test_names_single_words(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    free(s->meshes[0].name);
    s->meshes[0].name = mfs_strdup("left\tarm  skin");
    free(s->materials[0].name);
    s->materials[0].name = mfs_strdup("skin\r\nred");
    free(s->nodes[2].name);
    s->nodes[2].name = mfs_strdup("upper arm");
    free(s->meshes[0].bones[0].name);
    s->meshes[0].bones[0].name = mfs_strdup("upper arm");
    free(s->animations[0].name);
    s->animations[0].name = mfs_strdup("wave\thello there");
    char *t = dem_text(s, "chars/my hero");
    assert_int_equal(strncmp(t, "DEM 10\nmodel my_hero\n", 21), 0);
    assert_non_null(strstr(t, "\nj upper_arm 0 "));
    assert_non_null(strstr(t, "\nmesh left_arm__skin\nmat skin__red\nverts 6\n"));
    assert_non_null(strstr(t, "\nsequence wave_hello_there\n"));
    assert_null(strchr(t, '\t'));
    expect_strict_ok(t);
    free(t);

    s->meshes[0].name[0] = '\0';
    s->nodes[1].name[0] = '\0'; /* the placing node has no name either */
    s->materials[0].name[0] = '\0';
    s->nodes[0].name[0] = '\0';
    s->animations[0].name[0] = '\0';
    s->nodes[3].name[0] = '\0';
    s->meshes[0].bones[1].name[0] = '\0';
    t = dem_text(s, NULL);
    assert_int_equal(strncmp(t, "DEM 10\nmodel model\n", 19), 0);
    assert_non_null(strstr(t, "\nj joint 1 "));
    assert_non_null(strstr(t, "\nmesh mesh_0\nmat material_0\nverts 6\n"));
    assert_non_null(strstr(t, "\nsequence sequence_0\n"));
    expect_strict_ok(t);
    free(t);
    mfs_scene_free(s);
}

/* The cube's text with its first `from` replaced by `to` (caller frees). */
static char *edited(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        fail_msg("no '%s' in the text", from);
    size_t n = strlen(text), a = (size_t)(at - text), k = strlen(from), w = strlen(to);
    char *r = malloc(n - k + w + 1);
    memcpy(r, text, a);
    memcpy(r + a, to, w);
    strcpy(r + a + w, at + k);
    return r;
}

/* Each breach of the loader's rules fails --check, with the reason; the
 * same text still reads without --check (the reader itself is tolerant). */
static void test_strict_reader(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    char *cube = dem_text(s, NULL);
    expect_strict_ok(cube);
    static const struct {
        const char *from, *to, *msg;
    } cases[] = {
        {"DEM 10\n", "DEM  10\n",
         "line 1: tokens must be separated by exactly one space"},
        {"DEM 10\n", "DEM_10\n",
         "line 1: header 'DEM_10' is the older form of 'DEM 10', which the loader does not "
         "recognise"},
        {"DEM 10\n", "DEM 010\n", "line 1: header 'DEM 010' is not exactly 'DEM 10'"},
        {"v 0 0.5 ", "v 0 1e-40 ",
         "line 9: field 2 '1e-40': std::stof throws out_of_range (subnormal or underflowing)"},
        {"v 3 0.5 ", "v 3 1e39 ",
         "line 12: field 2 '1e39': std::stof throws out_of_range (beyond float range)"},
        {"1.0 1.0 1.0\nv 1 ", "1.0 1.0 1e-50\nv 1 ", "line 9: field 12 '1e-50': std::stof"},
        {"mesh cube\n", "mesh my cube\n",
         "line 6: 'mesh' name 'my cube' is not one word (the loader keeps 'my')"},
        {"model root\n", "model the root\n", "line 2: 'model' name 'the root' is not one word"},
        {"mat cube_mat\n", "mat cube mat\n", "line 7: 'mat' name 'cube mat' is not one word"},
        {"mat cube_mat\n", "mat cube\tmat\n", "line 7: control character 0x09"},
        {"v 0 0.5 ", "v\t0 0.5 ", "line 9: control character 0x09"},
        {"weights 0\n", "weights 0 \n", "line 46: tokens must be separated by exactly one space"},
        {"tris 12\n", "\ntris 12\n", "line 33: empty line"},
        {"t 0 0 1 2\n", "t 0 1 2\n", "line 34: 't' line without a polygon index"},
        {"verts 24\n", "verts 2147483648\n",
         "line 8: field 1 '2147483648' is out of the range std::stoi reads"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = edited(cube, cases[i].from, cases[i].to);
        mfs_err err = {0};
        if (strict(t, &err) == 0)
            fail_msg("case %zu ('%s' -> '%s') passed --check", i, cases[i].from, cases[i].to);
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].msg);
        mfs_summary sum;
        assert_int_equal(mfs_inspect_buffer("t.dem", (const uint8_t *)t, strlen(t), 0, &sum,
                                            &err), 0);
        assert_true(sum.n_violations >= 1);
        free(t);
    }
    free(cube);
    mfs_scene_free(s);
}

/* The skinned strip with its sequence passes --check as written. */
static void test_strip_passes_strict(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    char *t = dem_text(s, "x/strip");
    expect_strict_ok(t);
    free(t);
    mfs_scene_free(s);
}

/* ---- the README example ---- */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Every number in the README cube's `v` lines that float32 holds exactly
 * prints exactly as the exporter printed it (the exporter's Python repr of
 * the same value) whenever that repr is a shortest float32 text too
 * (-1.0, 1.0, 0.125, 0.75, ...).  The normals are the one difference:
 * Blender's float 0.57735032 promoted to double reprs as
 * 0.5773503184318542; meshfs writes its shortest float32 text 0.5773503. */
static void test_readme_cube_numbers(void **state)
{
    (void)state;
    const char *shared = getenv("MESHFS_SHARED");
    char path[1024];
    if (!shared || snprintf(path, sizeof path, "%s/testdata/real", shared) < 0 ||
        access(path, F_OK) != 0)
        skip(); /* a checkout without ../shared beside it */
    snprintf(path, sizeof path, "%s/testdata/real/dem/readme_cube_latest.dem", shared);
    char *text = read_text(path);
    if (!text)
        fail_msg("cannot read %s", path);
    int same = 0, longer = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "v ", 2) != 0)
            continue;
        char *tok = strchr(line + 2, ' '); /* skip the index */
        while (tok) {
            tok++;
            char *end = strchr(tok, ' ');
            size_t len = end ? (size_t)(end - tok) : strlen(tok);
            char num[64];
            memcpy(num, tok, len);
            num[len] = '\0';
            double d = strtod(num, NULL);
            float f = (float)d;
            assert_true((double)f == d); /* all of them are float32 values */
            char mine[MFS_F32_BUF];
            mfs_fmt_f32(f, mine);
            if (strcmp(mine, num) == 0) {
                same++;
            } else {
                /* only the 17-digit normals differ, and to the expected text */
                assert_true(len > 12);
                assert_string_equal(mine, d < 0 ? "-0.5773503" : "0.5773503");
                longer++;
            }
            tok = end;
        }
    }
    /* 8 lines of 11 numbers: 3 position + 2 UV + 3 colour the same, 3 normal
     * components shorter */
    assert_int_equal(same, 8 * 8);
    assert_int_equal(longer, 8 * 3);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cube_full_text),
        cmocka_unit_test(test_cube_tokenises),
        cmocka_unit_test(test_model_name),
        cmocka_unit_test(test_names_sanitised),
        cmocka_unit_test(test_placement_baked),
        cmocka_unit_test(test_mirror_keeps_ccw),
        cmocka_unit_test(test_computed_normals_and_colours),
        cmocka_unit_test(test_skips_non_triangles),
        cmocka_unit_test(test_strip_header_and_joints),
        cmocka_unit_test(test_strip_vertices_and_weights),
        cmocka_unit_test(test_weights_normalised),
        cmocka_unit_test(test_bone_without_node),
        cmocka_unit_test(test_strip_sequence),
        cmocka_unit_test(test_default_rate),
        cmocka_unit_test(test_too_many_frames),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_readme_cube_numbers),
        cmocka_unit_test(test_subnormals_flushed),
        cmocka_unit_test(test_names_single_words),
        cmocka_unit_test(test_strict_reader),
        cmocka_unit_test(test_strip_passes_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

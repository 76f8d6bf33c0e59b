/* The scene model's helpers: math, validation, world placement, sampling,
 * and the naming rule for views. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "meshfs/formats.h"
#include "meshfs/rules.h"
#include "meshfs/scene.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-5)

static void test_mat4(void **state)
{
    mfs_mat4 a, b, r, inv;
    float t[3] = {1, 2, 3}, q[4] = {0, 0, 0.70710678f, 0.70710678f}, s[3] = {2, 2, 2};
    mfs_mat4_compose(&a, t, q, s);
    /* 90 degrees about Z, scale 2: x axis -> (0, 2, 0), translation in 3/7/11 */
    NEAR(a.m[0], 0); NEAR(a.m[4], 2); NEAR(a.m[1], -2);
    NEAR(a.m[3], 1); NEAR(a.m[7], 2); NEAR(a.m[11], 3);
    float p[3] = {1, 0, 0}, o[3];
    mfs_mat4_point(&a, p, o);
    NEAR(o[0], 1); NEAR(o[1], 4); NEAR(o[2], 3);
    assert_int_equal(mfs_mat4_invert(&inv, &a), 0);
    mfs_mat4_mul(&r, &a, &inv);
    for (int i = 0; i < 16; i++)
        NEAR(r.m[i], (i % 5 == 0) ? 1 : 0);
    float t2[3], q2[4], s2[3];
    assert_int_equal(mfs_mat4_decompose(&a, t2, q2, s2), 0);
    NEAR(t2[2], 3); NEAR(s2[0], 2); NEAR(q2[2], 0.70710678f); NEAR(q2[3], 0.70710678f);
    memset(&b, 0, sizeof b);
    assert_int_equal(mfs_mat4_invert(&inv, &b), -1);
    NEAR(mfs_mat4_det3(&a), 8);
}

static void test_fixtures_validate(void **state)
{
    mfs_err err;
    mfs_scene *c = fixture_cube(), *k = fixture_skinned_strip();
    assert_int_equal(mfs_scene_validate(c, &err), 0);
    assert_int_equal(mfs_scene_validate(k, &err), 0);
    assert_int_equal(mfs_scene_vertex_count(c), 24);
    assert_int_equal(mfs_scene_triangle_count(c), 12);
    float mn[3], mx[3];
    assert_true(mfs_scene_bounds(k, 1, mn, mx));
    NEAR(mx[1], 2); NEAR(mn[0], 0);
    /* every cube triangle is counter-clockwise seen from outside */
    const mfs_mesh *m = &c->meshes[0];
    for (uint32_t f = 0; f < m->n_faces; f++) {
        const float *a = m->positions[m->indices[3 * f]], *b = m->positions[m->indices[3 * f + 1]],
                    *d = m->positions[m->indices[3 * f + 2]];
        float u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, v[3] = {d[0] - a[0], d[1] - a[1], d[2] - a[2]};
        float n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
        const float *nn = m->normals[m->indices[3 * f]];
        assert_true(n[0] * nn[0] + n[1] * nn[1] + n[2] * nn[2] > 0);
    }
    mfs_scene_free(c);
    mfs_scene_free(k);
}

static void test_validate_rejects(void **state)
{
    mfs_err err;
    mfs_scene *c = fixture_cube();
    c->meshes[0].indices[5] = 24;
    assert_int_equal(mfs_scene_validate(c, &err), -1);
    assert_non_null(strstr(err.msg, "index 24 out of range"));
    c->meshes[0].indices[5] = 0;
    c->meshes[0].positions[3][1] = NAN;
    assert_int_equal(mfs_scene_validate(c, &err), -1);
    assert_non_null(strstr(err.msg, "not finite"));
    c->meshes[0].positions[3][1] = 0;
    c->meshes[0].uv[0][7][1] = INFINITY;
    assert_int_equal(mfs_scene_validate(c, &err), -1);
    assert_string_equal(err.msg, "mesh 'cube': texture coordinate of vertex 7 is not finite");
    c->meshes[0].uv[0][7][1] = 0;
    c->nodes[1].parent = 5;
    assert_int_equal(mfs_scene_validate(c, &err), -1);
    mfs_scene_free(c);
}

static void test_world_and_pose(void **state)
{
    mfs_scene *k = fixture_skinned_strip();
    mfs_mat4 world[4], local[4];
    mfs_scene_world(k, world);
    NEAR(world[3].m[7], 1); /* bone1 at y = 1 */
    int32_t placed[1];
    mfs_scene_mesh_nodes(k, placed);
    assert_int_equal(placed[0], 1);
    /* halfway through "bend": 45 degrees about Z, position key kept */
    mfs_scene_pose(k, &k->animations[0], 5.0, local);
    NEAR(local[3].m[0], cosf((float)M_PI / 4));
    NEAR(local[3].m[4], sinf((float)M_PI / 4));
    NEAR(local[3].m[7], 1);
    /* clamped past the end: 90 degrees */
    mfs_scene_pose(k, &k->animations[0], 50.0, local);
    NEAR(local[3].m[0], 0);
    NEAR(local[3].m[4], 1);
    /* unanimated nodes keep their rest matrix */
    assert_memory_equal(&local[2], &k->nodes[2].local, sizeof(mfs_mat4));
    mfs_scene_free(k);
}

static int fake_model(void *ctx, const char *n)
{
    (void)ctx;
    const char *d = strrchr(n, '.');
    return d && (!strcmp(d, ".obj") || !strcmp(d, ".fbx"));
}

static void test_view_naming(void **state)
{
    char out[64];
    const char *a[] = {"car.fbx", "readme.txt"};
    assert_int_equal(mfs_view_base("car.fbx", a, 2, fake_model, NULL, out, sizeof out), 0);
    assert_string_equal(out, "car");
    const char *b[] = {"a.obj", "a.fbx", "a.mtl"};
    assert_int_equal(mfs_view_base("a.obj", b, 3, fake_model, NULL, out, sizeof out), 1);
    assert_string_equal(out, "a.obj");
    assert_int_equal(mfs_view_base("a.fbx", b, 3, fake_model, NULL, out, sizeof out), 1);
    assert_string_equal(out, "a.fbx");
    const char *c[] = {"t.obj", "t.gmf"}; /* a real file already named like a view */
    assert_int_equal(mfs_view_base("t.obj", c, 2, fake_model, NULL, out, sizeof out), 1);
    assert_string_equal(out, "t.obj");
    const char *d[] = {".hidden"};
    assert_int_equal(mfs_name_stem_len(".hidden"), 7);
    assert_int_equal(mfs_view_base(".hidden", d, 1, fake_model, NULL, out, 4), -1);
}

static void test_option_keys(void **state)
{
    mfs_options o;
    mfs_options_default(&o);
    char a[128], b[128];
    o.fmi_textures = 1;
    o.model_path = "cars/car";
    mfs_options_key(&o, MFS_OPT_PRETRANS | MFS_OPT_SOURCE_FRAME, a, sizeof a);
    assert_string_equal(a, ""); /* fmi options do not reach an fmd key */
    mfs_options_key(&o, MFS_OPT_FMI_TEXTURES | MFS_OPT_MODEL_PATH, b, sizeof b);
    assert_string_equal(b, "fmi_textures;model=cars/car;");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mat4),
        cmocka_unit_test(test_fixtures_validate),
        cmocka_unit_test(test_validate_rejects),
        cmocka_unit_test(test_world_and_pose),
        cmocka_unit_test(test_view_naming),
        cmocka_unit_test(test_option_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

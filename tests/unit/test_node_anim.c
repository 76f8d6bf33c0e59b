/* Node animation (issue 29): which nodes it moves (mfs_scene_moved_nodes),
 * keys that follow a source path (mfs_channel_follow), and .dem joints made
 * for rigid meshes that node animation moves.  Expected values come from
 * the rules in docs/formats/dem.md and docs/import.md ("Keys that follow the
 * source"), worked out by hand; tests/integration/test_node_anim.py plays
 * converted files end to end. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "meshfs/formats.h"

static const double PI = 3.14159265358979323846;

/* The cube fixture with one animation of 30 ticks at 30 per second whose
 * channel on node `node` turns it about +Y from 0 to `deg` degrees. */
static mfs_scene *turning_cube(int32_t node, double deg)
{
    mfs_scene *s = fixture_cube();
    s->n_animations = 1;
    s->animations = calloc(1, sizeof *s->animations);
    mfs_animation *a = &s->animations[0];
    a->name = mfs_strdup("turn");
    a->duration = 30;
    a->ticks_per_second = 30;
    a->n_channels = 1;
    a->channels = calloc(1, sizeof *a->channels);
    mfs_channel *c = &a->channels[0];
    c->node = node;
    c->n_rot = 2;
    c->rot = calloc(2, sizeof *c->rot);
    c->rot[0] = (mfs_quat_key){0, {0, 0, 0, 1}};
    double h = deg * PI / 360;
    c->rot[1] = (mfs_quat_key){30, {0, (float)sin(h), 0, (float)cos(h)}};
    return s;
}

static char *dem_text(const mfs_scene *s)
{
    mfs_err err = {0};
    char *text = fixture_dem_text(s, NULL, &err);
    if (!text)
        fail_msg("%s", err.msg);
    return text;
}

static int count_prefix(const char *text, const char *prefix)
{
    int n = 0;
    size_t k = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, prefix, k) == 0;
    return n;
}

static void test_moved_nodes(void **state)
{
    (void)state;
    unsigned char moved[2];
    mfs_scene *s = turning_cube(1, 90);
    assert_int_equal(mfs_scene_moved_nodes(s, moved), 1);
    assert_int_equal(moved[0], 0);
    assert_int_equal(moved[1], 1);
    mfs_scene_free(s);

    /* a channel on the root moves its child too */
    s = turning_cube(0, 90);
    assert_int_equal(mfs_scene_moved_nodes(s, moved), 1);
    assert_int_equal(moved[0], 1);
    assert_int_equal(moved[1], 1);
    mfs_scene_free(s);

    /* keys that all equal the rest transform move nothing */
    s = turning_cube(1, 0);
    assert_int_equal(mfs_scene_moved_nodes(s, moved), 0);
    assert_int_equal(moved[0] + moved[1], 0);
    mfs_scene_free(s);
}

/* A channel that moves nothing leaves the cube's .dem as it was: no joint,
 * 13-token vertices, no weights. */
static void test_still_channel_writes_static(void **state)
{
    (void)state;
    mfs_scene *s = turning_cube(1, 0);
    char *t = dem_text(s);
    assert_non_null(strstr(t, "\njoints 0\n"));
    assert_non_null(strstr(t, "\nweights 0\n"));
    assert_int_equal(count_prefix(t, "w "), 0);
    assert_non_null(strstr(t, "\nv 0 0.5 -0.5 -0.5 1.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0\n"));
    free(t);
    mfs_scene_free(s);
}

/* The turning cube: root and cube are joints, every vertex has one weight
 * of bias 1 on the cube's joint, at its own place (the joint's bind is the
 * identity), and frame 15 turns the joint 45 degrees about canonical +Y,
 * DEM +Z: quaternion (0, 0, sin 22.5 deg). */
static void test_rigid_mesh_bound_to_its_node(void **state)
{
    (void)state;
    mfs_scene *s = turning_cube(1, 90);
    char *t = dem_text(s);
    assert_non_null(strstr(t, "\njoints 2\n"));
    assert_non_null(strstr(t, "\nj root -1 0.0 0.0 0.0 0.0 0.0 0.0\n"));
    assert_non_null(strstr(t, "\nj cube 0 0.0 0.0 0.0 0.0 0.0 0.0\n"));
    assert_non_null(strstr(t, "\nweights 24\n"));
    assert_int_equal(count_prefix(t, "w "), 24);
    /* vertex 0 (0.5, -0.5, 0.5) canonical is (0.5, -0.5, -0.5) in DEM */
    assert_non_null(strstr(t, "\nv 0 0.5 -0.5 -0.5 1.0 0.0 0.0 0.0 0.0 1.0 1.0 1.0 0 1\n"));
    assert_non_null(strstr(t, "\nw 0 1 1.0 0.5 -0.5 -0.5\n"));
    assert_non_null(strstr(t, "\nw 23 1 1.0 "));
    const char *f = strstr(t, "\nf 15 1 ");
    assert_non_null(f);
    double v[9];
    assert_int_equal(sscanf(f, "\nf 15 1 %lf %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6], &v[7], &v[8]),
                     9);
    assert_true(fabs(v[3]) < 1e-6 && fabs(v[4]) < 1e-6);
    assert_true(fabs(v[5] - sin(PI / 8)) < 1e-6);
    /* bounds at frame 15: the unit cube turned 45 degrees spans
     * +-sqrt(2)/2 in x and DEM y, +-0.5 in DEM z */
    const char *b = strstr(t, "\nbounds 31\n");
    assert_non_null(b);
    for (int i = 0; i < 16; i++)
        b = strchr(b + 1, '\n');
    double bb[6];
    assert_int_equal(sscanf(b, "\nb %lf %lf %lf %lf %lf %lf", &bb[0], &bb[1], &bb[2], &bb[3], &bb[4], &bb[5]), 6);
    double r = sqrt(0.5);
    double want[6] = {-r, -r, -0.5, r, r, 0.5};
    for (int i = 0; i < 6; i++)
        assert_true(fabs(bb[i] - want[i]) < 1e-5);
    free(t);
    mfs_scene_free(s);
}

/* A path on a quarter circle of radius 1 over ticks 0..1: keys at its two
 * ends alone would cut the chord (0.29 off at the middle). */
static void arc(void *ctx, double t, float tr[3], float q[4], float sc[3])
{
    (void)ctx;
    double a = t * PI / 2;
    tr[0] = (float)cos(a), tr[1] = (float)sin(a), tr[2] = 0;
    q[0] = q[1] = q[2] = 0, q[3] = 1;
    sc[0] = sc[1] = sc[2] = 1;
}

static void line(void *ctx, double t, float tr[3], float q[4], float sc[3])
{
    (void)ctx;
    double h = t * PI / 4; /* a turn of 90 degrees about z: slerp is exact */
    tr[0] = (float)(2 * t), tr[1] = 0, tr[2] = 0;
    q[0] = q[1] = 0, q[2] = (float)sin(h), q[3] = (float)cos(h);
    sc[0] = sc[1] = sc[2] = 1;
}

/* A path no key density follows (a hostile curve). */
static void wild(void *ctx, double t, float tr[3], float q[4], float sc[3])
{
    (void)ctx;
    tr[0] = (float)(1e6 * sin(1e7 * t)), tr[1] = tr[2] = 0;
    q[0] = q[1] = q[2] = 0, q[3] = 1;
    sc[0] = sc[1] = sc[2] = 1;
}

static void test_follow_is_capped(void **state)
{
    (void)state;
    double times[3] = {0, 1, 2};
    mfs_channel c;
    mfs_err err = {0};
    assert_int_equal(mfs_channel_follow(&c, times, 3, wild, NULL, 1.0, &err), 0);
    /* 64 per source key plus 4096, on top of the 3 source keys */
    assert_true(c.n_pos > 3 && c.n_pos <= 3 + 3 * 64 + 4096);
    for (uint32_t k = 1; k < c.n_pos; k++)
        assert_true(c.pos[k].time > c.pos[k - 1].time);
    assert_true(c.pos[c.n_pos - 1].time == 2);
    free(c.pos), free(c.rot), free(c.scale);
}

static void test_follow_adds_keys_on_an_arc(void **state)
{
    (void)state;
    double times[2] = {0, 1};
    mfs_channel c;
    mfs_err err = {0};
    assert_int_equal(mfs_channel_follow(&c, times, 2, arc, NULL, 1.0, &err), 0);
    assert_true(c.n_pos > 2);
    assert_int_equal(c.n_pos, c.n_rot);
    assert_true(c.pos[0].time == 0 && c.pos[c.n_pos - 1].time == 1);
    for (int i = 0; i <= 200; i++) {
        double t = i / 200.0;
        float got[3];
        mfs_track_sample_vec(c.pos, c.n_pos, t, got);
        double dx = got[0] - cos(t * PI / 2), dy = got[1] - sin(t * PI / 2);
        assert_true(sqrt(dx * dx + dy * dy) <= 1e-4 + 1e-6);
    }
    free(c.pos), free(c.rot), free(c.scale);

    /* what interpolation already follows gets no key */
    assert_int_equal(mfs_channel_follow(&c, times, 2, line, NULL, 1.0, &err), 0);
    assert_int_equal(c.n_pos, 2);
    free(c.pos), free(c.rot), free(c.scale);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moved_nodes),
        cmocka_unit_test(test_still_channel_writes_static),
        cmocka_unit_test(test_rigid_mesh_bound_to_its_node),
        cmocka_unit_test(test_follow_adds_keys_on_an_arc),
        cmocka_unit_test(test_follow_is_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

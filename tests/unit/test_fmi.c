/* .fmi writer: the exact text, worked out from docs/formats/fmi.md. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "meshfs/formats.h"

static char *write_fmi(const mfs_scene *s, const mfs_options *o)
{
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_scene_validate(s, &err), 0);
    mfs_sink out;
    mfs_sink_init_mem(&out);
    if (mfs_write_fmi(s, NULL, o, &out, &err) != 0)
        fail_msg("mfs_write_fmi: %s", err.msg);
    mfs_put_u8(&out, 0);
    assert_int_equal(mfs_sink_finish(&out), 0);
    size_t n;
    char *text = (char *)mfs_sink_take(&out, &n);
    mfs_sink_free(&out);
    assert_int_equal(strlen(text), n - 1); /* no NUL inside */
    return text;
}

static mfs_options opts(const char *model_path, int textures)
{
    mfs_options o;
    mfs_options_default(&o);
    o.model_path = model_path;
    o.fmi_textures = textures;
    return o;
}

static void expect_text(const mfs_scene *s, const mfs_options *o, const char *want)
{
    char *got = write_fmi(s, o);
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
}

/* A one-point mesh: enough for the .fmi, which only reads names and
 * materials. */
static void append_mesh(mfs_scene *s, const char *name, int32_t material)
{
    s->meshes = realloc(s->meshes, sizeof *s->meshes * (s->n_meshes + 1));
    mfs_mesh *m = &s->meshes[s->n_meshes++];
    memset(m, 0, sizeof *m);
    m->name = mfs_strdup(name);
    m->material = material;
    m->prim = MFS_PRIM_POINTS;
    m->n_vertices = 1;
    m->positions = calloc(1, sizeof *m->positions);
    m->n_faces = 1;
    m->indices = calloc(1, sizeof(uint32_t));
}

static void append_material(mfs_scene *s, const char *name, const char *diffuse,
                            const char *specular, const char *reflection, const char *normal)
{
    s->materials = realloc(s->materials, sizeof *s->materials * (s->n_materials + 1));
    mfs_material *m = &s->materials[s->n_materials++];
    memset(m, 0, sizeof *m);
    m->name = mfs_strdup(name);
    m->textures[MFS_TEX_DIFFUSE] = mfs_strdup(diffuse);
    m->textures[MFS_TEX_SPECULAR] = mfs_strdup(specular);
    m->textures[MFS_TEX_REFLECTION] = mfs_strdup(reflection);
    m->textures[MFS_TEX_NORMAL] = mfs_strdup(normal);
}

/* The cube plus hidden meshes (skipped), a duplicate name (skipped), names
 * that collide with FGE's own keys, and one that needs sanitising. */
static mfs_scene *busy_scene(void)
{
    mfs_scene *s = fixture_cube();
    append_material(s, "paint", "../Textures/Cars/Red Paint.PNG", "C:\\art\\Spec.jpg", "*0",
                    "n.orm.al.tga");
    append_mesh(s, "Marker_x", 1);
    append_mesh(s, "COLLISIONconvex_a", 1);
    append_mesh(s, "collisioncomplex_b", 1);
    append_mesh(s, "NoRender_c", 1);
    append_mesh(s, "nocollide_d", 1);
    append_mesh(s, "Body", 1);
    append_mesh(s, "BODY", 0);
    append_mesh(s, "model", 0);
    append_mesh(s, "a=b", -1);
    append_mesh(s, "offset", 0);
    return s;
}

static void test_cube_default(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts("vehicles/car", 0);
    expect_text(s, &o, "model=vehicles/car\ncube=UNKNOWN\n");
    mfs_scene_free(s);
}

static void test_cube_textures(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts("vehicles/car", 1);
    /* "textures/cube.png": what follows the textures folder, no extension. */
    expect_text(s, &o, "model=vehicles/car\ncube=cube\n");
    mfs_scene_free(s);
}

static void test_busy_default(void **state)
{
    (void)state;
    mfs_scene *s = busy_scene();
    mfs_options o = opts("vehicles/car", 0);
    expect_text(s, &o,
                "model=vehicles/car\n"
                "cube=UNKNOWN\n"
                "nocollide_d=UNKNOWN\n"
                "Body=UNKNOWN\n"
                "model:::color=UNKNOWN\n"
                "a_b=UNKNOWN\n"
                "offset:::color=UNKNOWN\n");
    mfs_scene_free(s);
}

static void test_busy_textures(void **state)
{
    (void)state;
    mfs_scene *s = busy_scene();
    mfs_options o = opts("vehicles/car", 1);
    expect_text(s, &o,
                "model=vehicles/car\n"
                "cube=cube\n"
                "nocollide_d=cars/red paint\n"
                "nocollide_d:::specular=spec\n"
                "nocollide_d:::reflectivity=UNKNOWN\n"
                "nocollide_d:::normal=n.orm.al\n"
                "Body=cars/red paint\n"
                "Body:::specular=spec\n"
                "Body:::reflectivity=UNKNOWN\n"
                "Body:::normal=n.orm.al\n"
                "model:::color=cube\n"
                "offset:::color=cube\n");
    mfs_scene_free(s);
}

static void test_model_path_cleaned_or_left_out(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    mfs_options o = opts("\\Vehicles\\Car =x/", 0);
    expect_text(s, &o, "model=vehicles/car x\ncube=UNKNOWN\n");
    o = opts(NULL, 0);
    expect_text(s, &o, "cube=UNKNOWN\n");
    o = opts("===", 0); /* nothing left after cleaning */
    expect_text(s, &o, "cube=UNKNOWN\n");
    mfs_scene_free(s);
}

static void test_texture_name_forms(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"Wood.PNG", "wood"},
        {"C:\\Users\\Bob\\Wood Grain.jpg", "wood grain"},
        {"../textures/a/b/c.png", "a/b/c"},
        {"textures\\Stone.tga", "stone"},
        {"art/mytextures/x.png", "x"},          /* "mytextures" is not "textures" */
        {"textures/", "UNKNOWN"},               /* no file name at all */
        {".hidden", ".hidden"},                 /* a leading dot is not an extension */
        {"Tex=ture.png", "texture"},
        {"\xc3\xa9t\xc3\xa9.png", "t"},         /* non-ASCII dropped, as FGE does */
        {"*12", "UNKNOWN"},
        {"???.png", "UNKNOWN"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mfs_scene *s = fixture_cube();
        free(s->materials[0].textures[MFS_TEX_DIFFUSE]);
        s->materials[0].textures[MFS_TEX_DIFFUSE] = mfs_strdup(cases[i][0]);
        mfs_options o = opts("m", 1);
        char want[128];
        snprintf(want, sizeof want, "model=m\ncube=%s\n", cases[i][1]);
        expect_text(s, &o, want);
        mfs_scene_free(s);
    }
}

static void test_deterministic(void **state)
{
    (void)state;
    mfs_scene *s = busy_scene();
    mfs_options o = opts("vehicles/car", 1);
    char *a = write_fmi(s, &o);
    char *b = write_fmi(s, &o);
    assert_string_equal(a, b);
    free(a);
    free(b);
    mfs_scene_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cube_default),
        cmocka_unit_test(test_cube_textures),
        cmocka_unit_test(test_busy_default),
        cmocka_unit_test(test_busy_textures),
        cmocka_unit_test(test_model_path_cleaned_or_left_out),
        cmocka_unit_test(test_texture_name_forms),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Settings files (src/settings/, docs/settings.md): the syntax, every key's
 * values, the errors (file, line, key), precedence and the owner rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/settings.h"

static mfs_settings S;

static int parse(const char *text, mfs_err *err)
{
    return mfs_settings_parse("props/.meshfs", text, strlen(text), &S, err);
}

static void expect_error(const char *text, const char *msg)
{
    mfs_err err = {0};
    assert_int_equal(parse(text, &err), -1);
    assert_string_equal(err.msg, msg);
}

static void the_issue_example_parses(void **state)
{
    (void)state;
    mfs_err err = {0};
    const char *text = "scale = 0.01          # a factor\n"
                       "up = z                # x, y, z, -x, -y, -z\n"
                       "forward = -y\n"
                       "formats = dem:gmf     # the views shown\n"
                       "normals = compute 60  ; degrees\n"
                       "texture = skins/red.png\n"
                       "fmd_raw = true\n"
                       "\n"
                       "[clip walk]           # one sequence per clip\n"
                       "start = 31\n"
                       "end = 1.5s\n"
                       "loop = true\n";
    assert_int_equal(parse(text, &err), 0);
    assert_true(S.scale == 0.01);
    assert_int_equal(S.up.index, 2);
    assert_int_equal(S.up.sign, 1);
    assert_int_equal(S.forward.index, 1);
    assert_int_equal(S.forward.sign, -1);
    assert_int_equal(S.formats, (1u << MFS_FMT_DEM) | (1u << MFS_FMT_GMF));
    assert_int_equal(S.normals_compute, 1);
    assert_true(S.normals_angle == 60.0);
    assert_string_equal(S.texture, "skins/red.png");
    assert_int_equal(S.fmd_raw, 1);
    assert_int_equal(S.nclips, 1);
    assert_string_equal(S.clips[0].name, "walk");
    assert_true(S.clips[0].start.value == 31.0 && !S.clips[0].start.seconds);
    assert_true(S.clips[0].end.value == 1.5 && S.clips[0].end.seconds);
    assert_int_equal(S.clips[0].loop, 1);
    assert_int_equal(S.set, MFS_SET_SCALE | MFS_SET_UP | MFS_SET_FORWARD | MFS_SET_FORMATS | MFS_SET_NORMALS |
                                MFS_SET_TEXTURE | MFS_SET_FMD_RAW | MFS_SET_CLIPS);
    assert_string_equal(S.origin[__builtin_ctz(MFS_SET_TEXTURE)].file, "props/.meshfs");
    assert_int_equal(S.origin[__builtin_ctz(MFS_SET_TEXTURE)].line, 6);
    assert_int_equal(S.origin[__builtin_ctz(MFS_SET_CLIPS)].line, 10);
}

static void units_and_per_format_keys(void **state)
{
    (void)state;
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"mm", 0.001}, {"cm", 0.01}, {"m", 1.0}, {"in", 0.0254}, {"ft", 0.3048}};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        char text[64];
        snprintf(text, sizeof text, "unit = %s\n", units[i].unit);
        mfs_err err = {0};
        assert_int_equal(parse(text, &err), 0);
        assert_true(S.unit == units[i].scale);
        assert_true(S.scale == 1.0);
    }
    mfs_err err = {0};
    assert_int_equal(parse("fmi_textures = yes\nreverse_winding = on\nsource_frame = 1\n"
                           "vrt_layout = plain\nimporter = assimp\nnormals = keep\ntake = Take 001\n",
                           &err),
                     0);
    assert_int_equal(S.fmi_textures + S.reverse_winding + S.source_frame + S.vrt_plain, 4);
    assert_int_equal(S.importer, 1);
    assert_int_equal(S.normals_compute, 0);
    assert_string_equal(S.take, "Take 001");
    /* unit says what the model's numbers are in, scale multiplies: both may be given */
    assert_int_equal(parse("unit = in\nscale = 2\n", &err), 0);
    assert_true(S.unit == 0.0254 && S.scale == 2.0);
}

static void errors_name_file_line_and_key(void **state)
{
    (void)state;
    expect_error("up = y\nscle = 2\n", "props/.meshfs: line 2: key 'scle': unknown key (docs/settings.md lists them)");
    expect_error("up = y\nthis is not ini\n", "props/.meshfs: line 2: not 'key = value', '[clip NAME]' or a comment");
    expect_error("up = y\nup = z\n", "props/.meshfs: line 2: key 'up': given twice (or continued on an indented line)");
    expect_error("up = w\n", "props/.meshfs: line 1: key 'up': 'w' is not one of x, y, z, -x, -y, -z");
    expect_error("scale = -1\n", "props/.meshfs: line 1: key 'scale': -1 is outside 1e-06..1e+06");
    expect_error("scale = nan\n", "props/.meshfs: line 1: key 'scale': 'nan' is not a number");
    expect_error("unit = furlong\n", "props/.meshfs: line 1: key 'unit': 'furlong' is not one of mm, cm, m, in, ft");
    expect_error("fmd_raw = maybe\n", "props/.meshfs: line 1: key 'fmd_raw': 'maybe' is not true or false");
    expect_error("normals = compute\n",
                 "props/.meshfs: line 1: key 'normals': 'compute' needs an angle in degrees (compute 60)");
    expect_error("normals = compute 0\n",
                 "props/.meshfs: line 1: key 'normals': smoothing angle must be above 0 degrees");
    expect_error("formats = dem:obj\n", "props/.meshfs: line 1: key 'formats': unknown format 'obj' "
                 "(known: fmd,fmi,gmf,dem,vrt,tri,sph,tex,lgepkg,all)");
    expect_error("texture = ../../etc/shadow\n",
                 "props/.meshfs: line 1: key 'texture': '../../etc/shadow': a path may not hold '..' or an empty name");
    expect_error("texture = /etc/shadow\n", "props/.meshfs: line 1: key 'texture': '/etc/shadow': a path relative "
                                            "to the model's folder, with '/' between names");
    expect_error("take = \x01\n", "props/.meshfs: line 1: key 'take': a name is not printable UTF-8 text");
    expect_error("take = caf\xe9\n", "props/.meshfs: line 1: key 'take': a name is not printable UTF-8 text");
    expect_error("up =   # nothing\n", "props/.meshfs: line 1: key 'up': has no value");
    expect_error("[material]\ncolor = red\n",
                 "props/.meshfs: line 2: key 'color': is in a section other than [clip NAME]");
    expect_error("[clip walk]\nstart = 1\nend = 2\nspeed = 3\n",
                 "props/.meshfs: line 4: key 'speed': unknown key in a [clip] section (start, end, loop)");
    expect_error("[clip walk]\nstart = 1\n", "props/.meshfs: line 1: clip 'walk': needs both start and end");
    expect_error("[clip walk]\nstart = 10\nend = 5\n",
                 "props/.meshfs: line 1: clip 'walk': end (5) is not after start (10)");
    expect_error("[clip walk]\nstart = 1\nend = 2\n[clip walk]\nstart = 3\nend = 4\n",
                 "props/.meshfs: line 5: key 'start': its [clip] section's name is given twice");
    expect_error("up = y\n[clip idle]\n", "props/.meshfs: line 2: a section with no keys");
    expect_error("[clip walk]\nstart = soon\nend = 2\n",
                 "props/.meshfs: line 2: key 'start': 'soon' is not a frame (31) or seconds (1.2s) at or above 0");
    /* the first error in the file is the one said */
    expect_error("bad line\nscle = 1\n", "props/.meshfs: line 1: not 'key = value', '[clip NAME]' or a comment");
}

static void hostile_files_are_refused_cheaply(void **state)
{
    (void)state;
    mfs_err err = {0};
    assert_int_equal(mfs_settings_parse("x.meshfs", "up = y\0\1\2", 9, &S, &err), -1);
    assert_string_equal(err.msg, "x.meshfs: holds a NUL byte: not a settings file (binary?)");

    size_t big = MFS_SETTINGS_MAX_BYTES + 1;
    char *text = malloc(big);
    memset(text, '\n', big);
    assert_int_equal(mfs_settings_parse("x.meshfs", text, big, &S, &err), -1);
    assert_string_equal(err.msg, "x.meshfs: 65537 bytes, more than a settings file may hold (65536)");

    memset(text, 'a', 300);
    memcpy(text, "texture = ", 10);
    text[300] = '\n';
    assert_int_equal(mfs_settings_parse("x.meshfs", text, 301, &S, &err), -1);
    assert_string_equal(err.msg, "x.meshfs: line 1: longer than 199 bytes");

    /* 65 clips: one more than a model may have */
    size_t at = 0;
    for (int i = 0; i < 65; i++)
        at += (size_t)sprintf(text + at, "[clip c%d]\nstart = %d\nend = %d\n", i, i, i + 1);
    assert_int_equal(mfs_settings_parse("x.meshfs", text, at, &S, &err), -1);
    assert_string_equal(err.msg,
                        "x.meshfs: line 194: key 'start': more [clip] sections than the 64 a model may have");
    free(text);

    /* an empty file and a file of comments set nothing */
    assert_int_equal(mfs_settings_parse("x.meshfs", "", 0, &S, &err), 0);
    assert_int_equal(S.set, 0);
    assert_int_equal(mfs_settings_parse("x.meshfs", "# a\n; b\n\n", 8, &S, &err), 0);
    assert_int_equal(S.set, 0);
}

static void paths_run_from_src_to_the_sidecar(void **state)
{
    (void)state;
    char buf[512];
    const char *p[8];
    mfs_err err = {0};
    assert_int_equal(mfs_settings_paths("a/b/car.fbx", buf, sizeof buf, p, 8, &err), 4);
    assert_string_equal(p[0], ".meshfs");
    assert_string_equal(p[1], "a/.meshfs");
    assert_string_equal(p[2], "a/b/.meshfs");
    assert_string_equal(p[3], "a/b/car.fbx.meshfs");
    assert_int_equal(mfs_settings_paths("car.fbx", buf, sizeof buf, p, 8, &err), 2);
    assert_string_equal(p[0], ".meshfs");
    assert_string_equal(p[1], "car.fbx.meshfs");
    char longname[300];
    memset(longname, 'x', 251);
    strcpy(longname + 251, ".obj"); /* 255 bytes: its sidecar would be 262 */
    assert_int_equal(mfs_settings_paths(longname, buf, sizeof buf, p, 8, &err), 1);
    assert_string_equal(p[0], ".meshfs");
    assert_int_equal(mfs_settings_paths("a/b/c/d/e/f/g/h/x.obj", buf, sizeof buf, p, 8, &err), -1);
    assert_string_equal(err.msg, "a/b/c/d/e/f/g/h/x.obj: too deep for its settings files' paths");
}

/* A fake SRC: path -> text and owner. */
typedef struct fake_file {
    const char *path, *text;
    unsigned uid;
} fake_file;

static int fake_read(void *ctx, const char *rel, char **text, size_t *len, unsigned *uid, mfs_err *err)
{
    for (const fake_file *f = ctx; f->path; f++)
        if (!strcmp(f->path, rel)) {
            if (!f->text)
                return mfs_errf(err, "Permission denied");
            *text = strdup(f->text);
            *len = strlen(f->text);
            *uid = f->uid;
            return 0;
        }
    return 1;
}

static void nearer_files_override_farther_ones(void **state)
{
    (void)state;
    fake_file files[] = {
        {".meshfs", "scale = 0.01\nup = z\nformats = gmf\n[clip all]\nstart = 0\nend = 100\n", 1000},
        {"chars/.meshfs", "scale = 2\nformats = dem:gmf\n", 1000},
        {"chars/hero.fbx.meshfs", "unit = cm\n[clip walk]\nstart = 0\nend = 30\n[clip run]\nstart = 31\nend = 60\n", 0},
        {NULL, NULL, 0},
    };
    mfs_settings s;
    mfs_settings_init(&s);
    mfs_err err = {0};
    assert_int_equal(mfs_settings_load("chars/hero.fbx", 1000, fake_read, files, &s, &err), 0);
    assert_true(s.scale == 2.0); /* the folder's over the root's */
    assert_string_equal(s.origin[__builtin_ctz(MFS_SET_SCALE)].file, "chars/.meshfs");
    assert_true(s.unit == 0.01); /* the sidecar's */
    assert_string_equal(s.origin[__builtin_ctz(MFS_SET_UNIT)].file, "chars/hero.fbx.meshfs");
    assert_int_equal(s.up.index, 2); /* from the root, untouched by nearer files */
    assert_string_equal(s.origin[__builtin_ctz(MFS_SET_UP)].file, ".meshfs");
    assert_int_equal(s.formats, (1u << MFS_FMT_DEM) | (1u << MFS_FMT_GMF));
    assert_int_equal(s.nclips, 2); /* clips replaced as a whole */
    assert_string_equal(s.clips[0].name, "walk");
    assert_string_equal(s.clips[1].name, "run");

    char d[2048];
    mfs_settings_describe(&s, d, sizeof d);
    assert_string_equal(d, "scale = 2  (chars/.meshfs:1)\n"
                           "up = z  (.meshfs:2)\n"
                           "formats = gmf:dem  (chars/.meshfs:2)\n"
                           "[clip walk] start = 0, end = 30, loop = false  (chars/hero.fbx.meshfs:3)\n"
                           "[clip run] start = 31, end = 60, loop = false  (chars/hero.fbx.meshfs:3)\n"
                           "unit = 0.01 m  (chars/hero.fbx.meshfs:1)\n");

    /* a folder with no settings: defaults, nothing set */
    mfs_settings_init(&s);
    fake_file none[] = {{NULL, NULL, 0}};
    assert_int_equal(mfs_settings_load("props/crate.obj", 1000, fake_read, none, &s, &err), 0);
    assert_int_equal(s.set, 0);
    assert_true(s.scale == 1.0);
    char k[256];
    assert_int_equal(mfs_settings_key_text(&s, k, sizeof k), 0);
    assert_string_equal(k, "");
}

static void another_users_file_is_not_applied(void **state)
{
    (void)state;
    fake_file files[] = {
        {"shared/.meshfs", "texture = secret.png\nscale = 1000\n", 2000}, /* the attacker's */
        {"shared/crate.obj.meshfs", "up = z\n", 1000},
        {NULL, NULL, 0},
    };
    mfs_settings s;
    mfs_settings_init(&s);
    mfs_err err = {0};
    assert_int_equal(mfs_settings_load("shared/crate.obj", 1000, fake_read, files, &s, &err), -1);
    assert_int_equal(s.foreign_owner, 1);
    assert_string_equal(err.msg, "shared/.meshfs: owned by uid 2000, not by the model's owner (uid 1000) or root: "
                                 "not applied; its owner or root may chown it, or remove it");
    /* a malformed file of the model's owner fails the model, never defaults */
    fake_file bad[] = {{"crate.obj.meshfs", "scale = big\n", 1000}, {NULL, NULL, 0}};
    mfs_settings_init(&s);
    assert_int_equal(mfs_settings_load("crate.obj", 1000, fake_read, bad, &s, &err), -1);
    assert_int_equal(s.foreign_owner, 0);
    assert_string_equal(err.msg, "crate.obj.meshfs: line 1: key 'scale': 'big' is not a number");
    /* a file that exists and cannot be read fails the model too */
    fake_file unreadable[] = {{".meshfs", NULL, 1000}, {NULL, NULL, 0}};
    mfs_settings_init(&s);
    assert_int_equal(mfs_settings_load("crate.obj", 1000, fake_read, unreadable, &s, &err), -1);
    assert_string_equal(err.msg, ".meshfs: Permission denied");
}

static void up_and_forward_must_differ(void **state)
{
    (void)state;
    fake_file files[] = {{".meshfs", "up = y\n", 0}, {"a.obj.meshfs", "forward = -y\n", 0}, {NULL, NULL, 0}};
    mfs_settings s;
    mfs_settings_init(&s);
    mfs_err err = {0};
    assert_int_equal(mfs_settings_load("a.obj", 5, fake_read, files, &s, &err), -1);
    assert_string_equal(err.msg, "a.obj: settings: up (y, .meshfs:1) and forward (-y, a.obj.meshfs:1) are on one axis");
}

static void key_text_depends_on_values_not_on_files(void **state)
{
    (void)state;
    fake_file one[] = {{".meshfs", "unit = cm\nup = z\n", 0}, {NULL, NULL, 0}};
    fake_file two[] = {{"a/.meshfs", "up = z\nformats = gmf\n", 0}, {"a/m.obj.meshfs", "unit = cm\n", 0},
                       {NULL, NULL, 0}};
    mfs_settings s1, s2;
    mfs_settings_init(&s1);
    mfs_settings_init(&s2);
    mfs_err err = {0};
    assert_int_equal(mfs_settings_load("a/m.obj", 0, fake_read, one, &s1, &err), 0);
    assert_int_equal(mfs_settings_load("a/m.obj", 0, fake_read, two, &s2, &err), 0);
    char k1[256], k2[256];
    mfs_settings_key_text(&s1, k1, sizeof k1);
    mfs_settings_key_text(&s2, k2, sizeof k2);
    assert_string_equal(k1, "unit=0.01;up=+z;");
    assert_string_equal(k1, k2); /* formats= decides which views exist, not their bytes */

    /* names carry their length: a clip name cannot forge the next field */
    mfs_err e2 = {0};
    assert_int_equal(parse("[clip a;clip=1:b]\nstart = 0\nend = 1\n", &e2), 0);
    char k3[256];
    mfs_settings_key_text(&S, k3, sizeof k3);
    assert_string_equal(k3, "clip=10:a;clip=1:b:0:1:0;");
}

/* The text a formats mask is said in reads back as that mask, for every
 * mask (the reason "not shown: ... sets formats = LIST" and the settings'
 * description both use it). */
static void format_list_text_reads_back(void **state)
{
    (void)state;
    for (unsigned m = 1; m <= (MFS_FMT_ALL | MFS_FMT_LGEPKG_BIT); m++) {
        if (m & ~(MFS_FMT_ALL | MFS_FMT_LGEPKG_BIT))
            continue;
        char text[128];
        mfs_format_list_text(m, text, sizeof text);
        unsigned back = 0;
        mfs_err err = {0};
        assert_int_equal(mfs_format_parse_list(text, &back, &err), 0);
        assert_int_equal(back, m);
    }
    char text[128];
    mfs_format_list_text((1u << MFS_FMT_DEM) | (1u << MFS_FMT_GMF) | MFS_FMT_LGEPKG_BIT, text, sizeof text);
    assert_string_equal(text, "gmf:dem:lgepkg");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_issue_example_parses),
        cmocka_unit_test(format_list_text_reads_back),
        cmocka_unit_test(units_and_per_format_keys),
        cmocka_unit_test(errors_name_file_line_and_key),
        cmocka_unit_test(hostile_files_are_refused_cheaply),
        cmocka_unit_test(paths_run_from_src_to_the_sidecar),
        cmocka_unit_test(nearer_files_override_farther_ones),
        cmocka_unit_test(another_users_file_is_not_applied),
        cmocka_unit_test(up_and_forward_must_differ),
        cmocka_unit_test(key_text_depends_on_values_not_on_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The importers' last step (mfs_scene_finish, issue 34 items 4 and 5).
 *
 * Names: every name in every view is valid for its format.  A scene whose
 * every name is hostile (not UTF-8, control bytes, the text formats' own
 * separators, huge, empty) goes through the step and every writer, and
 * every view passes its own format's --check: no writer emits bytes its
 * own checker rejects.
 *
 * Orphans: a mesh no node places is left out of every view (as assimp's
 * exporters leave it), so a scene with one gives the very bytes of the
 * scene without it; when no mesh is placed, the root places them all.
 *
 * Durations: an animation whose keys run past its duration plays them.
 *
 * Bones: two of one name and inverse bind in one mesh are merged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "meshfs/formats.h"
#include "meshfs/inspect.h"
#include "meshfs/scene.h"
#include "meshfs/util.h"

static const char *const hostile[] = {
    "01 - Par d\xe9" "faut",          /* Latin-1, as an MD5 file from 3ds Max carries it */
    "\xc3",                           /* a UTF-8 sequence cut short */
    "\xe2\x82 x",
    "\xc0\xaf",                       /* overlong */
    "\xed\xa0\x80",                   /* a UTF-16 surrogate */
    "\xf4\x90\x80\x80",               /* past U+10FFFF */
    "\xef\xbb\xbf" "bom",             /* a BOM at the start */
    "a\nb",
    "line\r\nbreak",
    "key=value;other",
    "\t\x01\x1f\x7f",
    "",
    " spaced  name ",
    "\xff\xfe",
    "caf\xc3\xa9",                    /* already UTF-8: kept as it is */
};

static char *dupe(const char *s)
{
    char *d = strdup(s);
    assert_non_null(d);
    return d;
}

static char *long_name(void)
{
    size_t n = 5000;
    char *s = malloc(n + 2);
    assert_non_null(s);
    memset(s, 'n', n);
    s[n] = (char)0xe9;
    s[n + 1] = '\0';
    return s;
}

/* Every name of s set from the list, starting at k; a bone's name is that
 * of the node it moves, as importers give it. */
static void name_all(mfs_scene *s, size_t k)
{
    size_t nh = sizeof hostile / sizeof *hostile;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        free(s->nodes[i].name);
        s->nodes[i].name = i == 1 ? long_name() : dupe(hostile[(k + i) % nh]);
    }
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        free(s->meshes[i].name);
        s->meshes[i].name = dupe(hostile[(k + 3 + i) % nh]);
        for (uint32_t b = 0; b < s->meshes[i].n_bones; b++) {
            mfs_bone *bone = &s->meshes[i].bones[b];
            free(bone->name);
            bone->name = dupe(bone->node >= 0 ? s->nodes[bone->node].name : hostile[k % nh]);
        }
    }
    for (uint32_t i = 0; i < s->n_materials; i++) {
        free(s->materials[i].name);
        s->materials[i].name = dupe(hostile[(k + 5 + i) % nh]);
        free(s->materials[i].textures[MFS_TEX_DIFFUSE]);
        s->materials[i].textures[MFS_TEX_DIFFUSE] = dupe(hostile[(k + 6 + i) % nh]);
    }
    for (uint32_t i = 0; i < s->n_animations; i++) {
        free(s->animations[i].name);
        s->animations[i].name = dupe(hostile[(k + 7 + i) % nh]);
    }
}

typedef struct view {
    uint8_t *p;
    size_t n;
} view;

static view write_one(const mfs_scene *s, int f)
{
    mfs_options o;
    mfs_options_default(&o);
    o.fmi_textures = 1;
    mfs_sink sink;
    mfs_sink_init_mem(&sink);
    mfs_err err;
    mfs_err_clear(&err);
    int rc = mfs_format_get((mfs_format)f)->write(s, NULL, &o, &sink, &err);
    if (rc < 0)
        fail_msg("%s: %s", mfs_format_get((mfs_format)f)->name, err.msg);
    assert_int_equal(mfs_sink_finish(&sink), 0);
    view v;
    v.p = mfs_sink_take(&sink, &v.n);
    return v;
}

static void check_views(mfs_scene *s, const char *what)
{
    view vrt = write_one(s, MFS_FMT_VRT);
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        const char *name = mfs_format_get((mfs_format)f)->name;
        view v = f == MFS_FMT_VRT ? vrt : write_one(s, f);
        char file[32];
        snprintf(file, sizeof file, "m.%s", name);
        mfs_summary sum;
        mfs_err err;
        mfs_err_clear(&err);
        int rc = f == MFS_FMT_TRI || f == MFS_FMT_SPH
                     ? mfs_inspect_buffer_with_vrt(file, v.p, v.n, vrt.p, vrt.n, 1, &sum, &err)
                     : mfs_inspect_buffer(file, v.p, v.n, 1, &sum, &err);
        if (rc < 0 || sum.n_violations)
            fail_msg("%s, %s: %s (%u violations)", what, file, err.msg, sum.n_violations);
        if (f != MFS_FMT_VRT)
            free(v.p);
    }
    free(vrt.p);
}

static void test_hostile_names_make_valid_views(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof hostile / sizeof *hostile; k++) {
        mfs_scene *s = fixture_skinned_strip();
        name_all(s, k);
        mfs_err err;
        mfs_err_clear(&err);
        if (mfs_scene_finish(s, &err) < 0) /* as every importer ends */
            fail_msg("names from %zu: %s", k, err.msg);
        char what[32];
        snprintf(what, sizeof what, "names from %zu", k);
        check_views(s, what);
        mfs_scene_free(s);
    }
}

/* The rule's values: Latin-1 read as such, valid names kept byte for byte,
 * a bone still named as its node, and the note. */
static void test_latin1_names_read_as_latin1(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    assert_true(s->n_nodes >= 2 && s->n_materials >= 1 && s->meshes[0].n_bones >= 1);
    free(s->materials[0].name);
    s->materials[0].name = dupe("01 - Par d\xe9" "faut");
    free(s->meshes[0].name);
    s->meshes[0].name = dupe("caf\xc3\xa9");
    mfs_bone *b = &s->meshes[0].bones[0];
    free(s->nodes[b->node].name);
    s->nodes[b->node].name = dupe("\xef\xbb\xbf" "Bip01 \xc2\xa7"); /* UTF-8 with a BOM */
    free(b->name);
    b->name = dupe(s->nodes[b->node].name);
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_scene_names_utf8(s, &err), 3);
    assert_string_equal(s->materials[0].name, "01 - Par d\xc3\xa9" "faut");
    assert_string_equal(s->meshes[0].name, "caf\xc3\xa9");
    assert_string_equal(s->nodes[b->node].name, "Bip01 \xc2\xa7");
    assert_string_equal(b->name, s->nodes[b->node].name);
    assert_non_null(s->note);
    assert_string_equal(s->note, "3 names made UTF-8 (read as Latin-1, or a leading byte-order mark "
                                 "dropped; the first: 'Bip01 \xc2\xa7')");
    assert_true(mfs_utf8_valid("caf\xc3\xa9"));
    assert_false(mfs_utf8_valid("\xed\xa0\x80"));
    assert_false(mfs_utf8_valid("\xc0\xaf"));
    assert_false(mfs_utf8_valid("\xf4\x90\x80\x80"));
    assert_true(mfs_utf8_valid("\xf4\x8f\xbf\xbf"));
    mfs_scene_free(s);
    /* nothing to repair: no note, nothing changed */
    s = fixture_skinned_strip();
    assert_int_equal(mfs_scene_names_utf8(s, &err), 0);
    assert_null(s->note);
    mfs_scene_free(s);
}

/* Every view of s, written after the last step, as one byte string each. */
static void views_of(mfs_scene *s, view out[MFS_FMT_COUNT])
{
    mfs_err err;
    mfs_err_clear(&err);
    if (mfs_scene_finish(s, &err) < 0)
        fail_msg("%s", err.msg);
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        out[f] = write_one(s, f);
}

static void assert_same_views(view a[MFS_FMT_COUNT], view b[MFS_FMT_COUNT])
{
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (a[f].n != b[f].n || (a[f].n && memcmp(a[f].p, b[f].p, a[f].n) != 0))
            fail_msg("%s differs", mfs_format_get((mfs_format)f)->name);
        free(a[f].p);
        free(b[f].p);
    }
}

/* s with the mesh of another cube added at index at, placed by no node. */
static void add_orphan(mfs_scene *s, uint32_t at)
{
    mfs_scene *o = fixture_cube();
    mfs_mesh *m = realloc(s->meshes, sizeof *m * (s->n_meshes + 1));
    assert_non_null(m);
    s->meshes = m;
    memmove(&m[at + 1], &m[at], sizeof *m * (s->n_meshes - at));
    m[at] = o->meshes[0];
    free(m[at].name);
    m[at].name = dupe("subdivided copy");
    for (uint32_t k = 0; k < m[at].n_vertices; k++)
        m[at].positions[k][0] += 50; /* elsewhere: would move every bound */
    memset(&o->meshes[0], 0, sizeof o->meshes[0]);
    mfs_scene_free(o);
    s->n_meshes++;
    for (uint32_t i = 0; i < s->n_nodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].n_meshes; k++)
            if (s->nodes[i].meshes[k] >= at)
                s->nodes[i].meshes[k]++;
}

static void test_orphan_meshes_left_out(void **state)
{
    (void)state;
    for (uint32_t at = 0; at < 2; at++) {
        view plain[MFS_FMT_COUNT], with[MFS_FMT_COUNT];
        mfs_scene *a = fixture_cube();
        views_of(a, plain);
        mfs_scene_free(a);
        mfs_scene *b = fixture_cube();
        add_orphan(b, at);
        assert_int_equal(b->n_meshes, 2);
        views_of(b, with);
        assert_int_equal(b->n_meshes, 1);
        assert_int_equal(b->nodes[1].meshes[0], 0);
        assert_string_equal(b->note, "1 mesh that no node places left out, as assimp's exporters "
                                     "leave them (the first: 'subdivided copy')");
        mfs_scene_free(b);
        assert_same_views(plain, with);
    }
}

static void test_no_mesh_placed_root_places_all(void **state)
{
    (void)state;
    mfs_scene *s = fixture_cube();
    add_orphan(s, 1);
    free(s->nodes[1].meshes); /* the cube's node places nothing now */
    s->nodes[1].meshes = NULL;
    s->nodes[1].n_meshes = 0;
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_scene_place_orphans(s, &err), 2);
    assert_int_equal(s->n_meshes, 2);
    assert_int_equal(s->nodes[0].n_meshes, 2);
    assert_int_equal(s->nodes[0].meshes[0], 0);
    assert_int_equal(s->nodes[0].meshes[1], 1);
    assert_string_equal(s->note, "no node places the model's 2 meshes: placed at the root");
    assert_int_equal(mfs_scene_place_orphans(s, &err), 0); /* placed now: nothing to do */
    check_views(s, "all at the root");
    mfs_scene_free(s);
}

/* Keys past an animation's duration (a B3D exporter's last frame): the
 * duration becomes the last key's time, said in the note; an animation
 * whose keys fit keeps its duration and says nothing. */
static void test_durations_extended_to_the_keys(void **state)
{
    (void)state;
    mfs_scene *s = fixture_skinned_strip();
    assert_true(s->n_animations >= 1 && s->animations[0].n_channels >= 1);
    mfs_err err;
    mfs_err_clear(&err);
    double d = s->animations[0].duration;
    assert_int_equal(mfs_scene_extend_durations(s, &err), 0);
    assert_true(s->animations[0].duration == d);
    assert_null(s->note);
    mfs_channel *ch = &s->animations[0].channels[0];
    assert_true(ch->n_rot >= 1);
    ch->rot[ch->n_rot - 1].time = d + 1; /* one tick past, the last key still last */
    free(s->animations[0].name);
    s->animations[0].name = dupe("walk");
    assert_int_equal(mfs_scene_extend_durations(s, &err), 1);
    assert_true(s->animations[0].duration == d + 1);
    char want[200];
    snprintf(want, sizeof want,
             "animation 'walk': keys run to %g ticks, past its duration of %g: the duration extended", d + 1, d);
    assert_string_equal(s->note, want);
    mfs_scene_free(s);
}

/* The strip with bone0's weights split over two bones of its name (a .x
 * file's two SkinWeights blocks), the second after bone1; offset_moved
 * gives the second another inverse bind. */
static mfs_scene *split_bone0(int offset_moved)
{
    mfs_scene *s = fixture_skinned_strip();
    mfs_mesh *m = &s->meshes[0];
    mfs_bone *b = realloc(m->bones, sizeof *b * 3);
    assert_non_null(b);
    m->bones = b;
    mfs_bone *second = &b[2];
    *second = b[0];
    second->name = dupe("bone0");
    second->weights = calloc(2, sizeof(mfs_weight));
    assert_non_null(second->weights);
    second->weights[0] = (mfs_weight){2, 0.25f};
    second->weights[1] = (mfs_weight){3, 0.5f};
    second->n_weights = 2;
    if (offset_moved)
        second->offset.m[13] = -2;
    b[0].weights[2].weight = 0.25f; /* v2: 0.25 in each */
    b[0].n_weights = 3;             /* v3: all in the second */
    m->n_bones = 3;
    return s;
}

/* Bones of one name and inverse bind in one mesh are one bone: the views
 * are those of the strip whose bone0 was never split. */
static void test_bones_of_one_name_merged(void **state)
{
    (void)state;
    view plain[MFS_FMT_COUNT], split[MFS_FMT_COUNT];
    mfs_scene *a = fixture_skinned_strip();
    views_of(a, plain);
    mfs_scene_free(a);
    mfs_scene *s = split_bone0(0);
    views_of(s, split);
    assert_int_equal(s->meshes[0].n_bones, 2);
    assert_int_equal(s->meshes[0].bones[0].n_weights, 4);
    assert_true(s->meshes[0].bones[0].weights[2].weight == 0.5f);
    assert_string_equal(s->note, "mesh 'strip': 2 bones named 'bone0' merged into one");
    mfs_scene_free(s);
    assert_same_views(plain, split);

    /* another inverse bind: two bones after all, left as they are */
    s = split_bone0(1);
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_scene_finish(s, &err), 0);
    assert_int_equal(s->meshes[0].n_bones, 3);
    assert_null(s->note);
    mfs_scene_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_names_make_valid_views),
        cmocka_unit_test(test_latin1_names_read_as_latin1),
        cmocka_unit_test(test_orphan_meshes_left_out),
        cmocka_unit_test(test_no_mesh_placed_root_places_all),
        cmocka_unit_test(test_durations_extended_to_the_keys),
        cmocka_unit_test(test_bones_of_one_name_merged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

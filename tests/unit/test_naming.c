/* The naming rule (include/meshfs/rules.h, docs/naming.md) as a table:
 * a folder's entries -> which model each view base stands for, which
 * entries are not shown, and what was reported. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "meshfs/formats.h"
#include "meshfs/rules.h"

/* entries: space-separated names, a trailing '*' marks a model, then
 * "@uid" its owner ("@?": cannot be told; none: uid 0).
 * want: "model=base" for every model with views, in byte order of base;
 * then "!name" for every entry not shown (byte order); then "~name" for
 * every hidden name (an owners' collision); then one "KIND:name" per note,
 * in the plan's order. */
typedef struct row {
    const char *entries;
    unsigned flags;
    const char *want;
} row;

static const row table[] = {
    /* the plain case */
    {"car.fbx* readme.txt", 0, "car.fbx=car"},
    /* issue 9 §7: a.obj is long because of a.ply; a.obj.stl's short name
     * "a.obj" is then a.obj's long one, so it goes long as well */
    {"a.obj* a.ply* a.obj.stl*", 0,
     "a.obj=a.obj a.obj.stl=a.obj.stl a.ply=a.ply LONG:a.obj LONG:a.obj.stl LONG:a.ply"},
    /* without the clash a.obj.stl keeps its short name, beside a's */
    {"a.obj* a.obj.stl*", 0, "a.obj=a a.obj.stl=a.obj"},
    /* a real file named like a view wins; the model moves away from it */
    {"a.fmd a.obj*", 0, "a.obj=a.obj LONG:a.obj"},
    {"t.obj* t.tex", 0, "t.obj=t.obj LONG:t.obj"},
    /* ... whatever kind of entry it is */
    {"a.gmf a.obj*", 0, "a.obj=a.obj LONG:a.obj"},
    /* a real file's name is compared byte for byte */
    {"a.FMD a.obj*", 0, "a.obj=a"},
    /* a real file named like the long name too: no views at all */
    {"a.obj* a.obj.fmd a.ply*", 0, "a.ply=a.ply NO_VIEWS:a.obj LONG:a.ply"},
    {"a.fmd a.obj* a.obj.sph", 0, "NO_VIEWS:a.obj"},
    /* names without a stem have only one form */
    {".obj* x.obj*", 0, ".obj=.obj x.obj=x"},
    /* no model, no views; entries that are not models are never renamed */
    {"notes.txt dir", 0, ""},
    /* lowercase: every shown name lowercase, the first in byte order wins */
    {"Crate.OBJ* crate.obj* Tex", MFS_NAMES_LOWERCASE,
     "Crate.OBJ=crate !crate.obj CASE:crate.obj"},
    {"Props props Tex", MFS_NAMES_LOWERCASE, "!props CASE:props"},
    {"x.OBJ* x.obj*", 0, "x.OBJ=x.OBJ x.obj=x.obj LONG:x.OBJ LONG:x.obj"},
    {"x.OBJ* x.obj*", MFS_NAMES_LOWERCASE, "x.OBJ=x !x.obj CASE:x.obj"},
    /* lowercase: real files are compared by their shown names */
    {"A.obj* a.FMD", MFS_NAMES_LOWERCASE, "A.obj=a.obj LONG:A.obj"},
    {"Wood.PNG Car.FBX* car.PLY*", MFS_NAMES_LOWERCASE,
     "Car.FBX=car.fbx car.PLY=car.ply LONG:Car.FBX LONG:car.PLY"},
    /* built-in names, compared case-insensitively on the view base */
    {"cube.obj*", 0, "cube.obj=cube BUILTIN:cube.obj"},
    {"Sphere.fbx* CLEAR.3ds* cylinder.ply*", 0,
     "CLEAR.3ds=CLEAR Sphere.fbx=Sphere cylinder.ply=cylinder BUILTIN:CLEAR.3ds BUILTIN:Sphere.fbx "
     "BUILTIN:cylinder.ply"},
    {"cube.obj* cube.ply*", 0, "cube.obj=cube.obj cube.ply=cube.ply LONG:cube.obj LONG:cube.ply"},
    {"cubes.obj*", 0, "cubes.obj=cubes"},
    /* lowercase, different owners: neither is shown, nor are the views */
    {"ship.obj*@1 Ship.obj*@2", MFS_NAMES_LOWERCASE,
     "!Ship.obj !ship.obj ~ship.obj OWNERS:Ship.obj OWNERS:ship.obj"},
    /* ... one owner: the first in byte order, as before */
    {"ship.obj*@1 Ship.obj*@1", MFS_NAMES_LOWERCASE, "Ship.obj=ship !ship.obj CASE:ship.obj"},
    /* ... folders, and entries whose owner cannot be told */
    {"props@1 Props@2 Tex", MFS_NAMES_LOWERCASE, "!Props !props ~props OWNERS:Props OWNERS:props"},
    {"a.txt@? A.txt@?", MFS_NAMES_LOWERCASE, "!A.txt !a.txt ~a.txt OWNERS:A.txt OWNERS:a.txt"},
    /* ... two of one owner and one of another: none */
    {"AB@1 Ab@1 ab@2", MFS_NAMES_LOWERCASE, "!AB !Ab !ab ~ab OWNERS:AB OWNERS:Ab OWNERS:ab"},
    /* ... the others are named as if only the first were there: ship.ply
     * does not take the views 'ship.*' the hidden models would have had */
    {"ship.obj*@1 Ship.obj*@2 ship.ply*@2", MFS_NAMES_LOWERCASE,
     "ship.ply=ship.ply !Ship.obj !ship.obj ~ship.obj OWNERS:Ship.obj OWNERS:ship.obj LONG:ship.ply"},
    /* ... nor does a model take a hidden real file's name for its view */
    {"Ship.GMF@2 ship.gmf@1 ship.obj*@1", MFS_NAMES_LOWERCASE,
     "ship.obj=ship.obj !Ship.GMF !ship.gmf ~ship.gmf OWNERS:Ship.GMF OWNERS:ship.gmf LONG:ship.obj"},
    /* an entry that is another owner's view name only by folding: the
     * name is neither's (the model moves away from it, as from a file) */
    {"Ship.GMF@2 ship.obj*@1", MFS_NAMES_LOWERCASE,
     "ship.obj=ship.obj !Ship.GMF ~ship.gmf OWNERS:Ship.GMF LONG:ship.obj"},
    {"ship.gmf@1 Ship.obj*@2", MFS_NAMES_LOWERCASE,
     "Ship.obj=ship.obj !ship.gmf ~ship.gmf OWNERS:ship.gmf LONG:Ship.obj"},
    {"SHIP.OBJ.TEX@1 ship.obj*@2 ship.ply*@2", MFS_NAMES_LOWERCASE,
     "ship.ply=ship.ply !SHIP.OBJ.TEX ~ship.obj.tex OWNERS:SHIP.OBJ.TEX "
     "NO_VIEWS:ship.obj LONG:ship.ply"},
    /* ... of one owner, or named so without folding: a real file wins */
    {"Ship.GMF@1 ship.obj*@1", MFS_NAMES_LOWERCASE, "ship.obj=ship.obj LONG:ship.obj"},
    {"ship.gmf@2 ship.obj*@1", MFS_NAMES_LOWERCASE, "ship.obj=ship.obj LONG:ship.obj"},
    /* owners play no part without lowercase */
    {"ship.obj*@1 Ship.obj*@2", 0, "Ship.obj=Ship ship.obj=ship"},
};

/* Owners as the table gives them: uids parallel to the entries. */
typedef struct owners {
    long long uid[16];
    int asked;
} owners;

static int owner_of(void *ctx, size_t entry, unsigned long *uid)
{
    owners *o = ctx;
    o->asked++;
    if (o->uid[entry] < 0)
        return -1;
    *uid = (unsigned long)o->uid[entry];
    return 0;
}

static const char *kind_name(mfs_name_note_kind k)
{
    switch (k) {
    case MFS_NOTE_CASE: return "CASE";
    case MFS_NOTE_LONG: return "LONG";
    case MFS_NOTE_NO_VIEWS: return "NO_VIEWS";
    case MFS_NOTE_BUILTIN: return "BUILTIN";
    case MFS_NOTE_OWNERS: return "OWNERS";
    }
    return "?";
}

static void cat(char *buf, size_t n, const char *fmt, ...)
{
    size_t l = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + l, n - l, fmt, ap);
    va_end(ap);
}

/* Splits entries; names point into *store (caller frees). */
static size_t parse(const char *entries, mfs_name_entry *e, owners *o, char **store)
{
    *store = strdup(entries);
    size_t n = 0;
    memset(o, 0, sizeof *o);
    for (char *save, *t = strtok_r(*store, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char *at = strchr(t, '@');
        if (at) {
            o->uid[n] = at[1] == '?' ? -1 : atoll(at + 1);
            *at = '\0';
        }
        size_t l = strlen(t);
        e[n].is_model = t[l - 1] == '*';
        if (e[n].is_model)
            t[l - 1] = '\0';
        e[n++].name = t;
    }
    return n;
}

static void describe(const mfs_names *p, const mfs_name_entry *e, size_t n, char *out, size_t sz)
{
    out[0] = '\0';
    for (size_t i = 0; i < p->nmodels; i++)
        cat(out, sz, "%s%s=%s", out[0] ? " " : "", p->models[i].model, p->models[i].base);
    const char *last = "";
    for (;;) { /* entries not shown, in byte order */
        const char *next = NULL;
        for (size_t i = 0; i < n; i++)
            if (!p->shown[i] && strcmp(e[i].name, last) > 0 && (!next || strcmp(e[i].name, next) < 0))
                next = e[i].name;
        if (!next)
            break;
        cat(out, sz, "%s!%s", out[0] ? " " : "", next);
        last = next;
    }
    for (size_t i = 0; i < p->nhidden; i++)
        cat(out, sz, "%s~%s", out[0] ? " " : "", p->hidden[i]);
    for (size_t i = 0; i < p->nnotes; i++)
        cat(out, sz, "%s%s:%s", out[0] ? " " : "", kind_name(p->notes[i].kind), e[p->notes[i].entry].name);
}

/* What the rule promises whatever the folder: a view name stands for one
 * model, never for a real entry; every model is accounted for. */
static void check_promises(const mfs_names *p, const mfs_name_entry *e, size_t n)
{
    for (size_t i = 0; i < p->nmodels; i++) {
        assert_true(e[p->models[i].entry].is_model);
        assert_ptr_equal(p->models[i].model, e[p->models[i].entry].name);
        if (i)
            assert_true(strcmp(p->models[i - 1].base, p->models[i].base) < 0);
        assert_ptr_equal(mfs_names_find_base(p, p->models[i].base), &p->models[i]);
        for (int f = 0; f < MFS_FMT_COUNT; f++) {
            char view[512];
            snprintf(view, sizeof view, "%s.%s", p->models[i].base, mfs_format_get((mfs_format)f)->name);
            for (size_t k = 0; k < n; k++)
                if (p->shown[k])
                    assert_string_not_equal(view, p->shown[k]);
            for (size_t k = 0; k < p->nhidden; k++)
                assert_string_not_equal(view, p->hidden[k]);
        }
    }
    /* a hidden name is shown for no entry */
    for (size_t h = 0; h < p->nhidden; h++)
        for (size_t k = 0; k < n; k++)
            if (p->shown[k])
                assert_string_not_equal(p->hidden[h], p->shown[k]);
    for (size_t k = 0; k < n; k++) {
        if (!e[k].is_model)
            continue;
        int has_views = 0, reported = 0;
        for (size_t i = 0; i < p->nmodels; i++)
            has_views |= p->models[i].entry == k;
        for (size_t i = 0; i < p->nnotes; i++)
            reported |= p->notes[i].entry == k &&
                        (p->notes[i].kind == MFS_NOTE_CASE || p->notes[i].kind == MFS_NOTE_NO_VIEWS ||
                         p->notes[i].kind == MFS_NOTE_OWNERS);
        assert_true(has_views != reported); /* views, or a reason why not */
    }
}

static void test_table(void **state)
{
    for (size_t t = 0; t < sizeof table / sizeof *table; t++) {
        mfs_name_entry e[16];
        owners o, ro;
        char *store;
        size_t n = parse(table[t].entries, e, &o, &store);
        mfs_names p;
        assert_int_equal(mfs_names_plan(e, n, table[t].flags, owner_of, &o, &p), 0);
        char got[1024];
        describe(&p, e, n, got, sizeof got);
        if (strcmp(got, table[t].want))
            fail_msg("folder \"%s\" flags %u:\n  got  \"%s\"\n  want \"%s\"", table[t].entries,
                     table[t].flags, got, table[t].want);
        check_promises(&p, e, n);

        /* the same folder in reverse order gives the same answer */
        mfs_name_entry r[16];
        memset(&ro, 0, sizeof ro);
        for (size_t i = 0; i < n; i++) {
            r[i] = e[n - 1 - i];
            ro.uid[i] = o.uid[n - 1 - i];
        }
        mfs_names q;
        assert_int_equal(mfs_names_plan(r, n, table[t].flags, owner_of, &ro, &q), 0);
        char again[1024];
        describe(&q, r, n, again, sizeof again);
        assert_string_equal(again, got);
        mfs_names_free(&q);
        mfs_names_free(&p);
        free(store);
    }
}

static void test_shown_names(void **state)
{
    mfs_name_entry e[] = {{"Props", 0}, {"props", 0}, {"Tex", 0}, {"Crate.OBJ", 1}, {"\xc3\x84.obj", 1}};
    mfs_names p;
    assert_int_equal(mfs_names_plan(e, 5, MFS_NAMES_LOWERCASE, NULL, NULL, &p), 0);
    assert_string_equal(p.shown[0], "props");
    assert_null(p.shown[1]);
    assert_string_equal(p.shown[2], "tex");
    assert_string_equal(p.shown[3], "crate.obj");
    assert_string_equal(p.shown[4], "\xc3\x84.obj"); /* ASCII only, as FGE */
    assert_int_equal(p.nnotes, 1);
    assert_string_equal(p.notes[0].text, "'props' is not shown: 'Props' is shown as 'props' (byte order wins)");
    mfs_names_free(&p);
    /* without the flag, names are the real ones */
    assert_int_equal(mfs_names_plan(e, 5, 0, NULL, NULL, &p), 0);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(p.shown[i], e[i].name);
    assert_int_equal(p.nnotes, 0);
    mfs_names_free(&p);
}

static void test_note_texts(void **state)
{
    mfs_name_entry e[] = {{"a.obj", 1}, {"a.ply", 1}, {"a.obj.stl", 1}, {"b.obj", 1}, {"b.obj.fmd", 0},
                          {"b.fmd", 0}};
    mfs_names p;
    assert_int_equal(mfs_names_plan(e, 6, 0, NULL, NULL, &p), 0);
    char all[2048] = "";
    for (size_t i = 0; i < p.nnotes; i++)
        cat(all, sizeof all, "%s\n", p.notes[i].text);
    assert_string_equal(all,
                        "views of 'a.obj' are named 'a.obj.<fmt>', not 'a.<fmt>': 'a' is also the view base "
                        "of 'a.ply'\n"
                        "views of 'a.obj.stl' are named 'a.obj.stl.<fmt>', not 'a.obj.<fmt>': 'a.obj' is also "
                        "the view base of 'a.obj'\n"
                        "views of 'a.ply' are named 'a.ply.<fmt>', not 'a.<fmt>': 'a' is also the view base "
                        "of 'a.obj'\n"
                        "'b.obj' gets no views: 'b.obj.fmd' is a real file (a real file always wins)\n");
    mfs_names_free(&p);
}

/* The owners' note names every entry of the collision and its owner, the
 * same text on each; owners are asked of those entries only. */
static void test_owner_notes(void **state)
{
    mfs_name_entry e[] = {{"ship.obj", 1}, {"crate.obj", 1}, {"Ship.obj", 1}, {"Tex", 0}, {"SHIP.obj", 0}};
    owners o = {{1001, 1001, 1002, 1001, -1}, 0};
    mfs_names p;
    assert_int_equal(mfs_names_plan(e, 5, MFS_NAMES_LOWERCASE, owner_of, &o, &p), 0);
    assert_int_equal(o.asked, 3);
    assert_int_equal(p.nnotes, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(p.notes[i].kind, MFS_NOTE_OWNERS);
        assert_string_equal(p.notes[i].text,
                            "'SHIP.obj' (owner unknown), 'Ship.obj' (uid 1002) and 'ship.obj' (uid 1001) "
                            "are not shown: each is 'ship.obj' in lowercase and their owners differ");
    }
    assert_int_equal(p.nmodels, 1);
    assert_string_equal(p.models[0].base, "crate");
    assert_int_equal(p.nhidden, 1);
    assert_string_equal(p.hidden[0], "ship.obj");
    mfs_names_free(&p);
    /* no collision: nobody is asked */
    o.asked = 0;
    assert_int_equal(mfs_names_plan(e, 4, MFS_NAMES_LOWERCASE, owner_of, &o, &p), 0);
    assert_int_equal(o.asked, 2);
    mfs_names_free(&p);
    assert_int_equal(mfs_names_plan(e + 1, 1, MFS_NAMES_LOWERCASE, owner_of, &o, &p), 0);
    assert_int_equal(o.asked, 2);
    mfs_names_free(&p);
    /* a file that is another owner's view name by folding */
    mfs_name_entry v[] = {{"ship.obj", 1}, {"Ship.GMF", 0}, {"crate.obj", 1}, {"crate.txt", 0}};
    owners vo = {{1001, 1002, 1001, 1002}, 0};
    assert_int_equal(mfs_names_plan(v, 4, MFS_NAMES_LOWERCASE, owner_of, &vo, &p), 0);
    assert_int_equal(vo.asked, 2); /* Ship.GMF and ship.obj only */
    assert_int_equal(p.nnotes, 2);
    assert_int_equal(p.notes[0].kind, MFS_NOTE_OWNERS);
    assert_string_equal(p.notes[0].text, "'Ship.GMF' (uid 1002) is not shown: it is 'ship.gmf' in lowercase, "
                                         "a view name of 'ship.obj' (uid 1001), and their owners differ");
    assert_int_equal(p.notes[1].kind, MFS_NOTE_LONG);
    assert_int_equal(p.nhidden, 1);
    assert_string_equal(p.hidden[0], "ship.gmf");
    mfs_names_free(&p);
}

static void test_builtin(void **state)
{
    char buf[256];
    assert_true(mfs_name_is_builtin("cube"));
    assert_true(mfs_name_is_builtin("CyLiNdEr"));
    assert_true(mfs_name_is_builtin("sphere"));
    assert_true(mfs_name_is_builtin("clear"));
    assert_false(mfs_name_is_builtin("cube.obj"));
    assert_false(mfs_name_is_builtin("cubes"));
    assert_false(mfs_name_is_builtin(""));
    assert_int_equal(mfs_name_warning("crate", buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    int len = mfs_name_warning("Cube", buf, sizeof buf);
    assert_int_equal(len, (int)strlen(buf));
    assert_non_null(strstr(buf, "'Cube' is an FGE built-in model name"));
}

static void test_lower(void **state)
{
    char s[] = "Props/Crate.OBJ\xc3\x84";
    assert_true(mfs_name_has_upper(s));
    assert_string_equal(mfs_name_lower(s), "props/crate.obj\xc3\x84");
    assert_false(mfs_name_has_upper(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),       cmocka_unit_test(test_shown_names),
        cmocka_unit_test(test_note_texts),  cmocka_unit_test(test_builtin),
        cmocka_unit_test(test_lower),       cmocka_unit_test(test_owner_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

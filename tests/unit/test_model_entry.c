/* Model entries (docs/cache.md, "Model entries"): a model's manifest with
 * its small views embedded, what a later run keeps, damage, and the kind-3
 * manifests of an older meshfs.  Every test runs in its own directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "meshfs/cache.h"
#include "meshfs/util.h"
#include "../../src/cache/cache_int.h" /* the kind-3 writer of an older meshfs */

typedef struct fx {
    char base[256];
    char dir[300];
    mfs_cache *c;
    mfs_dep dep;
    mfs_cache_key mk;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || fixture_tempdir(f->base, sizeof f->base, "test_model_entry") < 0)
        return -1;
    snprintf(f->dir, sizeof f->dir, "%s/cache", f->base);
    mfs_cache_config cfg = {.dir = f->dir};
    mfs_err err;
    if (mfs_cache_open(&cfg, &f->c, &err) < 0)
        return -1;
    f->dep = (mfs_dep){.path = "car.obj", .size = 123};
    memset(f->dep.hash, 0xab, 16);
    mfs_cache_manifest_key("car.obj", 123, f->dep.hash, "", "v1", &f->mk, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    mfs_cache_close(f->c);
    fixture_rmtree(f->base);
    free(f);
    return 0;
}

static mfs_cache_key vkey(const mfs_dep *d, const char *format)
{
    mfs_cache_key k;
    mfs_cache_view_key(d, 1, format, "", "v1", &k, NULL);
    return k;
}

/* A view to store: embedded when bytes is given. */
static mfs_cache_view view(const mfs_dep *d, const char *format, const char *bytes)
{
    return (mfs_cache_view){.format = (char *)format, .key = vkey(d, format),
                            .bytes = bytes, .length = bytes ? strlen(bytes) : 0};
}

/* The bytes a hit serves, NUL-terminated (the caller frees). */
static char *hit_bytes(const mfs_cache_hit *h)
{
    char *s = calloc(1, h->length + 1);
    assert_non_null(s);
    assert_int_equal(pread(h->fd, s, h->length, (off_t)h->offset), (ssize_t)h->length);
    return s;
}

static void assert_serves(fx *f, const char *format, const char *want)
{
    mfs_cache_key k = vkey(&f->dep, format);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup_in(f->c, &f->mk, &k, &h, NULL), 1);
    char *got = hit_bytes(&h);
    assert_string_equal(got, want);
    free(got);
    mfs_cache_hit_release(&h);
}

static int count_files(const fx *f, const char *suffix)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "find '%s/v2' -type f -name '*%s' | wc -l", f->dir, suffix);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* Small views live in the model's one file; a view stored on its own stays
 * its own entry, and the entry names it without bytes. */
static void test_embedded_views_served_from_the_model_entry(void **state)
{
    fx *f = *state;
    mfs_cache_view v[3] = {view(&f->dep, "fmd", "FMD bytes"), view(&f->dep, "gmf", "G"),
                           view(&f->dep, "dem", NULL)};
    assert_int_equal(mfs_cache_store(f->c, &v[2].key, "a large view", 12, NULL, NULL), 0);
    mfs_cache_manifest m = {&f->dep, 1, v, 3, 0};
    mfs_cache_hit entry;
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, &entry, NULL), 0);
    /* the offsets given back are where the bytes are in the file */
    assert_true(v[0].embedded && v[1].embedded && !v[2].embedded);
    assert_true(entry.fd >= 0);
    mfs_cache_hit h0 = {.fd = entry.fd, .offset = v[0].offset, .length = v[0].length};
    char *b0 = hit_bytes(&h0);
    assert_string_equal(b0, "FMD bytes");
    free(b0);
    mfs_cache_hit_release(&entry);
    assert_int_equal(count_files(f, ".m"), 1);
    assert_int_equal(count_files(f, ".e"), 1);

    mfs_cache_manifest got;
    assert_int_equal(mfs_cache_manifest_load(f->c, &f->mk, &got, NULL), 1);
    assert_int_equal(got.nviews, 3);
    assert_true(got.views[0].embedded && got.views[0].length == 9);
    assert_true(got.views[1].embedded && got.views[1].length == 1);
    assert_false(got.views[2].embedded);
    mfs_cache_manifest_free(&got);

    assert_serves(f, "fmd", "FMD bytes");
    assert_serves(f, "gmf", "G");
    mfs_cache_key kd = vkey(&f->dep, "dem");
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup_in(f->c, &f->mk, &kd, &h, NULL), 0); /* not embedded */
    assert_int_equal(mfs_cache_lookup(f->c, &kd, &h, NULL), 1);
    assert_int_equal(h.length, 12);
    mfs_cache_hit_release(&h);
    /* a peek reads without a descriptor and without counting a lookup */
    mfs_cache_stats before, after;
    mfs_cache_get_stats(f->c, &before);
    mfs_cache_key kg = vkey(&f->dep, "gmf");
    assert_int_equal(mfs_cache_peek_in(f->c, &f->mk, &kg, &h, NULL), 1);
    assert_int_equal(h.fd, -1);
    assert_int_equal(h.length, 1);
    mfs_cache_get_stats(f->c, &after);
    assert_int_equal(after.hits, before.hits);
    /* nothing under another model's key */
    mfs_cache_key other;
    mfs_cache_manifest_key("bus.obj", 123, f->dep.hash, "", "v1", &other, NULL);
    assert_int_equal(mfs_cache_lookup_in(f->c, &other, &kg, &h, NULL), 0);
}

/* A run that made only some views keeps the others the entry held for the
 * same inputs; other inputs start afresh. */
static void test_a_later_run_keeps_the_other_views(void **state)
{
    fx *f = *state;
    mfs_cache_view a[2] = {view(&f->dep, "fmd", "one"), view(&f->dep, "gmf", "two")};
    mfs_cache_manifest m = {&f->dep, 1, a, 2, 0};
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, NULL, NULL), 0);
    mfs_cache_view b[2] = {view(&f->dep, "fmi", "three"), view(&f->dep, "gmf", "TWO")};
    m = (mfs_cache_manifest){&f->dep, 1, b, 2, 0};
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, NULL, NULL), 0);
    assert_serves(f, "fmd", "one");
    assert_serves(f, "fmi", "three");
    assert_serves(f, "gmf", "TWO"); /* the newer run's bytes for a key it made */
    mfs_cache_manifest got;
    assert_int_equal(mfs_cache_manifest_load(f->c, &f->mk, &got, NULL), 1);
    assert_int_equal(got.nviews, 3);
    mfs_cache_manifest_free(&got);

    /* other inputs under the same key (the model's side file changed) */
    mfs_dep deps2[2] = {f->dep, {.path = "car.mtl", .size = 7}};
    mfs_cache_view c[1] = {view(&f->dep, "dem", "four")};
    m = (mfs_cache_manifest){deps2, 2, c, 1, 0};
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, NULL, NULL), 0);
    assert_int_equal(mfs_cache_manifest_load(f->c, &f->mk, &got, NULL), 1);
    assert_int_equal(got.nviews, 1);
    assert_string_equal(got.views[0].format, "dem");
    mfs_cache_manifest_free(&got);
    mfs_cache_key k1 = vkey(&f->dep, "fmd");
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup_in(f->c, &f->mk, &k1, &h, NULL), 0);
}

/* One flipped byte inside an embedded view fails the whole entry's
 * checksum: nothing of it is served, and it is removed. */
static void test_damaged_embedded_view_never_served(void **state)
{
    fx *f = *state;
    mfs_cache_view v[1] = {view(&f->dep, "fmd", "pristine bytes")};
    mfs_cache_manifest m = {&f->dep, 1, v, 1, 0};
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, NULL, NULL), 0);
    char rel[MFS_CACHE_PATH_MAX], path[700];
    mfs_cache_key_path(&f->mk, 'm', rel);
    snprintf(path, sizeof path, "%s/%s", f->dir, rel);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "P", 1, (off_t)v[0].offset + 3), 1);
    close(fd);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup_in(f->c, &f->mk, &v[0].key, &h, NULL), 0);
    assert_int_equal(h.fd, -1);
    mfs_cache_stats s;
    mfs_cache_get_stats(f->c, &s);
    assert_int_equal(s.corrupt_discarded, 1);
    assert_int_equal(access(path, F_OK), -1);
}

/* An entry whose table points outside its payload is refused even with a
 * good checksum (a writer's bug, not damage): an error, never bytes. */
static void test_offsets_outside_the_payload_refused(void **state)
{
    fx *f = *state;
    mfs_sink s;
    mfs_sink_init_mem(&s);
    mfs_put_u32(&s, 0); /* no deps */
    mfs_put_u32(&s, 1);
    mfs_put_u32(&s, 3);
    mfs_put(&s, "fmd", 3);
    mfs_cache_key k = vkey(&f->dep, "fmd");
    mfs_put(&s, k.b, 16);
    mfs_put_u32(&s, 1);                /* embedded */
    mfs_put_u32(&s, 51), mfs_put_u32(&s, 0); /* offset 51: just after the table */
    mfs_put_u32(&s, 1000), mfs_put_u32(&s, 0); /* 1000 bytes: past the end */
    mfs_put(&s, "xyz", 3);
    assert_int_equal(mfs_sink_finish(&s), 0);
    size_t n;
    uint8_t *buf = mfs_sink_take(&s, &n);
    mfs_cache_wr w;
    assert_int_equal(mfs_cache_wr_begin(&w, f->c, &f->mk, MFS_KIND_MODEL, NULL), 0);
    assert_int_equal(mfs_cache_wr_write(&w, buf, n, NULL), 0);
    assert_int_equal(mfs_cache_wr_commit(&w, NULL, NULL), 0);
    free(buf);
    mfs_sink_free(&s);
    mfs_cache_hit h;
    mfs_err err;
    mfs_err_clear(&err);
    assert_int_equal(mfs_cache_lookup_in(f->c, &f->mk, &k, &h, &err), -1);
    assert_non_null(strstr(err.msg, "undecodable"));
    assert_int_equal(h.fd, -1);
}

/* A manifest of an older meshfs (kind 3: keys only, every view its own
 * entry file) is still read, and a run that stores views after it keeps
 * its views. */
static void test_older_manifest_still_read(void **state)
{
    fx *f = *state;
    mfs_cache_key kf = vkey(&f->dep, "fmd");
    assert_int_equal(mfs_cache_store(f->c, &kf, "old fmd", 7, NULL, NULL), 0);
    mfs_sink s;
    mfs_sink_init_mem(&s);
    mfs_put_u32(&s, 1);
    mfs_put_u32(&s, 7);
    mfs_put(&s, "car.obj", 7);
    mfs_put_u32(&s, 123), mfs_put_u32(&s, 0);
    mfs_put(&s, f->dep.hash, 16);
    mfs_put_u32(&s, 1);
    mfs_put_u32(&s, 3);
    mfs_put(&s, "fmd", 3);
    mfs_put(&s, kf.b, 16);
    assert_int_equal(mfs_sink_finish(&s), 0);
    size_t n;
    uint8_t *buf = mfs_sink_take(&s, &n);
    mfs_cache_wr w;
    assert_int_equal(mfs_cache_wr_begin(&w, f->c, &f->mk, MFS_KIND_MANIFEST, NULL), 0);
    assert_int_equal(mfs_cache_wr_write(&w, buf, n, NULL), 0);
    assert_int_equal(mfs_cache_wr_commit(&w, NULL, NULL), 0);
    free(buf);
    mfs_sink_free(&s);

    mfs_cache_manifest got;
    assert_int_equal(mfs_cache_manifest_load(f->c, &f->mk, &got, NULL), 1);
    assert_int_equal(got.ndeps, 1);
    assert_string_equal(got.deps[0].path, "car.obj");
    assert_int_equal(got.nviews, 1);
    assert_false(got.views[0].embedded);
    assert_memory_equal(got.views[0].key.b, kf.b, 16);
    mfs_cache_manifest_free(&got);

    mfs_cache_view v[1] = {view(&f->dep, "gmf", "new gmf")};
    mfs_cache_manifest m = {&f->dep, 1, v, 1, 0};
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, NULL, NULL), 0);
    assert_int_equal(mfs_cache_manifest_load(f->c, &f->mk, &got, NULL), 1);
    assert_int_equal(got.nviews, 2);
    mfs_cache_manifest_free(&got);
    assert_serves(f, "gmf", "new gmf");
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(f->c, &kf, &h, NULL), 1);
    assert_int_equal(h.length, 7);
    mfs_cache_hit_release(&h);
}

/* meshfs-cache verify's check accepts a model entry under an .m name and
 * refuses it under an .e name. */
static void test_entry_check_knows_the_kind(void **state)
{
    fx *f = *state;
    mfs_cache_view v[1] = {view(&f->dep, "fmd", "abc")};
    mfs_cache_manifest m = {&f->dep, 1, v, 1, 0};
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, NULL, NULL), 0);
    char rel[MFS_CACHE_PATH_MAX], path[700];
    mfs_cache_key_path(&f->mk, 'm', rel);
    snprintf(path, sizeof path, "%s/%s", f->dir, rel);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    mfs_cache_entry_info info;
    const char *why = NULL;
    assert_int_equal(mfs_cache_entry_check(fd, &f->mk, 'm', &info, &why), 1);
    assert_int_equal(info.kind, MFS_KIND_MODEL);
    assert_int_equal(mfs_cache_entry_check(fd, &f->mk, 'e', &info, &why), 0);
    assert_string_equal(why, "a kind that does not belong under its name");
    close(fd);
}

/* The conversion's wall time rides after the embedded views (the slow-
 * server rule's yardstick): read back, the views still served, and an
 * entry without one reads as 0. */
static void test_convert_time_kept(void **state)
{
    fx *f = *state;
    mfs_cache_view v[2] = {view(&f->dep, "fmd", "abc"), view(&f->dep, "gmf", "defg")};
    mfs_cache_manifest m = {&f->dep, 1, v, 2, 1234};
    assert_int_equal(mfs_cache_manifest_store(f->c, &f->mk, &m, NULL, NULL), 0);
    mfs_cache_manifest got;
    assert_int_equal(mfs_cache_manifest_load(f->c, &f->mk, &got, NULL), 1);
    assert_int_equal(got.convert_ms, 1234);
    assert_int_equal(got.nviews, 2);
    mfs_cache_manifest_free(&got);
    assert_serves(f, "fmd", "abc");
    assert_serves(f, "gmf", "defg");
    /* the payload: table, the views' 7 bytes, then exactly 16 */
    char rel[MFS_CACHE_PATH_MAX], path[700];
    mfs_cache_key_path(&f->mk, 'm', rel);
    snprintf(path, sizeof path, "%s/%s", f->dir, rel);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    mfs_cache_entry_info info;
    const char *why = NULL;
    assert_int_equal(mfs_cache_entry_check(fd, &f->mk, 'm', &info, &why), 1);
    char tail[16];
    assert_int_equal(pread(fd, tail, 16, (off_t)info.length - 16), 16);
    assert_memory_equal(tail, "mfsconv1\xd2\x04\0\0\0\0\0\0", 16);
    close(fd);
    mfs_cache_manifest none = {&f->dep, 1, v, 1, 0};
    mfs_cache_key other = f->mk;
    other.b[0] ^= 1;
    assert_int_equal(mfs_cache_manifest_store(f->c, &other, &none, NULL, NULL), 0);
    assert_int_equal(mfs_cache_manifest_load(f->c, &other, &got, NULL), 1);
    assert_int_equal(got.convert_ms, 0);
    mfs_cache_manifest_free(&got);
}

/* Folder records: copies of manifests by model name, the first added of a
 * name kept, copies kept from an older record as they were. */
static void test_folder_record(void **state)
{
    fx *f = *state;
    mfs_cache_key fk;
    assert_int_equal(mfs_cache_folder_key("d", "", "v1", &fk, NULL), 0);
    mfs_cache_folder *rec;
    assert_int_equal(mfs_cache_folder_load(f->c, &fk, &rec, NULL), 0);
    mfs_cache_view va[2] = {view(&f->dep, "fmd", NULL), view(&f->dep, "gmf", NULL)};
    va[0].embedded = 1, va[0].offset = 200, va[0].length = 9;
    va[1].sized = 1, va[1].length = 70000;
    mfs_cache_manifest a = {&f->dep, 1, va, 2, 0};
    mfs_dep db = {.path = "d/b.obj", .size = 5};
    mfs_cache_view vb[1] = {view(&db, "fmd", NULL)};
    mfs_cache_manifest b = {&db, 1, vb, 1, 0}, c = {&db, 1, va, 1, 0};
    mfs_cache_folder_builder *bld = mfs_cache_folder_builder_new();
    assert_int_equal(mfs_cache_folder_add(bld, "car.obj", &a), 0);
    assert_int_equal(mfs_cache_folder_add(bld, "b.obj", &b), 0);
    assert_int_equal(mfs_cache_folder_add(bld, "car.obj", &c), 0); /* the first wins */
    assert_int_equal(mfs_cache_folder_store(f->c, &fk, bld, NULL), 1);
    mfs_cache_folder_builder_free(bld);

    assert_int_equal(mfs_cache_folder_load(f->c, &fk, &rec, NULL), 1);
    assert_int_equal(mfs_cache_folder_count(rec), 2);
    mfs_cache_manifest got;
    size_t at = 99;
    assert_int_equal(mfs_cache_folder_find(rec, "car.obj", &at, &got), 1);
    assert_int_equal(at, 1); /* b.obj sorts first */
    assert_int_equal(got.ndeps, 1);
    assert_string_equal(got.deps[0].path, "car.obj");
    assert_int_equal(got.nviews, 2);
    assert_true(got.views[0].embedded && got.views[0].offset == 200 && got.views[0].length == 9);
    assert_true(!got.views[1].embedded && got.views[1].sized && got.views[1].length == 70000);
    mfs_cache_manifest_free(&got);
    assert_int_equal(mfs_cache_folder_find(rec, "car", NULL, &got), 0);
    assert_int_equal(mfs_cache_folder_find(rec, "zzz.obj", NULL, &got), 0);

    /* a new record keeps an old copy byte for byte */
    bld = mfs_cache_folder_builder_new();
    assert_int_equal(mfs_cache_folder_keep(bld, rec, at), 0);
    mfs_cache_folder_free(rec);
    assert_int_equal(mfs_cache_folder_store(f->c, &fk, bld, NULL), 1);
    mfs_cache_folder_builder_free(bld);
    assert_int_equal(mfs_cache_folder_load(f->c, &fk, &rec, NULL), 1);
    assert_int_equal(mfs_cache_folder_count(rec), 1);
    assert_int_equal(mfs_cache_folder_find(rec, "car.obj", NULL, &got), 1);
    assert_int_equal(got.views[1].length, 70000);
    mfs_cache_manifest_free(&got);
    mfs_cache_folder_free(rec);

    /* a record past 32 MiB would not be read whole: it is neither kept in
     * memory nor stored (the folder's listings read the model entries) */
    size_t big = (33u << 20);
    char *path = malloc(big + 1);
    assert_non_null(path);
    memset(path, 'p', big);
    path[big] = '\0';
    mfs_dep huge = {.path = path, .size = 1};
    mfs_cache_manifest h = {&huge, 1, NULL, 0, 0};
    bld = mfs_cache_folder_builder_new();
    assert_int_equal(mfs_cache_folder_add(bld, "small.obj", &b), 0);
    assert_int_equal(mfs_cache_folder_add(bld, "huge.obj", &h), 0);
    assert_int_equal(mfs_cache_folder_builder_count(bld), 1);
    assert_int_equal(mfs_cache_folder_store(f->c, &fk, bld, NULL), 0);
    mfs_cache_folder_builder_free(bld);
    free(path);
    assert_int_equal(mfs_cache_folder_load(f->c, &fk, &rec, NULL), 1); /* the one before */
    assert_int_equal(mfs_cache_folder_count(rec), 1);
    mfs_cache_folder_free(rec);

    /* another kind under the record's name (a model entry) is no record */
    assert_int_equal(mfs_cache_manifest_store(f->c, &fk, &a, NULL, NULL), 0);
    assert_int_equal(mfs_cache_folder_load(f->c, &fk, &rec, NULL), 0);
    assert_null(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_embedded_views_served_from_the_model_entry, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_later_run_keeps_the_other_views, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_embedded_view_never_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offsets_outside_the_payload_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_manifest_still_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_check_knows_the_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_convert_time_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_folder_record, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

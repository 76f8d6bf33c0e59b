/* game_resources.lgepkg: the hash word, the headers, the chunk-name rule,
 * the size arithmetic and the assembly (src/formats/lgepkg.c), and the
 * strict reader (src/inspect/lgepkg.c) on built packages and on the real
 * MetaAppender samples.  Expected bytes follow research/dem_vrt.md Topic B;
 * expected hashes and names were worked out with Python's hashlib. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "meshfs/util.h"
#include "meshfs/inspect.h"
#include "meshfs/formats.h"

/* ---- helpers ---- */

typedef struct blob {
    uint8_t *p;
    size_t n;
} blob;

static blob read_file(const char *path)
{
    blob b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return b;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b.p = malloc(n > 0 ? (size_t)n : 1);
    b.n = fread(b.p, 1, (size_t)n, f);
    fclose(f);
    return b;
}

/* The real MetaAppender sample shared/testdata/real/lge/<name>; skips the
 * test in a checkout without ../shared. */
static blob real_sample(const char *name)
{
    const char *shared = getenv("MESHFS_SHARED");
    char path[1024];
    if (!shared)
        skip();
    snprintf(path, sizeof path, "%s/testdata/real/lge/%s", shared, name);
    if (access(path, R_OK) != 0)
        skip();
    blob b = read_file(path);
    if (!b.p)
        fail_msg("cannot read %s", path);
    return b;
}

static blob write_with(mfs_writer_fn fn, const mfs_scene *s)
{
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink k;
    mfs_err err = {0};
    mfs_sink_init_mem(&k);
    if (fn(s, NULL, &o, &k, &err) != 0)
        fail_msg("writer failed: %s", err.msg);
    assert_int_equal(mfs_sink_finish(&k), 0);
    blob b;
    b.p = mfs_sink_take(&k, &b.n);
    return b;
}

static blob package(const char *name, const char *version, const mfs_lgepkg_model *m, size_t n)
{
    mfs_sink k;
    mfs_err err = {0};
    mfs_sink_init_mem(&k);
    if (mfs_lgepkg_write(name, version, m, n, &k, &err) != 0)
        fail_msg("mfs_lgepkg_write: %s", err.msg);
    assert_int_equal(mfs_sink_finish(&k), 0);
    blob b;
    b.p = mfs_sink_take(&k, &b.n);
    return b;
}

static mfs_lge_src mem(const void *p, size_t n)
{
    return (mfs_lge_src){p, -1, 0, n};
}

/* ---- the hash word ---- */

/* Each word is read big-endian: one non-zero byte per word shows where it
 * lands. */
static void test_hash_word_byte_order(void **state)
{
    (void)state;
    uint8_t d[16] = {0};
    d[0] = 0x12;
    d[5] = 0x34;
    d[10] = 0x56;
    d[15] = 0x78;
    assert_int_equal(mfs_lge_hash_word(d), 0x12345678u);
    /* MD5("") = d41d8cd9 8f00b204 e9800998 ecf8427e */
    assert_int_equal(mfs_lge_hash("", 0), 0x5e65753bu);
}

/* The research's check: MD5 of MetaAppender/aa.bin (the payload of aa.lge
 * after its old 32-byte header) folds to 0xCB4B6A6A, stored at offset 28;
 * bb and cc the same way. */
static void test_hash_real_samples(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        uint32_t hash;
        size_t payload;
    } want[] = {{"aa.lge", 0xCB4B6A6Au, 1501}, {"bb.lge", 0xFFB3B9ADu, 2396},
                {"cc.lge", 0xF06ADADAu, 18176}};
    for (size_t i = 0; i < 3; i++) {
        blob b = real_sample(want[i].file);
        assert_int_equal(b.n, MFS_LGE_OLD_HEADER_BYTES + want[i].payload);
        assert_int_equal(mfs_ld_u32(b.p + 24), want[i].payload);
        assert_int_equal(mfs_ld_u32(b.p + 28), want[i].hash);
        assert_int_equal(mfs_lge_hash(b.p + 32, b.n - 32), want[i].hash);
        free(b.p);
    }
}

/* ---- headers ---- */

static void test_package_header_bytes(void **state)
{
    (void)state;
    uint8_t h[MFS_LGEPKG_HEADER_BYTES];
    memset(h, 0xEE, sizeof h);
    mfs_lgepkg_encode_header(h, "game_resources", "1.0", 12, 0x01020304);
    static const uint8_t want[48] = {
        'g', 'a', 'm', 'e', '_', 'r', 'e', 's', 'o', 'u', 'r', 'c', 'e', 's', 0, 0, 0, 0, 0, 0,
        '1', '.', '0', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        12, 0, 0, 0, 4, 3, 2, 1};
    assert_memory_equal(h, want, sizeof want);
    /* 19 bytes fill the field up to its NUL */
    mfs_lgepkg_encode_header(h, "abcdefghijklmnopqrs", "", 0, 0);
    assert_memory_equal(h, "abcdefghijklmnopqrs\0", 20);
    assert_int_equal(h[20], 0);
}

static void test_chunk_header_bytes(void **state)
{
    (void)state;
    uint8_t h[MFS_LGE_HEADER_BYTES];
    memset(h, 0xEE, sizeof h);
    mfs_lge_encode_header(h, MFS_LGE_TEXTURE, "car", 20, 0xCB4B6A6Au);
    uint8_t want[44] = {0x02, 0x00, 0x00, 0xA0, 'c', 'a', 'r'};
    memcpy(want + 36, "\x14\x00\x00\x00\x6a\x6a\x4b\xcb", 8);
    assert_memory_equal(h, want, sizeof want);
}

/* ---- chunk names ---- */

static void names_of(const char *const *bases, size_t n, char (*out)[MFS_LGE_NAME_BYTES])
{
    mfs_err err = {0};
    assert_int_equal(mfs_lgepkg_chunk_names(bases, n, out, &err), 0);
    for (size_t i = 0; i < n; i++) {
        assert_true(strlen(out[i]) <= 31);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(out[i], out[j]);
    }
}

static void test_name_limit(void **state)
{
    (void)state;
    const char *bases[] = {"car", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 31 */,
                           "abcdefghijklmnopqrstuvwxyz0123456789" /* 36 */,
                           "xxxxxxxxxxxxxxxxxxxxx\xc3\xa9yyyyyyyyyy" /* 33, é at 21..22 */};
    char out[4][MFS_LGE_NAME_BYTES];
    names_of(bases, 4, out);
    assert_string_equal(out[0], "car");
    assert_string_equal(out[1], "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    /* first 22 bytes, '~', MD5 hash word of the whole base in hex */
    assert_string_equal(out[2], "abcdefghijklmnopqrstuv~7237f54c");
    /* the cut backs off rather than split the two bytes of U+00E9 */
    assert_string_equal(out[3], "xxxxxxxxxxxxxxxxxxxxx~71f190d6");
}

static void test_name_collisions(void **state)
{
    (void)state;
    /* two long names with one 22-byte prefix: told apart by the hash */
    const char *a[] = {"abcdefghijklmnopqrstuv_first_long_name",
                       "abcdefghijklmnopqrstuv_second_long_name"};
    char out[3][MFS_LGE_NAME_BYTES];
    names_of(a, 2, out);
    assert_string_equal(out[0], "abcdefghijklmnopqrstuv~1f4a61fb");
    assert_string_equal(out[1], "abcdefghijklmnopqrstuv~c16aa018");
    /* a short name that is exactly the hashed form of a long one keeps it;
     * the long one takes the hash of "<base>#1" */
    const char *b[] = {"a_very_long_model_name_that_exceeds_31", "a_very_long_model_name~420938da"};
    names_of(b, 2, out);
    assert_string_equal(out[1], "a_very_long_model_name~420938da");
    assert_string_equal(out[0], "a_very_long_model_name~b737f823");
    /* and the order given does not change who wins */
    const char *c[] = {"a_very_long_model_name~420938da", "a_very_long_model_name_that_exceeds_31"};
    names_of(c, 2, out);
    assert_string_equal(out[0], "a_very_long_model_name~420938da");
    assert_string_equal(out[1], "a_very_long_model_name~b737f823");
    /* a repeated base: the first keeps it */
    const char *d[] = {"dup", "dup", "other"};
    names_of(d, 3, out);
    assert_string_equal(out[0], "dup");
    assert_string_equal(out[1], "dup~7d17a706");
    assert_string_equal(out[2], "other");
}

/* ---- sizes ---- */

static void test_size_arithmetic(void **state)
{
    (void)state;
    mfs_err err = {0};
    uint64_t size = 0;
    assert_int_equal(mfs_lgepkg_size_of(NULL, 0, &size, &err), 0);
    assert_int_equal(size, 48);
    const uint64_t s[8] = {12, 24, 20, 48, 1, 0, 7, 100};
    assert_int_equal(mfs_lgepkg_size_of(s, 8, &size, &err), 0);
    assert_int_equal(size, 48 + 8 * 44 + 212);
    /* totalSize is an i32: 44 + 2^31 - 45 fits exactly, one more byte not */
    const uint64_t edge[1] = {(uint64_t)INT32_MAX - 44};
    assert_int_equal(mfs_lgepkg_size_of(edge, 1, &size, &err), 0);
    assert_int_equal(size, 48 + (uint64_t)INT32_MAX);
    const uint64_t over[2] = {(uint64_t)INT32_MAX - 44, 0};
    assert_int_equal(mfs_lgepkg_size_of(over, 2, &size, &err), -1);
    assert_non_null(strstr(err.msg, "totalSize"));
    const uint64_t huge[1] = {(uint64_t)1 << 32};
    assert_int_equal(mfs_lgepkg_size_of(huge, 1, &size, &err), -1);
    assert_non_null(strstr(err.msg, "i32 size"));
    /* from sources, without reading them (the fd is not even open) */
    mfs_lgepkg_model m[1];
    memset(m, 0, sizeof m);
    for (int k = 0; k < 4; k++)
        m[0].chunk[k] = (mfs_lge_src){NULL, 9999, 0, (uint64_t)(k + 1) * 10};
    assert_int_equal(mfs_lgepkg_size(m, 1, &size, &err), 0);
    assert_int_equal(size, 48 + 4 * 44 + 100);
}

/* ---- assembly ---- */

static void test_write_layout(void **state)
{
    (void)state;
    /* model "b" comes from a file descriptor at an offset, "a" from memory */
    static const char pa[4][8] = {"AVRT", "ATRI1", "ATEX12", "ASPH123"};
    FILE *f = tmpfile();
    assert_non_null(f);
    fputs("junk:BVRT|BTRI|BTEX|BSPH", f);
    fflush(f);
    mfs_lgepkg_model m[2];
    memset(m, 0, sizeof m);
    strcpy(m[0].name, "a");
    strcpy(m[1].name, "b");
    for (int k = 0; k < 4; k++) {
        m[0].chunk[k] = mem(pa[k], strlen(pa[k]));
        m[1].chunk[k] = (mfs_lge_src){NULL, fileno(f), 5 + 5 * (uint64_t)k, 4};
    }
    blob b = package("pkg", "v2", m, 2);
    uint64_t size;
    mfs_err err = {0};
    assert_int_equal(mfs_lgepkg_size(m, 2, &size, &err), 0);
    assert_int_equal(b.n, size);
    assert_string_equal((const char *)b.p, "pkg");
    assert_string_equal((const char *)b.p + 20, "v2");
    assert_int_equal(mfs_ld_i32(b.p + 40), 8);
    assert_int_equal(mfs_ld_i32(b.p + 44), b.n - 48);
    size_t off = 48;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) {
            const uint8_t *h = b.p + off;
            assert_int_equal(mfs_ld_u32(h), 0xA0000000u + (uint32_t)k);
            assert_string_equal((const char *)h + 4, i ? "b" : "a");
            for (int z = (int)strlen((const char *)h + 4); z < 32; z++)
                assert_int_equal(h[4 + z], 0);
            const char *want = i ? (const char *[]){"BVRT", "BTRI", "BTEX", "BSPH"}[k] : pa[k];
            size_t len = strlen(want);
            assert_int_equal(mfs_ld_i32(h + 36), len);
            assert_int_equal(mfs_ld_u32(h + 40), mfs_lge_hash(want, len));
            assert_memory_equal(h + 44, want, len);
            off += 44 + len;
        }
    assert_int_equal(off, b.n);
    free(b.p);
    fclose(f);
}

static void test_write_errors(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    fputs("short", f);
    fflush(f);
    mfs_lgepkg_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "car");
    for (int k = 0; k < 4; k++)
        m.chunk[k] = mem("x", 1);
    m.chunk[2] = (mfs_lge_src){NULL, fileno(f), 0, 10}; /* claims more than the file has */
    mfs_sink k;
    mfs_err err = {0};
    mfs_sink_init_mem(&k);
    assert_int_equal(mfs_lgepkg_write("n", "v", &m, 1, &k, &err), -1);
    assert_non_null(strstr(err.msg, "chunk 'car' (.tex)"));
    assert_non_null(strstr(err.msg, "ends after 5 of 10"));
    mfs_sink_free(&k);
    mfs_sink_init_mem(&k);
    assert_int_equal(mfs_lgepkg_write("name_of_twenty_bytes", "v", &m, 0, &k, &err), -1);
    mfs_sink_free(&k);
    fclose(f);
}

/* ---- the reader ---- */

static int inspect_pkg(const blob *b, int check, mfs_summary *s, mfs_err *err)
{
    return mfs_inspect_buffer("game_resources.lgepkg", b->p, b->n, check, s, err);
}

/* Real views of the fixture cube, packed twice under two names: the strict
 * reader passes it and sums what the per-type readers found. */
static blob cube_package(blob v[4])
{
    mfs_scene *s = fixture_cube();
    mfs_writer_fn fn[4] = {mfs_write_vrt, mfs_write_tri, mfs_write_tex, mfs_write_sph};
    for (int k = 0; k < 4; k++)
        v[k] = write_with(fn[k], s);
    mfs_scene_free(s);
    mfs_lgepkg_model m[2];
    memset(m, 0, sizeof m);
    strcpy(m[0].name, "cube");
    strcpy(m[1].name, "cube2");
    for (int k = 0; k < 4; k++)
        m[0].chunk[k] = m[1].chunk[k] = mem(v[k].p, v[k].n);
    return package("game_resources", "1.0", m, 2);
}

static void test_reader_accepts_package(void **state)
{
    (void)state;
    blob v[4];
    blob b = cube_package(v);
    mfs_summary s;
    mfs_err err = {0};
    if (inspect_pkg(&b, 1, &s, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(s.format, "lgepkg");
    assert_string_equal(s.name, "game_resources");
    assert_int_equal(s.meshes, 2);
    assert_int_equal(s.triangles, 24);
    assert_int_equal(s.n_violations, 0);
    assert_true(s.has_bounds);
    free(b.p);
    for (int k = 0; k < 4; k++)
        free(v[k].p);
}

static void expect_violation(blob *b, const char *text)
{
    mfs_summary s;
    mfs_err err = {0};
    assert_int_equal(inspect_pkg(b, 1, &s, &err), -1);
    if (!strstr(err.msg, text))
        fail_msg("expected '%s' in: %s", text, err.msg);
    /* without --check the same finding is a warning and the call succeeds */
    assert_int_equal(inspect_pkg(b, 0, &s, &err), 0);
    assert_true(s.n_violations >= 1);
}

static void test_reader_findings(void **state)
{
    (void)state;
    blob v[4];
    blob b = cube_package(v);
    size_t first = 48; /* the first chunk header */
    /* a wrong hash */
    b.p[first + 40] ^= 1;
    expect_violation(&b, "hashNum");
    b.p[first + 40] ^= 1;
    /* totalSize disagreeing */
    mfs_st_u32(b.p + 44, mfs_ld_u32(b.p + 44) + 1);
    expect_violation(&b, "totalSize");
    mfs_st_u32(b.p + 44, mfs_ld_u32(b.p + 44) - 1);
    /* the second model renamed like the first: the engine finds one only */
    size_t second = first;
    for (int k = 0; k < 4; k++)
        second += 44 + mfs_ld_u32(b.p + second + 36);
    memcpy(b.p + second + 4, "cube\0", 6);
    expect_violation(&b, "repeats Vertices 'cube'");
    memcpy(b.p + second + 4, "cube2", 6);
    /* a name without its NUL */
    memset(b.p + first + 4, 'n', 32);
    expect_violation(&b, "not NUL-terminated");
    memset(b.p + first + 4, 0, 32);
    memcpy(b.p + first + 4, "cube", 4);
    /* an unknown chunk type */
    mfs_st_u32(b.p + first, 0xA0000009u);
    expect_violation(&b, "no ChunkType");
    mfs_st_u32(b.p + first, 0xA0000000u);
    /* a payload its type's reader rejects: the .vrt's sizeOfElement */
    uint32_t hash = mfs_ld_u32(b.p + first + 40);
    uint32_t vrt_size = mfs_ld_u32(b.p + first + 36);
    mfs_st_u32(b.p + first + 44 + 4, 8);
    mfs_st_u32(b.p + first + 40, mfs_lge_hash(b.p + first + 44, vrt_size)); /* hash kept right */
    expect_violation(&b, "cube.vrt: offset 4: sizeOfElement");
    mfs_st_u32(b.p + first + 44 + 4, 4);
    mfs_st_u32(b.p + first + 40, hash);
    /* repaired: clean again */
    mfs_summary s;
    mfs_err err = {0};
    if (inspect_pkg(&b, 1, &s, &err) != 0)
        fail_msg("%s", err.msg);
    /* truncated inside a payload: a structural error, check or not */
    blob t = {b.p, b.n - 3};
    assert_int_equal(inspect_pkg(&t, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "payload bytes but only"));
    /* bytes after the last chunk */
    uint8_t *longer = malloc(b.n + 2);
    memcpy(longer, b.p, b.n);
    longer[b.n] = longer[b.n + 1] = 0;
    blob l = {longer, b.n + 2};
    expect_violation(&l, "2 bytes after the last chunk");
    free(longer);
    /* a count the bytes cannot hold */
    mfs_st_u32(b.p + 40, 1000000);
    assert_int_equal(inspect_pkg(&b, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "chunk 8 of 1000000"));
    free(b.p);
    for (int k = 0; k < 4; k++)
        free(v[k].p);
}

/* The real samples: a 32-byte header (20-byte name) told by size; the
 * hashes verify; the payloads are MetaAppender's test bytes, which no
 * per-type reader accepts, so --check fails on the payload only. */
static void test_reader_real_lge(void **state)
{
    (void)state;
    static const char *const files[] = {"aa.lge", "bb.lge", "cc.lge"};
    static const char *const names[] = {"p1_verts", "p1_norms", "p1_anim"};
    static const char *const exts[] = {"p1_verts.vrt", "p1_norms.tri", "p1_anim.tex"};
    for (int i = 0; i < 3; i++) {
        blob b = real_sample(files[i]);
        mfs_summary s;
        mfs_err err = {0};
        assert_int_equal(mfs_inspect_buffer(files[i], b.p, b.n, 0, &s, &err), 0);
        assert_string_equal(s.format, "lge");
        assert_string_equal(s.name, names[i]);
        int old = 0, fill = 0, payload = 0;
        for (unsigned w = 0; w < s.n_warnings && w < MFS_SUMMARY_MAX_WARN; w++) {
            old |= strstr(s.warnings[w], "old MetaAppender layout") != NULL;
            fill |= strstr(s.warnings[w], "0xfe") != NULL;
            payload |= strstr(s.warnings[w], exts[i]) != NULL;
            assert_null(strstr(s.warnings[w], "hashNum")); /* the hash is right */
        }
        assert_true(old && fill && payload);
        assert_int_equal(s.n_violations, 1);
        assert_int_equal(mfs_inspect_buffer(files[i], b.p, b.n, 1, &s, &err), -1);
        assert_non_null(strstr(err.msg, exts[i]));
        /* one byte less and neither header layout fits */
        assert_int_equal(mfs_inspect_buffer(files[i], b.p, b.n - 1, 0, &s, &err), -1);
        assert_non_null(strstr(err.msg, "disagrees with the file"));
        /* a flipped payload byte now fails the hash */
        b.p[40] ^= 0xFF;
        mfs_inspect_buffer(files[i], b.p, b.n, 0, &s, &err);
        int hash = 0;
        for (unsigned w = 0; w < s.n_warnings && w < MFS_SUMMARY_MAX_WARN; w++)
            hash |= strstr(s.warnings[w], "hashNum") != NULL;
        assert_true(hash);
        free(b.p);
    }
}

/* A 44-byte chunk made by mfs_lgepkg's own encoder reads as the current
 * layout, and a package of old 32-byte chunks (the samples concatenated, as
 * an old DataPackager would have) reads with the old-layout warning. */
static void test_reader_chunk_layouts(void **state)
{
    (void)state;
    blob v[4];
    blob pkg = cube_package(v);
    blob one = {pkg.p + 48, 44 + mfs_ld_u32(pkg.p + 48 + 36)};
    mfs_summary s;
    mfs_err err = {0};
    if (mfs_inspect_buffer("cube.lge", one.p, one.n, 1, &s, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(s.name, "cube");
    assert_true(s.vertices > 0);
    free(pkg.p);
    for (int k = 0; k < 4; k++)
        free(v[k].p);

    blob a = real_sample("aa.lge"), b = real_sample("bb.lge");
    size_t n = 48 + a.n + b.n;
    uint8_t *p = calloc(1, n);
    mfs_lgepkg_encode_header(p, "old", "0.1", 2, (int32_t)(a.n + b.n));
    memcpy(p + 48, a.p, a.n);
    memcpy(p + 48 + a.n, b.p, b.n);
    assert_int_equal(mfs_inspect_buffer("old.lgepkg", p, n, 0, &s, &err), 0);
    assert_string_equal(s.name, "old");
    int old = 0;
    for (unsigned w = 0; w < s.n_warnings && w < MFS_SUMMARY_MAX_WARN; w++)
        old |= strstr(s.warnings[w], "old MetaAppender layout") != NULL;
    assert_true(old);
    free(p);
    free(a.p);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_word_byte_order),
        cmocka_unit_test(test_hash_real_samples),
        cmocka_unit_test(test_package_header_bytes),
        cmocka_unit_test(test_chunk_header_bytes),
        cmocka_unit_test(test_name_limit),
        cmocka_unit_test(test_name_collisions),
        cmocka_unit_test(test_size_arithmetic),
        cmocka_unit_test(test_write_layout),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_reader_accepts_package),
        cmocka_unit_test(test_reader_findings),
        cmocka_unit_test(test_reader_real_lge),
        cmocka_unit_test(test_reader_chunk_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

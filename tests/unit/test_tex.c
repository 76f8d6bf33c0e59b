/* .tex: the writer (src/formats/tex.c) on hand-built scene images, and the
 * strict reader (src/inspect/tex.c) on hand-built files.  Expected bytes
 * come from the TextureHeader in research/dem_vrt.md Topic B and the
 * decisions in docs/formats/tex.md (RGBA when RGB rows are not 4-aligned,
 * TexelFormat RGB = 0 / RGBA = 3, rows bottom-up). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/formats.h"
#include "meshfs/inspect.h"

typedef struct blob {
    uint8_t *p;
    size_t n;
} blob;

static blob write_tex(const mfs_scene *s)
{
    mfs_sink k;
    mfs_err err = {0};
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink_init_mem(&k);
    if (mfs_write_tex(s, NULL, &o, &k, &err) != 0)
        fail_msg("writer failed: %s", err.msg);
    assert_int_equal(mfs_sink_finish(&k), 0);
    blob b;
    b.p = mfs_sink_take(&k, &b.n);
    return b;
}

/* A scene whose image has w x h pixels of `channels`, byte i = first + i
 * (so every byte says where it came from), rows top-down as the scene
 * stores them. */
static mfs_scene *image_scene(uint32_t w, uint32_t h, uint32_t channels, uint8_t first)
{
    mfs_scene *s = mfs_scene_new();
    assert_non_null(s);
    size_t n = (size_t)w * h * channels;
    s->image.pixels = malloc(n);
    assert_non_null(s->image.pixels);
    for (size_t i = 0; i < n; i++)
        s->image.pixels[i] = (uint8_t)(first + i);
    s->image.width = w;
    s->image.height = h;
    s->image.channels = channels;
    s->image.source = mfs_strdup("textures/t.png");
    return s;
}

static const uint8_t fallback[20] = {
    1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 3, 0, 3, 0, 0xff, 0xff, 0xff, 0xff,
};

static void test_fallback_without_image(void **state)
{
    (void)state;
    mfs_scene *s = mfs_scene_new();
    /* a note does not change the bytes: it travels in the report */
    s->image.note = mfs_strdup("the model names no diffuse texture");
    blob b = write_tex(s);
    assert_int_equal(b.n, sizeof fallback);
    assert_memory_equal(b.p, fallback, sizeof fallback);
    free(b.p);
    mfs_scene_free(s);
}

/* 3 x 2 RGB: rows of 9 bytes are not 4-aligned, so RGBA with alpha 255. */
static void test_rgb_odd_width_becomes_rgba(void **state)
{
    (void)state;
    mfs_scene *s = image_scene(3, 2, 3, 1); /* top row 1..9, bottom row 10..18 */
    blob b = write_tex(s);
    static const uint8_t want[16 + 24] = {
        3, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 3, 0, 3, 0,
        /* bottom row first (GL's origin) */
        10, 11, 12, 255, 13, 14, 15, 255, 16, 17, 18, 255,
        1, 2, 3, 255, 4, 5, 6, 255, 7, 8, 9, 255,
    };
    assert_int_equal(b.n, sizeof want);
    assert_memory_equal(b.p, want, sizeof want);
    free(b.p);
    mfs_scene_free(s);
}

/* 4 x 2 RGB: 12-byte rows are aligned, so RGB stays RGB (depth 3). */
static void test_rgb_aligned_stays_rgb(void **state)
{
    (void)state;
    mfs_scene *s = image_scene(4, 2, 3, 100);
    blob b = write_tex(s);
    assert_int_equal(b.n, 16 + 24);
    static const uint8_t head[16] = {4, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(b.p, head, 16);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(b.p[16 + i], 100 + 12 + i); /* bottom row */
        assert_int_equal(b.p[28 + i], 100 + i);      /* top row */
    }
    free(b.p);
    mfs_scene_free(s);
}

/* 3 x 2 RGBA: depth 4, formats RGBA, bytes as stored, rows swapped. */
static void test_rgba(void **state)
{
    (void)state;
    mfs_scene *s = image_scene(3, 2, 4, 0);
    blob b = write_tex(s);
    assert_int_equal(b.n, 16 + 24);
    static const uint8_t head[16] = {3, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 3, 0, 3, 0};
    assert_memory_equal(b.p, head, 16);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(b.p[16 + i], 12 + i);
        assert_int_equal(b.p[28 + i], i);
    }
    free(b.p);
    mfs_scene_free(s);
}

/* 1 x 3 RGB (3-byte rows): three rows reversed, each widened. */
static void test_single_column_three_rows(void **state)
{
    (void)state;
    mfs_scene *s = image_scene(1, 3, 3, 1); /* rows 1..3, 4..6, 7..9 top-down */
    blob b = write_tex(s);
    static const uint8_t want[16 + 12] = {
        1, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 3, 0, 3, 0,
        7, 8, 9, 255, 4, 5, 6, 255, 1, 2, 3, 255,
    };
    assert_int_equal(b.n, sizeof want);
    assert_memory_equal(b.p, want, sizeof want);
    free(b.p);
    mfs_scene_free(s);
}

static void test_inconsistent_image_is_an_error(void **state)
{
    (void)state;
    mfs_scene *s = image_scene(2, 2, 3, 0);
    s->image.channels = 2;
    mfs_sink k;
    mfs_err err = {0};
    mfs_options o;
    mfs_options_default(&o);
    mfs_sink_init_mem(&k);
    assert_int_equal(mfs_write_tex(s, NULL, &o, &k, &err), -1);
    assert_non_null(strstr(err.msg, "2 channels"));
    mfs_sink_free(&k);
    mfs_scene_free(s);
}

/* ---- reader ---- */

static size_t make_tex(uint8_t *buf, int32_t w, int32_t h, int32_t d, uint16_t gf, uint16_t imf,
                       size_t pixel_bytes)
{
    mfs_st_u32(buf, (uint32_t)w);
    mfs_st_u32(buf + 4, (uint32_t)h);
    mfs_st_u32(buf + 8, (uint32_t)d);
    mfs_st_u16(buf + 12, gf);
    mfs_st_u16(buf + 14, imf);
    memset(buf + 16, 0x5a, pixel_bytes);
    return 16 + pixel_bytes;
}

static int read_tex(const uint8_t *p, size_t n, int check, mfs_summary *s, mfs_err *err)
{
    return mfs_inspect_buffer("model.tex", p, n, check, s, err);
}

static void test_reader_accepts_writer_output(void **state)
{
    (void)state;
    mfs_scene *s = image_scene(3, 2, 3, 1);
    blob b = write_tex(s);
    mfs_summary sum;
    mfs_err err;
    assert_int_equal(read_tex(b.p, b.n, 1, &sum, &err), 0);
    assert_string_equal(sum.format, "tex");
    assert_int_equal(sum.has_texture, 1);
    assert_int_equal(sum.tex_width, 3);
    assert_int_equal(sum.tex_height, 2);
    assert_int_equal(sum.tex_depth, 4);
    assert_int_equal(sum.tex_gpu_format, 3);
    assert_int_equal(sum.tex_image_format, 3);
    assert_int_equal(sum.n_violations, 0);
    free(b.p);
    mfs_scene_free(s);

    assert_int_equal(read_tex(fallback, sizeof fallback, 1, &sum, &err), 0);
    assert_int_equal(sum.tex_width, 1);
    assert_int_equal(sum.tex_depth, 4);
}

static void test_reader_size_rule(void **state)
{
    (void)state;
    uint8_t buf[64];
    mfs_summary s;
    mfs_err err;
    /* 4x1 RGB = 12 bytes: exact is fine */
    size_t n = make_tex(buf, 4, 1, 3, 0, 1, 12);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), 0);
    /* one byte short: structural error naming the sizes */
    assert_int_equal(read_tex(buf, n - 1, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "needs 12 pixel bytes but only 11 remain"));
    /* one byte extra: the engine's assert; fails --check, a warning without */
    buf[n] = 0;
    assert_int_equal(read_tex(buf, n + 1, 1, &s, &err), -1);
    assert_non_null(strstr(err.msg, "1 bytes after the pixels"));
    assert_int_equal(read_tex(buf, n + 1, 0, &s, &err), 0);
    assert_int_equal(s.n_warnings, 1);
    /* shorter than the header */
    assert_int_equal(read_tex(buf, 15, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "16-byte TextureHeader"));
}

static void test_reader_header_fields(void **state)
{
    (void)state;
    uint8_t buf[64];
    mfs_summary s;
    mfs_err err;
    size_t n = make_tex(buf, 0, 1, 4, 3, 3, 0);
    assert_int_equal(read_tex(buf, n, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "width or height <= 0"));
    n = make_tex(buf, 1, -2, 4, 3, 3, 0);
    assert_int_equal(read_tex(buf, n, 0, &s, &err), -1);
    n = make_tex(buf, 2, 2, 2, 3, 3, 8);
    assert_int_equal(read_tex(buf, n, 0, &s, &err), -1);
    assert_non_null(strstr(err.msg, "depth 2"));
    n = make_tex(buf, 2, 2, 32, 3, 3, 16); /* bits, not bytes: refused */
    assert_int_equal(read_tex(buf, n, 0, &s, &err), -1);
    /* format out of range */
    n = make_tex(buf, 1, 1, 4, 7, 3, 4);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), -1);
    assert_non_null(strstr(err.msg, "gpuFormat 7"));
    n = make_tex(buf, 1, 1, 4, 3, 4, 4);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), -1);
    assert_non_null(strstr(err.msg, "imageFormat 4"));
    /* imageFormat RGB says 3 bytes a pixel, depth 4 */
    n = make_tex(buf, 1, 1, 4, 3, 0, 4);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), -1);
    assert_non_null(strstr(err.msg, "imageFormat RGB has 3 bytes per pixel, depth says 4"));
    /* BGRA with depth 4, the TGA path's format: fine */
    n = make_tex(buf, 1, 1, 4, 3, 2, 4);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), 0);
}

static void test_reader_row_alignment(void **state)
{
    (void)state;
    uint8_t buf[64];
    mfs_summary s;
    mfs_err err;
    /* 3x2 RGB: 9-byte rows, GL_UNPACK_ALIGNMENT 4 would read them skewed */
    size_t n = make_tex(buf, 3, 2, 3, 0, 0, 18);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), -1);
    assert_non_null(strstr(err.msg, "rows of 9 bytes are not a multiple of 4"));
    /* 1x1 RGB is a 3-byte row too */
    n = make_tex(buf, 1, 1, 3, 0, 0, 3);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), -1);
    /* 8x1 RGB: 24-byte rows, aligned */
    n = make_tex(buf, 8, 1, 3, 0, 0, 24);
    assert_int_equal(read_tex(buf, n, 1, &s, &err), 0);
}

static void test_reader_json(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mfs_summary s;
    mfs_err err;
    assert_int_equal(read_tex(fallback, sizeof fallback, 1, &s, &err), 0);
    mfs_summary_json(f, "model.tex", &s, NULL);
    fclose(f);
    assert_non_null(strstr(text, "\"format\":\"tex\""));
    assert_non_null(strstr(text, "\"texture\":{\"width\":1,\"height\":1,\"depth\":4,"
                                 "\"gpu_format\":3,\"image_format\":3}"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fallback_without_image),
        cmocka_unit_test(test_rgb_odd_width_becomes_rgba),
        cmocka_unit_test(test_rgb_aligned_stays_rgb),
        cmocka_unit_test(test_rgba),
        cmocka_unit_test(test_single_column_three_rows),
        cmocka_unit_test(test_inconsistent_image_is_an_error),
        cmocka_unit_test(test_reader_accepts_writer_output),
        cmocka_unit_test(test_reader_size_rule),
        cmocka_unit_test(test_reader_header_fields),
        cmocka_unit_test(test_reader_row_alignment),
        cmocka_unit_test(test_reader_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

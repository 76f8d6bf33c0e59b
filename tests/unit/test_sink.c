/* Sinks: byte order, sticky errors, limits, gzip framing, and the worker
 * report codec (the one piece of the daemon that parses untrusted bytes
 * from another process). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <libdeflate.h>

#include "meshfs/convert.h"
#include "meshfs/util.h"
#include "meshfs/worker.h"

static void test_le_bytes(void **state)
{
    mfs_sink s;
    mfs_sink_init_mem(&s);
    mfs_put_u32(&s, 0x01020304u);
    mfs_put_i32(&s, -2);
    mfs_put_f32(&s, 1.0f);
    mfs_put_u16(&s, 0xBEEF);
    mfs_put_str(&s, "ok");
    mfs_putf(&s, "%d-%s", 7, "x");
    assert_int_equal(mfs_sink_finish(&s), 0);
    size_t n;
    uint8_t *b = mfs_sink_take(&s, &n);
    static const uint8_t want[] = {4, 3, 2, 1, 0xfe, 0xff, 0xff, 0xff, 0, 0, 0x80, 0x3f,
                                   0xef, 0xbe, 'o', 'k', '7', '-', 'x'};
    assert_int_equal(n, sizeof want);
    assert_memory_equal(b, want, sizeof want);
    free(b);
    mfs_sink_free(&s);
}

static void test_limit_is_sticky(void **state)
{
    mfs_sink s;
    mfs_sink_init_mem(&s);
    s.limit = 6;
    mfs_put_u32(&s, 1);
    mfs_put_u32(&s, 2); /* crosses the limit */
    mfs_put_u8(&s, 3);  /* ignored after the error */
    assert_int_equal(s.err, EFBIG);
    assert_int_equal(mfs_sink_finish(&s), EFBIG);
    assert_int_equal(s.len, 4);
    mfs_sink_free(&s);
}

static void test_fd_sink_large(void **state)
{
    char path[] = "/tmp/meshfs-sink-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    mfs_sink s;
    assert_int_equal(mfs_sink_init_fd(&s, fd), 0);
    for (uint32_t i = 0; i < 300000; i++) /* 1.2 MB: several buffer flushes */
        mfs_put_u32(&s, i);
    assert_int_equal(mfs_sink_finish(&s), 0);
    mfs_sink_free(&s);
    assert_int_equal(lseek(fd, 0, SEEK_END), 1200000);
    uint8_t b[4];
    assert_int_equal(pread(fd, b, 4, 4 * 123456), 4);
    assert_int_equal(mfs_ld_u32(b), 123456);
    close(fd);
    unlink(path);
}

static void test_gzip_roundtrip_and_header(void **state)
{
    mfs_sink mem, gz;
    mfs_sink_init_mem(&mem);
    assert_int_equal(mfs_sink_init_gzip(&gz, &mem, 6), 0);
    for (int i = 0; i < 100000; i++)
        mfs_put_u32(&gz, (uint32_t)(i * 2654435761u));
    assert_int_equal(mfs_sink_finish(&gz), 0);
    mfs_sink_free(&gz);
    size_t n;
    uint8_t *b = mfs_sink_take(&mem, &n);
    /* RFC 1952: magic, deflate, no flags, mtime 0, (XFL), OS 255 */
    static const uint8_t hdr[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0};
    assert_memory_equal(b, hdr, sizeof hdr);
    assert_int_equal(b[9], 255);
    uint8_t *out = malloc(400000);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 31), Z_OK);
    z.next_in = b;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = 400000;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(z.total_out, 400000);
    assert_int_equal(mfs_ld_u32(out + 4 * 77777), (uint32_t)(77777 * 2654435761u));
    inflateEnd(&z);
    free(out);
    free(b);
    mfs_sink_free(&mem);
}

/* ---- the gzip member, as docs/formats/fmd.md describes it ---- */

/* Deterministic bytes that compress (runs) and do not (a hash), so deflate
 * uses both literal and match blocks. */
static uint8_t *payload_bytes(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (i / 4096) % 2 ? (uint8_t)(i / 97) : (uint8_t)(x >> 24);
    }
    return p;
}

/* Writes p through a gzip sink in pieces of `step` bytes (0: one put). */
static uint8_t *gzip_via_sink(const uint8_t *p, size_t n, size_t step, int level, size_t whole_max,
                              size_t *out_n)
{
    mfs_sink mem, gz;
    mfs_sink_init_mem(&mem);
    assert_int_equal(mfs_sink_init_gzip_bounded(&gz, &mem, level, whole_max), 0);
    for (size_t at = 0; at < n;) {
        size_t k = step && step < n - at ? step : n - at;
        mfs_put(&gz, p + at, k);
        at += k;
    }
    assert_int_equal(mfs_sink_finish(&gz), 0);
    mfs_sink_free(&gz);
    uint8_t *b = mfs_sink_take(&mem, out_n);
    mfs_sink_free(&mem);
    return b;
}

/* One member, read by zlib as a gzip-only stream: exactly the payload,
 * nothing after it; fixed header; CRC-32 and ISIZE trailer (RFC 1952). */
static void check_member(const uint8_t *b, size_t n, const uint8_t *want, size_t want_n, uint8_t xfl)
{
    static const uint8_t hdr[8] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0}; /* ID, CM, FLG, MTIME */
    assert_true(n >= 18);
    assert_memory_equal(b, hdr, sizeof hdr);
    assert_int_equal(b[8], xfl);
    assert_int_equal(b[9], 255);
    uint8_t *out = malloc(want_n + 16);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 16 + 15), Z_OK); /* gzip wrapper only */
    z.next_in = (Bytef *)b;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)want_n + 16;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(z.avail_in, 0);
    assert_int_equal(z.total_out, want_n);
    assert_memory_equal(out, want, want_n);
    inflateEnd(&z);
    assert_int_equal(mfs_ld_u32(b + n - 8), (uint32_t)crc32(0, want, (uInt)want_n));
    assert_int_equal(mfs_ld_u32(b + n - 4), (uint32_t)want_n);
    free(out);
}

/* libdeflate path: every size around the 256 KiB first block and its
 * doublings, whatever the put pattern, gives the same member, and it is
 * libdeflate's own gzip of the whole payload. */
static void test_gzip_whole_payload(void **state)
{
    static const size_t sizes[] = {0, 1, 262143, 262144, 262145, 524288, 3000001};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        uint8_t *p = payload_bytes(n);
        size_t an, bn;
        uint8_t *a = gzip_via_sink(p, n, 0, 1, MFS_GZIP_WHOLE_MAX, &an);
        uint8_t *b = gzip_via_sink(p, n, 4093, 1, MFS_GZIP_WHOLE_MAX, &bn);
        check_member(a, an, p, n, 4); /* XFL 4: fastest, libdeflate's level 1 */
        assert_int_equal(an, bn);
        assert_memory_equal(a, b, an);
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);
        size_t cap = libdeflate_gzip_compress_bound(c, n);
        uint8_t *ref = malloc(cap);
        size_t rn = libdeflate_gzip_compress(c, p, n, ref, cap);
        libdeflate_free_compressor(c);
        assert_int_equal(rn, an);
        assert_memory_equal(ref, a, an);
        free(ref);
        free(a);
        free(b);
        free(p);
    }
}

/* zlib past whole_max: still one member of exactly the payload, with the
 * same header, and the same bytes for any put pattern; below it, libdeflate
 * (a different deflate stream of the same payload). */
static void test_gzip_streams_past_whole_max(void **state)
{
    const size_t max = 256 * 1024;
    size_t n = 5 * max + 777;
    uint8_t *p = payload_bytes(n);
    size_t an, bn, cn;
    uint8_t *a = gzip_via_sink(p, n, 0, 1, max, &an);
    uint8_t *b = gzip_via_sink(p, n, 1000, 1, max, &bn);
    check_member(a, an, p, n, 4);
    assert_int_equal(an, bn);
    assert_memory_equal(a, b, an);
    /* the same payload under a larger bound goes whole: a different stream */
    uint8_t *c = gzip_via_sink(p, n, 1000, 1, MFS_GZIP_WHOLE_MAX, &cn);
    check_member(c, cn, p, n, 4);
    assert_true(an != cn || memcmp(a, c, an) != 0);
    /* exactly whole_max bytes is "reached": zlib, as for any longer payload */
    size_t en;
    uint8_t *e = gzip_via_sink(p, max, 0, 1, max, &en);
    check_member(e, en, p, max, 4);
    z_stream z = {0};
    uint8_t *ref = malloc(2 * max);
    gz_header h = {0};
    h.os = 255;
    assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    deflateSetHeader(&z, &h);
    z.next_in = p;
    z.avail_in = (uInt)max;
    z.next_out = ref;
    z.avail_out = (uInt)(2 * max);
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(z.total_out, en);
    assert_memory_equal(ref, e, en);
    deflateEnd(&z);
    free(ref);
    free(a);
    free(b);
    free(c);
    free(e);
    free(p);
}

/* A member that would pass the destination's limit is the destination's
 * EFBIG, and nothing of it is written. */
static void test_gzip_output_cap(void **state)
{
    size_t n = 100000;
    uint8_t *p = payload_bytes(n);
    mfs_sink mem, gz;
    mfs_sink_init_mem(&mem);
    mfs_put(&mem, "FMD001", 6);
    mem.limit = 6 + 1000;
    assert_int_equal(mfs_sink_init_gzip(&gz, &mem, 1), 0);
    mfs_put(&gz, p, n);
    assert_int_equal(mfs_sink_finish(&gz), EFBIG);
    assert_int_equal(mem.err, EFBIG);
    assert_int_equal(mem.total, 6);
    mfs_sink_free(&gz);
    mfs_sink_free(&mem);
    assert_int_equal(mfs_sink_init_gzip(&gz, &mem, 13), -1); /* libdeflate has 0-12 */
    free(p);
}

static void fill_report(mfs_report *r)
{
    memset(r, 0, sizeof *r);
    r->ok = 1;
    r->deps.v = calloc(2, sizeof(mfs_dep));
    r->deps.n = r->deps.cap = 2;
    r->deps.v[0].path = strdup("a/model.obj");
    r->deps.v[0].size = 1234;
    memset(r->deps.v[0].hash, 0xAB, 16);
    r->deps.v[1].path = strdup("a/model.mtl");
    r->deps.v[1].size = 56;
    r->stats.meshes = 3;
    r->stats.triangles = 1000000;
    r->stats.max[1] = 2.5f;
    r->formats = (1u << MFS_FMT_FMD) | (1u << MFS_FMT_GMF);
    r->fmt[MFS_FMT_FMD].ok = 1;
    r->fmt[MFS_FMT_FMD].size = 999;
    strcpy(r->fmt[MFS_FMT_FMD].note, "fallback written");
    strcpy(r->fmt[MFS_FMT_GMF].error, "gmf: too many bones");
    strcpy(r->route, "assimp (native declined: cgltf: glTF 1.0)");
    strcpy(r->repairs, "1 name made UTF-8");
}

static void test_report_roundtrip(void **state)
{
    mfs_report r, back;
    fill_report(&r);
    uint8_t *b;
    size_t n;
    assert_int_equal(mfs_report_encode(&r, &b, &n), 0);
    mfs_err err;
    assert_int_equal(mfs_report_decode(b, n, &back, &err), 0);
    assert_int_equal(back.ok, 1);
    assert_int_equal(back.deps.n, 2);
    assert_string_equal(back.deps.v[1].path, "a/model.mtl");
    assert_int_equal(back.deps.v[0].size, 1234);
    assert_int_equal(back.deps.v[0].hash[15], 0xAB);
    assert_int_equal(back.stats.triangles, 1000000);
    assert_true(back.stats.max[1] == 2.5f);
    assert_int_equal(back.formats, r.formats);
    assert_int_equal(back.fmt[MFS_FMT_FMD].size, 999);
    assert_string_equal(back.fmt[MFS_FMT_GMF].error, "gmf: too many bones");
    assert_string_equal(back.fmt[MFS_FMT_FMD].note, "fallback written");
    assert_string_equal(back.fmt[MFS_FMT_GMF].note, "");
    assert_string_equal(back.route, "assimp (native declined: cgltf: glTF 1.0)");
    assert_string_equal(back.repairs, "1 name made UTF-8");
    mfs_report_free(&back);
    mfs_report_free(&r);
    free(b);
}

/* Every truncation and every single-byte corruption of a valid report is
 * either rejected with a message or decodes to something bounded. */
static void test_report_hostile(void **state)
{
    mfs_report r, back;
    fill_report(&r);
    uint8_t *b;
    size_t n;
    assert_int_equal(mfs_report_encode(&r, &b, &n), 0);
    mfs_err err;
    for (size_t cut = 0; cut < n; cut++) {
        err.msg[0] = '\0';
        assert_int_equal(mfs_report_decode(b, cut, &back, &err), -1);
        assert_true(err.msg[0] != '\0');
    }
    uint8_t *c = malloc(n);
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(c, b, n);
            c[i] ^= (uint8_t)(1u << bit);
            if (mfs_report_decode(c, n, &back, &err) == 0) {
                assert_true(back.deps.n <= 2 || back.deps.n == 0);
                mfs_report_free(&back);
            }
        }
    /* a dependency count far beyond the bytes present */
    memcpy(c, b, n);
    size_t off = 12 + 1 + 4 + strlen(r.error) + 4 + strlen(r.route) + 4 + strlen(r.repairs);
    mfs_st_u32(c + off, 0xFFFFFFF0u);
    assert_int_equal(mfs_report_decode(c, n, &back, &err), -1);
    assert_non_null(strstr(err.msg, "dependencies"));
    /* bad magic */
    memcpy(c, b, n);
    c[0] ^= 1;
    assert_int_equal(mfs_report_decode(c, n, &back, &err), -1);
    assert_non_null(strstr(err.msg, "magic"));
    free(c);
    free(b);
    mfs_report_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_le_bytes),
        cmocka_unit_test(test_limit_is_sticky),
        cmocka_unit_test(test_fd_sink_large),
        cmocka_unit_test(test_gzip_roundtrip_and_header),
        cmocka_unit_test(test_gzip_whole_payload),
        cmocka_unit_test(test_gzip_streams_past_whole_max),
        cmocka_unit_test(test_gzip_output_cap),
        cmocka_unit_test(test_report_roundtrip),
        cmocka_unit_test(test_report_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

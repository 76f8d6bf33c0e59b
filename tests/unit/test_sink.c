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

#include "meshfs/sink.h"
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
    size_t off = 12 + 1 + 4 + strlen(r.error);
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
        cmocka_unit_test(test_report_roundtrip),
        cmocka_unit_test(test_report_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

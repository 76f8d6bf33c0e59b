/* mfs_fmt_f32: fixed table of tricky values with exact expected text, a
 * seeded sample of random bit patterns checked against libc (snprintf as the
 * correctly rounded oracle, strtof as the reader), and a speed floor.
 *
 * MESHFS_NUMFMT_EXHAUSTIVE=1 additionally checks all 2^32 bit patterns
 * (=positive: the 2^31 with the sign bit clear); threads = online CPUs;
 * takes long, run by hand; see docs/numfmt.md. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "meshfs/util.h"

static float from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* ---- fixed table ---- */

typedef struct {
    uint32_t bits;
    const char *text;
} case_t;

/* Expected text worked out independently (Python: shortest %.*e that
 * round-trips through float32, printed with repr). */
static const case_t table[] = {
    {0x00000000u, "0.0"}, /* 0.0 */
    {0x80000000u, "-0.0"}, /* -0.0 */
    {0x3f800000u, "1.0"}, /* 1.0 */
    {0xbf800000u, "-1.0"}, /* -1.0 */
    {0x40000000u, "2.0"}, /* 2.0 */
    {0x3f000000u, "0.5"}, /* 0.5 */
    {0x3e000000u, "0.125"}, /* 0.125 */
    {0xbf000000u, "-0.5"}, /* -0.5 */
    {0x3f400000u, "0.75"}, /* 0.75 */
    {0x3f600000u, "0.875"}, /* 0.875 */
    {0x3f200000u, "0.625"}, /* 0.625 */
    {0x3ec00000u, "0.375"}, /* 0.375 */
    {0x3dcccccdu, "0.1"}, /* 0.10000000149011612 */
    {0x3eaaaaabu, "0.33333334"}, /* 0.3333333432674408 */
    {0x3f13cd3au, "0.57735026"}, /* 0.5773502588272095 */
    {0xbf13cd3bu, "-0.5773503"}, /* -0.5773503184318542 */
    {0x4b800000u, "16777216.0"}, /* 16777216.0 */
    {0x4b800001u, "16777218.0"}, /* 16777218.0 */
    {0x4b7fffffu, "16777215.0"}, /* 16777215.0 */
    {0x4cbebc20u, "100000000.0"}, /* 100000000.0 */
    {0x4e6e6b28u, "1000000000.0"}, /* 1000000000.0 */
    {0x4eeb7038u, "1975000000.0"}, /* 1975000064.0 */
    {0x38d1b717u, "0.0001"}, /* 9.999999747378752e-05 */
    {0x38d1b716u, "9.999999e-05"}, /* 9.99999901978299e-05 */
    {0x38d1b718u, "0.000100000005"}, /* 0.00010000000474974513 */
    {0x3727c5acu, "1e-05"}, /* 9.999999747378752e-06 */
    {0x5a0e1bc9u, "9999999000000000.0"}, /* 9999999198822400.0 */
    {0x5a0e1bcau, "1e+16"}, /* 1.0000000272564224e+16 */
    {0x5a0e1bc8u, "9999998000000000.0"}, /* 9999998125080576.0 */
    {0x60ad78ecu, "1e+20"}, /* 1.0000000200408773e+20 */
    {0x61021ab1u, "1.5e+20"}, /* 1.500000030061316e+20 */
    {0x7f7fffffu, "3.4028235e+38"}, /* 3.4028234663852886e+38 */
    {0xff7fffffu, "-3.4028235e+38"}, /* -3.4028234663852886e+38 */
    {0x00800000u, "1.1754944e-38"}, /* 1.1754943508222875e-38 */
    {0x007fffffu, "1.1754942e-38"}, /* 1.1754942106924411e-38 */
    {0x00000001u, "1e-45"}, /* 1.401298464324817e-45 */
    {0x80000001u, "-1e-45"}, /* -1.401298464324817e-45 */
    {0x00000002u, "3e-45"}, /* 2.802596928649634e-45 */
    {0x00000003u, "4e-45"}, /* 4.203895392974451e-45 */
    {0x3f800001u, "1.0000001"}, /* 1.0000001192092896 */
    {0x3f7fffffu, "0.99999994"}, /* 0.9999999403953552 */
    {0x501502f9u, "10000000000.0"}, /* 10000000000.0 */
    {0x42f6e979u, "123.456"}, /* 123.45600128173828 */
    {0x4b3c614eu, "12345678.0"}, /* 12345678.0 */
    {0x4ceb79a3u, "123456790.0"}, /* 123456792.0 */
    {0x7e967699u, "1e+38"}, /* 9.999999680285692e+37 */
    {0x0da24260u, "1e-30"}, /* 1.0000000031710769e-30 */
    {0x2edbe6ffu, "1e-10"}, /* 1.000000013351432e-10 */
    {0x3a83126fu, "0.001"}, /* 0.0010000000474974513 */
    {0x40490fdbu, "3.1415927"}, /* 3.1415927410125732 */
    {0x71800000u, "1.2676506e+30"}, /* 1.2676506002282294e+30 */
    {0x0d800000u, "7.888609e-31"}, /* 7.888609052210118e-31 */
    {0x38fba882u, "0.00012"}, /* 0.00011999999696854502 */
    {0x58635fa9u, "1000000000000000.0"}, /* 999999986991104.0 */
    {0x47f1205au, "123456.7"}, /* 123456.703125 */
    {0x3e99999au, "0.3"}, /* 0.30000001192092896 */
    {0x00000007u, "1e-44"}, /* 9.80908925027372e-45 */
    {0x00800000u, "1.1754944e-38"}, /* 1.1754943508222875e-38 */
    {0x00400000u, "5.877472e-39"}, /* 5.877471754111438e-39 */
    {0x5f800000u, "1.8446744e+19"}, /* 1.8446744073709552e+19 */
    {0x5f000000u, "9.223372e+18"}, /* 9.223372036854776e+18 */
    {0x3f000001u, "0.50000006"}, /* 0.5000000596046448 */
    {0x7f800000u, "inf"}, /* inf */
    {0xff800000u, "-inf"}, /* -inf */
    {0x7fc00000u, "nan"}, /* nan */
    {0xffc00000u, "nan"}, /* nan */
    {0x7f800001u, "nan"}, /* nan */
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        char buf[MFS_F32_BUF];
        size_t n = mfs_fmt_f32(from_bits(table[i].bits), buf);
        if (strcmp(buf, table[i].text) != 0 || n != strlen(table[i].text))
            fail_msg("0x%08x: got '%s' (%zu), want '%s'", table[i].bits, buf, n, table[i].text);
    }
}

/* The README cube's numbers that float32 holds exactly print exactly as the
 * Blender exporter printed them (Python repr of the same value). */
static void test_readme_values(void **state)
{
    (void)state;
    static const char *same[] = {"-1.0", "1.0", "0.125", "0.75", "0.5", "0.875", "0.375", "0.625"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char buf[MFS_F32_BUF];
        mfs_fmt_f32(strtof(same[i], NULL), buf);
        assert_string_equal(buf, same[i]);
    }
}

/* ---- checking one value against libc ---- */

/* Python repr layout of digit string dig (no trailing zeros) with
 * scientific exponent e: written from the rule, independently of numfmt.c. */
static void repr_layout(char *out, size_t cap, int neg, const char *dig, int e)
{
    int nd = (int)strlen(dig);
    const char *sg = neg ? "-" : "";
    if (e >= -4 && e < 16) {
        if (e < 0)
            snprintf(out, cap, "%s0.%.*s%s", sg, -e - 1, "0000", dig);
        else if (e + 1 >= nd)
            snprintf(out, cap, "%s%s%.*s.0", sg, dig, e + 1 - nd, "0000000000000000");
        else
            snprintf(out, cap, "%s%.*s.%s", sg, e + 1, dig, dig + e + 1);
    } else if (nd == 1) {
        snprintf(out, cap, "%s%se%c%02d", sg, dig, e < 0 ? '-' : '+', abs(e));
    } else {
        snprintf(out, cap, "%s%c.%se%c%02d", sg, dig[0], dig + 1, e < 0 ? '-' : '+', abs(e));
    }
}

/* Splits "d.ddde+XX" (from %e) into digits without trailing zeros and the
 * exponent. */
static void split_e(const char *s, char *dig, int *e)
{
    int n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            dig[n++] = *s;
    while (n > 1 && dig[n - 1] == '0')
        n--;
    dig[n] = '\0';
    *e = atoi(s + 1);
}

static int round_trips(const char *s, float x)
{
    return to_bits(strtof(s, NULL)) == to_bits(x);
}

/* Adds one unit in the last digit of "d.ddde+XX" (digits only; a carry out
 * of the first digit becomes 10.00 with the same exponent, which strtof
 * reads correctly). */
static void bump_last(char *s)
{
    char *e = strchr(s, 'e');
    char *p = e - 1;
    for (;;) {
        if (*p == '.') {
            p--;
            continue;
        }
        if (*p == '9') {
            *p = '0';
            if (p == s || (p == s + 1 && s[0] == '-')) {
                memmove(p + 1, p, strlen(p) + 1);
                *p = '1';
                return;
            }
            p--;
            continue;
        }
        (*p)++;
        return;
    }
}

/* Returns NULL if mfs_fmt_f32(x) is right, else a description in msg:
 * (1) strtof reads it back to x;
 * (2) it is exactly the repr layout of the correctly rounded decimal with
 *     as many digits (so same digits as the oracle), except at powers of
 *     two where that decimal does not read back (see below);
 * (3) no decimal with one digit fewer reads back to x: both neighbours of
 *     |x| at that precision (rounded down and up) fail.  Any shorter
 *     decimal inside the rounding interval would put one of them inside it
 *     too (the interval is convex and holds x), so this proves shortness. */
static _Atomic long n_power_of_two_exceptions;

static const char *check_one(float x, char *msg, size_t cap)
{
    char got[MFS_F32_BUF + 8], want[64], ref[64], dig[32];
    uint32_t b = to_bits(x);
    size_t n = mfs_fmt_f32(x, got);
    if (n != strlen(got)) {
        snprintf(msg, cap, "0x%08x: length %zu for '%s'", b, n, got);
        return msg;
    }
    if (isnan(x) || isinf(x) || x == 0) {
        const char *w = isnan(x) ? "nan" : isinf(x) ? (x < 0 ? "-inf" : "inf")
                                                    : (signbit(x) ? "-0.0" : "0.0");
        if (strcmp(got, w) != 0) {
            snprintf(msg, cap, "0x%08x: got '%s' want '%s'", b, got, w);
            return msg;
        }
        return NULL;
    }
    if (!round_trips(got, x)) {
        snprintf(msg, cap, "0x%08x: '%s' does not read back", b, got);
        return msg;
    }
    /* significant digits of got: its digit sequence without leading or
     * trailing zeros ("0.00012" -> 12, "1975000000.0" -> 1975) */
    char sig[32];
    int ns = 0;
    for (const char *p = got; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && (ns > 0 || *p != '0'))
            sig[ns++] = *p;
    while (ns > 1 && sig[ns - 1] == '0')
        ns--;
    int nd = ns;
    int e;
    snprintf(ref, sizeof ref, "%.*e", nd - 1, (double)x);
    split_e(ref, dig, &e);
    repr_layout(want, sizeof want, signbit(x) != 0, dig, e);
    if (strcmp(got, want) != 0) {
        /* Allowed only where the float below is closer than the float above
         * (a power of two): the correctly rounded decimal may fall outside
         * the narrow lower half of the interval, and then the shortest text
         * is its upper neighbour, one digit shorter than the oracle's. */
        char up[64];
        snprintf(up, sizeof up, "%.*e", nd - 1, (double)x);
        int ok = (b & 0x7fffffu) == 0 && !round_trips(up, x);
        if (ok) {
            fesetround(FE_UPWARD);
            snprintf(up, sizeof up, "%.*e", nd - 1, fabs((double)x));
            fesetround(FE_TONEAREST);
            split_e(up, dig, &e);
            repr_layout(want, sizeof want, signbit(x) != 0, dig, e);
            ok = strcmp(got, want) == 0;
            if (ok)
                n_power_of_two_exceptions++;
        }
        if (!ok) {
            snprintf(msg, cap, "0x%08x: got '%s', correctly rounded %d digits is '%s'", b, got,
                     nd, want);
            return msg;
        }
    }
    if (nd > 1) {
        char lo[64], hi[64];
        double a = fabs((double)x);
        fesetround(FE_TOWARDZERO);
        snprintf(lo, sizeof lo, "%.*e", nd - 2, a);
        fesetround(FE_TONEAREST);
        strcpy(hi, lo);
        bump_last(hi);
        if (round_trips(lo, fabsf(x)) || round_trips(hi, fabsf(x))) {
            snprintf(msg, cap, "0x%08x: '%s' not shortest ('%s' or '%s' reads back)", b, got,
                     lo, hi);
            return msg;
        }
    }
    return NULL;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The oracle depends on printf honouring the rounding mode (glibc does). */
static void test_oracle_sane(void **state)
{
    (void)state;
    char lo[16], hi[16];
    fesetround(FE_TOWARDZERO);
    snprintf(lo, sizeof lo, "%.0e", 1.9);
    fesetround(FE_TONEAREST);
    snprintf(hi, sizeof hi, "%.0e", 1.9);
    assert_string_equal(lo, "1e+00");
    assert_string_equal(hi, "2e+00");
    strcpy(lo, "9.99e+00");
    bump_last(lo);
    assert_string_equal(lo, "10.00e+00");
    char msg[256];
    /* check_one itself must reject wrong answers: feed it through a value
     * whose correct text we know and compare the digit-count logic. */
    assert_null(check_one(1.0f, msg, sizeof msg));
    assert_null(check_one(1e-45f, msg, sizeof msg));
    assert_null(check_one(1e16f, msg, sizeof msg));
    assert_null(check_one(100.0f, msg, sizeof msg));
    assert_null(check_one(0.0001f, msg, sizeof msg));
}

static void test_random_bits(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15u;
    char msg[256];
    long failures = 0;
    for (int i = 0; i < 2000000; i++) {
        float x = from_bits((uint32_t)(xorshift(&seed) >> 17));
        const char *m = check_one(x, msg, sizeof msg);
        if (m && failures++ < 10)
            print_error("%s\n", m);
    }
    assert_int_equal(failures, 0);
}

/* Every power of two and its neighbours: the asymmetric rounding interval
 * (the float below is closer) and both ends of each binade.  Exactly three
 * powers of two, 2^-96, 2^87 and 2^90 (each with both signs), have a
 * shortest text one digit shorter than the correctly rounded one: e.g. 2^87
 * = 1.54742504...e+26 prints "1.5474251e+26", because 1.5474250e+26 lies
 * below the narrow lower half-interval (worked out independently with exact
 * fractions in Python; Ryu and Schubfach print the same). */
static void test_binade_edges(void **state)
{
    (void)state;
    char msg[256];
    long failures = 0;
    n_power_of_two_exceptions = 0;
    for (uint32_t e = 0; e < 255; e++) {
        for (int d = -3; d <= 3; d++) {
            uint32_t b = (e << 23) + (uint32_t)d;
            for (int sgn = 0; sgn < 2; sgn++) {
                const char *m = check_one(from_bits(b | (uint32_t)sgn << 31), msg, sizeof msg);
                if (m && failures++ < 10)
                    print_error("%s\n", m);
            }
        }
    }
    assert_int_equal(failures, 0);
    assert_int_equal(n_power_of_two_exceptions, 6);
    char buf[MFS_F32_BUF];
    mfs_fmt_f32(from_bits(0x6b000000u), buf);
    assert_string_equal(buf, "1.5474251e+26");
    mfs_fmt_f32(from_bits(0x0f800000u), buf);
    assert_string_equal(buf, "1.2621775e-29");
    mfs_fmt_f32(from_bits(0x6c800000u), buf);
    assert_string_equal(buf, "1.2379401e+27");
}

/* Whole numbers take a fast path: check all of them up to 2^24 that a
 * model is likely to hold (0..65536) and a sample above. */
static void test_whole_numbers(void **state)
{
    (void)state;
    char msg[256], buf[MFS_F32_BUF], want[32];
    for (int i = 0; i <= 65536; i++) {
        mfs_fmt_f32((float)i, buf);
        snprintf(want, sizeof want, "%d.0", i);
        assert_string_equal(buf, want);
    }
    uint64_t seed = 7;
    for (int i = 0; i < 100000; i++) {
        float x = (float)(xorshift(&seed) % (1u << 26));
        assert_null(check_one(x, msg, sizeof msg));
    }
}

static double now_s(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A floor, not a benchmark: it fails if the printer regresses to something
 * like a printf loop (~2000 ns here).  Prints the measured speed. */
/* std::stof (the DEM loader's reader) throws when strtof reports ERANGE,
 * which glibc does for subnormal results and for text below FLT_MIN that
 * rounds up to it ("1.1754942e-38").  The text of every normal float must
 * read back without ERANGE: checked for the 2^20 normal floats nearest
 * FLT_MIN and the 2^20 nearest FLT_MAX, both signs.  Subnormals do set
 * ERANGE, which is why the .dem writer flushes them (docs/numfmt.md). */
static void expect_no_erange(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    char buf[MFS_F32_BUF];
    mfs_fmt_f32(x, buf);
    errno = 0;
    char *end;
    float back = strtof(buf, &end);
    if (errno == ERANGE || *end || back != x)
        fail_msg("0x%08x: '%s' reads back with errno %d as %.9g", bits, buf, errno,
                 (double)back);
}

static void test_normals_read_without_erange(void **state)
{
    (void)state;
    for (uint32_t sign = 0; sign <= 1; sign++)
        for (uint32_t i = 0; i < (1u << 20); i++) {
            expect_no_erange(sign << 31 | (0x00800000u + i)); /* FLT_MIN upwards */
            expect_no_erange(sign << 31 | (0x7f7fffffu - i)); /* FLT_MAX downwards */
        }
    char buf[MFS_F32_BUF];
    mfs_fmt_f32(FLT_MIN, buf);
    assert_string_equal(buf, "1.1754944e-38");
    mfs_fmt_f32(1e-40f, buf); /* the printer itself is exact */
    assert_string_equal(buf, "1e-40");
    errno = 0;
    strtof(buf, NULL);
    assert_int_equal(errno, ERANGE);
}

static void test_speed(void **state)
{
    (void)state;
    enum { N = 1000000 };
    float *v = malloc(N * sizeof *v);
    assert_non_null(v);
    uint64_t seed = 42;
    for (int i = 0; i < N; i++) /* model-like: uniform in (-100, 100) */
        v[i] = (float)((double)(xorshift(&seed) >> 11) / 9007199254740992.0 * 200 - 100);
    char buf[MFS_F32_BUF];
    size_t total = 0;
    /* CPU time of this thread: other processes on the machine don't count */
    double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < N; i++)
        total += mfs_fmt_f32(v[i], buf);
    double ns = (now_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e9 / N;
    free(v);
    print_message("mfs_fmt_f32: %.1f ns/value (%zu bytes)\n", ns, total);
    assert_true(ns < 500);
}

/* ---- exhaustive, by hand ---- */

typedef struct {
    uint32_t first, step;
    uint64_t end; /* exclusive */
    long failures;
} slice_t;

static void *exhaustive_slice(void *arg)
{
    slice_t *sl = arg;
    char msg[256];
    uint64_t b = sl->first;
    for (; b < sl->end; b += sl->step) {
        const char *m = check_one(from_bits((uint32_t)b), msg, sizeof msg);
        if (m && sl->failures++ < 10)
            fprintf(stderr, "%s\n", m);
    }
    return NULL;
}

static void test_exhaustive(void **state)
{
    (void)state;
    const char *env = getenv("MESHFS_NUMFMT_EXHAUSTIVE");
    if (!env || !*env || strcmp(env, "0") == 0)
        skip();
    /* "positive": sign bit clear only (half the time; the sign is one
     * branch before everything else, covered by the sampled tests). */
    uint64_t end = strcmp(env, "positive") == 0 ? UINT64_C(1) << 31 : UINT64_C(1) << 32;
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1)
        nt = 1;
    if (nt > 64)
        nt = 64;
    pthread_t th[64];
    slice_t sl[64];
    n_power_of_two_exceptions = 0;
    double t0 = now_s(CLOCK_MONOTONIC);
    for (long i = 0; i < nt; i++) {
        sl[i] = (slice_t){(uint32_t)i, (uint32_t)nt, end, 0};
        assert_int_equal(pthread_create(&th[i], NULL, exhaustive_slice, &sl[i]), 0);
    }
    long failures = 0;
    for (long i = 0; i < nt; i++) {
        pthread_join(th[i], NULL);
        failures += sl[i].failures;
    }
    print_message("exhaustive: %llu patterns, %ld failures, %ld power-of-two exceptions, "
                  "%.0f s on %ld threads\n",
                  (unsigned long long)end, failures, (long)n_power_of_two_exceptions,
                  now_s(CLOCK_MONOTONIC) - t0, nt);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_readme_values),
        cmocka_unit_test(test_oracle_sane),
        cmocka_unit_test(test_binade_edges),
        cmocka_unit_test(test_whole_numbers),
        cmocka_unit_test(test_normals_read_without_erange),
        cmocka_unit_test(test_random_bits),
        cmocka_unit_test(test_speed),
        cmocka_unit_test(test_exhaustive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Shortest round-trip decimal text for float32 (docs/numfmt.md).
 *
 * Exact integer arithmetic, no floating point: a finite float is c * 2^q.
 * Every real in the rounding interval of that float reads back to it, so we
 * scale the interval bounds by a power of ten 10^-k to integers with about
 * ten digits (exact: one 64x128-bit product, or an integer division for
 * large values), then strip decimal digits while a coarser multiple still
 * lies inside the interval, and finally round the float itself at that
 * length.  That yields the shortest digit string, and among the shortest the
 * one closest to the float (ties to even), which is what Python's repr and
 * Ryu/Schubfach produce.  Then the digits are laid out in repr style. */
#include <stdint.h>
#include <string.h>

#include "meshfs/util.h"

typedef unsigned __int128 u128;

/* 5^K = hi * 2^64 + lo for K = 0..47.  47 is the largest K needed: the
 * smallest subnormal has e2 = -151 and k = floor(-151 log10 2) - 1 = -47. */
static const uint64_t pow5[48][2] = {
    {0x0000000000000000u, 0x0000000000000001u}, {0x0000000000000000u, 0x0000000000000005u},
    {0x0000000000000000u, 0x0000000000000019u}, {0x0000000000000000u, 0x000000000000007du},
    {0x0000000000000000u, 0x0000000000000271u}, {0x0000000000000000u, 0x0000000000000c35u},
    {0x0000000000000000u, 0x0000000000003d09u}, {0x0000000000000000u, 0x000000000001312du},
    {0x0000000000000000u, 0x000000000005f5e1u}, {0x0000000000000000u, 0x00000000001dcd65u},
    {0x0000000000000000u, 0x00000000009502f9u}, {0x0000000000000000u, 0x0000000002e90eddu},
    {0x0000000000000000u, 0x000000000e8d4a51u}, {0x0000000000000000u, 0x0000000048c27395u},
    {0x0000000000000000u, 0x000000016bcc41e9u}, {0x0000000000000000u, 0x000000071afd498du},
    {0x0000000000000000u, 0x0000002386f26fc1u}, {0x0000000000000000u, 0x000000b1a2bc2ec5u},
    {0x0000000000000000u, 0x000003782dace9d9u}, {0x0000000000000000u, 0x00001158e460913du},
    {0x0000000000000000u, 0x000056bc75e2d631u}, {0x0000000000000000u, 0x0001b1ae4d6e2ef5u},
    {0x0000000000000000u, 0x000878678326eac9u}, {0x0000000000000000u, 0x002a5a058fc295edu},
    {0x0000000000000000u, 0x00d3c21bcecceda1u}, {0x0000000000000000u, 0x0422ca8b0a00a425u},
    {0x0000000000000000u, 0x14adf4b7320334b9u}, {0x0000000000000000u, 0x6765c793fa10079du},
    {0x0000000000000002u, 0x04fce5e3e2502611u}, {0x000000000000000au, 0x18f07d736b90be55u},
    {0x0000000000000032u, 0x7cb2734119d3b7a9u}, {0x00000000000000fcu, 0x6f7c40458122964du},
    {0x00000000000004eeu, 0x2d6d415b85acef81u}, {0x00000000000018a6u, 0xe32246c99c60ad85u},
    {0x0000000000007b42u, 0x6fab61f00de36399u}, {0x000000000002684cu, 0x2e58e9b04570f1fdu},
    {0x00000000000c097cu, 0xe7bc90715b34b9f1u}, {0x00000000003c2f70u, 0x86aed236c807a1b5u},
    {0x00000000012ced32u, 0xa16a1b11e8262889u}, {0x0000000005e0a1fdu, 0x2712875988becaadu},
    {0x000000001d6329f1u, 0xc35ca4bfabb9f561u}, {0x0000000092efd1b8u, 0xd0cf37be5aa1cae5u},
    {0x00000002deaf189cu, 0x140c16b7c528f679u}, {0x0000000e596b7b0cu, 0x643c7196d9ccd05du},
    {0x00000047bf19673du, 0xf52e37f2410011d1u}, {0x00000166bb7f0435u, 0xc9e717bb45005915u},
    {0x00000701a97b150cu, 0xf18376a85901bd69u}, {0x000023084f676940u, 0xb7915149bd08b30du},
};

/* floor(e * log10(2)) for |e| <= 1650 (78913 / 2^18 is log10(2) to the
 * precision that range needs).  e * log10(2) is never an integer for
 * e != 0, so for negative e the floor is one below the negated floor. */
static int floor_log10_pow2(int e)
{
    if (e >= 0)
        return (int)(((uint32_t)e * 78913u) >> 18);
    return -(int)(((uint32_t)-e * 78913u) >> 18) - 1;
}

/* floor(n * 5^K / 2^s) for 0 <= s <= 127, and whether the division is
 * exact.  n * 5^K can exceed 128 bits (up to 2^136), so it is formed as
 * hi * 2^64 + lo from two 64x64 products.  The quotient fits 64 bits by the
 * choice of k in shortest(). */
static uint64_t mul_pow5_shr(uint64_t n, int K, int s, int *exact)
{
    u128 plo = (u128)n * pow5[K][1];
    u128 hi = (u128)n * pow5[K][0] + (uint64_t)(plo >> 64);
    uint64_t lo = (uint64_t)plo;
    if (s >= 64) {
        int t = s - 64;
        *exact = lo == 0 && (hi & (((u128)1 << t) - 1)) == 0;
        return (uint64_t)(hi >> t);
    }
    if (s == 0) {
        *exact = 1;
        return lo;
    }
    *exact = (lo & ((UINT64_C(1) << s) - 1)) == 0;
    return (uint64_t)(hi << (64 - s)) | (lo >> s);
}

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* floor(n * 2^e2 / 10^k) and exactness, exact for every float32 input.
 * Inlined: it runs three times per number and is most of the work. */
static ALWAYS_INLINE uint64_t scale(uint64_t n, int e2, int k, int *exact)
{
    if (e2 < 0) {
        /* n * 2^e2 * 10^K = n * 5^K / 2^(-e2-K), K = -k >= 2 */
        int K = -k, s = -e2 - K;
        if (s < 0) { /* only e2 = -1: n * 5^2 * 2 */
            *exact = 1;
            return (n * pow5[K][1]) << -s;
        }
        if (K <= 27) { /* 5^K < 2^63: one product, the usual case (|x| > 1e-20) */
            u128 prod = (u128)n * pow5[K][1];
            *exact = (prod & (((u128)1 << s) - 1)) == 0;
            return (uint64_t)(prod >> s);
        }
        return mul_pow5_shr(n, K, s, exact);
    }
    if (k < 0) { /* e2 in 0..3, k = -1 */
        *exact = 1;
        return (n << e2) * 10;
    }
    /* Values >= 2^24: a true division; rare in model data, so the plain
     * integer division is fine here.  10^k = 5^k * 2^k. */
    if (e2 <= 37) {
        uint64_t num = n << e2, den = pow5[k][1] << k;
        *exact = num % den == 0;
        return num / den;
    }
    u128 num = (u128)n << e2;
    u128 den = (((u128)pow5[k][0] << 64) | pow5[k][1]) << k;
    *exact = num % den == 0;
    return (uint64_t)(num / den);
}

/* Shortest digits of the finite positive float c * 2^q: returns the digit
 * string as an integer and sets *exp10 to the power of ten of its last
 * digit.  `irregular` is set when the float below has half the spacing
 * (c is a power of two at a normal exponent above the smallest). */
static ALWAYS_INLINE uint32_t shortest(uint32_t c, int q, int irregular, int *exp10)
{
    /* Interval in units of 2^e2: [cb - dl, cb + 2] around cb = 4c.  Its
     * ends read back to this float only when c is even (round half to
     * even in strtof). */
    int e2 = q - 2;
    uint64_t cb = (uint64_t)c << 2;
    uint64_t cbl = cb - (irregular ? 1 : 2), cbr = cb + 2;
    int incl = (c & 1) == 0;

    /* 10^(k+1) <= 2^e2 < 10^(k+2): the scaled interval is at least 30 units
     * wide (so at least one digit can always be dropped, and rounding never
     * needs mid's fraction beyond whether it is zero) and the scaled values
     * stay below 100 * 2^26. */
    int k = floor_log10_pow2(e2) - 1;
    int lo_exact, mid_exact, hi_exact;
    uint64_t lo = scale(cbl, e2, k, &lo_exact);
    uint64_t mid = scale(cb, e2, k, &mid_exact);
    uint64_t hi = scale(cbr, e2, k, &hi_exact);

    /* Integers inside the interval: [amin, amax]. */
    uint64_t amin = lo + !(lo_exact && incl);
    uint64_t amax = hi - (hi_exact && !incl);

    /* Drop digits while a multiple of ten remains inside.  `last` is the
     * last digit dropped from mid, `tail_zero` whether everything below it
     * (including mid's fraction) is zero: together they round mid.  The
     * first digit always goes (the interval holds >= 29 integers). */
    int j = 1, last = (int)(mid % 10), tail_zero = mid_exact;
    amax /= 10;
    amin = (amin + 9) / 10;
    mid /= 10;
    /* Four at a time first: short values such as 0.5 or 0.125 drop eight
     * digits.  Any multiple of 10^4 is one of 10, so this finds the same j. */
    while (amax / 10000 >= (amin + 9999) / 10000) {
        uint32_t r = (uint32_t)(mid % 10000);
        tail_zero = tail_zero && last == 0 && r % 1000 == 0;
        last = (int)(r / 1000);
        amax /= 10000;
        amin = (amin + 9999) / 10000;
        mid /= 10000;
        j += 4;
    }
    while (amax / 10 >= (amin + 9) / 10) {
        amax /= 10;
        amin = (amin + 9) / 10;
        tail_zero = tail_zero && last == 0;
        last = (int)(mid % 10);
        mid /= 10;
        j++;
    }
    int up = last > 5 || (last == 5 && (!tail_zero || (mid & 1)));
    uint64_t d = mid + (uint64_t)up;
    /* The nearest may fall outside (narrow lower half at a power of two);
     * then its neighbour is inside, because some candidate is. */
    if (d > amax)
        d = mid;
    else if (d < amin)
        d = mid + 1;
    *exp10 = k + j;
    return (uint32_t)d;
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Digits of d (0 < d < 10^9) into dig[0..nd-1]; returns nd. */
static ALWAYS_INLINE int put_digits(uint32_t d, char *dig)
{
    int nd = 1 + (d >= 10) + (d >= 100) + (d >= 1000) + (d >= 10000) + (d >= 100000) +
             (d >= 1000000) + (d >= 10000000) + (d >= 100000000);
    char *p = dig + nd;
    while (d >= 100) {
        uint32_t r = d % 100;
        d /= 100;
        p -= 2;
        memcpy(p, digit_pairs + 2 * r, 2);
    }
    if (d >= 10) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * d, 2);
    } else {
        p[-1] = (char)('0' + d);
    }
    return nd;
}

/* Lays out the nd (<= 9) digits in dig with scientific exponent E the way
 * Python's repr does: fixed notation for -4 <= E < 16, else d.ddde+XX.
 * Copies are fixed-size (dig holds 24 bytes, p has room up to 26 bytes
 * ahead within the MFS_F32_BUF buffer) so no variable-length memcpy is
 * called; bytes past the returned end are scratch. */
static ALWAYS_INLINE char *layout(char *p, const char *dig, int nd, int E)
{
    if (E >= -4 && E < 16) {
        if (E < 0) { /* 0.000ddd */
            memcpy(p, "0.000000", 8);
            memcpy(p + 1 - E, dig, 16);
            return p + 1 - E + nd;
        }
        if (E >= nd - 1) { /* ddd000.0 */
            memcpy(p, dig, 16);
            memset(p + nd, '0', 16);
            p += E + 1;
            memcpy(p, ".0", 2);
            return p + 2;
        }
        memcpy(p, dig, 16); /* dd.ddd */
        memcpy(p + E + 2, dig + E + 1, 8);
        p[E + 1] = '.';
        return p + nd + 1;
    }
    p[0] = dig[0];
    if (nd > 1) {
        p[1] = '.';
        memcpy(p + 2, dig + 1, 8);
        p += nd + 1;
    } else {
        p += 1;
    }
    int a = E < 0 ? -E : E;
    p[0] = 'e';
    p[1] = E < 0 ? '-' : '+';
    memcpy(p + 2, digit_pairs + 2 * a, 2);
    return p + 4;
}

size_t mfs_fmt_f32(float x, char *buf)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    uint32_t frac = bits & 0x7fffffu, bexp = (bits >> 23) & 0xffu;
    char *p = buf;

    if (bexp == 0xff) {
        const char *s = frac ? "nan" : (bits >> 31) ? "-inf" : "inf";
        size_t n = strlen(s);
        memcpy(buf, s, n + 1);
        return n;
    }
    if (bits >> 31)
        *p++ = '-';
    if (bexp == 0 && frac == 0) {
        memcpy(p, "0.0", 4);
        return (size_t)(p - buf) + 3;
    }

    char dig[24];
    memset(dig, '0', sizeof dig);

    /* Whole numbers below 2^24 (common in model data) are their own
     * shortest text: every other candidate within half a unit is longer. */
    if (bexp >= 127 && bexp < 127 + 24 && ((frac << (bexp - 127)) & 0x7fffffu) == 0) {
        uint32_t n = (frac | 0x800000u) >> (150 - bexp);
        int nd = put_digits(n, dig);
        p = layout(p, dig, nd, nd - 1);
        *p = '\0';
        return (size_t)(p - buf);
    }

    uint32_t c;
    int q, irregular;
    if (bexp == 0) { /* subnormal */
        c = frac;
        q = 1 - 150;
        irregular = 0;
    } else {
        c = frac | 0x800000u;
        q = (int)bexp - 150;
        irregular = frac == 0 && bexp > 1;
    }
    int exp10;
    uint32_t d = shortest(c, q, irregular, &exp10);

    int nd = put_digits(d, dig);
    p = layout(p, dig, nd, exp10 + nd - 1);
    *p = '\0';
    return (size_t)(p - buf);
}

/* The slow-remote rule (src/remote/pace.h): a rate from real transfers,
 * "convert" only when clearly faster, and a verdict that is measured again
 * rather than kept for good. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../src/remote/pace.h" /* private to src/remote */

#define S 1000000000LL

static void no_rate_no_verdict(void **state)
{
    (void)state;
    mfs_pace p;
    memset(&p, 0, sizeof p);
    double est = -1;
    assert_int_equal(mfs_pace_judge(&p, 100 << 20, 10, 0, &est), MFS_PACE_FETCH);
    assert_true(est == 0);
    /* small transfers measure the round trip, not the link: not counted */
    mfs_pace_note(&p, 1000, 1 * S, 1 * S);
    assert_int_equal(p.n, 0);
    assert_true(mfs_pace_rate(&p) == 0);
}

static void rate_over_the_samples(void **state)
{
    (void)state;
    mfs_pace p;
    memset(&p, 0, sizeof p);
    mfs_pace_note(&p, 4 << 20, 1 * S, 1 * S);  /* 4 MiB in 1 s */
    mfs_pace_note(&p, 2 << 20, 3 * S, 4 * S);  /* 2 MiB in 3 s */
    assert_true(mfs_pace_rate(&p) == (double)(6 << 20) / 4.0);
    /* the window keeps the last MFS_PACE_SAMPLES: fast ones push the slow out */
    for (int i = 0; i < MFS_PACE_SAMPLES; i++)
        mfs_pace_note(&p, 8 << 20, S, (5 + i) * S);
    assert_int_equal(p.n, MFS_PACE_SAMPLES);
    assert_true(mfs_pace_rate(&p) == (double)(8 << 20));
}

static void clearly_slower_converts(void **state)
{
    (void)state;
    mfs_pace p;
    memset(&p, 0, sizeof p);
    mfs_pace_note(&p, 1 << 20, 1 * S, 10 * S); /* 1 MiB/s */
    double est;
    /* 4 MiB: 4 s to fetch */
    assert_int_equal(mfs_pace_judge(&p, 4 << 20, 5000, 11 * S, &est), MFS_PACE_FETCH);
    assert_true(est == 4.0);
    assert_int_equal(mfs_pace_judge(&p, 4 << 20, 3000, 11 * S, NULL), MFS_PACE_SLOWER);
    assert_int_equal(mfs_pace_judge(&p, 4 << 20, 2000, 11 * S, NULL), MFS_PACE_SLOWER);
    assert_int_equal(mfs_pace_judge(&p, 4 << 20, 1999, 11 * S, NULL), MFS_PACE_CONVERT);
    /* no conversion time known: fetched */
    assert_int_equal(mfs_pace_judge(&p, 4 << 20, 0, 11 * S, NULL), MFS_PACE_FETCH);
}

static void slow_verdict_measured_again(void **state)
{
    (void)state;
    mfs_pace p;
    memset(&p, 0, sizeof p);
    mfs_pace_note(&p, 1 << 20, 10 * S, 10 * S); /* a slow moment: 100 KiB/s */
    assert_int_equal(mfs_pace_judge(&p, 8 << 20, 1000, 20 * S, NULL), MFS_PACE_CONVERT);
    /* a minute after the newest sample: fetch once more, to measure */
    assert_int_equal(mfs_pace_judge(&p, 8 << 20, 1000, (10 + MFS_PACE_PROBE_S) * S, NULL),
                     MFS_PACE_PROBE);
    /* the probe ran fast: the slow moment is outweighed, fetched again */
    for (int i = 0; i < 4; i++)
        mfs_pace_note(&p, 64 << 20, S / 2, (71 + i) * S);
    assert_int_equal(mfs_pace_judge(&p, 8 << 20, 1000, 75 * S, NULL), MFS_PACE_FETCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_rate_no_verdict),
        cmocka_unit_test(rate_over_the_samples),
        cmocka_unit_test(clearly_slower_converts),
        cmocka_unit_test(slow_verdict_measured_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The neighbour search behind smooth normals and tangents (src/import/near.c)
 * against a brute-force reference: every vertex tested with SpatialSort's
 * rule (key within [d - r, d + r), float distance squared below r * r),
 * sorted by (key, index).  The same vertices in the same order, or the
 * normals' float sums, and so the views' bytes, would change. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/import/near.h"

static uint64_t rng = 0x243F6A8885A308D3ull;

static double uniform(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static const float *ref_keys;

static int cmp_ref(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    float x = ref_keys[i], y = ref_keys[j];
    if (x != y)
        return x < y ? -1 : 1;
    return (i > j) - (i < j);
}

/* Every vertex, one by one: the reference answer for a query at vertex q. */
static uint32_t brute(const mfs_near *f, uint32_t q, uint32_t *out)
{
    const float *p = f->pos[q];
    float d = f->proj[q], lo = d - f->r, hi = d + f->r, r2 = f->r * f->r;
    uint32_t k = 0;
    for (uint32_t j = 0; j < f->n; j++) {
        const float *v = f->pos[j];
        float dx = v[0] - p[0], dy = v[1] - p[1], dz = v[2] - p[2];
        if (f->proj[j] >= lo && f->proj[j] < hi && dx * dx + dy * dy + dz * dz < r2)
            out[k++] = j;
    }
    ref_keys = f->proj;
    qsort(out, k, sizeof *out, cmp_ref);
    return k;
}

/* Checks every vertex against the reference, and `extra` random points
 * around the box against SpatialSort's own scan; the total found, for the
 * caller to check the case is not vacuous.  *grid says which path ran. */
static uint64_t check_all(const float (*pos)[3], uint32_t n, float r, int extra, int *grid)
{
    mfs_near f;
    assert_int_equal(mfs_near_init(&f, pos, n, r), 0);
    *grid = f.grid;
    uint32_t *a = malloc(sizeof *a * (n ? n : 1)), *b = malloc(sizeof *b * (n ? n : 1));
    assert_non_null(a);
    assert_non_null(b);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ka = mfs_near_find(&f, pos[i], a), kb = brute(&f, i, b);
        assert_int_equal(ka, kb);
        assert_memory_equal(a, b, sizeof *a * ka);
        total += ka;
    }
    for (int t = 0; t < extra && n; t++) {
        const float *base = pos[(uint32_t)(uniform() * n)];
        float p[3];
        for (int k = 0; k < 3; k++)
            p[k] = base[k] + (float)((uniform() * 2 - 1) * 1.5 * r);
        uint32_t ka = mfs_near_find(&f, p, a), kb = mfs_near_find_sorted(&f, p, b);
        assert_int_equal(ka, kb);
        assert_memory_equal(a, b, sizeof *a * ka);
    }
    free(a);
    free(b);
    mfs_near_free(&f);
    return total;
}

static float diag_eps(const float (*pos)[3], uint32_t n)
{
    float lo[3], hi[3];
    memcpy(lo, pos[0], sizeof lo);
    memcpy(hi, pos[0], sizeof hi);
    for (uint32_t i = 1; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = pos[i][k] < lo[k] ? pos[i][k] : lo[k];
            hi[k] = pos[i][k] > hi[k] ? pos[i][k] : hi[k];
        }
    float dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
    return sqrtf(dx * dx + dy * dy + dz * dz) * 1e-4f;
}

/* Random clusters: a few vertices within about r of each other, as an
 * unwelded mesh's corners are, with radii from the importer's own (1e-4 of
 * the diagonal) to one that finds dozens. */
static void test_random(void **state)
{
    (void)state;
    enum { N = 4000 };
    float (*pos)[3] = malloc(sizeof *pos * N);
    assert_non_null(pos);
    for (int round = 0; round < 4; round++) {
        double spread = round == 3 ? 0.5 : 1e-4;
        for (uint32_t i = 0; i < N; i++) {
            if (i % 4 == 0 || round == 3)
                for (int k = 0; k < 3; k++)
                    pos[i][k] = (float)(uniform() * 10 - 5);
            else
                for (int k = 0; k < 3; k++)
                    pos[i][k] = pos[i - 1][k] + (float)((uniform() * 2 - 1) * spread * 10);
        }
        float r = diag_eps((const float (*)[3])pos, N) * (round == 2 ? 100.0f : round == 3 ? 300.0f : 1.0f);
        int grid;
        uint64_t total = check_all((const float (*)[3])pos, N, r, 2000, &grid);
        assert_int_equal(grid, 1);
        assert_true(total > N); /* some vertex found another */
    }
    free(pos);
}

/* Coincident vertices: each finds all copies (itself included); a mesh of
 * one position has a zero radius and finds nothing, as in assimp. */
static void test_coincident(void **state)
{
    (void)state;
    enum { N = 600 };
    float (*pos)[3] = malloc(sizeof *pos * N);
    assert_non_null(pos);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t c = i % 100; /* 6 copies of 100 positions */
        pos[i][0] = (float)(c % 10), pos[i][1] = (float)(c / 10), pos[i][2] = 0.25f;
    }
    float r = diag_eps((const float (*)[3])pos, N);
    mfs_near f;
    uint32_t out[N];
    assert_int_equal(mfs_near_init(&f, (const float (*)[3])pos, N, r), 0);
    assert_int_equal(f.grid, 1);
    assert_int_equal(mfs_near_find(&f, pos[7], out), 6);
    for (uint32_t j = 0; j < 6; j++)
        assert_int_equal(out[j], 7 + 100 * j); /* equal keys: index order */
    mfs_near_free(&f);
    int grid;
    assert_int_equal(check_all((const float (*)[3])pos, N, r, 500, &grid), 6 * N);

    for (uint32_t i = 0; i < N; i++)
        pos[i][0] = pos[i][1] = pos[i][2] = 3.5f;
    r = diag_eps((const float (*)[3])pos, N);
    assert_true(r == 0.0f);
    assert_int_equal(check_all((const float (*)[3])pos, N, r, 100, &grid), 0);
    free(pos);
}

/* Vertices on and around cell boundaries: with r = 512 and a vertex at the
 * origin a cell is exactly 2050 wide (4r + 2^-10), and vertices sit on its
 * multiples, on its quarter lines (where the search starts or stops looking
 * at a neighbour cell), at r, just under r and just over it from them. */
static void test_cell_boundaries(void **state)
{
    (void)state;
    static const float off[] = {-513, -512.5f, -512, -1, 0, 1, 511.5f, 512, 512.5f, 513, 1024, 1537.5f, 1538};
    enum { M = 4, O = sizeof off / sizeof off[0] };
    float (*pos)[3] = malloc(sizeof *pos * (M * O * 3 + 1));
    assert_non_null(pos);
    uint32_t n = 0;
    for (int m = 0; m < M; m++)
        for (int o = 0; o < O; o++)
            for (int axis = 0; axis < 3; axis++) {
                float c = 2050.0f * (float)(m + 1) + off[o];
                pos[n][0] = pos[n][1] = pos[n][2] = 2050.0f;
                pos[n][axis] = c;
                n++;
            }
    pos[n][0] = pos[n][1] = pos[n][2] = 0.0f;
    n++;
    int grid;
    uint64_t total = check_all((const float (*)[3])pos, n, 512.0f, 3000, &grid);
    assert_int_equal(grid, 1);
    assert_true(total > n);
    /* strictly closer: from (2050, 2050, 2050), the vertex 511.5 away is
     * found and the one exactly 512 away is not */
    mfs_near f;
    uint32_t out[M * O * 3 + 1], at = 4 * 3, near = 6 * 3, far = 7 * 3; /* m = 0, axis x */
    assert_true(pos[at][0] == 2050.0f && pos[near][0] == 2561.5f && pos[far][0] == 2562.0f);
    assert_int_equal(mfs_near_init(&f, (const float (*)[3])pos, n, 512.0f), 0);
    uint32_t k = mfs_near_find(&f, pos[at], out), saw_near = 0, saw_far = 0;
    for (uint32_t j = 0; j < k; j++)
        saw_near |= out[j] == near, saw_far |= out[j] == far;
    assert_true(saw_near);
    assert_false(saw_far);
    mfs_near_free(&f);
    free(pos);
}

/* Huge and tiny coordinates, a radius far below the extent (too many
 * cells: SpatialSort's scan answers) and non-finite radii. */
static void test_magnitudes(void **state)
{
    (void)state;
    enum { N = 1500 };
    float (*pos)[3] = malloc(sizeof *pos * N);
    assert_non_null(pos);
    /* beyond 1e19 r * r overflows and only vertices that are nearly
     * equal are found; below 1e-19 it underflows to nothing found */
    static const double scales[] = {1e18, 1e-18, 1e30, 1e-30, 1e-38};
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        for (uint32_t i = 0; i < N; i++)
            for (int k = 0; k < 3; k++)
                pos[i][k] = i % 3 ? pos[i - 1][k] + (float)(uniform() * 1e-4 * scales[s])
                                  : (float)((uniform() - 0.5) * scales[s]);
        int grid;
        float r = diag_eps((const float (*)[3])pos, N);
        uint64_t total = check_all((const float (*)[3])pos, N, r, 500, &grid);
        if (scales[s] == 1e18 || scales[s] == 1e-18)
            assert_true(total > N);
        /* 1e30: the diagonal's float squares overflow, an infinite radius */
        assert_int_equal(grid, r > 0 && isfinite(r));
        check_all((const float (*)[3])pos, N, r * 1e-9f, 200, &grid);
        if (r * 1e-9f > 0)
            assert_int_equal(grid, 0);
    }
    /* a diagonal beyond FLT_MAX: an infinite radius */
    for (uint32_t i = 0; i < N; i++)
        for (int k = 0; k < 3; k++)
            pos[i][k] = (float)((uniform() - 0.5) * 6e38);
    int grid;
    float r = diag_eps((const float (*)[3])pos, N);
    assert_true(isinf(r));
    check_all((const float (*)[3])pos, N, r, 100, &grid);
    assert_int_equal(grid, 0);
    free(pos);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_coincident),
        cmocka_unit_test(test_cell_boundaries),
        cmocka_unit_test(test_magnitudes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

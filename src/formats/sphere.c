/* The bounding sphere of .sph (docs/formats/sph.md): Ritter's method in
 * double precision, then a radius measured from the centre as stored and
 * grown an ulp at a time until every float containment test a reader might
 * run passes (see sphere.h). */
#include <math.h>

#include "sphere.h"

static double dist2(const float *q, const double c[3])
{
    double dx = (double)q[0] - c[0], dy = (double)q[1] - c[1], dz = (double)q[2] - c[2];
    return dx * dx + dy * dy + dz * dz;
}

static uint32_t farthest(const float *p, size_t stride, uint32_t n, const float *from)
{
    double c[3] = {from[0], from[1], from[2]}, best = -1;
    uint32_t bi = 0;
    for (uint32_t i = 0; i < n; i++) {
        double d = dist2(p + i * stride, c);
        if (d > best) {
            best = d;
            bi = i;
        }
    }
    return bi;
}

/* Ritter (1990) in the farthest-point form: a point, the point y farthest
 * from it, the point z farthest from y; start with the sphere on y-z and
 * grow it towards every point still outside. */
static void ritter(const float *p, size_t stride, uint32_t n, double c[3])
{
    const float *y = p + farthest(p, stride, n, p) * stride;
    const float *z = p + farthest(p, stride, n, y) * stride;
    for (int k = 0; k < 3; k++)
        c[k] = ((double)y[k] + z[k]) * 0.5;
    /* r2 kept squared so that points exactly on the first sphere (cube
     * corners) compare equal and do not nudge the centre. */
    double r2 = dist2(y, c);
    for (uint32_t i = 0; i < n; i++) {
        const float *q = p + i * stride;
        double d2 = dist2(q, c);
        if (d2 <= r2)
            continue;
        double d = sqrt(d2), r = sqrt(r2), nr = (r + d) * 0.5, k = (nr - r) / d;
        for (int j = 0; j < 3; j++)
            c[j] += ((double)q[j] - c[j]) * k;
        r2 = nr * nr;
    }
}

int mfs_runtime_sphere_contains(const float c[3], float r, const float q[3])
{
    /* Readers compute |q - c| in float in some order; accept only if every
     * summation order passes both as d^2 <= r^2 and as sqrt(d^2) <= r, and
     * the (near exact) double distance does too. */
    float dx = q[0] - c[0], dy = q[1] - c[1], dz = q[2] - c[2];
    float xx = dx * dx, yy = dy * dy, zz = dz * dz, rr = r * r;
    float s[3] = {(xx + yy) + zz, (xx + zz) + yy, (yy + zz) + xx};
    for (int i = 0; i < 3; i++)
        if (s[i] > rr || sqrtf(s[i]) > r)
            return 0;
    double dc[3] = {c[0], c[1], c[2]};
    return dist2(q, dc) <= (double)r * r;
}

void mfs_runtime_sphere(const float *p, size_t stride, uint32_t n, float center[3],
                        float *radius)
{
    center[0] = center[1] = center[2] = 0.0f;
    *radius = 0.0f;
    if (n == 0)
        return;
    /* A reader squares distances in float: past ~1.8e19 they overflow, and
     * no finite radius passes its test.  Such a model gets an infinite
     * radius, which the .sph writer refuses, rather than a loop stepping
     * through every float up to infinity. */
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            if (!(fabsf(p[i * stride + k]) <= MFS_RT_SPHERE_MAX_COORD)) {
                *radius = INFINITY;
                return;
            }
    double c[3];
    ritter(p, stride, n, c);
    for (int k = 0; k < 3; k++)
        center[k] = (float)c[k];

    /* The radius is measured from the centre as stored (float), not taken
     * from Ritter's double radius, so rounding the centre cannot leave a
     * vertex out.  The 2^-40 margin covers the double rounding. */
    double dc[3] = {center[0], center[1], center[2]}, m2 = 0;
    for (uint32_t i = 0; i < n; i++) {
        double d2 = dist2(p + i * stride, dc);
        if (d2 > m2)
            m2 = d2;
    }
    double need = sqrt(m2) * (1.0 + 0x1p-40);
    float r = (float)need;
    if ((double)r < need)
        r = nextafterf(r, INFINITY);

    /* Float tests can still fail by an ulp at the surface.  Points well
     * inside (relative margin 2^-20, far above float rounding) skip them. */
    double safe2 = (double)r * r * (1.0 - 0x1p-20);
    int fast = r > 1e-15f;
    for (uint32_t i = 0; i < n; i++) {
        const float *q = p + i * stride;
        if (fast && dist2(q, dc) <= safe2)
            continue;
        while (!mfs_runtime_sphere_contains(center, r, q)) {
            r = nextafterf(r, INFINITY);
            safe2 = (double)r * r * (1.0 - 0x1p-20);
        }
    }
    *radius = r;
}


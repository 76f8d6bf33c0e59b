/* 4x4 matrix helpers, column-vector convention, row-major storage. */
#include <math.h>
#include <string.h>

#include "meshfs/scene.h"

void mfs_mat4_identity(mfs_mat4 *m)
{
    memset(m, 0, sizeof *m);
    m->m[0] = m->m[5] = m->m[10] = m->m[15] = 1.0f;
}

int mfs_mat4_is_identity(const mfs_mat4 *m)
{
    for (int i = 0; i < 16; i++)
        if (m->m[i] != ((i % 5 == 0) ? 1.0f : 0.0f))
            return 0;
    return 1;
}

void mfs_mat4_mul(mfs_mat4 *r, const mfs_mat4 *a, const mfs_mat4 *b)
{
    mfs_mat4 t;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += (double)a->m[i * 4 + k] * b->m[k * 4 + j];
            t.m[i * 4 + j] = (float)acc;
        }
    *r = t;
}

void mfs_mat4_transpose(mfs_mat4 *r, const mfs_mat4 *a)
{
    mfs_mat4 t;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            t.m[j * 4 + i] = a->m[i * 4 + j];
    *r = t;
}

int mfs_mat4_invert(mfs_mat4 *r, const mfs_mat4 *a)
{
    /* Gauss-Jordan with partial pivoting, in double. */
    double m[4][8];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            m[i][j] = a->m[i * 4 + j];
            m[i][j + 4] = (i == j);
        }
    for (int c = 0; c < 4; c++) {
        int p = c;
        for (int i = c + 1; i < 4; i++)
            if (fabs(m[i][c]) > fabs(m[p][c]))
                p = i;
        if (fabs(m[p][c]) < 1e-30)
            return -1;
        if (p != c)
            for (int j = 0; j < 8; j++) {
                double t = m[c][j];
                m[c][j] = m[p][j];
                m[p][j] = t;
            }
        double d = m[c][c];
        for (int j = 0; j < 8; j++)
            m[c][j] /= d;
        for (int i = 0; i < 4; i++)
            if (i != c && m[i][c] != 0) {
                double f = m[i][c];
                for (int j = 0; j < 8; j++)
                    m[i][j] -= f * m[c][j];
            }
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            r->m[i * 4 + j] = (float)m[i][j + 4];
    return 0;
}

void mfs_mat4_point(const mfs_mat4 *m, const float p[3], float out[3])
{
    const float *a = m->m;
    float x = p[0], y = p[1], z = p[2];
    out[0] = a[0] * x + a[1] * y + a[2] * z + a[3];
    out[1] = a[4] * x + a[5] * y + a[6] * z + a[7];
    out[2] = a[8] * x + a[9] * y + a[10] * z + a[11];
}

void mfs_mat4_vector(const mfs_mat4 *m, const float v[3], float out[3])
{
    const float *a = m->m;
    float x = v[0], y = v[1], z = v[2];
    out[0] = a[0] * x + a[1] * y + a[2] * z;
    out[1] = a[4] * x + a[5] * y + a[6] * z;
    out[2] = a[8] * x + a[9] * y + a[10] * z;
}

float mfs_mat4_det3(const mfs_mat4 *m)
{
    const float *a = m->m;
    return a[0] * (a[5] * a[10] - a[6] * a[9]) - a[1] * (a[4] * a[10] - a[6] * a[8]) +
           a[2] * (a[4] * a[9] - a[5] * a[8]);
}

void mfs_mat4_normal_matrix(mfs_mat4 *r, const mfs_mat4 *m)
{
    mfs_mat4 up = *m, inv;
    up.m[3] = up.m[7] = up.m[11] = 0;
    up.m[12] = up.m[13] = up.m[14] = 0;
    up.m[15] = 1;
    if (mfs_mat4_invert(&inv, &up) < 0) {
        *r = up;
        return;
    }
    mfs_mat4_transpose(r, &inv);
}

void mfs_normalize3(float v[3])
{
    double l = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
    if (l > 0) {
        v[0] = (float)(v[0] / l);
        v[1] = (float)(v[1] / l);
        v[2] = (float)(v[2] / l);
    }
}

void mfs_mat4_compose(mfs_mat4 *r, const float t[3], const float q[4], const float s[3])
{
    double x = q[0], y = q[1], z = q[2], w = q[3];
    double rm[9] = {
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w),     2 * (x * z + y * w),
        2 * (x * y + z * w),     1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w),     2 * (y * z + x * w),     1 - 2 * (x * x + y * y),
    };
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            r->m[i * 4 + j] = (float)(rm[i * 3 + j] * s[j]);
        r->m[i * 4 + 3] = t[i];
    }
    r->m[12] = r->m[13] = r->m[14] = 0;
    r->m[15] = 1;
}

int mfs_mat4_decompose(const mfs_mat4 *m, float t[3], float q[4], float s[3])
{
    const float *a = m->m;
    t[0] = a[3];
    t[1] = a[7];
    t[2] = a[11];
    double col[3][3];
    for (int j = 0; j < 3; j++) {
        double l = 0;
        for (int i = 0; i < 3; i++)
            l += (double)a[i * 4 + j] * a[i * 4 + j];
        l = sqrt(l);
        if (l < 1e-30)
            return -1;
        s[j] = (float)l;
        for (int i = 0; i < 3; i++)
            col[j][i] = a[i * 4 + j] / l;
    }
    if (mfs_mat4_det3(m) < 0) { /* a mirror: carry it in one scale sign */
        s[0] = -s[0];
        for (int i = 0; i < 3; i++)
            col[0][i] = -col[0][i];
    }
    /* rotation matrix R[i][j] = col[j][i] -> quaternion (Shepperd) */
    double r00 = col[0][0], r11 = col[1][1], r22 = col[2][2];
    double tr = r00 + r11 + r22, x, y, z, w;
    if (tr > 0) {
        double k = sqrt(tr + 1.0) * 2;
        w = 0.25 * k;
        x = (col[1][2] - col[2][1]) / k;
        y = (col[2][0] - col[0][2]) / k;
        z = (col[0][1] - col[1][0]) / k;
    } else if (r00 > r11 && r00 > r22) {
        double k = sqrt(1.0 + r00 - r11 - r22) * 2;
        w = (col[1][2] - col[2][1]) / k;
        x = 0.25 * k;
        y = (col[1][0] + col[0][1]) / k;
        z = (col[2][0] + col[0][2]) / k;
    } else if (r11 > r22) {
        double k = sqrt(1.0 + r11 - r00 - r22) * 2;
        w = (col[2][0] - col[0][2]) / k;
        x = (col[1][0] + col[0][1]) / k;
        y = 0.25 * k;
        z = (col[2][1] + col[1][2]) / k;
    } else {
        double k = sqrt(1.0 + r22 - r00 - r11) * 2;
        w = (col[0][1] - col[1][0]) / k;
        x = (col[2][0] + col[0][2]) / k;
        y = (col[2][1] + col[1][2]) / k;
        z = 0.25 * k;
    }
    double l = sqrt(x * x + y * y + z * z + w * w);
    q[0] = (float)(x / l);
    q[1] = (float)(y / l);
    q[2] = (float)(z / l);
    q[3] = (float)(w / l);
    return 0;
}

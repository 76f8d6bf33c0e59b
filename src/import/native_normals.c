/* Normals and tangents where a natively read mesh has none, computed the way
 * assimp 5.2.5's GenVertexNormalsProcess and CalcTangentsProcess compute them
 * for the assimp path (same face rule, same position epsilon, same
 * smoothing groups, same float arithmetic), so that a model's views do not
 * depend on which importer read it.  Written from assimp's documented
 * behaviour and checked against it by tests/integration/test_native.py.
 *
 * Both steps find "vertices at the same position" as assimp's SpatialSort
 * does: every vertex closer than epsilon = 1e-4 x the diagonal of the mesh's
 * box (strictly closer, so a mesh of one point has no neighbours at all),
 * in SpatialSort's order (near.c finds them through a hash grid). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "native_common.h"
#include "near.h"

static float position_epsilon(const mfs_mesh *m)
{
    if (!m->n_vertices)
        return 0;
    float lo[3], hi[3];
    memcpy(lo, m->positions[0], sizeof lo);
    memcpy(hi, m->positions[0], sizeof hi);
    for (uint32_t i = 1; i < m->n_vertices; i++)
        for (int k = 0; k < 3; k++) {
            float v = m->positions[i][k];
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
    float dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
    return sqrtf(dx * dx + dy * dy + dz * dz) * 1e-4f;
}

/* assimp's aiVector3D::Normalize and NormalizeSafe (the same in 5.2.5): a
 * zero vector stays zero, others are multiplied by the reciprocal of the
 * length (not divided: the last bit matters for welding). */
static void normalize_safe(float v[3])
{
    float l = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (l > 0) {
        float inv = 1.0f / l;
        v[0] *= inv;
        v[1] *= inv;
        v[2] *= inv;
    }
}

static void sub(float r[3], const float a[3], const float b[3])
{
    r[0] = a[0] - b[0];
    r[1] = a[1] - b[1];
    r[2] = a[2] - b[2];
}

static float dot(const float a[3], const float b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross(float r[3], const float a[3], const float b[3])
{
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

int mfs_gen_smooth_normals(mfs_mesh *m, mfs_err *err)
{
    if (m->normals || m->prim != MFS_PRIM_TRIANGLES || !m->n_vertices)
        return 0;
    uint32_t n = m->n_vertices;
    float (*face_n)[3] = calloc(n, sizeof *face_n);
    float (*out)[3] = calloc(n, sizeof *out);
    uint32_t *found = malloc(sizeof *found * n);
    unsigned char *had = calloc(n, 1);
    mfs_near f;
    if (!face_n || !out || !found || !had ||
        mfs_near_init(&f, (const float (*)[3])m->positions, n, position_epsilon(m)) < 0) {
        free(face_n);
        free(out);
        free(found);
        free(had);
        return mfs_errf(err, "out of memory");
    }
    /* each face's normal, stored at its corners (the last face wins) */
    for (uint32_t t = 0; t < m->n_faces; t++) {
        const uint32_t *ix = &m->indices[3 * t];
        float e1[3], e2[3], nr[3];
        sub(e1, m->positions[ix[1]], m->positions[ix[0]]);
        sub(e2, m->positions[ix[2]], m->positions[ix[0]]);
        cross(nr, e1, e2);
        normalize_safe(nr);
        for (int k = 0; k < 3; k++)
            memcpy(face_n[ix[k]], nr, sizeof nr);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (had[i])
            continue;
        uint32_t k = mfs_near_find(&f, m->positions[i], found);
        float sum[3] = {0, 0, 0};
        for (uint32_t j = 0; j < k; j++)
            if (!isnan(face_n[found[j]][0]))
                for (int c = 0; c < 3; c++)
                    sum[c] += face_n[found[j]][c];
        normalize_safe(sum);
        for (uint32_t j = 0; j < k; j++) {
            memcpy(out[found[j]], sum, sizeof sum);
            had[found[j]] = 1;
        }
    }
    mfs_near_free(&f);
    free(face_n);
    free(found);
    free(had);
    m->normals = out;
    return 0;
}

int mfs_calc_tangents(mfs_mesh *m, mfs_err *err)
{
    if (m->tangents || m->prim != MFS_PRIM_TRIANGLES || !m->normals || !m->uv[0] || !m->n_vertices)
        return 0;
    uint32_t n = m->n_vertices;
    float (*tg)[3] = calloc(n, sizeof *tg);
    float (*bt)[3] = calloc(n, sizeof *bt);
    uint32_t *found = malloc(sizeof *found * n);
    uint32_t *close = malloc(sizeof *close * (n + 1));
    unsigned char *done = calloc(n, 1);
    mfs_near f;
    if (!tg || !bt || !found || !close || !done ||
        mfs_near_init(&f, (const float (*)[3])m->positions, n, position_epsilon(m)) < 0) {
        free(tg);
        free(bt);
        free(found);
        free(close);
        free(done);
        return mfs_errf(err, "out of memory");
    }
    const float (*pos)[3] = (const float (*)[3])m->positions;
    const float (*nor)[3] = (const float (*)[3])m->normals;
    const float (*uv)[2] = (const float (*)[2])m->uv[0];
    for (uint32_t t = 0; t < m->n_faces; t++) {
        const uint32_t *ix = &m->indices[3 * t];
        uint32_t p0 = ix[0], p1 = ix[1], p2 = ix[2];
        float v[3], w[3];
        sub(v, pos[p1], pos[p0]);
        sub(w, pos[p2], pos[p0]);
        float sx = uv[p1][0] - uv[p0][0], sy = uv[p1][1] - uv[p0][1];
        float tx = uv[p2][0] - uv[p0][0], ty = uv[p2][1] - uv[p0][1];
        float dir = (tx * sy - ty * sx) < 0.0f ? -1.0f : 1.0f;
        if (sx * ty == sy * tx) { /* no UV area: the default direction */
            sx = 0, sy = 1, tx = 1, ty = 0;
        }
        float tan[3], bit[3];
        for (int c = 0; c < 3; c++) {
            tan[c] = (w[c] * sy - v[c] * ty) * dir;
            bit[c] = (-w[c] * sx + v[c] * tx) * dir;
        }
        for (int b = 0; b < 3; b++) {
            uint32_t p = ix[b];
            const float *nn = nor[p];
            float lt[3], lb[3];
            float tn = dot(tan, nn);
            for (int c = 0; c < 3; c++)
                lt[c] = tan[c] - nn[c] * tn;
            float bn = dot(bit, nn), bl = dot(bit, lt);
            for (int c = 0; c < 3; c++)
                lb[c] = bit[c] - nn[c] * bn - lt[c] * bl;
            normalize_safe(lt);
            normalize_safe(lb);
            int bad_t = !isfinite(lt[0]) || !isfinite(lt[1]) || !isfinite(lt[2]);
            int bad_b = !isfinite(lb[0]) || !isfinite(lb[1]) || !isfinite(lb[2]);
            if (bad_t != bad_b) {
                if (bad_t) {
                    cross(lt, nn, lb);
                    normalize_safe(lt);
                } else {
                    cross(lb, lt, nn);
                    normalize_safe(lb);
                }
            }
            memcpy(tg[p], lt, sizeof lt);
            memcpy(bt[p], lb, sizeof lb);
        }
    }
    const float limit = cosf(45.0f * (float)M_PI / 180.0f), same_normal = 0.9999f;
    for (uint32_t a = 0; a < n; a++) {
        if (done[a])
            continue;
        uint32_t k = mfs_near_find(&f, pos[a], found), nc = 0;
        float on[3], ot[3], ob[3];
        memcpy(on, nor[a], sizeof on);
        memcpy(ot, tg[a], sizeof ot);
        memcpy(ob, bt[a], sizeof ob);
        close[nc++] = a; /* assimp counts the vertex itself twice: so do we */
        for (uint32_t j = 0; j < k; j++) {
            uint32_t idx = found[j];
            if (done[idx] || dot(nor[idx], on) < same_normal || dot(tg[idx], ot) < limit ||
                dot(bt[idx], ob) < limit)
                continue;
            close[nc++] = idx;
            done[idx] = 1;
        }
        float st[3] = {0, 0, 0}, sb[3] = {0, 0, 0};
        for (uint32_t j = 0; j < nc; j++)
            for (int c = 0; c < 3; c++) {
                st[c] += tg[close[j]][c];
                sb[c] += bt[close[j]][c];
            }
        normalize_safe(st);
        normalize_safe(sb);
        for (uint32_t j = 0; j < nc; j++) {
            memcpy(tg[close[j]], st, sizeof st);
            memcpy(bt[close[j]], sb, sizeof sb);
        }
    }
    mfs_near_free(&f);
    free(found);
    free(close);
    free(done);
    m->tangents = tg;
    m->bitangents = bt;
    return 0;
}

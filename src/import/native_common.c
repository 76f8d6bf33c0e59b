/* What every native import shares: a whole file read through the confined
 * file system, and the per-mesh and per-scene finishing that makes a native
 * scene the one assimp's post-processing makes (native_common.h). */
#include <math.h>
#include <string.h>

#include "native_common.h"
#include "weld.h"

int mfs_native_open(mfs_iofs *fs, const char *rel, mfs_native_file *f)
{
    memset(f, 0, sizeof *f);
    f->handle = mfs_iofs_view(fs, rel, &f->data, &f->size);
    return f->handle ? 0 : -1;
}

void mfs_native_close(mfs_iofs *fs, mfs_native_file *f)
{
    if (f->handle)
        mfs_iofs_unview(fs, f->handle);
    memset(f, 0, sizeof *f);
}

/* ---- what assimp's post-processing and scene copy do, per mesh ---- */

static void fix_normals(float (*nr)[3], uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        float *v = nr[i];
        double l = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
        if (!isfinite(l) || l < 1e-12) {
            v[0] = 0, v[1] = 1, v[2] = 0;
        } else {
            v[0] = (float)(v[0] / l), v[1] = (float)(v[1] / l), v[2] = (float)(v[2] / l);
        }
    }
}

static void fix_tangents(float (*t)[3], float (*b)[3], uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(t[i][0] + t[i][1] + t[i][2]) || !isfinite(b[i][0] + b[i][1] + b[i][2])) {
            t[i][0] = 1, t[i][1] = 0, t[i][2] = 0;
            b[i][0] = 0, b[i][1] = 0, b[i][2] = 1;
        }
}

static int finish_mesh(mfs_mesh *m, int tangents, int weld, mfs_err *err)
{
    if (mfs_gen_smooth_normals(m, err) < 0 || (tangents && mfs_calc_tangents(m, err) < 0) ||
        (weld ? mfs_weld_mesh(m, err) : mfs_drop_unused_vertices(m, err)) < 0)
        return -1;
    if (m->normals)
        fix_normals(m->normals, m->n_vertices);
    if (m->tangents)
        fix_tangents(m->tangents, m->bitangents, m->n_vertices);
    return mfs_mesh_normalise_weights(m, err);
}

int mfs_native_finish_mesh(mfs_mesh *m, int tangents, mfs_err *err)
{
    return finish_mesh(m, tangents, 1, err);
}

int mfs_native_finish_indexed_mesh(mfs_mesh *m, int tangents, mfs_err *err)
{
    return finish_mesh(m, tangents, 0, err);
}

int mfs_native_finish_scene(mfs_scene *s, mfs_err *err)
{
    if (s->n_meshes == 0)
        return mfs_errf(err, "%s", MFS_SCENE_NO_MESH);
    return mfs_scene_finish(s, err);
}

/* Which importer reads a model, and what every native import shares.
 *
 * glTF 2.0/glb and OBJ have small, fast, single-purpose parsers (cgltf and
 * fast_obj, from Debian's meshoptimizer source package); with importer=auto
 * they read those formats and assimp reads the rest.  A native parser that
 * fails, or meets something it does not support (glTF 1.0, Draco or
 * meshopt compression, extensions that change geometry, OBJ lines and
 * points), declines, and assimp reads the model as it always did: the native
 * path may only make a model faster to read, never refuse one assimp reads.
 * The exceptions are the importer's own rules, which hold whoever parses: a
 * file that leaves the source root, and a scene that fails validation. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "native.h"
#include "weld.h"

static char route[MFS_ERR_MAX] = "assimp";

const char *mfs_import_route(void)
{
    return route;
}

static void set_route(const char *fmt, ...) MFS_PRINTF(1, 2);
static void set_route(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(route, sizeof route, fmt, ap);
    va_end(ap);
}

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

static const char *ext_of(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    const char *dot = strrchr(slash ? slash : rel, '.');
    return dot ? dot + 1 : "";
}

static void forget_deps(mfs_iofs *fs)
{
    mfs_deps *d = fs->deps;
    for (uint32_t i = 0; i < d->n; i++)
        free(d->v[i].path);
    d->n = 0;
}

int mfs_native_try(mfs_iofs *fs, const char *rel, const mfs_import_opts *o, mfs_scene **out,
                   mfs_err *err)
{
    set_route("assimp");
    if (o && o->importer == MFS_IMPORTER_ASSIMP)
        return 1;
    const char *ext = ext_of(rel);
    int gltf = strcasecmp(ext, "gltf") == 0 || strcasecmp(ext, "glb") == 0;
    int obj = strcasecmp(ext, "obj") == 0;
    if (!gltf && !obj)
        return 1;
    char why[MFS_ERR_MAX] = "";
#ifdef MESHFS_HAVE_NATIVE
    int rc = gltf ? mfs_native_gltf(fs, rel, o, out, why, sizeof why, err)
                  : mfs_native_obj(fs, rel, o, out, why, sizeof why, err);
    if (rc == 0 && *out && mfs_native_finish_scene(*out, err) < 0) {
        mfs_scene_free(*out);
        *out = NULL;
        rc = -1;
    }
    if (rc <= 0) {
        set_route("native %s", gltf ? "gltf" : "obj");
        return rc;
    }
#else
    (void)out;
    (void)err;
    snprintf(why, sizeof why, "built without cgltf/fast_obj (scripts/fetch-meshoptimizer)");
#endif
    set_route("assimp (native declined: %s)", why);
    if (getenv("MESHFS_DEBUG"))
        fprintf(stderr, "meshfs: %s: native import declined (%s); assimp reads it\n", rel, why);
    forget_deps(fs);
    return 1;
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

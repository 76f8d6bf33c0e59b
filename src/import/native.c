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
#include "native_common.h"

static void set_route(mfs_iofs *fs, const char *fmt, ...) MFS_PRINTF(2, 3);
static void set_route(mfs_iofs *fs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fs->deps->route, sizeof fs->deps->route, fmt, ap);
    va_end(ap);
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
    set_route(fs, "assimp");
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
        set_route(fs, "native %s", gltf ? "gltf" : "obj");
        return rc;
    }
#else
    (void)out;
    (void)err;
    snprintf(why, sizeof why, "built without cgltf/fast_obj (scripts/fetch-meshoptimizer)");
#endif
    set_route(fs, "assimp (native declined: %s)", why);
    if (getenv("MESHFS_DEBUG"))
        fprintf(stderr, "meshfs: %s: native import declined (%s); assimp reads it\n", rel, why);
    forget_deps(fs);
    return 1;
}

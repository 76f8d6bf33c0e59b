/* mfs_import: the model's settings files, then the import, then the
 * settings applied to the scene (docs/settings.md).  The settings are read
 * first because they choose the importer and the frame; their inputs join
 * the import's after the model, where the cache keys them. */
#include <stdlib.h>
#include <string.h>

#include "convert_scene.h"
#include "meshfs/import.h"
#include "meshfs/settings.h"
#include "settings_apply.h"

/* mfs_deps_free lives with the report's codec in the core library
 * (convert/proto.c); the importer frees its own lists without reaching up. */
static void drop_deps(mfs_deps *d)
{
    for (uint32_t i = 0; i < d->n; i++)
        free(d->v[i].path);
    free(d->v);
    memset(d, 0, sizeof *d);
}

/* Moves every entry of from but its first (the model's place) to the end of
 * to; -1 out of memory (to is left as it was). */
static int append_after_model(mfs_deps *to, mfs_deps *from, mfs_err *err)
{
    if (from->n <= 1)
        return 0;
    uint32_t add = from->n - 1;
    if (to->n + add > to->cap) {
        uint32_t cap = to->n + add;
        mfs_dep *nv = realloc(to->v, sizeof *nv * cap);
        if (!nv)
            return mfs_errf(err, "out of memory");
        to->v = nv;
        to->cap = cap;
    }
    memcpy(to->v + to->n, from->v + 1, sizeof *from->v * add);
    to->n += add;
    from->n = 1; /* the moved paths belong to `to` now */
    return 0;
}

int mfs_import(const char *root, const char *relpath, const mfs_import_opts *o, mfs_scene **out,
               mfs_deps *deps, mfs_err *err)
{
    *out = NULL;
    mfs_settings *st = malloc(sizeof *st);
    if (!st)
        return mfs_errf(err, "out of memory");
    mfs_settings_init(st);
    mfs_deps sdeps = {0};
    int rc = mfs_import_read_settings(root, relpath, st, &sdeps, err);
    if (rc < 0) {
        /* remembered (or not) against the model and the settings read */
        drop_deps(deps);
        *deps = sdeps;
        memset(&sdeps, 0, sizeof sdeps);
        goto done;
    }
    mfs_import_opts io = o ? *o : (mfs_import_opts){0};
    mfs_import_settings_opts(st, &io);
    rc = mfs_import_scene(root, relpath, &io, out, deps, err);
    if (rc == 0 && mfs_import_apply_settings(*out, st, root, relpath, &io, deps, err) < 0) {
        mfs_scene_free(*out);
        *out = NULL;
        rc = -1;
    }
    /* the settings' inputs go after the model the import read first; a
     * model the import could not open has no list to join */
    if (deps->n && strcmp(deps->v[0].path, relpath) == 0 && append_after_model(deps, &sdeps, err) < 0 &&
        rc == 0) {
        mfs_scene_free(*out);
        *out = NULL;
        rc = -1;
    }
    if (rc == 0 && o && o->settings)
        *o->settings = *st;
done:
    drop_deps(&sdeps);
    free(st);
    return rc;
}

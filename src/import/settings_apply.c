/* Settings files in the worker (docs/settings.md): read beneath the root as
 * inputs of the model's views, and applied to the imported scene.
 *
 * Reading them here, through the same confined and recording file system
 * as the import, is what makes them inputs like a .mtl: each candidate path
 * is recorded found (with its hash) or absent, so the cache's key holds
 * them, and an edit, a new file or a removed one makes exactly the views
 * of the models they apply to again, in the mount, meshfs-convert and the
 * remote tier alike (docs/cache.md, "Absent inputs"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert_scene.h"
#include "iofs.h"
#include "settings_apply.h"
#include "texture.h"

/* mfs_deps_free lives with the report's codec in the core library
 * (convert/proto.c); the importer frees its own lists without reaching up. */
static void drop_deps(mfs_deps *d)
{
    for (uint32_t i = 0; i < d->n; i++)
        free(d->v[i].path);
    free(d->v);
    memset(d, 0, sizeof *d);
}

typedef struct read_ctx {
    mfs_iofs *fs;
} read_ctx;

static int read_one(void *ctx, const char *rel, char **text, size_t *len, unsigned *uid, mfs_err *err)
{
    read_ctx *c = ctx;
    const uint8_t *data;
    size_t size;
    int absent;
    struct aiFile *f = mfs_iofs_view_at_root(c->fs, rel, &data, &size, uid, &absent);
    if (!f) {
        if (absent)
            return 1;
        return mfs_errf(err, "cannot be read by the conversion (it runs as the model's owner)");
    }
    /* one byte more, so inih's reader and the checks may see a C string */
    *text = malloc(size + 1);
    if (!*text) {
        mfs_iofs_unview(c->fs, f);
        return mfs_errf(err, "out of memory");
    }
    memcpy(*text, data, size);
    (*text)[size] = 0;
    *len = size;
    mfs_iofs_unview(c->fs, f);
    return 0;
}

/* A failure is remembered against what it was made from, the model's bytes
 * first: the place held for it gets the real reading. */
static int read_model(mfs_iofs *fs, const char *rel, mfs_deps *deps)
{
    mfs_deps one = {0};
    mfs_deps *was = fs->deps;
    fs->deps = &one;
    const uint8_t *data;
    size_t size;
    struct aiFile *f = mfs_iofs_view(fs, rel, &data, &size);
    fs->deps = was;
    int ok = f && one.n == 1;
    if (f)
        mfs_iofs_unview(fs, f);
    if (ok) {
        deps->v[0].size = one.v[0].size;
        memcpy(deps->v[0].hash, one.v[0].hash, sizeof deps->v[0].hash);
    }
    drop_deps(&one);
    return ok ? 0 : -1;
}

int mfs_import_read_settings(const char *root, const char *rel, mfs_settings *st, mfs_deps *deps,
                             mfs_err *err)
{
    mfs_iofs fs;
    if (mfs_iofs_init(&fs, root, deps, err) < 0)
        return -1;
    int rc = -1;
    unsigned owner;
    if (mfs_iofs_set_model(&fs, rel, err) < 0)
        goto done;
    if (mfs_iofs_owner(&fs, rel, &owner) < 0) {
        /* the import will not open it either, and says why in its words */
        rc = 0;
        goto done;
    }
    /* the model's place first: the import reads it (settings found or
     * absent are recorded only after the model, import.h) */
    if (mfs_iofs_hold_model_place(&fs) < 0) {
        mfs_errf(err, "out of memory");
        goto done;
    }
    read_ctx c = {&fs};
    rc = mfs_settings_load(rel, owner, read_one, &c, st, err);
    if (rc < 0 && st->foreign_owner)
        deps->unkeyed = 1; /* an owner is not in the bytes: not remembered */
    if (rc < 0 && read_model(&fs, rel, deps) < 0)
        deps->model_unopened = 1; /* no reading of the model to key it by */
done:
    mfs_iofs_close(&fs);
    return rc;
}

void mfs_import_settings_opts(const mfs_settings *st, mfs_import_opts *o)
{
    if (st->set & MFS_SET_SOURCE_FRAME)
        o->source_frame = st->source_frame;
    if (st->set & MFS_SET_IMPORTER)
        o->importer = st->importer;
    if ((st->set & MFS_SET_NORMALS) && st->normals_compute) {
        o->normals_compute = 1;
        o->normals_angle = (float)st->normals_angle;
        o->importer = MFS_IMPORTER_ASSIMP; /* the native parsers have no angle */
    }
}

/* Rows of the turn that takes the source's up to +y and forward to +z; the
 * third axis is up x forward, so it is a rotation (never a mirror). */
static void turn(mfs_axis up, mfs_axis fwd, mfs_mat4 *r)
{
    float u[3] = {0, 0, 0}, f[3] = {0, 0, 0}, x[3];
    u[up.index] = (float)up.sign;
    f[fwd.index] = (float)fwd.sign;
    x[0] = u[1] * f[2] - u[2] * f[1];
    x[1] = u[2] * f[0] - u[0] * f[2];
    x[2] = u[0] * f[1] - u[1] * f[0];
    mfs_mat4_identity(r);
    for (int c = 0; c < 3; c++) {
        r->m[0 * 4 + c] = x[c];
        r->m[1 * 4 + c] = u[c];
        r->m[2 * 4 + c] = f[c];
    }
}

static int apply_frame(mfs_scene *s, const mfs_settings *st, mfs_err *err)
{
    mfs_axis up = st->up, fwd = st->forward;
    if ((st->set & MFS_SET_UP) && !(st->set & MFS_SET_FORWARD)) {
        /* forward follows: +z, or for a z up the convention of Z-up tools
         * (Blender, 3ds Max): front is -y (for -z up, +y) */
        fwd = up.index == 2 ? (mfs_axis){1, -up.sign} : (mfs_axis){2, 1};
    } else if (!(st->set & MFS_SET_UP) && (st->set & MFS_SET_FORWARD)) {
        up = fwd.index == 1 ? (mfs_axis){2, fwd.sign} : (mfs_axis){1, 1};
    }
    mfs_mat4 m;
    turn(up, fwd, &m);
    double k = st->scale * st->unit;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            m.m[r * 4 + c] = (float)(m.m[r * 4 + c] * k);
    return mfs_frame_apply(s, &m, err);
}

static int apply_texture(mfs_scene *s, const mfs_settings *st, mfs_iofs *fs, const char *rel,
                         const mfs_import_opts *o, mfs_err *err)
{
    if (!s->n_materials) {
        s->materials = calloc(1, sizeof *s->materials);
        if (!s->materials)
            return mfs_errf(err, "out of memory");
        s->n_materials = 1;
        s->materials[0].name = mfs_strdup("meshfs_settings");
        for (uint32_t i = 0; i < s->n_meshes; i++)
            s->meshes[i].material = 0;
    }
    for (uint32_t i = 0; i < s->n_materials; i++) {
        free(s->materials[i].textures[MFS_TEX_DIFFUSE]);
        s->materials[i].textures[MFS_TEX_DIFFUSE] = mfs_strdup(st->texture);
    }
    for (uint32_t i = 0; i < s->n_meshes; i++)
        if (s->meshes[i].material < 0)
            s->meshes[i].material = 0;
    free(s->image.pixels);
    free(s->image.source);
    free(s->image.note);
    memset(&s->image, 0, sizeof s->image);
    mfs_import_texture_from(s, NULL, 0, fs, rel, o);
    return 0;
}

/* A clip's end in the take's ticks: seconds at its rate, a frame as a tick
 * (the source's frames for FBX, Collada, MD5, X, BVH; docs/settings.md). */
static double ticks(const mfs_clip_time *t, const mfs_animation *an)
{
    return t->seconds ? t->value * an->ticks_per_second : t->value;
}

static int apply_clips(mfs_scene *s, const mfs_settings *st, mfs_err *err)
{
    const mfs_setting_origin *og = &st->origin[__builtin_ctz(MFS_SET_CLIPS)];
    if (!s->n_animations)
        return mfs_errf(err, "%s:%d: [clip] sections, but the model has no animation", og->file, og->line);
    uint32_t take = 0;
    if (st->set & MFS_SET_TAKE) {
        while (take < s->n_animations && strcmp(s->animations[take].name ? s->animations[take].name : "",
                                                st->take) != 0)
            take++;
        if (take == s->n_animations) {
            char names[256] = "";
            for (uint32_t a = 0; a < s->n_animations; a++) {
                size_t u = strlen(names);
                snprintf(names + u, sizeof names - u, "%s'%s'", a ? ", " : "",
                         s->animations[a].name ? s->animations[a].name : "");
            }
            const mfs_setting_origin *to = &st->origin[__builtin_ctz(MFS_SET_TAKE)];
            return mfs_errf(err, "%s:%d: take '%s' is not an animation of the model (it has %s)", to->file,
                            to->line, st->take, names);
        }
    }
    const mfs_animation *an = &s->animations[take];
    mfs_cut cuts[MFS_SETTINGS_MAX_CLIPS];
    for (size_t i = 0; i < st->nclips; i++) {
        const mfs_clip *c = &st->clips[i];
        cuts[i] = (mfs_cut){c->name, ticks(&c->start, an), ticks(&c->end, an)};
        if (cuts[i].end <= cuts[i].start)
            return mfs_errf(err, "%s: clip '%s': ends (tick %g) before it starts (tick %g)", og->file, c->name,
                            cuts[i].end, cuts[i].start);
        if (cuts[i].end > an->duration + 1e-9)
            return mfs_errf(err, "%s: clip '%s': ends at tick %g, after the end of its take (%g ticks at %g "
                            "a second)", og->file, c->name, cuts[i].end, an->duration, an->ticks_per_second);
    }
    return mfs_scene_cut_clips(s, take, cuts, st->nclips, err);
}

int mfs_import_apply_settings(mfs_scene *s, const mfs_settings *st, const char *root, const char *rel,
                              const mfs_import_opts *o, mfs_deps *deps, mfs_err *err)
{
    /* formats = is the job's to apply (src/worker/job.c): it decides
     * which views are written, not what the scene is */
    if ((st->set & MFS_SET_CLIPS) && apply_clips(s, st, err) < 0)
        return -1;
    int frame = st->set & (MFS_SET_SCALE | MFS_SET_UNIT | MFS_SET_UP | MFS_SET_FORWARD);
    if (frame && !(o && o->source_frame) && apply_frame(s, st, err) < 0)
        return -1;
    if (st->set & MFS_SET_TEXTURE) {
        mfs_iofs fs;
        if (mfs_iofs_init(&fs, root, deps, err) < 0)
            return -1;
        int rc = mfs_iofs_set_model(&fs, rel, err);
        if (rc == 0)
            rc = apply_texture(s, st, &fs, rel, o, err);
        mfs_iofs_close(&fs);
        if (rc < 0)
            return -1;
    }
    return 0;
}

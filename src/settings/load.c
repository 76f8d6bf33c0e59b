/* Which settings files apply to a model, in which order, and what the merged
 * result means for keys and for people (include/meshfs/settings.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/settings.h"

_Static_assert(MFS_SETTINGS_MAX_CLIPS == 64, "parse.c's message names 64 clips");

static void copy_key(mfs_settings *s, const mfs_settings *l, enum mfs_setting bit)
{
    switch (bit) {
    case MFS_SET_SCALE: s->scale = l->scale; break;
    case MFS_SET_UNIT: s->unit = l->unit; break;
    case MFS_SET_UP: s->up = l->up; break;
    case MFS_SET_FORWARD: s->forward = l->forward; break;
    case MFS_SET_FORMATS: s->formats = l->formats; break;
    case MFS_SET_NORMALS:
        s->normals_compute = l->normals_compute;
        s->normals_angle = l->normals_angle;
        break;
    case MFS_SET_TEXTURE: memcpy(s->texture, l->texture, sizeof s->texture); break;
    case MFS_SET_TAKE: memcpy(s->take, l->take, sizeof s->take); break;
    case MFS_SET_FMI_TEXTURES: s->fmi_textures = l->fmi_textures; break;
    case MFS_SET_REVERSE_WINDING: s->reverse_winding = l->reverse_winding; break;
    case MFS_SET_SOURCE_FRAME: s->source_frame = l->source_frame; break;
    case MFS_SET_VRT_LAYOUT: s->vrt_plain = l->vrt_plain; break;
    case MFS_SET_FMD_RAW: s->fmd_raw = l->fmd_raw; break;
    case MFS_SET_IMPORTER: s->importer = l->importer; break;
    case MFS_SET_CLIPS:
        s->nclips = l->nclips;
        memcpy(s->clips, l->clips, sizeof s->clips);
        break;
    }
}

void mfs_settings_overlay(mfs_settings *s, const mfs_settings *layer)
{
    for (int i = 0; i < MFS_SETTINGS_NKEYS; i++) {
        enum mfs_setting bit = 1u << i;
        if (!(layer->set & bit))
            continue;
        copy_key(s, layer, bit);
        s->origin[i] = layer->origin[i];
        s->set |= bit;
    }
}

static const char *origin_text(const mfs_settings *s, enum mfs_setting bit, char *buf, size_t n)
{
    const mfs_setting_origin *o = &s->origin[__builtin_ctz((unsigned)bit)];
    if (!(s->set & bit))
        snprintf(buf, n, "the default");
    else
        snprintf(buf, n, "%s:%d", o->file, o->line);
    return buf;
}

int mfs_settings_check(const mfs_settings *s, mfs_err *err)
{
    /* one given alone leaves the other to the importer's rule (docs/settings.md) */
    if ((s->set & (MFS_SET_UP | MFS_SET_FORWARD)) != (MFS_SET_UP | MFS_SET_FORWARD) ||
        s->up.index != s->forward.index)
        return 0;
    char a[256], b[256];
    return mfs_errf(err, "up (%s%c, %s) and forward (%s%c, %s) are on one axis", s->up.sign < 0 ? "-" : "",
                    'x' + s->up.index, origin_text(s, MFS_SET_UP, a, sizeof a), s->forward.sign < 0 ? "-" : "",
                    'x' + s->forward.index, origin_text(s, MFS_SET_FORWARD, b, sizeof b));
}

int mfs_settings_paths(const char *model_rel, char *buf, size_t bufsz, const char **paths, int maxpaths,
                       mfs_err *err)
{
    int n = 0;
    size_t used = 0;
    const char *slash = model_rel;
    for (;;) {
        /* the folder's .meshfs: model_rel up to (not including) this slash */
        size_t dirlen = slash == model_rel ? 0 : (size_t)(slash - model_rel);
        int w = snprintf(buf + used, bufsz - used, "%.*s%s.meshfs", (int)dirlen, model_rel, dirlen ? "/" : "");
        if (w < 0 || (size_t)w >= bufsz - used || n == maxpaths)
            return mfs_errf(err, "%s: too deep for its settings files' paths", model_rel);
        paths[n++] = buf + used;
        used += (size_t)w + 1;
        const char *next = strchr(slash == model_rel ? model_rel : slash + 1, '/');
        if (!next)
            break;
        slash = next;
    }
    /* a sidecar whose name would pass NAME_MAX cannot exist: not a candidate */
    const char *base = strrchr(model_rel, '/');
    if (strlen(base ? base + 1 : model_rel) + strlen(".meshfs") > 255)
        return n;
    int w = snprintf(buf + used, bufsz - used, "%s.meshfs", model_rel);
    if (w < 0 || (size_t)w >= bufsz - used || n == maxpaths)
        return mfs_errf(err, "%s: too deep for its settings files' paths", model_rel);
    paths[n++] = buf + used;
    return n;
}

int mfs_settings_load(const char *model_rel, unsigned model_uid, mfs_settings_read_fn fn, void *ctx,
                      mfs_settings *out, mfs_err *err)
{
    char buf[8192];
    const char *paths[256];
    int n = mfs_settings_paths(model_rel, buf, sizeof buf, paths, 256, err);
    if (n < 0)
        return -1;
    mfs_settings *layer = malloc(sizeof *layer);
    if (!layer)
        return mfs_errf(err, "%s: out of memory for its settings", model_rel);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char *text = NULL;
        size_t len = 0;
        unsigned uid = 0;
        int r = fn(ctx, paths[i], &text, &len, &uid, err);
        if (r < 0) {
            rc = mfs_err_prefix(err, "%s", paths[i]);
            break;
        }
        if (r == 1)
            continue;
        if (uid != model_uid && uid != 0) {
            out->foreign_owner = 1;
            rc = mfs_errf(err, "%s: owned by uid %u, not by the model's owner (uid %u) or root: not applied; "
                          "its owner or root may chown it, or remove it", paths[i], uid, model_uid);
        } else if (mfs_settings_parse(paths[i], text, len, layer, err) < 0)
            rc = -1;
        else
            mfs_settings_overlay(out, layer);
        free(text);
    }
    free(layer);
    if (rc == 0 && mfs_settings_check(out, err) < 0)
        rc = mfs_err_prefix(err, "%s: settings", model_rel);
    return rc;
}

/* snprintf that keeps appending past a full buffer, counting like snprintf */
static size_t add(char *buf, size_t n, size_t at, const char *fmt, ...) MFS_PRINTF(4, 5);
static size_t add(char *buf, size_t n, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(at < n ? buf + at : NULL, at < n ? n - at : 0, fmt, ap);
    va_end(ap);
    return at + (w > 0 ? (size_t)w : 0);
}

static char axis_sign(mfs_axis a)
{
    return a.sign < 0 ? '-' : '+';
}

size_t mfs_settings_key_text(const mfs_settings *s, char *buf, size_t n)
{
    size_t at = 0;
    if (n)
        buf[0] = 0;
    /* strings carry their length, so no name can forge the next field */
    if (s->set & MFS_SET_SCALE)
        at = add(buf, n, at, "scale=%.17g;", s->scale);
    if (s->set & MFS_SET_UNIT)
        at = add(buf, n, at, "unit=%.17g;", s->unit);
    if (s->set & MFS_SET_UP)
        at = add(buf, n, at, "up=%c%c;", axis_sign(s->up), 'x' + s->up.index);
    if (s->set & MFS_SET_FORWARD)
        at = add(buf, n, at, "forward=%c%c;", axis_sign(s->forward), 'x' + s->forward.index);
    if (s->set & MFS_SET_NORMALS)
        at = add(buf, n, at, "normals=%s%.17g;", s->normals_compute ? "compute:" : "keep:", s->normals_angle);
    if (s->set & MFS_SET_TEXTURE)
        at = add(buf, n, at, "texture=%zu:%s;", strlen(s->texture), s->texture);
    if (s->set & MFS_SET_TAKE)
        at = add(buf, n, at, "take=%zu:%s;", strlen(s->take), s->take);
    if (s->set & MFS_SET_FMI_TEXTURES)
        at = add(buf, n, at, "fmi_textures=%d;", s->fmi_textures);
    if (s->set & MFS_SET_REVERSE_WINDING)
        at = add(buf, n, at, "reverse_winding=%d;", s->reverse_winding);
    if (s->set & MFS_SET_SOURCE_FRAME)
        at = add(buf, n, at, "source_frame=%d;", s->source_frame);
    if (s->set & MFS_SET_VRT_LAYOUT)
        at = add(buf, n, at, "vrt_layout=%s;", s->vrt_plain ? "plain" : "skinned");
    if (s->set & MFS_SET_FMD_RAW)
        at = add(buf, n, at, "fmd_raw=%d;", s->fmd_raw);
    if (s->set & MFS_SET_IMPORTER)
        at = add(buf, n, at, "importer=%d;", s->importer);
    for (size_t i = 0; i < s->nclips; i++) {
        const mfs_clip *c = &s->clips[i];
        at = add(buf, n, at, "clip=%zu:%s:%.17g%s:%.17g%s:%d;", strlen(c->name), c->name, c->start.value,
                 c->start.seconds ? "s" : "", c->end.value, c->end.seconds ? "s" : "", c->loop);
    }
    return at;
}

static size_t describe_one(const mfs_settings *s, enum mfs_setting bit, char *buf, size_t n, size_t at)
{
    char o[256];
    origin_text(s, bit, o, sizeof o);
    switch (bit) {
    case MFS_SET_SCALE: return add(buf, n, at, "scale = %g  (%s)\n", s->scale, o);
    case MFS_SET_UNIT: return add(buf, n, at, "unit = %g m  (%s)\n", s->unit, o);
    case MFS_SET_UP: return add(buf, n, at, "up = %s%c  (%s)\n", s->up.sign < 0 ? "-" : "", 'x' + s->up.index, o);
    case MFS_SET_FORWARD:
        return add(buf, n, at, "forward = %s%c  (%s)\n", s->forward.sign < 0 ? "-" : "", 'x' + s->forward.index,
                   o);
    case MFS_SET_FORMATS: {
        char list[128];
        mfs_format_list_text(s->formats, list, sizeof list);
        return add(buf, n, at, "formats = %s  (%s)\n", list, o);
    }
    case MFS_SET_NORMALS:
        return s->normals_compute ? add(buf, n, at, "normals = compute %g  (%s)\n", s->normals_angle, o)
                                  : add(buf, n, at, "normals = keep  (%s)\n", o);
    case MFS_SET_TEXTURE: return add(buf, n, at, "texture = %s  (%s)\n", s->texture, o);
    case MFS_SET_TAKE: return add(buf, n, at, "take = %s  (%s)\n", s->take, o);
    case MFS_SET_FMI_TEXTURES: return add(buf, n, at, "fmi_textures = %s  (%s)\n", s->fmi_textures ? "true" : "false", o);
    case MFS_SET_REVERSE_WINDING:
        return add(buf, n, at, "reverse_winding = %s  (%s)\n", s->reverse_winding ? "true" : "false", o);
    case MFS_SET_SOURCE_FRAME: return add(buf, n, at, "source_frame = %s  (%s)\n", s->source_frame ? "true" : "false", o);
    case MFS_SET_VRT_LAYOUT: return add(buf, n, at, "vrt_layout = %s  (%s)\n", s->vrt_plain ? "plain" : "skinned", o);
    case MFS_SET_FMD_RAW: return add(buf, n, at, "fmd_raw = %s  (%s)\n", s->fmd_raw ? "true" : "false", o);
    case MFS_SET_IMPORTER: return add(buf, n, at, "importer = %s  (%s)\n", s->importer ? "assimp" : "auto", o);
    case MFS_SET_CLIPS:
        for (size_t i = 0; i < s->nclips; i++) {
            const mfs_clip *c = &s->clips[i];
            at = add(buf, n, at, "[clip %s] start = %g%s, end = %g%s, loop = %s  (%s)\n", c->name, c->start.value,
                     c->start.seconds ? "s" : "", c->end.value, c->end.seconds ? "s" : "", c->loop ? "true" : "false",
                     o);
        }
        return at;
    }
    return at;
}

size_t mfs_settings_describe(const mfs_settings *s, char *buf, size_t n)
{
    size_t at = 0;
    if (n)
        buf[0] = 0;
    for (int i = 0; i < MFS_SETTINGS_NKEYS; i++)
        if (s->set & (1u << i))
            at = describe_one(s, (enum mfs_setting)(1u << i), buf, n, at);
    return at;
}

void mfs_settings_writer_options(const mfs_settings *s, mfs_options *o)
{
    if (s->set & MFS_SET_FMI_TEXTURES)
        o->fmi_textures = s->fmi_textures;
    if (s->set & MFS_SET_REVERSE_WINDING)
        o->reverse_winding = s->reverse_winding;
    if (s->set & MFS_SET_SOURCE_FRAME)
        o->source_frame = s->source_frame;
    if (s->set & MFS_SET_VRT_LAYOUT)
        o->vrt_plain = s->vrt_plain;
    if (s->set & MFS_SET_FMD_RAW)
        o->fmd_raw = s->fmd_raw;
    if (s->set & MFS_SET_IMPORTER)
        o->importer = s->importer;
}

int mfs_settings_is_file(const char *name)
{
    size_t n = strlen(name), k = strlen(".meshfs");
    return n >= k && !strcmp(name + n - k, ".meshfs");
}

/* One settings file's text -> one layer of settings, with inih.
 *
 * inih reads the syntax; this file checks what inih leaves open: the size,
 * NUL bytes and over-long lines (inih would split a long line and parse its
 * tail as a line of its own), keys given twice, sections without keys, and
 * '#' comments after a value (Debian builds inih with ';' as its only
 * inline comment prefix, and docs/settings.md shows '#'). */
#include <ini.h>
#include <stdio.h>
#include <string.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/settings.h"
#include "values.h"

int mfs_settings_not_shown(const char *reason)
{
    return reason && !strncmp(reason, MFS_SETTINGS_NOT_SHOWN, strlen(MFS_SETTINGS_NOT_SHOWN));
}

void mfs_settings_init(mfs_settings *s)
{
    memset(s, 0, sizeof *s);
    s->scale = 1.0;
    s->unit = 1.0;
    s->up = (mfs_axis){1, 1};      /* +y: the views' own frame (docs/import.md) */
    s->forward = (mfs_axis){2, 1}; /* +z */
}

#define MAX_HEADERS (MFS_SETTINGS_MAX_CLIPS + 8)

typedef struct parse_ctx {
    const char *name;
    const char *text, *end, *pos; /* the reader's cursor */
    int line;                     /* the line the reader handed inih last */
    int header_line[MAX_HEADERS]; /* section headers, in order */
    int header_used[MAX_HEADERS];
    int nheaders;
    unsigned given;      /* top-level keys seen (mfs_setting bits, plus unit/scale split) */
    int clip_header[MFS_SETTINGS_MAX_CLIPS]; /* header index of each clip */
    unsigned clip_given[MFS_SETTINGS_MAX_CLIPS];
    mfs_settings *out;
    mfs_err *err;
    int failed_line; /* 0 until the handler fails */
} parse_ctx;

/* fgets over the buffer, counting lines and noting section headers. */
static char *reader(char *str, int num, void *stream)
{
    parse_ctx *c = stream;
    if (c->pos >= c->end || num < 2)
        return NULL;
    const char *nl = memchr(c->pos, '\n', (size_t)(c->end - c->pos));
    size_t n = (nl ? (size_t)(nl - c->pos) + 1 : (size_t)(c->end - c->pos));
    if (n > (size_t)num - 1)
        n = (size_t)num - 1; /* cannot happen: lines were measured before */
    memcpy(str, c->pos, n);
    str[n] = 0;
    c->pos += n;
    c->line++;
    const char *p = str;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '[' && c->nheaders < MAX_HEADERS)
        c->header_line[c->nheaders++] = c->line;
    return str;
}

static int fail(parse_ctx *c, const char *key, const char *why)
{
    if (!c->failed_line) {
        c->failed_line = c->line;
        mfs_errf(c->err, "%s: line %d: key '%s': %s", c->name, c->line, key, why);
    }
    return 0; /* inih goes on; the first failure is the one reported */
}

static int failv(parse_ctx *c, const char *key, mfs_err *verr)
{
    return fail(c, key, verr->msg);
}

/* The value as meant: a '#' after a blank starts a comment. */
static void cut_comment(char *v)
{
    for (char *p = v; *p; p++)
        if (*p == '#' && (p == v || p[-1] == ' ' || p[-1] == '\t')) {
            *p = 0;
            break;
        }
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        v[--n] = 0;
}

static void note_origin(parse_ctx *c, enum mfs_setting bit)
{
    int i = __builtin_ctz((unsigned)bit);
    snprintf(c->out->origin[i].file, sizeof c->out->origin[i].file, "%s", c->name);
    c->out->origin[i].line = c->line;
}

static int top_key(parse_ctx *c, const char *key, char *v)
{
    static const struct {
        const char *name;
        enum mfs_setting bit;
    } keys[] = {
        {"scale", MFS_SET_SCALE},     {"unit", MFS_SET_UNIT},
        {"up", MFS_SET_UP},           {"forward", MFS_SET_FORWARD},
        {"formats", MFS_SET_FORMATS}, {"normals", MFS_SET_NORMALS},
        {"texture", MFS_SET_TEXTURE}, {"take", MFS_SET_TAKE},
        {"fmi_textures", MFS_SET_FMI_TEXTURES}, {"reverse_winding", MFS_SET_REVERSE_WINDING},
        {"source_frame", MFS_SET_SOURCE_FRAME}, {"vrt_layout", MFS_SET_VRT_LAYOUT},
        {"fmd_raw", MFS_SET_FMD_RAW},           {"importer", MFS_SET_IMPORTER},
    };
    enum mfs_setting bit = 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(key, keys[i].name))
            bit = keys[i].bit;
    if (!bit)
        return fail(c, key, "unknown key (docs/settings.md lists them)");
    if (c->given & bit)
        return fail(c, key, "given twice (or continued on an indented line)");
    c->given |= bit;

    mfs_settings *s = c->out;
    mfs_err verr = {0};
    int r = 0;
    switch (bit) {
    case MFS_SET_SCALE: r = mfs_setval_number(v, 1e-6, 1e6, &s->scale, &verr); break;
    case MFS_SET_UNIT: r = mfs_setval_unit(v, &s->unit, &verr); break;
    case MFS_SET_UP: r = mfs_setval_axis(v, &s->up, &verr); break;
    case MFS_SET_FORWARD: r = mfs_setval_axis(v, &s->forward, &verr); break;
    case MFS_SET_FORMATS: {
        /* the package is made of each model's four LGE views: a model is
         * in it when it shows them (docs/settings.md) */
        const unsigned chunks = (1u << MFS_FMT_VRT) | (1u << MFS_FMT_TRI) | (1u << MFS_FMT_TEX) |
                                (1u << MFS_FMT_SPH);
        r = mfs_format_parse_list(v, &s->formats, &verr);
        if (r == 0 && (s->formats & MFS_FMT_LGEPKG_BIT) && (s->formats & chunks) != chunks)
            r = mfs_errf(&verr, "lgepkg is made of the model's vrt, tri, tex and sph: list them too");
        break;
    }
    case MFS_SET_NORMALS: r = mfs_setval_normals(v, &s->normals_compute, &s->normals_angle, &verr); break;
    case MFS_SET_TEXTURE: r = mfs_setval_relpath(v, s->texture, sizeof s->texture, &verr); break;
    case MFS_SET_TAKE: r = mfs_setval_name(v, s->take, sizeof s->take, &verr); break;
    case MFS_SET_FMI_TEXTURES: r = mfs_setval_bool(v, &s->fmi_textures, &verr); break;
    case MFS_SET_REVERSE_WINDING: r = mfs_setval_bool(v, &s->reverse_winding, &verr); break;
    case MFS_SET_SOURCE_FRAME: r = mfs_setval_bool(v, &s->source_frame, &verr); break;
    case MFS_SET_FMD_RAW: r = mfs_setval_bool(v, &s->fmd_raw, &verr); break;
    case MFS_SET_VRT_LAYOUT: {
        mfs_options o;
        mfs_options_default(&o);
        r = mfs_options_set_vrt_layout(&o, v, &verr);
        s->vrt_plain = o.vrt_plain;
        break;
    }
    case MFS_SET_IMPORTER: r = mfs_importer_parse(v, &s->importer, &verr); break;
    default: break;
    }
    if (r < 0)
        return failv(c, key, &verr);
    s->set |= bit;
    note_origin(c, bit);
    return 1;
}

static int clip_key(parse_ctx *c, const char *clipname, const char *key, char *v)
{
    mfs_settings *s = c->out;
    int h = c->nheaders - 1; /* the section this key is under */
    size_t i = s->nclips;
    if (!i || c->clip_header[i - 1] != h) {
        for (size_t j = 0; j < s->nclips; j++)
            if (!strcmp(s->clips[j].name, clipname))
                return fail(c, key, "its [clip] section's name is given twice");
        if (s->nclips == MFS_SETTINGS_MAX_CLIPS)
            return fail(c, key, "more [clip] sections than the 64 a model may have");
        mfs_err verr = {0};
        if (mfs_setval_name(clipname, s->clips[i].name, sizeof s->clips[i].name, &verr) < 0)
            return fail(c, key, "[clip NAME] needs a name of printable UTF-8, at most 63 bytes");
        c->clip_header[i] = h;
        c->clip_given[i] = 0;
        s->nclips++;
    } else {
        i--;
    }
    mfs_clip *cl = &s->clips[i];
    unsigned bit = !strcmp(key, "start") ? 1 : !strcmp(key, "end") ? 2 : !strcmp(key, "loop") ? 4 : 0;
    if (!bit)
        return fail(c, key, "unknown key in a [clip] section (start, end, loop)");
    if (c->clip_given[i] & bit)
        return fail(c, key, "given twice (or continued on an indented line)");
    c->clip_given[i] |= bit;
    mfs_err verr = {0};
    int r = bit == 1   ? mfs_setval_clip_time(v, &cl->start, &verr)
            : bit == 2 ? mfs_setval_clip_time(v, &cl->end, &verr)
                       : mfs_setval_bool(v, &cl->loop, &verr);
    if (r < 0)
        return failv(c, key, &verr);
    if (!(s->set & MFS_SET_CLIPS))
        note_origin(c, MFS_SET_CLIPS);
    s->set |= MFS_SET_CLIPS;
    return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_ctx *c = user;
    if (c->nheaders)
        c->header_used[c->nheaders - 1] = 1;
    char v[MFS_SETTINGS_MAX_LINE + 1];
    snprintf(v, sizeof v, "%s", value);
    cut_comment(v);
    if (!*v)
        return fail(c, name, "has no value");
    if (!*section)
        return top_key(c, name, v);
    if (!strncmp(section, "clip", 4) && (section[4] == ' ' || section[4] == '\t')) {
        const char *n = section + 5;
        while (*n == ' ' || *n == '\t')
            n++;
        return clip_key(c, n, name, v);
    }
    return fail(c, name, "is in a section other than [clip NAME]");
}

/* What inih cannot be trusted with: size, NUL bytes, lines it would split. */
static int check_text(const char *name, const char *text, size_t len, mfs_err *err)
{
    if (len > MFS_SETTINGS_MAX_BYTES)
        return mfs_errf(err, "%s: %zu bytes, more than a settings file may hold (%d)", name, len,
                        MFS_SETTINGS_MAX_BYTES);
    if (memchr(text, 0, len))
        return mfs_errf(err, "%s: holds a NUL byte: not a settings file (binary?)", name);
    int line = 1;
    for (const char *p = text, *e = text + len; p < e; line++) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(e - p);
        if (n > MFS_SETTINGS_MAX_LINE)
            return mfs_errf(err, "%s: line %d: longer than %d bytes", name, line, MFS_SETTINGS_MAX_LINE);
        p += n + 1;
    }
    return 0;
}

static int check_clips(parse_ctx *c)
{
    for (size_t i = 0; i < c->out->nclips; i++) {
        const mfs_clip *cl = &c->out->clips[i];
        int hl = c->header_line[c->clip_header[i]];
        if ((c->clip_given[i] & 3) != 3)
            return mfs_errf(c->err, "%s: line %d: clip '%s': needs both start and end", c->name, hl,
                            cl->name);
        if (cl->start.seconds == cl->end.seconds && cl->end.value <= cl->start.value)
            return mfs_errf(c->err, "%s: line %d: clip '%s': end (%g) is not after start (%g)", c->name,
                            hl, cl->name, cl->end.value, cl->start.value);
    }
    return 0;
}

int mfs_settings_parse(const char *name, const char *text, size_t len, mfs_settings *layer, mfs_err *err)
{
    mfs_settings_init(layer);
    if (check_text(name, text, len, err) < 0)
        return -1;
    parse_ctx c = {.name = name, .text = text, .end = text + len, .pos = text, .out = layer, .err = err};
    int r = ini_parse_stream(reader, &c, handler, &c);
    if (r < 0)
        return mfs_errf(err, "%s: could not be parsed (out of memory)", name);
    if (r > 0 && r != c.failed_line)
        return mfs_errf(err, "%s: line %d: not 'key = value', '[clip NAME]' or a comment", name, r);
    if (c.failed_line)
        return -1;
    for (int i = 0; i < c.nheaders; i++)
        if (!c.header_used[i])
            return mfs_errf(err, "%s: line %d: a section with no keys", name, c.header_line[i]);
    return check_clips(&c);
}

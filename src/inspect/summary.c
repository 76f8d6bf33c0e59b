/* meshfs-inspect's output: a summary as one JSON line or as a few lines
 * for people (fields in docs/inspect.md). */
#include "meshfs/inspect.h"
#include "meshfs/util.h"

#include <math.h>
#include <stdio.h>

/* -0.0 prints "-0", which reads as a sign that means something: + 0.0
 * makes it 0 and leaves every other value as it is. */
static double unsigned_zero(float v)
{
    return (double)v + 0.0;
}

static void json_float(FILE *f, float v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", unsigned_zero(v));
    else
        fputs("null", f);
}

static void json_vec(FILE *f, const char *key, int present, const float *v)
{
    fprintf(f, ",\"%s\":", key);
    if (!present) {
        fputs("null", f);
        return;
    }
    fputc('[', f);
    for (int i = 0; i < 3; i++) {
        if (i)
            fputc(',', f);
        json_float(f, v[i]);
    }
    fputc(']', f);
}

static unsigned kept_warnings(const mfs_summary *s)
{
    return s->n_warnings < MFS_SUMMARY_MAX_WARN ? s->n_warnings : MFS_SUMMARY_MAX_WARN;
}

void mfs_summary_json(FILE *f, const char *file, const mfs_summary *s, const char *error)
{
    fputs("{\"file\":", f);
    mfs_json_str(f, file);
    fprintf(f, ",\"ok\":%s,\"error\":", error ? "false" : "true");
    mfs_json_str(f, error);
    fputs(",\"format\":", f);
    mfs_json_str(f, s->format[0] ? s->format : NULL);
    fprintf(f, ",\"version\":%d,\"name\":", s->version);
    mfs_json_str(f, s->name);
    fprintf(f,
            ",\"meshes\":%llu,\"vertices\":%llu,\"triangles\":%llu,\"bones\":%llu,"
            "\"nodes\":%llu,\"animations\":%llu,\"animation_names\":[",
            (unsigned long long)s->meshes, (unsigned long long)s->vertices,
            (unsigned long long)s->triangles, (unsigned long long)s->bones,
            (unsigned long long)s->nodes, (unsigned long long)s->animations);
    for (unsigned i = 0; i < s->n_anim_names; i++) {
        if (i)
            fputc(',', f);
        mfs_json_str(f, s->anim_names[i]);
    }
    fputc(']', f);
    json_vec(f, "min", s->has_bounds, s->min);
    json_vec(f, "max", s->has_bounds, s->max);
    json_vec(f, "cmin", s->has_bounds, s->cmin);
    json_vec(f, "cmax", s->has_bounds, s->cmax);
    fputs(",\"sphere\":", f);
    if (s->has_sphere) {
        fputs("{\"center\":[", f);
        for (int i = 0; i < 3; i++) {
            if (i)
                fputc(',', f);
            json_float(f, s->center[i]);
        }
        fputs("],\"radius\":", f);
        json_float(f, s->radius);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputs(",\"sibling\":", f);
    mfs_json_str(f, s->sibling[0] ? s->sibling : NULL);
    fputs(",\"texture\":", f);
    if (s->has_texture)
        fprintf(f, "{\"width\":%ld,\"height\":%ld,\"depth\":%ld,\"gpu_format\":%u,"
                   "\"image_format\":%u}", (long)s->tex_width, (long)s->tex_height,
                (long)s->tex_depth, s->tex_gpu_format, s->tex_image_format);
    else
        fputs("null", f);
    fputs(",\"warnings\":[", f);
    for (unsigned i = 0; i < kept_warnings(s); i++) {
        if (i)
            fputc(',', f);
        mfs_json_str(f, s->warnings[i]);
    }
    fprintf(f, "],\"warnings_total\":%u,\"violations\":%u}\n", s->n_warnings,
            s->n_violations);
}

static void print_vec(FILE *f, const float *v)
{
    fprintf(f, "(%g %g %g)", unsigned_zero(v[0]), unsigned_zero(v[1]), unsigned_zero(v[2]));
}

void mfs_summary_print(FILE *f, const char *file, const mfs_summary *s)
{
    fprintf(f, "%s: %s", file, s->format[0] ? s->format : "?");
    if (s->version)
        fprintf(f, " version %d", s->version);
    if (s->name[0])
        fprintf(f, " '%s'", s->name);
    fputc('\n', f);
    fprintf(f, "  meshes %llu, vertices %llu, triangles %llu, bones %llu, nodes %llu, "
               "animations %llu\n",
            (unsigned long long)s->meshes, (unsigned long long)s->vertices,
            (unsigned long long)s->triangles, (unsigned long long)s->bones,
            (unsigned long long)s->nodes, (unsigned long long)s->animations);
    if (s->n_anim_names) {
        fputs("  animation names:", f);
        for (unsigned i = 0; i < s->n_anim_names; i++)
            fprintf(f, " '%s'", s->anim_names[i]);
        fputc('\n', f);
    }
    if (s->has_bounds) {
        fputs("  bounds ", f);
        print_vec(f, s->min);
        fputs(" .. ", f);
        print_vec(f, s->max);
        fputs(", canonical ", f);
        print_vec(f, s->cmin);
        fputs(" .. ", f);
        print_vec(f, s->cmax);
        fputc('\n', f);
    }
    if (s->has_sphere) {
        fputs("  sphere centre ", f);
        print_vec(f, s->center);
        fprintf(f, " radius %g\n", unsigned_zero(s->radius));
    }
    if (s->sibling[0])
        fprintf(f, "  checked against %s\n", s->sibling);
    if (s->has_texture)
        fprintf(f, "  texture %ldx%ld, %ld bytes per pixel, gpuFormat %u, imageFormat %u\n",
                (long)s->tex_width, (long)s->tex_height, (long)s->tex_depth, s->tex_gpu_format,
                s->tex_image_format);
    for (unsigned i = 0; i < kept_warnings(s); i++)
        fprintf(f, "  warning: %s\n", s->warnings[i]);
    if (s->n_warnings > MFS_SUMMARY_MAX_WARN)
        fprintf(f, "  (%u more warnings)\n", s->n_warnings - MFS_SUMMARY_MAX_WARN);
}

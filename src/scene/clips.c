/* Cutting one animation into clips (a settings file's [clip] sections,
 * docs/settings.md): what the DEM Blender exporter does with timeline
 * markers (seed DEM README), done on the neutral scene so that every
 * writer gets the clips as animations of their own. */
#include <stdlib.h>
#include <string.h>

#include "meshfs/scene.h"

/* The keys of one track inside [a, b], with a key sampled at a and at b
 * (the span's ends, unless a key sits there), shifted to start at 0. */
static int cut_vec(const mfs_vec_key *k, uint32_t n, double a, double b, mfs_vec_key **out, uint32_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (!n)
        return 0;
    mfs_vec_key *r = malloc(sizeof *r * (n + 2));
    if (!r)
        return -1;
    uint32_t m = 0;
    r[m].time = 0;
    mfs_track_sample_vec(k, n, a, r[m++].v);
    for (uint32_t i = 0; i < n; i++)
        if (k[i].time > a && k[i].time < b) {
            r[m] = k[i];
            r[m++].time = k[i].time - a;
        }
    r[m].time = b - a;
    mfs_track_sample_vec(k, n, b, r[m++].v);
    *out = r;
    *nout = m;
    return 0;
}

static int cut_quat(const mfs_quat_key *k, uint32_t n, double a, double b, mfs_quat_key **out, uint32_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (!n)
        return 0;
    mfs_quat_key *r = malloc(sizeof *r * (n + 2));
    if (!r)
        return -1;
    uint32_t m = 0;
    r[m].time = 0;
    mfs_track_sample_quat(k, n, a, r[m++].q);
    for (uint32_t i = 0; i < n; i++)
        if (k[i].time > a && k[i].time < b) {
            r[m] = k[i];
            r[m++].time = k[i].time - a;
        }
    r[m].time = b - a;
    mfs_track_sample_quat(k, n, b, r[m++].q);
    *out = r;
    *nout = m;
    return 0;
}

static void free_animation(mfs_animation *an)
{
    for (uint32_t c = 0; c < an->n_channels; c++) {
        free(an->channels[c].pos);
        free(an->channels[c].rot);
        free(an->channels[c].scale);
    }
    free(an->channels);
    free(an->name);
}

static int cut_one(const mfs_animation *src, const mfs_cut *cut, mfs_animation *out)
{
    memset(out, 0, sizeof *out);
    out->name = mfs_strdup(cut->name);
    out->duration = cut->end - cut->start;
    out->ticks_per_second = src->ticks_per_second;
    out->channels = calloc(src->n_channels ? src->n_channels : 1, sizeof *out->channels);
    if (!out->name || !out->channels)
        return -1;
    out->n_channels = src->n_channels;
    for (uint32_t c = 0; c < src->n_channels; c++) {
        const mfs_channel *in = &src->channels[c];
        mfs_channel *o = &out->channels[c];
        o->node = in->node;
        if (cut_vec(in->pos, in->n_pos, cut->start, cut->end, &o->pos, &o->n_pos) < 0 ||
            cut_quat(in->rot, in->n_rot, cut->start, cut->end, &o->rot, &o->n_rot) < 0 ||
            cut_vec(in->scale, in->n_scale, cut->start, cut->end, &o->scale, &o->n_scale) < 0)
            return -1;
    }
    return 0;
}

int mfs_scene_cut_clips(mfs_scene *s, uint32_t take, const mfs_cut *cuts, size_t n, mfs_err *err)
{
    mfs_animation *clips = calloc(n ? n : 1, sizeof *clips);
    if (!clips)
        return mfs_errf(err, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (cut_one(&s->animations[take], &cuts[i], &clips[i]) < 0) {
            for (size_t j = 0; j <= i; j++)
                free_animation(&clips[j]);
            free(clips);
            return mfs_errf(err, "out of memory");
        }
    for (uint32_t a = 0; a < s->n_animations; a++)
        free_animation(&s->animations[a]);
    free(s->animations);
    s->animations = clips;
    s->n_animations = (uint32_t)n;
    return 0;
}

#include <stdlib.h>
#include <string.h>

#include "meshfs/scene.h"

mfs_scene *mfs_scene_new(void)
{
    return calloc(1, sizeof(mfs_scene));
}

char *mfs_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void mfs_mesh_clear(mfs_mesh *m)
{
    free(m->name);
    free(m->positions);
    free(m->normals);
    free(m->tangents);
    free(m->bitangents);
    for (int i = 0; i < MFS_MAX_UV; i++)
        free(m->uv[i]);
    free(m->colors);
    free(m->indices);
    for (uint32_t b = 0; b < m->n_bones; b++) {
        free(m->bones[b].name);
        free(m->bones[b].weights);
    }
    free(m->bones);
    memset(m, 0, sizeof *m);
}

static void anim_free(mfs_animation *a)
{
    free(a->name);
    for (uint32_t c = 0; c < a->n_channels; c++) {
        free(a->channels[c].pos);
        free(a->channels[c].rot);
        free(a->channels[c].scale);
    }
    free(a->channels);
}

void mfs_scene_free(mfs_scene *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        free(s->nodes[i].name);
        free(s->nodes[i].children);
        free(s->nodes[i].meshes);
    }
    free(s->nodes);
    for (uint32_t i = 0; i < s->n_meshes; i++)
        mfs_mesh_clear(&s->meshes[i]);
    free(s->meshes);
    for (uint32_t i = 0; i < s->n_materials; i++) {
        free(s->materials[i].name);
        for (int k = 0; k < MFS_TEX_KINDS; k++)
            free(s->materials[i].textures[k]);
    }
    free(s->materials);
    for (uint32_t i = 0; i < s->n_animations; i++)
        anim_free(&s->animations[i]);
    free(s->animations);
    free(s->image.pixels);
    free(s->image.source);
    free(s->image.note);
    free(s->note);
    free(s);
}

uint64_t mfs_scene_vertex_count(const mfs_scene *s)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->n_meshes; i++)
        n += s->meshes[i].n_vertices;
    return n;
}

uint64_t mfs_scene_triangle_count(const mfs_scene *s)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->n_meshes; i++)
        if (s->meshes[i].prim == MFS_PRIM_TRIANGLES)
            n += s->meshes[i].n_faces;
    return n;
}

int mfs_scene_note(mfs_scene *s, const char *text)
{
    size_t old = s->note ? strlen(s->note) : 0, n = strlen(text);
    char *d = realloc(s->note, old + (old ? 2 : 0) + n + 1);
    if (!d)
        return -1;
    if (old)
        memcpy(d + old, "; ", 2), old += 2;
    memcpy(d + old, text, n + 1);
    s->note = d;
    return 0;
}

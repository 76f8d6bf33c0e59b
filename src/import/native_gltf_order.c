/* The order assimp's glTF reader meets a scene's meshes, materials and
 * embedded images in, which fixes their order and names in the scene
 * (native_gltf.c's head comment; native_gltf.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native_gltf.h"

static void see_image(order *o, const cgltf_texture_view *tv)
{
    if (!tv->texture || !tv->texture->image)
        return;
    size_t i = (size_t)(tv->texture->image - o->d->images);
    if (o->img_seen[i])
        return;
    o->img_seen[i] = 1;
    const cgltf_image *im = &o->d->images[i];
    if (im->buffer_view || (im->uri && strncmp(im->uri, "data:", 5) == 0)) {
        o->img_slot[i] = (int32_t)o->n_imgs;
        o->imgs[o->n_imgs++] = (uint32_t)i;
    }
}

static void see_material(order *o, const cgltf_material *m)
{
    size_t i = (size_t)(m - o->d->materials);
    if (o->mat_seen[i])
        return;
    o->mat_seen[i] = 1;
    see_image(o, &m->pbr_metallic_roughness.base_color_texture);
    see_image(o, &m->pbr_metallic_roughness.metallic_roughness_texture);
    see_image(o, &m->normal_texture);
    see_image(o, &m->occlusion_texture);
    see_image(o, &m->emissive_texture);
    if (m->has_pbr_specular_glossiness) {
        see_image(o, &m->pbr_specular_glossiness.diffuse_texture);
        see_image(o, &m->pbr_specular_glossiness.specular_glossiness_texture);
    }
    o->mat_slot[i] = (int32_t)o->n_mats;
    o->mats[o->n_mats++] = (uint32_t)i;
}

static void see_mesh(order *o, const cgltf_mesh *m)
{
    size_t i = (size_t)(m - o->d->meshes);
    if (o->mesh_seen[i])
        return;
    o->mesh_seen[i] = 1;
    for (size_t p = 0; p < m->primitives_count; p++)
        if (m->primitives[p].material)
            see_material(o, m->primitives[p].material);
    o->mesh_slot[i] = (int32_t)o->n_meshes;
    o->meshes[o->n_meshes++] = (uint32_t)i;
}

static void see_node(order *o, const cgltf_node *n, int depth);

static void see_skin(order *o, const cgltf_skin *s, int depth)
{
    size_t i = (size_t)(s - o->d->skins);
    if (o->skin_seen[i])
        return;
    o->skin_seen[i] = 1;
    for (size_t j = 0; j < s->joints_count; j++)
        if (s->joints[j])
            see_node(o, s->joints[j], depth + 1);
}

static void see_node(order *o, const cgltf_node *n, int depth)
{
    size_t i = (size_t)(n - o->d->nodes);
    if (o->node_seen[i] || depth > MFS_MAX_NODE_DEPTH + 8)
        return;
    o->node_seen[i] = 1;
    for (size_t c = 0; c < n->children_count; c++)
        see_node(o, n->children[c], depth + 1);
    if (n->mesh)
        see_mesh(o, n->mesh);
    if (n->skin)
        see_skin(o, n->skin, depth);
}

int mfs_gltf_order_init(order *o, const cgltf_data *d, const cgltf_scene *sc)
{
    memset(o, 0, sizeof *o);
    o->d = d;
    size_t nn = d->nodes_count + 1, nm = d->meshes_count + 1, nmat = d->materials_count + 1,
           ni = d->images_count + 1;
    o->node_seen = calloc(nn, 1);
    o->mesh_seen = calloc(nm, 1);
    o->mat_seen = calloc(nmat, 1);
    o->img_seen = calloc(ni, 1);
    o->skin_seen = calloc(d->skins_count + 1, 1);
    o->mesh_slot = calloc(nm, sizeof *o->mesh_slot);
    o->meshes = calloc(nm, sizeof *o->meshes);
    o->mat_slot = calloc(nmat, sizeof *o->mat_slot);
    o->mats = calloc(nmat, sizeof *o->mats);
    o->img_slot = calloc(ni, sizeof *o->img_slot);
    o->imgs = calloc(ni, sizeof *o->imgs);
    if (!o->node_seen || !o->mesh_seen || !o->mat_seen || !o->img_seen || !o->skin_seen ||
        !o->mesh_slot || !o->meshes || !o->mat_slot || !o->mats || !o->img_slot || !o->imgs)
        return -1;
    for (size_t i = 0; i < ni; i++)
        o->img_slot[i] = -1;
    for (size_t i = 0; i < sc->nodes_count; i++)
        if (sc->nodes[i])
            see_node(o, sc->nodes[i], 0);
    for (size_t i = 0; i < d->skins_count; i++)
        see_skin(o, &d->skins[i], 0);
    for (size_t a = 0; a < d->animations_count; a++)
        for (size_t c = 0; c < d->animations[a].channels_count; c++)
            if (d->animations[a].channels[c].target_node)
                see_node(o, d->animations[a].channels[c].target_node, 0);
    return 0;
}

void mfs_gltf_order_free(order *o)
{
    free(o->node_seen);
    free(o->mesh_seen);
    free(o->mat_seen);
    free(o->img_seen);
    free(o->skin_seen);
    free(o->mesh_slot);
    free(o->meshes);
    free(o->mat_slot);
    free(o->mats);
    free(o->img_slot);
    free(o->imgs);
}

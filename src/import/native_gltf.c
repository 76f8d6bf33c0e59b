/* glTF 2.0 and glb through cgltf, into the neutral scene.
 *
 * The scene is the one the assimp path builds from the same file (assimp
 * 5.2.5's glTF2 importer plus meshfs's post-processing), so that a model's
 * views do not depend on the importer; tests/integration/test_native.py
 * compares the two on every glTF of assimp-testmodels.  That fixes details a
 * fresh design might choose otherwise, each kept because a view shows it:
 *
 * - meshes are the primitives of the meshes the file references, in the
 *   order assimp's reader first meets them (a node's children before the node
 *   itself, then its skin's joints; then every skin, every animation), named
 *   "<mesh name or meshes[i]>" plus "-<p>" when a mesh has several;
 * - materials likewise, with one default material after them for
 *   primitives that name none; an embedded image (a bufferView or a data:
 *   URI) is "*N", numbered in the order materials reach them;
 * - the root is the scene's only root node, or a node "ROOT" above several;
 *   unnamed nodes are "nodes[i]";
 * - animations run at 1000 ticks per second (milliseconds), with a node's
 *   unanimated translation, rotation or scale as one key at 0.
 *
 * Deliberate differences (docs/import.md): STEP and CUBICSPLINE samplers
 * are resampled so that the scene's linear keys reproduce them (CUBICSPLINE
 * to 1e-4 of the model's size) (assimp keeps
 * the key values and interpolates linearly); bones and channels point at
 * their node, not at the first node of that name; normalised-integer
 * colours, UVs and weights are read as the spec says.
 *
 * Declined (assimp reads the file): anything cgltf rejects or cgltf_validate
 * flags, glTF 1.0, Draco and meshopt compression, GPU instancing, required
 * extensions other than materials and texture ones, no scene, a node reached
 * twice, a primitive without positions or without a single face.
 *
 * This file builds the scene; the file's bytes, the order objects are met
 * in and the animations are native_gltf_read.c, _order.c and _anim.c
 * (native_gltf.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cgltf.h>

#include "native.h"
#include "native_common.h"
#include "native_gltf.h"
#include "texture.h"

/* ---- nodes ---- */

static uint32_t count_tree(const cgltf_node *n, int depth, int *deep)
{
    if (depth > MFS_MAX_NODE_DEPTH) {
        *deep = 1;
        return 0;
    }
    uint32_t c = 1;
    for (size_t i = 0; i < n->children_count; i++)
        c += count_tree(n->children[i], depth + 1, deep);
    return c;
}

/* glTF matrices are column-major; the scene's are row by row. */
static void from_colmajor(mfs_mat4 *m, const float *c)
{
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < 4; k++)
            m->m[r * 4 + k] = c[k * 4 + r];
}

static void node_local(const cgltf_node *n, mfs_mat4 *m)
{
    if (n->has_matrix) {
        from_colmajor(m, n->matrix);
        return;
    }
    float t[3] = {0, 0, 0}, q[4] = {0, 0, 0, 1}, s[3] = {1, 1, 1};
    if (n->has_translation)
        memcpy(t, n->translation, sizeof t);
    if (n->has_rotation)
        memcpy(q, n->rotation, sizeof q);
    if (n->has_scale)
        memcpy(s, n->scale, sizeof s);
    mfs_mat4_compose(m, t, q, s);
}

static char *node_name(const cgltf_data *d, const cgltf_node *n)
{
    if (n->name && n->name[0])
        return mfs_strdup(n->name);
    char buf[48];
    snprintf(buf, sizeof buf, "nodes[%zu]", (size_t)(n - d->nodes));
    return mfs_strdup(buf);
}

static int add_node(build *b, const cgltf_node *gn, int32_t parent)
{
    size_t gi = (size_t)(gn - b->d->nodes);
    if (b->node_at[gi] >= 0) {
        snprintf(b->dc->why, b->dc->whysz, "node %zu is reached twice in the scene", gi);
        return 1;
    }
    uint32_t idx = b->next++;
    b->s->n_nodes = b->next; /* freed with the scene even if a later node declines */
    b->node_at[gi] = (int32_t)idx;
    mfs_node *n = &b->s->nodes[idx];
    n->parent = parent;
    n->name = node_name(b->d, gn);
    node_local(gn, &n->local);
    n->children = calloc(gn->children_count + 1, sizeof *n->children);
    uint32_t np = gn->mesh ? (uint32_t)gn->mesh->primitives_count : 0;
    n->meshes = calloc(np + 1, sizeof *n->meshes);
    if (!n->name || !n->children || !n->meshes)
        return mfs_errf(b->err, "out of memory");
    if (gn->mesh) {
        uint32_t first = b->mesh_first[b->o->mesh_slot[gn->mesh - b->d->meshes]];
        for (uint32_t p = 0; p < np; p++)
            n->meshes[p] = first + p;
        n->n_meshes = np;
    }
    for (size_t c = 0; c < gn->children_count; c++) {
        b->s->nodes[idx].children[b->s->nodes[idx].n_children++] = b->next;
        int r = add_node(b, gn->children[c], (int32_t)idx);
        if (r)
            return r;
    }
    return 0;
}

/* ---- meshes ---- */

static const cgltf_accessor *attr(const cgltf_primitive *p, cgltf_attribute_type t, int set)
{
    for (size_t i = 0; i < p->attributes_count; i++)
        if (p->attributes[i].type == t && p->attributes[i].index == set)
            return p->attributes[i].data;
    return NULL;
}

/* Faces as assimp's reader makes them from each mode, faces with an index
 * out of range dropped. */
static int make_faces(mfs_mesh *m, const cgltf_primitive *p, mfs_err *err)
{
    size_t count = p->indices ? p->indices->count : m->n_vertices;
    uint32_t *ix = malloc(sizeof *ix * (count ? count : 1));
    if (!ix)
        return mfs_errf(err, "out of memory");
    for (size_t i = 0; i < count; i++) {
        size_t v = p->indices ? cgltf_accessor_read_index(p->indices, i) : i;
        ix[i] = v > UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)v;
    }
    size_t cap;
    switch (p->type) {
    case cgltf_primitive_type_points: m->prim = MFS_PRIM_POINTS, cap = count; break;
    case cgltf_primitive_type_lines: m->prim = MFS_PRIM_LINES, cap = count / 2; break;
    case cgltf_primitive_type_line_loop: m->prim = MFS_PRIM_LINES, cap = count; break;
    case cgltf_primitive_type_line_strip: m->prim = MFS_PRIM_LINES, cap = count ? count - 1 : 0; break;
    default: m->prim = MFS_PRIM_TRIANGLES, cap = p->type == cgltf_primitive_type_triangles ? count / 3
                                                                                          : (count > 2 ? count - 2 : 0);
    }
    m->indices = malloc(sizeof *m->indices * (cap * m->prim + 1));
    if (!m->indices) {
        free(ix);
        return mfs_errf(err, "out of memory");
    }
    uint32_t nv = m->n_vertices, nf = 0;
    uint32_t *o = m->indices;
#define FACE(...)                                                                                  \
    do {                                                                                           \
        uint32_t f_[] = {__VA_ARGS__};                                                             \
        int ok_ = 1;                                                                               \
        for (unsigned k_ = 0; k_ < sizeof f_ / sizeof *f_; k_++)                                   \
            ok_ &= f_[k_] < nv;                                                                    \
        if (ok_) {                                                                                 \
            memcpy(o, f_, sizeof f_);                                                              \
            o += sizeof f_ / sizeof *f_;                                                           \
            nf++;                                                                                  \
        }                                                                                          \
    } while (0)
    switch (p->type) {
    case cgltf_primitive_type_points:
        for (size_t i = 0; i < count; i++)
            FACE(ix[i]);
        break;
    case cgltf_primitive_type_lines:
        for (size_t i = 0; i + 1 < count; i += 2)
            FACE(ix[i], ix[i + 1]);
        break;
    case cgltf_primitive_type_line_loop:
    case cgltf_primitive_type_line_strip:
        if (count >= 2) {
            for (size_t i = 1; i < count; i++)
                FACE(ix[i - 1], ix[i]);
            if (p->type == cgltf_primitive_type_line_loop)
                FACE(ix[count - 1], ix[0]);
        }
        break;
    case cgltf_primitive_type_triangles:
        for (size_t i = 0; i + 2 < count; i += 3)
            FACE(ix[i], ix[i + 1], ix[i + 2]);
        break;
    case cgltf_primitive_type_triangle_strip:
        for (size_t i = 0; i + 2 < count; i++) {
            if ((i + 1) % 2 == 0)
                FACE(ix[i + 1], ix[i], ix[i + 2]);
            else
                FACE(ix[i], ix[i + 1], ix[i + 2]);
        }
        break;
    case cgltf_primitive_type_triangle_fan:
        for (size_t i = 1; i + 1 < count; i++)
            FACE(ix[0], ix[i], ix[i + 1]);
        break;
    default:
        break;
    }
#undef FACE
    free(ix);
    m->n_faces = nf;
    return 0;
}

static char *mesh_name(const cgltf_data *d, const cgltf_mesh *gm, size_t p)
{
    char buf[1100];
    int n;
    if (gm->name && gm->name[0])
        n = snprintf(buf, sizeof buf, "%.1000s", gm->name);
    else
        n = snprintf(buf, sizeof buf, "meshes[%zu]", (size_t)(gm - d->meshes));
    if (gm->primitives_count > 1)
        snprintf(buf + n, sizeof buf - (size_t)n, "-%zu", p);
    return mfs_strdup(buf);
}

static int fill_mesh(build *b, mfs_mesh *m, const cgltf_mesh *gm, size_t pi)
{
    const cgltf_primitive *p = &gm->primitives[pi];
    mfs_err *err = b->err;
    m->name = mesh_name(b->d, gm, pi);
    if (!m->name)
        return mfs_errf(err, "out of memory");
    m->material = p->material ? b->o->mat_slot[p->material - b->d->materials] : (int32_t)b->o->n_mats;
    const cgltf_accessor *pa = attr(p, cgltf_attribute_type_position, 0);
    if (!pa || pa->count == 0) {
        snprintf(b->dc->why, b->dc->whysz, "mesh '%s' has no positions", m->name);
        return 1;
    }
    uint32_t n = (uint32_t)pa->count;
    m->n_vertices = n;
    m->positions = (float (*)[3])mfs_gltf_unpack(pa, 3);
    if (!m->positions) {
        snprintf(b->dc->why, b->dc->whysz, "mesh '%s': unreadable positions", m->name);
        return 1;
    }
    const cgltf_accessor *na = attr(p, cgltf_attribute_type_normal, 0);
    if (na && na->count == n) {
        m->normals = (float (*)[3])mfs_gltf_unpack(na, 3);
        const cgltf_accessor *ta = attr(p, cgltf_attribute_type_tangent, 0);
        float *t4 = ta && ta->count == n && m->normals ? mfs_gltf_unpack(ta, 4) : NULL;
        if (t4) {
            m->tangents = malloc(sizeof *m->tangents * n);
            m->bitangents = malloc(sizeof *m->bitangents * n);
            if (!m->tangents || !m->bitangents) {
                free(t4);
                return mfs_errf(err, "out of memory");
            }
            for (uint32_t i = 0; i < n; i++) {
                const float *t = &t4[4 * i], *nn = m->normals[i];
                memcpy(m->tangents[i], t, sizeof m->tangents[i]);
                /* the spec's bitangent: cross(normal, tangent.xyz) * tangent.w */
                m->bitangents[i][0] = (nn[1] * t[2] - nn[2] * t[1]) * t[3];
                m->bitangents[i][1] = (nn[2] * t[0] - nn[0] * t[2]) * t[3];
                m->bitangents[i][2] = (nn[0] * t[1] - nn[1] * t[0]) * t[3];
            }
            free(t4);
        }
    }
    for (int k = 0; k < MFS_MAX_UV; k++) {
        const cgltf_accessor *ua = attr(p, cgltf_attribute_type_texcoord, k);
        if (!ua || ua->count != n || (k == 1 && !m->uv[0]))
            continue;
        m->uv[k] = (float (*)[2])mfs_gltf_unpack(ua, 2);
        if (m->uv[k])
            for (uint32_t i = 0; i < n; i++)
                m->uv[k][i][1] = 1 - m->uv[k][i][1]; /* glTF's v runs downwards */
    }
    const cgltf_accessor *ca = attr(p, cgltf_attribute_type_color, 0);
    if (ca && ca->count == n) {
        size_t comps = cgltf_num_components(ca->type);
        float *c = comps == 3 || comps == 4 ? mfs_gltf_unpack(ca, comps) : NULL;
        if (c) {
            m->colors = malloc(sizeof *m->colors * n);
            if (!m->colors) {
                free(c);
                return mfs_errf(err, "out of memory");
            }
            for (uint32_t i = 0; i < n; i++) {
                memcpy(m->colors[i], &c[comps * i], sizeof(float) * comps);
                if (comps == 3)
                    m->colors[i][3] = 1;
            }
            free(c);
        }
    }
    if (make_faces(m, p, err) < 0)
        return -1;
    if (m->n_faces == 0) {
        snprintf(b->dc->why, b->dc->whysz, "mesh '%s' has no faces", m->name);
        return 1;
    }
    return 0;
}

/* ---- skins ---- */

static int skin_mesh(build *b, mfs_mesh *m, const cgltf_primitive *p, const cgltf_skin *sk)
{
    mfs_err *err = b->err;
    for (uint32_t i = 0; i < m->n_bones; i++) {
        free(m->bones[i].name);
        free(m->bones[i].weights);
    }
    free(m->bones);
    m->bones = NULL;
    m->n_bones = 0;
    size_t nb = sk->joints_count;
    if (!nb)
        return 0;
    m->bones = calloc(nb, sizeof *m->bones);
    uint32_t *cnt = calloc(nb, sizeof *cnt);
    float *ibm = sk->inverse_bind_matrices ? mfs_gltf_unpack(sk->inverse_bind_matrices, 16) : NULL;
    if (!m->bones || !cnt) {
        free(cnt);
        free(ibm);
        return mfs_errf(err, "out of memory");
    }
    m->n_bones = (uint32_t)nb;
    /* every JOINTS_n/WEIGHTS_n pair, as assimp reads them: an influence
     * counts when its weight is positive and its joint exists */
    float *js[8] = {0}, *ws[8] = {0};
    int sets = 0;
    for (int k = 0; k < 8; k++) {
        const cgltf_accessor *ja = attr(p, cgltf_attribute_type_joints, k);
        const cgltf_accessor *wa = attr(p, cgltf_attribute_type_weights, k);
        if (!ja || !wa || ja->count != wa->count || ja->count != m->n_vertices)
            break;
        js[k] = mfs_gltf_unpack(ja, 4);
        ws[k] = mfs_gltf_unpack(wa, 4);
        if (!js[k] || !ws[k]) {
            free(js[k]);
            free(ws[k]);
            js[k] = ws[k] = NULL;
            break;
        }
        sets++;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            for (size_t j = 0; j < nb; j++) {
                m->bones[j].weights = malloc(sizeof(mfs_weight) * (cnt[j] + 1));
                if (!m->bones[j].weights)
                    goto oom;
                cnt[j] = 0;
            }
        for (int k = 0; k < sets; k++)
            for (uint32_t v = 0; v < m->n_vertices; v++)
                for (int c = 0; c < 4; c++) {
                    float w = ws[k][4 * v + c], jf = js[k][4 * v + c];
                    if (!(w > 0) || !(jf >= 0) || jf >= (float)nb)
                        continue;
                    size_t j = (size_t)jf;
                    if (pass == 1)
                        m->bones[j].weights[cnt[j]] = (mfs_weight){v, w};
                    cnt[j]++;
                }
    }
    for (size_t j = 0; j < nb; j++) {
        mfs_bone *bo = &m->bones[j];
        const cgltf_node *jn = sk->joints[j];
        bo->n_weights = cnt[j];
        bo->node = jn ? b->node_at[jn - b->d->nodes] : -1;
        bo->name = bo->node >= 0 ? mfs_strdup(b->s->nodes[bo->node].name) : mfs_strdup("");
        if (!bo->name)
            goto oom;
        if (ibm && sk->inverse_bind_matrices->count > j)
            from_colmajor(&bo->offset, &ibm[16 * j]);
        else
            mfs_mat4_identity(&bo->offset);
    }
    for (int k = 0; k < sets; k++) {
        free(js[k]);
        free(ws[k]);
    }
    free(cnt);
    free(ibm);
    return 0;
oom:
    for (int k = 0; k < sets; k++) {
        free(js[k]);
        free(ws[k]);
    }
    free(cnt);
    free(ibm);
    return mfs_errf(err, "out of memory");
}

/* assimp reads a node's children before its own skin, so where two nodes
 * skin one mesh the last in that order wins; the same order here. */
static int apply_skins(build *b, const cgltf_node *gn)
{
    for (size_t c = 0; c < gn->children_count; c++)
        if (apply_skins(b, gn->children[c]) < 0)
            return -1;
    if (!gn->mesh || !gn->skin)
        return 0;
    uint32_t first = b->mesh_first[b->o->mesh_slot[gn->mesh - b->d->meshes]];
    for (size_t p = 0; p < gn->mesh->primitives_count; p++)
        if (skin_mesh(b, &b->s->meshes[first + p], &gn->mesh->primitives[p], gn->skin) < 0)
            return -1;
    return 0;
}

/* ---- materials ---- */

static char *tex_ref(build *b, const cgltf_texture_view *tv)
{
    if (!tv->texture || !tv->texture->image)
        return NULL;
    size_t i = (size_t)(tv->texture->image - b->d->images);
    int32_t k = b->o->img_slot[i];
    if (k >= 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "*%d", k);
        return mfs_strdup(buf);
    }
    const char *uri = b->d->images[i].uri;
    return uri && uri[0] ? mfs_strdup(uri) : NULL;
}

static int fill_materials(build *b)
{
    mfs_scene *s = b->s;
    s->n_materials = b->o->n_mats + 1;
    s->materials = calloc(s->n_materials, sizeof *s->materials);
    if (!s->materials)
        return mfs_errf(b->err, "out of memory");
    for (uint32_t i = 0; i < s->n_materials; i++) {
        mfs_material *m = &s->materials[i];
        const cgltf_material *gm = i < b->o->n_mats ? &b->d->materials[b->o->mats[i]] : NULL;
        m->name = mfs_strdup(gm && gm->name ? gm->name : "");
        if (!m->name)
            return mfs_errf(b->err, "out of memory");
        if (!gm)
            continue;
        m->textures[MFS_TEX_DIFFUSE] = tex_ref(b, &gm->pbr_metallic_roughness.base_color_texture);
        if (gm->has_pbr_specular_glossiness) {
            char *d = tex_ref(b, &gm->pbr_specular_glossiness.diffuse_texture);
            if (d) {
                free(m->textures[MFS_TEX_DIFFUSE]);
                m->textures[MFS_TEX_DIFFUSE] = d;
            }
            m->textures[MFS_TEX_SPECULAR] = tex_ref(b, &gm->pbr_specular_glossiness.specular_glossiness_texture);
        }
        m->textures[MFS_TEX_NORMAL] = tex_ref(b, &gm->normal_texture);
    }
    return 0;
}

/* ---- embedded images, for .tex ---- */

static size_t base64_size(const char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '=' || s[n - 1] == ' '))
        n--;
    return n * 3 / 4;
}

static void textures(build *b, mfs_iofs *fs, const char *rel, const mfs_import_opts *opt,
                     const cgltf_options *co)
{
    if (!opt)
        return;
    /* the names always (they decide whether a reference is embedded, and
     * so which files the search opens); the bytes only to decode */
    uint32_t n = b->o->n_imgs;
    mfs_embedded_image *emb = calloc(n + 1, sizeof *emb);
    void **owned = calloc(n + 1, sizeof *owned);
    if (!emb || !owned) {
        free(emb);
        free(owned);
        mfs_import_texture_from(b->s, NULL, 0, fs, rel, opt);
        return;
    }
    for (uint32_t k = 0; k < n; k++) {
        const cgltf_image *im = &b->d->images[b->o->imgs[k]];
        emb[k].filename = im->name;
        if (!opt->textures)
            continue;
        if (im->buffer_view) {
            const uint8_t *p = cgltf_buffer_view_data(im->buffer_view);
            emb[k].data = p;
            emb[k].size = p ? im->buffer_view->size : 0;
        } else if (im->uri) {
            const char *comma = strchr(im->uri, ',');
            if (comma && comma - im->uri >= 7 && strncmp(comma - 7, ";base64", 7) == 0) {
                size_t sz = base64_size(comma + 1);
                if (sz && cgltf_load_buffer_base64(co, sz, comma + 1, &owned[k]) == cgltf_result_success) {
                    emb[k].data = owned[k];
                    emb[k].size = sz;
                }
            }
        }
    }
    mfs_import_texture_from(b->s, emb, n, fs, rel, opt);
    for (uint32_t k = 0; k < n; k++)
        free(owned[k]);
    free(owned);
    free(emb);
}

/* ---- the import ---- */

static int build_scene(build *b, const cgltf_scene *sc)
{
    const cgltf_data *d = b->d;
    mfs_scene *s = b->s;
    order *o = b->o;
    /* meshes: one per primitive, glTF meshes in assimp's order */
    uint32_t total = 0;
    for (uint32_t i = 0; i < o->n_meshes; i++)
        total += (uint32_t)d->meshes[o->meshes[i]].primitives_count;
    s->meshes = calloc(total + 1, sizeof *s->meshes);
    b->mesh_first = calloc(o->n_meshes + 1, sizeof *b->mesh_first);
    if (!s->meshes || !b->mesh_first)
        return mfs_errf(b->err, "out of memory");
    for (uint32_t i = 0; i < o->n_meshes; i++) {
        const cgltf_mesh *gm = &d->meshes[o->meshes[i]];
        b->mesh_first[i] = s->n_meshes;
        for (size_t p = 0; p < gm->primitives_count; p++) {
            int r = fill_mesh(b, &s->meshes[s->n_meshes++], gm, p);
            if (r)
                return r;
        }
    }
    if (fill_materials(b) < 0)
        return -1;
    /* nodes */
    int deep = 0;
    uint32_t nn = sc->nodes_count == 1 ? 0 : 1;
    for (size_t i = 0; i < sc->nodes_count; i++)
        nn += count_tree(sc->nodes[i], nn ? 1 : 0, &deep);
    if (deep)
        return mfs_errf(b->err, "node tree deeper than %d levels", MFS_MAX_NODE_DEPTH);
    s->nodes = calloc(nn + 1, sizeof *s->nodes);
    if (!s->nodes)
        return mfs_errf(b->err, "out of memory");
    if (sc->nodes_count == 1) {
        int r = add_node(b, sc->nodes[0], -1);
        if (r)
            return r;
    } else {
        mfs_node *root = &s->nodes[b->next++];
        s->n_nodes = b->next;
        root->name = mfs_strdup("ROOT");
        root->parent = -1;
        mfs_mat4_identity(&root->local);
        root->children = calloc(sc->nodes_count + 1, sizeof *root->children);
        root->meshes = calloc(1, sizeof *root->meshes);
        if (!root->name || !root->children || !root->meshes)
            return mfs_errf(b->err, "out of memory");
        for (size_t i = 0; i < sc->nodes_count; i++) {
            s->nodes[0].children[s->nodes[0].n_children++] = b->next;
            int r = add_node(b, sc->nodes[i], 0);
            if (r)
                return r;
        }
    }
    s->n_nodes = b->next;
    for (size_t i = 0; i < sc->nodes_count; i++)
        if (apply_skins(b, sc->nodes[i]) < 0)
            return -1;
    if (mfs_gltf_fill_animations(b) < 0)
        return -1;
    /* An indexed primitive's vertices are the author's: welding would only
     * merge deliberate duplicates (and costs a third of the import), so it
     * is skipped; an unindexed one is one vertex per corner and is welded. */
    uint32_t k = 0;
    for (uint32_t i = 0; i < o->n_meshes; i++) {
        const cgltf_mesh *gm = &d->meshes[o->meshes[i]];
        for (size_t p = 0; p < gm->primitives_count; p++, k++)
            if ((gm->primitives[p].indices ? mfs_native_finish_indexed_mesh : mfs_native_finish_mesh)(
                    &s->meshes[k], b->tangents, b->err) < 0)
                return -1;
    }
    return 0;
}

static const char *cgltf_why(cgltf_result r)
{
    switch (r) {
    case cgltf_result_data_too_short: return "data too short";
    case cgltf_result_unknown_format: return "unknown format";
    case cgltf_result_invalid_json: return "invalid JSON";
    case cgltf_result_invalid_gltf: return "invalid glTF";
    case cgltf_result_file_not_found: return "a referenced file was not found";
    case cgltf_result_io_error: return "I/O error";
    case cgltf_result_out_of_memory: return "out of memory";
    case cgltf_result_legacy_gltf: return "glTF 1.0";
    default: return "unknown error";
    }
}

int mfs_native_gltf(mfs_iofs *fs, const char *rel, const mfs_import_opts *opt, mfs_scene **out,
                    char *why, size_t whysz, mfs_err *err)
{
    *out = NULL;
    decline dc = {why, whysz};
    io_ctx io = {fs, NULL};
    mfs_native_file main;
    if (mfs_native_open(fs, rel, &main) < 0) {
        if (mfs_iofs_refusal(fs, err) < 0)
            return -1;
        snprintf(why, whysz, "cannot open the model");
        return 1;
    }
    cgltf_options co;
    memset(&co, 0, sizeof co);
    co.file.read = mfs_gltf_io_read;
    co.file.release = mfs_gltf_io_release;
    co.file.user_data = &io;
    cgltf_data *d = NULL;
    order o;
    memset(&o, 0, sizeof o);
    build b = {0};
    int rc = 1;
    cgltf_result r = cgltf_parse(&co, main.data, main.size, &d);
    if (r != cgltf_result_success) {
        snprintf(why, whysz, "cgltf: %s", cgltf_why(r));
        goto done;
    }
    if (mfs_gltf_declines(d, &dc))
        goto done;
    r = cgltf_load_buffers(&co, d, rel);
    if (mfs_iofs_refusal(fs, err) < 0 || mfs_iofs_oom(fs, err) < 0) {
        rc = -1;
        goto done;
    }
    if (r != cgltf_result_success) {
        snprintf(why, whysz, "cgltf buffers: %s", cgltf_why(r));
        goto done;
    }
    r = cgltf_validate(d);
    if (r != cgltf_result_success) {
        snprintf(why, whysz, "cgltf_validate: %s", cgltf_why(r));
        goto done;
    }
    const cgltf_scene *sc = d->scene ? d->scene : d->scenes_count ? &d->scenes[0] : NULL;
    if (!sc) {
        snprintf(why, whysz, "no scene");
        goto done;
    }
    if (mfs_gltf_order_init(&o, d, sc) < 0) {
        rc = mfs_errf(err, "out of memory");
        goto done;
    }
    b.d = d;
    b.o = &o;
    b.dc = &dc;
    b.tangents = opt && opt->tangents;
    b.err = err;
    b.s = mfs_scene_new();
    b.node_at = malloc(sizeof *b.node_at * (d->nodes_count + 1));
    if (!b.s || !b.node_at) {
        rc = mfs_errf(err, "out of memory");
        goto done;
    }
    for (size_t i = 0; i <= d->nodes_count; i++)
        b.node_at[i] = -1;
    rc = build_scene(&b, sc);
    if (rc == 0) {
        textures(&b, fs, rel, opt, &co);
        *out = b.s;
        b.s = NULL;
    }
done:
    mfs_scene_free(b.s);
    free(b.node_at);
    free(b.mesh_first);
    mfs_gltf_order_free(&o);
    if (d)
        cgltf_free(d);
    mfs_gltf_io_close_all(&io);
    mfs_native_close(fs, &main);
    return rc;
}

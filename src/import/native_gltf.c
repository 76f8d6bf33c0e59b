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
 * twice, a primitive without positions or without a single face. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cgltf.h>

#include "native.h"
#include "texture.h"

#define MAX_ELEMENTS (1u << 27) /* per accessor; more is not a model */

typedef struct decline {
    char *why;
    size_t whysz;
} decline;

/* ---- file access through the confined file system ---- */

typedef struct file_rec {
    mfs_native_file f;
    struct file_rec *next;
} file_rec;

typedef struct io_ctx {
    mfs_iofs *fs;
    file_rec *files;
} io_ctx;

static cgltf_result io_read(const struct cgltf_memory_options *mo, const struct cgltf_file_options *fo,
                            const char *path, cgltf_size *size, void **data)
{
    (void)mo;
    io_ctx *io = fo->user_data;
    file_rec *r = calloc(1, sizeof *r);
    if (!r)
        return cgltf_result_out_of_memory;
    if (mfs_native_open(io->fs, path, &r->f) < 0) {
        free(r);
        return cgltf_result_file_not_found;
    }
    r->next = io->files;
    io->files = r;
    if (*size && *size > r->f.size)
        return cgltf_result_data_too_short;
    *size = r->f.size;
    *data = (void *)r->f.data;
    return cgltf_result_success;
}

/* Mapped files stay until the import ends (io_close_all): cgltf keeps
 * pointers into them. */
static void io_release(const struct cgltf_memory_options *mo, const struct cgltf_file_options *fo, void *data)
{
    (void)mo;
    (void)fo;
    (void)data;
}

static void io_close_all(io_ctx *io)
{
    while (io->files) {
        file_rec *r = io->files;
        io->files = r->next;
        mfs_native_close(io->fs, &r->f);
        free(r);
    }
}

/* ---- the order assimp's glTF reader meets objects in ---- */

typedef struct order {
    const cgltf_data *d;
    unsigned char *node_seen, *mesh_seen, *mat_seen, *img_seen, *skin_seen;
    int32_t *mesh_slot;   /* glTF mesh -> position in meshes[] */
    uint32_t *meshes, n_meshes;
    int32_t *mat_slot;    /* glTF material -> scene material */
    uint32_t *mats, n_mats;
    int32_t *img_slot;    /* glTF image -> embedded index, -1 if external */
    uint32_t *imgs, n_imgs;
} order;

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

static int order_init(order *o, const cgltf_data *d, const cgltf_scene *sc)
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

static void order_free(order *o)
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

/* ---- what is not for the native path ---- */

/* offset + stride * (count - 1) + elem, the last byte an accessor reads,
 * fits in a size_t.  cgltf_validate adds it up unchecked, so a byteStride
 * of 2^62 wraps to a small sum that passes, and the reads leave the buffer. */
static int span_fits(cgltf_size offset, cgltf_size stride, cgltf_size count, cgltf_size elem)
{
    cgltf_size span;
    return count == 0 || (!__builtin_mul_overflow(stride, count - 1, &span) &&
                          !__builtin_add_overflow(span, elem, &span) &&
                          !__builtin_add_overflow(span, offset, &span));
}

/* Sizes cgltf_validate would get wrong or check too late: accessor spans
 * that wrap, a sparse part larger than its accessor, and buffer views
 * beyond their buffer (validate reads sparse indices before checking
 * those). */
static int bad_sizes(const cgltf_data *d, decline *dc)
{
    for (size_t i = 0; i < d->buffer_views_count; i++) {
        const cgltf_buffer_view *v = &d->buffer_views[i];
        if (v->buffer && (v->offset > v->buffer->size || v->size > v->buffer->size - v->offset)) {
            snprintf(dc->why, dc->whysz, "buffer view %zu lies beyond its buffer", i);
            return 1;
        }
    }
    for (size_t i = 0; i < d->accessors_count; i++) {
        const cgltf_accessor *a = &d->accessors[i];
        const cgltf_accessor_sparse *sp = &a->sparse;
        cgltf_size elem = cgltf_calc_size(a->type, a->component_type);
        int bad = !span_fits(a->offset, a->stride, a->count, elem);
        if (a->is_sparse)
            bad |= sp->count > a->count ||
                   !span_fits(sp->indices_byte_offset, cgltf_component_size(sp->indices_component_type),
                              sp->count + 1, 0) ||
                   !span_fits(sp->values_byte_offset, elem, sp->count + 1, 0);
        if (bad) {
            snprintf(dc->why, dc->whysz, "accessor %zu: its size overflows", i);
            return 1;
        }
    }
    return 0;
}

static int declines(const cgltf_data *d, decline *dc)
{
    static const char *const fine[] = {
        "KHR_materials_", "KHR_texture_transform", "KHR_texture_basisu", "EXT_texture_webp",
        "KHR_lights_punctual", "KHR_materials_variants",
    };
    for (size_t i = 0; i < d->extensions_required_count; i++) {
        const char *e = d->extensions_required[i];
        int ok = 0;
        for (size_t k = 0; k < sizeof fine / sizeof *fine; k++)
            ok |= strncmp(e, fine[k], strlen(fine[k])) == 0;
        if (!ok) {
            snprintf(dc->why, dc->whysz, "requires extension %s", e);
            return 1;
        }
    }
    for (size_t i = 0; i < d->buffer_views_count; i++)
        if (d->buffer_views[i].has_meshopt_compression) {
            snprintf(dc->why, dc->whysz, "meshopt-compressed buffer views");
            return 1;
        }
    for (size_t i = 0; i < d->nodes_count; i++)
        if (d->nodes[i].has_mesh_gpu_instancing) {
            snprintf(dc->why, dc->whysz, "GPU instancing (EXT_mesh_gpu_instancing)");
            return 1;
        }
    for (size_t m = 0; m < d->meshes_count; m++)
        for (size_t p = 0; p < d->meshes[m].primitives_count; p++)
            if (d->meshes[m].primitives[p].has_draco_mesh_compression) {
                snprintf(dc->why, dc->whysz, "Draco-compressed primitives");
                return 1;
            }
    for (size_t i = 0; i < d->accessors_count; i++)
        if (d->accessors[i].count > MAX_ELEMENTS) {
            snprintf(dc->why, dc->whysz, "an accessor of %zu elements", (size_t)d->accessors[i].count);
            return 1;
        }
    return bad_sizes(d, dc);
}

/* ---- nodes ---- */

typedef struct build {
    const cgltf_data *d;
    mfs_scene *s;
    order *o;
    int32_t *node_at;    /* glTF node -> scene node, -1 if not in the tree */
    uint32_t *mesh_first; /* glTF mesh slot -> first scene mesh */
    uint32_t next;
    decline *dc;
    int tangents;        /* mfs_import_opts.tangents */
    mfs_err *err;
} build;

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

static float *unpack(const cgltf_accessor *a, size_t comps)
{
    if (!a || cgltf_num_components(a->type) != comps)
        return NULL;
    size_t n = a->count * comps;
    float *v = malloc(sizeof *v * (n ? n : 1));
    if (v && cgltf_accessor_unpack_floats(a, v, n) != n) {
        free(v);
        return NULL;
    }
    return v;
}

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
    m->positions = (float (*)[3])unpack(pa, 3);
    if (!m->positions) {
        snprintf(b->dc->why, b->dc->whysz, "mesh '%s': unreadable positions", m->name);
        return 1;
    }
    const cgltf_accessor *na = attr(p, cgltf_attribute_type_normal, 0);
    if (na && na->count == n) {
        m->normals = (float (*)[3])unpack(na, 3);
        const cgltf_accessor *ta = attr(p, cgltf_attribute_type_tangent, 0);
        float *t4 = ta && ta->count == n && m->normals ? unpack(ta, 4) : NULL;
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
        m->uv[k] = (float (*)[2])unpack(ua, 2);
        if (m->uv[k])
            for (uint32_t i = 0; i < n; i++)
                m->uv[k][i][1] = 1 - m->uv[k][i][1]; /* glTF's v runs downwards */
    }
    const cgltf_accessor *ca = attr(p, cgltf_attribute_type_color, 0);
    if (ca && ca->count == n) {
        size_t comps = cgltf_num_components(ca->type);
        float *c = comps == 3 || comps == 4 ? unpack(ca, comps) : NULL;
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
    float *ibm = sk->inverse_bind_matrices ? unpack(sk->inverse_bind_matrices, 16) : NULL;
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
        js[k] = unpack(ja, 4);
        ws[k] = unpack(wa, 4);
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

/* ---- animations ---- */

typedef struct track {
    const cgltf_animation_sampler *smp[3]; /* translation, rotation, scale */
} track;

/* A CUBICSPLINE sampler as the spec evaluates it (glTF 2.0, appendix C):
 * Hermite between keys with the tangents scaled by the key interval,
 * rotations normalised; times in milliseconds. */
typedef struct cubic_track {
    const float *t, *v;
    size_t n, comps;
    int path; /* 0 translation, 1 rotation, 2 scale */
} cubic_track;

static void cubic_pose(void *ctx, double ms, float tr[3], float q[4], float sc[3])
{
    const cubic_track *c = ctx;
    double sec = ms / 1000.0;
    size_t i = 0, hi = c->n > 1 ? c->n - 1 : 0; /* the interval [t[i], t[i+1]) holding sec */
    while (hi - i > 1) {
        size_t mid = (i + hi) / 2;
        if (sec >= c->t[mid])
            i = mid;
        else
            hi = mid;
    }
    float val[4];
    const float *p0 = &c->v[(3 * i + 1) * c->comps];
    if (c->n == 1) {
        memcpy(val, p0, sizeof(float) * c->comps);
    } else {
        const float *b0 = &c->v[(3 * i + 2) * c->comps];           /* out-tangent of i */
        const float *a1 = &c->v[(3 * (i + 1)) * c->comps];         /* in-tangent of i+1 */
        const float *p1 = &c->v[(3 * (i + 1) + 1) * c->comps];
        double dt = (double)c->t[i + 1] - c->t[i];
        double u = dt > 0 ? (sec - c->t[i]) / dt : 0;
        u = u < 0 ? 0 : u > 1 ? 1 : u;
        double u2 = u * u, u3 = u2 * u;
        double h00 = 2 * u3 - 3 * u2 + 1, h10 = u3 - 2 * u2 + u, h01 = -2 * u3 + 3 * u2, h11 = u3 - u2;
        for (size_t k = 0; k < c->comps; k++)
            val[k] = (float)(h00 * p0[k] + h10 * dt * b0[k] + h01 * p1[k] + h11 * dt * a1[k]);
    }
    tr[0] = tr[1] = tr[2] = 0;
    q[0] = q[1] = q[2] = 0, q[3] = 1;
    sc[0] = sc[1] = sc[2] = 1;
    if (c->path == 1) {
        double len = 0;
        for (int k = 0; k < 4; k++)
            len += (double)val[k] * val[k];
        if (len > 0 && isfinite(len))
            for (int k = 0; k < 4; k++)
                q[k] = (float)(val[k] / sqrt(len));
    } else {
        memcpy(c->path == 0 ? tr : sc, val, sizeof(float) * 3);
    }
}

/* The keys of a CUBICSPLINE sampler (t, v unpacked; both freed here). */
static size_t cubic_keys(float *t, float *v, size_t n, int path, double size, double **times, float **vals)
{
    size_t comps = path == 1 ? 4 : 3, k = 0;
    double *kt = malloc(sizeof *kt * n);
    mfs_channel c;
    memset(&c, 0, sizeof c);
    cubic_track ct = {t, v, n, comps, path};
    mfs_err err;
    int ok = kt != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        kt[k] = (double)(float)(t[i] * 1000.0f);
        if (k == 0 || kt[k] > kt[k - 1]) /* the spec wants rising times */
            k++;
    }
    ok = ok && k && mfs_channel_follow(&c, kt, k, cubic_pose, &ct, size, &err) == 0;
    double *ot = ok ? malloc(sizeof *ot * c.n_pos) : NULL;
    float *ov = ok ? malloc(sizeof *ov * c.n_pos * comps) : NULL;
    size_t m = 0;
    if (ot && ov) {
        for (m = 0; m < c.n_pos; m++) {
            ot[m] = c.pos[m].time;
            const float *src = path == 0 ? c.pos[m].v : path == 1 ? c.rot[m].q : c.scale[m].v;
            memcpy(&ov[m * comps], src, sizeof(float) * comps);
        }
    } else {
        free(ot), free(ov);
        ot = NULL, ov = NULL;
    }
    free(c.pos), free(c.rot), free(c.scale);
    free(kt), free(t), free(v);
    *times = ot;
    *vals = ov;
    return m;
}

/* Keys of one sampler in the scene's model (linear between keys, times in
 * milliseconds).  LINEAR as is; STEP as pairs of keys just before each
 * change; CUBICSPLINE at its keys and between them wherever linear keys
 * would leave the curve by more than MFS_FOLLOW_TOLERANCE of the model's
 * size (mfs_channel_follow).  Returns the key count, 0 if unreadable;
 * *times and *vals are malloc'ed. */
static size_t sampler_keys(const cgltf_animation_sampler *sm, int path, double size, double **times,
                           float **vals)
{
    const cgltf_accessor *in = sm->input, *out = sm->output;
    size_t n = in->count, comps = path == 1 ? 4 : 3;
    int cubic = sm->interpolation == cgltf_interpolation_type_cubic_spline;
    if (!n || cgltf_num_components(in->type) != 1 || cgltf_num_components(out->type) != comps ||
        out->count < (cubic ? 3 * n : n))
        return 0;
    float *t = unpack(in, 1), *v = unpack(out, comps);
    if (cubic && t && v)
        return cubic_keys(t, v, n, path, size, times, vals);
    size_t cap = 2 * n;
    double *ot = malloc(sizeof *ot * cap);
    float *ov = malloc(sizeof *ov * cap * comps);
    if (!t || !v || !ot || !ov) {
        free(t), free(v), free(ot), free(ov);
        return 0;
    }
    size_t k = 0;
#define PUT(time, src)                                                                             \
    do {                                                                                           \
        ot[k] = (double)(float)((float)(time) * 1000.0f);                                          \
        memcpy(&ov[k * comps], (src), sizeof(float) * comps);                                      \
        k++;                                                                                       \
    } while (0)
    if (sm->interpolation == cgltf_interpolation_type_step) {
        for (size_t i = 0; i < n; i++) {
            if (i > 0) {
                /* hold the previous value until a microsecond before */
                double prev = ot[k - 1], at = (double)(float)(t[i] * 1000.0f);
                double before = at - 1e-3 > prev ? at - 1e-3 : (prev + at) / 2;
                ot[k] = before;
                memcpy(&ov[k * comps], &v[(i - 1) * comps], sizeof(float) * comps);
                k++;
            }
            PUT(t[i], &v[i * comps]);
        }
    } else {
        for (size_t i = 0; i < n; i++)
            PUT(t[i], &v[i * comps]);
    }
#undef PUT
    free(t);
    free(v);
    *times = ot;
    *vals = ov;
    return k;
}

static int cmp_vec(const void *a, const void *b)
{
    double x = ((const mfs_vec_key *)a)->time, y = ((const mfs_vec_key *)b)->time;
    return (x > y) - (x < y);
}

static int cmp_quat(const void *a, const void *b)
{
    double x = ((const mfs_quat_key *)a)->time, y = ((const mfs_quat_key *)b)->time;
    return (x > y) - (x < y);
}

static int fill_channel(mfs_channel *c, const cgltf_node *gn, const track *tr, double size, double *dur)
{
    for (int path = 0; path < 3; path++) {
        size_t comps = path == 1 ? 4 : 3;
        double *t = NULL;
        float *v = NULL;
        size_t n = tr->smp[path] ? sampler_keys(tr->smp[path], path, size, &t, &v) : 0;
        const float *rest = path == 0 ? (gn->has_translation ? gn->translation : NULL)
                          : path == 1 ? (gn->has_rotation ? gn->rotation : NULL)
                                      : (gn->has_scale ? gn->scale : NULL);
        /* A node with a negative scale factor and no rotation: its
         * rotation is the identity (glTF 2.0, 5.25), and it must be said
         * so.  Left to mfs_channel_sample, the rotation would come from
         * decomposing the rest matrix, which keeps the scale positive but
         * for one mirror on x: next to a scale key of (1, -1, 1) that
         * turns the node 180 degrees about z, and next to (-1, -1, 1),
         * itself a half turn, it cancels the turn. */
        static const float unrotated[4] = {0, 0, 0, 1};
        int negative = gn->has_scale ? (gn->scale[0] < 0) + (gn->scale[1] < 0) + (gn->scale[2] < 0) : 0;
        if (path == 1 && !rest && !gn->has_matrix && negative > 0)
            rest = unrotated;
        if (!n && rest) {
            /* assimp's one key at 0 for an unanimated part */
            t = malloc(sizeof *t);
            v = malloc(sizeof *v * comps);
            if (!t || !v) {
                free(t), free(v);
                return -1;
            }
            t[0] = 0;
            memcpy(v, rest, sizeof *v * comps);
            n = 1;
        }
        if (n && t[n - 1] > *dur && tr->smp[path])
            *dur = t[n - 1];
        if (path == 1) {
            c->rot = calloc(n + 1, sizeof *c->rot);
            if (!c->rot) {
                free(t), free(v);
                return -1;
            }
            for (size_t i = 0; i < n; i++) {
                const float *q = &v[4 * i];
                double l = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] +
                                (double)q[3] * q[3]);
                mfs_quat_key *k = &c->rot[c->n_rot++];
                k->time = t[i];
                if (!(l > 1e-12) || !isfinite(l)) {
                    k->q[0] = k->q[1] = k->q[2] = 0, k->q[3] = 1;
                } else {
                    for (int j = 0; j < 4; j++)
                        k->q[j] = (float)(q[j] / l);
                }
            }
            qsort(c->rot, c->n_rot, sizeof *c->rot, cmp_quat);
        } else {
            mfs_vec_key *keys = calloc(n + 1, sizeof *keys);
            if (!keys) {
                free(t), free(v);
                return -1;
            }
            for (size_t i = 0; i < n; i++) {
                keys[i].time = t[i];
                memcpy(keys[i].v, &v[3 * i], sizeof keys[i].v);
            }
            qsort(keys, n, sizeof *keys, cmp_vec);
            if (path == 0)
                c->pos = keys, c->n_pos = (uint32_t)n;
            else
                c->scale = keys, c->n_scale = (uint32_t)n;
        }
        free(t);
        free(v);
    }
    return 0;
}

static int fill_animations(build *b)
{
    const cgltf_data *d = b->d;
    mfs_scene *s = b->s;
    double size = mfs_scene_size(s);
    s->animations = calloc(d->animations_count + 1, sizeof *s->animations);
    track *tr = calloc(d->nodes_count + 1, sizeof *tr);
    if (!s->animations || !tr) {
        free(tr);
        return mfs_errf(b->err, "out of memory");
    }
    for (size_t ai = 0; ai < d->animations_count; ai++) {
        const cgltf_animation *ga = &d->animations[ai];
        mfs_animation *a = &s->animations[s->n_animations++];
        a->name = mfs_strdup(ga->name ? ga->name : "");
        a->ticks_per_second = 1000.0;
        memset(tr, 0, sizeof *tr * (d->nodes_count + 1));
        uint32_t nch = 0;
        double morph_end = 0;
        for (size_t ci = 0; ci < ga->channels_count; ci++) {
            const cgltf_animation_channel *ch = &ga->channels[ci];
            const cgltf_animation_sampler *sm = ch->sampler;
            if (!sm || !sm->input || !sm->output || !ch->target_node || sm->input->count > sm->output->count)
                continue;
            int path = ch->target_path == cgltf_animation_path_type_translation ? 0
                     : ch->target_path == cgltf_animation_path_type_rotation    ? 1
                     : ch->target_path == cgltf_animation_path_type_scale       ? 2 : -1;
            if (path < 0) {
                /* morph weights: nothing in the scene moves, but the
                 * animation lasts as long as they do (as assimp counts it) */
                float last;
                if (ch->target_path == cgltf_animation_path_type_weights && sm->input->count &&
                    cgltf_accessor_read_float(sm->input, sm->input->count - 1, &last, 1) &&
                    (double)(float)(last * 1000.0f) > morph_end)
                    morph_end = (double)(float)(last * 1000.0f);
                continue;
            }
            track *t = &tr[ch->target_node - d->nodes];
            if (!t->smp[0] && !t->smp[1] && !t->smp[2])
                nch++;
            t->smp[path] = sm;
        }
        a->channels = calloc(nch + 1, sizeof *a->channels);
        if (!a->name || !a->channels) {
            free(tr);
            return mfs_errf(b->err, "out of memory");
        }
        double dur = morph_end;
        for (size_t ni = 0; ni < d->nodes_count; ni++) {
            if (!tr[ni].smp[0] && !tr[ni].smp[1] && !tr[ni].smp[2])
                continue;
            if (b->node_at[ni] < 0)
                continue; /* a node outside the scene moves nothing */
            mfs_channel *c = &a->channels[a->n_channels++];
            c->node = b->node_at[ni];
            if (fill_channel(c, &d->nodes[ni], &tr[ni], size, &dur) < 0) {
                free(tr);
                return mfs_errf(b->err, "out of memory");
            }
        }
        a->duration = dur;
    }
    free(tr);
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
    if (fill_animations(b) < 0)
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
    co.file.read = io_read;
    co.file.release = io_release;
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
    if (declines(d, &dc))
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
    if (order_init(&o, d, sc) < 0) {
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
    order_free(&o);
    if (d)
        cgltf_free(d);
    io_close_all(&io);
    mfs_native_close(fs, &main);
    return rc;
}

/* OBJ and MTL through fast_obj, into the neutral scene.
 *
 * fast_obj parses the numbers (the slow part of an OBJ); how faces group
 * into nodes and meshes is assimp 5.2.5's rule, replayed here from the
 * file's o/g/usemtl/mtllib statements (a scan of line heads), so that the
 * scene and the views are the ones the assimp path gives:
 *
 * - a root node named after the file, one child node per object, where
 *   "o NAME" starts an object (or returns to the one of that name) and
 *   "g NAME" starts a new one whenever the group changes;
 * - a new mesh whenever usemtl changes the material of a mesh that has
 *   faces, named after its material (the object's first mesh after the
 *   object); meshes without faces are dropped;
 * - materials: "DefaultMaterial" (for faces before any usemtl), then the
 *   .mtl's in its order, then names usemtl gives that no .mtl defines;
 * - one vertex per face corner, then assimp's normals (where the mesh has
 *   none), tangents, and welding (native.c); quads split at their concave
 *   corner as assimp splits them, larger polygons fanned (assimp clips
 *   ears: only a concave polygon of five or more corners differs, in which
 *   triangles it makes).
 *
 * Declined (assimp reads the file): what fast_obj does not parse (l and p
 * elements, free-form curves and surfaces, UTF-16 text, lines continued
 * with a backslash, faces of fewer than three corners), indices out of
 * range, a .mtl with texture options or norm/map_Kn/refl maps, no faces. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fast_obj.h>

#include "native.h"
#include "native_common.h"
#include "texture.h"

/* ---- file access through the confined file system ---- */

typedef struct obj_file {
    mfs_native_file f;
    size_t pos;
} obj_file;

typedef struct io_ctx {
    mfs_iofs *fs;
    const char *model;
    int mtl_unsupported;  /* a .mtl uses what fast_obj reads differently */
    char mtl_why[160];
} io_ctx;

static int starts_word(const char *p, const char *e, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(e - p) > n && strncmp(p, w, n) == 0 && (p[n] == ' ' || p[n] == '\t');
}

/* Texture options (-bm 1 x.png) and the maps fast_obj skips. */
static void scan_mtl(io_ctx *io, const char *s, size_t n)
{
    const char *end = s + n;
    for (const char *p = s; p < end;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        const char *q = p;
        while (q < e && (*q == ' ' || *q == '\t'))
            q++;
        if (starts_word(q, e, "norm") || starts_word(q, e, "map_Kn") || starts_word(q, e, "refl")) {
            snprintf(io->mtl_why, sizeof io->mtl_why, "the .mtl has normal or reflection maps");
            io->mtl_unsupported = 1;
        } else if (q < e && (starts_word(q, e, "map_Kd") || starts_word(q, e, "map_Ks") ||
                             starts_word(q, e, "map_Ka") || starts_word(q, e, "map_bump") ||
                             starts_word(q, e, "bump") || starts_word(q, e, "map_d"))) {
            while (q < e && *q != ' ' && *q != '\t')
                q++;
            while (q < e && (*q == ' ' || *q == '\t'))
                q++;
            if (q < e && *q == '-') {
                snprintf(io->mtl_why, sizeof io->mtl_why, "the .mtl has texture options");
                io->mtl_unsupported = 1;
            }
        }
        p = e + 1;
    }
}

static void *io_open(const char *path, void *user)
{
    io_ctx *io = user;
    obj_file *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    if (mfs_native_open(io->fs, path, &f->f) < 0) {
        free(f);
        return NULL;
    }
    if (strcmp(path, io->model) != 0)
        scan_mtl(io, (const char *)f->f.data, f->f.size);
    return f;
}

static void io_close(void *file, void *user)
{
    io_ctx *io = user;
    obj_file *f = file;
    mfs_native_close(io->fs, &f->f);
    free(f);
}

static size_t io_read(void *file, void *dst, size_t bytes, void *user)
{
    (void)user;
    obj_file *f = file;
    size_t left = f->f.size - f->pos;
    if (bytes > left)
        bytes = left;
    memcpy(dst, f->f.data + f->pos, bytes);
    f->pos += bytes;
    return bytes;
}

static unsigned long io_size(void *file, void *user)
{
    (void)user;
    return (unsigned long)((obj_file *)file)->f.size;
}

/* ---- the statements that shape the scene ---- */

enum { EV_OBJECT, EV_GROUP, EV_USEMTL, EV_MTLLIB };

typedef struct event {
    int kind;
    uint32_t face;      /* faces before it */
    char *name;
} event;

typedef struct scan {
    event *ev;
    size_t n, cap;
    uint32_t faces;
} scan;

static int is_sp(char c)
{
    return c == ' ' || c == '\t';
}

static int push_event(scan *sc, int kind, const char *s, const char *e)
{
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 16;
        event *nv = realloc(sc->ev, sizeof *nv * cap);
        if (!nv)
            return -1;
        sc->ev = nv;
        sc->cap = cap;
    }
    char *name = malloc((size_t)(e - s) + 1);
    if (!name)
        return -1;
    memcpy(name, s, (size_t)(e - s));
    name[e - s] = '\0';
    sc->ev[sc->n++] = (event){kind, sc->faces, name};
    return 0;
}

static void scan_free(scan *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->ev[i].name);
    free(sc->ev);
}

/* 0 scanned, 1 declined (why), -1 out of memory. */
static int scan_obj(const char *s, size_t n, scan *sc, char *why, size_t whysz)
{
    if (n >= 2 && (((unsigned char)s[0] == 0xFE && (unsigned char)s[1] == 0xFF) ||
                   ((unsigned char)s[0] == 0xFF && (unsigned char)s[1] == 0xFE))) {
        snprintf(why, whysz, "UTF-16 text");
        return 1;
    }
    if (memchr(s, '\0', n)) {
        snprintf(why, whysz, "NUL bytes in the text");
        return 1;
    }
    const char *end = s + n;
    for (const char *p = s; p < end;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        const char *le = e;
        while (le > p && (le[-1] == '\r' || is_sp(le[-1])))
            le--;
        const char *q = p;
        while (q < le && is_sp(*q))
            q++;
        const char *w = q;
        while (q < le && !is_sp(*q))
            q++;
        size_t wl = (size_t)(q - w);
        const char *arg = q;
        while (arg < le && is_sp(*arg))
            arg++;
        if (le > p && le[-1] == '\\' && (wl == 0 || w[0] != '#')) {
            snprintf(why, whysz, "a line continued with a backslash");
            return 1;
        }
        if (wl == 1 && w[0] == 'f') {
            sc->faces++;
            int corners = 0;
            for (const char *c = arg; c < le;) {
                while (c < le && is_sp(*c))
                    c++;
                if (c < le)
                    corners++;
                while (c < le && !is_sp(*c))
                    c++;
            }
            if (corners < 3) {
                snprintf(why, whysz, "a face of %d corners", corners);
                return 1;
            }
        } else if (wl == 1 && (w[0] == 'l' || w[0] == 'p')) {
            snprintf(why, whysz, "OBJ %s elements", w[0] == 'l' ? "line" : "point");
            return 1;
        } else if ((wl == 4 && (!strncmp(w, "curv", 4) || !strncmp(w, "surf", 4))) ||
                   (wl == 5 && !strncmp(w, "curv2", 5)) || (wl == 6 && !strncmp(w, "cstype", 6))) {
            snprintf(why, whysz, "free-form geometry");
            return 1;
        } else if (wl == 1 && w[0] == 'o') {
            const char *ne = arg;
            while (ne < le && !is_sp(*ne))
                ne++;
            if (ne > arg && push_event(sc, EV_OBJECT, arg, ne) < 0)
                return -1;
        } else if (wl == 1 && w[0] == 'g') {
            if (push_event(sc, EV_GROUP, arg, le) < 0)
                return -1;
        } else if (wl == 6 && !strncmp(w, "usemtl", 6)) {
            if (push_event(sc, EV_USEMTL, arg, le) < 0)
                return -1;
        } else if (wl == 6 && !strncmp(w, "mtllib", 6)) {
            if (push_event(sc, EV_MTLLIB, arg, le) < 0)
                return -1;
        }
        p = e + 1;
    }
    return 0;
}

/* ---- assimp's object and mesh model, replayed ---- */

#define NO_MATERIAL UINT32_MAX

typedef struct omesh {
    const char *name;
    uint32_t material;      /* index into the material list, NO_MATERIAL */
    uint32_t *faces;        /* fast_obj face indices */
    uint32_t n_faces, cap;
    int attached;
} omesh;

typedef struct oobj {
    const char *name;
    uint32_t *meshes;
    uint32_t n_meshes, cap;
} oobj;

typedef struct model {
    const fastObjMesh *fo;
    omesh *meshes;
    uint32_t n_meshes, cap_meshes;
    oobj *objs;
    uint32_t n_objs, cap_objs;
    int cur_obj, cur_mesh;   /* -1: none */
    const char **mats;       /* material names: "DefaultMaterial" first */
    int32_t *mat_fo;         /* the fast_obj material behind each, or -1 */
    uint32_t n_mats, cap_mats;
    int cur_mat;             /* -1: none */
    const char *group;
    int mtl_loaded;
} model;

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap * 2 : 8;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, elem * c);
    if (!n)
        return -1;
    *p = n;
    *cap = c;
    return 0;
}

static int mat_index(const model *md, const char *name)
{
    for (uint32_t i = 0; i < md->n_mats; i++)
        if (strcmp(md->mats[i], name) == 0)
            return (int)i;
    return -1;
}

static int add_mat(model *md, const char *name, int32_t fo)
{
    if (grow((void **)&md->mats, &md->cap_mats, md->n_mats + 1, sizeof *md->mats) < 0)
        return -1;
    uint32_t cap = md->cap_mats;
    int32_t *nf = realloc(md->mat_fo, sizeof *nf * cap);
    if (!nf)
        return -1;
    md->mat_fo = nf;
    md->mats[md->n_mats] = name;
    md->mat_fo[md->n_mats] = fo;
    return (int)md->n_mats++;
}

static int create_mesh(model *md, const char *name)
{
    if (grow((void **)&md->meshes, &md->cap_meshes, md->n_meshes + 1, sizeof *md->meshes) < 0)
        return -1;
    omesh *m = &md->meshes[md->n_meshes];
    memset(m, 0, sizeof *m);
    m->name = name;
    m->material = NO_MATERIAL;
    md->cur_mesh = (int)md->n_meshes++;
    if (md->cur_obj >= 0) {
        oobj *o = &md->objs[md->cur_obj];
        if (grow((void **)&o->meshes, &o->cap, o->n_meshes + 1, sizeof *o->meshes) < 0)
            return -1;
        o->meshes[o->n_meshes++] = (uint32_t)md->cur_mesh;
        m->attached = 1;
    }
    return 0;
}

static int create_object(model *md, const char *name)
{
    if (grow((void **)&md->objs, &md->cap_objs, md->n_objs + 1, sizeof *md->objs) < 0)
        return -1;
    oobj *o = &md->objs[md->n_objs];
    memset(o, 0, sizeof *o);
    o->name = name;
    md->cur_obj = (int)md->n_objs++;
    if (create_mesh(md, name) < 0)
        return -1;
    if (md->cur_mat >= 0)
        md->meshes[md->cur_mesh].material = (uint32_t)md->cur_mat;
    return 0;
}

static int load_mtl(model *md)
{
    if (md->mtl_loaded)
        return 0;
    md->mtl_loaded = 1;
    for (unsigned i = 0; i < md->fo->material_count; i++) {
        const fastObjMaterial *fm = &md->fo->materials[i];
        if (fm->fallback || !fm->name || !fm->name[0] || mat_index(md, fm->name) >= 0)
            continue;
        if (add_mat(md, fm->name, (int32_t)i) < 0)
            return -1;
    }
    return 0;
}

static int32_t fo_material(const model *md, const char *name)
{
    for (unsigned i = 0; i < md->fo->material_count; i++)
        if (md->fo->materials[i].name && strcmp(md->fo->materials[i].name, name) == 0)
            return md->fo->materials[i].fallback ? -1 : (int32_t)i;
    return -1;
}

static int apply_event(model *md, const event *ev)
{
    switch (ev->kind) {
    case EV_MTLLIB:
        return load_mtl(md);
    case EV_OBJECT:
        for (uint32_t i = 0; i < md->n_objs; i++)
            if (strcmp(md->objs[i].name, ev->name) == 0) {
                md->cur_obj = (int)i; /* the current mesh stays: assimp's rule */
                return 0;
            }
        return create_object(md, ev->name);
    case EV_GROUP:
        if (strcmp(md->group, ev->name) == 0)
            return 0;
        md->group = ev->name;
        return create_object(md, ev->name);
    case EV_USEMTL: {
        if (!ev->name[0] || (md->cur_mat >= 0 && strcmp(md->mats[md->cur_mat], ev->name) == 0))
            return 0;
        int k = mat_index(md, ev->name);
        if (k < 0 && (k = add_mat(md, ev->name, fo_material(md, ev->name))) < 0)
            return -1;
        md->cur_mat = k;
        int need = md->cur_mesh < 0;
        if (!need) {
            const omesh *m = &md->meshes[md->cur_mesh];
            need = m->material != NO_MATERIAL && m->material != (uint32_t)k && m->n_faces > 0;
        }
        if (need && create_mesh(md, ev->name) < 0)
            return -1;
        md->meshes[md->cur_mesh].material = (uint32_t)k;
        return 0;
    }
    }
    return 0;
}

static int add_face(model *md, uint32_t f)
{
    if (md->cur_obj < 0 && create_object(md, "defaultobject") < 0)
        return -1;
    if (md->cur_mesh < 0 && create_mesh(md, "defaultobject") < 0)
        return -1;
    omesh *m = &md->meshes[md->cur_mesh];
    if (grow((void **)&m->faces, &m->cap, m->n_faces + 1, sizeof *m->faces) < 0)
        return -1;
    m->faces[m->n_faces++] = f;
    return 0;
}

static void model_free(model *md)
{
    for (uint32_t i = 0; i < md->n_meshes; i++)
        free(md->meshes[i].faces);
    for (uint32_t i = 0; i < md->n_objs; i++)
        free(md->objs[i].meshes);
    free(md->meshes);
    free(md->objs);
    free(md->mats);
    free(md->mat_fo);
}

/* ---- geometry ---- */

static void vsub(float r[3], const float *a, const float *b)
{
    r[0] = a[0] - b[0], r[1] = a[1] - b[1], r[2] = a[2] - b[2];
}

static void vnorm(float v[3])
{
    float l = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    v[0] /= l, v[1] /= l, v[2] /= l;
}

/* The corner a quad is fanned from: its concave corner if it has one
 * (the angles either side of the diagonal add up to more than pi), as
 * assimp's Triangulate decides it. */
static unsigned quad_start(const float *p[4])
{
    for (unsigned i = 0; i < 4; i++) {
        const float *v0 = p[i], *v1 = p[(i + 3) % 4], *v2 = p[(i + 2) % 4], *v3 = p[(i + 1) % 4];
        float left[3], diag[3], right[3];
        vsub(left, v0, v3);
        vsub(diag, v1, v3);
        vsub(right, v2, v3);
        vnorm(left), vnorm(diag), vnorm(right);
        float a = acosf(left[0] * diag[0] + left[1] * diag[1] + left[2] * diag[2]) +
                  acosf(right[0] * diag[0] + right[1] * diag[1] + right[2] * diag[2]);
        if (a > (float)M_PI)
            return i;
    }
    return 0;
}

static int build_mesh(const fastObjMesh *fo, const uint32_t *face_start, const omesh *om, mfs_mesh *m,
                      mfs_err *err)
{
    uint32_t corners = 0, tris = 0;
    int has_n = 0, has_t = 0;
    for (uint32_t i = 0; i < om->n_faces; i++) {
        uint32_t f = om->faces[i], k = fo->face_vertices[f];
        corners += k;
        tris += k - 2;
        for (uint32_t c = 0; c < k; c++) {
            const fastObjIndex *ix = &fo->indices[face_start[f] + c];
            has_n |= ix->n != 0;
            has_t |= ix->t != 0;
        }
    }
    has_n &= fo->normal_count > 1;
    has_t &= fo->texcoord_count > 1;
    m->prim = MFS_PRIM_TRIANGLES;
    m->n_vertices = corners;
    m->positions = malloc(sizeof *m->positions * corners);
    m->normals = has_n ? malloc(sizeof *m->normals * corners) : NULL;
    m->uv[0] = has_t ? malloc(sizeof *m->uv[0] * corners) : NULL;
    m->colors = fo->color_count ? malloc(sizeof *m->colors * corners) : NULL;
    m->indices = malloc(sizeof *m->indices * 3 * (tris + 1));
    if (!m->positions || (has_n && !m->normals) || (has_t && !m->uv[0]) ||
        (fo->color_count && !m->colors) || !m->indices)
        return mfs_errf(err, "out of memory");
    uint32_t v = 0, t = 0;
    for (uint32_t i = 0; i < om->n_faces; i++) {
        uint32_t f = om->faces[i], k = fo->face_vertices[f], first = v;
        for (uint32_t c = 0; c < k; c++, v++) {
            const fastObjIndex *ix = &fo->indices[face_start[f] + c];
            memcpy(m->positions[v], &fo->positions[3 * ix->p], sizeof m->positions[v]);
            if (m->normals)
                memcpy(m->normals[v], &fo->normals[3 * ix->n], sizeof m->normals[v]);
            if (m->uv[0])
                memcpy(m->uv[0][v], &fo->texcoords[2 * ix->t], sizeof m->uv[0][v]);
            if (m->colors) {
                memcpy(m->colors[v], &fo->colors[3 * ix->p], sizeof(float) * 3);
                m->colors[v][3] = 1;
            }
        }
        uint32_t *o = &m->indices[3 * t];
        if (k == 4) {
            const float *p[4] = {m->positions[first], m->positions[first + 1], m->positions[first + 2],
                                 m->positions[first + 3]};
            unsigned s = quad_start(p);
            uint32_t q[6] = {s, (s + 1) % 4, (s + 2) % 4, s, (s + 2) % 4, (s + 3) % 4};
            for (int j = 0; j < 6; j++)
                o[j] = first + q[j];
            t += 2;
        } else {
            for (uint32_t c = 1; c + 1 < k; c++, t++) {
                o[0] = first, o[1] = first + c, o[2] = first + c + 1;
                o += 3;
            }
        }
    }
    m->n_faces = t;
    return 0;
}

static char *texture_name(const fastObjMesh *fo, unsigned idx)
{
    if (!idx || idx >= fo->texture_count || !fo->textures[idx].name)
        return NULL;
    return mfs_strdup(fo->textures[idx].name);
}

static int fill_scene(const model *md, const char *rel, int tangents, mfs_scene *s, mfs_err *err)
{
    const fastObjMesh *fo = md->fo;
    uint32_t *face_start = malloc(sizeof *face_start * (fo->face_count + 1));
    if (!face_start)
        return mfs_errf(err, "out of memory");
    for (uint32_t f = 0, at = 0; f < fo->face_count; f++) {
        face_start[f] = at;
        at += fo->face_vertices[f];
    }
    /* materials */
    s->materials = calloc(md->n_mats, sizeof *s->materials);
    if (!s->materials)
        goto oom;
    s->n_materials = md->n_mats;
    for (uint32_t i = 0; i < md->n_mats; i++) {
        mfs_material *m = &s->materials[i];
        if (!(m->name = mfs_strdup(md->mats[i])))
            goto oom;
        if (md->mat_fo[i] < 0)
            continue;
        const fastObjMaterial *fm = &fo->materials[md->mat_fo[i]];
        m->textures[MFS_TEX_DIFFUSE] = texture_name(fo, fm->map_Kd);
        m->textures[MFS_TEX_SPECULAR] = texture_name(fo, fm->map_Ks);
        m->textures[MFS_TEX_NORMAL] = texture_name(fo, fm->map_bump);
    }
    /* nodes: the root, one per object */
    s->nodes = calloc(md->n_objs + 1, sizeof *s->nodes);
    if (!s->nodes)
        goto oom;
    s->n_nodes = md->n_objs + 1;
    const char *slash = strrchr(rel, '/');
    mfs_node *root = &s->nodes[0];
    root->name = mfs_strdup(slash ? slash + 1 : rel);
    root->parent = -1;
    mfs_mat4_identity(&root->local);
    root->children = calloc(md->n_objs + 1, sizeof *root->children);
    root->meshes = calloc(1, sizeof *root->meshes);
    if (!root->name || !root->children || !root->meshes)
        goto oom;
    uint32_t total = 0;
    for (uint32_t i = 0; i < md->n_meshes; i++)
        total += md->meshes[i].attached && md->meshes[i].n_faces > 0;
    s->meshes = calloc(total + 1, sizeof *s->meshes);
    if (!s->meshes)
        goto oom;
    for (uint32_t i = 0; i < md->n_objs; i++) {
        const oobj *ob = &md->objs[i];
        mfs_node *n = &s->nodes[i + 1];
        root->children[root->n_children++] = i + 1;
        n->name = mfs_strdup(ob->name);
        n->parent = 0;
        mfs_mat4_identity(&n->local);
        n->children = calloc(1, sizeof *n->children);
        n->meshes = calloc(ob->n_meshes + 1, sizeof *n->meshes);
        if (!n->name || !n->children || !n->meshes)
            goto oom;
        for (uint32_t k = 0; k < ob->n_meshes; k++) {
            const omesh *om = &md->meshes[ob->meshes[k]];
            if (!om->n_faces)
                continue;
            mfs_mesh *m = &s->meshes[s->n_meshes];
            n->meshes[n->n_meshes++] = s->n_meshes++;
            m->name = mfs_strdup(om->name);
            m->material = om->material == NO_MATERIAL ? 0 : (int32_t)om->material;
            if (!m->name || build_mesh(fo, face_start, om, m, err) < 0 ||
                mfs_native_finish_mesh(m, tangents, err) < 0) {
                free(face_start);
                return -1;
            }
        }
    }
    free(face_start);
    return 0;
oom:
    free(face_start);
    return mfs_errf(err, "out of memory");
}

static int check_indices(const fastObjMesh *fo, char *why, size_t whysz)
{
    for (unsigned i = 0; i < fo->index_count; i++) {
        const fastObjIndex *ix = &fo->indices[i];
        if (ix->p == 0 || ix->p >= fo->position_count || ix->t >= fo->texcoord_count ||
            ix->n >= fo->normal_count) {
            snprintf(why, whysz, "a face index out of range");
            return 1;
        }
    }
    for (unsigned f = 0; f < fo->face_count; f++)
        if (fo->face_vertices[f] < 3) {
            snprintf(why, whysz, "a face of fewer than three corners");
            return 1;
        }
    return 0;
}

int mfs_native_obj(mfs_iofs *fs, const char *rel, const mfs_import_opts *opt, mfs_scene **out,
                   char *why, size_t whysz, mfs_err *err)
{
    *out = NULL;
    mfs_native_file main;
    if (mfs_native_open(fs, rel, &main) < 0) {
        if (fs->refused_count)
            return mfs_errf(err, "refused to open '%s': outside the source root", fs->refused);
        snprintf(why, whysz, "cannot open the model");
        return 1;
    }
    scan sc = {0};
    model md;
    memset(&md, 0, sizeof md);
    md.cur_obj = md.cur_mesh = md.cur_mat = -1;
    md.group = "";
    fastObjMesh *fo = NULL;
    mfs_scene *s = NULL;
    int rc = scan_obj((const char *)main.data, main.size, &sc, why, whysz);
    if (rc < 0)
        rc = mfs_errf(err, "out of memory");
    if (rc)
        goto done;
    rc = 1;
    if (sc.faces == 0) {
        snprintf(why, whysz, "no faces");
        goto done;
    }
    io_ctx io = {fs, rel, 0, ""};
    fastObjCallbacks cb = {io_open, io_close, io_read, io_size};
    fo = fast_obj_read_with_callbacks(rel, &cb, &io);
    if (mfs_iofs_refusal(fs, err) < 0 || mfs_iofs_oom(fs, err) < 0) {
        rc = -1;
        goto done;
    }
    if (!fo) {
        snprintf(why, whysz, "fast_obj could not read it");
        goto done;
    }
    if (io.mtl_unsupported) {
        snprintf(why, whysz, "%s", io.mtl_why);
        goto done;
    }
    if (fo->face_count != sc.faces) {
        snprintf(why, whysz, "fast_obj read %u faces where the text has %u", fo->face_count, sc.faces);
        goto done;
    }
    if (check_indices(fo, why, whysz))
        goto done;
    md.fo = fo;
    if (add_mat(&md, "DefaultMaterial", -1) < 0) {
        rc = mfs_errf(err, "out of memory");
        goto done;
    }
    size_t e = 0;
    for (uint32_t f = 0; f < fo->face_count; f++) {
        for (; e < sc.n && sc.ev[e].face == f; e++)
            if (apply_event(&md, &sc.ev[e]) < 0) {
                rc = mfs_errf(err, "out of memory");
                goto done;
            }
        if (add_face(&md, f) < 0) {
            rc = mfs_errf(err, "out of memory");
            goto done;
        }
    }
    for (; e < sc.n; e++) /* statements after the last face still make nodes */
        if (apply_event(&md, &sc.ev[e]) < 0) {
            rc = mfs_errf(err, "out of memory");
            goto done;
        }
    s = mfs_scene_new();
    if (!s) {
        rc = mfs_errf(err, "out of memory");
        goto done;
    }
    if (fill_scene(&md, rel, opt && opt->tangents, s, err) < 0) {
        rc = -1;
        goto done;
    }
    mfs_import_texture_from(s, NULL, 0, fs, rel, opt);
    *out = s;
    s = NULL;
    rc = 0;
done:
    mfs_scene_free(s);
    model_free(&md);
    if (fo)
        fast_obj_destroy(fo);
    scan_free(&sc);
    mfs_native_close(fs, &main);
    return rc;
}

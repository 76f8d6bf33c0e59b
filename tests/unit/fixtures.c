#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "meshfs/util.h"
#include "meshfs/formats.h"

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p)
        abort();
    return p;
}

static void set_nodes(mfs_scene *s, uint32_t n)
{
    s->n_nodes = n;
    s->nodes = xcalloc(n, sizeof(mfs_node));
    for (uint32_t i = 0; i < n; i++)
        mfs_mat4_identity(&s->nodes[i].local);
}

static void add_child(mfs_scene *s, uint32_t parent, uint32_t child)
{
    mfs_node *p = &s->nodes[parent];
    p->children = realloc(p->children, sizeof(uint32_t) * (p->n_children + 1));
    p->children[p->n_children++] = child;
    s->nodes[child].parent = (int32_t)parent;
}

static void place_mesh(mfs_scene *s, uint32_t node, uint32_t mesh)
{
    mfs_node *n = &s->nodes[node];
    n->meshes = realloc(n->meshes, sizeof(uint32_t) * (n->n_meshes + 1));
    n->meshes[n->n_meshes++] = mesh;
}

mfs_scene *fixture_cube(void)
{
    static const float normals[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0},
                                        {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    /* For each face: two in-plane axes u, v with u x v = normal, so the
     * corners (-u-v, +u-v, +u+v, -u+v) run counter-clockwise seen from
     * outside. */
    static const float us[6][3] = {{0, 0, -1}, {0, 0, 1}, {1, 0, 0},
                                   {1, 0, 0},  {1, 0, 0}, {-1, 0, 0}};
    static const float vs[6][3] = {{0, 1, 0}, {0, 1, 0}, {0, 0, -1},
                                   {0, 0, 1}, {0, 1, 0}, {0, 1, 0}};
    static const float corner[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
    static const float uvc[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};

    mfs_scene *s = mfs_scene_new();
    set_nodes(s, 2);
    s->nodes[0].name = mfs_strdup("root");
    s->nodes[0].parent = -1;
    s->nodes[1].name = mfs_strdup("cube");
    add_child(s, 0, 1);
    place_mesh(s, 1, 0);

    s->n_materials = 1;
    s->materials = xcalloc(1, sizeof(mfs_material));
    s->materials[0].name = mfs_strdup("cube_mat");
    s->materials[0].textures[MFS_TEX_DIFFUSE] = mfs_strdup("textures/cube.png");

    s->n_meshes = 1;
    s->meshes = xcalloc(1, sizeof(mfs_mesh));
    mfs_mesh *m = &s->meshes[0];
    m->name = mfs_strdup("cube");
    m->material = 0;
    m->prim = MFS_PRIM_TRIANGLES;
    m->n_vertices = 24;
    m->positions = xcalloc(24, sizeof *m->positions);
    m->normals = xcalloc(24, sizeof *m->normals);
    m->uv[0] = xcalloc(24, sizeof *m->uv[0]);
    m->n_faces = 12;
    m->indices = xcalloc(36, sizeof(uint32_t));
    for (int f = 0; f < 6; f++) {
        for (int c = 0; c < 4; c++) {
            int v = f * 4 + c;
            for (int k = 0; k < 3; k++) {
                m->positions[v][k] = 0.5f * normals[f][k] + 0.5f * corner[c][0] * us[f][k] +
                                     0.5f * corner[c][1] * vs[f][k];
                m->normals[v][k] = normals[f][k];
            }
            m->uv[0][v][0] = uvc[c][0];
            m->uv[0][v][1] = uvc[c][1];
        }
        uint32_t b = (uint32_t)f * 4;
        uint32_t *t = &m->indices[f * 6];
        t[0] = b; t[1] = b + 1; t[2] = b + 2;
        t[3] = b; t[4] = b + 2; t[5] = b + 3;
    }
    return s;
}

mfs_scene *fixture_skinned_strip(void)
{
    mfs_scene *s = mfs_scene_new();
    set_nodes(s, 4);
    s->nodes[0].name = mfs_strdup("root");
    s->nodes[0].parent = -1;
    s->nodes[1].name = mfs_strdup("strip");
    s->nodes[2].name = mfs_strdup("bone0");
    s->nodes[3].name = mfs_strdup("bone1");
    add_child(s, 0, 1);
    add_child(s, 0, 2);
    add_child(s, 2, 3);
    s->nodes[3].local.m[7] = 1.0f;
    place_mesh(s, 1, 0);

    s->n_materials = 1;
    s->materials = xcalloc(1, sizeof(mfs_material));
    s->materials[0].name = mfs_strdup("strip_mat");

    s->n_meshes = 1;
    s->meshes = xcalloc(1, sizeof(mfs_mesh));
    mfs_mesh *m = &s->meshes[0];
    m->name = mfs_strdup("strip");
    m->material = 0;
    m->prim = MFS_PRIM_TRIANGLES;
    m->n_vertices = 6;
    m->positions = xcalloc(6, sizeof *m->positions);
    m->normals = xcalloc(6, sizeof *m->normals);
    m->uv[0] = xcalloc(6, sizeof *m->uv[0]);
    for (int v = 0; v < 6; v++) {
        m->positions[v][0] = (float)(v % 2);
        m->positions[v][1] = (float)(v / 2);
        m->normals[v][2] = 1.0f;
        m->uv[0][v][0] = (float)(v % 2);
        m->uv[0][v][1] = (float)(v / 2) / 2.0f;
    }
    static const uint32_t tris[12] = {0, 1, 3, 0, 3, 2, 2, 3, 5, 2, 5, 4};
    m->n_faces = 4;
    m->indices = xcalloc(12, sizeof(uint32_t));
    memcpy(m->indices, tris, sizeof tris);

    m->n_bones = 2;
    m->bones = xcalloc(2, sizeof(mfs_bone));
    mfs_bone *b0 = &m->bones[0], *b1 = &m->bones[1];
    b0->name = mfs_strdup("bone0");
    b0->node = 2;
    mfs_mat4_identity(&b0->offset);
    b0->n_weights = 4;
    b0->weights = xcalloc(4, sizeof(mfs_weight));
    b0->weights[0] = (mfs_weight){0, 1.0f};
    b0->weights[1] = (mfs_weight){1, 1.0f};
    b0->weights[2] = (mfs_weight){2, 0.5f};
    b0->weights[3] = (mfs_weight){3, 0.5f};
    b1->name = mfs_strdup("bone1");
    b1->node = 3;
    mfs_mat4_identity(&b1->offset);
    b1->offset.m[7] = -1.0f;
    b1->n_weights = 4;
    b1->weights = xcalloc(4, sizeof(mfs_weight));
    b1->weights[0] = (mfs_weight){2, 0.5f};
    b1->weights[1] = (mfs_weight){3, 0.5f};
    b1->weights[2] = (mfs_weight){4, 1.0f};
    b1->weights[3] = (mfs_weight){5, 1.0f};

    s->n_animations = 1;
    s->animations = xcalloc(1, sizeof(mfs_animation));
    mfs_animation *a = &s->animations[0];
    a->name = mfs_strdup("bend");
    a->duration = 10.0;
    a->ticks_per_second = 10.0;
    a->n_channels = 1;
    a->channels = xcalloc(1, sizeof(mfs_channel));
    mfs_channel *c = &a->channels[0];
    c->node = 3;
    c->n_rot = 2;
    c->rot = xcalloc(2, sizeof(mfs_quat_key));
    c->rot[0] = (mfs_quat_key){0.0, {0, 0, 0, 1}};
    c->rot[1] = (mfs_quat_key){10.0, {0, 0, 0.70710678f, 0.70710678f}};
    c->n_pos = 1;
    c->pos = xcalloc(1, sizeof(mfs_vec_key));
    c->pos[0] = (mfs_vec_key){0.0, {0, 1, 0}};
    return s;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

int fixture_tempdir(char *buf, size_t n, const char *name)
{
    const char *t = getenv("TMPDIR");
    snprintf(buf, n, "%s/%s.XXXXXX", t && *t ? t : "/tmp", name);
    return mkdtemp(buf) ? 0 : -1;
}

void fixture_rmtree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int fixture_write(const char *dir, const char *name, const char *text)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return -1;
    FILE *fp = fopen(p, "w");
    if (!fp)
        return -1;
    int bad = fputs(text, fp) < 0;
    return fclose(fp) != 0 || bad ? -1 : 0;
}

int fixture_cache_dirs_setup(void **state, const char *name)
{
    fixture_cache_dirs *f = calloc(1, sizeof *f);
    if (!f || fixture_tempdir(f->base, sizeof f->base, name) < 0) {
        free(f);
        return -1;
    }
    snprintf(f->dir, sizeof f->dir, "%s/cache", f->base);
    snprintf(f->root, sizeof f->root, "%s/src", f->base);
    mkdir(f->root, 0700);
    f->rootfd = open(f->root, O_RDONLY | O_DIRECTORY);
    *state = f;
    return f->rootfd < 0 ? -1 : 0;
}

int fixture_cache_dirs_teardown(void **state)
{
    fixture_cache_dirs *f = *state;
    close(f->rootfd);
    fixture_rmtree(f->base);
    free(f);
    return 0;
}

char *fixture_dem_text(const mfs_scene *s, const char *model_path, mfs_err *err)
{
    mfs_options o;
    mfs_options_default(&o);
    o.model_path = model_path;
    if (mfs_scene_validate(s, err) != 0)
        return mfs_err_prefix(err, "scene"), NULL;
    mfs_sink out;
    mfs_sink_init_mem(&out);
    if (mfs_write_dem(s, NULL, &o, &out, err) != 0) {
        mfs_sink_finish(&out);
        free(mfs_sink_take(&out, &(size_t){0}));
        return mfs_err_prefix(err, "dem writer"), NULL;
    }
    mfs_put_u8(&out, 0);
    if (mfs_sink_finish(&out) != 0)
        return mfs_errf(err, "dem writer: the sink failed"), NULL;
    size_t n;
    char *text = (char *)mfs_sink_take(&out, &n);
    if (!text || strlen(text) + 1 != n) {
        free(text);
        return mfs_errf(err, "dem writer: a NUL inside the text"), NULL;
    }
    return text;
}

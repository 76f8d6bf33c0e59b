/* The .gmf writer's plan: what gmf.c must know before it writes a block
 * header (gmf_plan.h; docs/formats/gmf.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gmf_plan.h"

/* ---- the plan: meshes ---- */

/* Number of distinct vertices of triangle t not yet marked with stamp st. */
static uint32_t new_vertices(const gmf *g, const uint32_t *t, uint32_t st)
{
    uint32_t n = g->mark[t[0]] != st;
    n += g->mark[t[1]] != st && t[1] != t[0];
    n += g->mark[t[2]] != st && t[2] != t[0] && t[2] != t[1];
    return n;
}

/* Greedy split in triangle order: a surface closes when the next triangle
 * would take it past the vertex (or triangle) limit.  Vertices shared across
 * the cut are duplicated into both surfaces. */
static int plan_chunks(gmf *g, const mfs_mesh *m, mesh_plan *p, mfs_err *err)
{
    uint32_t cap = 0, st = ++g->stamp;
    chunk cur = {0, 0, 0};
    for (uint32_t f = 0; f < m->n_faces; f++) {
        const uint32_t *t = &m->indices[(size_t)f * 3];
        uint32_t n = new_vertices(g, t, st);
        if (cur.nvert + n > GMF_MAX_SURF_VERTS || cur.ntri == GMF_MAX_SURF_TRIS) {
            if (p->n_chunks == cap) {
                cap = cap ? cap * 2 : 4;
                chunk *nc = realloc(p->chunks, sizeof(chunk) * cap);
                if (!nc)
                    return mfs_errf(err, "mesh '%s': out of memory splitting it", m->name);
                p->chunks = nc;
            }
            p->chunks[p->n_chunks++] = cur;
            cur = (chunk){f, 0, 0};
            st = ++g->stamp;
            n = new_vertices(g, t, st);
        }
        for (int k = 0; k < 3; k++)
            g->mark[t[k]] = st;
        cur.nvert += n;
        cur.ntri++;
    }
    chunk *nc = realloc(p->chunks, sizeof(chunk) * (p->n_chunks + 1));
    if (!nc)
        return mfs_errf(err, "mesh '%s': out of memory splitting it", m->name);
    p->chunks = nc;
    p->chunks[p->n_chunks++] = cur;
    return 0;
}

static int plan_meshes(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    uint32_t scratch = 0;
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        const mfs_mesh *m = &s->meshes[i];
        mesh_plan *p = &g->plan[i];
        /* gmf stores triangles only: point and line meshes are dropped. */
        p->eligible = m->prim == MFS_PRIM_TRIANGLES && m->n_faces > 0 && m->n_vertices > 0;
        p->skinned = p->eligible && mfs_mesh_is_skinned(m);
        p->n_chunks = p->eligible;
        if (p->eligible && (m->n_vertices > GMF_MAX_SURF_VERTS || m->n_faces > GMF_MAX_SURF_TRIS) &&
            m->n_vertices > scratch)
            scratch = m->n_vertices;
    }
    if (!scratch)
        return 0;
    g->mark = calloc(scratch, sizeof(uint32_t));
    g->local = malloc(sizeof(uint32_t) * scratch);
    g->list = malloc(sizeof(uint32_t) * GMF_MAX_SURF_VERTS);
    if (!g->mark || !g->local || !g->list)
        return mfs_errf(err, "out of memory");
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        const mfs_mesh *m = &s->meshes[i];
        mesh_plan *p = &g->plan[i];
        if (!p->eligible || (m->n_vertices <= GMF_MAX_SURF_VERTS && m->n_faces <= GMF_MAX_SURF_TRIS))
            continue;
        p->n_chunks = 0;
        if (plan_chunks(g, m, p, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- the plan: skeleton ---- */

/* Bones: the scene's skeleton rule (mfs_scene_mark_skeleton) over the
 * skinned meshes.  Marks them with bone_id 0 for now; returns the count. */
static uint32_t mark_bones(gmf *g, const uint32_t *depth)
{
    const mfs_scene *s = g->s;
    unsigned char *use = malloc(s->n_meshes ? s->n_meshes : 1);
    if (!use)
        return UINT32_MAX;
    for (uint32_t i = 0; i < s->n_meshes; i++)
        use[i] = (unsigned char)g->plan[i].skinned;
    uint32_t count = mfs_scene_mark_skeleton(s, depth, use, g->bone_id);
    free(use);
    return count;
}

/* A bone (or a node below one) cannot hold the skeleton: the BONE blocks
 * would have to nest inside themselves.  Node 0 is exempt: it is always the
 * root MESH, whatever else it is. */
static int below_bone(const gmf *g, int32_t n)
{
    for (; n > 0; n = g->s->nodes[n].parent)
        if (g->bone_id[n] >= 0)
            return 1;
    return 0;
}

int32_t gmf_place_of(const gmf *g, uint32_t mesh)
{
    return g->mesh_node[mesh] < 0 ? 0 : g->mesh_node[mesh];
}

static int32_t pick_host(const gmf *g, const uint32_t *depth)
{
    int32_t h = -1;
    for (uint32_t i = 0; i < g->s->n_meshes; i++)
        if (g->plan[i].skinned)
            h = h < 0 ? gmf_place_of(g, i) : mfs_scene_lca(g->s, depth, h, gmf_place_of(g, i));
    while (h > 0 && below_bone(g, h))
        h = g->s->nodes[h].parent;
    return h;
}

/* Ids in depth-first pre-order of the BONE tree, the order the blocks are
 * written in (top bones in node order, children in the scene's order). */
static int number_bones(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    uint32_t *stack = malloc(sizeof(uint32_t) * (s->n_nodes + 1));
    g->top = malloc(sizeof(uint32_t) * (s->n_nodes + 1));
    if (!stack || !g->top) {
        free(stack);
        return mfs_errf(err, "out of memory");
    }
    for (uint32_t n = 0; n < s->n_nodes; n++) {
        int32_t p = s->nodes[n].parent;
        if (g->bone_id[n] >= 0 && (p < 0 || g->bone_id[p] < 0))
            g->top[g->n_top++] = n;
    }
    uint32_t sp = 0, next = 0;
    for (uint32_t i = g->n_top; i-- > 0;)
        stack[sp++] = g->top[i];
    while (sp) {
        const mfs_node *nd = &s->nodes[stack[--sp]];
        g->bone_id[stack[sp]] = (int32_t)next++;
        for (uint32_t c = nd->n_children; c-- > 0;)
            if (g->bone_id[nd->children[c]] >= 0)
                stack[sp++] = nd->children[c];
    }
    free(stack);
    return 0;
}

/* Bind pose of each bone in model space.  Where a mesh gives the bone an
 * offset matrix, the bind transform is the inverse of that offset placed
 * where the mesh is (the first mesh wins); bones no mesh names (ancestors
 * filling the chain) take their rest placement. */
static int bind_poses(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    uint8_t *have = calloc(s->n_nodes, 1);
    if (!have)
        return mfs_errf(err, "out of memory");
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        if (!g->plan[i].skinned)
            continue;
        const mfs_mesh *m = &s->meshes[i];
        for (uint32_t b = 0; b < m->n_bones; b++) {
            int32_t n = m->bones[b].node;
            mfs_mat4 inv;
            if (n < 0 || have[n] || mfs_mat4_invert(&inv, &m->bones[b].offset) < 0)
                continue;
            mfs_mat4_mul(&g->bind_world[n], &g->world[gmf_place_of(g, i)], &inv);
            have[n] = 1;
        }
    }
    for (uint32_t n = 0; n < s->n_nodes; n++)
        if (g->bone_id[n] >= 0 && !have[n])
            g->bind_world[n] = g->world[n];
    free(have);
    return 0;
}

/* The BONE matrices: a top bone's bind pose relative to the host's frame
 * (a pure translation, see gmf_frames.h), a child bone's relative to its
 * parent bone's bind pose. */
static void bind_locals(gmf *g)
{
    const mfs_scene *s = g->s;
    for (uint32_t n = 0; n < s->n_nodes; n++) {
        if (g->bone_id[n] < 0)
            continue;
        int32_t p = s->nodes[n].parent;
        const mfs_mat4 *base = p < 0 || g->bone_id[p] < 0 ? &g->frame[g->host].at
                                                          : &g->bind_world[p];
        mfs_mat4 ip;
        if (mfs_mat4_invert(&ip, base) == 0)
            mfs_mat4_mul(&g->bind_local[n], &ip, &g->bind_world[n]);
        else
            g->bind_local[n] = s->nodes[n].local;
    }
}

static int plan_skeleton(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    uint32_t *depth = malloc(sizeof(uint32_t) * s->n_nodes);
    if (!depth)
        return mfs_errf(err, "out of memory");
    mfs_scene_depths(s, depth);
    g->n_bones = mark_bones(g, depth);
    if (g->n_bones == UINT32_MAX) {
        free(depth);
        return mfs_errf(err, "out of memory");
    }
    g->host = g->n_bones ? pick_host(g, depth) : -1;
    free(depth);
    if (!g->n_bones)
        return 0;
    if (g->n_bones > GMF_MAX_BONES)
        return mfs_errf(err, "skeleton has %u bones; gmf bone indices are bytes, so at most %u",
                        g->n_bones, GMF_MAX_BONES);
    if (number_bones(g, err) < 0)
        return -1;
    return bind_poses(g, err);
}

/* ---- the plan: animations and materials ---- */

static int plan_animations(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    if (!s->n_animations)
        return 0;
    g->frames = malloc(sizeof(uint32_t) * s->n_animations);
    g->chan = malloc(sizeof(int32_t) * s->n_animations * (size_t)s->n_nodes);
    if (!g->frames || !g->chan)
        return mfs_errf(err, "out of memory");
    for (uint32_t a = 0; a < s->n_animations; a++) {
        const mfs_animation *an = &s->animations[a];
        double secs = an->duration / an->ticks_per_second;
        double nf = floor(secs * GMF_FPS + 0.5) + 1;
        if (!(nf <= GMF_MAX_FRAMES))
            return mfs_errf(err, "animation '%s': %.1f s needs more than %u frames at %.0f fps",
                            an->name, secs, GMF_MAX_FRAMES, GMF_FPS);
        g->frames[a] = (uint32_t)nf;
        int32_t *map = &g->chan[(size_t)a * s->n_nodes];
        for (uint32_t n = 0; n < s->n_nodes; n++)
            map[n] = -1;
        /* the last channel on a node wins, as in mfs_scene_pose */
        for (uint32_t c = 0; c < an->n_channels; c++)
            map[an->channels[c].node] = (int32_t)c;
    }
    return 0;
}

/* What Leadwerks looks up is a material file: the diffuse texture's file
 * name with .mat for its extension (materials are named after their
 * texture), else the material's name plus .mat.  Directories are dropped:
 * source paths mean nothing in the engine's file system.  Sets *base and
 * returns the length of the stem; 0 means no material property. */
static size_t material_stem(const mfs_material *mt, const char **base)
{
    const char *b = mt->textures[MFS_TEX_DIFFUSE];
    size_t n = 0;
    if (b && b[0] != '*') { /* "*N" is assimp's embedded texture */
        for (const char *p = b; *p; p++)
            if (*p == '/' || *p == '\\')
                b = p + 1;
        const char *dot = strrchr(b, '.');
        n = dot && dot > b ? (size_t)(dot - b) : strlen(b);
    }
    if (!n) {
        b = mt->name;
        n = strlen(b);
        if (n > 4 && strcasecmp(b + n - 4, ".mat") == 0)
            n -= 4;
    }
    *base = b;
    return n;
}

static int plan_materials(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    g->matval = calloc(s->n_materials ? s->n_materials : 1, sizeof(char *));
    if (!g->matval)
        return mfs_errf(err, "out of memory");
    for (uint32_t i = 0; i < s->n_materials; i++) {
        const char *base;
        size_t n = material_stem(&s->materials[i], &base);
        if (!n)
            continue;
        char *v = malloc(n + 5);
        if (!v)
            return mfs_errf(err, "out of memory");
        memcpy(v, base, n);
        memcpy(v + n, ".mat", 5);
        g->matval[i] = v;
    }
    return 0;
}

int gmf_plan(gmf *g, mfs_err *err)
{
    const mfs_scene *s = g->s;
    size_t nn = s->n_nodes, nm = s->n_meshes ? s->n_meshes : 1;
    g->mesh_node = malloc(sizeof(int32_t) * nm);
    g->world = malloc(sizeof(mfs_mat4) * nn);
    g->plan = calloc(nm, sizeof(mesh_plan));
    g->bone_id = malloc(sizeof(int32_t) * nn);
    g->bind_world = malloc(sizeof(mfs_mat4) * nn);
    g->bind_local = malloc(sizeof(mfs_mat4) * nn);
    g->frame = malloc(sizeof(gmf_frame) * nn);
    if (!g->mesh_node || !g->world || !g->plan || !g->bone_id || !g->bind_world ||
        !g->bind_local || !g->frame)
        return mfs_errf(err, "out of memory");
    mfs_scene_mesh_nodes(s, g->mesh_node);
    mfs_scene_world(s, g->world);
    if (plan_meshes(g, err) < 0 || plan_skeleton(g, err) < 0)
        return -1;
    gmf_plan_frames(s, g->world, g->bone_id, g->bind_world, g->frame);
    if (g->n_bones)
        bind_locals(g);
    if (plan_animations(g, err) < 0 || plan_materials(g, err) < 0)
        return -1;
    return 0;
}

void gmf_free(gmf *g)
{
    if (g->plan)
        for (uint32_t i = 0; i < g->s->n_meshes; i++)
            free(g->plan[i].chunks);
    if (g->matval)
        for (uint32_t i = 0; i < g->s->n_materials; i++)
            free(g->matval[i]);
    free(g->mesh_node);
    free(g->world);
    free(g->plan);
    free(g->bone_id);
    free(g->bind_world);
    free(g->bind_local);
    free(g->frame);
    free(g->top);
    free(g->frames);
    free(g->chan);
    free(g->matval);
    free(g->mark);
    free(g->local);
    free(g->list);
    free(g->skin);
}

/* ---- skin weights ---- */

static int infl_before(float wa, uint8_t ia, float wb, uint8_t ib)
{
    return wa > wb || (wa == wb && ia < ib);
}

/* Keeps the four strongest influences, sorted; ties go to the lower id.
 * An id already kept accumulates (a bone listed twice for a vertex).  Empty
 * slots have weight 0 and sort last. */
static void infl_add(infl *f, uint8_t id, float w)
{
    int k = 3;
    for (int i = 0; i < 4 && f->w[i] > 0; i++)
        if (f->id[i] == id) {
            w += f->w[i];
            k = i; /* its slot is free to take; it can only move up */
            break;
        }
    if (k == 3 && f->w[3] > 0 && !infl_before(w, id, f->w[3], f->id[3]))
        return;
    /* insertion from slot k upwards; written as single steps so compilers
     * do not turn it into memmove calls */
    while (k > 0 && (f->w[k - 1] == 0 || infl_before(w, id, f->w[k - 1], f->id[k - 1]))) {
        f->w[k] = f->w[k - 1];
        f->id[k] = f->id[k - 1];
        k--;
    }
    f->w[k] = w;
    f->id[k] = id;
}

/* Bytes summing to exactly 255: the weaker weights truncated, the strongest
 * takes the rest (its own truncation plus the 0..3 remainder), so it stays
 * the largest.  A vertex without influence is bound wholly to bone 0. */
static void infl_quantise(infl *f)
{
    double sum = (double)f->w[0] + f->w[1] + f->w[2] + f->w[3];
    memset(f->q, 0, 4);
    if (!(sum > 0)) {
        memset(f->id, 0, 4);
        f->q[0] = 255;
        return;
    }
    double scale = 255.0 / sum;
    unsigned tot = 0;
    for (int i = 1; i < 4 && f->w[i] > 0; i++) {
        f->q[i] = (uint8_t)(f->w[i] * scale); /* truncation: w >= 0 */
        tot += f->q[i];
    }
    f->q[0] = (uint8_t)(255 - tot);
}

int gmf_build_skin(gmf *g, const mfs_mesh *m, mfs_err *err)
{
    free(g->skin);
    g->skin = calloc(m->n_vertices, sizeof(infl));
    if (!g->skin)
        return mfs_errf(err, "mesh '%s': out of memory for skin weights", m->name);
    for (uint32_t b = 0; b < m->n_bones; b++) {
        const mfs_bone *bo = &m->bones[b];
        if (bo->node < 0) /* no node to move it: its influence is dropped */
            continue;
        uint8_t id = (uint8_t)g->bone_id[bo->node];
        for (uint32_t k = 0; k < bo->n_weights; k++)
            if (bo->weights[k].weight > 0)
                infl_add(&g->skin[bo->weights[k].vertex], id, bo->weights[k].weight);
    }
    for (uint32_t v = 0; v < m->n_vertices; v++)
        infl_quantise(&g->skin[v]);
    return 0;
}

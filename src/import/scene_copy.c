/* aiScene -> mfs_scene: copy what writers need, in the scene model's terms.
 *
 * Everything is copied (rather than borrowed) so the aiScene can be released
 * before writing, keeping peak memory at about one scene's worth. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <assimp/material.h>

#include "convert_scene.h"
#include "weld.h"

typedef struct walk {
    const struct aiScene *ai;
    mfs_scene *s;
    uint32_t next;
    mfs_err *err;
} walk;

static char *ai_str(const struct aiString *a)
{
    size_t n = a->length;
    if (n >= MAXLEN)
        n = MAXLEN - 1;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, a->data, n);
        d[n] = '\0';
    }
    return d;
}

static void ai_mat(mfs_mat4 *m, const struct aiMatrix4x4 *a)
{
    const float v[16] = {a->a1, a->a2, a->a3, a->a4, a->b1, a->b2, a->b3, a->b4,
                         a->c1, a->c2, a->c3, a->c4, a->d1, a->d2, a->d3, a->d4};
    memcpy(m->m, v, sizeof v);
}

static uint32_t count_nodes(const struct aiNode *n, int depth)
{
    if (!n || depth > MFS_MAX_NODE_DEPTH)
        return 0;
    uint32_t c = 1;
    for (unsigned i = 0; i < n->mNumChildren; i++)
        c += count_nodes(n->mChildren[i], depth + 1);
    return c;
}

static int copy_node(walk *w, const struct aiNode *an, int32_t parent, int depth)
{
    if (depth > MFS_MAX_NODE_DEPTH)
        return mfs_errf(w->err, "node tree deeper than %d levels", MFS_MAX_NODE_DEPTH);
    uint32_t idx = w->next++;
    mfs_node *n = &w->s->nodes[idx];
    n->name = ai_str(&an->mName);
    n->parent = parent;
    ai_mat(&n->local, &an->mTransformation);
    n->n_meshes = an->mNumMeshes;
    n->meshes = calloc(an->mNumMeshes ? an->mNumMeshes : 1, sizeof(uint32_t));
    n->children = calloc(an->mNumChildren ? an->mNumChildren : 1, sizeof(uint32_t));
    if (!n->name || !n->meshes || !n->children)
        return mfs_errf(w->err, "out of memory");
    for (unsigned i = 0; i < an->mNumMeshes; i++)
        n->meshes[i] = an->mMeshes[i];
    for (unsigned i = 0; i < an->mNumChildren; i++) {
        if (!an->mChildren[i])
            continue;
        /* n may move? no: nodes array is allocated once up front */
        n->children[n->n_children++] = w->next;
        if (copy_node(w, an->mChildren[i], (int32_t)idx, depth + 1) < 0)
            return -1;
    }
    return 0;
}

static int32_t find_node(const mfs_scene *s, const char *name)
{
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (strcmp(s->nodes[i].name, name) == 0)
            return (int32_t)i;
    return -1;
}

static void *dup_array(const void *src, size_t n, size_t sz)
{
    if (!src || n == 0)
        return NULL;
    void *d = malloc(n * sz);
    if (d)
        memcpy(d, src, n * sz);
    return d;
}

/* Normals must be unit length for the writers; points and lines get NaN
 * normals from GenSmoothNormals, and some files carry zero vectors. */
static void fix_normals(float (*nr)[3], uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        float *v = nr[i];
        double l = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
        if (!isfinite(l) || l < 1e-12) {
            v[0] = 0;
            v[1] = 1;
            v[2] = 0;
        } else {
            v[0] = (float)(v[0] / l);
            v[1] = (float)(v[1] / l);
            v[2] = (float)(v[2] / l);
        }
    }
}

/* CalcTangentSpace leaves NaN where UVs are degenerate (a texel stretched
 * to nothing); such a vertex has no tangent frame, so a neutral one is
 * written instead of NaN. */
static void fix_tangents(float (*t)[3], float (*b)[3], uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(t[i][0] + t[i][1] + t[i][2]) || !isfinite(b[i][0] + b[i][1] + b[i][2])) {
            t[i][0] = 1, t[i][1] = 0, t[i][2] = 0;
            b[i][0] = 0, b[i][1] = 0, b[i][2] = 1;
        }
}

/* A mesh's faces all have one corner count (SortByPType splits them).  A
 * mesh whose primitive flags did not report its lines or points (assimp's
 * OBJ reader, for "f" lines of two corners) still mixes them with its
 * triangles: the triangles are kept and the rest dropped, said in the
 * scene's note (docs/import.md, "Tolerant import"). */
static int copy_faces(mfs_scene *s, mfs_mesh *m, const struct aiMesh *am, mfs_err *err)
{
    unsigned prim = 0, mixed = 0;
    for (unsigned f = 0; f < am->mNumFaces; f++) {
        unsigned k = am->mFaces[f].mNumIndices;
        if (k < 1 || k > 3)
            return mfs_errf(err, "mesh '%s': face %u has %u indices after triangulation", m->name, f, k);
        if (prim && k != prim)
            mixed = 1;
        if (k > prim)
            prim = k;
    }
    if (mixed && prim != 3)
        return mfs_errf(err, "mesh '%s': mixes primitive types", m->name);
    m->prim = prim ? (mfs_prim)prim : MFS_PRIM_TRIANGLES;
    m->indices = malloc(sizeof(uint32_t) * (size_t)am->mNumFaces * m->prim + 1);
    if (!m->indices)
        return mfs_errf(err, "out of memory");
    uint32_t *o = m->indices;
    for (unsigned f = 0; f < am->mNumFaces; f++) {
        if (am->mFaces[f].mNumIndices != m->prim)
            continue;
        for (unsigned k = 0; k < m->prim; k++)
            *o++ = am->mFaces[f].mIndices[k];
        m->n_faces++;
    }
    if (mixed) {
        char note[200];
        snprintf(note, sizeof note, "mesh '%.64s': %u face%s of fewer than 3 corners dropped", m->name,
                 am->mNumFaces - m->n_faces, am->mNumFaces - m->n_faces == 1 ? "" : "s");
        if (mfs_scene_note(s, note) < 0)
            return mfs_errf(err, "out of memory");
    }
    return 0;
}

static int copy_bones(mfs_scene *s, mfs_mesh *m, const struct aiMesh *am, mfs_err *err)
{
    if (!am->mNumBones)
        return 0;
    m->bones = calloc(am->mNumBones, sizeof(mfs_bone));
    if (!m->bones)
        return mfs_errf(err, "out of memory");
    m->n_bones = am->mNumBones;
    for (unsigned b = 0; b < am->mNumBones; b++) {
        const struct aiBone *ab = am->mBones[b];
        mfs_bone *bo = &m->bones[b];
        bo->name = ai_str(&ab->mName);
        if (!bo->name)
            return mfs_errf(err, "out of memory");
        bo->node = find_node(s, bo->name);
        ai_mat(&bo->offset, &ab->mOffsetMatrix);
        bo->n_weights = ab->mNumWeights;
        bo->weights = malloc(sizeof(mfs_weight) * (ab->mNumWeights ? ab->mNumWeights : 1));
        if (!bo->weights)
            return mfs_errf(err, "out of memory");
        for (unsigned w = 0; w < ab->mNumWeights; w++) {
            bo->weights[w].vertex = ab->mWeights[w].mVertexId;
            bo->weights[w].weight = ab->mWeights[w].mWeight;
        }
    }
    return 0;
}


static int copy_mesh(mfs_scene *s, mfs_mesh *m, const struct aiMesh *am, mfs_err *err)
{
    uint32_t n = am->mNumVertices;
    m->name = ai_str(&am->mName);
    if (!m->name)
        return mfs_errf(err, "out of memory");
    m->material = am->mMaterialIndex < s->n_materials ? (int32_t)am->mMaterialIndex : -1;
    m->n_vertices = n;
    _Static_assert(sizeof(struct aiVector3D) == 3 * sizeof(float), "aiVector3D is 3 floats");
    _Static_assert(sizeof(struct aiColor4D) == 4 * sizeof(float), "aiColor4D is 4 floats");
    m->positions = dup_array(am->mVertices, n, sizeof *m->positions);
    m->normals = dup_array(am->mNormals, n, sizeof *m->normals);
    m->tangents = dup_array(am->mTangents, n, sizeof *m->tangents);
    m->bitangents = dup_array(am->mBitangents, n, sizeof *m->bitangents);
    m->colors = dup_array(am->mColors[0], n, sizeof *m->colors);
    if (n && (!m->positions || (am->mNormals && !m->normals)))
        return mfs_errf(err, "out of memory");
    if (!m->tangents || !m->bitangents) {
        free(m->tangents);
        free(m->bitangents);
        m->tangents = m->bitangents = NULL;
    }
    for (int k = 0; k < MFS_MAX_UV; k++) {
        const struct aiVector3D *t = am->mTextureCoords[k];
        if (!t || !n || (k == 1 && !m->uv[0]))
            continue;
        m->uv[k] = malloc(sizeof *m->uv[k] * n);
        if (!m->uv[k])
            return mfs_errf(err, "out of memory");
        for (uint32_t v = 0; v < n; v++) {
            m->uv[k][v][0] = t[v].x;
            m->uv[k][v][1] = t[v].y;
        }
    }
    /* Welded here, not by assimp's JoinIdenticalVertices (docs/import.md,
     * "Welding"): after GenSmoothNormals and CalcTangentSpace, as assimp
     * orders its steps, and on the attributes as assimp left them, before
     * the clean-up below, as the native path does. */
    if (copy_faces(s, m, am, err) < 0 || copy_bones(s, m, am, err) < 0 || mfs_weld_mesh(m, err) < 0)
        return -1;
    if (m->normals)
        fix_normals(m->normals, m->n_vertices);
    if (m->tangents)
        fix_tangents(m->tangents, m->bitangents, m->n_vertices);
    return mfs_mesh_normalise_weights(m, err);
}

static char *tex_path(const struct aiMaterial *mat, enum aiTextureType t)
{
    struct aiString p;
    if (aiGetMaterialTextureCount(mat, t) == 0)
        return NULL;
    if (aiGetMaterialTexture(mat, t, 0, &p, NULL, NULL, NULL, NULL, NULL, NULL) != aiReturn_SUCCESS)
        return NULL;
    /* assimp's placeholder where a Quake model names no skin (its MD2, MD3
     * and MDL readers): no file the model names, so none to look for, to
     * warn about as missing, or to write into a view */
    if (strcmp(p.data, "$texture_dummy.bmp") == 0)
        return NULL;
    return p.length ? ai_str(&p) : NULL;
}

static int copy_materials(mfs_scene *s, const struct aiScene *ai, mfs_err *err)
{
    s->materials = calloc(ai->mNumMaterials ? ai->mNumMaterials : 1, sizeof(mfs_material));
    if (!s->materials)
        return mfs_errf(err, "out of memory");
    s->n_materials = ai->mNumMaterials;
    for (unsigned i = 0; i < ai->mNumMaterials; i++) {
        const struct aiMaterial *am = ai->mMaterials[i];
        mfs_material *m = &s->materials[i];
        struct aiString name;
        if (aiGetMaterialString(am, "?mat.name", 0, 0, &name) == aiReturn_SUCCESS)
            m->name = ai_str(&name);
        else
            m->name = mfs_strdup("");
        m->textures[MFS_TEX_DIFFUSE] = tex_path(am, aiTextureType_DIFFUSE);
        m->textures[MFS_TEX_SPECULAR] = tex_path(am, aiTextureType_SPECULAR);
        m->textures[MFS_TEX_NORMAL] = tex_path(am, aiTextureType_NORMALS);
        if (!m->textures[MFS_TEX_NORMAL]) /* OBJ map_bump lands here */
            m->textures[MFS_TEX_NORMAL] = tex_path(am, aiTextureType_HEIGHT);
        m->textures[MFS_TEX_REFLECTION] = tex_path(am, aiTextureType_REFLECTION);
        if (!m->name)
            return mfs_errf(err, "out of memory");
    }
    return 0;
}

static int cmp_vec_key(const void *a, const void *b)
{
    double x = ((const mfs_vec_key *)a)->time, y = ((const mfs_vec_key *)b)->time;
    return (x > y) - (x < y);
}

static int cmp_quat_key(const void *a, const void *b)
{
    double x = ((const mfs_quat_key *)a)->time, y = ((const mfs_quat_key *)b)->time;
    return (x > y) - (x < y);
}

static int copy_channel(mfs_channel *c, const struct aiNodeAnim *na, mfs_err *err)
{
    c->pos = calloc(na->mNumPositionKeys + 1, sizeof(mfs_vec_key));
    c->rot = calloc(na->mNumRotationKeys + 1, sizeof(mfs_quat_key));
    c->scale = calloc(na->mNumScalingKeys + 1, sizeof(mfs_vec_key));
    if (!c->pos || !c->rot || !c->scale)
        return mfs_errf(err, "out of memory");
    for (unsigned k = 0; k < na->mNumPositionKeys; k++) {
        const struct aiVectorKey *ak = &na->mPositionKeys[k];
        c->pos[c->n_pos++] = (mfs_vec_key){ak->mTime, {ak->mValue.x, ak->mValue.y, ak->mValue.z}};
    }
    for (unsigned k = 0; k < na->mNumRotationKeys; k++) {
        const struct aiQuatKey *ak = &na->mRotationKeys[k];
        float q[4] = {ak->mValue.x, ak->mValue.y, ak->mValue.z, ak->mValue.w};
        double l = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3]);
        if (!(l > 1e-12) || !isfinite(l)) {
            q[0] = q[1] = q[2] = 0;
            q[3] = 1;
            l = 1;
        }
        c->rot[c->n_rot++] = (mfs_quat_key){ak->mTime, {(float)(q[0] / l), (float)(q[1] / l),
                                                        (float)(q[2] / l), (float)(q[3] / l)}};
    }
    for (unsigned k = 0; k < na->mNumScalingKeys; k++) {
        const struct aiVectorKey *ak = &na->mScalingKeys[k];
        c->scale[c->n_scale++] = (mfs_vec_key){ak->mTime, {ak->mValue.x, ak->mValue.y, ak->mValue.z}};
    }
    /* Sampling binary-searches by time; a file with unsorted keys must not
     * make it read garbage. */
    qsort(c->pos, c->n_pos, sizeof *c->pos, cmp_vec_key);
    qsort(c->rot, c->n_rot, sizeof *c->rot, cmp_quat_key);
    qsort(c->scale, c->n_scale, sizeof *c->scale, cmp_vec_key);
    return 0;
}

static int copy_animations(mfs_scene *s, const struct aiScene *ai, mfs_err *err)
{
    s->animations = calloc(ai->mNumAnimations ? ai->mNumAnimations : 1, sizeof(mfs_animation));
    if (!s->animations)
        return mfs_errf(err, "out of memory");
    for (unsigned i = 0; i < ai->mNumAnimations; i++) {
        const struct aiAnimation *aa = ai->mAnimations[i];
        mfs_animation *a = &s->animations[s->n_animations++];
        a->name = ai_str(&aa->mName);
        a->ticks_per_second = aa->mTicksPerSecond > 0 ? aa->mTicksPerSecond : 25.0;
        a->duration = aa->mDuration >= 0 && isfinite(aa->mDuration) ? aa->mDuration : 0;
        a->channels = calloc(aa->mNumChannels ? aa->mNumChannels : 1, sizeof(mfs_channel));
        if (!a->name || !a->channels)
            return mfs_errf(err, "out of memory");
        for (unsigned c = 0; c < aa->mNumChannels; c++) {
            const struct aiNodeAnim *na = aa->mChannels[c];
            char *nm = ai_str(&na->mNodeName);
            int32_t node = nm ? find_node(s, nm) : -1;
            free(nm);
            if (node < 0)
                continue; /* a channel for a node that does not exist moves nothing */
            mfs_channel *ch = &a->channels[a->n_channels++];
            ch->node = node;
            if (copy_channel(ch, na, err) < 0)
                return -1;
        }
    }
    return 0;
}

mfs_scene *mfs_from_aiscene(const struct aiScene *ai, mfs_err *err)
{
    mfs_scene *s = mfs_scene_new();
    if (!s) {
        mfs_errf(err, "out of memory");
        return NULL;
    }
    if (!ai->mRootNode) {
        mfs_errf(err, "scene has no root node");
        goto fail;
    }
    s->n_nodes = count_nodes(ai->mRootNode, 0);
    s->nodes = calloc(s->n_nodes, sizeof(mfs_node));
    if (!s->nodes) {
        mfs_errf(err, "out of memory");
        goto fail;
    }
    walk w = {ai, s, 0, err};
    if (copy_node(&w, ai->mRootNode, -1, 0) < 0)
        goto fail;
    s->n_nodes = w.next;
    if (copy_materials(s, ai, err) < 0)
        goto fail;
    s->meshes = calloc(ai->mNumMeshes ? ai->mNumMeshes : 1, sizeof(mfs_mesh));
    if (!s->meshes) {
        mfs_errf(err, "out of memory");
        goto fail;
    }
    s->n_meshes = ai->mNumMeshes;
    for (unsigned i = 0; i < ai->mNumMeshes; i++)
        if (copy_mesh(s, &s->meshes[i], ai->mMeshes[i], err) < 0)
            goto fail;
    if (copy_animations(s, ai, err) < 0)
        goto fail;
    return s;
fail:
    mfs_scene_free(s);
    return NULL;
}

/* mfs_import: assimp behind the neutral scene.
 *
 * One import serves every output format, so the post-processing is the
 * union of what the writers need (docs/import.md explains each step);
 * anything format-specific (bone-influence caps, winding, frames) is the
 * writer's job. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <assimp/cimport.h>
#include <assimp/config.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include "convert_scene.h"
#include "fbx_chain.h"
#include "iofs.h"
#include "native.h"
#include "texture.h"
#include "meshfs/import.h"

/* CalcTangentSpace on request (every conversion asks: docs/import.md,
 * "Tangents"; bench-import measures without it).  No
 * JoinIdenticalVertices: the scene copy welds with meshoptimizer (weld.c),
 * in a fraction of the time, after these steps as assimp would have. */
unsigned mfs_import_ai_flags(const mfs_import_opts *o)
{
    return aiProcess_Triangulate | aiProcess_SortByPType | aiProcess_GenSmoothNormals |
           (o && o->tangents ? aiProcess_CalcTangentSpace : 0) |
           (o && o->normals_compute ? aiProcess_RemoveComponent : 0) | aiProcess_ValidateDataStructure;
}

static void lower_ext(const char *path, char *ext, size_t n)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    size_t i = 0;
    if (dot)
        for (dot++; *dot && i + 1 < n; dot++)
            ext[i++] = (char)tolower((unsigned char)*dot);
    ext[i] = '\0';
}

int mfs_import_supported(const char *filename)
{
    char ext[32];
    lower_ext(filename, ext, sizeof ext);
    if (!ext[0])
        return 0;
    char dotted[40];
    snprintf(dotted, sizeof dotted, ".%s", ext);
    return aiIsExtensionSupported(dotted) == AI_TRUE;
}

/* FBX InheritType survives assimp 5.2.5 only as node metadata (its
 * converter ignores it): the real nodes whose type is not RSrs, by name
 * (assimp makes FBX node names unique). */
typedef struct {
    char **names;
    int *types;
    size_t n, cap;
} fbx_inherit;

static void collect_inherit(const struct aiNode *n, fbx_inherit *h, int depth)
{
    if (!n || depth > MFS_MAX_NODE_DEPTH)
        return;
    const struct aiMetadata *md = n->mMetaData;
    for (unsigned i = 0; md && i < md->mNumProperties; i++) {
        const struct aiMetadataEntry *e = &md->mValues[i];
        if (strcmp(md->mKeys[i].data, "InheritType") != 0 || e->mType != AI_INT32 || !e->mData)
            continue;
        int t = *(const int32_t *)e->mData;
        if (t != MFS_FBX_INHERIT_RRSS && t != MFS_FBX_INHERIT_RRS)
            break;
        if (h->n == h->cap) {
            size_t cap = h->cap ? h->cap * 2 : 16;
            char **nn = realloc(h->names, cap * sizeof *nn);
            if (nn)
                h->names = nn;
            int *nt = nn ? realloc(h->types, cap * sizeof *nt) : NULL;
            if (nt)
                h->types = nt;
            if (!nn || !nt)
                break; /* out of memory: that node keeps RSrs */
            h->cap = cap;
        }
        char *name = mfs_strdup(n->mName.data);
        if (!name)
            break;
        h->names[h->n] = name;
        h->types[h->n++] = t;
        break;
    }
    for (unsigned i = 0; i < n->mNumChildren; i++)
        collect_inherit(n->mChildren[i], h, depth + 1);
}

static void free_inherit(fbx_inherit *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->names[i]);
    free(h->names);
    free(h->types);
}

/* The refusals of assimp's ValidateDataStructure whose geometry parses and
 * that meshfs repairs or does not read (docs/import.md, "Tolerant
 * import"): names that clash among lights or cameras (never read), faces
 * whose corner count the mesh's primitive flags do not report (faces of
 * fewer than three corners are dropped from triangle meshes: scene_copy.c),
 * and animation keys past the animation's duration (the duration is
 * extended: mfs_scene_finish).  Anything else it refuses stays refused. */
static int repairable(const char *why)
{
    if (!why || !strstr(why, "Validation failed"))
        return 0;
    if (strstr(why, "has the same name as"))
        return strstr(why, "aiScene::mLights[") || strstr(why, "aiScene::mCameras[") ||
               strstr(why, "aiMesh::mBones["); /* merged: mfs_mesh_merge_bones */
    /* a file of no mesh (an animation-only IQM) is read again so that it
     * fails as one (MFS_SCENE_NO_MESH), not as a refusal */
    return strstr(why, "but aiMesh::mPrimitiveTypes does not report the") ||
           strstr(why, "is larger than aiAnimation::mDuration") ||
           strstr(why, "aiScene::mNumMeshes is 0");
}

static const struct aiScene *run_assimp(mfs_iofs *fs, const char *rel, const mfs_import_opts *o,
                                        char *refused, size_t refusedsz)
{
    refused[0] = '\0';
    struct aiPropertyStore *props = aiCreatePropertyStore();
    /* Keep FBX pivot chains as helper nodes: assimp's own folding is wrong
     * for PostRotation and geometric transforms, so fbx_chain.c folds them
     * after the copy. */
    aiSetImportPropertyInteger(props, AI_CONFIG_IMPORT_FBX_PRESERVE_PIVOTS, 1);
    if (o && o->normals_compute) {
        /* the file's normals dropped, so GenSmoothNormals makes them all */
        aiSetImportPropertyInteger(props, AI_CONFIG_PP_RVC_FLAGS, aiComponent_NORMALS);
        aiSetImportPropertyFloat(props, AI_CONFIG_PP_GSN_MAX_SMOOTHING_ANGLE, o->normals_angle);
    }
    unsigned flags = mfs_import_ai_flags(o);
    const struct aiScene *ai = aiImportFileExWithProperties(rel, flags, &fs->io, props);
    if (!ai && repairable(aiGetErrorString())) {
        /* again without the check; meshfs's own checks still run
         * (scene_copy.c, mfs_scene_finish) before any writer sees it */
        snprintf(refused, refusedsz, "%s", aiGetErrorString());
        ai = aiImportFileExWithProperties(rel, flags & ~(unsigned)aiProcess_ValidateDataStructure,
                                          &fs->io, props);
    }
    aiReleasePropertyStore(props);
    return ai;
}

/* assimp 5.2.5's glTF reader gives an animated node without a `rotation`
 * one rotation key taken from decomposing the node's matrix, next to a
 * scale key that is the node's `scale` as written.  For a node with a
 * negative scale factor the two do not belong together: the decomposition
 * keeps its own signs (a mirror as scale (-1, -1, -1), the rotation turned
 * 180 degrees to match; two negative factors as a half turn), so the pair
 * poses the node wrongly (measured: scale (-1, 1, 1) gives rotation
 * (1, 0, 0, 0), i.e. 180 degrees about x, and a point reflection).  glTF's transform is
 * T * R * S (glTF 2.0, 5.25), so R is the node's matrix with the scale
 * divided out of its columns; where that is a proper rotation and the key
 * is not it, the key is replaced.  The native reader needs none of this
 * (native_gltf.c gives such a node the identity it has). */
static void gltf_mirrored_rotation_keys(mfs_scene *s)
{
    for (uint32_t a = 0; a < s->n_animations; a++)
        for (uint32_t c = 0; c < s->animations[a].n_channels; c++) {
            mfs_channel *ch = &s->animations[a].channels[c];
            if (ch->node < 0 || (uint32_t)ch->node >= s->n_nodes || ch->n_rot != 1 || ch->n_scale < 1)
                continue;
            const mfs_mat4 *rest = &s->nodes[ch->node].local;
            const float *sc = ch->scale[0].v;
            if (!(sc[0] < 0 || sc[1] < 0 || sc[2] < 0))
                continue; /* a positive scale decomposes as written */
            mfs_mat4 r;
            mfs_mat4_identity(&r);
            int ok = 1;
            for (int j = 0; j < 3; j++) {
                if (!(fabsf(sc[j]) > 1e-12f) || !isfinite(sc[j]))
                    ok = 0;
                for (int i = 0; ok && i < 3; i++)
                    r.m[i * 4 + j] = rest->m[i * 4 + j] / sc[j];
            }
            if (!ok || !(mfs_mat4_det3(&r) > 0))
                continue;
            /* proper rotation: columns orthonormal */
            for (int j = 0; j < 3 && ok; j++)
                for (int k = j; k < 3 && ok; k++) {
                    double d = 0;
                    for (int i = 0; i < 3; i++)
                        d += (double)r.m[i * 4 + j] * r.m[i * 4 + k];
                    ok = fabs(d - (j == k)) < 1e-4;
                }
            if (!ok)
                continue;
            mfs_mat4 have;
            const float one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
            mfs_mat4_compose(&have, zero, ch->rot[0].q, one);
            double diff = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    diff = fmax(diff, fabs((double)have.m[i * 4 + j] - r.m[i * 4 + j]));
            float t[3], q[4], unit[3];
            if (diff > 1e-4 && mfs_mat4_decompose(&r, t, q, unit) == 0)
                memcpy(ch->rot[0].q, q, sizeof q);
        }
}

/* Nothing read means the model itself could not be opened; a refusal of
 * its own path means it was reached through a swapped link. */
static void note_model_unopened(const mfs_iofs *fs, mfs_deps *deps, const char *rel)
{
    deps->model_unopened = deps->n == 0 || strcmp(deps->v[0].path, rel) != 0 ||
                           (fs->refused_count && strcmp(fs->refused, rel) == 0) ||
                           fs->model_replaced;
}

int mfs_import_scene(const char *root, const char *relpath, const mfs_import_opts *o,
                     mfs_scene **out, mfs_deps *deps, mfs_err *err)
{
    *out = NULL;
    /* the host's path, opened as given: never normalised, so a '\' in a
     * name stays in it (iofs.h) */
    const char *rel = relpath;
#ifdef MESHFS_TEST_HOOKS
    /* Test hook (test_security.py BackslashNameTest): the model's name
     * taken apart Windows-style, as this importer once did, so the host's
     * own check (convstore.c: what was read is what was asked for) is
     * tested on its own. */
    char misread[4096];
    if (getenv("MESHFS_TEST_MISREAD_MODEL") && mfs_iofs_normalise(relpath, misread, sizeof misread) == 0)
        rel = misread;
#endif
    if (!mfs_iofs_model_path_ok(rel))
        return mfs_errf(err, "%s: not a path beneath the source root", relpath);
    mfs_iofs fs;
    if (mfs_iofs_init(&fs, root, deps, err) < 0)
        return -1;
    if (mfs_iofs_set_model(&fs, rel, err) < 0) {
        mfs_iofs_close(&fs);
        return -1;
    }
    /* (a misread name, under the test hook above, is left to the host's
     * check, which that test is about) */
    if (o && o->model_id_known && rel == relpath)
        mfs_iofs_expect_model(&fs, o->model_dev, o->model_ino);
    int native = mfs_native_try(&fs, rel, o, out, err); /* glTF, OBJ: native.c */
    if (native <= 0) {
        if (native < 0) {
            if (fs.model_replaced) /* whatever the parser made of it */
                mfs_iofs_refusal(&fs, err);
            note_model_unopened(&fs, deps, rel);
        }
        mfs_iofs_close(&fs);
        return native;
    }
    char refused[256];
    const struct aiScene *ai = run_assimp(&fs, rel, o, refused, sizeof refused);
    int rc = -1;
    /* before assimp's own message: a model too big to map under the
     * memory limit is to assimp a file it was "Unable to open" */
    if (mfs_iofs_refusal(&fs, err) < 0 || mfs_iofs_oom(&fs, err) < 0)
        goto done;
    if (!ai) {
        const char *why = aiGetErrorString();
        if (why && strstr(why, "md3 file: NUM_SURFACES is 0"))
            /* a Quake III tag file (tags, no surface: a player's
             * animation.cfg companion) is refused whole by assimp's header
             * check, which has read the magic and version by then */
            mfs_errf(err, "%s", MFS_SCENE_NO_MESH);
        else
            mfs_errf(err, "import failed: %s", why && why[0] ? why : "unknown assimp error");
        goto done;
    }
    if (ai->mNumMeshes == 0) {
        mfs_errf(err, "%s", MFS_SCENE_NO_MESH);
        goto done;
    }
    mfs_mat4 c;
    char why[128];
    char ext[32];
    lower_ext(rel, ext, sizeof ext);
    if (mfs_frame_matrix(ai, &fs, rel, ext, &c, why, sizeof why, err) < 0)
        goto done;
    fbx_inherit inh = {0};
    if (strcmp(ext, "fbx") == 0)
        collect_inherit(ai->mRootNode, &inh, 0);
    mfs_scene *s = mfs_from_aiscene(ai, err);
    if (s && refused[0]) {
        /* first: the repairs the copy noted follow from it */
        char *repairs = s->note;
        s->note = NULL;
        char note[320];
        snprintf(note, sizeof note, "assimp's structure check refused it (%s): read without that check",
                 refused);
        if (mfs_scene_note(s, note) < 0 || (repairs && mfs_scene_note(s, repairs) < 0)) {
            mfs_scene_free(s);
            s = NULL;
            mfs_errf(err, "out of memory");
        }
        free(repairs);
    }
    mfs_import_texture(s, ai, &fs, rel, o); /* needs ai alive; decodes only with o->textures */
    aiReleaseImport(ai);
    ai = NULL;
    if (!s) {
        free_inherit(&inh);
        goto done;
    }
    if (strcmp(ext, "gltf") == 0 || strcmp(ext, "glb") == 0)
        gltf_mirrored_rotation_keys(s);
    /* FBX: assimp's helper chains folded, then InheritType (which assimp
     * ignores) applied to the folded local matrices */
    int folded = strcmp(ext, "fbx") != 0 || mfs_fbx_fold_chains(s, err) == 0;
    if (folded && inh.n)
        mfs_fbx_apply_inherit(s, (const char *const *)inh.names, inh.types, inh.n);
    free_inherit(&inh);
    if (!folded || (!(o && o->source_frame) && mfs_frame_apply(s, &c, err) < 0) ||
        mfs_scene_finish(s, err) < 0) {
        mfs_scene_free(s);
        goto done;
    }
    *out = s;
    rc = 0;
done:
    if (ai)
        aiReleaseImport(ai);
    if (rc < 0)
        note_model_unopened(&fs, deps, rel);
    mfs_iofs_close(&fs);
    return rc;
}

/* Bringing every file into the canonical frame.
 *
 * assimp 5.2.5 converts Collada's up_axis and unit itself and glTF is Y-up
 * metres by definition, but several formats arrive exactly as stored:
 *
 * - FBX: a Z-up file stays Z-up and Blender's default export
 *   (UnitScaleFactor 100) stays in centimetres.  The FBX GlobalSettings
 *   survive in the scene metadata, so the correction is computed from them:
 *   canonical = C * file, where C maps the file's CoordAxis to +X, UpAxis to
 *   +Y, FrontAxis to +Z (each with its sign) and scales by
 *   UnitScaleFactor / 100 (FBX units are centimetres).
 * - 3MF, AMF: Z up by definition, with a declared length unit (millimetres
 *   when absent) that assimp parses and drops.
 * - OpenGEX: Metric "distance" and "up", parsed by assimp and never applied.
 * - Blender: Z up, and assimp's Blender importer adds no root correction.
 *
 * The declared units are read from the file's own bytes (frame_decl.c),
 * through the confined file system. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert_scene.h"
#include "frame_decl.h"
#include "iofs.h"

static int meta_number(const struct aiMetadata *md, const char *key, double *out)
{
    if (!md)
        return 0;
    for (unsigned i = 0; i < md->mNumProperties; i++) {
        if (strcmp(md->mKeys[i].data, key) != 0)
            continue;
        const struct aiMetadataEntry *e = &md->mValues[i];
        if (!e->mData)
            return 0;
        switch (e->mType) {
        case AI_BOOL: *out = *(const _Bool *)e->mData; return 1;
        case AI_INT32: *out = *(const int32_t *)e->mData; return 1;
        case AI_UINT64: *out = (double)*(const uint64_t *)e->mData; return 1;
        case AI_FLOAT: *out = *(const float *)e->mData; return 1;
        case AI_DOUBLE: *out = *(const double *)e->mData; return 1;
        default: return 0;
        }
    }
    return 0;
}

static int fbx_frame(const struct aiScene *ai, mfs_mat4 *c, char *why, size_t whysz, mfs_err *err)
{
    const struct aiMetadata *md = ai->mMetaData;
    double up = 1, ups = 1, front = 2, fronts = 1, coord = 0, coords = 1, unit = 1;
    meta_number(md, "UpAxis", &up);
    meta_number(md, "UpAxisSign", &ups);
    meta_number(md, "FrontAxis", &front);
    meta_number(md, "FrontAxisSign", &fronts);
    meta_number(md, "CoordAxis", &coord);
    meta_number(md, "CoordAxisSign", &coords);
    meta_number(md, "UnitScaleFactor", &unit);
    int ax[3] = {(int)coord, (int)up, (int)front};
    double sg[3] = {coords < 0 ? -1 : 1, ups < 0 ? -1 : 1, fronts < 0 ? -1 : 1};
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        if (ax[i] < 0 || ax[i] > 2)
            return mfs_errf(err, "FBX GlobalSettings: axis index %d out of range", ax[i]);
        seen |= 1 << ax[i];
    }
    if (seen != 7)
        return mfs_errf(err, "FBX GlobalSettings: CoordAxis %d, UpAxis %d, FrontAxis %d "
                             "do not name three different axes", ax[0], ax[1], ax[2]);
    if (!(unit > 0) || !isfinite(unit))
        return mfs_errf(err, "FBX GlobalSettings: UnitScaleFactor %g is not a positive number", unit);
    double scale = unit / 100.0;
    memset(c, 0, sizeof *c);
    for (int r = 0; r < 3; r++)
        c->m[r * 4 + ax[r]] = (float)(sg[r] * scale);
    c->m[15] = 1;
    snprintf(why, whysz, "FBX axes coord %c%c up %c%c front %c%c, unit %g cm",
             sg[0] < 0 ? '-' : '+', "XYZ"[ax[0]], sg[1] < 0 ? '-' : '+', "XYZ"[ax[1]],
             sg[2] < 0 ? '-' : '+', "XYZ"[ax[2]], unit);
    return 0;
}

/* Z up, right-handed, `metres` per unit: (x, y, z) -> (x, z, -y) * metres,
 * a rotation of -90 degrees about X (no mirror, winding kept). */
static void zup_frame(mfs_mat4 *c, double metres)
{
    memset(c, 0, sizeof *c);
    c->m[0] = (float)metres;
    c->m[6] = (float)metres;
    c->m[9] = (float)-metres;
    c->m[15] = 1;
}

/* 3MF, AMF and OpenGEX: what the file declares, read from its bytes. */
static int declared_frame(mfs_iofs *fs, const char *rel, const char *ext, mfs_mat4 *c, char *why,
                          size_t whysz, mfs_err *err)
{
    const uint8_t *data;
    size_t n;
    struct aiFile *f = mfs_iofs_view(fs, rel, &data, &n);
    if (!f)
        return mfs_errf(err, "cannot reopen the model to read its declared unit");
    mfs_decl d;
    int rc;
    if (strcmp(ext, "3mf") == 0)
        rc = mfs_decl_3mf(data, n, &d, err);
    else if (strcmp(ext, "amf") == 0)
        rc = mfs_decl_amf((const char *)data, n, &d, err);
    else
        rc = mfs_decl_ogex((const char *)data, n, &d, err);
    mfs_iofs_unview(fs, f);
    if (rc < 0)
        return -1;
    if (d.zup)
        zup_frame(c, d.metres);
    else
        for (int i = 0; i < 3; i++)
            c->m[i * 5] = (float)d.metres;
    snprintf(why, whysz, "%s: %s up, %g m per unit (%s)", ext, d.zup ? "Z" : "Y", d.metres,
             d.unit[0] ? d.unit : "format default");
    return 0;
}

int mfs_frame_matrix(const struct aiScene *ai, mfs_iofs *fs, const char *rel, const char *ext,
                     mfs_mat4 *c, char *why, size_t whysz, mfs_err *err)
{
    mfs_mat4_identity(c);
    snprintf(why, whysz, "as imported");
    if (strcmp(ext, "fbx") == 0)
        return fbx_frame(ai, c, why, whysz, err);
    if (strcmp(ext, "3mf") == 0 || strcmp(ext, "amf") == 0 || strcmp(ext, "ogex") == 0)
        return declared_frame(fs, rel, ext, c, why, whysz, err);
    if (strcmp(ext, "blend") == 0) {
        zup_frame(c, 1.0);
        snprintf(why, whysz, "Blender: Z up, metres");
    }
    return 0;
}

static void flip_winding(mfs_scene *s)
{
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        mfs_mesh *m = &s->meshes[i];
        if (m->prim != MFS_PRIM_TRIANGLES)
            continue;
        for (uint32_t f = 0; f < m->n_faces; f++) {
            uint32_t t = m->indices[f * 3 + 1];
            m->indices[f * 3 + 1] = m->indices[f * 3 + 2];
            m->indices[f * 3 + 2] = t;
        }
    }
}

static int root_animated(const mfs_scene *s)
{
    for (uint32_t a = 0; a < s->n_animations; a++)
        for (uint32_t c = 0; c < s->animations[a].n_channels; c++)
            if (s->animations[a].channels[c].node == 0)
                return 1;
    return 0;
}

/* Shifts every node index by one and puts a new root in front, so the
 * correction survives the old root's animation replacing its matrix. */
static int insert_root(mfs_scene *s, mfs_err *err)
{
    mfs_node *nodes = calloc(s->n_nodes + 1, sizeof *nodes);
    uint32_t *kid = malloc(sizeof *kid);
    char *name = mfs_strdup("meshfs_frame");
    if (!nodes || !kid || !name) {
        free(nodes);
        free(kid);
        free(name);
        return mfs_errf(err, "out of memory");
    }
    memcpy(nodes + 1, s->nodes, sizeof *nodes * s->n_nodes);
    for (uint32_t i = 1; i <= s->n_nodes; i++) {
        nodes[i].parent += 1;
        for (uint32_t k = 0; k < nodes[i].n_children; k++)
            nodes[i].children[k] += 1;
    }
    nodes[1].parent = 0;
    nodes[0].name = name;
    nodes[0].parent = -1;
    mfs_mat4_identity(&nodes[0].local);
    kid[0] = 1;
    nodes[0].children = kid;
    nodes[0].n_children = 1;
    free(s->nodes);
    s->nodes = nodes;
    s->n_nodes++;
    for (uint32_t i = 0; i < s->n_meshes; i++)
        for (uint32_t b = 0; b < s->meshes[i].n_bones; b++)
            if (s->meshes[i].bones[b].node >= 0)
                s->meshes[i].bones[b].node += 1;
    for (uint32_t a = 0; a < s->n_animations; a++)
        for (uint32_t c = 0; c < s->animations[a].n_channels; c++)
            s->animations[a].channels[c].node += 1;
    return 0;
}

int mfs_frame_apply(mfs_scene *s, const mfs_mat4 *c, mfs_err *err)
{
    if (mfs_mat4_is_identity(c))
        return 0;
    if (root_animated(s) && insert_root(s, err) < 0)
        return -1;
    mfs_mat4_mul(&s->nodes[0].local, c, &s->nodes[0].local);
    if (mfs_mat4_det3(c) < 0)
        flip_winding(s);
    return 0;
}

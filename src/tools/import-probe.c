/* import-probe: imports one model the way the worker does (no sandbox) and
 * prints what the scene holds as one JSON object, for the native-vs-assimp
 * equivalence test (tests/integration/test_native.py) and scripts/bench-import.
 *
 *   import-probe [--importer auto|assimp] [--times T,T,...] [--repeat N]
 *                [--quiet] ROOT REL
 *
 * --times: seconds at which every animation is sampled (world matrices of
 * every node); --repeat: import N times (timing); --quiet: print only the
 * route and counts.
 *
 *   import-probe [--tangents] --raw-assimp bare|flags ROOT REL
 *
 * assimp alone, for scripts/bench-import's baselines: no post-processing,
 * or meshfs's (mfs_import_ai_flags() for these options); prints the vertex
 * and face counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <assimp/cimport.h>
#include <assimp/scene.h>

#include "meshfs/import.h"

static int raw_assimp(const mfs_import_opts *o, const char *mode, const char *root, const char *rel)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    unsigned flags = strcmp(mode, "flags") == 0 ? mfs_import_ai_flags(o) : 0;
    const struct aiScene *s = aiImportFile(path, flags);
    if (!s) {
        fprintf(stderr, "import-probe: %s: %s\n", path, aiGetErrorString());
        return 1;
    }
    unsigned long long v = 0, f = 0;
    for (unsigned i = 0; i < s->mNumMeshes; i++)
        v += s->mMeshes[i]->mNumVertices, f += s->mMeshes[i]->mNumFaces;
    printf("{\"route\":\"assimp %s\",\"vertices\":%llu,\"faces\":%llu}\n", mode, v, f);
    aiReleaseImport(s);
    return 0;
}

static void str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void num(double v)
{
    if (isfinite(v))
        printf("%.9g", v);
    else
        printf("null");
}

static void mesh_json(const mfs_mesh *m)
{
    printf("{\"name\":");
    str(m->name);
    printf(",\"prim\":%d,\"vertices\":%u,\"faces\":%u,\"material\":%d,\"normals\":%d,\"tangents\":%d,"
           "\"uv\":%d,\"colors\":%d,\"min\":[", (int)m->prim, m->n_vertices, m->n_faces, m->material,
           m->normals != NULL, m->tangents != NULL, (m->uv[0] != NULL) + (m->uv[1] != NULL),
           m->colors != NULL);
    float lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (uint32_t v = 0; v < m->n_vertices; v++)
        for (int k = 0; k < 3; k++) {
            float x = m->positions[v][k];
            if (v == 0 || x < lo[k])
                lo[k] = x;
            if (v == 0 || x > hi[k])
                hi[k] = x;
        }
    for (int k = 0; k < 3; k++) {
        num(lo[k]);
        putchar(k < 2 ? ',' : ']');
    }
    printf(",\"max\":[");
    for (int k = 0; k < 3; k++) {
        num(hi[k]);
        putchar(k < 2 ? ',' : ']');
    }
    printf(",\"bones\":[");
    for (uint32_t b = 0; b < m->n_bones; b++) {
        if (b)
            putchar(',');
        printf("{\"name\":");
        str(m->bones[b].name);
        printf(",\"weights\":%u}", m->bones[b].n_weights);
    }
    printf("]}");
}

static void world_of(const mfs_scene *s, const mfs_mat4 *local, mfs_mat4 *world)
{
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (s->nodes[i].parent < 0)
            world[i] = local[i];
        else
            mfs_mat4_mul(&world[i], &world[s->nodes[i].parent], &local[i]);
    }
}

static void anim_json(const mfs_scene *s, const mfs_animation *a, const double *times, int nt)
{
    printf("{\"name\":");
    str(a->name);
    printf(",\"duration_s\":");
    num(a->duration / a->ticks_per_second);
    printf(",\"channels\":%u,\"poses\":[", a->n_channels);
    mfs_mat4 *local = malloc(sizeof *local * (s->n_nodes + 1));
    mfs_mat4 *world = malloc(sizeof *world * (s->n_nodes + 1));
    for (int i = 0; local && world && i < nt; i++) {
        mfs_scene_pose(s, a, times[i] * a->ticks_per_second, local);
        world_of(s, local, world);
        printf("%s{\"t\":", i ? "," : "");
        num(times[i]);
        printf(",\"nodes\":{");
        for (uint32_t n = 0; n < s->n_nodes; n++) {
            if (n)
                putchar(',');
            str(s->nodes[n].name);
            putchar(':');
            putchar('[');
            for (int k = 0; k < 16; k++) {
                num(world[n].m[k]);
                if (k < 15)
                    putchar(',');
            }
            putchar(']');
        }
        printf("}}");
    }
    free(local);
    free(world);
    printf("]}");
}

int main(int argc, char **argv)
{
    mfs_import_opts o = {0};
    double times[64];
    int nt = 0, repeat = 1, quiet = 0, dump = -1;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        mfs_err err;
        if (!strcmp(argv[i], "--raw-assimp") && argc - i == 4)
            return raw_assimp(&o, argv[i + 1], argv[i + 2], argv[i + 3]);
        else if (!strcmp(argv[i], "--importer") && i + 1 < argc) {
            if (mfs_importer_parse(argv[++i], &o.importer, &err) < 0) {
                fprintf(stderr, "import-probe: %s\n", err.msg);
                return 2;
            }
        } else if (!strcmp(argv[i], "--times") && i + 1 < argc) {
            for (char *p = argv[++i]; *p && nt < 64;) {
                times[nt++] = strtod(p, &p);
                if (*p == ',')
                    p++;
                else
                    break;
            }
        } else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--dump-mesh") && i + 1 < argc) {
            dump = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (!strcmp(argv[i], "--tangents")) {
            o.tangents = 1;
        } else if (!strcmp(argv[i], "--textures")) {
            o.textures = 1;
        } else {
            break;
        }
    }
    if (argc - i != 2) {
        fprintf(stderr, "usage: import-probe [--importer auto|assimp] [--times T,...] [--repeat N] "
                        "[--quiet] [--textures] [--tangents] ROOT REL\n");
        return 2;
    }
    mfs_scene *s = NULL;
    mfs_deps deps = {0};
    mfs_err err;
    mfs_err_clear(&err);
    int rc = 0;
    for (int r = 0; r < (repeat > 0 ? repeat : 1); r++) {
        mfs_scene_free(s);
        s = NULL;
        mfs_deps_free(&deps);
        memset(&deps, 0, sizeof deps);
        rc = mfs_import(argv[i], argv[i + 1], &o, &s, &deps, &err);
    }
    printf("{\"route\":");
    str(deps.route);
    printf(",\"ok\":%s,\"error\":", rc == 0 ? "true" : "false");
    str(rc == 0 ? "" : err.msg);
    /* the files read, then the paths found empty and the folders searched */
    static const char *const lists[] = {"deps", "absent", "searched"};
    for (int k = MFS_DEP_FILE; k <= MFS_DEP_LISTING; k++) {
        printf(",\"%s\":[", lists[k]);
        int any = 0;
        for (uint32_t d = 0; d < deps.n; d++) {
            if ((deps.v[d].kind == MFS_DEP_MISSING ? MFS_DEP_ABSENT : deps.v[d].kind) != k)
                continue;
            if (any++)
                putchar(',');
            str(deps.v[d].path);
        }
        putchar(']');
    }
    if (s) {
        printf(",\"nodes\":%u,\"vertices\":%llu,\"triangles\":%llu", s->n_nodes,
               (unsigned long long)mfs_scene_vertex_count(s), (unsigned long long)mfs_scene_triangle_count(s));
        if (!quiet) {
            printf(",\"node_names\":[");
            for (uint32_t n = 0; n < s->n_nodes; n++) {
                if (n)
                    putchar(',');
                str(s->nodes[n].name);
            }
            printf("],\"meshes\":[");
            for (uint32_t m = 0; m < s->n_meshes; m++) {
                if (m)
                    putchar(',');
                mesh_json(&s->meshes[m]);
            }
            printf("],\"materials\":[");
            for (uint32_t m = 0; m < s->n_materials; m++) {
                printf("%s{\"name\":", m ? "," : "");
                str(s->materials[m].name);
                printf(",\"diffuse\":");
                str(s->materials[m].textures[MFS_TEX_DIFFUSE]);
                printf("}");
            }
            printf("],\"image\":{\"width\":%u,\"height\":%u,\"source\":", s->image.width, s->image.height);
            str(s->image.source);
            printf(",\"note\":");
            str(s->image.note);
            printf("},\"animations\":[");
            for (uint32_t a = 0; a < s->n_animations; a++) {
                if (a)
                    putchar(',');
                anim_json(s, &s->animations[a], times, nt);
            }
            putchar(']');
        }
    }
    printf("}\n");
    if (s && dump >= 0 && (uint32_t)dump < s->n_meshes) {
        const mfs_mesh *m = &s->meshes[dump];
        for (uint32_t v = 0; v < m->n_vertices; v++) {
            printf("v%u p %.6g %.6g %.6g", v, m->positions[v][0], m->positions[v][1], m->positions[v][2]);
            if (m->normals)
                printf(" n %.6g %.6g %.6g", m->normals[v][0], m->normals[v][1], m->normals[v][2]);
            if (m->uv[0])
                printf(" t %.6g %.6g", m->uv[0][v][0], m->uv[0][v][1]);
            if (m->tangents)
                printf(" T %.6g %.6g %.6g B %.6g %.6g %.6g", m->tangents[v][0], m->tangents[v][1],
                       m->tangents[v][2], m->bitangents[v][0], m->bitangents[v][1], m->bitangents[v][2]);
            printf("\n");
        }
    }
    mfs_scene_free(s);
    mfs_deps_free(&deps);
    return rc == 0 ? 0 : 1;
}

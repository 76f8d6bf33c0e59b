/* bench-import: bare assimp import with meshfs's post-processing, nothing
 * else.  The baseline that scripts/bench-convert measures meshfs against,
 * and a quick way to tell an assimp failure from a meshfs one.  Tangents
 * are computed, as for a conversion that writes .gmf, unless
 * --no-tangents (a conversion without .gmf). */
#include <stdio.h>
#include <string.h>

#include <assimp/cimport.h>
#include <assimp/config.h>
#include <assimp/scene.h>

#include "meshfs/import.h"

int main(int argc, char **argv)
{
    mfs_import_opts o = {.tangents = 1};
    if (argc == 3 && !strcmp(argv[1], "--no-tangents")) {
        o.tangents = 0;
        argv++;
        argc--;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: bench-import [--no-tangents] MODEL\n");
        return 2;
    }
    struct aiPropertyStore *props = aiCreatePropertyStore();
    aiSetImportPropertyInteger(props, AI_CONFIG_IMPORT_FBX_PRESERVE_PIVOTS, 1);
    const struct aiScene *s = aiImportFileExWithProperties(argv[1], mfs_import_ai_flags(&o), NULL, props);
    aiReleasePropertyStore(props);
    if (!s) {
        fprintf(stderr, "bench-import: %s: %s\n", argv[1], aiGetErrorString());
        return 1;
    }
    unsigned long long v = 0, f = 0;
    for (unsigned i = 0; i < s->mNumMeshes; i++) {
        v += s->mMeshes[i]->mNumVertices;
        f += s->mMeshes[i]->mNumFaces;
    }
    printf("meshes %u vertices %llu faces %llu\n", s->mNumMeshes, v, f);
    aiReleaseImport(s);
    return 0;
}

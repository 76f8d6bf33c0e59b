/* libFuzzer target for the native import path: the input is a glTF/glb
 * (FUZZ_GLTF) or OBJ file handed to cgltf or fast_obj exactly as the worker
 * hands it, through the confined file system, then through meshfs's own
 * scene building (node order, skins, sampler resampling, normals, tangents,
 * welding) and mfs_scene_validate.
 *
 * The "disk" is a directory on tmpfs (/dev/shm, memory only) holding the
 * one input file; referenced .bin/.mtl files are simply absent, and a
 * reference that leaves it is refused as in production.  Declining is a
 * normal outcome; only crashes and sanitizer reports are findings. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/import/native.h"
#include "../src/import/native_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

static void setup_root(void)
{
    if (root[0])
        return;
    snprintf(root, sizeof root, "/dev/shm/meshfs-fuzz-native.XXXXXX");
    if (!mkdtemp(root))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup_root();
#ifdef FUZZ_GLTF
    const char *rel = "f.gltf";
#else
    const char *rel = "f.obj";
#endif
    char path[128];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
    mfs_deps deps = {0};
    mfs_iofs fs;
    mfs_err err;
    if (mfs_iofs_init(&fs, root, &deps, &err) < 0)
        abort();
    mfs_import_opts o = {.textures = 1};
    mfs_scene *s = NULL;
    char why[MFS_ERR_MAX];
#ifdef FUZZ_GLTF
    int rc = mfs_native_gltf(&fs, rel, &o, &s, why, sizeof why, &err);
#else
    int rc = mfs_native_obj(&fs, rel, &o, &s, why, sizeof why, &err);
#endif
    if (rc == 0 && s)
        mfs_native_finish_scene(s, &err);
    mfs_scene_free(s);
    mfs_iofs_close(&fs);
    mfs_deps_free(&deps);
    return 0;
}

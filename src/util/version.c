/* -V/--version's lines (util.h, "version").  The worker's library versions are
 * meson's (MESHFS_*_VERSION): the tools that print them do not link the
 * worker's libraries. */
#include <libdeflate.h>
#include <stdio.h>
#include <xxhash.h>
#include <zlib.h>

#include "meshfs/cache.h" /* MFS_CACHE_VERSION */
#include "meshfs/util.h"

void mfs_version_print(FILE *f, const char *tool, unsigned flags)
{
    unsigned xxh = XXH_versionNumber();
    fprintf(f,
            "%s %s\n"
            "cache format version %d\n"
            "output version %s\n"
            "zlib version %s\n"
            "xxhash version %u.%u.%u\n"
            "libdeflate version %s\n",
            tool, MESHFS_VERSION, MFS_CACHE_VERSION, MESHFS_OUTPUT_VERSION, zlibVersion(),
            xxh / 10000, xxh / 100 % 100, xxh % 100, LIBDEFLATE_VERSION_STRING);
    if (flags & MFS_VERSION_WORKER_LIBS)
        fprintf(f,
                "assimp version %s (meshfs-worker, at build time)\n"
                "meshoptimizer version %s (meshfs-worker, at build time)\n"
                "cgltf version %s (meshfs-worker, at build time)\n"
                "fast_obj version %s (meshfs-worker, at build time)\n",
                MESHFS_ASSIMP_VERSION, MESHFS_MESHOPT_VERSION, MESHFS_CGLTF_VERSION,
                MESHFS_FAST_OBJ_VERSION);
}

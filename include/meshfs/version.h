/* What -V/--version prints, the same lines for every tool (README,
 * "Versions"): meshfs's version, the cache format and output versions, and
 * the libraries a tool's bytes depend on.
 *
 * A conversion's bytes come from meshfs-worker, so a tool that converts
 * (meshfs, meshfs-convert) also names the worker's libraries, as meson
 * found them when building: assimp, meshoptimizer, and the native parsers
 * cgltf and fast_obj (or "not built").  zlib and xxhash are the ones loaded
 * now (their run-time version); libfuse is the daemon's to print. */
#ifndef MESHFS_VERSION_H
#define MESHFS_VERSION_H

#include <stdio.h>

enum { MFS_VERSION_WORKER_LIBS = 1 };

/* "TOOL VERSION" and the lines after it; `flags`: MFS_VERSION_WORKER_LIBS. */
void mfs_version_print(FILE *f, const char *tool, unsigned flags);

#endif

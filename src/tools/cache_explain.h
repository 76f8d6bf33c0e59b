/* meshfs-cache explain (src/tools/cache_explain.c). */
#ifndef MESHFS_TOOLS_CACHE_EXPLAIN_H
#define MESHFS_TOOLS_CACHE_EXPLAIN_H

/* `explain [--src SRC] [OPTIONS] PATH...` with the cache at cache_dir (NULL:
 * the default) and output as JSON lines when json.  Returns the exit
 * status: 0, 1 a path could not be explained, 2 usage, 3 the cache. */
int mfs_cache_explain_main(const char *cache_dir, int json, int argc, char **argv);

#endif

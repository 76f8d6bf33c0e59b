/* meshfs-cache push (src/tools/cache_push.c). */
#ifndef MESHFS_TOOLS_CACHE_PUSH_H
#define MESHFS_TOOLS_CACHE_PUSH_H

/* `push --remote URL [--remote-timeout-ms MS] [--remote-data-timeout-s S]
 * [--remote-token-file FILE]` with the cache at cache_dir (NULL: the
 * default).  Returns the exit status: 0 every owed upload sent (or none
 * owed), 1 some not sent (still owed), 2 usage, 3 the cache. */
int mfs_cache_push_main(const char *cache_dir, int json, int argc, char **argv);

#endif

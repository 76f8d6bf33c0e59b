/* Hand-built scenes for writer tests: values small enough to work out the
 * expected bytes by hand from the format documents. */
#ifndef MESHFS_TEST_FIXTURES_H
#define MESHFS_TEST_FIXTURES_H

#include <stddef.h>

#include "meshfs/scene.h"

/* A unit cube centred on the origin, side 1 (coordinates +-0.5), 24 vertices
 * (4 per face, flat normals), 12 CCW triangles, UV set 0 per face
 * (0,0) (1,0) (1,1) (0,1), one material "cube_mat" with diffuse texture
 * "textures/cube.png", one root node "root" (identity) with a child node
 * "cube" (identity) placing mesh 0 named "cube".  No bones, no animation.
 *
 * Face order: +X, -X, +Y, -Y, +Z, -Z.  Face f uses vertices 4f..4f+3 and
 * triangles (4f, 4f+1, 4f+2), (4f, 4f+2, 4f+3). */
mfs_scene *fixture_cube(void);

/* Scene s written as .dem (s validated first; model_path: the option's
 * value, may be NULL): the text, NUL-terminated, with no NUL inside
 * (caller frees), or NULL with err. */
char *fixture_dem_text(const mfs_scene *s, const char *model_path, mfs_err *err);

/* A two-bone skinned strip: 6 vertices in the XY plane
 *   v0 (0,0,0) v1 (1,0,0) v2 (0,1,0) v3 (1,1,0) v4 (0,2,0) v5 (1,2,0)
 * normals (0,0,1), UV (x/1, y/2); 4 CCW triangles
 *   (0,1,3) (0,3,2) (2,3,5) (2,5,4).
 * Nodes (pre-order): 0 "root" (identity), 1 "strip" (identity, places mesh 0),
 *   2 "bone0" (identity, child of root), 3 "bone1" (translation (0,1,0),
 *   child of bone0).
 * Bones of mesh 0: "bone0" offset identity, weights v0 1, v1 1, v2 0.5, v3 0.5;
 *   "bone1" offset translation (0,-1,0), weights v2 0.5, v3 0.5, v4 1, v5 1.
 * Animation "bend": duration 10 ticks, 10 ticks/s, one channel on "bone1":
 *   rotation keys t=0 identity, t=10 90 degrees about +Z (0,0,0.7071068,0.7071068);
 *   position keys t=0 (0,1,0) (one key); no scale keys.
 * Material "strip_mat" without textures. */
mfs_scene *fixture_skinned_strip(void);

/* A new private folder $TMPDIR/<name>.XXXXXX (TMPDIR unset or empty: /tmp),
 * its path in buf; 0, or -1.  fixture_rmtree removes a tree without
 * following links. */
int fixture_tempdir(char *buf, size_t n, const char *name);
void fixture_rmtree(const char *path);

/* Writes text to dir/name (created or truncated): 0, or -1 with errno. */
int fixture_write(const char *dir, const char *name, const char *text);

/* A cache test's folders, under a private folder base: the cache
 * directory's path (not created) and a source folder (created, open). */
typedef struct fixture_cache_dirs {
    char dir[300];  /* cache directory */
    char root[300]; /* source files */
    char base[256];
    int rootfd;
} fixture_cache_dirs;

/* cmocka setup and teardown for a fixture_cache_dirs in *state. */
int fixture_cache_dirs_setup(void **state, const char *name);
int fixture_cache_dirs_teardown(void **state);

#endif

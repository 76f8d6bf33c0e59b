/* Writing JSON strings (meshfs-inspect --json, meshfs-convert --report). */
#ifndef MESHFS_JSON_H
#define MESHFS_JSON_H

#include <stdio.h>

/* s as a JSON string, quotes included; NULL as null.  Control characters
 * are escaped and invalid UTF-8 bytes (assimp quotes raw file bytes in its
 * messages) become U+FFFD, so every line stays valid JSON. */
void mfs_json_str(FILE *f, const char *s);

#endif

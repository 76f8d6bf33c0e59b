/* Text of .dem lines, shared by the .dem writer's parts (src/formats/dem.c).
 * Each put_* appends at p and returns the new end; the caller's line buffer
 * holds the line (LINE_MAX_BYTES in dem.c). */
#ifndef MESHFS_DEM_TEXT_H
#define MESHFS_DEM_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/formats.h"
#include "meshfs/util.h"

/* " <number>": shortest float32 text, -0.0 and subnormals written 0.0. */
char *dem_put_num(char *p, float v);
/* " <integer>" */
char *dem_put_uint(char *p, uint64_t v);
char *dem_put_int(char *p, int64_t v);
/* Ends the line at p with '\n' and writes line..p to out. */
void dem_end_line(mfs_sink *out, char *line, char *p);
/* A name as one token (spaces, control bytes and invalid UTF-8 become '_');
 * empty or NULL names become fallback. */
void dem_put_name_n(mfs_sink *out, const char *name, size_t len, const char *fallback);
void dem_put_name(mfs_sink *out, const char *name, const char *fallback);
/* "keyword name\n" and "keyword count\n" */
void dem_put_named(mfs_sink *out, const char *kw, const char *name, const char *fallback);
void dem_put_count(mfs_sink *out, const char *kw, uint64_t n);
/* The model's machine name (docs/formats/dem.md, "Names"): the last
 * component of o->model_path when set, else the root node's name. */
void dem_put_model_name(mfs_sink *out, const mfs_scene *s, const mfs_options *o);

#endif

/* What a model file declares about its own length unit and up axis, read
 * from its bytes where assimp 5.2.5 reads the declaration and drops it
 * (internal to the importer; docs/import.md, "What the importer honours").
 *
 * Each reader takes the file's bytes (the importer maps them through the
 * confined file system) and reads only what it needs: a 3MF's package
 * relationships and the first 64 KiB of its model part, an AMF's root
 * element, an OpenGEX file's top-level Metric structures.  Each returns 0
 * with the declaration (or the format's default when the file says
 * nothing), or -1 with err naming the value it cannot use. */
#ifndef MESHFS_IMPORT_FRAME_DECL_H
#define MESHFS_IMPORT_FRAME_DECL_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/err.h"

typedef struct mfs_decl {
    double metres;        /* metres per file unit */
    int zup;              /* 1: +Z is up (else +Y) */
    char unit[32];        /* the unit as written, or "" when not declared */
} mfs_decl;

/* 3MF: <model unit="micron|millimeter|centimeter|inch|foot|meter">
 * (millimeter when absent) in the package's 3D model part; always Z up. */
int mfs_decl_3mf(const uint8_t *zip, size_t n, mfs_decl *d, mfs_err *err);

/* AMF: <amf unit="millimeter|inch|feet|meter|micron"> (millimeter when
 * absent); always Z up. */
int mfs_decl_amf(const char *text, size_t n, mfs_decl *d, mfs_err *err);

/* OpenGEX: Metric (key = "distance") {float {metres per unit}} (1 when
 * absent) and Metric (key = "up") {string {"y" or "z"}} ("z" when absent). */
int mfs_decl_ogex(const char *text, size_t n, mfs_decl *d, mfs_err *err);

#endif

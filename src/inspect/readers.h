/* The format readers, one file each in src/inspect/: what the dispatcher
 * (inspect.c) picks from, and what a container reader (lgepkg.c) runs on
 * its payloads.
 *
 * Each reads the n bytes at p into r's summary and returns 0, or -1 with
 * r->err set; what breaks an invariant is recorded with mfs_rd_violation
 * (reader.h), and mfs_rd_finish decides whether it fails the reading.
 *
 * Internal to src/inspect/; not part of the public contract. */
#ifndef MESHFS_INSPECT_READERS_H
#define MESHFS_INSPECT_READERS_H

#include "reader.h"

int mfs_read_fmd(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_fmi(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_gmf(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_dem(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_vrt(mfs_rd *r, const uint8_t *p, size_t n);
/* vrt: the sibling's bytes or NULL; vrt_name for messages. */
int mfs_read_tri(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name);
int mfs_read_sph(mfs_rd *r, const uint8_t *p, size_t n, const uint8_t *vrt, size_t vrt_n,
                 const char *vrt_name);
int mfs_read_tex(mfs_rd *r, const uint8_t *p, size_t n);
/* LGE package and single chunk (src/inspect/lgepkg.c); payloads go through
 * the readers above by their type. */
int mfs_read_lgepkg(mfs_rd *r, const uint8_t *p, size_t n);
int mfs_read_lge(mfs_rd *r, const uint8_t *p, size_t n);

#endif

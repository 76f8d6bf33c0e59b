/* The glTF importer's parts (internal to native_gltf*.c): native_gltf.c
 * builds the scene, and uses the others, which use none of it.
 *
 *   native_gltf_read.c    the file's bytes: buffers read through the
 *                         confined file system, what the native path
 *                         declines to read, and accessors unpacked
 *   native_gltf_order.c   the order assimp's glTF reader meets objects in
 *   native_gltf_anim.c    animations, resampled to linear keys */
#ifndef MESHFS_IMPORT_NATIVE_GLTF_H
#define MESHFS_IMPORT_NATIVE_GLTF_H

#include <stddef.h>
#include <stdint.h>

#include <cgltf.h>

#include "iofs.h"
#include "native_common.h"
#include "meshfs/err.h"
#include "meshfs/scene.h"

#define MAX_ELEMENTS (1u << 27) /* per accessor; more is not a model */

typedef struct decline {
    char *why;
    size_t whysz;
} decline;

/* ---- native_gltf_read.c ---- */

typedef struct file_rec {
    mfs_native_file f;
    struct file_rec *next;
} file_rec;

typedef struct io_ctx {
    mfs_iofs *fs;
    file_rec *files;
} io_ctx;

/* cgltf's file callbacks: reads go through fs and are kept (mapped) until
 * mfs_gltf_io_close_all, as cgltf keeps pointers into them. */
cgltf_result mfs_gltf_io_read(const struct cgltf_memory_options *mo, const struct cgltf_file_options *fo,
                              const char *path, cgltf_size *size, void **data);
void mfs_gltf_io_release(const struct cgltf_memory_options *mo, const struct cgltf_file_options *fo,
                         void *data);
void mfs_gltf_io_close_all(io_ctx *io);

/* 1 with dc->why set when the native path does not read d (assimp does). */
int mfs_gltf_declines(const cgltf_data *d, decline *dc);

/* An accessor of `comps` components as floats (malloc'd), NULL when absent,
 * of another shape, or out of memory. */
float *mfs_gltf_unpack(const cgltf_accessor *a, size_t comps);

/* ---- native_gltf_order.c ---- */

typedef struct order {
    const cgltf_data *d;
    unsigned char *node_seen, *mesh_seen, *mat_seen, *img_seen, *skin_seen;
    int32_t *mesh_slot;   /* glTF mesh -> position in meshes[] */
    uint32_t *meshes, n_meshes;
    int32_t *mat_slot;    /* glTF material -> scene material */
    uint32_t *mats, n_mats;
    int32_t *img_slot;    /* glTF image -> embedded index, -1 if external */
    uint32_t *imgs, n_imgs;
} order;

int mfs_gltf_order_init(order *o, const cgltf_data *d, const cgltf_scene *sc);
void mfs_gltf_order_free(order *o);

/* ---- the scene being built (native_gltf.c) ---- */

typedef struct build {
    const cgltf_data *d;
    mfs_scene *s;
    order *o;
    int32_t *node_at;    /* glTF node -> scene node, -1 if not in the tree */
    uint32_t *mesh_first; /* glTF mesh slot -> first scene mesh */
    uint32_t next;
    decline *dc;
    int tangents;        /* mfs_import_opts.tangents */
    mfs_err *err;
} build;

/* ---- native_gltf_anim.c ---- */

/* The scene's animations from every glTF animation: 0, 1 declined (dc),
 * -1 failed (err). */
int mfs_gltf_fill_animations(build *b);

#endif

/* The glTF file's bytes: its buffers read through the confined file
 * system, what the native path declines to read (assimp reads it), and
 * accessors unpacked to floats (native_gltf.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native_gltf.h"

cgltf_result mfs_gltf_io_read(const struct cgltf_memory_options *mo, const struct cgltf_file_options *fo,
                            const char *path, cgltf_size *size, void **data)
{
    (void)mo;
    io_ctx *io = fo->user_data;
    file_rec *r = calloc(1, sizeof *r);
    if (!r)
        return cgltf_result_out_of_memory;
    if (mfs_native_open(io->fs, path, &r->f) < 0) {
        free(r);
        return cgltf_result_file_not_found;
    }
    r->next = io->files;
    io->files = r;
    if (*size && *size > r->f.size)
        return cgltf_result_data_too_short;
    *size = r->f.size;
    *data = (void *)r->f.data;
    return cgltf_result_success;
}

/* Mapped files stay until the import ends (io_close_all): cgltf keeps
 * pointers into them. */
void mfs_gltf_io_release(const struct cgltf_memory_options *mo, const struct cgltf_file_options *fo, void *data)
{
    (void)mo;
    (void)fo;
    (void)data;
}

void mfs_gltf_io_close_all(io_ctx *io)
{
    while (io->files) {
        file_rec *r = io->files;
        io->files = r->next;
        mfs_native_close(io->fs, &r->f);
        free(r);
    }
}

/* ---- what is not for the native path ---- */

/* offset + stride * (count - 1) + elem, the last byte an accessor reads,
 * fits in a size_t.  cgltf_validate adds it up unchecked, so a byteStride
 * of 2^62 wraps to a small sum that passes, and the reads leave the buffer. */
static int span_fits(cgltf_size offset, cgltf_size stride, cgltf_size count, cgltf_size elem)
{
    cgltf_size span;
    return count == 0 || (!__builtin_mul_overflow(stride, count - 1, &span) &&
                          !__builtin_add_overflow(span, elem, &span) &&
                          !__builtin_add_overflow(span, offset, &span));
}

/* Sizes cgltf_validate would get wrong or check too late: accessor spans
 * that wrap, a sparse part larger than its accessor, and buffer views
 * beyond their buffer (validate reads sparse indices before checking
 * those). */
static int bad_sizes(const cgltf_data *d, decline *dc)
{
    for (size_t i = 0; i < d->buffer_views_count; i++) {
        const cgltf_buffer_view *v = &d->buffer_views[i];
        if (v->buffer && (v->offset > v->buffer->size || v->size > v->buffer->size - v->offset)) {
            snprintf(dc->why, dc->whysz, "buffer view %zu lies beyond its buffer", i);
            return 1;
        }
    }
    for (size_t i = 0; i < d->accessors_count; i++) {
        const cgltf_accessor *a = &d->accessors[i];
        const cgltf_accessor_sparse *sp = &a->sparse;
        cgltf_size elem = cgltf_calc_size(a->type, a->component_type);
        int bad = !span_fits(a->offset, a->stride, a->count, elem);
        if (a->is_sparse)
            bad |= sp->count > a->count ||
                   !span_fits(sp->indices_byte_offset, cgltf_component_size(sp->indices_component_type),
                              sp->count + 1, 0) ||
                   !span_fits(sp->values_byte_offset, elem, sp->count + 1, 0);
        if (bad) {
            snprintf(dc->why, dc->whysz, "accessor %zu: its size overflows", i);
            return 1;
        }
    }
    return 0;
}

int mfs_gltf_declines(const cgltf_data *d, decline *dc)
{
    static const char *const fine[] = {
        "KHR_materials_", "KHR_texture_transform", "KHR_texture_basisu", "EXT_texture_webp",
        "KHR_lights_punctual", "KHR_materials_variants",
    };
    for (size_t i = 0; i < d->extensions_required_count; i++) {
        const char *e = d->extensions_required[i];
        int ok = 0;
        for (size_t k = 0; k < sizeof fine / sizeof *fine; k++)
            ok |= strncmp(e, fine[k], strlen(fine[k])) == 0;
        if (!ok) {
            snprintf(dc->why, dc->whysz, "requires extension %s", e);
            return 1;
        }
    }
    for (size_t i = 0; i < d->buffer_views_count; i++)
        if (d->buffer_views[i].has_meshopt_compression) {
            snprintf(dc->why, dc->whysz, "meshopt-compressed buffer views");
            return 1;
        }
    for (size_t i = 0; i < d->nodes_count; i++)
        if (d->nodes[i].has_mesh_gpu_instancing) {
            snprintf(dc->why, dc->whysz, "GPU instancing (EXT_mesh_gpu_instancing)");
            return 1;
        }
    for (size_t m = 0; m < d->meshes_count; m++)
        for (size_t p = 0; p < d->meshes[m].primitives_count; p++)
            if (d->meshes[m].primitives[p].has_draco_mesh_compression) {
                snprintf(dc->why, dc->whysz, "Draco-compressed primitives");
                return 1;
            }
    for (size_t i = 0; i < d->accessors_count; i++)
        if (d->accessors[i].count > MAX_ELEMENTS) {
            snprintf(dc->why, dc->whysz, "an accessor of %zu elements", (size_t)d->accessors[i].count);
            return 1;
        }
    return bad_sizes(d, dc);
}

/* ---- accessors ---- */

float *mfs_gltf_unpack(const cgltf_accessor *a, size_t comps)
{
    if (!a || cgltf_num_components(a->type) != comps)
        return NULL;
    size_t n = a->count * comps;
    float *v = malloc(sizeof *v * (n ? n : 1));
    if (v && cgltf_accessor_unpack_floats(a, v, n) != n) {
        free(v);
        return NULL;
    }
    return v;
}

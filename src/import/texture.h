/* The model's first diffuse texture, decoded into scene->image (internal to
 * the importer; docs/formats/tex.md says what is looked up and why). */
#ifndef MESHFS_IMPORT_TEXTURE_H
#define MESHFS_IMPORT_TEXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "iofs.h"
#include "meshfs/import.h"

struct aiScene;

/* An image the model carries inside itself, whoever parsed it: "*N" in a
 * material's texture path means the N-th of the list handed over below. */
typedef struct mfs_embedded_image {
    const uint8_t *data;    /* an image file's bytes (height == 0), or raw
                               texels: width x height x 4 bytes, b g r a */
    size_t size;            /* bytes at data */
    uint32_t width, height;
    const char *filename;   /* the name the model records for it, or NULL */
} mfs_embedded_image;

/* Does nothing unless o->textures is set and s is non-NULL.  Otherwise picks
 * the first diffuse texture (triangle meshes first, in scene order), finds
 * it embedded in ai or on disk through fs (so the file read is a dependency
 * and confinement holds), and fills s->image, or s->image.note with the
 * reason there is none.  Never fails the import: every problem becomes the
 * note.  Must run while ai is still alive; model_rel is the model's
 * normalised path under the root.  A refusal here does not touch the
 * import's own refused-path record. */
void mfs_import_texture(mfs_scene *s, const struct aiScene *ai, mfs_iofs *fs, const char *model_rel,
                        const mfs_import_opts *o);

/* The same, for an importer without an aiScene: emb lists the model's
 * embedded images (n_emb of them, may be 0); they need to stay alive only
 * during the call. */
void mfs_import_texture_from(mfs_scene *s, const mfs_embedded_image *emb, unsigned n_emb,
                             mfs_iofs *fs, const char *model_rel, const mfs_import_opts *o);

#endif

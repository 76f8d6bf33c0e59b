/* The model's first diffuse texture, decoded into scene->image (internal to
 * the importer; docs/formats/tex.md says what is looked up and why). */
#ifndef MESHFS_IMPORT_TEXTURE_H
#define MESHFS_IMPORT_TEXTURE_H

#include <assimp/scene.h>

#include "iofs.h"
#include "meshfs/import.h"

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

#endif

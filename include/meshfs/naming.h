/* How a model's views are named, shared by the mount and meshfs-convert so
 * both produce the same names (and the same .fmi model= paths).
 *
 * car.fbx -> car.fmd car.fmi ...  The short name "<stem>.<fmt>" is used
 * unless it would be ambiguous: another model in the same folder has the
 * same stem (a.obj, a.fbx), or a real file already has that name.  Then
 * every view of that model uses the long name "<file name>.<fmt>"
 * (a.obj.fmd, a.fbx.fmd), so no view ever shadows or is shadowed silently. */
#ifndef MESHFS_NAMING_H
#define MESHFS_NAMING_H

#include <stddef.h>

/* is_model(name) says whether a sibling is a model. */
typedef int (*mfs_is_model_fn)(const char *name);

/* Writes into out the base name (without ".<fmt>") for the views of
 * `model`, given every entry name of its folder.  Returns 1 if the long form
 * was needed, 0 otherwise, -1 if out is too small. */
int mfs_view_base(const char *model, const char *const *siblings, size_t n,
                  mfs_is_model_fn is_model, char *out, size_t outsz);

/* The stem of a file name: everything before the last '.', or the whole
 * name if it has no dot (or only a leading one). */
size_t mfs_name_stem_len(const char *name);

#endif

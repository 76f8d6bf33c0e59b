/* The option text in every view key and manifest key: one recipe for the
 * mount (src/fs/convert.c), meshfs-convert and `meshfs-cache warm`
 * (src/batch/), so all of them find each other's entries in a shared cache
 * (docs/cache.md, "Keys").
 *
 * A view's key holds what decides its bytes: its inputs (the caller's
 * dependency list), its format, the options that format reads, the
 * importer, the version.  Never the set of formats a run or a mount is
 * configured with: every conversion imports the same way whatever it
 * writes (tangents always computed, the texture always searched for and
 * decoded only for .tex: src/worker/job.c), so a mount with formats=gmf,
 * a full mount, a `warm --formats fmd` and a `meshfs-convert` of every
 * format share each view they have in common. */
#ifndef MESHFS_KEYOPTS_H
#define MESHFS_KEYOPTS_H

#include <stddef.h>

#include "meshfs/formats.h"

/* Option text of view `format` (o's options the format reads, with
 * model_path = fmi_model; the importer). */
void mfs_keyopts_format(const mfs_options *o, int format, const char *fmi_model, char *buf,
                        size_t n);

/* Option text of the import (the model entry's key): source frame,
 * importer. */
void mfs_keyopts_import(const mfs_options *o, char *buf, size_t n);

#endif

/* The option text in every view key and manifest key: one recipe for the
 * mount (src/fs/convert.c) and meshfs-convert (src/batch/), so both find
 * each other's entries in a shared cache (docs/cache.md, "Keys").
 *
 * `formats` is the set a run is configured with, as the mount holds it
 * (bits of mfs_format, plus MFS_FMT_LGEPKG_BIT and, with it, the views a
 * package needs: MFS_LGEPKG_NEEDS).  Two settings follow from it and
 * decide every view's bytes, so they are in every key:
 *   tangents  .gmf is on: every import computes tangents (they keep apart
 *             vertices the import would otherwise join, docs/import.md)
 *   textures  .tex or the package is on: every run decodes textures, so
 *             every run reads the same files and its manifest lists them */
#ifndef MESHFS_KEYOPTS_H
#define MESHFS_KEYOPTS_H

#include <stddef.h>

#include "meshfs/options.h"

int mfs_keyopts_tangents(unsigned formats);
int mfs_keyopts_textures(unsigned formats);

/* What one conversion run makes when `need` is missing: need, plus .tex
 * and .gmf when the settings above say every run makes them. */
unsigned mfs_keyopts_run_formats(unsigned formats, unsigned need);

/* Option text of view `format` (o's options the format reads, with
 * model_path = fmi_model; the importer; tangents). */
void mfs_keyopts_format(const mfs_options *o, unsigned formats, int format,
                        const char *fmi_model, char *buf, size_t n);

/* Option text of the import (the manifest's key): source frame, textures,
 * importer, tangents. */
void mfs_keyopts_import(const mfs_options *o, unsigned formats, char *buf, size_t n);

#endif

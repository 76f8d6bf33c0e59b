/* meshfs-convert's last step: game_resources.lgepkg in every output folder
 * that holds models, packed from the views the batch just wrote
 * (docs/formats/lgepkg.md).  The same bytes the mount shows for the same
 * folder and options. */
#ifndef MESHFS_CONVERT_LGEPKG_H
#define MESHFS_CONVERT_LGEPKG_H

#include <stddef.h>
#include <stdio.h>

#include "meshfs/formats.h"

/* One converted model. */
typedef struct pkg_input {
    const char *outdir;  /* output folder: models with equal outdir share a package */
    const char *srcdir;  /* the source folder (a real game_resources.lgepkg there wins) */
    const char *base;    /* view base, as the views are named */
    const char *model;   /* for messages */
    /* the .vrt .tri .tex .sph files (mfs_lgepkg_formats order), NULL for a
     * view that failed; then why says what went wrong */
    const char *view[MFS_LGEPKG_CHUNKS];
    const char *why;
} pkg_input;

/* Writes one package per distinct outdir, models in byte order of base,
 * atomically (temporary file, rename).  Models with a missing view are
 * left out and named on stderr.  Progress lines ("ok DIR/game_resources.lgepkg
 * (N models)") go to out unless it is NULL.  Returns the number of packages
 * that could not be written. */
size_t mfs_convert_packages(const pkg_input *in, size_t n, const char *name, const char *version,
                            int lowercase_names, FILE *out);

#endif

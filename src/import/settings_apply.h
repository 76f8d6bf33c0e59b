/* Settings files in the worker (internal to the importer; the format and
 * the rules: include/meshfs/settings.h, docs/settings.md). */
#ifndef MESHFS_IMPORT_SETTINGS_APPLY_H
#define MESHFS_IMPORT_SETTINGS_APPLY_H

#include "meshfs/import.h"
#include "meshfs/settings.h"

/* Reads every settings file of root/rel through a confined, recording file
 * system into st (set up with mfs_settings_init).  deps gets the model
 * first, then each candidate found or absent.  -1 with err on a malformed
 * file, one of another owner (deps->model_unopened: not remembered) or one
 * that cannot be read. */
int mfs_import_read_settings(const char *root, const char *rel, mfs_settings *st, mfs_deps *deps,
                             mfs_err *err);

/* What the settings decide before the import: the importer, source_frame. */
void mfs_import_settings_opts(const mfs_settings *st, mfs_import_opts *o);

/* What they decide after it, on the canonical scene: the turn and scale
 * (none with source_frame), the texture (read through a recording file
 * system into deps).  Keys not applied yet fail with err naming file and
 * line. */
int mfs_import_apply_settings(mfs_scene *s, const mfs_settings *st, const char *root, const char *rel,
                              const mfs_import_opts *o, mfs_deps *deps, mfs_err *err);

#endif

/* meshfs-inspect --settings (src/tools/inspect_settings.c). */
#ifndef MESHFS_TOOLS_INSPECT_SETTINGS_H
#define MESHFS_TOOLS_INSPECT_SETTINGS_H

#include <stdio.h>

struct mfs_err;

/* Prints, for model (a path beneath src, or relative to it), every key its
 * settings files set and the file and line each came from.  -1 with err
 * (naming file, line and key) when they would fail its conversion. */
int mfs_inspect_settings(const char *src, const char *model, FILE *out, struct mfs_err *err);

#endif

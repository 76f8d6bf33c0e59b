/* The --importer / -o importer= values, in the core library so that the
 * daemon and meshfs-convert parse them without linking the importer. */
#include <string.h>

#include "meshfs/import.h"

int mfs_importer_parse(const char *value, int *out, mfs_err *err)
{
    if (value && strcmp(value, "auto") == 0)
        *out = MFS_IMPORTER_AUTO;
    else if (value && strcmp(value, "assimp") == 0)
        *out = MFS_IMPORTER_ASSIMP;
    else
        return mfs_errf(err, "importer '%s': expected 'auto' (native glTF/OBJ parsers, assimp "
                        "for the rest) or 'assimp' (assimp for every format)", value ? value : "");
    return 0;
}

const char *mfs_importer_name(int importer)
{
    return importer == MFS_IMPORTER_ASSIMP ? "assimp" : "auto";
}

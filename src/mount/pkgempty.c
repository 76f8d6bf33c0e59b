/* Whether a folder's package is known to hold no model (mount.h).
 *
 * A package of zero models is 48 bytes the engine loads nothing from, and
 * `meshfs-inspect --check` fails it; a folder whose every model failed
 * shows none instead.  Only what is known without converting counts, so a
 * cold folder still lists its package (its first stat resolves it). */
#include "../coherence/coherence.h"
#include "mount.h"

int mfs_lgepkg_known_empty(mfs_fs *fs, const char *dir, const mfs_dirtab *t)
{
    size_t n;
    const mfs_dir_model *m = mfs_dirtab_models(t, &n);
    /* the first model that is not known to have failed ends it: in a
     * healthy folder, that is the first */
    for (size_t i = 0; i < n; i++) {
        int failed = 0;
        for (int k = 0; k < MFS_LGEPKG_CHUNKS && !failed; k++) {
            mfs_view_ref ref = {.model = (char *)m[i].model, .base = (char *)m[i].base,
                                .format = mfs_lgepkg_formats[k]};
            failed = mfs_view_known_failed(fs, dir, &ref) == 1;
        }
        if (!failed)
            return 0;
    }
    return n > 0;
}

/* The one recipe for a view's key and a model entry's key
 * (include/meshfs/views.h), for the memo and for every tier below it. */
#include <stdio.h>

#include "memo.h"
#include "meshfs/formats.h"
#include "meshfs/views.h"

int mfs_views_key(const mfs_views *v, const mfs_dep *deps, uint32_t ndeps, int format,
                  const char *fmi_model, mfs_cache_key *out, mfs_err *err)
{
    /* Keys come from the inputs and today's options, not from a manifest:
     * an option that changed since only moves its own views. */
    char opts[4200];
    v->h.format_options(v->h.ctx, format, fmi_model, opts, sizeof opts);
    const mfs_format_info *fi = mfs_format_get((mfs_format)format);
    return mfs_cache_view_key_for(deps, ndeps, fi->reads_image, fi->name, opts, v->h.version, out,
                                  err);
}

int mfs_views_manifest_key(const mfs_views *v, const char *model_path, uint64_t size,
                           const uint8_t hash[16], mfs_cache_key *out, mfs_err *err)
{
    char iopts[64];
    v->h.import_options(v->h.ctx, iopts, sizeof iopts);
    return mfs_cache_manifest_key(model_path, size, hash, iopts, v->h.version, out, err);
}

/* PLACEHOLDER: being written; replaced before this lands. */
#include "meshfs/formats.h"

int mfs_write_fmi(const mfs_scene *s, const mfs_options *o, mfs_sink *out, mfs_err *err)
{
    (void)s; (void)o; (void)out;
    return mfs_errf(err, "fmi: writer not written yet");
}

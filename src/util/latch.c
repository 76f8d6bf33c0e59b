/* A condition said once when it begins and once when it ends
 * (include/meshfs/util.h, "latch"). */
#include "meshfs/util.h"

int mfs_latch_raise(mfs_latch *l)
{
    /* a plain load first: a raised latch (the common case while the
     * condition lasts) costs no write to the shared line */
    return atomic_load(&l->on) == 0 && atomic_exchange(&l->on, 1) == 0;
}

int mfs_latch_lower(mfs_latch *l)
{
    return atomic_load(&l->on) != 0 && atomic_exchange(&l->on, 0) != 0;
}

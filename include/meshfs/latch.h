/* A condition said once when it begins and once when it ends.
 *
 * For a state that many threads run into at once and for a long time (the
 * cache's disk full: every conversion meets it), so the log gets one line
 * when it starts and one when it is over, not one per event.  Lock-free:
 * of the threads that raise a lowered latch (or lower a raised one) at the
 * same moment exactly one is told it was first. */
#ifndef MESHFS_LATCH_H
#define MESHFS_LATCH_H

#include <stdatomic.h>

typedef struct mfs_latch {
    atomic_int on; /* zero-initialised: lowered */
} mfs_latch;

/* Raises it: 1 if it was lowered (the caller says the condition), else 0. */
int mfs_latch_raise(mfs_latch *l);

/* Lowers it: 1 if it was raised (the caller says it is over), else 0. */
int mfs_latch_lower(mfs_latch *l);

#endif

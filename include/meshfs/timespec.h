/* Comparing file times (struct timespec): the project's one copy. */
#ifndef MESHFS_TIMESPEC_H
#define MESHFS_TIMESPEC_H

#include <time.h>

/* 1 if a is later than b. */
static inline int mfs_ts_later(struct timespec a, struct timespec b)
{
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

/* 1 if a and b are the same time. */
static inline int mfs_ts_equal(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

#endif

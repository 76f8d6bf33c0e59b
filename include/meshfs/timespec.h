/* Comparing file times (struct timespec), and the monotonic clock in
 * seconds for ages and deadlines: the project's one copy of each. */
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

/* The monotonic clock, in seconds. */
static inline double mfs_mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#endif

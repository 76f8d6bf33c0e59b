/* What one conversion may use: the worker's resource limits. */
#ifndef MESHFS_LIMITS_H
#define MESHFS_LIMITS_H

#include <stdint.h>

typedef struct mfs_limits {
    double timeout_s;        /* wall clock; SIGKILL past it (0 = none) */
    uint64_t memory;         /* RLIMIT_AS bytes (0 = none) */
    uint64_t output;         /* cap on each output file, bytes (0 = none) */
    uint64_t cpu_s;          /* RLIMIT_CPU seconds (0 = none) */
} mfs_limits;

/* 60 s, 4 GiB of address space, 4 GiB per output, 120 s of CPU. */
void mfs_limits_default(mfs_limits *l);

#endif

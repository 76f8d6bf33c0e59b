/* The limits a conversion runs under unless told otherwise (rules.h). */
#include "meshfs/rules.h"

void mfs_limits_default(mfs_limits *l)
{
    l->timeout_s = 60;
    l->memory = 4ull << 30;
    l->output = 4ull << 30;
    l->cpu_s = 120;
}

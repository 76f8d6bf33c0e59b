/* Named counts as text (util.h, "counters"). */
#include <stdio.h>

#include "meshfs/util.h"

int mfs_counters_text(char *buf, size_t n, const mfs_counter *c, size_t k)
{
    size_t len = 0;
    if (n)
        buf[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        int w = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, " %s=%llu", c[i].name,
                         (unsigned long long)c[i].value);
        if (w < 0)
            return w;
        len += (size_t)w;
    }
    return (int)len;
}

/* PLACEHOLDER: shortest float printing, being written (slow reference). */
#include <stdio.h>
#include <stdlib.h>
#include "meshfs/numfmt.h"
size_t mfs_fmt_f32(float x, char *buf)
{
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, MFS_F32_BUF, "%.*g", p, (double)x);
        if (strtof(buf, NULL) == x)
            break;
    }
    size_t n = 0;
    while (buf[n]) n++;
    return n;
}

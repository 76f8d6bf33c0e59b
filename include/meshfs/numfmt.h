/* Shortest round-trip text for float32 values (the .dem writer's numbers).
 *
 * mfs_fmt_f32 writes the shortest decimal that strtof() reads back to the
 * same float, in Python repr style so the output matches the reference
 * Blender exporter's look: "1.0", "-0.5", "0.125", "1e-05", "1.5e+20",
 * "-0.0", "nan", "inf".  Fixed notation for 1e-4 <= |x| < 1e16, exponent
 * notation otherwise.  Returns the length; buf needs MFS_F32_BUF bytes
 * (those after the NUL are used as scratch); the result is NUL-terminated. */
#ifndef MESHFS_NUMFMT_H
#define MESHFS_NUMFMT_H

#include <stddef.h>

#define MFS_F32_BUF 32

size_t mfs_fmt_f32(float x, char *buf);

#endif

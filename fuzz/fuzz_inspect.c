/* libFuzzer target for one meshfs-inspect reader.
 *
 * Built once per format with -DFUZZ_NAME="x.<ext>" (meson option fuzz=true,
 * clang, -fsanitize=fuzzer,address,undefined): the name's extension picks
 * the reader, so each binary hammers one parser.  For .tri and .sph the
 * input is split in two at its first byte's value, the second part being the
 * sibling .vrt that those readers check against. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "meshfs/inspect.h"

#ifndef FUZZ_NAME
#error "FUZZ_NAME must name a file with the reader's extension"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int needs_sibling(void)
{
    const char *dot = strrchr(FUZZ_NAME, '.');
    return dot && (!strcmp(dot, ".tri") || !strcmp(dot, ".sph"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mfs_summary s;
    mfs_err err;
    for (int check = 0; check < 2; check++) {
        if (needs_sibling() && size > 0) {
            size_t cut = (size_t)data[0] * 4;
            if (cut > size - 1)
                cut = size - 1;
            const uint8_t *own = data + 1;
            mfs_inspect_buffer_with_vrt(FUZZ_NAME, own, cut, own + cut, size - 1 - cut, check, &s, &err);
        } else {
            mfs_inspect_buffer(FUZZ_NAME, data, size, check, &s, &err);
        }
    }
    return 0;
}

/* The cache's file system refusing to store (include/meshfs/util.h, "storerr"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "meshfs/util.h"

static const int storage_errnos[] = {ENOSPC, EDQUOT, EROFS, EIO};

#define REASON_MID " while storing views; "

int mfs_storerr_of(const char *msg)
{
    if (!msg)
        return 0;
    size_t n = strlen(msg);
    for (size_t i = 0; i < sizeof storage_errnos / sizeof *storage_errnos; i++) {
        const char *s = strerror(storage_errnos[i]);
        size_t k = strlen(s);
        if (n >= k && !strcmp(msg + n - k, s))
            return storage_errnos[i];
    }
    return 0;
}

const char *mfs_storerr_remedy(int errnum)
{
    switch (errnum) {
    case EROFS:
        return "its file system is writable again";
    case EIO:
        return "its file system is repaired";
    default:
        return "space is freed";
    }
}

void mfs_storerr_reason(int errnum, char *out, size_t n)
{
    snprintf(out, n, "cache: %s" REASON_MID "the view was converted but not kept, and fails until %s",
             strerror(errnum), mfs_storerr_remedy(errnum));
}

int mfs_storerr_is_reason(const char *msg)
{
    return msg && !strncmp(msg, "cache: ", 7) && strstr(msg, REASON_MID) != NULL;
}

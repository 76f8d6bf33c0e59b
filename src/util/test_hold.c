/* include/meshfs/util.h, "test_hold" */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/util.h"

#ifdef MESHFS_TEST_HOOKS
static void hold(const char *file)
{
    char held[1100];
    snprintf(held, sizeof held, "%s.held", file);
    int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < 6000 && access(file, F_OK) != 0; i++)
        usleep(20000);
}
#endif

void mfs_test_hold_until(const char *var, const char *path)
{
#ifdef MESHFS_TEST_HOOKS
    const char *v = getenv(var);
    while (v && *v) {
        const char *end = strchr(v, ',');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        const char *colon = memchr(v, ':', len);
        size_t sublen = colon ? (size_t)(colon - v) : 0;
        char sub[256], file[1024];
        if (colon && sublen && sublen < sizeof sub && len - sublen - 1 < sizeof file) {
            snprintf(sub, sizeof sub, "%.*s", (int)sublen, v);
            snprintf(file, sizeof file, "%.*s", (int)(len - sublen - 1), colon + 1);
            if (strstr(path, sub)) {
                hold(file);
                return;
            }
        }
        v = end ? end + 1 : NULL;
    }
#else
    (void)var;
    (void)path;
#endif
}

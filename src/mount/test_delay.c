/* Test builds only (-Dtest_hooks=true): a request handled late, as a busy
 * daemon would, so that a race happens on every run of its test. */
#include <stdlib.h>
#include <unistd.h>

#include "mount.h"

void mfs_test_delay(const char *var)
{
#ifdef MESHFS_TEST_HOOKS
    const char *v = getenv(var);
    if (v && *v)
        usleep((useconds_t)strtoul(v, NULL, 10) * 1000u);
#else
    (void)var;
#endif
}

/* Test builds only (-Dtest_hooks=true): a step that waits for the test.
 *
 * With VAR=SUBSTR:FILE[,SUBSTR:FILE...] in the environment, a call for a
 * path containing a SUBSTR creates FILE.held and waits until FILE exists
 * (at most 120 s).  A test then orders events by files, never by sleeps:
 * it waits for FILE.held, does what must happen meanwhile, and creates
 * FILE.  In other builds, and with VAR unset, it returns at once. */
#ifndef MESHFS_TEST_HOLD_H
#define MESHFS_TEST_HOLD_H

void mfs_test_hold_until(const char *var, const char *path);

#endif

/* The stats file and the whole-directory operations (cache.h, "managing a cache directory";
 * docs/cache.md "The stats file", "Managing the cache"): counts of
 * concurrent processes add up exactly, lines of other versions survive a
 * flush, damage loses only its own line, a management handle records no
 * cap, and trim/clear/verify act on what is on disk. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixtures.h"
#include "meshfs/cache.h"
#include "meshfs/cache.h"

typedef fixture_cache_dirs fx;

static int setup(void **state)
{
    return fixture_cache_dirs_setup(state, "test_cache_admin");
}

static int teardown(void **state)
{
    return fixture_cache_dirs_teardown(state);
}

static mfs_cache *open_cache(const fx *f, uint64_t max, unsigned flags)
{
    mfs_cache_config cfg = {.dir = f->dir, .max_size = max, .flags = flags};
    mfs_cache *c = NULL;
    mfs_err err = {0};
    if (mfs_cache_open(&cfg, &c, &err) < 0)
        fail_msg("open: %s", err.msg);
    return c;
}

static mfs_cache_totals totals(const fx *f)
{
    mfs_cache *c = open_cache(f, 0, MFS_CACHE_NO_CAP);
    mfs_cache_totals t;
    mfs_err err = {0};
    assert_int_equal(mfs_cache_totals_read(c, &t, &err), 0);
    mfs_cache_close(c);
    return t;
}

static char *slurp(const fx *f, const char *name)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char *buf = calloc(1, 8192);
    size_t n = fread(buf, 1, 8191, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static void spit(const fx *f, const char *name, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static mfs_cache_key key_of(int i)
{
    mfs_cache_keyb kb;
    mfs_cache_key k;
    assert_int_equal(mfs_cache_key_init(&kb, "test.admin", NULL), 0);
    mfs_cache_key_add_u64(&kb, (uint64_t)i);
    mfs_cache_key_final(&kb, &k);
    return k;
}

/* ---- the stats file ---- */

static void test_processes_add_up_exactly(void **state)
{
    fx *f = *state;
    mfs_cache_close(open_cache(f, 0, 0)); /* the directory exists before they race */
    enum { KIDS = 8, EACH = 250 };
    pid_t pids[KIDS];
    for (int i = 0; i < KIDS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            mfs_cache *c = open_cache(f, 0, 0);
            for (int n = 0; n < EACH; n++) {
                mfs_cache_note(c, MFS_CACHE_VIEW_HIT);
                if (n % 5 == 0)
                    mfs_cache_note(c, MFS_CACHE_VIEW_MISS);
                if (n % 25 == 0) /* flushes of several processes interleave */
                    mfs_cache_flush_stats(c, NULL);
            }
            mfs_cache_note(c, MFS_CACHE_CONVERSION);
            mfs_cache_close(c);
            _exit(0);
        }
    }
    for (int i = 0; i < KIDS; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    mfs_cache_totals t = totals(f);
    assert_int_equal(t.hits, KIDS * EACH);
    assert_int_equal(t.misses, KIDS * (EACH / 5));
    assert_int_equal(t.conversions, KIDS);
    assert_int_equal(t.failures, 0);
    assert_int_equal(t.cap, MFS_CACHE_DEFAULT_MAX_SIZE);
    assert_true(t.updated > 0);
}

static void test_counts_reach_the_file_while_open(void **state)
{
    fx *f = *state;
    mfs_cache *c = open_cache(f, 0, 0);
    mfs_cache_note(c, MFS_CACHE_VIEW_MISS);
    mfs_cache_note(c, MFS_CACHE_CONVERSION);
    mfs_cache_note(c, MFS_CACHE_CONVERSION_FAILURE);
    mfs_cache_totals t = {0};
    for (int i = 0; i < 100 && t.conversions == 0; i++) { /* the thread: ~2 s */
        usleep(50000);
        t = totals(f);
    }
    assert_int_equal(t.misses, 1);
    assert_int_equal(t.conversions, 1);
    assert_int_equal(t.failures, 1);
    mfs_cache_close(c);
    t = totals(f);
    assert_int_equal(t.conversions, 1); /* close adds only what is new */
}

static void test_other_lines_survive_damage_does_not_spread(void **state)
{
    fx *f = *state;
    mfs_cache_close(open_cache(f, 0, 0));
    spit(f, "stats", "hits 7\nmisses 12x\nfuture_counter 99\ngarbage\xff line\nconversions 3\n");
    mfs_cache *c = open_cache(f, 1 << 20, 0);
    mfs_cache_note(c, MFS_CACHE_VIEW_HIT);
    mfs_cache_close(c);
    char *text = slurp(f, "stats");
    assert_non_null(strstr(text, "\nhits 8\n"));
    assert_non_null(strstr(text, "\nmisses 0\n"));       /* the damaged line: lost, alone */
    assert_non_null(strstr(text, "\nconversions 3\n"));
    assert_non_null(strstr(text, "\nfuture_counter 99\n")); /* a newer meshfs's */
    assert_non_null(strstr(text, "\ncap 1048576\n"));
    assert_null(strstr(text, "garbage"));
    free(text);
}

static void test_a_management_handle_records_no_cap(void **state)
{
    fx *f = *state;
    mfs_cache_close(open_cache(f, 3 << 20, 0));
    mfs_cache *c = open_cache(f, 0, MFS_CACHE_NO_CAP);
    mfs_cache_note(c, MFS_CACHE_VIEW_HIT);
    mfs_cache_close(c);
    mfs_cache_totals t = totals(f);
    assert_int_equal(t.cap, 3 << 20);
    assert_int_equal(t.hits, 1);
}

/* ---- trim, clear, verify ---- */

static void store_n(mfs_cache *c, int n, size_t size)
{
    char *buf = malloc(size);
    for (int i = 0; i < n; i++) {
        memset(buf, 'a' + i, size);
        mfs_cache_key k = key_of(i);
        assert_int_equal(mfs_cache_store(c, &k, buf, size, NULL, NULL), 0);
        usleep(2000); /* distinct LRU stamps */
    }
    free(buf);
}

static void test_trim_clear_usage(void **state)
{
    fx *f = *state;
    mfs_cache *c = open_cache(f, 0, MFS_CACHE_NO_CAP);
    store_n(c, 10, 10000);
    mfs_cache_usage u;
    assert_int_equal(mfs_cache_usage_scan(c, &u, NULL), 0);
    assert_int_equal(u.entries, 10);
    assert_int_equal(u.manifests, 0);
    uint64_t one = u.bytes / 10;
    assert_true(one >= 10000);
    uint64_t removed = 0;
    assert_int_equal(mfs_cache_trim(c, 5 * one, &removed, NULL), 0);
    assert_int_equal(mfs_cache_usage_scan(c, &u, NULL), 0);
    assert_true(u.bytes <= 5 * one);
    assert_int_equal(removed, 10 - u.entries);
    uint64_t trimmed = removed;
    /* the newest are the ones kept */
    mfs_cache_hit h;
    mfs_cache_key k9 = key_of(9), k0 = key_of(0);
    assert_int_equal(mfs_cache_peek(c, &k9, &h, NULL), 1);
    mfs_cache_hit_release(&h);
    assert_int_equal(mfs_cache_peek(c, &k0, &h, NULL), 0);
    uint64_t freed = 0;
    assert_int_equal(mfs_cache_clear(c, &removed, &freed, NULL), 0);
    assert_int_equal(freed, u.bytes);
    assert_int_equal(removed, u.entries);
    assert_int_equal(mfs_cache_usage_scan(c, &u, NULL), 0);
    assert_int_equal(u.entries + u.bytes, 0);
    mfs_cache_stats st;
    mfs_cache_get_stats(c, &st);
    assert_int_equal(st.evictions, trimmed); /* trim's removals, not clear's */
    mfs_cache_close(c);
}

typedef struct seen {
    int n;
    char path[128];
    char why[128];
    int removed;
} seen;

static void on_bad(void *ctx, const char *path, const char *why, int removed)
{
    seen *s = ctx;
    s->n++;
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->why, sizeof s->why, "%s", why);
    s->removed = removed;
}

static void test_verify_reports_then_repairs(void **state)
{
    fx *f = *state;
    mfs_cache *c = open_cache(f, 0, MFS_CACHE_NO_CAP);
    store_n(c, 4, 3000);
    mfs_cache_verify_result r;
    seen s = {0};
    assert_int_equal(mfs_cache_verify(c, 0, on_bad, &s, &r, NULL), 0);
    assert_int_equal(r.checked, 4);
    assert_int_equal(r.bad + s.n, 0);
    /* flip one payload byte of key 2's entry, found by the path the cache uses */
    mfs_cache_key k2 = key_of(2);
    char hex[33], path[512];
    mfs_cache_key_hex(&k2, hex);
    struct stat st;
    for (int v = 1; v < 10; v++) {
        snprintf(path, sizeof path, "%s/v%d/%.2s/%s.e", f->dir, v, hex, hex + 2);
        if (stat(path, &st) == 0)
            break;
    }
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 1500, SEEK_SET);
    fputc('Z', fp);
    fclose(fp);
    assert_int_equal(mfs_cache_verify(c, 0, on_bad, &s, &r, NULL), 0);
    assert_int_equal(r.bad, 1);
    assert_int_equal(r.removed, 0);
    assert_int_equal(s.n, 1);
    assert_non_null(strstr(path, s.path)); /* named relative to the cache directory */
    assert_string_equal(s.why, "checksum mismatch");
    assert_int_equal(stat(path, &st), 0);
    s.n = 0;
    assert_int_equal(mfs_cache_verify(c, 1, on_bad, &s, &r, NULL), 0);
    assert_int_equal(r.bad, 1);
    assert_int_equal(r.removed, 1);
    assert_int_equal(s.removed, 1);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(mfs_cache_verify(c, 0, NULL, NULL, &r, NULL), 0);
    assert_int_equal(r.checked, 3);
    assert_int_equal(r.bad, 0);
    mfs_cache_close(c);
    assert_int_equal(totals(f).corrupt, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_processes_add_up_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_reach_the_file_while_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_lines_survive_damage_does_not_spread, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_management_handle_records_no_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trim_clear_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_reports_then_repairs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

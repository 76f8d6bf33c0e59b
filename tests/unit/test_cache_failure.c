/* Negative entries with what they were recorded under (kind 4): the limits
 * and the inputs' mtime come back exactly, the reason with them; a payload
 * too short to hold them is corrupt, never read as a reason. */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "fixtures.h"
#include "meshfs/cache.h"

typedef fixture_cache_dirs fx;

static int setup(void **state)
{
    return fixture_cache_dirs_setup(state, "test_cache_failure");
}

static int teardown(void **state)
{
    return fixture_cache_dirs_teardown(state);
}

static mfs_cache *open_cache(const fx *f)
{
    mfs_cache_config cfg = {.dir = f->dir};
    mfs_cache *c = NULL;
    mfs_err err = {0};
    if (mfs_cache_open(&cfg, &c, &err) < 0)
        fail_msg("open: %s", err.msg);
    return c;
}

static mfs_cache_key key_of(const char *s)
{
    mfs_cache_keyb kb;
    mfs_cache_key k;
    mfs_cache_key_init(&kb, "test.failure", NULL);
    mfs_cache_key_add_str(&kb, s);
    mfs_cache_key_final(&kb, &k);
    return k;
}

static void test_context_round_trip(void **state)
{
    fx *f = *state;
    mfs_cache *c = open_cache(f);
    mfs_cache_key k = key_of("timeout");
    mfs_cache_failctx ctx = {.timeout_s = 0.5, .memory = 3ull << 30, .cpu_s = 120,
                             .output = (4ull << 30) + 7, .inputs_mtime_ns = 1700000000123456789ll};
    assert_int_equal(mfs_cache_store_failure(c, &k, "import timed out after 0.5 s", &ctx, NULL), 0);
    mfs_cache_close(c);
    c = open_cache(f); /* from disk, not memory */
    for (int peek = 0; peek < 2; peek++) {
        mfs_cache_hit h;
        assert_int_equal(peek ? mfs_cache_peek(c, &k, &h, NULL) : mfs_cache_lookup(c, &k, &h, NULL), 1);
        assert_int_equal(h.fd, -1);
        assert_string_equal(h.reason, "import timed out after 0.5 s");
        assert_true(h.fail.timeout_s == 0.5);
        assert_int_equal(h.fail.memory, 3ull << 30);
        assert_int_equal(h.fail.cpu_s, 120);
        assert_int_equal(h.fail.output, (4ull << 30) + 7);
        assert_int_equal(h.fail.inputs_mtime_ns, 1700000000123456789ll);
        mfs_cache_hit_release(&h);
    }
    mfs_cache_close(c);
}

static void test_plain_negative_has_no_context(void **state)
{
    fx *f = *state;
    mfs_cache *c = open_cache(f);
    mfs_cache_key k = key_of("plain");
    assert_int_equal(mfs_cache_store_negative(c, &k, "import failed: OBJ: bad face", NULL), 0);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 1);
    assert_string_equal(h.reason, "import failed: OBJ: bad face");
    assert_true(h.fail.timeout_s == 0);
    assert_int_equal(h.fail.memory, 0);
    assert_int_equal(h.fail.inputs_mtime_ns, 0);
    mfs_cache_hit_release(&h);
    /* an empty reason is still a failure, not a view */
    mfs_cache_key e = key_of("empty");
    assert_int_equal(mfs_cache_store_failure(c, &e, "", NULL, NULL), 0);
    assert_int_equal(mfs_cache_lookup(c, &e, &h, NULL), 1);
    assert_non_null(h.reason);
    assert_string_equal(h.reason, "");
    mfs_cache_hit_release(&h);
    mfs_cache_close(c);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A kind-4 container whose payload cannot hold the context, with a valid
 * checksum (a writer bug, or a file from elsewhere): refused, not read as
 * a reason.  Built by hand from the layout in docs/cache.md. */
static void test_short_context_is_refused(void **state)
{
    fx *f = *state;
    mfs_cache *c = open_cache(f);
    mfs_cache_key k = key_of("short");
    /* version 2, trailer form: payload, descriptor, checksum */
    uint8_t file[10 + 40 + 16];
    uint8_t *d = file + 10;
    memcpy(file, "0123456789", 10);
    memcpy(d, "mfscache", 8);
    put32(d + 8, 2);
    put32(d + 12, 4);
    memcpy(d + 16, k.b, 16);
    put32(d + 32, 10);
    put32(d + 36, 0);
    XXH3_state_t *h = XXH3_createState();
    XXH3_128bits_reset(h);
    XXH3_128bits_update(h, file, 10);
    XXH3_128bits_update(h, d, 40);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(h));
    XXH3_freeState(h);
    memcpy(file + 50, sum.digest, 16);
    char hex[33], path[512];
    mfs_cache_key_hex(&k, hex);
    snprintf(path, sizeof path, "%s/v2/%.2s", f->dir, hex);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/v2/%.2s/%s.e", f->dir, hex, hex + 2);
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(file, 1, sizeof file, out), sizeof file);
    fclose(out);
    mfs_cache_hit hit;
    assert_int_equal(mfs_cache_peek(c, &k, &hit, NULL), 0);
    assert_null(hit.reason);
    assert_int_not_equal(mfs_cache_lookup(c, &k, &hit, NULL), 1);
    assert_null(hit.reason);
    /* the same bytes with the context in place are a failure */
    mfs_cache_failctx ctx = {.timeout_s = 1};
    assert_int_equal(mfs_cache_store_failure(c, &k, "x", &ctx, NULL), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 40 + 1); /* the record is the file's xattr */
    assert_int_equal(mfs_cache_lookup(c, &k, &hit, NULL), 1);
    assert_string_equal(hit.reason, "x");
    mfs_cache_hit_release(&hit);
    mfs_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_context_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_negative_has_no_context, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_context_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

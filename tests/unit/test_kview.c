/* kview.c's bound (docs/scale.md): at most a cap of records, least
 * recently used out first, never one with cached handles open; and a path
 * whose record went is treated as "the kernel may hold anything", so its
 * next open invalidates instead of trusting a stale size. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "coherence.h"

static uint64_t held; /* the bytes mfs_kview_stats says */
static mfs_kviews *kv; /* one mount's records, shared by the tests in turn (main) */

static struct stat sized(off_t size)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_size = size;
    st.st_mtim.tv_sec = 1000 + size;
    return st;
}

static void told(const char *path, off_t size)
{
    struct stat st = sized(size);
    mfs_kview_attr(kv, path, &st);
}

static void send_nothing(void *arg)
{
    (void)arg;
}

/* An invalidation during which a GETATTR of size *arg is answered. */
static void send_while_told(void *arg)
{
    told("/pending.gmf", *(off_t *)arg);
}

/* One open of entry id at path, closed again: what the record told it
 * (keep_cache, invalidate; never direct I/O here), the invalidation sent
 * when it was told to send one. */
static void open_close(const char *path, const uint8_t id[16], const struct stat *st, int keep,
                       int inval)
{
    mfs_kview_open res;
    void *tok = mfs_kview_opened(kv, path, id, st, &res);
    assert_non_null(tok);
    assert_int_equal(res.keep_cache, keep);
    assert_int_equal(res.invalidate, inval);
    assert_int_equal(res.direct_io, 0);
    if (res.invalidate)
        mfs_kview_invalidate(kv, tok, send_nothing, NULL);
    mfs_kview_release(kv, tok, res.direct_io);
}

static void fill_others(int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char p[32];
        snprintf(p, sizeof p, "/other%d.gmf", i);
        told(p, 10);
    }
}

static void test_cap_holds_and_evicts_lru(void **state)
{
    (void)state;
    mfs_kview_set_cap(kv, 4);
    uint64_t n, ev0, ev;
    mfs_kview_stats(kv, &n, &ev0, &held);
    fill_others(0, 20);
    mfs_kview_stats(kv, &n, &ev, &held);
    assert_int_equal(n, 4);
    assert_true(ev - ev0 >= 16);
}

/* Records of long paths: the byte budget (512 B a record of the cap)
 * holds fewer of them than the count would, and never more bytes. */
static void test_long_paths_evict_by_bytes(void **state)
{
    (void)state;
    mfs_kview_set_cap(kv, 8);
    char p[4096];
    memset(p, 'd', sizeof p);
    p[0] = '/';
    for (int i = 0; i < 20; i++) {
        snprintf(p + 2000, sizeof p - 2000, "/view%02d.gmf", i); /* 2,011 bytes each */
        told(p, 10);
        uint64_t n, ev;
        mfs_kview_stats(kv, &n, &ev, &held);
        assert_true(held <= 8 * 512);
    }
    uint64_t n, ev;
    mfs_kview_stats(kv, &n, &ev, &held);
    assert_int_equal(n, 1); /* two records of 2,012-byte paths pass 4,096 B; eight would fit the count */
    fill_others(300, 20); /* short paths: the count binds again */
    mfs_kview_stats(kv, &n, &ev, &held);
    assert_int_equal(n, 8);
    assert_true(held <= 8 * 512);
}

static void test_open_record_is_never_evicted(void **state)
{
    (void)state;
    mfs_kview_set_cap(kv, 4);
    uint8_t a[16] = {1}, b[16] = {2};
    struct stat sa = sized(100), sb = sized(200);
    mfs_kview_open res;
    void *tok = mfs_kview_opened(kv, "/held.gmf", a, &sa, &res);
    assert_non_null(tok);
    assert_int_equal(res.direct_io, 0);
    fill_others(100, 20); /* far past the cap: /held.gmf is the oldest */
    /* still there: while A is open the kernel keeps hearing A's size... */
    struct stat st = sized(999);
    mfs_kview_attr(kv, "/held.gmf", &st);
    assert_int_equal(st.st_size, 100);
    /* ...and an open of another entry needs an inode of its own */
    void *tok2 = mfs_kview_opened(kv, "/held.gmf", b, &sb, &res);
    assert_null(tok2);
    assert_int_equal(res.renew, 1);
    assert_int_equal(res.direct_io, 0);
    mfs_kview_release(kv, tok, 0);
    uint64_t n, ev;
    fill_others(200, 8);
    mfs_kview_stats(kv, &n, &ev, &held);
    assert_int_equal(n, 4); /* released: evictable again */
}

static void test_evicted_path_reopens_with_invalidation(void **state)
{
    (void)state;
    mfs_kview_set_cap(kv, 4);
    uint8_t a[16] = {7}, b[16] = {8};
    struct stat sa = sized(300), sb = sized(400);
    open_close("/v.gmf", a, &sa, 0, 0);
    told("/v.gmf", 300); /* the kernel holds size 300 and A's pages */
    /* kept: the same entry keeps the kernel's pages */
    open_close("/v.gmf", a, &sa, 1, 0);
    fill_others(300, 20); /* /v.gmf's record goes */
    /* entry B now: what the kernel holds is unknown, so invalidate */
    open_close("/v.gmf", b, &sb, 0, 1);
    /* a path never seen before: the kernel holds nothing of it */
    open_close("/never-seen.gmf", b, &sb, 0, 0);
}

/* Two different attributes told since the kernel last dropped its own:
 * the kernel keeps whichever reply it accepted last, and drops a reply to
 * a request sent before an accepted change, so the record cannot know
 * which; an open of either entry invalidates.  The same attributes told
 * twice are known, and an invalidating open makes them known again. */
static void test_two_sizes_told_are_unknown(void **state)
{
    (void)state;
    mfs_kview_set_cap(kv, 64);
    uint8_t a[16] = {31}, b[16] = {32};
    struct stat sa = sized(524), sb = sized(102348);
    open_close("/race.vrt", b, &sb, 0, 0);
    told("/race.vrt", 102348);
    told("/race.vrt", 102348);
    open_close("/race.vrt", b, &sb, 1, 0); /* the same twice: known */
    /* two replies in flight at once, A's recorded first, B's last: the
     * kernel may keep A's */
    told("/race.vrt", 524);
    told("/race.vrt", 102348);
    open_close("/race.vrt", b, &sb, 0, 1);
    /* invalidated: what it is told next is what it holds */
    told("/race.vrt", 524);
    open_close("/race.vrt", a, &sa, 0, 1); /* A's size, but B's pages */
    told("/race.vrt", 524);
    open_close("/race.vrt", a, &sa, 1, 0);
    /* once unknown, it stays so until an open invalidates */
    told("/race.vrt", 102348);
    told("/race.vrt", 524);
    told("/race.vrt", 524);
    open_close("/race.vrt", a, &sa, 0, 1);
}

/* An open told to invalidate has not sent it yet: until it has, another
 * open of the same entry invalidates too, though size and pages now look
 * right to the record (before, it trusted the invalidation on its way and
 * was answered while the kernel still held the other size: a reader's
 * fstat said 583 of a handle that read 47869 bytes).  Once sent, the
 * kernel holds nothing; a reply told meanwhile may be kept, and counts. */
static void test_an_invalidation_on_its_way_is_not_trusted(void **state)
{
    (void)state;
    mfs_kview_set_cap(kv, 64);
    uint8_t a[16] = {41}, b[16] = {42};
    struct stat sa = sized(583), sb = sized(47869);
    mfs_kview_open res;
    open_close("/pending.gmf", a, &sa, 0, 0); /* A's pages */
    told("/pending.gmf", 47869); /* B's size by name; A's pages */
    void *first = mfs_kview_opened(kv, "/pending.gmf", b, &sb, &res);
    assert_int_equal(res.invalidate, 1); /* the pages are A's */
    /* not sent yet: B's size was told and B is the entry now, but the
     * kernel's pages are still A's */
    void *second = mfs_kview_opened(kv, "/pending.gmf", b, &sb, &res);
    assert_int_equal(res.keep_cache, 0);
    assert_int_equal(res.invalidate, 1);
    /* a copy of a handle (a moved view's reopen) waits for it as well */
    assert_int_equal(mfs_kview_ref(kv, first, 0), 1);
    mfs_kview_invalidate(kv, first, send_nothing, NULL);
    mfs_kview_invalidate(kv, first, send_nothing, NULL); /* the copy's */
    mfs_kview_invalidate(kv, second, send_nothing, NULL);
    mfs_kview_release(kv, first, 0);
    mfs_kview_release(kv, first, 0);
    mfs_kview_release(kv, second, 0);
    /* all sent and nothing told since: the kernel asks, and hears B */
    void *third = mfs_kview_opened(kv, "/pending.gmf", b, &sb, &res);
    assert_int_equal(res.keep_cache, 1);
    assert_int_equal(res.invalidate, 0);
    assert_int_equal(mfs_kview_ref(kv, third, 0), 0);
    mfs_kview_release(kv, third, 0);
    mfs_kview_release(kv, third, 0);
    /* two sizes told: unknown.  A GETATTR answered while the invalidation
     * is sent may be kept, and what the record says stays... */
    told("/pending.gmf", 583);
    told("/pending.gmf", 47869);
    void *tok = mfs_kview_opened(kv, "/pending.gmf", b, &sb, &res);
    assert_int_equal(res.invalidate, 1);
    off_t mid = 47869;
    mfs_kview_invalidate(kv, tok, send_while_told, &mid);
    mfs_kview_release(kv, tok, 0);
    /* ...and with nothing told meanwhile, the record starts afresh */
    open_close("/pending.gmf", b, &sb, 0, 1);
    open_close("/pending.gmf", b, &sb, 1, 0);
}

/* The path moves to a new inode while A's handles are open: their record
 * leaves with them (their tokens stay good), and the path starts afresh,
 * so the new inode hears B's size and opens without direct I/O. */
static void test_detach_leaves_the_old_handles_their_record(void **state)
{
    (void)state;
    mfs_kview_set_cap(kv, 64);
    uint8_t a[16] = {21}, b[16] = {22};
    struct stat sa = sized(500), sb = sized(600);
    mfs_kview_open res;
    uint64_t n0, n, ev;
    mfs_kview_stats(kv, &n0, &ev, &held);
    void *tok = mfs_kview_opened(kv, "/moved.gmf", a, &sa, &res);
    void *tok2 = mfs_kview_opened(kv, "/moved.gmf", a, &sa, &res);
    mfs_kview_stats(kv, &n, &ev, &held);
    assert_int_equal(n, n0 + 1);
    /* a GETATTR of the path still hears A's size: its inode is A's */
    struct stat st = sb;
    mfs_kview_attr(kv, "/moved.gmf", &st);
    assert_int_equal(st.st_size, 500);
    /* held by A's handles: for B's attributes, not for A's own */
    struct stat served = sized(0);
    assert_int_equal(mfs_kview_held(kv, "/moved.gmf", a, &sb, &served), 0); /* A's id: A */
    assert_int_equal(served.st_size, 0);
    assert_int_equal(mfs_kview_held(kv, "/moved.gmf", b, &sa, &served), 1); /* B's id */
    assert_int_equal(served.st_size, 500);
    /* attributes alone: only a later mtime says another entry */
    served = sized(0);
    assert_int_equal(mfs_kview_held(kv, "/moved.gmf", NULL, &sa, &served), 0);
    struct stat older = sb;
    older.st_mtim.tv_sec = sa.st_mtim.tv_sec - 1;
    assert_int_equal(mfs_kview_held(kv, "/moved.gmf", NULL, &older, &served), 0);
    struct stat newer = sb;
    newer.st_mtim.tv_sec = sa.st_mtim.tv_sec + 1;
    assert_int_equal(mfs_kview_held(kv, "/moved.gmf", NULL, &newer, &served), 1);
    assert_int_equal(served.st_size, 500);
    served = sized(0);
    assert_int_equal(mfs_kview_held(kv, "/moved.gmf", NULL, NULL, &served), 1);
    assert_int_equal(served.st_size, 500);
    /* told by name: B's id is held (nothing recorded), A's is recorded */
    st = sb;
    assert_int_equal(mfs_kview_named(kv, "/moved.gmf", b, &st, &served), 1);
    assert_int_equal(st.st_size, 600);
    st = sb;
    assert_int_equal(mfs_kview_named(kv, "/moved.gmf", a, &st, &served), 0);
    assert_int_equal(st.st_size, 500); /* the handles' size, as mfs_kview_attr */
    mfs_kview_detach(kv, "/moved.gmf");
    mfs_kview_stats(kv, &n, &ev, &held);
    assert_int_equal(n, n0);
    assert_int_equal(mfs_kview_held(kv, "/moved.gmf", NULL, NULL, &served), 0);
    st = sb;
    mfs_kview_attr(kv, "/moved.gmf", &st); /* the new inode hears B's size */
    assert_int_equal(st.st_size, 600);
    /* asked through an A handle: A's own attributes, not the path's */
    st = sb;
    mfs_kview_handle_attr(kv, tok, "/moved.gmf", &st);
    assert_int_equal(st.st_size, 600);
    st = sa;
    mfs_kview_handle_attr(kv, tok, "/moved.gmf", &st);
    assert_int_equal(st.st_size, 500);
    void *tok3 = mfs_kview_opened(kv, "/moved.gmf", b, &sb, &res);
    assert_non_null(tok3);
    assert_int_equal(res.direct_io, 0);
    assert_int_equal(res.renew, 0);
    mfs_kview_release(kv, tok, 0); /* the old handles close: their record goes */
    mfs_kview_release(kv, tok2, 0);
    st = sa;
    mfs_kview_attr(kv, "/moved.gmf", &st); /* B's handle is the path's now */
    assert_int_equal(st.st_size, 600);
    mfs_kview_release(kv, tok3, 0);
    mfs_kview_detach(kv, "/moved.gmf"); /* no handles: freed at once */
    mfs_kview_detach(kv, "/never.gmf");  /* no record: nothing to do */
    mfs_kview_stats(kv, &n, &ev, &held);
    assert_int_equal(n, n0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_holds_and_evicts_lru),
        cmocka_unit_test(test_open_record_is_never_evicted),
        cmocka_unit_test(test_long_paths_evict_by_bytes),
        cmocka_unit_test(test_evicted_path_reopens_with_invalidation),
        cmocka_unit_test(test_detach_leaves_the_old_handles_their_record),
        cmocka_unit_test(test_two_sizes_told_are_unknown),
        cmocka_unit_test(test_an_invalidation_on_its_way_is_not_trusted),
    };
    kv = mfs_kviews_new(0);
    if (!kv)
        return 1;
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    mfs_kviews_free(kv);
    return failed;
}

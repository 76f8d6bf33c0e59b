/* nodes.c: the kernel's inodes by id (docs/scale.md, "The kernel's
 * inodes").  Paths from ids, lookup counts freed by FORGET, folders kept
 * while a child lives, ids never reused, and the victims beyond the cap:
 * least recently used files only, never a folder or an open file. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nodes.h"

static void test_paths_and_errors(void **state)
{
    (void)state;
    mfs_nodes *t = mfs_nodes_new(100);
    assert_non_null(t);
    char p[64];
    assert_int_equal(mfs_nodes_path(t, MFS_NODE_ROOT, p, sizeof p), 0);
    assert_string_equal(p, "/");
    uint64_t dir = mfs_nodes_lookup(t, MFS_NODE_ROOT, "crate", 1);
    uint64_t file = mfs_nodes_lookup(t, dir, "crate.gmf", 0);
    assert_true(dir > MFS_NODE_ROOT && file > dir);
    assert_int_equal(mfs_nodes_path(t, file, p, sizeof p), 0);
    assert_string_equal(p, "/crate/crate.gmf");
    assert_int_equal(mfs_nodes_child_path(t, MFS_NODE_ROOT, "a.obj", p, sizeof p), 0);
    assert_string_equal(p, "/a.obj");
    assert_int_equal(mfs_nodes_child_path(t, dir, "b.obj", p, sizeof p), 0);
    assert_string_equal(p, "/crate/b.obj");
    /* the same name again is the same node */
    assert_int_equal(mfs_nodes_lookup(t, dir, "crate.gmf", 0), file);
    assert_int_equal(mfs_nodes_find(t, "/crate/crate.gmf"), file);
    assert_int_equal(mfs_nodes_find(t, "/crate/none"), 0);
    assert_int_equal(mfs_nodes_find(t, "/"), MFS_NODE_ROOT);
    /* unknown ids and paths that do not fit */
    assert_int_equal(mfs_nodes_path(t, 999, p, sizeof p), -ESTALE);
    assert_int_equal(mfs_nodes_lookup(t, 999, "x", 0), 0);
    char tiny[10];
    assert_int_equal(mfs_nodes_path(t, file, tiny, sizeof tiny), -ENAMETOOLONG);
    assert_int_equal(mfs_nodes_child_path(t, dir, "a-long-name.obj", tiny, sizeof tiny),
                     -ENAMETOOLONG);
    mfs_nodes_free(t);
}

static void test_forget_frees_and_ids_are_not_reused(void **state)
{
    (void)state;
    mfs_nodes *t = mfs_nodes_new(100);
    uint64_t dir = mfs_nodes_lookup(t, MFS_NODE_ROOT, "d", 1);
    uint64_t f = mfs_nodes_lookup(t, dir, "f", 0);
    assert_int_equal(mfs_nodes_lookup(t, dir, "f", 0), f); /* 2 lookups */
    mfs_nodes_stats s;
    mfs_nodes_get_stats(t, &s);
    assert_int_equal(s.nodes, 3);
    assert_int_equal(s.files, 1);
    /* the folder forgotten first stays while its file lives: its path is
     * still needed */
    mfs_nodes_forget(t, dir, 1);
    char p[64];
    assert_int_equal(mfs_nodes_path(t, f, p, sizeof p), 0);
    assert_string_equal(p, "/d/f");
    mfs_nodes_forget(t, f, 1);
    assert_int_equal(mfs_nodes_path(t, f, p, sizeof p), 0); /* one lookup left */
    mfs_nodes_forget(t, f, 1);
    assert_int_equal(mfs_nodes_path(t, f, p, sizeof p), -ESTALE);
    assert_int_equal(mfs_nodes_path(t, dir, p, sizeof p), -ESTALE);
    mfs_nodes_get_stats(t, &s);
    assert_int_equal(s.nodes, 1);
    assert_int_equal(s.freed, 2);
    /* a new node for the same name gets a new id */
    uint64_t dir2 = mfs_nodes_lookup(t, MFS_NODE_ROOT, "d", 1);
    assert_true(dir2 > f);
    /* the root is never freed */
    mfs_nodes_forget(t, MFS_NODE_ROOT, 100);
    assert_int_equal(mfs_nodes_path(t, MFS_NODE_ROOT, p, sizeof p), 0);
    mfs_nodes_free(t);
}

static void test_open_handle_keeps_node(void **state)
{
    (void)state;
    mfs_nodes *t = mfs_nodes_new(100);
    uint64_t f = mfs_nodes_lookup(t, MFS_NODE_ROOT, "f", 0);
    mfs_nodes_opened(t, f, 1);
    mfs_nodes_forget(t, f, 1);
    char p[64];
    assert_int_equal(mfs_nodes_path(t, f, p, sizeof p), 0);
    mfs_nodes_opened(t, f, -1);
    assert_int_equal(mfs_nodes_path(t, f, p, sizeof p), -ESTALE);
    mfs_nodes_free(t);
}

/* A detached node keeps its id and path for the kernel's requests by id,
 * the name's next lookup makes a new node, and the old one goes with its
 * last handle and lookup; it is never offered as a victim (its name is the
 * new node's).  Folders are never detached. */
static void test_detach_moves_the_name_to_a_new_node(void **state)
{
    (void)state;
    mfs_nodes *t = mfs_nodes_new(1);
    uint64_t dir = mfs_nodes_lookup(t, MFS_NODE_ROOT, "d", 1);
    uint64_t old = mfs_nodes_lookup(t, dir, "v.gmf", 0);
    mfs_nodes_opened(t, old, 1);
    struct stat st, kept = {.st_size = 1234}, later = {.st_size = 99};
    assert_int_equal(mfs_nodes_kept_attr(t, old, &st), 0);
    assert_int_equal(mfs_nodes_detach(t, old, &kept), 1);
    assert_int_equal(mfs_nodes_kept_attr(t, old, &st), 1);
    assert_int_equal(st.st_size, 1234);
    /* again: nothing moves, and the first move's attributes stay */
    assert_int_equal(mfs_nodes_detach(t, old, &later), 0);
    assert_int_equal(mfs_nodes_kept_attr(t, old, &st), 1);
    assert_int_equal(st.st_size, 1234);
    assert_int_equal(mfs_nodes_detach(t, dir, NULL), -EISDIR);
    assert_int_equal(mfs_nodes_detach(t, MFS_NODE_ROOT, NULL), -EISDIR);
    assert_int_equal(mfs_nodes_detach(t, 999, NULL), -ESTALE);
    char p[64];
    assert_int_equal(mfs_nodes_path(t, old, p, sizeof p), 0);
    assert_string_equal(p, "/d/v.gmf");
    assert_int_equal(mfs_nodes_find(t, "/d/v.gmf"), 0);
    uint64_t fresh = mfs_nodes_lookup(t, dir, "v.gmf", 0);
    assert_true(fresh > old);
    assert_int_equal(mfs_nodes_find(t, "/d/v.gmf"), fresh);
    assert_int_equal(mfs_nodes_lookup(t, dir, "v.gmf", 0), fresh);
    assert_int_equal(mfs_nodes_kept_attr(t, fresh, &st), 0);
    /* moved without attributes: GETATTR answers from the path */
    uint64_t other = mfs_nodes_lookup(t, dir, "w.gmf", 0);
    assert_int_equal(mfs_nodes_detach(t, other, NULL), 1);
    assert_int_equal(mfs_nodes_is_detached(t, other), 1);
    assert_int_equal(mfs_nodes_is_detached(t, fresh), 0);
    assert_int_equal(mfs_nodes_kept_attr(t, other, &st), 0);
    /* a refused OPEN's retry: that thread's next OPEN, once, when it is of
     * the same name, on the node refused (a reopen through /proc) or on the
     * name's node now (a path walk's retry looked the name up again) */
    assert_int_equal(mfs_nodes_retry_of(t, other, 77), 0);
    mfs_nodes_refused(t, old, 77);
    assert_int_equal(mfs_nodes_retry_of(t, fresh, 78), 0);
    assert_int_equal(mfs_nodes_retry_of(t, fresh, 77), 1);
    assert_int_equal(mfs_nodes_retry_of(t, fresh, 77), 0);
    mfs_nodes_refused(t, old, 77);
    assert_int_equal(mfs_nodes_retry_of(t, old, 77), 1);
    mfs_nodes_refused(t, old, 77);
    assert_int_equal(mfs_nodes_retry_of(t, other, 77), 0); /* another name's open */
    assert_int_equal(mfs_nodes_retry_of(t, old, 77), 0);   /* ended the retry */
    mfs_nodes_refused(t, 999, 77); /* no such node: nothing to retry */
    assert_int_equal(mfs_nodes_retry_of(t, old, 77), 0);
    mfs_nodes_forget(t, other, 1);
    /* over the cap of 1: only the new node's name is offered */
    mfs_node_victim v[4];
    mfs_nodes_opened(t, old, -1);
    mfs_nodes_opened(t, old, 1);
    assert_int_equal(mfs_nodes_victims(t, v, 4), 1);
    assert_string_equal(v[0].name, "v.gmf");
    mfs_nodes_opened(t, old, -1);
    mfs_nodes_forget(t, old, 1);
    assert_int_equal(mfs_nodes_path(t, old, p, sizeof p), -ESTALE);
    assert_int_equal(mfs_nodes_kept_attr(t, old, &st), 0);
    assert_int_equal(mfs_nodes_find(t, "/d/v.gmf"), fresh); /* untouched */
    mfs_nodes_stats s;
    mfs_nodes_get_stats(t, &s);
    assert_int_equal(s.detached, 2);
    assert_int_equal(s.files, 1);
    mfs_nodes_forget(t, fresh, 2);
    mfs_nodes_get_stats(t, &s);
    assert_int_equal(s.nodes, 2); /* the root and d, looked up once */
    mfs_nodes_free(t);
}

/* 20 files under a cap of 8: victims bring them to 7 (7/8 of 8), oldest
 * first, skipping folders and open files; used files move to the back. */
static void test_victims_lru_files_only(void **state)
{
    (void)state;
    mfs_nodes *t = mfs_nodes_new(8);
    uint64_t dir = mfs_nodes_lookup(t, MFS_NODE_ROOT, "d", 1);
    uint64_t ids[20];
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%02d", i);
        ids[i] = mfs_nodes_lookup(t, dir, name, 0);
    }
    for (int i = 0; i < 5; i++) /* folders never count or go */
        assert_true(mfs_nodes_lookup(t, dir, i ? "sub" : "sub0", 1) > 0);
    assert_true(mfs_nodes_over(t));
    mfs_nodes_opened(t, ids[0], 1); /* open: never a victim */
    mfs_nodes_touch(t, ids[1]);      /* used: now the newest */
    mfs_node_victim v[64];
    size_t k = mfs_nodes_victims(t, v, 64);
    assert_int_equal(k, 13); /* 20 - 7 */
    for (size_t i = 0; i < k; i++) {
        char want[16];
        snprintf(want, sizeof want, "f%02zu", i + 2);
        assert_int_equal(v[i].parent, dir);
        assert_string_equal(v[i].name, want);
    }
    /* the kernel forgets them: under the cap again, nothing more to offer */
    for (size_t i = 0; i < k; i++)
        mfs_nodes_forget(t, ids[i + 2], 1);
    assert_false(mfs_nodes_over(t));
    assert_int_equal(mfs_nodes_victims(t, v, 64), 0);
    mfs_nodes_stats s;
    mfs_nodes_get_stats(t, &s);
    assert_int_equal(s.files, 7);
    assert_int_equal(s.offered, 13);
    assert_int_equal(s.cap, 8);
    mfs_nodes_free(t);
}

/* Victims the kernel kept (in use) are offered again only after the rest,
 * and a call offers each node once at most. */
static void test_kept_victims_rotate(void **state)
{
    (void)state;
    mfs_nodes *t = mfs_nodes_new(2);
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "f%d", i);
        mfs_nodes_lookup(t, MFS_NODE_ROOT, name, 0);
    }
    mfs_node_victim v[8];
    /* keep 2 - 2/8 = 2: two victims, f0 and f1 */
    assert_int_equal(mfs_nodes_victims(t, v, 8), 2);
    assert_string_equal(v[0].name, "f0");
    assert_string_equal(v[1].name, "f1");
    /* nothing forgotten: next time the two not yet offered come first */
    assert_int_equal(mfs_nodes_victims(t, v, 8), 2);
    assert_string_equal(v[0].name, "f2");
    assert_string_equal(v[1].name, "f3");
    mfs_nodes_free(t);
}

/* Many nodes: the tables grow and every path still resolves. */
static void test_growth(void **state)
{
    (void)state;
    mfs_nodes *t = mfs_nodes_new(1u << 20);
    enum { N = 50000 };
    static uint64_t ids[N];
    uint64_t dir = mfs_nodes_lookup(t, MFS_NODE_ROOT, "big", 1);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "m%05d.obj", i);
        ids[i] = mfs_nodes_lookup(t, dir, name, 0);
        assert_true(ids[i] > 0);
    }
    for (int i = 0; i < N; i += 997) {
        char p[64], want[64];
        snprintf(want, sizeof want, "/big/m%05d.obj", i);
        assert_int_equal(mfs_nodes_path(t, ids[i], p, sizeof p), 0);
        assert_string_equal(p, want);
        assert_int_equal(mfs_nodes_find(t, want), ids[i]);
    }
    for (int i = 0; i < N; i++)
        mfs_nodes_forget(t, ids[i], 1);
    mfs_nodes_stats s;
    mfs_nodes_get_stats(t, &s);
    assert_int_equal(s.nodes, 2);
    mfs_nodes_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_and_errors),
        cmocka_unit_test(test_forget_frees_and_ids_are_not_reused),
        cmocka_unit_test(test_open_handle_keeps_node),
        cmocka_unit_test(test_detach_moves_the_name_to_a_new_node),
        cmocka_unit_test(test_victims_lru_files_only),
        cmocka_unit_test(test_kept_victims_rotate),
        cmocka_unit_test(test_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

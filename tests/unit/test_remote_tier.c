/* The remote tier's logic (src/remote/tier.c, upload.c, lease.c) driven
 * through an in-memory backend (include/meshfs/remote.h, "the backend"),
 * against what docs/remote-cache.md says it does: an object goes up as the
 * entry in the TRAILER form and comes down byte-identical into another
 * cache; a bad object is never served; a failed PUT leaves an owed record
 * that a push sends; a failing server is skipped while reads back off;
 * failures never travel; a lease another machine holds ("423") makes it
 * wait for the manifest, or take the lease over once it is free. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "meshfs/cache.h"
#include "meshfs/remote.h"

/* ---- the fake server: objects by name, scripted answers, a call log ---- */

#define MAX_OBJ 32
#define MAX_CALLS 64

typedef struct fake {
    pthread_mutex_t mu;
    struct {
        char name[128];
        uint8_t *p;
        size_t n;
    } obj[MAX_OBJ];
    size_t nobj;
    mfs_remote_status put_status; /* what a put answers (OK: stores) */
    mfs_remote_status get_status; /* FAILED: every get fails (no answer) */
    mfs_remote_status lock_script[8]; /* answered in turn; the last repeats */
    size_t nlock_script, nlocks;
    const char *arrive_name; /* put there by the arrive_after-th head of it */
    unsigned arrive_after, heads_of_arrive;
    char calls[MAX_CALLS][160]; /* "GET v2/view/..." */
    size_t ncalls;
    char unlocked_token[MFS_REMOTE_TOKEN_MAX + 1];
} fake;

static void note(fake *f, const char *method, const char *name)
{
    if (f->ncalls < MAX_CALLS)
        snprintf(f->calls[f->ncalls++], sizeof f->calls[0], "%s %s", method, name);
}

static int find(fake *f, const char *name)
{
    for (size_t i = 0; i < f->nobj; i++)
        if (!strcmp(f->obj[i].name, name))
            return (int)i;
    return -1;
}

static void keep(fake *f, const char *name, const void *p, size_t n)
{
    int i = find(f, name);
    if (i < 0) {
        assert_true(f->nobj < MAX_OBJ);
        i = (int)f->nobj++;
        snprintf(f->obj[i].name, sizeof f->obj[i].name, "%s", name);
    }
    free(f->obj[i].p);
    f->obj[i].p = malloc(n ? n : 1);
    memcpy(f->obj[i].p, p, n);
    f->obj[i].n = n;
}

static void fake_get(void *ctx, const char *name, const mfs_remote_sink *sink, mfs_remote_result *res)
{
    fake *f = ctx;
    memset(res, 0, sizeof *res);
    pthread_mutex_lock(&f->mu);
    note(f, "GET", name);
    if (f->get_status == MFS_RB_FAILED) {
        pthread_mutex_unlock(&f->mu);
        res->status = MFS_RB_FAILED;
        res->no_answer = 1;
        snprintf(res->detail, sizeof res->detail, "Couldn't connect to server");
        return;
    }
    int i = find(f, name);
    if (i < 0) {
        pthread_mutex_unlock(&f->mu);
        res->status = MFS_RB_ABSENT;
        res->code = 404;
        return;
    }
    size_t n = f->obj[i].n;
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, f->obj[i].p, n);
    pthread_mutex_unlock(&f->mu);
    res->code = 200;
    res->status = MFS_RB_OK;
    if (sink->declared(sink->ctx, n) < 0) {
        res->status = MFS_RB_STOPPED;
    } else {
        /* in two pieces, as a transfer comes */
        size_t half = n / 2;
        if (sink->write(sink->ctx, copy, half) < 0 || sink->write(sink->ctx, copy + half, n - half) < 0)
            res->status = MFS_RB_STOPPED;
        else
            res->bytes = n;
    }
    free(copy);
}

static void fake_head(void *ctx, const char *name, mfs_remote_result *res)
{
    fake *f = ctx;
    memset(res, 0, sizeof *res);
    pthread_mutex_lock(&f->mu);
    note(f, "HEAD", name);
    if (f->arrive_name && !strcmp(name, f->arrive_name) &&
        ++f->heads_of_arrive == f->arrive_after)
        keep(f, name, "m", 1);
    res->status = find(f, name) >= 0 ? MFS_RB_OK : MFS_RB_ABSENT;
    res->code = res->status == MFS_RB_OK ? 200 : 404;
    pthread_mutex_unlock(&f->mu);
}

static void fake_put(void *ctx, const char *name, const mfs_remote_source *src, mfs_remote_result *res)
{
    fake *f = ctx;
    memset(res, 0, sizeof *res);
    uint8_t *buf = malloc(src->size + 1);
    uint64_t off = 0;
    int64_t got;
    if (src->text) { /* a short text: no reader (remote.h) */
        assert_null(src->read);
        assert_int_equal(strlen(src->text), src->size);
        memcpy(buf, src->text, src->size);
        off = src->size;
    }
    while (off < src->size && (got = src->read(src->ctx, buf + off, 7000, off)) > 0)
        off += (uint64_t)got;
    assert_int_equal(off, src->size);
    pthread_mutex_lock(&f->mu);
    note(f, "PUT", name);
    res->status = f->put_status;
    if (f->put_status == MFS_RB_OK) {
        res->code = 201;
        keep(f, name, buf, off);
    } else {
        res->code = 500;
        snprintf(res->detail, sizeof res->detail, "HTTP 500, server error");
    }
    pthread_mutex_unlock(&f->mu);
    free(buf);
}

static void fake_lock(void *ctx, const char *name, unsigned timeout_s, mfs_remote_result *res)
{
    fake *f = ctx;
    memset(res, 0, sizeof *res);
    assert_true(timeout_s > 0);
    pthread_mutex_lock(&f->mu);
    note(f, "LOCK", name);
    size_t i = f->nlocks < f->nlock_script ? f->nlocks : f->nlock_script - 1;
    f->nlocks++;
    res->status = f->lock_script[i];
    res->code = res->status == MFS_RB_BUSY ? 423 : 200;
    if (res->status == MFS_RB_OK)
        snprintf(res->token, sizeof res->token, "<urn:fake:%zu>", f->nlocks);
    pthread_mutex_unlock(&f->mu);
}

static void fake_unlock(void *ctx, const char *name, const char *token, mfs_remote_result *res)
{
    fake *f = ctx;
    memset(res, 0, sizeof *res);
    pthread_mutex_lock(&f->mu);
    note(f, "UNLOCK", name);
    snprintf(f->unlocked_token, sizeof f->unlocked_token, "%s", token);
    res->status = MFS_RB_OK;
    res->code = 204;
    pthread_mutex_unlock(&f->mu);
}

/* The tier frees its backend; the fake outlives it (two clients share it). */
static void fake_free(void *ctx)
{
    (void)ctx;
}

static size_t count_calls(fake *f, const char *prefix)
{
    size_t n = 0;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->ncalls; i++)
        n += !strncmp(f->calls[i], prefix, strlen(prefix));
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* ---- fixtures ---- */

typedef struct world {
    char base[256], dir_a[300], dir_b[300];
    mfs_cache *a, *b;
    fake f;
} world;

static int setup(void **state)
{
    world *w = calloc(1, sizeof *w);
    if (!w || fixture_tempdir(w->base, sizeof w->base, "test_remote_tier") < 0)
        return -1;
    snprintf(w->dir_a, sizeof w->dir_a, "%s/a", w->base);
    snprintf(w->dir_b, sizeof w->dir_b, "%s/b", w->base);
    mfs_err err;
    mfs_cache_config ca = {.dir = w->dir_a}, cb = {.dir = w->dir_b};
    if (mfs_cache_open(&ca, &w->a, &err) < 0 || mfs_cache_open(&cb, &w->b, &err) < 0)
        return -1;
    pthread_mutex_init(&w->f.mu, NULL);
    w->f.put_status = MFS_RB_OK;
    w->f.get_status = MFS_RB_OK;
    w->f.lock_script[0] = MFS_RB_OK;
    w->f.nlock_script = 1;
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    mfs_cache_close(w->a);
    mfs_cache_close(w->b);
    for (size_t i = 0; i < w->f.nobj; i++)
        free(w->f.obj[i].p);
    pthread_mutex_destroy(&w->f.mu);
    fixture_rmtree(w->base);
    free(w);
    return 0;
}

static mfs_remote *client(world *w, mfs_cache *c)
{
    mfs_remote_backend be = {&w->f, fake_get, fake_head, fake_put, fake_lock, fake_unlock, fake_free};
    mfs_remote_cfg cfg = {.url = "http://fake.invalid/meshfs/"};
    mfs_err err;
    mfs_remote *r = mfs_remote_new_with(&cfg, &be, c, &err);
    assert_non_null(r);
    return r;
}

static void key_of(const char *what, mfs_cache_key *k)
{
    mfs_cache_keyb kb;
    mfs_err err;
    assert_int_equal(mfs_cache_key_init(&kb, "test_remote_tier", &err), 0);
    mfs_cache_key_add_str(&kb, what);
    mfs_cache_key_final(&kb, k);
}

static void object_name(const mfs_cache_key *k, const char *kind, char out[128])
{
    char hex[33];
    mfs_cache_key_hex(k, hex);
    snprintf(out, 128, "v%d/%s/%.2s/%s", MFS_CACHE_VERSION, kind, hex, hex + 2);
}

/* A payload no two offsets of which are alike. */
static uint8_t *payload(size_t n)
{
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 131 + (i >> 8) * 7);
    return p;
}

/* ---- the tests ---- */

static void upload_then_fetch_byte_identical(void **state)
{
    world *w = *state;
    enum { N = 300000 };
    uint8_t *p = payload(N);
    mfs_cache_key k;
    key_of("view one", &k);
    mfs_err err;
    assert_int_equal(mfs_cache_store(w->a, &k, p, N, NULL, &err), 0);

    mfs_remote *ra = client(w, w->a);
    mfs_remote_enqueue(ra, &k, 0, 0);
    mfs_remote_drain(ra, 30);
    mfs_remote_stats st;
    mfs_remote_get_stats(ra, &st);
    assert_int_equal(st.uploads, 1);
    assert_int_equal(st.bytes_up, N + MFS_CACHE_REC_LEN);
    assert_int_equal(st.owed, 0);
    mfs_remote_free(ra);

    /* HEAD found nothing, then PUT: the payload, then its record */
    char name[128];
    object_name(&k, "view", name);
    char head[160], put[160];
    snprintf(head, sizeof head, "HEAD %s", name);
    snprintf(put, sizeof put, "PUT %s", name);
    assert_int_equal(w->f.ncalls, 2);
    assert_string_equal(w->f.calls[0], head);
    assert_string_equal(w->f.calls[1], put);
    int i = find(&w->f, name);
    assert_true(i >= 0);
    assert_int_equal(w->f.obj[i].n, N + MFS_CACHE_REC_LEN);
    assert_memory_equal(w->f.obj[i].p, p, N);

    /* another machine fetches it into its own cache and serves those bytes */
    mfs_remote *rb = client(w, w->b);
    assert_int_equal(mfs_remote_fetch(rb, &k, 0), 1);
    mfs_remote_get_stats(rb, &st);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 0);
    assert_int_equal(st.bytes_down, N + MFS_CACHE_REC_LEN);
    mfs_remote_free(rb);
    mfs_cache_hit hit = {.fd = -1};
    assert_int_equal(mfs_cache_lookup(w->b, &k, &hit, &err), 1);
    assert_int_equal(hit.length, N);
    uint8_t *back = malloc(N);
    assert_int_equal(pread(hit.fd, back, N, (off_t)hit.offset), N);
    assert_memory_equal(back, p, N);
    mfs_cache_hit_release(&hit);
    mfs_cache_stats cs;
    mfs_cache_get_stats(w->b, &cs);
    assert_int_equal(cs.remote_hits, 1);
    free(back);
    free(p);
}

static void bad_object_never_served(void **state)
{
    world *w = *state;
    mfs_cache_key k;
    key_of("view bad", &k);
    char name[128];
    object_name(&k, "view", name);
    static const char junk[] = "<html>502 Bad Gateway</html> and then some more bytes than a record";
    keep(&w->f, name, junk, sizeof junk);
    mfs_remote *r = client(w, w->b);
    assert_int_equal(mfs_remote_fetch(r, &k, 0), 2); /* bad: the caller's upload replaces it */
    mfs_remote_stats st;
    mfs_remote_get_stats(r, &st);
    assert_int_equal(st.hits, 0);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.read_backoffs, 0); /* that object's fault, not the server's */
    mfs_remote_free(r);
    mfs_cache_hit hit = {.fd = -1};
    mfs_err err;
    assert_int_equal(mfs_cache_lookup(w->b, &k, &hit, &err), 0);
}

static void absent_is_a_miss_failing_server_is_skipped(void **state)
{
    world *w = *state;
    mfs_cache_key k;
    key_of("view absent", &k);
    mfs_remote *r = client(w, w->b);
    assert_int_equal(mfs_remote_fetch(r, &k, 0), 0);
    mfs_remote_stats st;
    mfs_remote_get_stats(r, &st);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.read_backoffs, 0);
    assert_int_equal(count_calls(&w->f, "GET "), 1);

    /* the server stops answering: one failed read, then reads skip it */
    w->f.get_status = MFS_RB_FAILED;
    assert_int_equal(mfs_remote_fetch(r, &k, 0), 0);
    assert_int_equal(mfs_remote_fetch(r, &k, 0), 0);
    mfs_remote_get_stats(r, &st);
    assert_int_equal(st.misses, 2); /* a skipped read asks nobody: no miss */
    assert_int_equal(st.errors, 1);
    assert_int_equal(st.read_backoffs, 1);
    assert_int_equal(count_calls(&w->f, "GET "), 2);
    mfs_remote_free(r);
}

typedef struct pushed {
    char object[128];
    int outcome, calls;
} pushed;

static void on_push(void *ctx, const char *object, int outcome, const char *why)
{
    (void)why;
    pushed *pu = ctx;
    snprintf(pu->object, sizeof pu->object, "%s", object);
    pu->outcome = outcome;
    pu->calls++;
}

static void failed_put_is_owed_then_pushed(void **state)
{
    world *w = *state;
    enum { N = 5000 };
    uint8_t *p = payload(N);
    mfs_cache_key k;
    key_of("view owed", &k);
    mfs_err err;
    assert_int_equal(mfs_cache_store(w->a, &k, p, N, NULL, &err), 0);

    w->f.put_status = MFS_RB_FAILED;
    mfs_remote *r = client(w, w->a);
    mfs_remote_enqueue(r, &k, 0, 0);
    mfs_remote_drain(r, 30);
    mfs_remote_stats st;
    mfs_remote_get_stats(r, &st);
    assert_int_equal(st.uploads, 0);
    assert_int_equal(st.upload_backoffs, 1);
    assert_int_equal(st.owed, 1);
    mfs_remote_free(r);
    uint64_t owed = 0;
    assert_int_equal(mfs_remote_owed_count(w->a, &owed), 0);
    assert_int_equal(owed, 1);
    char name[128];
    object_name(&k, "view", name);
    assert_int_equal(find(&w->f, name), -1);

    /* the server takes uploads again: a push sends what is owed */
    w->f.put_status = MFS_RB_OK;
    r = client(w, w->a);
    mfs_remote_push_result res = {0};
    pushed pu = {.outcome = -1};
    assert_int_equal(mfs_remote_push(r, on_push, &pu, &res, &err), 0);
    assert_int_equal(res.sent, 1);
    assert_int_equal(res.not_sent, 0);
    assert_int_equal(pu.calls, 1);
    assert_int_equal(pu.outcome, MFS_PUSH_SENT);
    assert_string_equal(pu.object, name + strlen("v2/")); /* "view/3f/<30 hex>" */
    mfs_remote_free(r);
    assert_int_equal(mfs_remote_owed_count(w->a, &owed), 0);
    assert_int_equal(owed, 0);
    int i = find(&w->f, name);
    assert_true(i >= 0);
    assert_int_equal(w->f.obj[i].n, N + MFS_CACHE_REC_LEN);
    assert_memory_equal(w->f.obj[i].p, p, N);
    free(p);
}

static void failures_never_travel(void **state)
{
    world *w = *state;
    mfs_cache_key k;
    key_of("view failed", &k);
    mfs_err err;
    assert_int_equal(mfs_cache_store_negative(w->a, &k, "this machine's own failure", &err), 0);
    mfs_remote *r = client(w, w->a);
    mfs_remote_enqueue(r, &k, 0, 0);
    mfs_remote_drain(r, 30);
    mfs_remote_stats st;
    mfs_remote_get_stats(r, &st);
    assert_int_equal(st.uploads, 0);
    assert_int_equal(st.owed, 0);
    mfs_remote_free(r);
    assert_int_equal(w->f.ncalls, 0); /* not even a HEAD */
    assert_int_equal(w->f.nobj, 0);
}

static void busy_lease_waits_for_the_manifest(void **state)
{
    world *w = *state;
    mfs_cache_key mk;
    key_of("model leased", &mk);
    char manifest[128];
    object_name(&mk, "manifest", manifest);
    w->f.lock_script[0] = MFS_RB_BUSY;
    w->f.nlock_script = 1;
    w->f.arrive_name = manifest;
    w->f.arrive_after = 2; /* the holder's upload lands meanwhile */
    mfs_remote *r = client(w, w->a);
    assert_int_equal(mfs_remote_lease(r, &mk), MFS_LEASE_ARRIVED);
    mfs_remote_lease_stats ls;
    mfs_remote_lease_get_stats(r, &ls);
    assert_int_equal(ls.waited, 1);
    assert_int_equal(ls.taken, 0);
    assert_int_equal(ls.taken_over, 0);
    mfs_remote_free(r);
    /* LOCK (423), then HEAD of the manifest and LOCK again between polls,
     * until the HEAD finds it */
    char hex[33], lease[160];
    mfs_cache_key_hex(&mk, hex);
    snprintf(lease, sizeof lease, "LOCK v%d/lease/%s", MFS_CACHE_VERSION, hex);
    assert_int_equal(w->f.ncalls, 4);
    assert_string_equal(w->f.calls[0], lease);
    assert_true(!strncmp(w->f.calls[1], "HEAD ", 5) && !strcmp(w->f.calls[1] + 5, manifest));
    assert_string_equal(w->f.calls[2], lease);
    assert_true(!strncmp(w->f.calls[3], "HEAD ", 5) && !strcmp(w->f.calls[3] + 5, manifest));
    assert_int_equal(count_calls(&w->f, "PUT "), 0);
}

static void freed_lease_is_taken_over(void **state)
{
    world *w = *state;
    mfs_cache_key mk;
    key_of("model holder died", &mk);
    w->f.lock_script[0] = MFS_RB_BUSY;
    w->f.lock_script[1] = MFS_RB_OK; /* its holder's lock timed out */
    w->f.nlock_script = 2;
    mfs_remote *r = client(w, w->a);
    assert_int_equal(mfs_remote_lease(r, &mk), MFS_LEASE_HELD);
    mfs_remote_lease_stats ls;
    mfs_remote_lease_get_stats(r, &ls);
    assert_int_equal(ls.waited, 1);
    assert_int_equal(ls.taken, 1);
    assert_int_equal(ls.taken_over, 1);
    /* the conversion failed: the lease is freed at once, with its token */
    mfs_remote_lease_end(r, &mk, 0);
    assert_string_equal(w->f.unlocked_token, "<urn:fake:2>");
    assert_int_equal(count_calls(&w->f, "UNLOCK "), 1);
    mfs_remote_free(r);
}

static void missing_lease_folder_is_made_once(void **state)
{
    world *w = *state;
    w->f.lock_script[0] = MFS_RB_NO_FOLDER; /* nginx's dav_ext: 409, lock kept */
    w->f.nlock_script = 1;
    mfs_remote *r = client(w, w->a);
    mfs_cache_key k1, k2;
    key_of("model in a new folder", &k1);
    key_of("another model", &k2);
    assert_int_equal(mfs_remote_lease(r, &k1), MFS_LEASE_NONE); /* converted without */
    assert_int_equal(mfs_remote_lease(r, &k2), MFS_LEASE_NONE);
    mfs_remote_free(r);
    /* the folder made by one short text put, once a session */
    char readme[64];
    snprintf(readme, sizeof readme, "v%d/lease/README", MFS_CACHE_VERSION);
    assert_int_equal(count_calls(&w->f, "PUT "), 1);
    int i = find(&w->f, readme);
    assert_true(i >= 0);
    assert_true(w->f.obj[i].n > 20 && !memcmp(w->f.obj[i].p, "meshfs leases", 13));
    assert_int_equal(count_calls(&w->f, "LOCK "), 2);
}

static void read_only_takes_no_lease(void **state)
{
    world *w = *state;
    mfs_cache_key mk;
    key_of("model read-only", &mk);
    mfs_remote_backend be = {&w->f, fake_get, fake_head, fake_put, fake_lock, fake_unlock, fake_free};
    mfs_remote_cfg cfg = {.url = "http://fake.invalid/meshfs", .read_only = 1};
    mfs_err err;
    mfs_remote *r = mfs_remote_new_with(&cfg, &be, w->a, &err);
    assert_non_null(r);
    assert_int_equal(mfs_remote_lease(r, &mk), MFS_LEASE_NONE); /* a lease promises an upload */
    mfs_remote_free(r);
    assert_int_equal(w->f.ncalls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(upload_then_fetch_byte_identical, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_object_never_served, setup, teardown),
        cmocka_unit_test_setup_teardown(absent_is_a_miss_failing_server_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_put_is_owed_then_pushed, setup, teardown),
        cmocka_unit_test_setup_teardown(failures_never_travel, setup, teardown),
        cmocka_unit_test_setup_teardown(busy_lease_waits_for_the_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(freed_lease_is_taken_over, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_lease_folder_is_made_once, setup, teardown),
        cmocka_unit_test_setup_teardown(read_only_takes_no_lease, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

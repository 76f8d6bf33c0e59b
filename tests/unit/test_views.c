/* The resolver (include/meshfs/views.h) over a real cache in a temporary
 * directory, with a fake converter in place of a worker run: hit, miss,
 * a model's failure (remembered), a machine's failure (not remembered),
 * single flight under concurrent first readers, and a listing query that
 * never converts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/convert.h"
#include "meshfs/formats.h"
#include "meshfs/views.h"
#include "fixtures.h"

#define FMT_A MFS_FMT_FMD
#define FMT_B MFS_FMT_GMF
#define MODEL "sub/car.obj"

/* CONVERT_EMBED: as CONVERT_OK, the views embedded in the model entry */
typedef enum behaviour {
    CONVERT_OK,
    CONVERT_MODEL_FAILS,
    CONVERT_MACHINE_FAILS,
    CONVERT_EMBED,
    CONVERT_RUN_FAILS, /* no run at all, its error carrying a part's errno */
} behaviour;

typedef struct fx {
    char base[256], root[300], dir[300];
    int rootfd;
    mfs_cache *cache;
    mfs_views *views;
    behaviour how;
    atomic_int converts;     /* converter calls */
    unsigned last_formats;   /* formats the last call was asked for */
    int slow_ms;             /* the converter takes this long */
    int forbid;              /* a call fails the test (listing queries) */
    size_t memo_size;        /* the resolver's cap (0: its default) */
    const char *absent[8];   /* paths the converter records as absent inputs */
    int nabsent;
    int log_stats;           /* fake_stat records the paths it is asked */
    char stat_log[64][128];
    int nstats;
} fx;

/* ---- host ---- */

static int fake_stat(void *ctx, const char *path, mfs_view_path kind, struct stat *st,
                     mfs_err *err)
{
    (void)kind;
    fx *f = ctx;
    if (f->log_stats && f->nstats < 64)
        snprintf(f->stat_log[f->nstats++], sizeof f->stat_log[0], "%s", path);
    return fstatat(f->rootfd, path, st, AT_SYMLINK_NOFOLLOW) < 0 ? mfs_err_code(err, errno) : 0;
}

static int fake_hash(void *ctx, const char *path, struct stat *st, uint8_t hash[16], mfs_err *err)
{
    fx *f = ctx;
    if (mfs_cache_file_hash_at(f->cache, f->rootfd, path, st, hash, err) < 0) {
        err->code = errno;
        return -1;
    }
    return 0;
}

static void fake_format_options(void *ctx, int format, const char *fmi_model, char *buf, size_t n)
{
    (void)ctx;
    snprintf(buf, n, "fmt=%d;model=%s;", format, fmi_model);
}

static void fake_import_options(void *ctx, char *buf, size_t n)
{
    (void)ctx;
    snprintf(buf, n, "test;");
}

/* What a worker run does for the resolver: the model's bytes as its one
 * input, each asked format stored as "<name>:<model size>" (or a failure),
 * the manifest stored. */
static int fake_convert(void *ctx, const char *model, const char *fmi_model, unsigned formats,
                        mfs_cache_manifest *man, mfs_err *err)
{
    fx *f = ctx;
    assert_false(f->forbid);
    atomic_fetch_add(&f->converts, 1);
    f->last_formats = formats;
    if (f->how == CONVERT_RUN_FAILS)
        return mfs_err_sys(err, ENOENT, "worker: cannot start");
    if (f->slow_ms)
        usleep((useconds_t)f->slow_ms * 1000);
    memset(man, 0, sizeof *man);
    man->deps = calloc(1 + (size_t)f->nabsent, sizeof *man->deps);
    man->views = calloc(MFS_FMT_COUNT, sizeof *man->views);
    assert_non_null(man->deps);
    assert_non_null(man->views);
    struct stat st;
    man->deps[0].path = strdup(model);
    if (mfs_cache_file_hash_at(f->cache, f->rootfd, model, &st, man->deps[0].hash, err) < 0)
        return -1;
    man->deps[0].size = (uint64_t)st.st_size;
    man->ndeps = 1;
    for (int i = 0; i < f->nabsent; i++) /* the .mtl as MISSING, the rest ABSENT */
        man->deps[man->ndeps++] = (mfs_dep){.path = strdup(f->absent[i]),
                                            .kind = i ? MFS_DEP_ABSENT : MFS_DEP_MISSING};
    int machine = 0;
    char payloads[MFS_FMT_COUNT][64];
    for (int k = 0; k < MFS_FMT_COUNT; k++) {
        if (!(formats & (1u << k)))
            continue;
        mfs_cache_view *v = &man->views[man->nviews++];
        v->format = strdup(mfs_format_get((mfs_format)k)->name);
        assert_int_equal(mfs_views_key(f->views, man->deps, man->ndeps, k, fmi_model, &v->key, err),
                         0);
        if (f->how == CONVERT_MODEL_FAILS) {
            assert_int_equal(mfs_cache_store_negative(f->cache, &v->key, "bad model", err), 0);
        } else if (f->how == CONVERT_MACHINE_FAILS) {
            if (!machine)
                mfs_errf(err, "disk full");
            machine = 1;
        } else {
            char *payload = payloads[man->nviews - 1];
            int n = snprintf(payload, sizeof payloads[0], "%s:%llu", v->format,
                             (unsigned long long)st.st_size);
            if (f->how == CONVERT_EMBED) {
                v->bytes = payload;
                v->length = (uint64_t)n;
            } else {
                assert_int_equal(mfs_cache_store(f->cache, &v->key, payload, (size_t)n, NULL, err),
                                 0);
            }
        }
    }
    mfs_cache_key mk;
    assert_int_equal(mfs_views_manifest_key(f->views, model, man->deps[0].size,
                                            man->deps[0].hash, &mk, err), 0);
    assert_int_equal(mfs_cache_manifest_store(f->cache, &mk, man, NULL, err), 0);
    for (uint32_t i = 0; i < man->nviews; i++)
        man->views[i].bytes = NULL; /* payloads[] ends here */
    return machine;
}

static mfs_views *new_views(fx *f)
{
    mfs_views_host h = {
        .ctx = f,
        .cache = f->cache,
        .rootfd = f->rootfd,
        .formats = (1u << FMT_A) | (1u << FMT_B),
        .version = "test-1",
        .stat_path = fake_stat,
        .hash_model = fake_hash,
        .format_options = fake_format_options,
        .import_options = fake_import_options,
        .convert = fake_convert,
        .memo_size = f->memo_size,
    };
    return mfs_views_new(&h);
}

/* ---- fixture ---- */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *w)
{
    (void)st;
    (void)flag;
    (void)w;
    return remove(p);
}

static void write_model(fx *f, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", f->root, MODEL);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->base, sizeof f->base, "/tmp/meshfs-views-XXXXXX");
    if (!f || !mkdtemp(f->base))
        return -1;
    snprintf(f->root, sizeof f->root, "%s/src", f->base);
    snprintf(f->dir, sizeof f->dir, "%s/cache", f->base);
    char sub[320];
    snprintf(sub, sizeof sub, "%s/sub", f->root);
    if (mkdir(f->root, 0700) < 0 || mkdir(sub, 0700) < 0)
        return -1;
    write_model(f, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    f->rootfd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    /* the stat index records files changed a moment ago: the listing
     * query can then know them */
    mfs_cache_config cc = {.dir = f->dir, .flags = MFS_CACHE_TRUST_FRESH_STAT};
    mfs_err err;
    if (f->rootfd < 0 || mfs_cache_open(&cc, &f->cache, &err) < 0)
        return -1;
    f->views = new_views(f);
    *state = f;
    return f->views ? 0 : -1;
}

static int teardown(void **state)
{
    fx *f = *state;
    mfs_views_free(f->views);
    mfs_cache_close(f->cache);
    close(f->rootfd);
    nftw(f->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static mfs_view_outcome resolve(fx *f, int format, mfs_view_mode mode, mfs_view_info *info,
                                mfs_err *err)
{
    return mfs_views_resolve(f->views, MODEL, "sub/car", format, mode, info, err);
}

/* ---- tests ---- */

static void test_miss_then_hit(void **state)
{
    fx *f = *state;
    mfs_view_info info;
    mfs_err err;
    /* cold: one conversion makes every enabled view */
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_OPEN, &info, &err), MFS_VIEW_HIT);
    assert_int_equal(atomic_load(&f->converts), 1);
    assert_int_equal(f->last_formats, (1u << FMT_A) | (1u << FMT_B));
    char want[64], got[64] = {0};
    int n = snprintf(want, sizeof want, "%s:%d", mfs_format_get(FMT_A)->name, 32);
    assert_int_equal(info.size, (uint64_t)n);
    assert_true(info.hit.fd >= 0);
    assert_int_equal(pread(info.hit.fd, got, (size_t)n, (off_t)info.hit.offset), n);
    assert_string_equal(got, want);
    assert_false(info.same_as_last);
    mfs_cache_hit_release(&info.hit);
    /* warm, and the other view came with the same run */
    assert_int_equal(resolve(f, FMT_B, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
    assert_int_equal(info.hit.fd, -1);
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_OPEN, &info, &err), MFS_VIEW_HIT);
    assert_true(info.same_as_last);
    mfs_cache_hit_release(&info.hit);
    assert_int_equal(atomic_load(&f->converts), 1);
    /* a changed model is a miss again: its new bytes are converted */
    write_model(f, "v 0 0 0\nv 2 0 0\nv 0 2 0\nf 1 2 3\n# changed\n");
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
    assert_int_equal(atomic_load(&f->converts), 2);
    assert_int_equal(info.size, strlen("fmd:42"));
}

/* Views embedded in the model entry: opened at their offset in it, known
 * to a listing and to a fresh resolver without a conversion. */
static void test_embedded_views(void **state)
{
    fx *f = *state;
    f->how = CONVERT_EMBED;
    mfs_view_info info;
    mfs_err err;
    char got[64] = {0};
    assert_int_equal(resolve(f, FMT_B, MFS_VIEW_OPEN, &info, &err), MFS_VIEW_HIT);
    assert_int_equal(info.size, strlen("gmf:32"));
    assert_true(info.hit.fd >= 0);
    assert_true(info.hit.offset > 0); /* inside the model entry, after its table */
    assert_int_equal(pread(info.hit.fd, got, 6, (off_t)info.hit.offset), 6);
    assert_string_equal(got, "gmf:32");
    mfs_cache_hit_release(&info.hit);
    mfs_views_free(f->views);
    f->views = new_views(f);
    f->forbid = 1;
    struct stat mst;
    assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_A, MFS_VIEW_INPUTS_STAT,
                                     &mst, &info, NULL),
                     MFS_VIEW_HIT);
    assert_int_equal(info.size, strlen("fmd:32"));
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_OPEN, &info, &err), MFS_VIEW_HIT);
    memset(got, 0, sizeof got);
    assert_int_equal(pread(info.hit.fd, got, 6, (off_t)info.hit.offset), 6);
    assert_string_equal(got, "fmd:32");
    mfs_cache_hit_release(&info.hit);
    assert_int_equal(atomic_load(&f->converts), 1);
}

static void test_model_failure_is_remembered(void **state)
{
    fx *f = *state;
    f->how = CONVERT_MODEL_FAILS;
    mfs_view_info info;
    mfs_err err;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_OPEN, &info, &err), MFS_VIEW_FAILED_MODEL);
    assert_string_equal(err.msg, "bad model");
    assert_int_equal(info.size, 0);
    assert_int_equal(info.hit.fd, -1);
    /* remembered: not converted again, by this resolver or a fresh one */
    assert_int_equal(resolve(f, FMT_B, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_FAILED_MODEL);
    mfs_views_free(f->views);
    f->views = new_views(f);
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_FAILED_MODEL);
    assert_string_equal(err.msg, "bad model");
    assert_int_equal(atomic_load(&f->converts), 1);
}

static void test_machine_failure_is_not_remembered(void **state)
{
    fx *f = *state;
    f->how = CONVERT_MACHINE_FAILS;
    mfs_view_info info;
    mfs_err err;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_FAILED_MACHINE);
    assert_string_equal(err.msg, "disk full");
    assert_int_equal(info.errnum, EIO);
    /* the next access tries again, and succeeds once the machine does */
    f->how = CONVERT_OK;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
    assert_int_equal(atomic_load(&f->converts), 2);
}

/* A run that failed is EIO to the reader, whatever errno a part of it said:
 * ENOENT would hide the view and its reason (user.meshfs.error). */
static void test_failed_run_is_eio(void **state)
{
    fx *f = *state;
    f->how = CONVERT_RUN_FAILS;
    mfs_view_info info;
    mfs_err err;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_FAILED_MACHINE);
    assert_string_equal(err.msg, "worker: cannot start");
    assert_int_equal(info.errnum, EIO);
}

static void test_model_gone(void **state)
{
    fx *f = *state;
    char path[400];
    snprintf(path, sizeof path, "%s/%s", f->root, MODEL);
    assert_int_equal(unlink(path), 0);
    mfs_view_info info;
    mfs_err err;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_FAILED_MACHINE);
    assert_int_equal(info.errnum, ENOENT);
    assert_int_equal(atomic_load(&f->converts), 0);
}

typedef struct reader {
    fx *f;
    mfs_view_outcome out;
    uint64_t size;
} reader;

static void *read_view(void *arg)
{
    reader *r = arg;
    mfs_view_info info;
    mfs_err err;
    r->out = resolve(r->f, FMT_A, MFS_VIEW_OPEN, &info, &err);
    r->size = info.size;
    mfs_cache_hit_release(&info.hit);
    return NULL;
}

static void test_single_flight(void **state)
{
    fx *f = *state;
    f->slow_ms = 200;
    enum { N = 6 };
    pthread_t t[N];
    reader r[N];
    for (int i = 0; i < N; i++) {
        r[i] = (reader){f, MFS_VIEW_MISS, 0};
        assert_int_equal(pthread_create(&t[i], NULL, read_view, &r[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].out, MFS_VIEW_HIT);
        assert_int_equal(r[i].size, strlen("fmd:32"));
    }
    assert_int_equal(atomic_load(&f->converts), 1);
}

static void test_listing_never_converts(void **state)
{
    fx *f = *state;
    mfs_view_info info;
    struct stat mst;
    mfs_err err;
    /* cold: nothing known, and the converter is never reached */
    f->forbid = 1;
    assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_A, MFS_VIEW_INPUTS_STAT,
                                     &mst, &info, NULL),
                     MFS_VIEW_MISS);
    assert_int_equal(atomic_load(&f->converts), 0);
    f->forbid = 0;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
    /* a fresh resolver (a remount) knows it from the cache alone */
    mfs_views_free(f->views);
    f->views = new_views(f);
    f->forbid = 1;
    assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_A, MFS_VIEW_INPUTS_STAT,
                                     &mst, &info, NULL),
                     MFS_VIEW_HIT);
    assert_int_equal(info.size, strlen("fmd:32"));
    assert_int_equal(mst.st_size, 32);
    assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_B, MFS_VIEW_INPUTS_CHECKED,
                                     &mst, &info, NULL),
                     MFS_VIEW_HIT);
    /* other options (another .fmi model= path) move the keys: a miss */
    assert_int_equal(mfs_views_known(f->views, MODEL, "sub/other", FMT_A, MFS_VIEW_INPUTS_STAT,
                                     &mst, &info, NULL),
                     MFS_VIEW_MISS);
    /* a changed model: not known without hashing it, so a miss too */
    write_model(f, "v 0 0 0\nv 3 0 0\nv 0 3 0\nf 1 2 3\n# changed again\n");
    assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_A, MFS_VIEW_INPUTS_STAT,
                                     &mst, &info, NULL),
                     MFS_VIEW_MISS);
    assert_int_equal(atomic_load(&f->converts), 1);
}

static void test_listing_knows_failures(void **state)
{
    fx *f = *state;
    f->how = CONVERT_MODEL_FAILS;
    mfs_view_info info;
    struct stat mst;
    mfs_err err;
    assert_int_equal(resolve(f, FMT_B, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_FAILED_MODEL);
    mfs_views_free(f->views);
    f->views = new_views(f);
    f->forbid = 1;
    mfs_err_clear(&err);
    assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_B, MFS_VIEW_INPUTS_STAT,
                                     &mst, &info, &err),
                     MFS_VIEW_FAILED_MODEL);
    assert_string_equal(err.msg, "bad model");
    assert_int_equal(info.size, 0);
}

static void test_one_key_recipe(void **state)
{
    fx *f = *state;
    mfs_dep d = {.path = MODEL, .size = 32};
    memset(d.hash, 7, sizeof d.hash);
    mfs_cache_key a, b, c;
    mfs_err err;
    assert_int_equal(mfs_views_key(f->views, &d, 1, FMT_A, "sub/car", &a, &err), 0);
    assert_int_equal(mfs_views_key(f->views, &d, 1, FMT_B, "sub/car", &b, &err), 0);
    assert_int_equal(mfs_views_key(f->views, &d, 1, FMT_A, "sub/other", &c, &err), 0);
    assert_memory_not_equal(a.b, b.b, sizeof a.b);
    assert_memory_not_equal(a.b, c.b, sizeof a.b);
    /* the recipe is the cache's view key over the host's option text */
    mfs_cache_key want;
    char opts[128];
    fake_format_options(f, FMT_A, "sub/car", opts, sizeof opts);
    assert_int_equal(mfs_cache_view_key(&d, 1, mfs_format_get(FMT_A)->name, opts, "test-1",
                                        &want, &err),
                     0);
    assert_memory_equal(a.b, want.b, sizeof a.b);
}

/* ---- the memo's bound (docs/scale.md) ---- */

static void write_named(fx *f, const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", f->root, rel);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void capped(fx *f, size_t cap)
{
    mfs_views_free(f->views);
    f->memo_size = cap;
    f->views = new_views(f);
    assert_non_null(f->views);
}

static void test_memo_cap_evicts_and_answers_stay_right(void **state)
{
    fx *f = *state;
    capped(f, 4);
    enum { N = 20 };
    char rel[N][64], body[N][96];
    for (int i = 0; i < N; i++) {
        snprintf(rel[i], sizeof rel[i], "sub/m%02d.obj", i);
        /* sizes differ, so a record answering for another model would show */
        snprintf(body[i], sizeof body[i], "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n#%.*s\n", i,
                 "xxxxxxxxxxxxxxxxxxxxxxxxx");
        write_named(f, rel[i], body[i]);
    }
    mfs_views_stats st;
    mfs_view_info info;
    mfs_err err;
    for (int i = 0; i < N; i++) {
        assert_int_equal(mfs_views_resolve(f->views, rel[i], rel[i], FMT_A, MFS_VIEW_ATTR, &info,
                                           &err),
                         MFS_VIEW_HIT);
        mfs_views_get_stats(f->views, &st);
        assert_true(st.entries <= 4);
    }
    assert_int_equal(st.cap, 4);
    assert_int_equal(st.evictions, N - 4);
    assert_int_equal(atomic_load(&f->converts), N);
    /* again, every record but the last four gone: answered from the cache
     * (manifest and entries), not converted, and each its own size */
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < N; i++) {
            assert_int_equal(mfs_views_resolve(f->views, rel[i], rel[i], FMT_B, MFS_VIEW_ATTR,
                                               &info, &err),
                             MFS_VIEW_HIT);
            char want[64];
            int n = snprintf(want, sizeof want, "%s:%zu", mfs_format_get(FMT_B)->name,
                             strlen(body[i]));
            assert_int_equal(info.size, (uint64_t)n);
        }
    assert_int_equal(atomic_load(&f->converts), N);
    /* the listing query under the cap: known from the cache, never more
     * records than the cap */
    f->forbid = 1;
    for (int i = 0; i < N; i++) {
        struct stat mst;
        assert_int_equal(mfs_views_known(f->views, rel[i], rel[i], FMT_A, MFS_VIEW_INPUTS_STAT,
                                         &mst, &info, NULL),
                         MFS_VIEW_HIT);
        assert_int_equal((size_t)mst.st_size, strlen(body[i]));
        mfs_views_get_stats(f->views, &st);
        assert_true(st.entries <= 4);
    }
    assert_true(st.evictions > (uint64_t)N);
}

/* Records of long paths (three copies a record: its own, the .fmi model=
 * path and its one input's): the byte budget, 4 KiB a record of the cap,
 * holds fewer of them than the count would, and answers stay right. */
static void test_memo_bytes_bound_long_paths(void **state)
{
    fx *f = *state;
    capped(f, 4);
    char dir[1400] = "sub";
    for (int level = 0; level < 5; level++) { /* 5 x 251 bytes deep */
        size_t at = strlen(dir);
        dir[at] = '/';
        memset(dir + at + 1, 'a' + level, 250);
        dir[at + 251] = '\0';
        char path[2000];
        snprintf(path, sizeof path, "%s/%s", f->root, dir);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    mfs_views_stats st;
    mfs_view_info info;
    mfs_err err;
    enum { N = 6 };
    char rel[N][1500];
    for (int i = 0; i < N; i++) {
        snprintf(rel[i], sizeof rel[i], "%s/m%d.obj", dir, i);
        write_named(f, rel[i], "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
        assert_int_equal(mfs_views_resolve(f->views, rel[i], rel[i], FMT_A, MFS_VIEW_ATTR, &info,
                                           &err),
                         MFS_VIEW_HIT);
        mfs_views_get_stats(f->views, &st);
        assert_true(st.bytes <= st.byte_cap);
    }
    assert_int_equal(st.byte_cap, 4 * MFS_VIEWS_RECORD_BYTES);
    /* about 4.7 KiB a record: three fit 16 KiB, where the count allows four */
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.evictions, N - 3);
    for (int i = 0; i < N; i++) /* the evicted ones answered from the cache */
        assert_int_equal(mfs_views_resolve(f->views, rel[i], rel[i], FMT_B, MFS_VIEW_ATTR, &info,
                                           &err),
                         MFS_VIEW_HIT);
    assert_int_equal(atomic_load(&f->converts), N);
}

typedef struct other_reader {
    fx *f;
    int ok;
} other_reader;

/* Resolves models the cap has no room for while the slow one converts. */
static void *read_others(void *arg)
{
    other_reader *r = arg;
    r->ok = 1;
    for (int i = 0; i < 4; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "sub/o%d.obj", i);
        mfs_view_info info;
        mfs_err err;
        r->ok &= mfs_views_resolve(r->f->views, rel, rel, FMT_A, MFS_VIEW_ATTR, &info, &err) ==
                 MFS_VIEW_HIT;
    }
    return NULL;
}

static void test_memo_never_evicts_a_record_in_use(void **state)
{
    fx *f = *state;
    capped(f, 1);
    for (int i = 0; i < 4; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "sub/o%d.obj", i);
        write_named(f, rel, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    }
    f->slow_ms = 150;
    enum { N = 4 };
    pthread_t t[N], o;
    reader r[N];
    for (int i = 0; i < N; i++) {
        r[i] = (reader){f, MFS_VIEW_MISS, 0};
        assert_int_equal(pthread_create(&t[i], NULL, read_view, &r[i]), 0);
    }
    usleep(30 * 1000);
    other_reader orr = {f, 0};
    assert_int_equal(pthread_create(&o, NULL, read_others, &orr), 0);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    pthread_join(o, NULL);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].out, MFS_VIEW_HIT);
        assert_int_equal(r[i].size, strlen("fmd:32"));
    }
    assert_true(orr.ok);
    /* one conversion of the shared model (its record, lock included, held
     * by its waiting readers past the cap of 1), one of each other */
    assert_int_equal(atomic_load(&f->converts), 1 + 4);
    mfs_views_stats st;
    mfs_views_get_stats(f->views, &st);
    assert_int_equal(st.entries, 1);
    assert_true(st.evictions >= 4);
}

static int stats_of(const fx *f, const char *path)
{
    int n = 0;
    for (int i = 0; i < f->nstats; i++)
        n += strcmp(f->stat_log[i], path) == 0;
    return n;
}

static void make_at(fx *f, const char *rel, int folder)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", f->root, rel);
    if (folder) {
        assert_int_equal(mkdir(p, 0700), 0);
        return;
    }
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fclose(fp);
}

static void warm_check(fx *f)
{
    mfs_view_info info;
    mfs_err err;
    f->nstats = 0;
    f->log_stats = 1;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
    f->log_stats = 0;
}

/* Absent inputs are checked through the folder their name is missing
 * from (issue 28's cost): a warm check stats "sub" and the root once for
 * the three names missing from them, never the names; a name that is
 * there but not a file (a folder) is still stat'ed by itself; and every
 * one of them appearing is seen at once. */
static void test_absent_names_checked_by_folder(void **state)
{
    fx *f = *state;
    make_at(f, "sub/pic.png", 1); /* a folder where a texture is looked for */
    f->absent[0] = "sub/car.mtl";
    f->absent[1] = ".meshfs";
    f->absent[2] = "sub/deeper/car.obj.meshfs"; /* "deeper" is missing too */
    f->absent[3] = "sub/pic.png";
    f->nabsent = 4;
    usleep(120 * 1000); /* the folders' times settle (mfs_input_times_settled) */
    mfs_view_info info;
    mfs_err err;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
    assert_int_equal(atomic_load(&f->converts), 1);
    warm_check(f);
    assert_int_equal(atomic_load(&f->converts), 1);
    assert_int_equal(stats_of(f, "sub"), 1);
    assert_int_equal(stats_of(f, "."), 1);
    assert_int_equal(stats_of(f, "sub/car.mtl"), 0);
    assert_int_equal(stats_of(f, ".meshfs"), 0);
    assert_int_equal(stats_of(f, "sub/deeper/car.obj.meshfs"), 0);
    assert_int_equal(stats_of(f, "sub/pic.png"), 1);
    assert_int_equal(stats_of(f, MODEL), 1);
    assert_int_equal(f->nstats, 4);

    /* each appearing is a new conversion, seen by the next check */
    const char *appear[] = {"sub/car.mtl", ".meshfs", "sub/deeper"};
    for (int i = 0; i < 3; i++) {
        make_at(f, appear[i], i == 2);
        if (i == 2) {
            make_at(f, "sub/deeper/car.obj.meshfs", 0);
            f->absent[f->nabsent++] = "sub/deeper/z.png"; /* two names in "deeper" */
        }
        /* what the converter finds absent now */
        f->absent[i] = i == 2 ? "sub/deeper/x.meshfs" : i ? "sub/x.meshfs" : "sub/y.mtl";
        assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
        assert_int_equal(atomic_load(&f->converts), 2 + i);
    }
    /* "sub" changed a moment ago: its stat stands for nothing yet, so the
     * names missing from it are stat'ed one by one */
    warm_check(f);
    assert_int_equal(atomic_load(&f->converts), 4);
    assert_int_equal(stats_of(f, "sub/y.mtl"), 1);
    assert_int_equal(stats_of(f, "sub/x.meshfs"), 1);
    assert_int_equal(stats_of(f, "sub/deeper/x.meshfs"), 1);
    /* once they settle, a check that finds every name still missing lets
     * the folders stand for them again */
    usleep(120 * 1000);
    warm_check(f);
    warm_check(f);
    assert_int_equal(stats_of(f, "sub/y.mtl"), 0);
    assert_int_equal(stats_of(f, "sub/x.meshfs"), 0);
    assert_int_equal(stats_of(f, "sub/deeper/x.meshfs"), 0);
    assert_int_equal(stats_of(f, "sub/deeper/z.png"), 0);
    assert_int_equal(stats_of(f, "sub/deeper"), 1);
    /* a folder that would stand for one name only, and is neither the
     * root nor the model's own, is not worth its stat: the name is
     * checked by itself */
    f->absent[2] = "sub/lone/x.meshfs";
    f->absent[f->nabsent++] = "sub/deeper/x.meshfs";
    make_at(f, "sub/lone", 1);
    make_at(f, "sub/y.mtl", 0); /* an input appears: converted again */
    f->absent[0] = "sub/y2.mtl";
    mfs_view_info info2;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info2, &err), MFS_VIEW_HIT);
    assert_int_equal(atomic_load(&f->converts), 5);
    usleep(120 * 1000);
    warm_check(f);
    warm_check(f);
    assert_int_equal(stats_of(f, "sub/lone/x.meshfs"), 1);
    assert_int_equal(stats_of(f, "sub/lone"), 0);
    assert_int_equal(stats_of(f, "sub/deeper/x.meshfs"), 0);
    assert_int_equal(atomic_load(&f->converts), 5);
    /* and an unrelated name added to the folder is a refresh, not a
     * conversion: the cache tier finds every input as it was */
    make_at(f, "sub/unrelated.txt", 0);
    warm_check(f);
    assert_int_equal(atomic_load(&f->converts), 5);
}

/* A listing's record (mfs_views_known) does not look for the absent
 * names' folders, nor do the listing's later checks: there a folder's stat
 * costs more than the names it stands for.  The first resolve that finds
 * the record current looks for them, and until then each absent name is
 * checked by itself, so one that appears in between is still seen. */
static void test_listing_defers_witnesses(void **state)
{
    fx *f = *state;
    f->absent[0] = "sub/car.mtl";
    f->absent[1] = ".meshfs";
    f->absent[2] = "sub/car.obj.meshfs";
    f->nabsent = 3;
    usleep(120 * 1000); /* the folders' times settle (mfs_input_times_settled) */
    mfs_view_info info;
    struct stat mst;
    mfs_err err;
    assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
    assert_int_equal(atomic_load(&f->converts), 1);

    for (int round = 0; round < 2; round++) {
        mfs_views_free(f->views); /* a remount: the record is made by the listing */
        f->views = new_views(f);
        f->nstats = 0;
        f->log_stats = 1;
        assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_A,
                                         MFS_VIEW_INPUTS_STAT, &mst, &info, NULL),
                         MFS_VIEW_HIT);
        f->log_stats = 0;
        assert_int_equal(stats_of(f, "sub/car.mtl"), 1); /* the fill's own check */
        assert_int_equal(stats_of(f, "."), 0);          /* no folder looked for */
        if (round == 0) {
            /* the listing's own checks leave the folders alone */
            f->nstats = 0;
            f->log_stats = 1;
            assert_int_equal(mfs_views_known(f->views, MODEL, "sub/car", FMT_B,
                                             MFS_VIEW_INPUTS_STAT, &mst, &info, NULL),
                             MFS_VIEW_HIT);
            f->log_stats = 0;
            assert_int_equal(stats_of(f, "sub/car.mtl"), 1);
            assert_int_equal(stats_of(f, "."), 0);
            /* the first resolve: every name by itself, then the folders */
            warm_check(f);
            assert_int_equal(atomic_load(&f->converts), 1);
            assert_int_equal(stats_of(f, "sub/car.mtl"), 1);
            assert_int_equal(stats_of(f, ".meshfs"), 1);
            assert_int_equal(stats_of(f, "."), 1);
            /* from then on the folders stand for the names */
            warm_check(f);
            assert_int_equal(stats_of(f, "sub/car.mtl"), 0);
            assert_int_equal(stats_of(f, ".meshfs"), 0);
            assert_int_equal(stats_of(f, "."), 1);
        } else {
            /* a name that appears between the listing and the first check */
            make_at(f, "sub/car.mtl", 0);
            f->absent[0] = "sub/y.mtl";
            assert_int_equal(resolve(f, FMT_A, MFS_VIEW_ATTR, &info, &err), MFS_VIEW_HIT);
            assert_int_equal(atomic_load(&f->converts), 2);
        }
    }
}

/* Filing a run (convert.h, mfs_convstore_file): an output the run vouched
 * for that is gone when it is filed was removed with the cache's files
 * (an rm -rf of the cache racing the store): the run's outputs are lost,
 * which the mount takes as churn and runs again, never as the view's EIO
 * (seen in a fresh-clone run of test_churn). */
static void test_output_gone_when_filed_is_lost(void **state)
{
    fx *f = *state;
    char out[400];
    snprintf(out, sizeof out, "%s/out", f->base);
    assert_int_equal(mkdir(out, 0700), 0);
    mfs_convstore cs = {.ctx = f, .cache = f->cache, .views = f->views, .hash_model = fake_hash};
    mfs_dep dep = {.path = MODEL, .size = 32};
    unsigned formats = (1u << FMT_A) | (1u << FMT_B);
    for (int gone = 1; gone >= 0; gone--) {
        mfs_report rep;
        memset(&rep, 0, sizeof rep);
        rep.ok = 1;
        rep.deps.v = &dep;
        rep.deps.n = 1;
        for (int fmt = 0; fmt < MFS_FMT_COUNT; fmt++)
            rep.fmt[fmt] = (mfs_fmt_result){.ok = 1, .size = 10};
        assert_int_equal(fixture_write(out, mfs_format_get(FMT_A)->name, "0123456789"), 0);
        if (!gone)
            assert_int_equal(fixture_write(out, mfs_format_get(FMT_B)->name, "abcdefghij"), 0);
        mfs_cache_manifest man;
        mfs_cache_key mk;
        mfs_cache_hit hits[MFS_FMT_COUNT];
        mfs_err err;
        mfs_err_clear(&err);
        int rc = mfs_convstore_file(&cs, MODEL, out, "sub/car", formats, &rep, &man, &mk, hits,
                                    &err);
        assert_int_equal(rep.outputs_lost, gone);
        assert_int_equal(rc, gone ? 1 : 0);
        if (gone)
            assert_non_null(strstr(err.msg, "worker output .gmf: No such file or directory"));
        for (int i = 0; i < MFS_FMT_COUNT; i++)
            mfs_cache_hit_release(&hits[i]);
        mfs_cache_manifest_free(&man);
        rep.deps.v = NULL; /* the test's own */
        rep.deps.n = 0;
        mfs_report_free(&rep);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_miss_then_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_failure_is_remembered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_machine_failure_is_not_remembered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_run_is_eio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing_never_converts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing_knows_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_key_recipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_embedded_views, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memo_cap_evicts_and_answers_stay_right, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_memo_never_evicts_a_record_in_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memo_bytes_bound_long_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absent_names_checked_by_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing_defers_witnesses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_gone_when_filed_is_lost, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

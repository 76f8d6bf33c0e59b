/* One conversion job (src/worker/job.c) run in this process: its .vrt,
 * .tri and .sph writers share one build of the runtime mesh, and what they
 * write is byte for byte what each writer writes alone on the same import. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/worker.h"
#include "../../src/formats/runtime.h"

static char root[] = "/tmp/meshfs-test-job-XXXXXX";

/* A unit cube with normals and no UVs: nothing an import option could
 * change (no texture to read, no tangents without UVs), so the test's own
 * import is the job's. */
static const char cube_obj[] =
    "v -0.5 -0.5 -0.5\nv 0.5 -0.5 -0.5\nv 0.5 0.5 -0.5\nv -0.5 0.5 -0.5\n"
    "v -0.5 -0.5 0.5\nv 0.5 -0.5 0.5\nv 0.5 0.5 0.5\nv -0.5 0.5 0.5\n"
    "vn 0 0 -1\nvn 0 0 1\nvn 0 -1 0\nvn 0 1 0\nvn -1 0 0\nvn 1 0 0\n"
    "f 1//1 3//1 2//1\nf 1//1 4//1 3//1\nf 5//2 6//2 7//2\nf 5//2 7//2 8//2\n"
    "f 1//3 2//3 6//3\nf 1//3 6//3 5//3\nf 4//4 7//4 3//4\nf 4//4 8//4 7//4\n"
    "f 1//5 5//5 8//5\nf 1//5 8//5 4//5\nf 2//6 3//6 7//6\nf 2//6 7//6 6//6\n";

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(root))
        return -1;
    char p[256];
    snprintf(p, sizeof p, "%s/cube.obj", root);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    fputs(cube_obj, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/out", root);
    return mkdir(p, 0755);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    uint8_t *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

/* Runs a job for formats with options o; returns the runtime builds it
 * made, after checking that every requested output equals what its writer
 * alone (no prepared data) writes for the same import. */
static uint64_t run_and_compare(unsigned formats, const mfs_options *o)
{
    char out[256];
    snprintf(out, sizeof out, "%s/out", root);
    mfs_job job = {.root = root, .model = "cube.obj", .formats = formats, .opts = *o,
                   .outdir = out};
    mfs_report rep;
    uint64_t b0 = mfs_runtime_builds();
    assert_int_equal(mfs_job_run(&job, &rep), 0);
    uint64_t built = mfs_runtime_builds() - b0;
    if (!rep.ok)
        fail_msg("job failed: %s", rep.error);

    mfs_import_opts io = {.importer = o->importer};
    mfs_scene *s = NULL;
    mfs_deps deps;
    mfs_err err = {0};
    memset(&deps, 0, sizeof deps);
    if (mfs_import(root, "cube.obj", &io, &s, &deps, &err) != 0)
        fail_msg("import: %s", err.msg);
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(formats & (1u << f)))
            continue;
        const mfs_format_info *fi = mfs_format_get((mfs_format)f);
        if (!rep.fmt[f].ok)
            fail_msg("%s failed: %s", fi->name, rep.fmt[f].error);
        mfs_sink k;
        mfs_sink_init_mem(&k);
        assert_int_equal(fi->write(s, NULL, o, &k, &err), 0);
        assert_int_equal(mfs_sink_finish(&k), 0);
        char path[300];
        snprintf(path, sizeof path, "%s/%s", out, fi->name);
        size_t n;
        uint8_t *got = slurp(path, &n);
        assert_int_equal(n, k.len);
        assert_memory_equal(got, k.buf, n);
        free(got);
        mfs_sink_free(&k);
    }
    mfs_scene_free(s);
    mfs_deps_free(&deps);
    mfs_report_free(&rep);
    return built;
}

static const unsigned runtime_formats =
    (1u << MFS_FMT_VRT) | (1u << MFS_FMT_TRI) | (1u << MFS_FMT_SPH);

static void runtime_mesh_built_once_per_job(void **state)
{
    (void)state;
    mfs_options o;
    mfs_options_default(&o);
    assert_int_equal(run_and_compare(runtime_formats, &o), 1);
    /* the plain layout and reversed winding come from the same one build */
    o.vrt_plain = 1;
    o.reverse_winding = 1;
    assert_int_equal(run_and_compare(runtime_formats, &o), 1);
}

static void every_format_one_runtime_build(void **state)
{
    (void)state;
    mfs_options o;
    mfs_options_default(&o);
    assert_int_equal(run_and_compare((1u << MFS_FMT_VRT) | (1u << MFS_FMT_FMD), &o), 1);
    /* every view but .tex and .gmf, whose import options (textures,
     * tangents) the comparison's import leaves out: still one build */
    assert_int_equal(run_and_compare(MFS_FMT_ALL & ~(1u << MFS_FMT_TEX) & ~(1u << MFS_FMT_GMF),
                                     &o), 1);
}

static void no_runtime_format_no_build(void **state)
{
    (void)state;
    mfs_options o;
    mfs_options_default(&o);
    assert_int_equal(run_and_compare((1u << MFS_FMT_FMD) | (1u << MFS_FMT_DEM), &o), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_mesh_built_once_per_job),
        cmocka_unit_test(every_format_one_runtime_build),
        cmocka_unit_test(no_runtime_format_no_build),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

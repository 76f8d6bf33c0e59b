/* bench-spawner: the conversions bench-inproc runs, each through the
 * spawner (the fork server, or one exec'd worker per model with
 * MESHFS_FORK_SERVER=0) exactly as meshfs-convert runs them: a private job
 * directory (made once and reused, as the batch engine keeps its own),
 * mfs_spawner_convert, the output renamed into place.  Nothing else a tool
 * does per model (the cache, reporting), so scripts/bench-fork-server can
 * tell the isolation's cost from the tool's (docs/benchmarks.md, "Fork
 * server"). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "meshfs/spawner.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench-spawner FORMATS ROOT OUTDIR MODEL...\n");
        return 2;
    }
    mfs_job job;
    memset(&job, 0, sizeof job);
    mfs_options_default(&job.opts);
    mfs_limits_default(&job.limits);
    mfs_err err;
    if (mfs_format_parse_list(argv[1], &job.formats, &err) < 0) {
        fprintf(stderr, "bench-spawner: %s\n", err.msg);
        return 2;
    }
    job.root = argv[2];
    mkdir(argv[3], 0755);
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/.bench-XXXXXX", argv[3]);
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "bench-spawner: %s: %s\n", argv[3], strerror(errno));
        return 1;
    }
    int bad = 0;
    /* BENCH_SPAWNER_GAP_US: idle time before each conversion, so each
     * starts on a quiet machine (its latency, not the throughput of a
     * busy pipeline); the mean time a conversion took is printed */
    const char *gap = getenv("BENCH_SPAWNER_GAP_US");
    double busy = 0;
    mfs_spawner *sp = NULL;
    for (int i = 4; i < argc; i++) {
        if (gap)
            usleep((useconds_t)atoi(gap));
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        job.model = argv[i];
        job.outdir = tmp;
        mfs_report rep;
        mfs_err_clear(&err);
        /* opened by the first conversion, in its time, as meshfs-convert's
         * first model waits for it */
        if (!sp && mfs_spawner_open(&sp, NULL, &err) < 0) {
            fprintf(stderr, "bench-spawner: %s\n", err.msg);
            return 1;
        }
        if (mfs_spawner_convert(sp, &job, &rep, &err) < 0) {
            fprintf(stderr, "bench-spawner: %s: %s\n", argv[i], err.msg);
            return 1;
        }
        if (!rep.ok) {
            fprintf(stderr, "bench-spawner: %s: %s\n", argv[i], rep.error);
            bad++;
        }
        for (int f = 0; f < MFS_FMT_COUNT; f++) {
            if (!(job.formats & (1u << f)))
                continue;
            const char *name = mfs_format_get((mfs_format)f)->name;
            char src[PATH_MAX + 8], dst[PATH_MAX + 64];
            snprintf(src, sizeof src, "%s/%s", tmp, name);
            snprintf(dst, sizeof dst, "%s/%s.%s", argv[3], argv[i], name);
            if (rep.ok && rep.fmt[f].ok ? rename(src, dst) < 0 : unlink(src) < 0 && errno != ENOENT)
                bad++;
        }
        mfs_report_free(&rep);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        busy += (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    }
    if (gap)
        printf("%.3f ms a conversion\n", busy * 1000 / (argc - 4));
    /* the fork server stopped and reaped, so this process's children's
     * resource usage includes every conversion */
    mfs_spawner_close(sp);
    if (rmdir(tmp) < 0)
        bad++; /* something the run left behind */
    return bad ? 1 : 0;
}

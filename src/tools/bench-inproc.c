/* bench-inproc: the conversions meshfs-convert -j1 would run, in this one
 * process, with no worker at all.  scripts/bench-fork-server subtracts its
 * time from meshfs-convert's to get the per-model cost of isolation
 * (docs/benchmarks.md, "Fork server"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "meshfs/worker.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench-inproc FORMATS ROOT OUTDIR MODEL...\n");
        return 2;
    }
    mfs_job job;
    memset(&job, 0, sizeof job);
    mfs_options_default(&job.opts);
    mfs_err err;
    if (mfs_format_parse_list(argv[1], &job.formats, &err) < 0) {
        fprintf(stderr, "bench-inproc: %s\n", err.msg);
        return 2;
    }
    job.root = argv[2];
    job.outdir = argv[3];
    mkdir(argv[3], 0755);
    int bad = 0;
    for (int i = 4; i < argc; i++) {
        mfs_report rep;
        job.model = argv[i];
        mfs_job_run(&job, &rep);
        if (!rep.ok) {
            fprintf(stderr, "bench-inproc: %s: %s\n", argv[i], rep.error);
            bad++;
        }
        mfs_report_free(&rep);
    }
    return bad ? 1 : 0;
}

/* meshfs-convert's parts (internal to the program): meshfs-convert.c runs
 * the batch and writes the output tree, convert_args.c reads the command
 * line into a batch, convert_report.c writes --report.  The uses go one way:
 * meshfs-convert.c -> convert_report.c -> convert_args.c. */
#ifndef MESHFS_TOOLS_CONVERT_BATCH_H
#define MESHFS_TOOLS_CONVERT_BATCH_H

#include <limits.h>
#include <pthread.h>
#include <stdio.h>

#include "meshfs/batch.h"
#include "meshfs/settings.h"
#include "meshfs/spawner.h"

typedef struct item {
    const mfs_plan_item *p;
    char *outdir;    /* output folder: the output root joined with p->outdir */
    mfs_report rep;  /* per view: ok, size, error, note; stats and inputs */
    int done_ok;     /* 1: every view asked for is in place; -1: refused */
    mfs_batch_state state;
    int remembered;  /* failed in an earlier run, not tried again */
    char *pkg_tmp;   /* views the package needs that --formats did not ask
                        for (never left in OUTDIR) */
    int pkg_only;    /* --shard: another shard's model, resolved only for
                        its folder's package, which this shard writes */
} item;

typedef struct batch {
    mfs_plan plan;
    item *v;
    size_t n;
    mfs_batch *engine;
    const char *out_root;
    const char *cache_dir;
    int no_cache, copy_other;
    unsigned formats;
    mfs_options opts;
    mfs_limits limits;
    int lowercase_names;        /* write every output name in lowercase */
    mfs_shard shard;            /* --shard K/N (n 0: the whole tree) */
    const char *lgepkg_name;    /* game_resources.lgepkg PackageHeader fields */
    const char *lgepkg_version;
    pthread_mutex_t lock;       /* stdout lines */
    int tty, quiet;
    size_t written, unchanged;  /* output files */
    mfs_worker_user worker_user; /* --worker-user, resolved */
    mfs_spawner *spawner;        /* this run's workers (spawner.h) */
    mfs_remote_cfg remote;      /* --remote and its companions (docs/cache.md,
                                   "Remote tier") */
    char *remote_token;
} batch;

/* ---- convert_args.c ---- */

/* A usage error: "meshfs-convert: " fmt (with a), and exit status 2. */
void die(const char *fmt, const char *a);
/* strdup, or die. */
char *xstrdup(const char *s);
/* Fills b (set to its defaults first), *report and *jobs from the command
 * line; dies on a usage error, exits 0 after --help or --version. */
void parse_args(int argc, char **argv, batch *b, const char **report, int *jobs);

/* ---- convert_report.c ---- */

/* The views each model is resolved for (mfs_batch_views). */
unsigned job_formats(const batch *b);
/* The first error of it's views, "" when none. */
const char *first_error(const batch *b, const item *it);

typedef struct report_out {
    FILE *f;
    char tmp[PATH_MAX]; /* "" when written in place */
} report_out;

int open_report(const char *path, report_out *r);
int write_report(const batch *b, report_out *r, const char *path);

#endif

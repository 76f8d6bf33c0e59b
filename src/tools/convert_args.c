/* meshfs-convert's command line: the options into a batch, and --help
 * (convert_batch.h; docs/man/meshfs-convert.1). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshfs/batch.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/convert.h"
#include "meshfs/settings.h"
#include "meshfs/util.h"

#include "convert_batch.h"

void die(const char *fmt, const char *a)
{
    fprintf(stderr, "meshfs-convert: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(2);
}

char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        die("%s", "out of memory");
    return d;
}

/* What -j, --timeout and --memory may ask (the same bounds as the mount's
 * convert_jobs, convert_timeout and convert_memory). */
#define MAX_JOBS 64
#define MAX_TIMEOUT_S (7 * 24 * 3600.0)
#define MIN_MEMORY (64ull << 20)

static void usage(FILE *f)
{
    fputs("usage: meshfs-convert [options] INPUT... [-o OUTDIR]\n"
          "Converts model files, and every model under folders (recursively), into engine\n"
          "formats, mirroring the folder layout under OUTDIR (default: current folder).\n"
          "Views come from the cache the meshfs mount uses: a model whose inputs have not\n"
          "changed since it was converted (here, by a mount or by meshfs-cache warm) is\n"
          "not converted again, and an output file that already holds its bytes is left\n"
          "alone (its mtime too).\n\n"
          "  -o, --output DIR        where converted files go\n"
          "  -f, --formats LIST      fmd,fmi,gmf,dem,vrt,tri,sph,tex and lgepkg, with ','\n"
          "                          ':' or '+' between them (one\n"
          "                          game_resources.lgepkg per output folder with models;\n"
          "                          it needs vrt,tri,tex,sph, made even when not listed)\n"
          "                          (default: all = every one of them)\n"
          "  -j, --jobs N            parallel conversions, 1 to 64 (default: number of\n"
          "                          CPUs, at most 64)\n"
          "      --fmd-raw           fmd: FMC's raw layout, node matrices not applied\n"
          "                          (default: placed geometry, as FGE draws it;\n"
          "                          --pretrans is accepted and changes nothing)\n"
          "      --vrt-layout LAYOUT vrt: skinned (64-byte vertex, default) or plain\n"
          "      --lowercase-names   write every output name in lowercase\n"
          "      --lgepkg-name NAME  game_resources.lgepkg package name (default game_resources)\n"
          "      --lgepkg-version V  its version string (default 1.0)\n"
          "      --fmi-textures      fmi: texture names instead of UNKNOWN\n"
          "      --reverse-winding   tri: reverse every triangle\n"
          "      --source-frame      keep the importer's raw coordinates (no axis/unit fix)\n"
          "      --importer NAME     auto (native glTF/OBJ parsers, assimp for the rest;\n"
          "                          default) or assimp (assimp for every format)\n"
          "      --timeout SECONDS   per model (default 60)\n"
          "      --memory SIZE       address-space cap per conversion (default 4G)\n"
          "      --worker-user USER  when run as root, the user conversions run as\n"
          "                          (default nobody; docs/security.md)\n"
          "      --cache-dir DIR     the cache (default: the mount's,\n"
          "                          ${XDG_CACHE_HOME:-$HOME/.cache}/meshfs, or\n"
          "                          /var/cache/meshfs for root)\n"
          "      --no-cache          convert everything, store nothing (a private cache\n"
          "                          in TMPDIR holding the models in flight)\n"
          "      --remote URL        a shared cache over HTTP (WebDAV): fetch views from it\n"
          "                          before converting, upload what was converted\n"
          "                          (docs/cache.md, \"Remote tier\")\n"
          "      --remote-timeout-ms MS      to connect, then for the answer to begin (default 150)\n"
          "      --remote-data-timeout-s S   a remote read's whole transfer (default 5)\n"
          "      --remote-read-only  never upload\n"
          "      --remote-token-file FILE    bearer token (a file only its owner may read)\n"
          "      --remote-owed-max SIZE  the list of uploads owed after an outage (default 64M)\n"
          "      --copy-other        also copy every other file, folder and symbolic link\n"
          "                          the mount shows (textures, sounds, configs; hidden\n"
          "                          names too; links as links), so OUTDIR equals\n"
          "                          `cp -r` of a mount with -o hide_sources\n"
          "      --report FILE       write one JSON line per model\n"
          "      --shard K/N         only the models in shard K of N (K from 1 to N): those\n"
          "                          whose path relative to INPUT has XXH3-64 mod N = K-1, so\n"
          "                          N runs (a CI matrix, a Slurm array, an indexed Job)\n"
          "                          convert the inputs once between them; a folder's\n"
          "                          package is written by the shard of its path under\n"
          "                          OUTDIR (docs/cache.md, \"Sharding\")\n"
          "  -q, --quiet             no per-model lines, no progress line, no summary\n"
          "                          unless something failed\n"
          "  -h, --help              this text\n"
          "  -V, --version           meshfs's, the formats' and the libraries' versions\n"
          "On a terminal, a progress line (done/total, models/s, ETA, current file) replaces\n"
          "the per-model lines.  The last line is the summary:\n"
          "  meshfs-convert: N converted, M up to date, K failed\n"
          "A failure is remembered in the cache, as the mount remembers it: the model is\n"
          "not tried again until it (or a file it reads) is touched or changed, or a run\n"
          "gives it more --timeout or --memory.\n"
          "Exit status: 0 if every model converted to every format, 1 otherwise, 2 on usage errors.\n",
          f);
}

void parse_args(int argc, char **argv, batch *b, const char **report, int *jobs)
{
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'},  {"formats", required_argument, 0, 'f'},
        {"jobs", required_argument, 0, 'j'},    {"pretrans", no_argument, 0, 1},
        {"fmi-textures", no_argument, 0, 2},    {"reverse-winding", no_argument, 0, 3},
        {"source-frame", no_argument, 0, 4},    {"timeout", required_argument, 0, 5},
        {"memory", required_argument, 0, 6},    {"report", required_argument, 0, 7},
        {"quiet", no_argument, 0, 'q'},         {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},       {"fmd-raw", no_argument, 0, 8},
        {"vrt-layout", required_argument, 0, 9}, {"lowercase-names", no_argument, 0, 10},
        {"lgepkg-name", required_argument, 0, 11}, {"lgepkg-version", required_argument, 0, 12},
        {"worker-user", required_argument, 0, 13}, {"importer", required_argument, 0, 14},
        {"cache-dir", required_argument, 0, 15}, {"no-cache", no_argument, 0, 16},
        {"copy-other", no_argument, 0, 17},
        {"remote", required_argument, 0, 18}, {"remote-timeout-ms", required_argument, 0, 19},
        {"remote-data-timeout-s", required_argument, 0, 20},
        {"remote-read-only", no_argument, 0, 21}, {"remote-token-file", required_argument, 0, 22},
        {"shard", required_argument, 0, 23}, {"remote-owed-max", required_argument, 0, 24},
        {0, 0, 0, 0}};
    int c;
    mfs_err err;
    while ((c = getopt_long(argc, argv, "o:f:j:qhV", longs, NULL)) != -1) {
        switch (c) {
        case 'o':
            /* "" names no folder: every model failed, with messages
             * naming neither the option nor a path (": No such file") */
            if (!optarg[0])
                die("%s", "--output: empty path (give a folder; . for the current one)");
            b->out_root = optarg;
            break;
        case 'f':
            if (mfs_format_parse_list(optarg, &b->formats, &err) < 0) {
                fprintf(stderr, "meshfs-convert: --formats=%s: %s\n", optarg, err.msg);
                exit(2);
            }
            break;
        case 'j': {
            unsigned n;
            if (mfs_optv_count("--jobs", optarg, 1, MAX_JOBS, &n, &err) < 0)
                die("%s", err.msg);
            *jobs = (int)n;
            break;
        }
        case 1: b->opts.pretrans = 1; break;
        case 2: b->opts.fmi_textures = 1; break;
        case 3: b->opts.reverse_winding = 1; break;
        case 4: b->opts.source_frame = 1; break;
        case 5:
            if (mfs_optv_seconds("--timeout", optarg, MAX_TIMEOUT_S, &b->limits.timeout_s, &err) < 0)
                die("%s", err.msg);
            break;
        case 6:
            if (mfs_optv_size("--memory", optarg, MIN_MEMORY, UINT64_MAX, &b->limits.memory, &err) < 0)
                die("%s", err.msg);
            break;
        case 7: *report = optarg; break;
        case 8: b->opts.fmd_raw = 1; break;
        case 9:
            if (mfs_options_set_vrt_layout(&b->opts, optarg, &err) < 0)
                die("--vrt-layout: %s", err.msg);
            break;
        case 10: b->lowercase_names = 1; break;
        case 11:
            if (!optarg[0] || strlen(optarg) > 19)
                die("--lgepkg-name '%s': must be 1 to 19 bytes (PackageHeader holds 20 with its NUL)", optarg);
            b->lgepkg_name = optarg;
            break;
        case 12:
            if (strlen(optarg) > 19)
                die("--lgepkg-version '%s': at most 19 bytes (PackageHeader holds 20 with its NUL)", optarg);
            b->lgepkg_version = optarg;
            break;
        case 14:
            if (mfs_importer_parse(optarg, &b->opts.importer, &err) < 0)
                die("--importer: %s", err.msg);
            break;
        case 13:
            if (mfs_worker_user_resolve(optarg, &b->worker_user, &err) < 0)
                die("--worker-user: %s", err.msg);
            break;
        case 15:
            if (!optarg[0])
                die("%s", "--cache-dir: empty path");
            b->cache_dir = optarg;
            break;
        case 16: b->no_cache = 1; break;
        case 17: b->copy_other = 1; break;
        case 18:
            if (mfs_remote_check_url("--remote", optarg, &err) < 0)
                die("%s", err.msg);
            b->remote.url = optarg;
            break;
        case 19:
            if (mfs_optv_count("--remote-timeout-ms", optarg, 1, 600000, &b->remote.timeout_ms,
                               &err) < 0)
                die("%s", err.msg);
            break;
        case 20:
            if (mfs_optv_count("--remote-data-timeout-s", optarg, 1, 3600,
                               &b->remote.data_timeout_s, &err) < 0)
                die("%s", err.msg);
            break;
        case 21: b->remote.read_only = 1; break;
        case 22:
            if (mfs_remote_read_token(optarg, &b->remote_token, &err) < 0)
                die("%s", err.msg);
            b->remote.token = b->remote_token;
            break;
        case 23:
            if (mfs_shard_parse("--shard", optarg, &b->shard, &err) < 0)
                die("%s", err.msg);
            break;
        case 24:
            if (mfs_optv_size("--remote-owed-max", optarg, 1, UINT64_MAX, &b->remote.owed_max,
                              &err) < 0)
                die("%s", err.msg);
            break;
        case 'q': b->quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': mfs_version_print(stdout, "meshfs-convert", MFS_VERSION_WORKER_LIBS); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind >= argc) {
        usage(stderr);
        /* the reason last, where the terminal leaves it */
        fputs("meshfs-convert: no INPUT given (a model file, or a folder of them)\n", stderr);
        exit(2);
    }
    if (*jobs < 1)
        *jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (*jobs < 1)
        *jobs = 1;
    if (*jobs > MAX_JOBS)
        *jobs = MAX_JOBS;
}

/* meshfs-cache: the view cache from the command line, as ccache -s/-M/-C
 * are for ccache's (docs/cache.md, "Managing the cache"; meshfs-cache(1)).
 *
 * Each subcommand is one row of `commands` below: its name, its synopsis
 * for --help, and a function given the arguments that follow it (global
 * options already taken out).  Adding one is a row and a function.  The
 * cache-layer work is in src/cache/ (cache.h, "managing a cache directory"); this file parses,
 * opens and prints. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "meshfs/batch.h"
#include "meshfs/cache.h"
#include "meshfs/cache.h"
#include "cache_explain.h"
#include "cache_push.h"
#include "meshfs/util.h"
#include "meshfs/spawner.h"

enum { EXIT_BAD = 1, EXIT_USAGE = 2, EXIT_CACHE = 3 };

typedef struct tool {
    const char *dir; /* --cache-dir; NULL: the mount's default */
    int json;
    char dirbuf[4096];
} tool;

typedef struct command {
    const char *name;
    const char *synopsis; /* --help's line, after the name */
    const char *summary;
    int (*run)(tool *t, int argc, char **argv); /* argv: what followed the name */
} command;

/* ---- shared by the subcommands ---------------------------------------- */

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("meshfs-cache: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (meshfs-cache --help)\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

static int open_cache(tool *t, mfs_cache **c)
{
    mfs_err err;
    mfs_err_clear(&err);
    if (!t->dir) {
        if (mfs_cache_default_dir(t->dirbuf, sizeof t->dirbuf, &err) < 0) {
            fprintf(stderr, "meshfs-cache: %s (give --cache-dir)\n", err.msg);
            return EXIT_CACHE;
        }
        t->dir = t->dirbuf;
    }
    struct stat st;
    if (stat(t->dir, &st) < 0) {
        fprintf(stderr, "meshfs-cache: %s: no cache there (%s)\n", t->dir, strerror(errno));
        return EXIT_CACHE;
    }
    if (!mfs_cache_is_ours(t->dir)) {
        fprintf(stderr, "meshfs-cache: %s: not a meshfs cache (no CACHEDIR.TAG written by "
                        "meshfs); not touching it\n", t->dir);
        return EXIT_CACHE;
    }
    /* no cap: opening trims nothing, and the mounts' cap stays the one
     * the stats file records */
    mfs_cache_config cfg = {.dir = t->dir, .flags = MFS_CACHE_NO_CAP};
    if (mfs_cache_open(&cfg, c, &err) < 0) {
        fprintf(stderr, "meshfs-cache: %s\n", err.msg);
        return EXIT_CACHE;
    }
    return 0;
}

static int cache_failed(mfs_cache *c, const mfs_err *err)
{
    fprintf(stderr, "meshfs-cache: %s\n", err->msg);
    mfs_cache_close(c);
    return EXIT_CACHE;
}

static int no_more_args(const char *cmd, int argc, char **argv)
{
    if (argc > 0)
        return usage_error("%s: unexpected argument '%s'", cmd, argv[0]);
    return 0;
}

static void size_text(uint64_t v, char *buf, unsigned n)
{
    mfs_optv_size_text(v, buf, n);
}

static int finish(void)
{
    return fflush(stdout) == 0 ? 0 : EXIT_CACHE;
}

/* SIZE as ccache's -M takes it: a bare number is GiB ("30" is 30 GiB, not
 * 30 bytes), else a number with K, M, G or T (powers of 1024). */
static int cache_size_arg(const char *what, const char *s, uint64_t *out, mfs_err *err)
{
    if (s[0] && strspn(s, "0123456789") == strlen(s)) {
        errno = 0;
        unsigned long long v = strtoull(s, NULL, 10);
        if (errno || v > (UINT64_MAX >> 30))
            return mfs_errf(err, "%s '%s': too large", what, s);
        *out = (uint64_t)v << 30;
        return 0;
    }
    return mfs_optv_size(what, s, 0, UINT64_MAX, out, err);
}

/* The cache folder t names (the default one if none given). */
static const char *cache_dir_of(tool *t)
{
    mfs_err err;
    if (!t->dir && mfs_cache_default_dir(t->dirbuf, sizeof t->dirbuf, &err) == 0)
        t->dir = t->dirbuf;
    return t->dir;
}

/* ---- stats ------------------------------------------------------------- */

/* ccache's units (meshfs-cache(1), "stats"): every stored view is an entry,
 * the small ones inside manifests included; a hit or a miss is a model
 * resolved for one run or one open (cache.h, model_hits).  The per-view
 * counts stay, as extra lines. */
static uint64_t stats_entries(const mfs_cache_usage *u)
{
    return u->entries + u->views_inside;
}

static void stats_hits_json(const mfs_cache_totals *tot)
{
    printf(",\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"view_hits\":%" PRIu64
           ",\"view_misses\":%" PRIu64, tot->model_hits, tot->model_misses, tot->hits, tot->misses);
}

static void stats_hits_text(const mfs_cache_totals *tot)
{
    uint64_t asked = tot->model_hits + tot->model_misses;
    printf("hits               %" PRIu64 " (%.1f%%)\n"
           "misses             %" PRIu64 "\n"
           "view hits          %" PRIu64 "\n"
           "view misses        %" PRIu64 "\n",
           tot->model_hits, asked ? 100.0 * (double)tot->model_hits / (double)asked : 0.0,
           tot->model_misses, tot->hits, tot->misses);
}

/* The stored cap (meshfs-cache max-size), apart from the counters. */
static void stats_max_size(mfs_cache *c, int json)
{
    uint64_t max;
    mfs_err err;
    int r = mfs_cache_max_size_stored(c, &max, &err);
    if (json) {
        if (r == 1)
            printf(",\"max_size\":%" PRIu64, max);
        else
            fputs(",\"max_size\":null", stdout);
        return;
    }
    char h[32];
    if (r == 1 && max)
        size_text(max, h, sizeof h);
    printf("max size           %s\n", r != 1 ? "none set (mounts use 2G; meshfs-cache max-size)"
                                       : max ? h : "0 (no cap)");
}

static int cmd_stats(tool *t, int argc, char **argv)
{
    int rc = no_more_args("stats", argc, argv);
    mfs_cache *c;
    if (rc || (rc = open_cache(t, &c)))
        return rc;
    mfs_err err;
    mfs_err_clear(&err);
    mfs_cache_usage u;
    mfs_cache_totals tot;
    if (mfs_cache_usage_scan(c, &u, &err) < 0 || mfs_cache_totals_read(c, &tot, &err) < 0)
        return cache_failed(c, &err);
    uint64_t owed = 0; /* the owed list (remote.h): records now */
    if (mfs_remote_owed_count(c, &owed) < 0)
        owed = 0;
    if (t->json) {
        fputs("{\"cache_dir\":", stdout);
        mfs_json_str(stdout, t->dir);
        printf(",\"entries\":%" PRIu64 ",\"entry_files\":%" PRIu64 ",\"manifests\":%" PRIu64
               ",\"model_entries\":%" PRIu64 ",\"views_inside\":%" PRIu64
               ",\"folder_records\":%" PRIu64 ",\"bytes\":%" PRIu64,
               stats_entries(&u), u.entries, u.manifests, u.model_entries, u.views_inside,
               u.folder_records, u.bytes);
        if (tot.cap && tot.cap != UINT64_MAX)
            printf(",\"cap\":%" PRIu64, tot.cap);
        else
            fputs(",\"cap\":null", stdout);
        stats_max_size(c, 1);
        stats_hits_json(&tot);
        printf(",\"conversions\":%" PRIu64 ",\"failures\":%" PRIu64 ",\"evictions\":%" PRIu64
               ",\"corrupt_discarded\":%" PRIu64,
               tot.conversions, tot.failures, tot.evictions, tot.corrupt);
        printf(",\"remote_hits\":%" PRIu64 ",\"remote_misses\":%" PRIu64 ",\"remote_errors\":%" PRIu64
               ",\"remote_bytes_down\":%" PRIu64 ",\"remote_bytes_up\":%" PRIu64,
               tot.remote_hits, tot.remote_misses, tot.remote_errors, tot.remote_bytes_down,
               tot.remote_bytes_up);
        printf(",\"remote_owed\":%" PRIu64 ",\"remote_owed_sent\":%" PRIu64
               ",\"remote_owed_dropped\":%" PRIu64 ",\"remote_slow\":%" PRIu64, owed,
               tot.remote_owed_sent, tot.remote_owed_dropped, tot.remote_slow);
        if (tot.updated)
            printf(",\"updated\":%" PRId64 "}\n", tot.updated);
        else
            fputs(",\"updated\":null}\n", stdout);
    } else {
        char b[48] = "", cap[32], when[64] = "never";
        if (u.bytes >= 1024) {
            char h[32];
            size_text(u.bytes, h, sizeof h);
            snprintf(b, sizeof b, " (%s)", h);
        }
        if (tot.cap == UINT64_MAX)
            snprintf(cap, sizeof cap, "none");
        else if (tot.cap)
            size_text(tot.cap, cap, sizeof cap);
        else
            snprintf(cap, sizeof cap, "none recorded");
        if (tot.updated) {
            time_t tt = (time_t)tot.updated;
            struct tm tm;
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&tt, &tm));
        }
        printf("cache directory    %s\n"
               "entries            %" PRIu64 " (%" PRIu64 " in files of their own, %" PRIu64
               " inside manifests)\n"
               "manifests          %" PRIu64 " (%" PRIu64 " model entries, %" PRIu64
               " folder records)\n"
               "bytes              %" PRIu64 "%s\n"
               "cap                %s (the last mount's or run's)\n",
               t->dir, stats_entries(&u), u.entries, u.views_inside, u.manifests, u.model_entries,
               u.folder_records, u.bytes, b, cap);
        stats_max_size(c, 0);
        stats_hits_text(&tot);
        printf("conversions        %" PRIu64 "\n"
               "failures           %" PRIu64 "\n"
               "evictions          %" PRIu64 "\n"
               "corrupt discarded  %" PRIu64 "\n",
               tot.conversions, tot.failures, tot.evictions, tot.corrupt);
        /* the remote tier's lines only where one was used */
        if (tot.remote_hits || tot.remote_misses || tot.remote_errors || tot.remote_bytes_up ||
            owed || tot.remote_owed_sent || tot.remote_owed_dropped)
            printf("remote hits        %" PRIu64 "\n"
                   "remote misses      %" PRIu64 "\n"
                   "remote errors      %" PRIu64 "\n"
                   "remote bytes down  %" PRIu64 "\n"
                   "remote bytes up    %" PRIu64 "\n"
                   "remote owed        %" PRIu64 " (meshfs-cache push sends them)\n"
                   "remote owed sent   %" PRIu64 "\n"
                   "remote owed dropped %" PRIu64 "\n"
                   "remote slow        %" PRIu64 " (models converted: the server slower)\n",
                   tot.remote_hits, tot.remote_misses, tot.remote_errors, tot.remote_bytes_down,
                   tot.remote_bytes_up, owed, tot.remote_owed_sent, tot.remote_owed_dropped,
                   tot.remote_slow);
        printf("counters updated   %s\n", when);
    }
    mfs_cache_close(c);
    return finish();
}

/* ---- trim SIZE --------------------------------------------------------- */

static int cmd_trim(tool *t, int argc, char **argv)
{
    /* an option given to the wrong command is named as such, whichever
     * place it takes ("trim --repair 1G" said only that 1G was unexpected) */
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], "--", 2))
            return usage_error("trim: unknown option '%s' (trim takes SIZE only)", argv[i]);
    if (argc < 1)
        return usage_error("trim: missing SIZE (e.g. meshfs-cache trim 500M; a bare number is GiB)");
    if (argc > 1)
        return usage_error("%s: unexpected argument '%s'", "trim", argv[1]);
    mfs_err err;
    mfs_err_clear(&err);
    uint64_t size;
    if (cache_size_arg("trim SIZE", argv[0], &size, &err) < 0) {
        fprintf(stderr, "meshfs-cache: %s\n", err.msg);
        return EXIT_USAGE;
    }
    mfs_cache *c;
    int rc = open_cache(t, &c);
    if (rc)
        return rc;
    uint64_t removed;
    mfs_cache_usage before, after;
    if (mfs_cache_usage_scan(c, &before, &err) < 0 || mfs_cache_trim(c, size, &removed, &err) < 0 ||
        mfs_cache_usage_scan(c, &after, &err) < 0)
        return cache_failed(c, &err);
    if (t->json) {
        printf("{\"size\":%" PRIu64 ",\"removed\":%" PRIu64 ",\"bytes_before\":%" PRIu64
               ",\"bytes\":%" PRIu64 ",\"entries\":%" PRIu64 ",\"manifests\":%" PRIu64 "}\n",
               size, removed, before.bytes, after.bytes, after.entries, after.manifests);
    } else {
        char a[32], b[32];
        size_text(before.bytes, a, sizeof a);
        size_text(after.bytes, b, sizeof b);
        printf("removed %" PRIu64 " files; %s before, %s now (%" PRIu64 " entries, %" PRIu64
               " manifests)\n", removed, a, b, after.entries, after.manifests);
    }
    mfs_cache_close(c);
    return finish();
}

/* ---- max-size [SIZE] (-M SIZE) ------------------------------------------ */

static int cmd_max_size(tool *t, int argc, char **argv)
{
    if (argc > 1)
        return usage_error("%s: unexpected argument '%s'", "max-size", argv[1]);
    if (argc == 1 && argv[0][0] == '-')
        return usage_error("max-size: unknown option '%s' (max-size takes SIZE only)", argv[0]);
    mfs_err err;
    mfs_err_clear(&err);
    uint64_t size = 0;
    if (argc == 1 && cache_size_arg("max-size SIZE", argv[0], &size, &err) < 0) {
        fprintf(stderr, "meshfs-cache: %s\n", err.msg);
        return EXIT_USAGE;
    }
    mfs_cache *c;
    int rc = open_cache(t, &c);
    if (rc)
        return rc;
    if (argc == 1 && mfs_cache_max_size_store(c, size, &err) < 0)
        return cache_failed(c, &err);
    int set = argc == 1 ? 1 : mfs_cache_max_size_stored(c, &size, &err);
    if (set < 0)
        return cache_failed(c, &err);
    if (t->json) {
        if (set)
            printf("{\"max_size\":%" PRIu64 "}\n", size);
        else
            fputs("{\"max_size\":null}\n", stdout);
    } else {
        char h[32];
        size_text(size, h, sizeof h);
        printf("max size %s%s\n", !set ? "none set (mounts use 2G)" : size ? h : "0 (no cap)",
               argc == 1 ? " (mounts, meshfs-convert and warm use it from their next start)" : "");
    }
    mfs_cache_close(c);
    return finish();
}

/* ---- clear ------------------------------------------------------------- */

static int cmd_clear(tool *t, int argc, char **argv)
{
    int rc = no_more_args("clear", argc, argv);
    mfs_cache *c;
    if (rc || (rc = open_cache(t, &c)))
        return rc;
    mfs_err err;
    mfs_err_clear(&err);
    uint64_t removed, freed;
    if (mfs_cache_clear(c, &removed, &freed, &err) < 0)
        return cache_failed(c, &err);
    if (t->json) {
        printf("{\"removed\":%" PRIu64 ",\"freed\":%" PRIu64 "}\n", removed, freed);
    } else {
        char f[32];
        size_text(freed, f, sizeof f);
        printf("removed %" PRIu64 " files (%s)\n", removed, f);
    }
    mfs_cache_close(c);
    return finish();
}

/* ---- verify [--repair] ------------------------------------------------- */

typedef struct bad_list {
    tool *t;
    int n;
} bad_list;

static void print_bad(void *ctx, const char *path, const char *why, int removed)
{
    bad_list *b = ctx;
    char full[4200];
    snprintf(full, sizeof full, "%s/%s", b->t->dir, path);
    if (b->t->json) {
        fputs(b->n++ ? "," : "", stdout);
        fputs("{\"path\":", stdout);
        mfs_json_str(stdout, full);
        fputs(",\"error\":", stdout);
        mfs_json_str(stdout, why);
        printf(",\"removed\":%s}", removed ? "true" : "false");
    } else {
        printf("%s: %s%s\n", full, why, removed ? " (removed)" : "");
    }
}

static int cmd_verify(tool *t, int argc, char **argv)
{
    int repair = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--repair"))
            repair = 1;
        else if (argv[i][0] == '-')
            return usage_error("verify: unknown option '%s'", argv[i]);
        else
            return usage_error("verify: unexpected argument '%s'", argv[i]);
    }
    mfs_cache *c;
    int rc = open_cache(t, &c);
    if (rc)
        return rc;
    mfs_err err;
    mfs_err_clear(&err);
    mfs_cache_verify_result res;
    bad_list b = {t, 0};
    if (t->json)
        fputs("{\"bad\":[", stdout);
    if (mfs_cache_verify(c, repair, print_bad, &b, &res, &err) < 0) {
        if (t->json)
            fputs("]}\n", stdout);
        return cache_failed(c, &err);
    }
    if (t->json)
        printf("],\"checked\":%" PRIu64 ",\"bad_count\":%" PRIu64 ",\"removed\":%" PRIu64 "}\n",
               res.checked, res.bad, res.removed);
    else
        printf("checked %" PRIu64 " files: %" PRIu64 " bad, %" PRIu64 " removed\n", res.checked,
               res.bad, res.removed);
    mfs_cache_close(c);
    rc = finish();
    return rc ? rc : res.bad ? EXIT_BAD : 0;
}

/* ---- the table ----------------------------------------------------------- */

/* ---- warm (src/batch/warm.c) ------------------------------------------ */

static void remote_log(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "meshfs-cache: warm: %s\n", msg);
}

static int cmd_warm(tool *t, int argc, char **argv)
{
    mfs_batch_cfg cfg = {.cache_dir = t->dir, .no_cap = 1, .formats = MFS_FMT_DEFAULT};
    /* --remote (docs/cache.md, "Remote tier"); the token lives to the exit */
    static mfs_remote_cfg rcfg;
    static char *token;
    mfs_options_default(&cfg.opts);
    mfs_limits_default(&cfg.limits);
    const char *src = NULL;
    unsigned flags = 0;
    unsigned jobs = 0;
    int quiet = 0;
    mfs_shard shard = {0, 0};
    mfs_err err;
    mfs_err_clear(&err);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--formats") || !strcmp(a, "-f") || !strcmp(a, "--jobs") ||
                    !strcmp(a, "-j") || !strcmp(a, "--importer") || !strcmp(a, "--vrt-layout") ||
                    !strcmp(a, "--remote") || !strcmp(a, "--remote-timeout-ms") ||
                    !strcmp(a, "--remote-data-timeout-s") || !strcmp(a, "--remote-token-file") ||
                    !strcmp(a, "--remote-owed-max") || !strcmp(a, "--shard");
        if (takes && !v)
            return usage_error("warm: %s: missing value", a);
        if (!strcmp(a, "--formats") || !strcmp(a, "-f")) {
            if (mfs_format_parse_list(v, &cfg.formats, &err) < 0)
                return usage_error("warm: --formats=%s: %s", v, err.msg);
        } else if (!strcmp(a, "--jobs") || !strcmp(a, "-j")) {
            if (mfs_optv_count("--jobs", v, 1, 64, &jobs, &err) < 0)
                return usage_error("warm: %s", err.msg);
        } else if (!strcmp(a, "--shard")) {
            if (mfs_shard_parse("--shard", v, &shard, &err) < 0)
                return usage_error("warm: %s", err.msg);
        } else if (!strcmp(a, "--importer")) {
            if (mfs_importer_parse(v, &cfg.opts.importer, &err) < 0)
                return usage_error("warm: --importer: %s", err.msg);
        } else if (!strcmp(a, "--vrt-layout")) {
            if (mfs_options_set_vrt_layout(&cfg.opts, v, &err) < 0)
                return usage_error("warm: --vrt-layout: %s", err.msg);
        } else if (!strcmp(a, "--remote")) {
            if (mfs_remote_check_url("--remote", v, &err) < 0)
                return usage_error("warm: %s", err.msg);
            rcfg.url = v;
        } else if (!strcmp(a, "--remote-timeout-ms")) {
            if (mfs_optv_count("--remote-timeout-ms", v, 1, 600000, &rcfg.timeout_ms, &err) < 0)
                return usage_error("warm: %s", err.msg);
        } else if (!strcmp(a, "--remote-data-timeout-s")) {
            if (mfs_optv_count("--remote-data-timeout-s", v, 1, 3600, &rcfg.data_timeout_s, &err) < 0)
                return usage_error("warm: %s", err.msg);
        } else if (!strcmp(a, "--remote-read-only")) {
            rcfg.read_only = 1;
        } else if (!strcmp(a, "--remote-owed-max")) {
            if (mfs_optv_size("--remote-owed-max", v, 1, UINT64_MAX, &rcfg.owed_max, &err) < 0)
                return usage_error("warm: %s", err.msg);
        } else if (!strcmp(a, "--remote-token-file")) {
            free(token);
            token = NULL;
            if (mfs_remote_read_token(v, &token, &err) < 0)
                return usage_error("warm: %s", err.msg);
            rcfg.token = token;
        } else if (!strcmp(a, "--lowercase-names")) {
            flags |= MFS_PLAN_LOWERCASE;
        } else if (!strcmp(a, "--fmi-textures")) {
            cfg.opts.fmi_textures = 1;
        } else if (!strcmp(a, "--reverse-winding")) {
            cfg.opts.reverse_winding = 1;
        } else if (!strcmp(a, "--source-frame")) {
            cfg.opts.source_frame = 1;
        } else if (!strcmp(a, "--fmd-raw")) {
            cfg.opts.fmd_raw = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("warm: unknown option '%s'", a);
        } else if (src) {
            return usage_error("warm: unexpected argument '%s' (one SRC folder)", a);
        } else {
            src = a;
        }
        i += takes;
    }
    if (!src)
        return usage_error("warm: missing SRC (the folder a mount shows)");
    /* a bad SRC is a bad argument (2), not a cache that cannot be used (3) */
    struct stat sst;
    if (stat(src, &sst) < 0)
        return usage_error("warm: SRC %s: %s", src, strerror(errno));
    if (!S_ISDIR(sst.st_mode))
        return usage_error("warm: SRC %s: not a folder (warm takes the folder a mount shows)", src);
    if (!rcfg.url &&
        (rcfg.timeout_ms || rcfg.data_timeout_s || rcfg.read_only || rcfg.token || rcfg.owed_max))
        return usage_error("warm: %s", "--remote-*: given without --remote URL");
    rcfg.log = remote_log;
    cfg.remote = rcfg.url ? &rcfg : NULL;
    /* the cache a mount would make if there is none; a folder meshfs did
     * not make is refused when the engine opens it (src/cache/claim.c) */
    mfs_spawner *sp = NULL;
    if (mfs_spawner_open(&sp, NULL, &err) < 0 || !mfs_spawner_extensions(sp, &err)) {
        fprintf(stderr, "meshfs-cache: %s\n", err.msg);
        mfs_spawner_close(sp);
        return EXIT_CACHE;
    }
    cfg.spawner = sp;
    if (!jobs) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
    }
    /* the stored cap, if any, is honoured as a mount does (otherwise warm
     * trims nothing: a folder bigger than the default cap is warmed whole) */
    uint64_t stored;
    const char *dir = cache_dir_of(t);
    if (dir && mfs_cache_max_size_read(dir, &stored) == 1)
        cfg.no_cap = 0;
    cfg.cache_dir = t->dir;
    mfs_batch_run run;
    FILE *progress = !quiet && !t->json && isatty(2) ? stderr : NULL;
    int wrc = mfs_batch_warm(&cfg, src, flags, &shard, (int)jobs, progress, quiet ? NULL : stderr,
                             &run, &err);
    mfs_spawner_close(sp);
    if (wrc < 0) {
        fprintf(stderr, "meshfs-cache: warm: %s\n", err.msg);
        return EXIT_CACHE;
    }
    if (t->json) {
        fputs("{\"src\":", stdout);
        mfs_json_str(stdout, src);
        printf(",\"converted\":%zu,\"up_to_date\":%zu,\"failed\":%zu,\"no_mesh\":%zu,"
               "\"unwalked\":%zu",
               run.converted, run.up_to_date, run.failed, run.no_mesh, run.unread);
        if (shard.n)
            printf(",\"shard\":\"%u/%u\",\"models\":%zu", shard.k, shard.n, run.planned);
        puts("}");
    } else {
        char shown[64] = "";
        if (shard.n)
            snprintf(shown, sizeof shown, "shard %u/%u: ", shard.k, shard.n);
        printf("warm: %s%zu converted, %zu up to date, %zu failed", shown, run.converted,
               run.up_to_date, run.failed);
        if (run.no_mesh) /* no failure: they have no views */
            printf(", %zu without meshes", run.no_mesh);
        if (shard.n)
            printf(" (of %zu models in SRC)", run.planned);
        putchar('\n');
    }
    if (run.unread)
        fprintf(stderr, "meshfs-cache: warm: %zu folder%s could not be walked (said above); "
                        "the models in them are not in the cache\n",
                run.unread, run.unread == 1 ? "" : "s");
    int rc = finish();
    return rc ? rc : run.failed || run.unread ? EXIT_BAD : 0;
}

static int cmd_explain(tool *t, int argc, char **argv)
{
    return mfs_cache_explain_main(t->dir, t->json, argc, argv);
}

static int cmd_push(tool *t, int argc, char **argv)
{
    return mfs_cache_push_main(t->dir, t->json, argc, argv);
}

static const command commands[] = {
    {"stats", "", "entries, bytes, caps and the counters of every mount and run", cmd_stats},
    {"max-size", " [SIZE]", "the cap mounts, meshfs-convert and warm keep the cache to (0: none)",
     cmd_max_size},
    {"trim", " SIZE", "remove least recently used entries until at most SIZE is held", cmd_trim},
    {"clear", "", "remove every entry", cmd_clear},
    {"verify", " [--repair]", "check every entry's checksum; --repair removes bad ones",
     cmd_verify},
    {"warm", " SRC [OPTS]",
     "convert every model under SRC into the cache, so a mount of SRC is warm", cmd_warm},
    {"explain", " PATH...", "what a view's key is made of, and why a lookup would convert",
     cmd_explain},
    {"push", " --remote URL", "send the uploads this cache owes a shared server (an outage "
     "skipped them)", cmd_push},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fputs("usage: meshfs-cache [--cache-dir DIR] [--json] COMMAND [ARGS]\n"
          "Manages the cache of converted views that meshfs mounts share.\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s%s", commands[i].name, commands[i].synopsis);
        fprintf(f, "  %-19s%s\n", head, commands[i].summary);
    }
    fputs("Options:\n"
          "  --cache-dir DIR    the cache (default: as meshfs, ${XDG_CACHE_HOME:-$HOME/.cache}/meshfs,\n"
          "                     /var/cache/meshfs for root)\n"
          "  -M SIZE            the max-size command (also --max-size SIZE)\n"
          "  --json             one JSON object on stdout (default: text)\n"
          "  --help             this text\n"
          "  -V, --version      meshfs's, the formats' and the libraries' versions\n"
          "warm OPTS, as the mount's options of the same name (use the mount's, or the\n"
          "views are keyed differently and the mount converts them again):\n"
          "  -f, --formats LIST  views to make (default: all, as the mount)\n"
          "  -j, --jobs N        parallel conversions, 1 to 64 (default: number of CPUs)\n"
          "  --lowercase-names --fmi-textures --reverse-winding --source-frame --fmd-raw\n"
          "  --vrt-layout LAYOUT --importer NAME\n"
          "  --remote URL       fetch from a shared HTTP cache before converting, upload\n"
          "                     what was converted (docs/cache.md, \"Remote tier\"); with\n"
          "  --remote-timeout-ms MS --remote-data-timeout-s S --remote-read-only\n"
          "  --remote-token-file FILE --remote-owed-max SIZE\n"
          "  --shard K/N         only the models in shard K of N (K from 1 to N): those whose\n"
          "                      path relative to SRC has XXH3-64 mod N = K-1, so N runs (a CI\n"
          "                      matrix, a Slurm array, an indexed Job) warm SRC once between\n"
          "                      them (docs/cache.md, \"Sharding\")\n"
          "  -q, --quiet         no progress line, no naming warnings\n"
          "SIZE: a number with B, K, M, G or T (powers of 1024), e.g. 500M; a bare number\n"
          "is GiB, as ccache's -M: 30 is 30G.\n"
          "push OPTS: --remote URL (required), --remote-timeout-ms, --remote-data-timeout-s,\n"
          "  --remote-token-file, as warm's\n"
          "Exit status: 0 done, 1 verify found bad entries (warm: a model failed; push: an\n"
          "upload not sent), 2 usage,\n"
          "3 the cache could not be used.\n",
          f);
}

int main(int argc, char **argv)
{
    tool t = {0};
    const command *cmd = NULL;
    /* global options anywhere; the rest, in order, is the command's */
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0, options = 1;
    if (!rest)
        return EXIT_CACHE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options || a[0] != '-' || a[1] == '\0') {
            if (!cmd) {
                for (size_t k = 0; k < NCOMMANDS && !cmd; k++)
                    if (!strcmp(a, commands[k].name))
                        cmd = &commands[k];
                if (!cmd) {
                    fprintf(stderr, "meshfs-cache: unknown command '%s' (commands:", a);
                    for (size_t k = 0; k < NCOMMANDS; k++)
                        fprintf(stderr, " %s", commands[k].name);
                    fputs(")\n", stderr);
                    free(rest);
                    return EXIT_USAGE;
                }
            } else {
                rest[nrest++] = argv[i];
            }
        } else if (!strcmp(a, "--")) {
            options = 0;
        } else if (!strcmp(a, "--cache-dir") || !strncmp(a, "--cache-dir=", 12)) {
            const char *v = a[11] == '=' ? a + 12 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !v[0]) {
                free(rest);
                return usage_error("--cache-dir: missing DIR");
            }
            t.dir = v;
        } else if (!strcmp(a, "-M") || !strcmp(a, "--max-size") || !strncmp(a, "--max-size=", 11)) {
            const char *v = !strncmp(a, "--max-size=", 11) ? a + 11 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !v[0] || cmd) {
                free(rest);
                return usage_error(cmd ? "-M: the max-size command, not an option of %s"
                                       : "-M: missing SIZE%s", cmd ? cmd->name : "");
            }
            for (size_t k = 0; k < NCOMMANDS && !cmd; k++)
                if (!strcmp(commands[k].name, "max-size"))
                    cmd = &commands[k];
            rest[nrest++] = (char *)v;
        } else if (!strcmp(a, "--json")) {
            t.json = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            free(rest);
            return 0;
        } else if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
            mfs_version_print(stdout, "meshfs-cache", 0);
            free(rest);
            return 0;
        } else if (cmd) {
            rest[nrest++] = argv[i]; /* the command's own option */
        } else {
            free(rest);
            return usage_error("unknown option '%s'", a);
        }
    }
    if (!cmd) {
        usage(stderr);
        free(rest);
        return EXIT_USAGE;
    }
    int rc = cmd->run(&t, nrest, rest);
    free(rest);
    return rc;
}

/* meshfs-cache push: sends the uploads a cache owes to the shared server
 * (docs/remote-cache.md, "Uploads an outage skipped"), so a batch run the
 * server missed, or a stopped mount, can finish the job.  The owed list
 * and the uploads are the remote tier's (mfs_remote_push); this file
 * parses, opens and prints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache_push.h"
#include "meshfs/cache.h"
#include "meshfs/util.h"
#include "meshfs/remote.h"

enum { EXIT_BAD = 1, EXIT_USAGE = 2, EXIT_CACHE = 3 };

typedef struct out {
    int json, n;
} out;

static int usage_error(const char *what, const char *detail)
{
    fprintf(stderr, "meshfs-cache: push: %s%s (meshfs-cache --help)\n", what, detail);
    return EXIT_USAGE;
}

static void log_line(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "meshfs-cache: push: %s\n", msg);
}

/* A line per object not sent, naming it and why; sent ones only in JSON. */
static void one(void *ctx, const char *object, int outcome, const char *why)
{
    out *o = ctx;
    static const char *const names[] = {"sent", "not_sent", "dropped"};
    if (o->json) {
        fputs(o->n++ ? "," : "", stdout);
        fputs("{\"object\":", stdout);
        mfs_json_str(stdout, object);
        printf(",\"outcome\":\"%s\"", names[outcome]);
        if (why) {
            fputs(",\"error\":", stdout);
            mfs_json_str(stdout, why);
        }
        fputs("}", stdout);
    } else if (outcome == MFS_PUSH_NOT_SENT) {
        printf("%s: not sent: %s\n", object, why);
    } else if (outcome == MFS_PUSH_DROPPED) {
        printf("%s: dropped: %s\n", object, why);
    }
}

int mfs_cache_push_main(const char *cache_dir, int json, int argc, char **argv)
{
    mfs_remote_cfg rcfg = {.log = log_line};
    char *token = NULL;
    mfs_err err;
    mfs_err_clear(&err);
    int rc = 0;
    for (int i = 0; i < argc && !rc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--remote") || !strcmp(a, "--remote-timeout-ms") ||
                    !strcmp(a, "--remote-data-timeout-s") || !strcmp(a, "--remote-token-file");
        if (takes && !v)
            rc = usage_error(a, ": missing value");
        else if (!strcmp(a, "--remote")) {
            if (mfs_remote_check_url("--remote", v, &err) < 0)
                rc = usage_error(err.msg, "");
            rcfg.url = v;
        } else if (!strcmp(a, "--remote-timeout-ms")) {
            if (mfs_optv_count(a, v, 1, 600000, &rcfg.timeout_ms, &err) < 0)
                rc = usage_error(err.msg, "");
        } else if (!strcmp(a, "--remote-data-timeout-s")) {
            if (mfs_optv_count(a, v, 1, 3600, &rcfg.data_timeout_s, &err) < 0)
                rc = usage_error(err.msg, "");
        } else if (!strcmp(a, "--remote-token-file")) {
            free(token);
            token = NULL;
            if (mfs_remote_read_token(v, &token, &err) < 0)
                rc = usage_error(err.msg, "");
            rcfg.token = token;
        } else if (a[0] == '-') {
            char d[300];
            snprintf(d, sizeof d, "unknown option '%s'", a);
            rc = usage_error(d, "");
        } else {
            char d[300];
            snprintf(d, sizeof d, "unexpected argument '%s'", a);
            rc = usage_error(d, "");
        }
        i += takes;
    }
    if (!rc && !rcfg.url)
        rc = usage_error("missing --remote URL", " (the server the owed uploads go to)");
    if (rc) {
        free(token);
        return rc;
    }
    char dirbuf[4096];
    if (!cache_dir) {
        if (mfs_cache_default_dir(dirbuf, sizeof dirbuf, &err) < 0) {
            fprintf(stderr, "meshfs-cache: %s (give --cache-dir)\n", err.msg);
            free(token);
            return EXIT_CACHE;
        }
        cache_dir = dirbuf;
    }
    struct stat st;
    if (stat(cache_dir, &st) < 0 || !mfs_cache_is_ours(cache_dir)) {
        fprintf(stderr, "meshfs-cache: %s: %s\n", cache_dir,
                errno == ENOENT ? "no cache there" : "not a meshfs cache (no CACHEDIR.TAG written by meshfs)");
        free(token);
        return EXIT_CACHE;
    }
    mfs_cache_config cfg = {.dir = cache_dir, .flags = MFS_CACHE_NO_CAP};
    mfs_cache *c;
    if (mfs_cache_open(&cfg, &c, &err) < 0) {
        fprintf(stderr, "meshfs-cache: %s\n", err.msg);
        free(token);
        return EXIT_CACHE;
    }
    mfs_remote *r = mfs_remote_new(&rcfg, c, &err);
    if (!r) {
        fprintf(stderr, "meshfs-cache: push: %s\n", err.msg);
        mfs_cache_close(c);
        free(token);
        return EXIT_CACHE;
    }
    out o = {json, 0};
    mfs_remote_push_result res;
    if (json)
        fputs("{\"objects\":[", stdout);
    int prc = mfs_remote_push(r, one, &o, &res, &err);
    mfs_remote_free(r);
    uint64_t left = 0;
    mfs_remote_owed_count(c, &left);
    mfs_cache_close(c);
    if (token) {
        memset(token, 0, strlen(token));
        free(token);
    }
    if (json)
        printf("],\"sent\":%llu,\"not_sent\":%llu,\"dropped\":%llu,\"owed\":%llu}\n",
               (unsigned long long)res.sent, (unsigned long long)res.not_sent,
               (unsigned long long)res.dropped, (unsigned long long)left);
    if (prc < 0) {
        fprintf(stderr, "meshfs-cache: push: %s\n", err.msg);
        return EXIT_CACHE;
    }
    if (!json)
        printf("push: %llu sent, %llu not sent (still owed), %llu dropped (no longer in the "
               "cache); %llu owed now\n",
               (unsigned long long)res.sent, (unsigned long long)res.not_sent,
               (unsigned long long)res.dropped, (unsigned long long)left);
    if (fflush(stdout) != 0)
        return EXIT_CACHE;
    return res.not_sent ? EXIT_BAD : 0;
}

/* What user.meshfs.error and the log may say (docs/security.md, "Error
 * text"): files are named relative to SRC, and nothing names the cache or
 * the worker's location.  Reasons come from many places (the importer, the
 * worker client, the cache, the sandbox), several of which print the
 * absolute paths they were given; rewriting the finished text here is the
 * one place that catches them all, including reasons stored in the cache by
 * an older version or another mount of the same cache. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "names.h"
#include "meshfs/spawner.h"

/* Characters that end a path in a message ("a/b.obj: ...", "'x'"). */
static int ends_path(char c)
{
    return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '\'' || c == '"' ||
           c == ')' || c == ',' || c == ';' || c == ':';
}

static int starts_token(const char *in, const char *p)
{
    if (p == in)
        return 1;
    char c = p[-1];
    return c == ' ' || c == '\t' || c == '\n' || c == '\'' || c == '"' || c == '(' ||
           c == '=' || c == ',' || c == ';' || c == '[' || c == '<';
}

/* in at p begins with path (followed by the end of a path or a '/'). */
static size_t has_path(const char *p, const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (n < 2 || strncmp(p, path, n) != 0)
        return 0;
    return ends_path(p[n]) || p[n] == '/' ? n : 0;
}

static const char *path_end(const char *p)
{
    while (!ends_path(*p))
        p++;
    return p;
}

typedef struct outbuf {
    char *s;
    size_t n, len;
} outbuf;

static void put(outbuf *o, const char *p, size_t k)
{
    for (size_t i = 0; i < k && o->len + 1 < o->n; i++)
        o->s[o->len++] = p[i];
    o->s[o->len] = '\0';
}

void mfs_errtext(const mfs_names_state *ns, const char *in, char *out, size_t n)
{
    if (n == 0)
        return;
    outbuf o = {out, n, 0};
    out[0] = '\0';
    const char *cache = ns->cache ? mfs_cache_dir(ns->cache) : NULL;
    const char *worker = ns->spawner ? mfs_spawner_path(ns->spawner) : mfs_worker_path();
    const char *src = ns->src && strcmp(ns->src, "/") ? ns->src : NULL;
    int in_cache_msg = 0; /* names inside the cache follow its directory */
    const char *p = in;
    while (*p) {
        size_t k;
        if (!starts_token(in, p)) {
            put(&o, p++, 1);
        } else if ((k = has_path(p, cache))) {
            /* "cache /var/cache/meshfs: writing ..." reads "cache: writing ..." */
            if (o.len >= 6 && !strcmp(o.s + o.len - 6, "cache "))
                o.s[--o.len] = '\0';
            else
                put(&o, "(cache)", 7);
            p = path_end(p + k);
            in_cache_msg = 1;
        } else if (in_cache_msg && (!strncmp(p, "tmp/", 4) || !strncmp(p, "v1/", 3) ||
                                   !strncmp(p, "v2/", 3))) {
            put(&o, "(cache)", 7); /* an entry or temporary file's own name */
            p = path_end(p);
        } else if ((k = has_path(p, worker))) {
            put(&o, "meshfs-worker", 13);
            p = path_end(p + k);
        } else if ((k = has_path(p, src))) {
            p += k;
            if (*p == '/')
                p++;
            else
                put(&o, ".", 1);
        } else {
            put(&o, p++, 1);
        }
    }
    /* the daemon's "cache: " before the cache's own "cache: " */
    char *dup;
    while ((dup = strstr(out, "cache: cache:")))
        memmove(dup, dup + 7, strlen(dup + 7) + 1);
}

static void fs_vlog(const mfs_names_state *ns, mfs_log_level level, const char *fmt, va_list ap)
{
    if (!mfs_log_enabled(level))
        return; /* info and debug lines are the common case: not built */
    char raw[1024], msg[1024];
    vsnprintf(raw, sizeof raw, fmt, ap);
    mfs_errtext(ns, raw, msg, sizeof msg); /* SRC-relative, no cache paths */
    mfs_log(level, "%s", msg);
}

void mfs_errtext_log(const mfs_names_state *ns, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fs_vlog(ns, MFS_LOG_WARNING, fmt, ap);
    va_end(ap);
}

void mfs_errtext_log_at(const mfs_names_state *ns, mfs_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fs_vlog(ns, level, fmt, ap);
    va_end(ap);
}

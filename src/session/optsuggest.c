/* The message for a refused -o option (optsuggest.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/formats.h"
#include "optsuggest.h"

/* The generic mount options libfuse takes (fuse_cmdline_help,
 * fuse_lowlevel_help, mount(8)'s), for suggesting only: libfuse, not this
 * list, decides what is accepted. */
static const char *const fuse_names[] = {
    "allow_other", "allow_root", "auto_unmount", "default_permissions", "max_threads=",
    "max_idle_threads=", "max_read=", "clone_fd", "debug", "fsname=", "subtype=", "ro", "rw",
    "nosuid", "suid", "nodev", "dev", "noexec", "exec", "noatime", "atime", "sync", "async",
    "dirsync", "blkdev", "blksize=", NULL,
};

/* Edits (insert, delete, change, swap two neighbours) from a to b:
 * "fromats" is one swap from "formats". */
static size_t distance(const char *a, size_t n, const char *b, size_t m)
{
    size_t *d = calloc((n + 1) * (m + 1), sizeof *d);
    if (!d)
        return (size_t)-1;
#define D(i, j) d[(i) * (m + 1) + (j)]
    for (size_t i = 0; i <= n; i++)
        D(i, 0) = i;
    for (size_t j = 0; j <= m; j++)
        D(0, j) = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = D(i - 1, j - 1) + (a[i - 1] != b[j - 1]);
            if (D(i - 1, j) + 1 < best)
                best = D(i - 1, j) + 1;
            if (D(i, j - 1) + 1 < best)
                best = D(i, j - 1) + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                D(i - 2, j - 2) + 1 < best)
                best = D(i - 2, j - 2) + 1;
            D(i, j) = best;
        }
    size_t r = D(n, m);
#undef D
    free(d);
    return r;
}

/* The name part of a template or an option: up to '=' ("formats"). */
static size_t name_len(const char *s)
{
    return strcspn(s, "=");
}

static void consider(const char *opt, const char *cand, const char **best, size_t *best_d,
                     size_t *best_n)
{
    if (cand[0] == '-')
        return; /* -h, --version: not an -o option */
    size_t n = name_len(cand), d = distance(opt, name_len(opt), cand, n);
    if (d < *best_d) {
        *best = cand;
        *best_d = d;
        *best_n = n;
    }
}

static void say_one(const char *opt, const char *const *known, const char *formats)
{
    unsigned fmts;
    mfs_err err;
    if (formats && !strchr(opt, '=') && mfs_format_parse_list(opt, &fmts, &err) == 0) {
        fprintf(stderr, "meshfs: unknown option -o %s: inside -o formats=, ':' or '+' separates "
                        "the formats (a comma ends the option): -o formats=%s:%s\n",
                opt, formats, opt);
        return;
    }
    const char *best = NULL;
    size_t best_d = (size_t)-1, best_n = 0;
    for (size_t i = 0; known[i]; i++)
        consider(opt, known[i], &best, &best_d, &best_n);
    for (size_t i = 0; fuse_names[i]; i++)
        consider(opt, fuse_names[i], &best, &best_d, &best_n);
    /* a third of the name wrong is a different word, not a typo */
    size_t len = name_len(opt), limit = len < 6 ? 1 : len / 3;
    if (best && best_d <= limit)
        fprintf(stderr, "meshfs: unknown option -o %s (did you mean %.*s%s?)\n", opt, (int)best_n,
                best, best[best_n] == '=' ? "=" : "");
    else
        fprintf(stderr, "meshfs: unknown option -o %s (meshfs --help lists the options)\n", opt);
}

/* The next option of a comma list, as libfuse splits it: "\\," is a comma
 * inside one (fsname=, SRC's path). */
static char *next_option(char **p)
{
    char *start = *p, *w = start;
    if (!*start)
        return NULL;
    for (char *r = start;; r++) {
        if (r[0] == '\\' && r[1]) {
            *w++ = *r++;
            *w++ = *r;
        } else if (*r == ',' || !*r) {
            *p = *r ? r + 1 : r;
            *w = '\0';
            return start;
        } else {
            *w++ = *r;
        }
    }
}

int mfs_unknown_options_say(int argc, char **argv, int (*refused)(const char *opt, void *ctx),
                            void *ctx, const char *const *known, const char *formats)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *list = NULL;
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            list = argv[++i];
        else if (!strncmp(argv[i], "-o", 2))
            list = argv[i] + 2;
        if (!list)
            continue; /* the mount point, -f: parsed before */
        char *copy = strdup(list), *p = copy, *o;
        while (copy && (o = next_option(&p)))
            if (*o && refused(o, ctx)) {
                say_one(o, known, formats);
                n++;
            }
        free(copy);
    }
    return n;
}

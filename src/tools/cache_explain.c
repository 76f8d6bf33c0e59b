/* meshfs-cache explain PATH...: what a model's views' keys are made of and
 * why a lookup would convert (include/meshfs/views.h, "explain"; docs/cache.md,
 * "Explain").
 *
 * Through a mount the daemon answers (user.meshfs.explain of a view: its
 * own options, cache and memo); a model there is explained through its
 * views, found by the naming rule's two forms (docs/naming.md).  A model in
 * a source folder is explained here, with the cache and the options given
 * as `meshfs-cache warm` takes them, which key views as a mount with the
 * same options does. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "cache_explain.h"
#include "meshfs/batch.h"
#include "meshfs/views.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/rules.h"
#include "meshfs/util.h"
#include "meshfs/spawner.h"

enum { EXIT_BAD = 1, EXIT_USAGE = 2, EXIT_CACHE = 3 };

static int usage(const char *fmt, const char *a)
{
    fprintf(stderr, "meshfs-cache: explain: ");
    fprintf(stderr, fmt, a);
    fputs("\nusage: meshfs-cache [--cache-dir DIR] [--json] explain [--src SRC] [-f FORMATS] [--importer I]\n"
          "         [--vrt-layout L] [--fmi-textures] [--reverse-winding] [--source-frame] [--fmd-raw] PATH...\n",
          stderr);
    return EXIT_USAGE;
}

/* The daemon's explanation of a view through a mount: 1 printed, 0 not a
 * view of a mount, -1 error said. */
static int from_mount(const char *path, int json)
{
    const char *name = json ? "user.meshfs.explain.json" : "user.meshfs.explain";
    ssize_t n = getxattr(path, name, NULL, 0);
    if (n < 0)
        return errno == ENODATA || errno == ENOTSUP || errno == ENOENT ? 0 : -1;
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return -1;
    n = getxattr(path, name, buf, (size_t)n);
    if (n >= 0)
        fwrite(buf, 1, (size_t)n, stdout);
    free(buf);
    return n < 0 ? -1 : 1;
}

/* The spawner explain asks which files are models: opened on first need
 * (a view explained through a mount needs none), closed at the end. */
typedef struct models {
    mfs_spawner *sp;
    int opened;
    mfs_err open_err; /* why it could not be opened, for every later ask */
} models;

/* The model extensions, or NULL with err (may be NULL). */
static const char *const *exts_of(models *m, mfs_err *err)
{
    if (!m->opened) {
        m->opened = 1;
        mfs_err_clear(&m->open_err);
        if (mfs_spawner_open(&m->sp, NULL, &m->open_err) < 0)
            m->sp = NULL;
    }
    if (!m->sp) {
        if (err)
            *err = m->open_err;
        return NULL;
    }
    return mfs_spawner_extensions(m->sp, err);
}

/* mfs_is_model_fn over exts_of */
static int is_model(void *m, const char *name)
{
    return mfs_model_name_in(exts_of(m, NULL), name);
}

/* A model through a mount: the views beside it under either form of its
 * base (stem, or the whole name when stems clash). */
static int model_in_mount(models *m, const char *path, int json)
{
    const char *slash = strrchr(path, '/');
    const char *file = slash ? slash + 1 : path;
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    size_t stem = mfs_name_stem_len(file);
    if (!is_model(m, file)) /* a .mtl beside crate.obj is not crate.obj */
        return 0;
    for (int form = 0; form < 2; form++)
        for (int f = 0; f < MFS_FMT_COUNT; f++) {
            char view[PATH_MAX];
            snprintf(view, sizeof view, "%.*s%.*s.%s", (int)dirlen, path, (int)(form ? strlen(file) : stem),
                     file, mfs_format_get((mfs_format)f)->name);
            int r = from_mount(view, json);
            if (r != 0)
                return r;
        }
    return 0;
}

/* The model's base in its folder by the naming rule, for its .fmi name. */
static int fmi_model_of(models *m, const char *src, const char *rel, char *out, size_t n)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(rel, '/');
    snprintf(dir, sizeof dir, "%s/%.*s", src, slash ? (int)(slash - rel) : 0, rel);
    const char *file = slash ? slash + 1 : rel;
    char base[PATH_MAX];
    /* the siblings decide whether the stem is enough */
    char **names = NULL;
    size_t nn = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
                continue;
            char **nv = realloc(names, sizeof *names * (nn + 1));
            if (!nv)
                break;
            names = nv;
            names[nn] = strdup(e->d_name);
            if (names[nn])
                nn++;
        }
        closedir(d);
    }
    int r = mfs_view_base(file, (const char *const *)names, nn, is_model, m, base, sizeof base);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    if (r < 0)
        return -1;
    snprintf(out, n, "%.*s%s%s", slash ? (int)(slash - rel) : 0, rel, slash ? "/" : "", base);
    return 0;
}

static int from_src(models *m, mfs_batch *b, const char *src_real, const char *path, int json)
{
    char real[PATH_MAX], fmi[PATH_MAX];
    struct stat st;
    if (!realpath(path, real) || stat(real, &st) < 0) {
        fprintf(stderr, "meshfs-cache: explain: %s: %s\n", path, strerror(errno));
        return EXIT_BAD;
    }
    size_t k = strlen(src_real);
    const char *slash = strrchr(real, '/');
    if (strncmp(real, src_real, k) || real[k] != '/' || !S_ISREG(st.st_mode) ||
        !is_model(m, slash ? slash + 1 : real)) {
        fprintf(stderr, "meshfs-cache: explain: %s: not a model file in %s (a view is explained through a mount)\n",
                path, src_real);
        return EXIT_BAD;
    }
    const char *rel = real + k + 1;
    if (fmi_model_of(m, src_real, rel, fmi, sizeof fmi) < 0) {
        fprintf(stderr, "meshfs-cache: explain: %s: gets no views (its view names would be too long)\n", path);
        return EXIT_BAD;
    }
    mfs_explain e;
    mfs_err err;
    mfs_err_clear(&err);
    int rc = mfs_batch_explain(b, src_real, rel, fmi, &e, &err);
    if (rc == 0)
        (json ? mfs_explain_print_json : mfs_explain_print)(stdout, &e);
    else
        fprintf(stderr, "meshfs-cache: explain: %s\n", err.msg);
    mfs_explain_free(&e);
    return rc == 0 ? 0 : EXIT_BAD;
}

int mfs_cache_explain_main(const char *cache_dir, int json, int argc, char **argv)
{
    mfs_batch_cfg cfg = {.cache_dir = cache_dir, .no_cap = 1, .formats = MFS_FMT_DEFAULT};
    models m = {.sp = NULL};
    mfs_options_default(&cfg.opts);
    mfs_limits_default(&cfg.limits);
    const char *src = NULL;
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    int npaths = 0;
    mfs_err err;
    mfs_err_clear(&err);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--src") || !strcmp(a, "-f") || !strcmp(a, "--formats") ||
                    !strcmp(a, "--importer") || !strcmp(a, "--vrt-layout");
        if (takes && !v)
            return free(paths), usage("%s: missing value", a);
        if (!strcmp(a, "--src"))
            src = v;
        else if (!strcmp(a, "-f") || !strcmp(a, "--formats")) {
            if (mfs_format_parse_list(v, &cfg.formats, &err) < 0)
                return free(paths), usage("--formats: %s", err.msg);
        } else if (!strcmp(a, "--importer")) {
            if (mfs_importer_parse(v, &cfg.opts.importer, &err) < 0)
                return free(paths), usage("--importer: %s", err.msg);
        } else if (!strcmp(a, "--vrt-layout")) {
            if (mfs_options_set_vrt_layout(&cfg.opts, v, &err) < 0)
                return free(paths), usage("--vrt-layout: %s", err.msg);
        } else if (!strcmp(a, "--fmi-textures"))
            cfg.opts.fmi_textures = 1;
        else if (!strcmp(a, "--reverse-winding"))
            cfg.opts.reverse_winding = 1;
        else if (!strcmp(a, "--source-frame"))
            cfg.opts.source_frame = 1;
        else if (!strcmp(a, "--fmd-raw"))
            cfg.opts.fmd_raw = 1;
        else if (a[0] == '-' && a[1])
            return free(paths), usage("unknown option '%s'", a);
        else
            paths[npaths++] = argv[i];
        i += takes;
    }
    if (!npaths)
        return free(paths), usage("%s", "missing PATH (a view or model through a mount, or a model with --src)");
    char src_real[PATH_MAX];
    if (src && !realpath(src, src_real))
        return free(paths), usage("--src %s: not a folder", src);
    int status = 0;
    mfs_batch *b = NULL;
    for (int i = 0; i < npaths; i++) {
        int r = from_mount(paths[i], json);
        if (r == 0)
            r = model_in_mount(&m, paths[i], json);
        if (r > 0)
            continue;
        if (r < 0) {
            fprintf(stderr, "meshfs-cache: explain: %s: %s\n", paths[i], strerror(errno));
            status = EXIT_BAD;
            continue;
        }
        if (!src) {
            fprintf(stderr, "meshfs-cache: explain: %s: not a view or model in a meshfs mount; for a model "
                            "in a source folder give --src SRC, the folder a mount shows\n",
                    paths[i]);
            status = EXIT_BAD;
            continue;
        }
        if (!b && (!exts_of(&m, &err) || mfs_batch_open(&cfg, &b, &err) < 0)) {
            fprintf(stderr, "meshfs-cache: explain: %s\n", err.msg);
            free(paths);
            mfs_spawner_close(m.sp);
            return EXIT_CACHE;
        }
        if (from_src(&m, b, src_real, paths[i], json))
            status = EXIT_BAD;
    }
    if (b)
        mfs_batch_close(b);
    mfs_spawner_close(m.sp);
    free(paths);
    return status;
}

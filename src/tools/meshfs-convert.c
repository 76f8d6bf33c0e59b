/* meshfs-convert: the mount's conversions in batch, without a mount.
 *
 * Every model is converted by its own meshfs-worker process (the same
 * mechanism the mount uses), so a model that crashes or hangs the importer
 * is reported as a failed file and the batch carries on. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/json.h"
#include "meshfs/naming.h"
#include "meshfs/optvalue.h"
#include "meshfs/sandbox.h"
#include "meshfs/worker.h"

#include "convert_lgepkg.h"

typedef struct item {
    char *root;      /* confinement root: the input folder, or a file's folder */
    char *model;     /* relative to root */
    char *outdir;    /* folder the views go to */
    char *base;      /* view base name within outdir */
    char *fmi_model; /* model path relative to the output root, for .fmi */
    char **warnings; /* naming notes about this model (docs/naming.md) */
    size_t nwarnings;
    mfs_report rep;
    int done_ok;
    char *pkg_tmp;   /* worker output kept for the package: views it needs
                        that --formats did not ask for (never left in OUTDIR) */
} item;

/* A naming note about an entry that is not a model (a folder or file that
 * --lowercase-names does not show): a report line of its own. */
typedef struct note {
    char *path;
    char *text;
} note;

typedef struct batch {
    item *v;
    size_t n, cap;
    const char *out_root;
    unsigned formats;
    mfs_options opts;
    mfs_limits limits;
    int lowercase_names;        /* write every output name in lowercase */
    note *notes;
    size_t nnotes;
    const char *lgepkg_name;    /* game_resources.lgepkg PackageHeader fields */
    const char *lgepkg_version;
    atomic_size_t next, finished;
    pthread_mutex_t lock;
    int tty, quiet;
} batch;

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "meshfs-convert: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(2);
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        die("%s", "out of memory");
    return d;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *d = malloc(n);
    if (!d)
        die("%s", "out of memory");
    if (!a[0])
        snprintf(d, n, "%s", b);
    else if (!b[0])
        snprintf(d, n, "%s", a);
    else
        snprintf(d, n, "%s/%s", a, b);
    return d;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entry names of a folder (sorted: batch order and output must not
 * depend on readdir order). */
static char **list_dir(const char *path, size_t *n)
{
    DIR *d = opendir(path);
    *n = 0;
    if (!d)
        return NULL;
    size_t cap = 16;
    char **v = malloc(cap * sizeof *v);
    struct dirent *e;
    while (v && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (*n == cap) {
            cap *= 2;
            char **nv = realloc(v, cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[(*n)++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (v)
        qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static item *new_item(batch *b, const char *root, const char *model)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->v = realloc(b->v, b->cap * sizeof *b->v);
        if (!b->v)
            die("%s", "out of memory");
    }
    item *it = &b->v[b->n++];
    memset(it, 0, sizeof *it);
    it->root = xstrdup(root);
    it->model = xstrdup(model);
    return it;
}

static void add_warning(item *it, const char *text)
{
    char **v = realloc(it->warnings, (it->nwarnings + 1) * sizeof *v);
    if (!v)
        die("%s", "out of memory");
    it->warnings = v;
    v[it->nwarnings++] = xstrdup(text);
}

/* A model the naming rule gives no views: listed as failed, with the
 * rule's reason, so the summary and exit status count it. */
static void refuse_item(item *it, const char *why)
{
    snprintf(it->rep.error, MFS_ERR_MAX, "not converted: %s", why ? why : "name clash");
    it->done_ok = -1;
}

static void add_note(batch *b, const char *path, const char *text)
{
    note *v = realloc(b->notes, (b->nnotes + 1) * sizeof *v);
    if (!v)
        die("%s", "out of memory");
    b->notes = v;
    v[b->nnotes++] = (note){xstrdup(path), xstrdup(text)};
}

/* A folder's names under the naming rule (include/meshfs/naming.h), the
 * same the mount shows: models are regular files, not links, as the mount
 * sees them.  force: an entry that counts as a model whatever it is (a
 * file named on the command line; then only its notes are printed, else
 * every note is, as a warning).
 * Returns the entries (caller frees), parallel to names. */
static mfs_name_entry *plan_folder(const batch *b, const char *path, char **names, size_t n,
                                   const char *force, mfs_names *p)
{
    mfs_name_entry *e = malloc((n ? n : 1) * sizeof *e);
    if (!e)
        die("%s", "out of memory");
    for (size_t i = 0; i < n; i++) {
        char *full = join(path, names[i]);
        struct stat st;
        int reg = lstat(full, &st) == 0 && S_ISREG(st.st_mode);
        e[i] = (mfs_name_entry){names[i], (reg && mfs_is_model_name(names[i])) ||
                                              (force && !strcmp(force, names[i]))};
        free(full);
    }
    if (mfs_names_plan(e, n, b->lowercase_names ? MFS_NAMES_LOWERCASE : 0, p) < 0)
        die("%s", "out of memory");
    for (size_t i = 0; i < p->nnotes; i++)
        if (!force || !strcmp(names[p->notes[i].entry], force)) /* a named file: its notes only */
            fprintf(stderr, "meshfs-convert: warning: %s: %s\n", path, p->notes[i].text);
    return e;
}

/* The text of entry i's note of that kind, or NULL. */
static const char *note_of(const mfs_names *p, size_t i, mfs_name_note_kind kind)
{
    for (size_t k = 0; k < p->nnotes; k++)
        if (p->notes[k].entry == i && p->notes[k].kind == kind)
            return p->notes[k].text;
    return NULL;
}

static const mfs_name_model *model_of(const mfs_names *p, size_t i)
{
    for (size_t k = 0; k < p->nmodels; k++)
        if (p->models[k].entry == i)
            return &p->models[k];
    return NULL;
}

/* Entry i of a planned folder, a model: an item with its view names, or
 * a refused one.  rel_dir is the model's folder under root, out_dir the
 * same folder as the output shows it. */
static void add_model(batch *b, const mfs_names *p, size_t i, const char *root, const char *rel_dir,
                      const char *out_dir, const char *name)
{
    char *model = join(rel_dir, name);
    item *it = new_item(b, root, model);
    free(model);
    it->outdir = join(b->out_root, out_dir);
    const mfs_name_model *m = model_of(p, i);
    if (!m) {
        const char *why = note_of(p, i, MFS_NOTE_CASE);
        refuse_item(it, why ? why : note_of(p, i, MFS_NOTE_NO_VIEWS));
        it->base = xstrdup(p->shown[i] ? p->shown[i] : name);
        it->fmi_model = join(out_dir, it->base);
        return;
    }
    it->base = xstrdup(m->base);
    it->fmi_model = join(out_dir, m->base);
    for (size_t k = 0; k < p->nnotes; k++)
        if (p->notes[k].entry == i)
            add_warning(it, p->notes[k].text);
}

/* Why a symbolic link to a folder is not followed, or NULL to follow it.
 * The mount shows every link as a link and never follows one itself;
 * through it, a link to a folder inside SRC leads to that folder's views,
 * one out of SRC leads out of the mount, where there are none
 * (docs/security.md, S2).  The walk does the same: it follows a link only
 * to a folder inside the input folder, and not to one it is already in. */
static const char *link_refusal(const char *root, const char *dir, const char *full)
{
    char rroot[PATH_MAX], rdir[PATH_MAX], rtarget[PATH_MAX];
    if (!realpath(root, rroot) || !realpath(dir, rdir) || !realpath(full, rtarget))
        return "symbolic link not followed: cannot resolve it";
    size_t n = strcmp(rroot, "/") ? strlen(rroot) : 0;
    if (strncmp(rtarget, rroot, n) != 0 || (rtarget[n] && rtarget[n] != '/'))
        return "symbolic link not followed: it leads out of the input folder";
    size_t t = strlen(rtarget);
    if (!strncmp(rdir, rtarget, t) && (rdir[t] == '\0' || rdir[t] == '/'))
        return "symbolic link not followed: it leads to a folder that contains it";
    return NULL;
}

static void walk(batch *b, const char *root, const char *rel_dir, const char *out_dir, int depth)
{
    char *path = join(root, rel_dir);
    size_t n;
    char **names = list_dir(path, &n);
    if (!names) {
        fprintf(stderr, "meshfs-convert: %s: %s\n", path, strerror(errno));
        free(path);
        return;
    }
    mfs_names p;
    mfs_name_entry *e = plan_folder(b, path, names, n, NULL, &p);
    for (size_t i = 0; i < n; i++) {
        if (names[i][0] == '.')
            continue; /* hidden files and our own temp dirs */
        char *full = join(path, names[i]);
        struct stat st;
        int link = lstat(full, &st) == 0 && S_ISLNK(st.st_mode);
        if (stat(full, &st) == 0) {
            const char *hidden = p.shown[i] ? NULL : note_of(&p, i, MFS_NOTE_CASE);
            const char *refused = link && S_ISDIR(st.st_mode) ? link_refusal(root, path, full) : NULL;
            if (refused) {
                fprintf(stderr, "meshfs-convert: warning: %s: %s\n", full, refused);
                add_note(b, full, refused);
            } else if (S_ISDIR(st.st_mode) && depth < 64) {
                if (hidden) {
                    add_note(b, full, hidden);
                } else {
                    char *sub = join(rel_dir, names[i]);
                    char *osub = join(out_dir, p.shown[i]);
                    walk(b, root, sub, osub, depth + 1);
                    free(sub);
                    free(osub);
                }
            } else if (e[i].is_model) {
                add_model(b, &p, i, root, rel_dir, out_dir, names[i]);
            } else if (hidden) {
                add_note(b, full, hidden);
            }
        }
        free(full);
    }
    mfs_names_free(&p);
    free(e);
    free_list(names, n);
    free(path);
}

static void add_input(batch *b, const char *in)
{
    struct stat st;
    if (stat(in, &st) < 0) {
        fprintf(stderr, "meshfs-convert: %s: %s\n", in, strerror(errno));
        /* still listed, so the summary and exit status count it */
        item *it = new_item(b, ".", in);
        it->outdir = xstrdup(b->out_root);
        it->base = xstrdup(in);
        it->fmi_model = xstrdup(in);
        snprintf(it->rep.error, MFS_ERR_MAX, "%s", strerror(errno));
        it->done_ok = -1;
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        walk(b, in, "", "", 0);
        return;
    }
    char *copy = xstrdup(in);
    char *slash = strrchr(copy, '/');
    const char *dir = ".", *name = copy;
    if (slash) {
        *slash = '\0';
        dir = copy[0] ? copy : "/";
        name = slash + 1;
    }
    size_t n;
    char **sib = list_dir(dir, &n);
    mfs_names p;
    free(plan_folder(b, dir, sib, n, name, &p));
    size_t i = 0;
    while (i < n && strcmp(sib[i], name))
        i++;
    if (i < n) {
        add_model(b, &p, i, dir, "", "", name);
    } else { /* the folder cannot be listed: named alone */
        item *it = new_item(b, dir, name);
        it->outdir = xstrdup(b->out_root);
        char base[NAME_MAX + 1];
        if (mfs_view_base(name, NULL, 0, mfs_is_model_name, base, sizeof base) < 0)
            die("name too long: %s", name);
        if (b->lowercase_names)
            mfs_name_lower(base);
        it->base = xstrdup(base);
        it->fmi_model = xstrdup(base);
    }
    mfs_names_free(&p);
    free_list(sib, n);
    free(copy);
}

static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* What each worker makes: the views asked for, plus the four a package
 * needs when packages are on. */
static unsigned job_formats(const batch *b)
{
    unsigned f = b->formats & MFS_FMT_ALL;
    if (b->formats & MFS_FMT_LGEPKG_BIT)
        f |= MFS_LGEPKG_NEEDS;
    return f;
}

/* Moves the worker's outputs to their final names; returns 1 if every
 * format made is in place.  A view made only for the package stays in tmp
 * (it->pkg_tmp) until the package is written. */
static int place_outputs(batch *b, item *it, const char *tmp)
{
    int all = it->rep.ok;
    int keep = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(job_formats(b) & (1u << f)))
            continue;
        const char *name = mfs_format_get((mfs_format)f)->name;
        char src[PATH_MAX], dst[PATH_MAX];
        snprintf(src, sizeof src, "%s/%s", tmp, name);
        snprintf(dst, sizeof dst, "%s/%s.%s", it->outdir, it->base, name);
        if (it->rep.ok && it->rep.fmt[f].ok && !(b->formats & (1u << f))) {
            keep = 1;
        } else if (it->rep.ok && it->rep.fmt[f].ok) {
            if (rename(src, dst) < 0) {
                snprintf(it->rep.fmt[f].error, MFS_ERR_MAX, "%s: %s", dst, strerror(errno));
                it->rep.fmt[f].ok = 0;
                all = 0;
            }
        } else {
            unlink(src);
            all = 0;
        }
    }
    if (keep)
        it->pkg_tmp = xstrdup(tmp);
    else
        rmdir(tmp);
    return all;
}

static void convert_item(batch *b, item *it)
{
    if (it->done_ok < 0)
        return;
    if (mkdirs(it->outdir) < 0) {
        snprintf(it->rep.error, MFS_ERR_MAX, "%s: %s", it->outdir, strerror(errno));
        return;
    }
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/.meshfs-XXXXXX", it->outdir);
    if (!mkdtemp(tmp)) {
        snprintf(it->rep.error, MFS_ERR_MAX, "%s: %s", it->outdir, strerror(errno));
        return;
    }
    mfs_job job = {.root = it->root, .model = it->model, .formats = job_formats(b), .opts = b->opts,
                   .outdir = tmp, .limits = b->limits};
    job.opts.model_path = it->fmi_model;
    mfs_err err;
    mfs_err_clear(&err);
    if (mfs_worker_convert(&job, &it->rep, &err) < 0) {
        snprintf(it->rep.error, MFS_ERR_MAX, "%s", err.msg);
        rmdir(tmp);
        return;
    }
    it->done_ok = place_outputs(b, it, tmp);
}

static const char *first_error(const batch *b, const item *it)
{
    if (!it->rep.ok)
        return it->rep.error;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((job_formats(b) & (1u << f)) && !it->rep.fmt[f].ok)
            return it->rep.fmt[f].error;
    return "";
}

/* Every output folder's game_resources.lgepkg, from the views just written
 * (convert_lgepkg.c); then the views made only for it are removed.
 * Returns the number of packages not written. */
static size_t write_packages(const batch *b)
{
    pkg_input *in = calloc(b->n ? b->n : 1, sizeof *in);
    char **paths = calloc(b->n * MFS_LGEPKG_CHUNKS + 1, sizeof *paths);
    char **srcdirs = calloc(b->n + 1, sizeof *srcdirs);
    if (!in || !paths || !srcdirs)
        die("%s", "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        const item *it = &b->v[i];
        if (it->done_ok < 0)
            continue; /* not a model with views (naming rule, missing input) */
        pkg_input *p = &in[n];
        char *slash = strrchr(it->model, '/');
        char *rel = slash ? strndup(it->model, (size_t)(slash - it->model)) : xstrdup("");
        srcdirs[n] = join(it->root, rel);
        free(rel);
        *p = (pkg_input){.outdir = it->outdir, .srcdir = srcdirs[n], .base = it->base,
                         .model = it->model, .why = first_error(b, it)};
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
            int f = mfs_lgepkg_formats[k];
            const char *ext = mfs_format_get((mfs_format)f)->name;
            if (!it->rep.ok || !it->rep.fmt[f].ok)
                continue;
            char path[PATH_MAX];
            if (b->formats & (1u << f))
                snprintf(path, sizeof path, "%s/%s.%s", it->outdir, it->base, ext);
            else
                snprintf(path, sizeof path, "%s/%s", it->pkg_tmp ? it->pkg_tmp : "", ext);
            p->view[k] = paths[n * MFS_LGEPKG_CHUNKS + k] = xstrdup(path);
        }
        n++;
    }
    size_t failed = mfs_convert_packages(in, n, b->lgepkg_name, b->lgepkg_version,
                                         b->lowercase_names, b->quiet ? NULL : stdout);
    for (size_t i = 0; i < b->n; i++) {
        const item *it = &b->v[i];
        if (!it->pkg_tmp)
            continue;
        for (int k = 0; k < MFS_LGEPKG_CHUNKS; k++) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", it->pkg_tmp,
                     mfs_format_get(mfs_lgepkg_formats[k])->name);
            unlink(path);
        }
        rmdir(it->pkg_tmp);
    }
    for (size_t i = 0; i < b->n * MFS_LGEPKG_CHUNKS; i++)
        free(paths[i]);
    for (size_t i = 0; i < n; i++)
        free(srcdirs[i]);
    free(paths);
    free(srcdirs);
    free(in);
    return failed;
}

static void progress(batch *b, const item *it)
{
    pthread_mutex_lock(&b->lock);
    size_t done = atomic_fetch_add(&b->finished, 1) + 1;
    if (b->tty) {
        int width = 30, fill = (int)(width * done / (b->n ? b->n : 1));
        fprintf(stderr, "\r\033[K[%.*s%*s] %zu/%zu %s", fill, "##############################",
                width - fill, "", done, b->n, it->model);
        if (done == b->n)
            fputc('\n', stderr);
    } else if (!b->quiet) {
        if (it->done_ok == 1)
            printf("ok %s/%s\n", strcmp(it->root, ".") ? it->root : "", it->model);
        else
            printf("FAILED %s/%s: %s\n", strcmp(it->root, ".") ? it->root : "", it->model, first_error(b, it));
        fflush(stdout);
    }
    pthread_mutex_unlock(&b->lock);
}

static void *worker_thread(void *arg)
{
    batch *b = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n)
            return NULL;
        convert_item(b, &b->v[i]);
        progress(b, &b->v[i]);
    }
}

static void write_report(const batch *b, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "meshfs-convert: %s: %s\n", path, strerror(errno));
        return;
    }
    for (size_t i = 0; i < b->n; i++) {
        const item *it = &b->v[i];
        const mfs_stats *st = &it->rep.stats;
        fputs("{\"model\":", f);
        mfs_json_str(f, it->model);
        fputs(",\"root\":", f);
        mfs_json_str(f, it->root);
        fprintf(f, ",\"ok\":%s,\"error\":", it->done_ok == 1 ? "true" : "false");
        mfs_json_str(f, first_error(b, it));
        fprintf(f, ",\"meshes\":%u,\"nodes\":%u,\"bones\":%u,\"animations\":%u,\"vertices\":%llu,"
                   "\"triangles\":%llu,\"faces\":%llu,\"placed_triangles\":%llu,\"placed_faces\":%llu,\"min\":[%.9g,%.9g,%.9g],\"max\":[%.9g,%.9g,%.9g],\"outputs\":{",
                st->meshes, st->nodes, st->bones, st->animations, (unsigned long long)st->vertices,
                (unsigned long long)st->triangles, (unsigned long long)st->faces,
                (unsigned long long)st->placed_triangles, (unsigned long long)st->placed_faces, st->min[0], st->min[1], st->min[2], st->max[0],
                st->max[1], st->max[2]);
        int first = 1;
        for (int fm = 0; fm < MFS_FMT_COUNT; fm++) {
            if (!(b->formats & (1u << fm)))
                continue;
            const char *name = mfs_format_get((mfs_format)fm)->name;
            fprintf(f, "%s\"%s\":{\"ok\":%s,\"size\":%llu,\"path\":", first ? "" : ",", name,
                    it->rep.fmt[fm].ok ? "true" : "false", (unsigned long long)it->rep.fmt[fm].size);
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s.%s", it->outdir, it->base, name);
            mfs_json_str(f, p);
            fputs(",\"error\":", f);
            mfs_json_str(f, it->rep.fmt[fm].error);
            fputs(",\"note\":", f); /* written, with a remark (.tex: why the fallback) */
            mfs_json_str(f, it->rep.fmt[fm].note);
            fputc('}', f);
            first = 0;
        }
        fputs("},\"deps\":[", f);
        for (uint32_t d = 0; d < it->rep.deps.n; d++) {
            if (d)
                fputc(',', f);
            mfs_json_str(f, it->rep.deps.v[d].path);
        }
        fputs("],\"warnings\":[", f);
        for (size_t w = 0; w < it->nwarnings; w++) {
            if (w)
                fputc(',', f);
            mfs_json_str(f, it->warnings[w]);
        }
        fputs("]}\n", f);
    }
    for (size_t i = 0; i < b->nnotes; i++) {
        fputs("{\"warning\":", f);
        mfs_json_str(f, b->notes[i].text);
        fputs(",\"path\":", f);
        mfs_json_str(f, b->notes[i].path);
        fputs("}\n", f);
    }
    fclose(f);
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
          "formats, mirroring the folder layout under OUTDIR (default: current folder).\n\n"
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
          "      --report FILE       write one JSON line per model\n"
          "  -q, --quiet             no per-model lines (failures still summarised)\n"
          "  -h, --help              this text\n"
          "  -V, --version           version\n"
          "Exit status: 0 if every model converted to every format, 1 otherwise, 2 on usage errors.\n",
          f);
}

static void parse_args(int argc, char **argv, batch *b, const char **report, int *jobs)
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
        {0, 0, 0, 0}};
    int c;
    mfs_err err;
    while ((c = getopt_long(argc, argv, "o:f:j:qhV", longs, NULL)) != -1) {
        switch (c) {
        case 'o': b->out_root = optarg; break;
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
            if (mfs_worker_user_set(optarg, &err) < 0)
                die("--worker-user: %s", err.msg);
            break;
        case 'q': b->quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("meshfs-convert %s\n", MESHFS_VERSION); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind >= argc) {
        usage(stderr);
        exit(2);
    }
    if (*jobs < 1)
        *jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (*jobs < 1)
        *jobs = 1;
    if (*jobs > MAX_JOBS)
        *jobs = MAX_JOBS;
}

int main(int argc, char **argv)
{
    batch b;
    memset(&b, 0, sizeof b);
    b.out_root = ".";
    b.formats = MFS_FMT_DEFAULT;
    b.lgepkg_name = "game_resources";
    b.lgepkg_version = "1.0";
    mfs_options_default(&b.opts);
    mfs_limits_default(&b.limits);
    pthread_mutex_init(&b.lock, NULL);
    const char *report = NULL;
    int jobs = 0;
    parse_args(argc, argv, &b, &report, &jobs);
    mfs_nofile_raise(); /* -j workers, each with its pipes and outputs */
    mfs_err err;
    if (!mfs_model_extensions(&err))
        die("%s", err.msg);
    const char *sandbox = mfs_worker_sandbox_warning();
    if (sandbox)
        fprintf(stderr, "meshfs-convert: %s\n", sandbox);
    b.tty = isatty(2) && !b.quiet;
    for (int i = optind; i < argc; i++)
        add_input(&b, argv[i]);

    pthread_t th[64];
    int nth = jobs > 64 ? 64 : jobs;
    for (int i = 0; i < nth; i++)
        pthread_create(&th[i], NULL, worker_thread, &b);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);

    size_t pkg_failed = b.formats & MFS_FMT_LGEPKG_BIT ? write_packages(&b) : 0;
    size_t failed = 0;
    for (size_t i = 0; i < b.n; i++)
        failed += b.v[i].done_ok != 1;
    if (report)
        write_report(&b, report);
    if (failed) {
        fprintf(stderr, "meshfs-convert: %zu of %zu models failed:\n", failed, b.n);
        for (size_t i = 0; i < b.n; i++)
            if (b.v[i].done_ok != 1)
                fprintf(stderr, "  %s/%s: %s\n", b.v[i].root, b.v[i].model, first_error(&b, &b.v[i]));
    } else if (!b.quiet) {
        fprintf(stderr, "meshfs-convert: %zu models converted\n", b.n);
    }
    for (size_t i = 0; i < b.n; i++) {
        item *it = &b.v[i];
        mfs_report_free(&it->rep);
        free(it->root);
        free(it->model);
        free(it->outdir);
        free(it->base);
        free(it->fmi_model);
        free(it->pkg_tmp);
        for (size_t w = 0; w < it->nwarnings; w++)
            free(it->warnings[w]);
        free(it->warnings);
    }
    free(b.v);
    for (size_t i = 0; i < b.nnotes; i++) {
        free(b.notes[i].path);
        free(b.notes[i].text);
    }
    free(b.notes);
    return failed || pkg_failed || b.n == 0 ? 1 : 0;
}

/* Which models a batch converts, under which names (include/meshfs/batch.h).
 *
 * Each folder's names go through the mount's rule (mfs_names_plan), so the
 * view names, the .fmi model= paths and with them the keys are the mount's.
 * Folders are walked in byte order of their names: the batch's order and
 * its output never depend on readdir order. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/batch.h"
#include "meshfs/rules.h"
#include "meshfs/spawner.h"

static void oom(void)
{
    fputs("out of memory\n", stderr);
    exit(2);
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        oom();
    return d;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *d = malloc(n);
    if (!d)
        oom();
    if (!a[0])
        snprintf(d, n, "%s", b);
    else if (!b[0])
        snprintf(d, n, "%s", a);
    else
        snprintf(d, n, "%s%s%s", a, a[strlen(a) - 1] == '/' ? "" : "/", b);
    return d;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

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
                oom();
            v = nv;
        }
        v[(*n)++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (!v)
        oom();
    qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void mfs_plan_init(mfs_plan *p, unsigned flags, const char *prog, FILE *warn,
                   const char *const *exts)
{
    memset(p, 0, sizeof *p);
    p->exts = exts;
    p->flags = flags;
    p->prog = prog;
    p->warn = warn;
}

void mfs_plan_skip_folder(mfs_plan *p, const char *path)
{
    struct stat st;
    p->skip_set = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    if (p->skip_set) {
        p->skip_dev = st.st_dev;
        p->skip_ino = st.st_ino;
    }
}

static int skipped(const mfs_plan *p, const struct stat *st)
{
    return p->skip_set && S_ISDIR(st->st_mode) && st->st_dev == p->skip_dev &&
           st->st_ino == p->skip_ino;
}

static void warn(const mfs_plan *p, const char *path, const char *text)
{
    if (!p->warn)
        return;
    char q[8192];
    fprintf(p->warn, "%s: warning: %s: %s\n", p->prog, mfs_batch_quote(path, q, sizeof q), text);
}

static mfs_plan_item *new_item(mfs_plan *p, const char *root, const char *model, const char *shown)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->v = realloc(p->v, p->cap * sizeof *p->v);
        if (!p->v)
            oom();
    }
    mfs_plan_item *it = &p->v[p->n++];
    memset(it, 0, sizeof *it);
    it->root = xstrdup(root);
    it->model = xstrdup(model);
    it->shown = xstrdup(shown);
    return it;
}

static void add_warning(mfs_plan_item *it, const char *text)
{
    char **v = realloc(it->warnings, (it->nwarnings + 1) * sizeof *v);
    if (!v)
        oom();
    it->warnings = v;
    v[it->nwarnings++] = xstrdup(text);
}

static void add_note(mfs_plan *p, const char *path, const char *text)
{
    mfs_plan_note *v = realloc(p->notes, (p->nnotes + 1) * sizeof *v);
    if (!v)
        oom();
    p->notes = v;
    v[p->nnotes++] = (mfs_plan_note){xstrdup(path), xstrdup(text)};
}

static void add_other(mfs_plan *p, mfs_plan_other_kind kind, const char *src, const char *dst,
                      const char *target)
{
    if (p->nother == p->other_cap) {
        p->other_cap = p->other_cap ? p->other_cap * 2 : 64;
        p->other = realloc(p->other, p->other_cap * sizeof *p->other);
        if (!p->other)
            oom();
    }
    p->other[p->nother++] = (mfs_plan_other){xstrdup(src), xstrdup(dst),
                                             target ? xstrdup(target) : NULL, kind};
}

/* A folder's names under the naming rule, the same the mount shows, with
 * each entry's model (models are regular files, not links, as the mount
 * sees them).  force: an entry that counts as a model whatever it is (a
 * file named on the command line that is not a model file by its name). */
struct mfs_plan_folder {
    char *path;
    char **names;         /* sorted by strcmp */
    size_t n;
    mfs_name_entry *e;
    mfs_names np;
    const mfs_name_model **model_at; /* per entry: its model, or NULL */
    size_t *note_at;      /* entry i's notes: np.notes[note_idx[note_at[i] ..
                             note_at[i + 1] - 1]], in the plan's order */
    size_t *note_idx;
};

static void folder_free(mfs_plan_folder *f)
{
    if (!f)
        return;
    mfs_names_free(&f->np);
    free(f->model_at);
    free(f->note_at);
    free(f->note_idx);
    free(f->e);
    free_list(f->names, f->n);
    free(f->path);
    free(f);
}

/* Entries' owners for the naming rule: their lstat's, or -1 (went away,
 * or a regular file with more than one link). */
/* mfs_is_model_fn over the plan's extensions */
static int is_model(void *exts, const char *name)
{
    return mfs_model_name_in(exts, name);
}

static int owner_of(void *ctx, size_t entry, unsigned long *uid)
{
    const long long *u = ctx;
    if (u[entry] < 0)
        return -1;
    *uid = (unsigned long)u[entry];
    return 0;
}

/* NULL with errno when the folder cannot be listed. */
static mfs_plan_folder *folder_plan(const mfs_plan *p, const char *path, const char *force)
{
    size_t n;
    char **names = list_dir(path, &n);
    if (!names)
        return NULL;
    mfs_plan_folder *f = calloc(1, sizeof *f);
    mfs_name_entry *e = malloc((n ? n : 1) * sizeof *e);
    const mfs_name_model **at = calloc(n ? n : 1, sizeof *at);
    long long *uid = malloc((n ? n : 1) * sizeof *uid);
    if (!f || !e || !at || !uid)
        oom();
    for (size_t i = 0; i < n; i++) {
        char *full = join(path, names[i]);
        struct stat st;
        int have = lstat(full, &st) == 0;
        int reg = have && S_ISREG(st.st_mode);
        /* a file with other links may hold bytes another user wrote
         * through one of them: its owner says nothing (docs/naming.md) */
        uid[i] = have && !(reg && st.st_nlink > 1) ? (long long)st.st_uid : -1;
        e[i] = (mfs_name_entry){names[i], (reg && mfs_model_name_in(p->exts, names[i])) ||
                                              (force && !strcmp(force, names[i]))};
        free(full);
    }
    if (mfs_names_plan(e, n, p->flags & MFS_PLAN_LOWERCASE ? MFS_NAMES_LOWERCASE : 0, owner_of, uid,
                       &f->np) < 0)
        oom();
    free(uid);
    for (size_t k = 0; k < f->np.nmodels; k++)
        at[f->np.models[k].entry] = &f->np.models[k];
    size_t nn = f->np.nnotes;
    f->note_at = calloc(n + 1, sizeof *f->note_at);
    f->note_idx = malloc((nn ? nn : 1) * sizeof *f->note_idx);
    if (!f->note_at || !f->note_idx)
        oom();
    for (size_t k = 0; k < nn; k++)
        f->note_at[f->np.notes[k].entry + 1]++;
    for (size_t i = 0; i < n; i++)
        f->note_at[i + 1] += f->note_at[i];
    size_t *fill = malloc((n ? n : 1) * sizeof *fill);
    if (!fill)
        oom();
    memcpy(fill, f->note_at, n * sizeof *fill);
    for (size_t k = 0; k < nn; k++) /* in the plan's order within an entry */
        f->note_idx[fill[f->np.notes[k].entry]++] = k;
    free(fill);
    f->path = xstrdup(path);
    f->names = names;
    f->n = n;
    f->e = e;
    f->model_at = at;
    return f;
}

/* The index of name among the folder's entries, or n. */
static size_t folder_find(const mfs_plan_folder *f, const char *name)
{
    char **hit = f->n ? bsearch(&name, f->names, f->n, sizeof *f->names, cmp_str) : NULL;
    return hit ? (size_t)(hit - f->names) : f->n;
}

/* The folder's naming notes as warnings: every one, or those about entry
 * `only` (a file named on the command line) when only < n. */
static void folder_warn(const mfs_plan *p, const mfs_plan_folder *f, size_t only)
{
    if (only >= f->n) {
        /* an OWNERS note comes once per entry it hides, the same text */
        for (size_t k = 0; k < f->np.nnotes; k++)
            if (k == 0 || strcmp(f->np.notes[k].text, f->np.notes[k - 1].text))
                warn(p, f->path, f->np.notes[k].text);
        return;
    }
    for (size_t k = f->note_at[only]; k < f->note_at[only + 1]; k++)
        warn(p, f->path, f->np.notes[f->note_idx[k]].text);
}

static const char *note_of(const mfs_plan_folder *f, size_t i, mfs_name_note_kind kind)
{
    for (size_t k = f->note_at[i]; k < f->note_at[i + 1]; k++)
        if (f->np.notes[f->note_idx[k]].kind == kind)
            return f->np.notes[f->note_idx[k]].text;
    return NULL;
}

/* Why entry i is not shown (lowercase_names), or NULL if it is. */
static const char *hidden_note(const mfs_plan_folder *f, size_t i)
{
    if (f->np.shown[i])
        return NULL;
    const char *why = note_of(f, i, MFS_NOTE_OWNERS);
    return why ? why : note_of(f, i, MFS_NOTE_CASE);
}

static void refuse(mfs_plan_item *it, const char *why)
{
    char buf[MFS_ERR_MAX];
    snprintf(buf, sizeof buf, "not converted: %s", why ? why : "name clash");
    it->refused = xstrdup(buf);
}

/* Entry i of a planned folder, a model: an item with its view names, or a
 * refused one.  rel_dir is the model's folder under root, out_dir the same
 * folder as the output shows it, shown_dir as the user gave it. */
static void add_model(mfs_plan *p, const mfs_plan_folder *f, size_t i, const char *root,
                      const char *rel_dir, const char *out_dir, const char *shown,
                      const char *name)
{
    const mfs_names *np = &f->np;
    char *model = join(rel_dir, name);
    mfs_plan_item *it = new_item(p, root, model, shown);
    free(model);
    it->outdir = xstrdup(out_dir);
    const mfs_name_model *m = f->model_at[i];
    if (!m) {
        const char *why = hidden_note(f, i);
        refuse(it, why ? why : note_of(f, i, MFS_NOTE_NO_VIEWS));
        it->base = xstrdup(np->shown[i] ? np->shown[i] : name);
        it->fmi_model = join(out_dir, it->base);
        return;
    }
    it->base = xstrdup(m->base);
    it->fmi_model = join(out_dir, m->base);
    for (size_t k = f->note_at[i]; k < f->note_at[i + 1]; k++)
        add_warning(it, np->notes[f->note_idx[k]].text);
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

/* A link as the mount shows it (src/mount/ops.c, mfs_ops_readlink): a relative
 * target lowercased under lowercase_names, since it is followed inside
 * the mount, where only lowercase names exist. */
static void copy_link(mfs_plan *p, const char *full, const char *dst)
{
    char target[PATH_MAX];
    ssize_t n = readlink(full, target, sizeof target - 1);
    if (n < 0) {
        warn(p, full, strerror(errno));
        return;
    }
    target[n] = '\0';
    if ((p->flags & MFS_PLAN_LOWERCASE) && target[0] != '/')
        mfs_name_lower(target);
    add_other(p, MFS_PLAN_LINK, full, dst, target);
}

/* Folders deeper than this under an input are not walked (a bound on the
 * recursion); each is said and counted, as a folder that cannot be listed
 * is, never dropped in silence. */
#define MAX_DEPTH 64

/* A folder's identity, for the folders a walk is in. */
typedef struct fid {
    dev_t dev;
    ino_t ino;
} fid;

static int walking(const fid *stack, int depth, const struct stat *st)
{
    for (int i = 0; i <= depth; i++)
        if (stack[i].dev == st->st_dev && stack[i].ino == st->st_ino)
            return 1;
    return 0;
}

/* A folder that cannot be listed is counted (its models would be missing
 * from a run that says all is well), except a file system's lost+found:
 * root's, mode 0700, at the top of many an asset volume, and never the
 * user's models. */
static int counts_unread(const char *path, int e)
{
    const char *slash = strrchr(path, '/');
    return !(e == EACCES && !strcmp(slash ? slash + 1 : path, "lost+found"));
}

static void walk(mfs_plan *p, const char *root, const char *rel_dir, const char *out_dir, int depth,
                 fid *stack)
{
    int mount_view = (p->flags & MFS_PLAN_MOUNT_VIEW) != 0;
    char *path = join(root, rel_dir);
    mfs_plan_folder *f = folder_plan(p, path, NULL);
    if (!f) {
        int e = errno;
        warn(p, path, strerror(e));
        add_note(p, path, strerror(e));
        p->unread += counts_unread(path, e);
        free(path);
        return;
    }
    if (mount_view)
        add_other(p, MFS_PLAN_DIR, path, out_dir, NULL);
    folder_warn(p, f, f->n);
    const mfs_names *np = &f->np;
    char **names = f->names;
    for (size_t i = 0; i < f->n; i++) {
        /* hidden names: the mount shows them; without --copy-other the
         * walk leaves them out (and its own temporary folders with them) */
        if (names[i][0] == '.' && !mount_view)
            continue;
        char *full = join(path, names[i]);
        const char *hidden = hidden_note(f, i);
        char *odst = np->shown[i] ? join(out_dir, np->shown[i]) : NULL;
        struct stat lst, st;
        int have = lstat(full, &lst) == 0;
        int link = have && S_ISLNK(lst.st_mode);
        if (link && mount_view) {
            if (hidden)
                add_note(p, full, hidden);
            else
                copy_link(p, full, odst); /* shown as a link, never followed */
        } else if (have && stat(full, &st) == 0 && !skipped(p, &st)) {
            /* (OUTDIR is skipped: what a run wrote is never an input) */
            const char *refused = link && S_ISDIR(st.st_mode) ? link_refusal(root, path, full) : NULL;
            /* links between sibling folders pass link_refusal and would
             * go round until the depth bound */
            if (!refused && S_ISDIR(st.st_mode) && walking(stack, depth, &st))
                refused = link ? "symbolic link not followed: it leads back to a folder this walk "
                                 "is in (a loop)"
                               : "not walked: it is a folder this walk is in (a loop)";
            if (refused) {
                warn(p, full, refused);
                add_note(p, full, refused);
            } else if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
                if (hidden) {
                    add_note(p, full, hidden);
                } else {
                    char *sub = join(rel_dir, names[i]);
                    stack[depth + 1] = (fid){st.st_dev, st.st_ino};
                    walk(p, root, sub, odst, depth + 1, stack);
                    free(sub);
                }
            } else if (S_ISDIR(st.st_mode) && !hidden) {
                static const char deep[] = "folders nested more than 64 deep are not walked";
                warn(p, full, deep);
                add_note(p, full, deep);
                p->unread++;
            } else if (f->e[i].is_model) {
                add_model(p, f, i, root, rel_dir, out_dir, full, names[i]);
            } else if (hidden) {
                add_note(p, full, hidden);
            } else if (mount_view && S_ISREG(st.st_mode)) {
                add_other(p, MFS_PLAN_FILE, full, odst, NULL);
            }
        }
        free(odst);
        free(full);
    }
    folder_free(f);
    free(path);
}

void mfs_plan_add_input(mfs_plan *p, const char *in)
{
    struct stat st;
    if (stat(in, &st) < 0) {
        char q[8192];
        int e = errno;
        if (p->warn)
            fprintf(p->warn, "%s: %s: %s\n", p->prog, mfs_batch_quote(in, q, sizeof q), strerror(e));
        /* still listed, so the summary and exit status count it */
        mfs_plan_item *it = new_item(p, ".", in, in);
        it->outdir = xstrdup("");
        it->base = xstrdup(in);
        it->fmi_model = xstrdup(in);
        it->refused = xstrdup(strerror(e));
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        fid stack[MAX_DEPTH + 1] = {{st.st_dev, st.st_ino}};
        walk(p, in, "", "", 0, stack);
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
    /* Files named one by one (a shell glob) mostly share a folder: it is
     * listed and planned once, not once a file. */
    if (!p->last || strcmp(p->last->path, dir)) {
        folder_free(p->last);
        p->last = folder_plan(p, dir, NULL);
    }
    mfs_plan_folder *f = p->last, *forced = NULL;
    size_t i = f ? folder_find(f, name) : 0;
    if (f && i < f->n && !f->e[i].is_model) {
        /* named, so a model whatever its name says; the folder's names
         * change with it, so this plan is not kept */
        forced = f = folder_plan(p, dir, name);
        i = f ? folder_find(f, name) : 0;
    }
    if (f && i < f->n) {
        folder_warn(p, f, i);
        add_model(p, f, i, dir, "", "", in, name);
    } else { /* the folder cannot be listed: named alone */
        mfs_plan_item *it = new_item(p, dir, name, in);
        it->outdir = xstrdup("");
        char base[NAME_MAX + 1];
        if (mfs_view_base(name, NULL, 0, is_model, (void *)p->exts, base, sizeof base) < 0)
            snprintf(base, sizeof base, "%.*s", NAME_MAX, name);
        if (p->flags & MFS_PLAN_LOWERCASE)
            mfs_name_lower(base);
        it->base = xstrdup(base);
        it->fmi_model = xstrdup(base);
    }
    folder_free(forced);
    free(copy);
}

void mfs_plan_item_clear(mfs_plan_item *it)
{
    free(it->root);
    free(it->model);
    free(it->shown);
    free(it->outdir);
    free(it->base);
    free(it->fmi_model);
    free(it->refused);
    for (size_t w = 0; w < it->nwarnings; w++)
        free(it->warnings[w]);
    free(it->warnings);
    memset(it, 0, sizeof *it);
}

void mfs_plan_free(mfs_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        mfs_plan_item_clear(&p->v[i]);
    free(p->v);
    for (size_t i = 0; i < p->nnotes; i++) {
        free(p->notes[i].path);
        free(p->notes[i].text);
    }
    free(p->notes);
    for (size_t i = 0; i < p->nother; i++) {
        free(p->other[i].src);
        free(p->other[i].dst);
        free(p->other[i].target);
    }
    free(p->other);
    folder_free(p->last);
    memset(p, 0, sizeof *p);
}

/* The naming rule of include/meshfs/rules.h (docs/naming.md).
 *
 * The mount and meshfs-convert must get the same names for the same folder
 * whatever order readdir returned, so everything is decided on sorted names
 * and a clash is resolved for all its parties at once (one round moves every
 * clashing short name to its long form together), never by who came first. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "meshfs/formats.h"
#include "meshfs/rules.h"

size_t mfs_name_stem_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name)
        return strlen(name);
    return (size_t)(dot - name);
}

char *mfs_name_lower(char *s)
{
    for (char *c = s; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c + ('a' - 'A'));
    return s;
}

int mfs_name_has_upper(const char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            return 1;
    return 0;
}

/* FGE draws these itself and opens no file for them (research/fmd.md,
 * "What FGE does with a converted file (measured)"). */
static const char *const builtin_names[] = {"cube", "cylinder", "sphere", "clear"};

int mfs_name_is_builtin(const char *base)
{
    for (size_t i = 0; i < sizeof builtin_names / sizeof *builtin_names; i++)
        if (strcasecmp(base, builtin_names[i]) == 0)
            return 1;
    return 0;
}

int mfs_name_warning(const char *base, char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    if (!mfs_name_is_builtin(base))
        return 0;
    return snprintf(buf, n,
                    "view name '%s' is an FGE built-in model name (cube, cylinder, sphere, clear): "
                    "FGE draws its own shape and never loads this file; rename the model",
                    base);
}

static char *fmt_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_text(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static int add_note(mfs_names *out, mfs_name_note_kind kind, size_t entry, char *text)
{
    if (!text)
        return -1;
    mfs_name_note *v = realloc(out->notes, (out->nnotes + 1) * sizeof *v);
    if (!v) {
        free(text);
        return -1;
    }
    out->notes = v;
    v[out->nnotes++] = (mfs_name_note){kind, entry, text};
    return 0;
}

/* ---- shown names ---- */

typedef struct work {
    const mfs_name_entry *e;
    size_t n;
    char **shown;       /* = out->shown */
    size_t *order;      /* entry indices in byte order of the real names */
    const char **real;  /* shown names, sorted: "is it a real entry?" */
    size_t nreal;
    mfs_names *out;
    mfs_name_owner_fn owner;
    void *owner_ctx;
    unsigned char *blocked; /* per entry: it stands for a collision of
                               owners, named but never shown */
} work;

/* qsort, but only when not in order already: a folder's entries come
 * sorted by name, and so, without clashes, do its models and bases (a
 * 20,000-model folder's first listing sorted them three times). */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const char *p = base;
    for (size_t i = 1; i < n; i++)
        if (cmp(p + (i - 1) * size, p + i * size) > 0) {
            qsort(base, n, size, cmp);
            return;
        }
}

/* qsort has no context argument; plans run under no lock, so the context
 * is per thread. */
static _Thread_local const work *cw;

static int cmp_real(const void *a, const void *b)
{
    return strcmp(cw->e[*(const size_t *)a].name, cw->e[*(const size_t *)b].name);
}

/* by shown name, then by real name */
static int cmp_shown(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int r = strcmp(cw->shown[x], cw->shown[y]);
    return r ? r : strcmp(cw->e[x].name, cw->e[y].name);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Do the entries by[i..j) (one lowercase name) have one owner?  uid[k]
 * gets by[i + k]'s, or -1 when it cannot be told, which no other matches. */
static int one_owner(const work *w, const size_t *by, size_t i, size_t j, long long *uid)
{
    int same = 1;
    for (size_t k = i; k < j; k++) {
        unsigned long u;
        uid[k - i] = w->owner && w->owner(w->owner_ctx, by[k], &u) == 0 ? (long long)u : -1;
        same &= uid[k - i] >= 0 && uid[k - i] == uid[0];
    }
    return !w->owner || same;
}

/* The note every entry of an owners' collision gets: all of them named,
 * with their owners, in byte order. */
static char *owners_text(const work *w, const size_t *by, size_t i, size_t j, const long long *uid)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    for (size_t k = i; k < j; k++) {
        fprintf(f, "%s'%s' (", k == i ? "" : k + 1 == j ? " and " : ", ", w->e[by[k]].name);
        if (uid[k - i] >= 0)
            fprintf(f, "uid %lld)", uid[k - i]);
        else
            fputs("owner unknown)", f);
    }
    fprintf(f, " are not shown: each is '%s' in lowercase and their owners differ", w->shown[by[i]]);
    return fclose(f) == 0 ? s : (free(s), NULL);
}

/* With lowercase, entries whose lowercase names are equal are shown once,
 * for the first in byte order of the real names, if they have one owner.
 * If not, none is: the first stays in the plan as a stand-in (blocked), so
 * that every other name comes out as with one owner, and is taken out at
 * the end. */
static int fold_names(work *w, unsigned flags)
{
    for (size_t i = 0; i < w->n; i++) {
        w->shown[i] = strdup(w->e[i].name);
        if (!w->shown[i])
            return -1;
        if (flags & MFS_NAMES_LOWERCASE)
            mfs_name_lower(w->shown[i]);
    }
    if (!(flags & MFS_NAMES_LOWERCASE) || w->n == 0)
        return 0;
    size_t *by = malloc(w->n * sizeof *by);
    long long *uid = malloc(w->n * sizeof *uid);
    if (!by || !uid) {
        free(by);
        free(uid);
        return -1;
    }
    memcpy(by, w->order, w->n * sizeof *by);
    cw = w;
    qsort(by, w->n, sizeof *by, cmp_shown);
    int rc = 0;
    for (size_t i = 0, j; i < w->n && rc == 0; i = j) {
        size_t win = by[i];
        for (j = i + 1; j < w->n && strcmp(w->shown[by[j]], w->shown[win]) == 0; j++)
            ;
        if (j - i == 1)
            continue;
        if (one_owner(w, by, i, j, uid)) {
            for (size_t k = i + 1; k < j && rc == 0; k++)
                rc = add_note(w->out, MFS_NOTE_CASE, by[k],
                              fmt_text("'%s' is not shown: '%s' is shown as '%s' (byte order wins)",
                                       w->e[by[k]].name, w->e[win].name, w->shown[win]));
        } else {
            w->blocked[win] = 1;
            for (size_t k = i; k < j && rc == 0; k++)
                rc = add_note(w->out, MFS_NOTE_OWNERS, by[k], owners_text(w, by, i, j, uid));
        }
        for (size_t k = i + 1; k < j; k++) {
            free(w->shown[by[k]]);
            w->shown[by[k]] = NULL;
        }
    }
    free(by);
    free(uid);
    /* notes in byte order of the entries they are about */
    return rc;
}

/* ---- entries that take a view's name by folding ---- */

/* A view base a model may take: its shown stem (short) or shown name (long). */
typedef struct vbase {
    const char *s;
    size_t len;
    size_t entry;
    int long_form;
} vbase;

static int cmp_vbase(const void *a, const void *b)
{
    const vbase *x = a, *y = b;
    int r = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    if (r || x->len != y->len)
        return r ? r : x->len < y->len ? -1 : 1;
    /* the same base: by model name, so a note names the same one whatever
     * order the folder came in (a key has no entry: its own name) */
    return cw && x->entry != (size_t)-1 && y->entry != (size_t)-1
               ? strcmp(cw->e[x->entry].name, cw->e[y->entry].name)
               : 0;
}

/* Would entry e be named like that view of model m without folding? */
static int same_unfolded(const work *w, size_t e, const vbase *m, const char *fmt)
{
    const char *real = w->e[m->entry].name, *er = w->e[e].name;
    size_t bl = m->long_form ? strlen(real) : mfs_name_stem_len(real);
    return strncmp(er, real, bl) == 0 && er[bl] == '.' && strcmp(er + bl + 1, fmt) == 0;
}

static int owners_differ(const work *w, size_t a, size_t b, long long *ua, long long *ub)
{
    unsigned long u;
    *ua = w->owner(w->owner_ctx, a, &u) == 0 ? (long long)u : -1;
    *ub = w->owner(w->owner_ctx, b, &u) == 0 ? (long long)u : -1;
    return *ua < 0 || *ub < 0 || *ua != *ub;
}

static char *uid_text(long long uid)
{
    return uid >= 0 ? fmt_text("uid %lld", uid) : strdup("owner unknown");
}

/* An entry whose lowercase name is "<base>.<fmt>" for a base another
 * owner's model may take, where only folding made the names meet
 * (`Ship.GMF` and the views of `ship.obj`, `ship.gmf` and those of
 * `Ship.obj`), is not shown either: the name is neither's.  As with
 * entries, it stays in the plan as a stand-in, so the model moves away
 * from the name as from any real file.  Only entries named like a view are
 * looked at, and owners are asked only of those that meet a model. */
static int fold_views(work *w)
{
    size_t cand = 0, nm = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (!w->shown[i] || w->blocked[i])
            continue;
        nm += w->e[i].is_model;
        for (int f = 0; f < MFS_FMT_COUNT && !cand; f++) {
            const char *fmt = mfs_format_get((mfs_format)f)->name;
            size_t l = strlen(w->shown[i]), fl = strlen(fmt);
            cand = l > fl + 1 && w->shown[i][l - fl - 1] == '.' && !strcmp(w->shown[i] + l - fl, fmt);
        }
    }
    if (!cand || !nm)
        return 0;
    vbase *b = malloc(2 * nm * sizeof *b);
    if (!b)
        return -1;
    size_t nb = 0;
    for (size_t i = 0; i < w->n; i++)
        if (w->shown[i] && !w->blocked[i] && w->e[i].is_model) {
            b[nb++] = (vbase){w->shown[i], mfs_name_stem_len(w->shown[i]), i, 0};
            b[nb++] = (vbase){w->shown[i], strlen(w->shown[i]), i, 1};
        }
    cw = w;
    qsort(b, nb, sizeof *b, cmp_vbase);
    int rc = 0;
    for (size_t oi = 0; oi < w->n && rc == 0; oi++) {
        size_t i = w->order[oi]; /* notes in byte order of the entries */
        const char *sh = w->shown[i];
        if (!sh || w->blocked[i])
            continue;
        size_t l = strlen(sh);
        for (int f = 0; f < MFS_FMT_COUNT && rc == 0 && !w->blocked[i]; f++) {
            const char *fmt = mfs_format_get((mfs_format)f)->name;
            size_t fl = strlen(fmt);
            if (l <= fl + 1 || sh[l - fl - 1] != '.' || strcmp(sh + l - fl, fmt))
                continue;
            vbase key = {sh, l - fl - 1, (size_t)-1, 0};
            vbase *hit = bsearch(&key, b, nb, sizeof *b, cmp_vbase);
            while (hit && hit > b && !cmp_vbase(hit - 1, &key))
                hit--;
            for (; hit && hit < b + nb && !cmp_vbase(hit, &key) && rc == 0; hit++) {
                long long ue, um;
                if (hit->entry == i || same_unfolded(w, i, hit, fmt) ||
                    !owners_differ(w, i, hit->entry, &ue, &um))
                    continue;
                char *a = uid_text(ue), *m = uid_text(um);
                rc = add_note(w->out, MFS_NOTE_OWNERS, i,
                              a && m ? fmt_text("'%s' (%s) is not shown: it is '%s' in lowercase, a view "
                                                "name of '%s' (%s), and their owners differ",
                                                w->e[i].name, a, sh, w->e[hit->entry].name, m)
                                     : NULL);
                free(a);
                free(m);
                w->blocked[i] = 1;
                break;
            }
        }
    }
    free(b);
    return rc;
}

/* The first real entry, in format order, named "<base>.<fmt>" for any
 * format meshfs knows (not only the enabled ones: names must not move with
 * -o formats), or NULL.  One search for the names that start "<base>.",
 * then their tails against the formats: a listing plans every model of a
 * folder, and a search a format was most of a 20,000-model folder's first
 * listing. */
static const char *real_view(const work *w, const char *base, size_t bl, char *buf, size_t n)
{
    size_t lo = 0, hi = w->nreal;
    while (lo < hi) { /* the first real name not below "<base>." */
        size_t mid = lo + (hi - lo) / 2;
        const char *r = w->real[mid];
        int c = strncmp(r, base, bl);
        if (c == 0)
            c = (unsigned char)r[bl] < (unsigned char)'.' ? -1 : 0;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int best = MFS_FMT_COUNT;
    for (size_t i = lo; i < w->nreal; i++) {
        const char *r = w->real[i];
        if (strncmp(r, base, bl) != 0 || r[bl] != '.')
            break;
        for (int f = 0; f < best; f++)
            if (!strcmp(r + bl + 1, mfs_format_get((mfs_format)f)->name))
                best = f;
    }
    if (best == MFS_FMT_COUNT)
        return NULL;
    snprintf(buf, n, "%.*s.%s", (int)bl, base, mfs_format_get((mfs_format)best)->name);
    return buf;
}

/* ---- view bases ---- */

enum { SHORT, LONG, GONE };

typedef struct cand {
    size_t entry;
    int state;
    size_t stem, len;   /* short and long base lengths within the shown name */
    char *why;          /* why it last moved */
} cand;

static _Thread_local const cand *cc;

static size_t base_len(const cand *c)
{
    return c->state == SHORT ? c->stem : c->len;
}

static int growable(const cand *c)
{
    return c->state == SHORT && c->stem != c->len;
}

/* by base, then by real name */
static int cmp_base(const void *a, const void *b)
{
    const cand *x = &cc[*(const size_t *)a], *y = &cc[*(const size_t *)b];
    size_t lx = base_len(x), ly = base_len(y);
    int r = memcmp(cw->shown[x->entry], cw->shown[y->entry], lx < ly ? lx : ly);
    if (r)
        return r;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return strcmp(cw->e[x->entry].name, cw->e[y->entry].name);
}

static int same_base(const work *w, const cand *x, const cand *y)
{
    size_t lx = base_len(x), ly = base_len(y);
    return lx == ly && memcmp(w->shown[x->entry], w->shown[y->entry], lx) == 0;
}

/* The longest view name a base of bl bytes makes: bl + '.' + the longest
 * format name. */
static size_t longest_view(size_t bl)
{
    size_t ext = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        size_t l = strlen(mfs_format_get((mfs_format)f)->name);
        ext = l > ext ? l : ext;
    }
    return bl + 1 + ext;
}

/* What x does this round: its next state, and why. */
static int decide(const work *w, const cand *c, const size_t *act, size_t na, size_t i, char **why)
{
    const cand *x = &c[act[i]];
    const char *base = w->shown[x->entry];
    size_t bl = base_len(x);
    if (longest_view(bl) > NAME_MAX) {
        /* no file system (nor the kernel's lookup beneath SRC) takes such a
         * name: listed, it could not be looked up cold nor copied */
        *why = fmt_text("its view names ('%.*s.<fmt>') would be longer than %d bytes", (int)bl,
                        base, NAME_MAX);
        return GONE;
    }
    char buf[4200];
    const char *rv = real_view(w, base, bl, buf, sizeof buf);
    /* the other models wanting the same base: neighbours in act */
    size_t lo = i, hi = i + 1;
    while (lo > 0 && same_base(w, &c[act[lo - 1]], x))
        lo--;
    while (hi < na && same_base(w, &c[act[hi]], x))
        hi++;
    if (!rv && hi - lo == 1)
        return x->state;
    const cand *other = &c[act[lo < i ? lo : i + 1 < hi ? i + 1 : i]]; /* first other, if any */
    int others_grow = 0;
    for (size_t j = lo; j < hi; j++)
        others_grow |= j != i && growable(&c[act[j]]);
    if (growable(x)) {
        *why = rv ? fmt_text("'%s' is a real file", rv)
                  : fmt_text("'%.*s' is also the view base of '%s'", (int)bl, base,
                             w->e[other->entry].name);
        return LONG;
    }
    if (rv) {
        *why = fmt_text("'%s' is a real file (a real file always wins)", rv);
        return GONE;
    }
    if (!others_grow && lo < i) {
        /* two names that cannot grow are alike: impossible while shown
         * names are distinct, but if so, byte order of the models decides */
        *why = fmt_text("'%.*s' is also the view name of '%s' (byte order wins)", (int)bl, base,
                        w->e[c[act[lo]].entry].name);
        return GONE;
    }
    return x->state; /* the others move away */
}

/* One round: every clashing model moves on at once.  Returns how many
 * moved, or -1 when out of memory. */
static int round_once(const work *w, cand *c, size_t nc, size_t *act, int *next, char **why)
{
    size_t na = 0;
    for (size_t i = 0; i < nc; i++)
        if (c[i].state != GONE)
            act[na++] = i;
    cw = w;
    cc = c;
    sort(act, na, sizeof *act, cmp_base);
    for (size_t i = 0; i < nc; i++) {
        next[i] = c[i].state;
        why[i] = NULL;
    }
    int oom = 0;
    for (size_t i = 0; i < na; i++) {
        next[act[i]] = decide(w, c, act, na, i, &why[act[i]]);
        oom |= next[act[i]] != c[act[i]].state && !why[act[i]];
    }
    int moved = 0;
    for (size_t i = 0; i < nc; i++) {
        if (next[i] != c[i].state) {
            c[i].state = next[i];
            free(c[i].why);
            c[i].why = why[i];
            moved++;
        } else {
            free(why[i]);
        }
    }
    return oom ? -1 : moved;
}

static int cmp_model_base(const void *a, const void *b)
{
    return strcmp(((const mfs_name_model *)a)->base, ((const mfs_name_model *)b)->base);
}

static int model_notes(mfs_names *out, const work *w, const cand *x, const mfs_name_model *m)
{
    const char *real = w->e[x->entry].name, *sh = w->shown[x->entry];
    if (!m)
        return add_note(out, MFS_NOTE_NO_VIEWS, x->entry,
                        fmt_text("'%s' gets no views: %s", real, x->why ? x->why : "name clash"));
    int rc = 0;
    if (m->long_form)
        rc = add_note(out, MFS_NOTE_LONG, x->entry,
                      fmt_text("views of '%s' are named '%s.<fmt>', not '%.*s.<fmt>': %s", real, m->base,
                               (int)x->stem, sh, x->why ? x->why : "name clash"));
    if (rc == 0 && m->builtin) {
        char text[512];
        mfs_name_warning(m->base, text, sizeof text);
        rc = add_note(out, MFS_NOTE_BUILTIN, x->entry, fmt_text("'%s': %s", real, text));
    }
    return rc;
}

static int name_models(work *w)
{
    size_t nc = 0;
    for (size_t i = 0; i < w->n; i++)
        nc += w->shown[i] && w->e[i].is_model;
    size_t cap = nc ? nc : 1;
    cand *c = calloc(cap, sizeof *c);
    size_t *act = malloc(cap * sizeof *act);
    int *next = malloc(cap * sizeof *next);
    char **why = malloc(cap * sizeof *why);
    mfs_names *out = w->out;
    out->models = calloc(cap, sizeof *out->models);
    int rc = c && act && next && why && out->models ? 0 : -1;
    size_t k = 0;
    for (size_t oi = 0; oi < w->n && rc == 0; oi++) {
        size_t i = w->order[oi];
        if (w->shown[i] && w->e[i].is_model)
            c[k++] = (cand){i, SHORT, mfs_name_stem_len(w->shown[i]), strlen(w->shown[i]), NULL};
    }
    int moved = 1;
    while (rc == 0 && moved > 0)
        if ((moved = round_once(w, c, nc, act, next, why)) < 0)
            rc = -1;
    /* notes and models in byte order of the model names */
    for (size_t i = 0; i < nc && rc == 0; i++) {
        const cand *x = &c[i];
        mfs_name_model *m = NULL;
        if (w->blocked[x->entry])
            continue; /* a stand-in: its OWNERS note says it all */
        if (x->state != GONE) {
            m = &out->models[out->nmodels];
            m->entry = x->entry;
            m->model = w->e[x->entry].name;
            m->long_form = x->state == LONG;
            m->base = strndup(w->shown[x->entry], base_len(x));
            if (!m->base) {
                rc = -1;
                break;
            }
            m->builtin = mfs_name_is_builtin(m->base);
            out->nmodels++;
        }
        rc = model_notes(out, w, x, m);
    }
    for (size_t i = 0; c && i < nc; i++)
        free(c[i].why);
    free(c);
    free(act);
    free(next);
    free(why);
    if (rc == 0)
        sort(out->models, out->nmodels, sizeof *out->models, cmp_model_base);
    return rc;
}

int mfs_names_plan(const mfs_name_entry *entries, size_t n, unsigned flags, mfs_name_owner_fn owner,
                   void *ctx, mfs_names *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = n ? n : 1;
    out->n = n;
    out->shown = calloc(cap, sizeof *out->shown);
    work w = {entries, n, out->shown, malloc(cap * sizeof(size_t)), malloc(cap * sizeof(char *)), 0, out,
              owner, ctx, calloc(cap, 1)};
    int rc = out->shown && w.order && w.real && w.blocked ? 0 : -1;
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            w.order[i] = i;
        cw = &w;
        sort(w.order, n, sizeof *w.order, cmp_real);
        rc = fold_names(&w, flags);
        if (rc == 0 && (flags & MFS_NAMES_LOWERCASE) && owner)
            rc = fold_views(&w);
    }
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            if (w.shown[i])
                w.real[w.nreal++] = w.shown[i];
        sort(w.real, w.nreal, sizeof *w.real, cmp_str);
        rc = name_models(&w);
    }
    /* the stand-ins go: their names are hidden, not shown */
    for (size_t i = 0; i < n && rc == 0; i++)
        if (w.blocked[i]) {
            char **h = realloc(out->hidden, (out->nhidden + 1) * sizeof *h);
            if (!h) {
                rc = -1;
                break;
            }
            out->hidden = h;
            h[out->nhidden++] = out->shown[i];
            out->shown[i] = NULL;
        }
    if (rc == 0)
        sort(out->hidden, out->nhidden, sizeof *out->hidden, cmp_str);
    free(w.order);
    free(w.real);
    free(w.blocked);
    if (rc < 0)
        mfs_names_free(out);
    return rc;
}

void mfs_names_free(mfs_names *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->shown && i < p->n; i++)
        free(p->shown[i]);
    free(p->shown);
    for (size_t i = 0; i < p->nmodels; i++)
        free(p->models[i].base);
    free(p->models);
    for (size_t i = 0; i < p->nnotes; i++)
        free(p->notes[i].text);
    free(p->notes);
    for (size_t i = 0; i < p->nhidden; i++)
        free(p->hidden[i]);
    free(p->hidden);
    memset(p, 0, sizeof *p);
}

const mfs_name_model *mfs_names_find_base(const mfs_names *p, const char *base)
{
    size_t lo = 0, hi = p->nmodels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(p->models[mid].base, base);
        if (r == 0)
            return &p->models[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int mfs_view_base(const char *model, const char *const *siblings, size_t n,
                  mfs_is_model_fn is_model, void *ctx, char *out, size_t outsz)
{
    mfs_name_entry *e = malloc((n + 1) * sizeof *e);
    if (!e)
        return -1;
    size_t k = 0, self = n;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(siblings[i], model) == 0)
            self = k;
        e[k] = (mfs_name_entry){siblings[i], self == k || is_model(ctx, siblings[i])};
        k++;
    }
    if (self == n) {
        self = k;
        e[k++] = (mfs_name_entry){model, 1};
    }
    mfs_names p;
    int rc = mfs_names_plan(e, k, 0, NULL, NULL, &p);
    if (rc == 0) {
        rc = -2;
        for (size_t i = 0; i < p.nmodels; i++) {
            if (p.models[i].entry != self)
                continue;
            size_t len = strlen(p.models[i].base);
            if (len + 1 > outsz) {
                rc = -1;
            } else {
                memcpy(out, p.models[i].base, len + 1);
                rc = p.models[i].long_form;
            }
        }
    }
    mfs_names_free(&p);
    free(e);
    return rc;
}

/* Inputs that overlap (include/meshfs/batch.h, mfs_plan_settle).
 *
 * meshfs-convert merges its inputs under one output folder, as
 * `cp -r IN1/. IN2/. OUT` does.  Two items with the same outdir/base write
 * the same view names; run in parallel, which one's bytes stay would
 * depend on the threads.  An item's view names are all derived from that one string
 * (fmi_model), so grouping by it finds every clash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "meshfs/batch.h"
#include "meshfs/err.h"

typedef struct {
    const mfs_plan_item *it;
    size_t at;
} slot;

static int by_names(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    int c = strcmp(x->it->fmi_model, y->it->fmi_model);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* Whether a and b name one file (a folder input and a file in it). */
static int same_file(const mfs_plan_item *a, const mfs_plan_item *b)
{
    char pa[8192], pb[8192];
    struct stat sa, sb;
    if (snprintf(pa, sizeof pa, "%s/%s", a->root, a->model) >= (int)sizeof pa ||
        snprintf(pb, sizeof pb, "%s/%s", b->root, b->model) >= (int)sizeof pb)
        return 0;
    return stat(pa, &sa) == 0 && stat(pb, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static void die_oom(void)
{
    fputs("out of memory\n", stderr);
    exit(2);
}

size_t mfs_plan_settle(mfs_plan *p)
{
    if (p->n < 2)
        return 0;
    slot *s = malloc(p->n * sizeof *s);
    unsigned char *drop = calloc(p->n, 1);
    if (!s || !drop)
        die_oom();
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        if (!p->v[i].refused) /* a refused item writes nothing */
            s[n++] = (slot){&p->v[i], i};
    qsort(s, n, sizeof *s, by_names);
    size_t refused = 0;
    for (size_t g = 0; g < n;) {
        size_t e = g + 1;
        while (e < n && !strcmp(s[e].it->fmi_model, s[g].it->fmi_model))
            e++;
        const mfs_plan_item *first = s[g].it;
        for (size_t k = g + 1; k < e; k++) {
            mfs_plan_item *it = &p->v[s[k].at];
            /* named again: once, at its first place (kept or refused) */
            size_t j = g;
            while (j < k && (drop[s[j].at] || !same_file(s[j].it, it)))
                j++;
            if (j < k) {
                drop[s[k].at] = 1;
                continue;
            }
            char q[4096], buf[MFS_ERR_MAX];
            snprintf(buf, sizeof buf,
                     "not converted: its views would have the names of %s's; convert the "
                     "two inputs into separate output folders",
                     mfs_batch_quote(first->shown, q, sizeof q));
            it->refused = strdup(buf);
            if (!it->refused)
                die_oom();
            refused++;
        }
        g = e;
    }
    size_t w = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (drop[i])
            mfs_plan_item_clear(&p->v[i]);
        else
            p->v[w++] = p->v[i];
    }
    p->n = w;
    free(s);
    free(drop);
    return refused;
}

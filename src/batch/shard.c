/* --shard K/N: which part of a tree one run of several converts
 * (include/meshfs/batch.h; docs/cache.md, "Sharding").
 *
 * A model belongs to shard XXH3-64(path) mod N + 1, path being its path
 * relative to the folder given (warm's SRC, meshfs-convert's INPUT): the
 * same bytes as in its keys, so shards split a tree the way its keys do,
 * and any tool can say which shard a path is in (XXH3-64 with seed 0 is
 * xxhsum -H3's, python's xxhash.xxh3_64_intdigest).  Nothing about the
 * machine, the order of a listing or the other models moves a model to
 * another shard, so N runs cover the tree once, in any order and on any
 * machines. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "meshfs/batch.h"

/* A whole number of at most 9 digits, nothing else: no sign, no space. */
static int whole(const char *s, size_t n, unsigned *out)
{
    if (n == 0 || n > 9)
        return -1;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int mfs_shard_parse(const char *option, const char *value, mfs_shard *out, mfs_err *err)
{
    const char *slash = value ? strchr(value, '/') : NULL;
    unsigned k, n;
    if (!slash || whole(value, (size_t)(slash - value), &k) < 0 ||
        whole(slash + 1, strlen(slash + 1), &n) < 0)
        return mfs_errf(err, "%s '%s': expected K/N, two whole numbers (shard K of N, K from 1 "
                             "to N), e.g. 2/8", option, value ? value : "");
    if (n < 1 || n > MFS_SHARD_MAX)
        return mfs_errf(err, "%s '%s': N must be from 1 to %u", option, value, MFS_SHARD_MAX);
    if (k < 1 || k > n)
        return mfs_errf(err, "%s '%s': K must be from 1 to N (here 1 to %u)", option, value, n);
    *out = (mfs_shard){k, n};
    return 0;
}

unsigned mfs_shard_of(const char *path, unsigned n)
{
    return n ? (unsigned)(XXH3_64bits(path, strlen(path)) % n) + 1 : 1;
}

int mfs_shard_has(const mfs_shard *s, const char *path)
{
    return !s || s->n == 0 || mfs_shard_of(path, s->n) == s->k;
}

size_t mfs_plan_keep(mfs_plan *p, int (*keep)(void *ctx, const mfs_plan_item *it), void *ctx)
{
    size_t had = p->n, k = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (keep(ctx, &p->v[i]))
            p->v[k++] = p->v[i];
        else
            mfs_plan_item_clear(&p->v[i]);
    }
    p->n = k;
    return had;
}

static int in_shard(void *ctx, const mfs_plan_item *it)
{
    return mfs_shard_has(ctx, it->model);
}

size_t mfs_plan_shard(mfs_plan *p, const mfs_shard *s)
{
    if (!s || s->n == 0)
        return p->n;
    return mfs_plan_keep(p, in_shard, (void *)s);
}

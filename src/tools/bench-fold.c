/* bench-fold: what the FBX chain fold (src/import/fbx_chain.c) costs, A/B in
 * one process.
 *
 * mfs_import copies assimp's scene into the neutral scene and then, for an
 * FBX, folds the pivot helper chains it asked assimp to keep.  This tool
 * imports MODEL once (meshfs's post-processing, pivots preserved), then
 * alternates, RUNS times each: A = the copy alone, B = the copy and the
 * fold, timing the fold call itself inside B.  On a model without helper
 * nodes the fold is one scan of the node names; scripts/bench-convert
 * records the figures in docs/benchmarks.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <assimp/cimport.h>
#include <assimp/config.h>
#include <assimp/scene.h>

#include "../import/convert_scene.h"
#include "../import/fbx_chain.h"
#include "meshfs/import.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One copy (and fold): seconds for the whole, and for the fold alone. */
static int one(const struct aiScene *ai, int fold, double *whole, double *fold_s)
{
    mfs_err err;
    mfs_err_clear(&err);
    double t0 = now();
    mfs_scene *s = mfs_from_aiscene(ai, &err);
    if (!s) {
        fprintf(stderr, "bench-fold: copying the scene: %s\n", err.msg);
        return -1;
    }
    double t1 = now();
    if (fold && mfs_fbx_fold_chains(s, &err) < 0) {
        fprintf(stderr, "bench-fold: folding: %s\n", err.msg);
        mfs_scene_free(s);
        return -1;
    }
    double t2 = now();
    *whole = t2 - t0;
    *fold_s = t2 - t1;
    mfs_scene_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 21;
    if (argc == 4 && !strcmp(argv[1], "--runs")) {
        runs = atoi(argv[2]);
        argv += 2;
        argc -= 2;
    }
    if (argc != 2 || runs < 1 || runs > 100000) {
        fprintf(stderr, "usage: bench-fold [--runs N] MODEL\n");
        return 2;
    }
    mfs_import_opts o = {.tangents = 1}; /* as a conversion that writes .gmf */
    struct aiPropertyStore *props = aiCreatePropertyStore();
    aiSetImportPropertyInteger(props, AI_CONFIG_IMPORT_FBX_PRESERVE_PIVOTS, 1);
    const struct aiScene *ai = aiImportFileExWithProperties(argv[1], mfs_import_ai_flags(&o), NULL, props);
    aiReleasePropertyStore(props);
    if (!ai) {
        fprintf(stderr, "bench-fold: %s: %s\n", argv[1], aiGetErrorString());
        return 1;
    }
    double *a = malloc(sizeof *a * (size_t)runs), *b = malloc(sizeof *b * (size_t)runs);
    double *f = malloc(sizeof *f * (size_t)runs);
    if (!a || !b || !f)
        return 1;
    int rc = 0;
    for (int i = 0; i < runs && rc == 0; i++) {
        double unused;
        /* alternate which goes first, so drift hits both alike */
        if (i % 2)
            rc = one(ai, 1, &b[i], &f[i]) < 0 || one(ai, 0, &a[i], &unused) < 0;
        else
            rc = one(ai, 0, &a[i], &unused) < 0 || one(ai, 1, &b[i], &f[i]) < 0;
    }
    if (rc == 0) {
        mfs_err err;
        mfs_scene *s = mfs_from_aiscene(ai, &err);
        unsigned helpers = 0, nodes = s ? s->n_nodes : 0;
        for (unsigned i = 0; s && i < s->n_nodes; i++)
            helpers += strstr(s->nodes[i].name, MFS_FBX_HELPER_MARK) != NULL;
        mfs_scene_free(s);
        double ma = median(a, runs), mb = median(b, runs), mf = median(f, runs);
        printf("nodes %u helpers %u runs %d\n", nodes, helpers, runs);
        printf("copy %.6f s\ncopy+fold %.6f s\nfold %.9f s\nratio %.4f\n", ma, mb, mf, mb / ma);
    }
    free(a);
    free(b);
    free(f);
    aiReleaseImport(ai);
    return rc;
}

/* Conversions in a separate worker process.
 *
 * assimp crashes, hangs and over-allocates on malformed input, so neither
 * meshfs-convert nor the mount daemon ever runs it in their own address
 * space.  Each conversion is one fresh `meshfs-worker` process (spawned,
 * never forked from a multithreaded parent) that imports the model once,
 * writes every requested format into a private output directory, and
 * reports back over a pipe with a small versioned message.  The parent
 * treats that message as untrusted input (src/convert/proto.c).
 */
#ifndef MESHFS_WORKER_H
#define MESHFS_WORKER_H

#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/options.h"

#define MFS_PROTO_MAGIC 0x5746534du /* "MSFW" little-endian */
#define MFS_PROTO_VERSION 3         /* 3: per-format note */
#define MFS_REPORT_FD 3             /* the worker writes its report here */
#define MFS_LIFELINE_FD 4           /* EOF here: the parent died, so must the worker */
#define MFS_PROTO_MAX (16u << 20)   /* no report is larger; bigger is hostile */

typedef struct mfs_limits {
    double timeout_s;        /* wall clock; SIGKILL past it (0 = none) */
    uint64_t memory;         /* RLIMIT_AS bytes (0 = none) */
    uint64_t output;         /* cap on each output file, bytes (0 = none) */
    uint64_t cpu_s;          /* RLIMIT_CPU seconds (0 = none) */
} mfs_limits;

void mfs_limits_default(mfs_limits *l);

typedef struct mfs_stats {
    uint32_t meshes, nodes, bones, animations, materials;
    uint64_t vertices, triangles;
    uint64_t faces;          /* all faces: triangles, lines and points */
    uint64_t placed_triangles; /* triangles at every node placing them (unplaced: once) */
    uint64_t placed_faces;   /* all faces (points, lines too) likewise: what a
                                placed .fmd stores */
    float min[3], max[3];    /* canonical model-space box of the triangles (zeros if none) */
} mfs_stats;

typedef struct mfs_fmt_result {
    int ok;                  /* output file written completely */
    int transient;           /* failed for the machine's sake (e.g. ENOSPC), not
                                the model's: not to be remembered as its failure */
    uint64_t size;
    char error[MFS_ERR_MAX];
    char note[MFS_ERR_MAX];  /* written, but with something to say that is not a
                                failure (.tex: why it is the white fallback);
                                "" if nothing */
} mfs_fmt_result;

/* What one conversion produced. */
typedef struct mfs_report {
    int ok;                  /* import succeeded (formats may still fail) */
    char error[MFS_ERR_MAX]; /* import failure reason */
    int transient;           /* the failure was not the model's (the worker was
                                killed from outside): set by the parent, never
                                read from the wire */
    mfs_deps deps;           /* every input read, model first */
    mfs_stats stats;
    unsigned formats;        /* mask of formats reported */
    mfs_fmt_result fmt[MFS_FMT_COUNT];
} mfs_report;

void mfs_report_free(mfs_report *r);

/* Wire format (both directions of trust live in proto.c). */
int mfs_report_encode(const mfs_report *r, uint8_t **buf, size_t *len);
int mfs_report_decode(const uint8_t *buf, size_t len, mfs_report *r, mfs_err *err);

typedef struct mfs_job {
    const char *root;        /* source root: nothing outside it is opened */
    const char *model;       /* model path relative to root */
    unsigned formats;        /* mask of mfs_format bits */
    mfs_options opts;
    const char *outdir;      /* existing private directory; outputs go to outdir/<fmt> */
    mfs_limits limits;
} mfs_job;

/* In the worker: import and write everything, fill the report.  Returns 0
 * when the report is meaningful (even if conversion failed). */
int mfs_job_run(const mfs_job *job, mfs_report *rep);

/* In a parent: spawns meshfs-worker for job, waits within the limits and
 * decodes its report.  A crash, timeout or garbled report becomes a failed
 * report whose error says which ("importer crashed: SIGSEGV", "import timed
 * out after 60 s", "out of memory").  Returns -1 only if the worker could
 * not be started at all. */
int mfs_worker_convert(const mfs_job *job, mfs_report *rep, mfs_err *err);

/* Path of the meshfs-worker executable: $MESHFS_WORKER, else next to the
 * running executable, else the install libexecdir. */
const char *mfs_worker_path(void);

/* Lower-case extensions (without dot) the worker's importer accepts, minus
 * the generic ones meshfs deliberately leaves alone (docs/import.md).
 * Asked of the worker once and cached; NULL-terminated. */
const char *const *mfs_model_extensions(mfs_err *err);

/* True if name's extension is in mfs_model_extensions(). */
int mfs_is_model_name(const char *name);

#endif

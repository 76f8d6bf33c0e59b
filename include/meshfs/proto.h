/* The worker's wire protocol: what one conversion reports to its parent.
 *
 * The worker (src/tools/meshfs-worker.c) writes one versioned message to
 * fd MFS_REPORT_FD and exits; the parent decodes it as untrusted input
 * (src/convert/proto.c: every length checked against the bytes left). */
#ifndef MESHFS_PROTO_H
#define MESHFS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "meshfs/err.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"

#define MFS_PROTO_MAGIC 0x5746534du /* "MSFW" little-endian */
#define MFS_PROTO_VERSION 9         /* 3: per-format note; 4: model_unopened; 5: route;
                                       6: dependency kind; 7: unkeyed;
                                       8: the kind's bit 7, mfs_dep.texture;
                                       9: repairs */
#define MFS_REPORT_FD 3             /* the worker writes its report here */
#define MFS_LIFELINE_FD 4           /* EOF here: the parent died, so must the worker */
#define MFS_PROTO_MAX (16u << 20)   /* no report is larger; bigger is hostile */

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
    char route[MFS_ERR_MAX]; /* which importer read the model, and why the native
                                one declined (mfs_import_route()): the mount
                                logs it at debug level */
    char repairs[MFS_ERR_MAX]; /* what the importer repaired to read the model
                                (mfs_scene.note: names made UTF-8, faces
                                dropped, ...), said once as a warning; "" if
                                nothing */
    int transient;           /* the failure was not the model's (the worker was
                                killed from outside): set by the parent, never
                                read from the wire */
    int outputs_lost;        /* an output file was removed or replaced from
                                outside during the run (the job folder's
                                contents removed with the cache's): set by the
                                parent, never read from the wire */
    uint64_t wall_ms;        /* the run's wall time: set by the parent, never
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

#endif

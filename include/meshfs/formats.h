/* The output formats and their writers.
 *
 * One writer per file in src/formats/, one page per format in docs/formats/.
 * A writer takes a validated scene in the canonical frame (scene.h), what
 * has been prepared from it (optional, below) and the options, writes its
 * whole output to the sink, and returns 0, or -1 with err set.  Writers are
 * pure: same scene and options give the same bytes, with or without the
 * prepared data. */
#ifndef MESHFS_FORMATS_H
#define MESHFS_FORMATS_H

#include "meshfs/err.h"
#include "meshfs/options.h"
#include "meshfs/scene.h"
#include "meshfs/util.h"

typedef enum mfs_format {
    MFS_FMT_FMD,
    MFS_FMT_FMI,
    MFS_FMT_GMF,
    MFS_FMT_DEM,
    MFS_FMT_VRT,
    MFS_FMT_TRI,
    MFS_FMT_SPH,
    MFS_FMT_TEX,
    MFS_FMT_COUNT
} mfs_format;

#define MFS_FMT_ALL ((1u << MFS_FMT_COUNT) - 1)

/* game_resources.lgepkg is not a per-model writer but one file per folder
 * (meshfs/lgepkg.h).  It has the bit after the writers' in a format mask;
 * MFS_FMT_ALL stays the per-model writers, the only ones a worker is asked
 * for.  The default is every view plus the package. */
#define MFS_FMT_LGEPKG_BIT (1u << MFS_FMT_COUNT)
#define MFS_FMT_DEFAULT (MFS_FMT_ALL | MFS_FMT_LGEPKG_BIT)

/* What several writers derive alike from one scene, made once per job and
 * passed to each writer of the job: today the merged model-space mesh behind
 * .vrt, .tri and .sph (src/formats/runtime.h), built by the first of them
 * to ask.  It lives with the job, not in a process-wide cache, so nothing
 * outlives the conversion and no writer needs to know which others run.
 * Writers may share it from several threads at once.  A writer given NULL
 * (a unit test, a one-off call) builds what it needs itself. */
typedef struct mfs_prepared mfs_prepared;

/* Prepared data for s, which must outlive it; nothing is built yet.  NULL
 * when out of memory: the writers then each build their own. */
mfs_prepared *mfs_prepared_new(const mfs_scene *s);
void mfs_prepared_free(mfs_prepared *p);

/* prep: made for s, or NULL. */
typedef int (*mfs_writer_fn)(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o,
                             mfs_sink *out, mfs_err *err);

typedef struct mfs_format_info {
    mfs_format id;
    const char *name;      /* "fmd": also the file extension */
    mfs_writer_fn write;
    unsigned options;      /* mfs_opt_bit set this writer reads */
    int reads_image;       /* reads scene->image (the texture), so its key
                              holds the texture search's inputs
                              (mfs_dep.texture) */
} mfs_format_info;

const mfs_format_info *mfs_format_get(mfs_format f);

/* By name or extension ("fmd", case-insensitive); NULL if unknown. */
const mfs_format_info *mfs_format_find(const char *name);

/* Parses "fmd,gmf,..." (or "fmd:gmf", "fmd+gmf": inside a mount's -o list
 * commas separate options) into a bit mask; -1 with err on an unknown name.
 * "lgepkg" sets MFS_FMT_LGEPKG_BIT, "all" means MFS_FMT_DEFAULT. */
int mfs_format_parse_list(const char *list, unsigned *mask, mfs_err *err);
/* The other way: "dem:gmf:lgepkg" (names in format order, lgepkg last)
 * into buf, cut to n like snprintf; what mfs_format_parse_list reads back. */
void mfs_format_list_text(unsigned mask, char *buf, size_t n);

/* The writers (src/formats/<name>.c). */
int mfs_write_fmd(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_fmi(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_gmf(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_dem(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_vrt(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_tri(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_sph(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);
int mfs_write_tex(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err);

#endif

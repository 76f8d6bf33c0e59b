/* Import settings kept beside the assets (issue 30, docs/settings.md).
 *
 * Two kinds of file, one INI syntax, parsed with inih:
 *   MODEL.meshfs   beside one model ("car.fbx.meshfs"), for that model;
 *   .meshfs        in a folder, for that folder and every folder below.
 * For a model at "a/b/car.fbx" (relative to SRC) the files that apply are,
 * farthest first: ".meshfs", "a/.meshfs", "a/b/.meshfs",
 * "a/b/car.fbx.meshfs".  A nearer file's key overrides a farther one's; the
 * mount's or command line's options stay the defaults beneath all of them.
 * Clips are one unit: the nearest file with any [clip] section gives all of
 * them.
 *
 * This module only reads text and merges values.  Where the files come from
 * is the caller's (the resolver's host reads them beneath SRC and records
 * every path it tried, found or absent, as an input of the model's views:
 * an edit, a new file or a removed one reconverts exactly those models).
 *
 * A file applies only when its owner is the model's owner or root: on a
 * shared machine a second user who can write into a folder must not steer
 * another user's conversion.  Such a file fails the model with an error
 * naming it and its owner (mfs_settings.foreign_owner set): never applied,
 * never ignored in silence.  The failure is not remembered against the
 * model's inputs, since an owner is not in a file's bytes and a chown alone
 * must bring the views back.
 *
 * Errors name the file, the line and the key ("a/.meshfs: line 3: key
 * 'scle': unknown key"); the caller fails the model's views with that text
 * rather than converting them with defaults. */
#ifndef MESHFS_SETTINGS_H
#define MESHFS_SETTINGS_H

#include <stddef.h>

struct mfs_err;

/* Bounds that keep a hostile file cheap to refuse. */
#define MFS_SETTINGS_MAX_BYTES (64 * 1024)
#define MFS_SETTINGS_MAX_LINE 199 /* inih's line buffer (INI_MAX_LINE - 1) */
#define MFS_SETTINGS_MAX_CLIPS 64
#define MFS_SETTINGS_NAME_MAX 64  /* clip and take names, with their NUL */
#define MFS_SETTINGS_PATH_MAX 200 /* texture= value, with its NUL */

/* The keys, one bit each (mfs_settings.set). */
enum mfs_setting {
    MFS_SET_SCALE = 1u << 0,
    MFS_SET_UP = 1u << 1,
    MFS_SET_FORWARD = 1u << 2,
    MFS_SET_FORMATS = 1u << 3,
    MFS_SET_NORMALS = 1u << 4,
    MFS_SET_TEXTURE = 1u << 5,
    MFS_SET_TAKE = 1u << 6,
    MFS_SET_FMI_TEXTURES = 1u << 7,
    MFS_SET_REVERSE_WINDING = 1u << 8,
    MFS_SET_SOURCE_FRAME = 1u << 9,
    MFS_SET_VRT_LAYOUT = 1u << 10,
    MFS_SET_FMD_RAW = 1u << 11,
    MFS_SET_IMPORTER = 1u << 12,
    MFS_SET_CLIPS = 1u << 13,
    MFS_SET_UNIT = 1u << 14,
};
#define MFS_SETTINGS_NKEYS 15

/* An axis: 0 = x, 1 = y, 2 = z; sign -1 or +1. */
typedef struct mfs_axis {
    int index;
    int sign;
} mfs_axis;

/* A clip boundary: a frame at the source's rate, or seconds ("1.2s"). */
typedef struct mfs_clip_time {
    double value;
    int seconds; /* 1: value is seconds; 0: a frame number */
} mfs_clip_time;

typedef struct mfs_clip {
    char name[MFS_SETTINGS_NAME_MAX];
    mfs_clip_time start, end;
    int loop;
} mfs_clip;

/* Where a key's value came from, for "show what applied". */
typedef struct mfs_setting_origin {
    char file[MFS_SETTINGS_PATH_MAX + 16]; /* SRC-relative path of the file */
    int line;
} mfs_setting_origin;

typedef struct mfs_settings {
    unsigned set; /* mfs_setting bits given by some file */
    /* The model as read (its file's own declarations applied) is turned so
     * that up is +y and forward +z, then multiplied by unit (metres per
     * unit: 0.01 for cm) and by scale. */
    double scale, unit;
    mfs_axis up, forward;
    unsigned formats;        /* mfs_format mask (mfs_format_parse_list) */
    int normals_compute;     /* 0: keep the file's normals */
    double normals_angle;    /* degrees, when computing */
    char texture[MFS_SETTINGS_PATH_MAX]; /* relative to the model's folder */
    char take[MFS_SETTINGS_NAME_MAX];
    int fmi_textures, reverse_winding, source_frame, vrt_plain, fmd_raw;
    int importer;            /* mfs_importer (meshfs/import.h) */
    size_t nclips;
    mfs_clip clips[MFS_SETTINGS_MAX_CLIPS];
    mfs_setting_origin origin[MFS_SETTINGS_NKEYS];
    /* set by mfs_settings_load when it failed on a file of another owner */
    int foreign_owner;
} mfs_settings;

void mfs_settings_init(mfs_settings *s);

/* Is name (a file name, no folder) a settings file: ".meshfs" or
 * "MODEL.meshfs"?  The mount hides them with hide_sources, like models. */
int mfs_settings_is_file(const char *name);

/* Parses one file's text (not NUL-terminated; len bytes) named name (for
 * errors and origins) into a fresh layer.  -1 with err "NAME: line N: key
 * 'K': reason" on anything malformed: an unknown key or section, a bad
 * value, a key given twice, a binary or oversized file, a line too long. */
int mfs_settings_parse(const char *name, const char *text, size_t len, mfs_settings *layer,
                       struct mfs_err *err);

/* Lays layer over s: every key layer sets replaces s's, with its origin;
 * clips replace clips as a whole. */
void mfs_settings_overlay(mfs_settings *s, const mfs_settings *layer);

/* Checks what only the merged result can break (up and forward on one
 * axis).  -1 with err naming the files that set them. */
int mfs_settings_check(const mfs_settings *s, struct mfs_err *err);

/* The paths that may hold settings for model_rel (SRC-relative, '/'
 * separated, no leading '/'), farthest first (no sidecar when its name would
 * be longer than 255 bytes: no file system holds one), written into paths[] as
 * pointers into buf.  Returns the count, or -1 when buf or paths is too
 * small (err says so). */
int mfs_settings_paths(const char *model_rel, char *buf, size_t bufsz, const char **paths,
                       int maxpaths, struct mfs_err *err);

/* Reads one candidate file for the loader: 0 with *text (malloc'd, the
 * caller frees) and *uid when it exists, 1 when it does not, -1 with err on
 * a failure to read (which fails the model: a file that may hold settings
 * and cannot be read is not treated as absent). */
typedef int (*mfs_settings_read_fn)(void *ctx, const char *rel, char **text, size_t *len,
                                    unsigned *uid, struct mfs_err *err);

/* A reader for files where they lie, beneath a folder: ctx points at the
 * folder's fd (an int).  Resolved as the importer resolves paths
 * (RESOLVE_BENEATH, no symlink at the end, no magic links); a FIFO or
 * anything else but a regular file is no file (never blocks).  For the
 * tools and the mount's explanations; the worker reads through its own
 * recording file system. */
int mfs_settings_read_beneath(void *ctx, const char *rel, char **text, size_t *len, unsigned *uid,
                              struct mfs_err *err);

/* Every candidate of model_rel read through fn, checked for its owner
 * (model_uid or root) and laid over out (which the caller has set up with
 * mfs_settings_init).  -1 with err on a malformed file, a file of another
 * owner (out->foreign_owner) or one that cannot be read. */
int mfs_settings_load(const char *model_rel, unsigned model_uid, mfs_settings_read_fn fn,
                      void *ctx, mfs_settings *out, struct mfs_err *err);

/* The failure of a view that `formats =` leaves out (docs/settings.md):
 * "not shown: FILE:LINE sets formats = ...".  The view is not listed and
 * answers ENOENT, as a view of a file without a mesh; meshfs-convert
 * writes none and counts no failure. */
#define MFS_SETTINGS_NOT_SHOWN "not shown: "
/* Whether a view's failure reason is that. */
int mfs_settings_not_shown(const char *reason);

/* Lays the per-format keys that s sets (fmi_textures, reverse_winding,
 * source_frame, vrt_layout, fmd_raw, importer) over the writers' options. */
struct mfs_options;
void mfs_settings_writer_options(const mfs_settings *s, struct mfs_options *o);

/* Canonical text of what decides the views' bytes (every key but formats=,
 * which decides only which views exist), for cache keys: equal settings give
 * equal text whichever files gave them.  Empty when nothing is set.  Returns
 * the length (truncated to n-1 like snprintf). */
size_t mfs_settings_key_text(const mfs_settings *s, char *buf, size_t n);

/* Human text of what applied and from where, one "key = value  (file:line)"
 * line per key, for meshfs-inspect and meshfs-cache explain. */
size_t mfs_settings_describe(const mfs_settings *s, char *buf, size_t n);

#endif

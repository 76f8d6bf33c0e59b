/* meshfs inspect: format dispatch, the shared reader helpers, sibling lookup
 * and summary output.  The format readers are in the other files here. */
#define MFS_INSPECT_READER
#include "meshfs/inspect.h"
#include "meshfs/json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/bytes.h"

/* Larger inputs are refused rather than read: no meshfs output comes near. */
#define MAX_FILE_BYTES ((uint64_t)2 << 30)

typedef enum kind {
    K_UNKNOWN,
    K_FMD,
    K_FMI,
    K_GMF,
    K_DEM,
    K_VRT,
    K_TRI,
    K_SPH,
    K_TEX,
    K_LGEPKG,
    K_LGE,
} kind;

static const char *const kind_names[] = {"", "fmd", "fmi", "gmf", "dem", "vrt", "tri", "sph", "tex", "lgepkg", "lge"};

/* ---- findings ---- */

static void add_warning(mfs_summary *s, const char *fmt, va_list ap)
{
    if (s->n_warnings < MFS_SUMMARY_MAX_WARN)
        vsnprintf(s->warnings[s->n_warnings], MFS_SUMMARY_WARN_LEN, fmt, ap);
    s->n_warnings++;
}

void mfs_rd_warn(mfs_rd *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_warning(r->sum, fmt, ap);
    va_end(ap);
}

void mfs_rd_violation(mfs_rd *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (r->check) {
        if (r->sum->n_violations == 0)
            vsnprintf(r->first_violation, sizeof r->first_violation, fmt, ap);
    } else {
        add_warning(r->sum, fmt, ap);
    }
    va_end(ap);
    r->sum->n_violations++;
}

void mfs_rd_mat_mul(float r[16], const float a[16], const float b[16])
{
    float t[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float s = 0.0f;
            for (int k = 0; k < 4; k++)
                s += a[i * 4 + k] * b[k * 4 + j];
            t[i * 4 + j] = s;
        }
    memcpy(r, t, sizeof t);
}

void mfs_rd_point(mfs_rd *r, const float p[3])
{
    mfs_summary *s = r->sum;
    if (!mfs_rd_finite3(p))
        return; /* reported by the reader; a NaN would poison the box */
    if (!s->has_bounds) {
        memcpy(s->min, p, sizeof s->min);
        memcpy(s->max, p, sizeof s->max);
        s->has_bounds = 1;
        return;
    }
    for (int i = 0; i < 3; i++) {
        if (p[i] < s->min[i])
            s->min[i] = p[i];
        if (p[i] > s->max[i])
            s->max[i] = p[i];
    }
}

int mfs_rd_finite3(const float p[3])
{
    return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
}

int mfs_rd_affine_row(float a, float b, float c, float d)
{
    const float eps = 1e-5f;
    return fabsf(a) <= eps && fabsf(b) <= eps && fabsf(c) <= eps && fabsf(d - 1.0f) <= eps;
}

int mfs_rd_normal_class(const float n[3], double *len)
{
    double l = sqrt((double)n[0] * n[0] + (double)n[1] * n[1] + (double)n[2] * n[2]);
    *len = l;
    if (n[0] == 0.0f && n[1] == 0.0f && n[2] == 0.0f)
        return 1;
    return fabs(l - 1.0) <= 1e-3 ? 0 : 2;
}

/* ---- cursor ---- */

int mfs_cur_need(mfs_rd *r, const mfs_cur *c, uint64_t bytes, const char *what)
{
    if (bytes <= mfs_cur_left(c))
        return 0;
    return mfs_errf(r->err, "offset %zu: %s needs %llu bytes but only %zu remain", c->off, what,
                    (unsigned long long)bytes, mfs_cur_left(c));
}

int mfs_cur_u32(mfs_rd *r, mfs_cur *c, uint32_t *v, const char *what)
{
    if (mfs_cur_need(r, c, 4, what))
        return -1;
    *v = mfs_ld_u32(c->p + c->off);
    c->off += 4;
    return 0;
}

int mfs_cur_i32(mfs_rd *r, mfs_cur *c, int32_t *v, const char *what)
{
    if (mfs_cur_need(r, c, 4, what))
        return -1;
    *v = mfs_ld_i32(c->p + c->off);
    c->off += 4;
    return 0;
}

int mfs_cur_count(mfs_rd *r, mfs_cur *c, uint64_t unit, const char *what, uint32_t *count)
{
    size_t at = c->off;
    int32_t v;
    if (mfs_cur_i32(r, c, &v, what))
        return -1;
    if (v < 0)
        return mfs_errf(r->err, "offset %zu: negative count of %s (%ld)", at, what, (long)v);
    /* v < 2^31 and unit is a small struct size: no overflow in 64 bits. */
    if ((uint64_t)v * unit > mfs_cur_left(c))
        return mfs_errf(r->err, "offset %zu: declares %ld %s but only %zu bytes remain", at,
                        (long)v, what, mfs_cur_left(c));
    *count = (uint32_t)v;
    return 0;
}

void mfs_cur_floats(mfs_cur *c, float *out, unsigned k)
{
    for (unsigned i = 0; i < k; i++)
        out[i] = mfs_ld_f32(c->p + c->off + 4 * i);
    c->off += 4 * (size_t)k;
}

int mfs_rd_grow(mfs_rd *r, void **arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / sz)
            return mfs_errf(r->err, "out of memory");
        n *= 2;
    }
    void *p = realloc(*arr, n * sz);
    if (!p)
        return mfs_errf(r->err, "out of memory (%zu bytes)", n * sz);
    *arr = p;
    *cap = n;
    return 0;
}

void mfs_rd_name(char *dst, size_t cap, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && s[i] && k + 1 < cap; i++)
        dst[k++] = s[i];
    dst[k] = '\0';
}

void mfs_rd_anim_name(mfs_rd *r, const char *s, size_t n)
{
    mfs_summary *sum = r->sum;
    if (sum->n_anim_names >= MFS_SUMMARY_MAX_ANIMS)
        return;
    mfs_rd_name(sum->anim_names[sum->n_anim_names++], MFS_SUMMARY_NAME_LEN, s, n);
}

/* ---- dispatch ---- */

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static const char *extension(const char *path)
{
    const char *d = strrchr(base_name(path), '.');
    return d ? d + 1 : "";
}

static kind kind_from_ext(const char *name)
{
    const char *e = extension(name);
    for (int k = K_FMD; k <= K_LGE; k++)
        if (strcasecmp(e, kind_names[k]) == 0)
            return (kind)k;
    if (strcasecmp(e, "mdl") == 0) /* Leadwerks 3/4: the same chunk format */
        return K_GMF;
    return K_UNKNOWN;
}

/* Only formats with a real signature; .vrt and .tri cannot be told apart
 * without their extension. */
static kind kind_from_magic(const uint8_t *p, size_t n)
{
    if (n >= 6 && (p[0] == 'F' || p[0] == 'V') && p[1] == 'M' && p[2] == 'D')
        return K_FMD;
    if (n >= 16 && mfs_ld_u32(p) == 1 && mfs_ld_u32(p + 8) == 4)
        return K_GMF;
    if (n >= 4 && memcmp(p, "DEM", 3) == 0 && (p[3] == ' ' || p[3] == '_'))
        return K_DEM;
    if (n >= 6 && memcmp(p, "model=", 6) == 0)
        return K_FMI;
    if (n >= 32 && mfs_ld_u32(p) >= 0xA0000000u && mfs_ld_u32(p) <= 0xA0000004u)
        return K_LGE; /* a MetaAppender ChunkType */
    return K_UNKNOWN;
}

/* cmin/cmax: the file-frame box mapped into the canonical frame.  A box maps
 * to a box because every mapping here only permutes and negates axes. */
static void canonical_box(kind k, mfs_summary *s)
{
    const float *lo = s->min, *hi = s->max;
    switch (k) {
    case K_GMF: /* left-handed, +Y up: negate z */
        s->cmin[0] = lo[0], s->cmin[1] = lo[1], s->cmin[2] = -hi[2];
        s->cmax[0] = hi[0], s->cmax[1] = hi[1], s->cmax[2] = -lo[2];
        break;
    case K_DEM: /* Blender right-handed Z-up: (x, y, z) -> (x, z, -y) */
    case K_FMD: /* FGE right-handed Z-up, the same turn (docs/formats/fmd.md) */
        s->cmin[0] = lo[0], s->cmin[1] = lo[2], s->cmin[2] = -hi[1];
        s->cmax[0] = hi[0], s->cmax[1] = hi[2], s->cmax[2] = -lo[1];
        break;
    default: /* vrt, tri, sph: stored in the canonical frame */
        memcpy(s->cmin, lo, sizeof s->cmin);
        memcpy(s->cmax, hi, sizeof s->cmax);
        break;
    }
}

static int run_reader(mfs_rd *r, kind k, const uint8_t *p, size_t n, const uint8_t *vrt,
                      size_t vrt_n, const char *vrt_name)
{
    switch (k) {
    case K_FMD: return mfs_read_fmd(r, p, n);
    case K_FMI: return mfs_read_fmi(r, p, n);
    case K_GMF: return mfs_read_gmf(r, p, n);
    case K_DEM: return mfs_read_dem(r, p, n);
    case K_VRT: return mfs_read_vrt(r, p, n);
    case K_TRI: return mfs_read_tri(r, p, n, vrt, vrt_n, vrt_name);
    case K_SPH: return mfs_read_sph(r, p, n, vrt, vrt_n, vrt_name);
    case K_TEX: return mfs_read_tex(r, p, n);
    case K_LGEPKG: return mfs_read_lgepkg(r, p, n);
    case K_LGE: return mfs_read_lge(r, p, n);
    default:
        return mfs_errf(r->err, "unknown format: no known extension "
                                "(fmd fmi gmf mdl dem vrt tri sph tex lgepkg lge) and no "
                                "recognised magic");
    }
}

static int inspect(const char *name, kind k, const uint8_t *p, size_t n, const uint8_t *vrt,
                   size_t vrt_n, const char *vrt_name, int check, mfs_summary *out,
                   mfs_err *err)
{
    mfs_err local;
    if (!err)
        err = &local;
    memset(out, 0, sizeof *out);
    mfs_err_clear(err);
    if (k == K_UNKNOWN)
        k = kind_from_magic(p, n);
    snprintf(out->format, sizeof out->format, "%s", kind_names[k]);

    /* .mdl and .gmf share the reader but not the loader (docs/inspect.md) */
    mfs_rd r = {.check = check, .mdl = strcasecmp(extension(name), "mdl") == 0,
                .sum = out, .err = err};
    int rc = run_reader(&r, k, p, n, vrt, vrt_n, vrt_name);
    if (out->has_bounds)
        canonical_box(k, out);
    if (rc == 0 && check && out->n_violations) {
        if (out->n_violations > 1)
            rc = mfs_errf(err, "%s (and %u more check failures)", r.first_violation,
                          out->n_violations - 1);
        else
            rc = mfs_errf(err, "%s", r.first_violation);
    }
    if (rc)
        mfs_err_prefix(err, "%s", name);
    return rc;
}

int mfs_inspect_buffer_with_vrt(const char *name, const uint8_t *data, size_t n,
                                const uint8_t *vrt, size_t vrt_n, int check,
                                mfs_summary *out, mfs_err *err)
{
    return inspect(name, kind_from_ext(name), data, n, vrt, vrt_n, "sibling .vrt", check, out,
                   err);
}

int mfs_inspect_buffer(const char *name, const uint8_t *data, size_t n, int check,
                       mfs_summary *out, mfs_err *err)
{
    return mfs_inspect_buffer_with_vrt(name, data, n, NULL, 0, check, out, err);
}

/* ---- files ---- */

/* Whole file into memory (*data non-NULL even when empty).  Returns 0, or
 * -1 with err set and *errnum the errno (ENOENT tells "missing"). */
static int slurp(const char *path, uint8_t **data, size_t *n, int *errnum, mfs_err *err)
{
    *data = NULL;
    *n = 0;
    *errnum = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *errnum = errno;
        return mfs_errf(err, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *errnum = S_ISDIR(st.st_mode) ? EISDIR : errno;
        close(fd);
        return mfs_errf(err, "not a regular file");
    }
    if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
        close(fd);
        *errnum = EFBIG;
        return mfs_errf(err, "file is %lld bytes; inspect reads at most %llu",
                        (long long)st.st_size, (unsigned long long)MAX_FILE_BYTES);
    }
    size_t size = (size_t)st.st_size, got = 0;
    /* Never NULL on success, so an empty sibling reads as present. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        *errnum = ENOMEM;
        return mfs_errf(err, "out of memory (%zu bytes)", size);
    }
    while (got < size) {
        ssize_t k = read(fd, buf + got, size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            *errnum = k < 0 ? errno : EIO;
            free(buf);
            close(fd);
            return mfs_errf(err, "read failed: %s", k < 0 ? strerror(errno) : "file shrank");
        }
        got += (size_t)k;
    }
    close(fd);
    *data = buf;
    *n = size;
    return 0;
}

/* path with its extension replaced by vrt (VRT if the extension is upper
 * case); "" if it does not fit. */
static void sibling_path(const char *path, char *out, size_t cap)
{
    const char *e = extension(path);
    size_t stem = (size_t)(e - path);
    const char *ext = (e[0] >= 'A' && e[0] <= 'Z') ? "VRT" : "vrt";
    if (stem + 4 > cap) {
        out[0] = '\0';
        return;
    }
    memcpy(out, path, stem);
    memcpy(out + stem, ext, 4);
}

int mfs_inspect_file(const char *path, int check, mfs_summary *out, mfs_err *err)
{
    mfs_err local;
    if (!err)
        err = &local;
    memset(out, 0, sizeof *out);
    uint8_t *data;
    size_t n;
    int errnum;
    if (slurp(path, &data, &n, &errnum, err))
        return mfs_err_prefix(err, "%s", path);

    kind k = kind_from_ext(path);
    uint8_t *vrt = NULL;
    size_t vrt_n = 0;
    char sib[sizeof out->sibling] = "";
    char sib_note[MFS_SUMMARY_WARN_LEN] = "";
    if (k == K_TRI || k == K_SPH) {
        sibling_path(path, sib, sizeof sib);
        mfs_err serr;
        /* A missing sibling is said by the reader; other failures here. */
        if (sib[0] && slurp(sib, &vrt, &vrt_n, &errnum, &serr) && errnum != ENOENT)
            snprintf(sib_note, sizeof sib_note, "sibling %s unreadable (%s): not checked "
                     "against it", base_name(sib), serr.msg);
    }
    int rc = inspect(path, k, data, n, vrt, vrt_n, sib[0] ? base_name(sib) : "sibling .vrt",
                     check, out, err);
    if (vrt)
        snprintf(out->sibling, sizeof out->sibling, "%s", sib);
    if (sib_note[0]) {
        /* Added after reading: inspect() starts from a cleared summary. */
        if (out->n_warnings < MFS_SUMMARY_MAX_WARN)
            snprintf(out->warnings[out->n_warnings], MFS_SUMMARY_WARN_LEN, "%s", sib_note);
        out->n_warnings++;
    }
    free(vrt);
    free(data);
    return rc;
}

/* ---- output ---- */


static void json_float(FILE *f, float v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", (double)v);
    else
        fputs("null", f);
}

static void json_vec(FILE *f, const char *key, int present, const float *v)
{
    fprintf(f, ",\"%s\":", key);
    if (!present) {
        fputs("null", f);
        return;
    }
    fputc('[', f);
    for (int i = 0; i < 3; i++) {
        if (i)
            fputc(',', f);
        json_float(f, v[i]);
    }
    fputc(']', f);
}

static unsigned kept_warnings(const mfs_summary *s)
{
    return s->n_warnings < MFS_SUMMARY_MAX_WARN ? s->n_warnings : MFS_SUMMARY_MAX_WARN;
}

void mfs_summary_json(FILE *f, const char *file, const mfs_summary *s, const char *error)
{
    fputs("{\"file\":", f);
    mfs_json_str(f, file);
    fprintf(f, ",\"ok\":%s,\"error\":", error ? "false" : "true");
    mfs_json_str(f, error);
    fputs(",\"format\":", f);
    mfs_json_str(f, s->format[0] ? s->format : NULL);
    fprintf(f, ",\"version\":%d,\"name\":", s->version);
    mfs_json_str(f, s->name);
    fprintf(f,
            ",\"meshes\":%llu,\"vertices\":%llu,\"triangles\":%llu,\"bones\":%llu,"
            "\"nodes\":%llu,\"animations\":%llu,\"animation_names\":[",
            (unsigned long long)s->meshes, (unsigned long long)s->vertices,
            (unsigned long long)s->triangles, (unsigned long long)s->bones,
            (unsigned long long)s->nodes, (unsigned long long)s->animations);
    for (unsigned i = 0; i < s->n_anim_names; i++) {
        if (i)
            fputc(',', f);
        mfs_json_str(f, s->anim_names[i]);
    }
    fputc(']', f);
    json_vec(f, "min", s->has_bounds, s->min);
    json_vec(f, "max", s->has_bounds, s->max);
    json_vec(f, "cmin", s->has_bounds, s->cmin);
    json_vec(f, "cmax", s->has_bounds, s->cmax);
    fputs(",\"sphere\":", f);
    if (s->has_sphere) {
        fputs("{\"center\":[", f);
        for (int i = 0; i < 3; i++) {
            if (i)
                fputc(',', f);
            json_float(f, s->center[i]);
        }
        fputs("],\"radius\":", f);
        json_float(f, s->radius);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputs(",\"sibling\":", f);
    mfs_json_str(f, s->sibling[0] ? s->sibling : NULL);
    fputs(",\"texture\":", f);
    if (s->has_texture)
        fprintf(f, "{\"width\":%ld,\"height\":%ld,\"depth\":%ld,\"gpu_format\":%u,"
                   "\"image_format\":%u}", (long)s->tex_width, (long)s->tex_height,
                (long)s->tex_depth, s->tex_gpu_format, s->tex_image_format);
    else
        fputs("null", f);
    fputs(",\"warnings\":[", f);
    for (unsigned i = 0; i < kept_warnings(s); i++) {
        if (i)
            fputc(',', f);
        mfs_json_str(f, s->warnings[i]);
    }
    fprintf(f, "],\"warnings_total\":%u,\"violations\":%u}\n", s->n_warnings,
            s->n_violations);
}

static void print_vec(FILE *f, const float *v)
{
    fprintf(f, "(%g %g %g)", (double)v[0], (double)v[1], (double)v[2]);
}

void mfs_summary_print(FILE *f, const char *file, const mfs_summary *s)
{
    fprintf(f, "%s: %s", file, s->format[0] ? s->format : "?");
    if (s->version)
        fprintf(f, " version %d", s->version);
    if (s->name[0])
        fprintf(f, " '%s'", s->name);
    fputc('\n', f);
    fprintf(f, "  meshes %llu, vertices %llu, triangles %llu, bones %llu, nodes %llu, "
               "animations %llu\n",
            (unsigned long long)s->meshes, (unsigned long long)s->vertices,
            (unsigned long long)s->triangles, (unsigned long long)s->bones,
            (unsigned long long)s->nodes, (unsigned long long)s->animations);
    if (s->n_anim_names) {
        fputs("  animation names:", f);
        for (unsigned i = 0; i < s->n_anim_names; i++)
            fprintf(f, " '%s'", s->anim_names[i]);
        fputc('\n', f);
    }
    if (s->has_bounds) {
        fputs("  bounds ", f);
        print_vec(f, s->min);
        fputs(" .. ", f);
        print_vec(f, s->max);
        fputs(", canonical ", f);
        print_vec(f, s->cmin);
        fputs(" .. ", f);
        print_vec(f, s->cmax);
        fputc('\n', f);
    }
    if (s->has_sphere) {
        fputs("  sphere centre ", f);
        print_vec(f, s->center);
        fprintf(f, " radius %g\n", (double)s->radius);
    }
    if (s->sibling[0])
        fprintf(f, "  checked against %s\n", s->sibling);
    if (s->has_texture)
        fprintf(f, "  texture %ldx%ld, %ld bytes per pixel, gpuFormat %u, imageFormat %u\n",
                (long)s->tex_width, (long)s->tex_height, (long)s->tex_depth, s->tex_gpu_format,
                s->tex_image_format);
    for (unsigned i = 0; i < kept_warnings(s); i++)
        fprintf(f, "  warning: %s\n", s->warnings[i]);
    if (s->n_warnings > MFS_SUMMARY_MAX_WARN)
        fprintf(f, "  (%u more warnings)\n", s->n_warnings - MFS_SUMMARY_MAX_WARN);
}

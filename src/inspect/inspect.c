/* meshfs inspect: which reader a file or buffer goes to (by extension, else
 * by magic), the file reading and sibling .vrt lookup around it.  The
 * readers are in the other files here (readers.h), their helpers in
 * reader.c, the summary output in summary.c. */
#include "meshfs/inspect.h"
#include "readers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/util.h"

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
    mfs_rd r;
    mfs_rd_begin(&r, out, check, err);
    /* .mdl and .gmf share the reader but not the loader (docs/inspect.md) */
    r.mdl = strcasecmp(extension(name), "mdl") == 0;
    if (k == K_UNKNOWN)
        k = kind_from_magic(p, n);
    snprintf(out->format, sizeof out->format, "%s", kind_names[k]);

    int rc = run_reader(&r, k, p, n, vrt, vrt_n, vrt_name);
    if (out->has_bounds)
        canonical_box(k, out);
    return mfs_rd_finish(&r, rc, name);
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
    /* A FIFO named x.gmf (or x.vrt beside an x.tri) would block the open
     * until a writer came: refused by its stat first.  Not O_NONBLOCK,
     * which would fail a regular file under a lease (a Samba oplock, an
     * NFS delegation) instead of waiting for it to be broken. */
    struct stat pre;
    if (stat(path, &pre) == 0 && !S_ISREG(pre.st_mode) && !S_ISDIR(pre.st_mode)) {
        *errnum = EINVAL;
        return mfs_errf(err, "not a regular file");
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *errnum = errno;
        return mfs_errf(err, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *errnum = errno;
        close(fd);
        return mfs_errf(err, "cannot stat: %s", strerror(*errnum));
    }
    if (!S_ISREG(st.st_mode)) {
        /* not errno, which a successful fstat leaves as it was (ENOENT
         * would tell a FIFO sibling "missing") */
        *errnum = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
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

#include <ctype.h>
#include <stdio.h>
#include <strings.h>

#include "meshfs/formats.h"

static const mfs_format_info formats[MFS_FMT_COUNT] = {
    {MFS_FMT_FMD, "fmd", mfs_write_fmd, MFS_OPT_FMD_RAW | MFS_OPT_SOURCE_FRAME, 0},
    {MFS_FMT_FMI, "fmi", mfs_write_fmi,
     MFS_OPT_FMI_TEXTURES | MFS_OPT_MODEL_PATH | MFS_OPT_SOURCE_FRAME, 0},
    {MFS_FMT_GMF, "gmf", mfs_write_gmf, MFS_OPT_SOURCE_FRAME, 0},
    {MFS_FMT_DEM, "dem", mfs_write_dem, MFS_OPT_MODEL_PATH | MFS_OPT_SOURCE_FRAME, 0},
    {MFS_FMT_VRT, "vrt", mfs_write_vrt, MFS_OPT_VRT_PLAIN | MFS_OPT_SOURCE_FRAME, 0},
    {MFS_FMT_TRI, "tri", mfs_write_tri,
     MFS_OPT_REVERSE_WINDING | MFS_OPT_VRT_PLAIN | MFS_OPT_SOURCE_FRAME, 0},
    {MFS_FMT_SPH, "sph", mfs_write_sph, MFS_OPT_SOURCE_FRAME, 0},
    {MFS_FMT_TEX, "tex", mfs_write_tex, 0, 1},
};

const mfs_format_info *mfs_format_get(mfs_format f)
{
    if ((unsigned)f >= MFS_FMT_COUNT)
        return NULL;
    return &formats[f];
}

const mfs_format_info *mfs_format_find(const char *name)
{
    if (name && name[0] == '.')
        name++;
    for (int i = 0; i < MFS_FMT_COUNT; i++)
        if (name && strcasecmp(name, formats[i].name) == 0)
            return &formats[i];
    return NULL;
}

void mfs_format_list_text(unsigned mask, char *buf, size_t n)
{
    size_t at = 0;
    if (n)
        buf[0] = '\0';
    for (int f = 0; f <= MFS_FMT_COUNT && at < n; f++) {
        unsigned bit = f < MFS_FMT_COUNT ? 1u << f : MFS_FMT_LGEPKG_BIT;
        if (mask & bit)
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ":" : "",
                                   f < MFS_FMT_COUNT ? formats[f].name : "lgepkg");
    }
}

int mfs_format_parse_list(const char *list, unsigned *mask, mfs_err *err)
{
    *mask = 0;
    const char *p = list;
    while (p && *p) {
        /* ',' on the command line; ':' or '+' inside -o, where commas
         * separate mount options */
        const char *e = p;
        while (*e && *e != ',' && *e != ':' && *e != '+')
            e++;
        char name[16];
        size_t n = (size_t)(e - p);
        if (n == 0 || n >= sizeof name) {
            if (n)
                return mfs_errf(err, "unknown format '%.*s'", (int)n, p);
        } else {
            memcpy(name, p, n);
            name[n] = '\0';
            if (strcasecmp(name, "all") == 0) {
                *mask |= MFS_FMT_DEFAULT;
            } else if (strcasecmp(name, "lgepkg") == 0 || strcasecmp(name, ".lgepkg") == 0) {
                *mask |= MFS_FMT_LGEPKG_BIT;
            } else {
                const mfs_format_info *f = mfs_format_find(name);
                if (!f)
                    return mfs_errf(err, "unknown format '%s' (known: fmd,fmi,gmf,dem,vrt,tri,sph,tex,lgepkg,all)",
                                    name);
                *mask |= 1u << f->id;
            }
        }
        p = *e ? e + 1 : e;
    }
    if (!*mask)
        return mfs_errf(err, "no format selected");
    return 0;
}

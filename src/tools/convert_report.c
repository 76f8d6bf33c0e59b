/* meshfs-convert's --report: what each model became, as JSON
 * (convert_batch.h; docs/man/meshfs-convert.1). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meshfs/batch.h"
#include "meshfs/formats.h"
#include "meshfs/import.h"
#include "meshfs/settings.h"
#include "meshfs/util.h"
#include "meshfs/worker.h"

#include "convert_batch.h"

/* What each model's views are resolved for: those asked for, plus the four
 * a package needs when packages are on. */
unsigned job_formats(const batch *b)
{
    return mfs_batch_views(b->engine);
}

const char *first_error(const batch *b, const item *it)
{
    if (!it->rep.ok)
        return it->rep.error;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        if ((job_formats(b) & (1u << f)) && !it->rep.fmt[f].ok &&
            !mfs_settings_not_shown(it->rep.fmt[f].error))
            return it->rep.fmt[f].error;
    return "";
}

/* --report FILE, opened before any conversion (once the cache is open,
 * so that a run that cannot start leaves an earlier report alone): a
 * path that cannot be written is a usage error then, not a message after
 * a long run that still exited 0.  Its folder is made as OUTDIR's are,
 * so a report inside an OUTDIR not made yet (-o build --report
 * build/r.json) works as it did when it was written last.  A regular
 * file (or a new one) is written to a temporary name beside it and
 * renamed over it once complete, as the views are: a report that could
 * not be written whole (a full disk) leaves the earlier one, not a torn
 * one.  Anything else (/dev/stdout, a FIFO, a link) is written in place.
 * NULL (said) if it cannot be opened. */
static int report_tmp(const char *path, report_out *r)
{
    const char *slash = strrchr(path, '/');
    if (snprintf(r->tmp, sizeof r->tmp, "%.*s.meshfs-tmp-XXXXXX", slash ? (int)(slash - path + 1) : 0,
                 path) >= (int)sizeof r->tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mfs_batch_mkstemp(r->tmp);
    if (fd < 0)
        return -1;
    if (fchmod(fd, mfs_batch_file_mode()) < 0 || !(r->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(r->tmp);
        mfs_batch_tmp_forget(r->tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int open_report(const char *path, report_out *r)
{
    r->tmp[0] = '\0';
    r->f = NULL;
    size_t len = strlen(path);
    /* what fopen refuses at once, refused at once: no name, or a folder's */
    if (!len || path[len - 1] == '/') {
        fprintf(stderr, "meshfs-convert: --report '%s': %s\n", path, strerror(len ? EISDIR : ENOENT));
        return -1;
    }
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mfs_batch_mkdirs(dir); /* if it fails, the open says why */
    }
    free(dir);
    struct stat st;
    int in_place = lstat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (in_place ? !(r->f = fopen(path, "we")) : report_tmp(path, r) < 0) {
        fprintf(stderr, "meshfs-convert: --report '%s': %s\n", path, strerror(errno));
        r->tmp[0] = '\0';
        return -1;
    }
    return 0;
}

static const char *state_name(mfs_batch_state st)
{
    return st == MFS_BATCH_CONVERTED    ? "converted"
           : st == MFS_BATCH_UP_TO_DATE ? "up to date"
           : st == MFS_BATCH_NO_MESH    ? "no mesh"
                                        : "failed";
}

/* Writes and closes the report; -1 (said on stderr) if it could not. */
int write_report(const batch *b, report_out *r, const char *path)
{
    FILE *f = r->f;
    for (size_t i = 0; i < b->n; i++) {
        const item *it = &b->v[i];
        const mfs_stats *st = &it->rep.stats;
        if (it->pkg_only)
            continue; /* its own shard's report has it */
        fputs("{\"model\":", f);
        mfs_json_str(f, it->p->model);
        fputs(",\"root\":", f);
        mfs_json_str(f, it->p->root);
        fprintf(f, ",\"ok\":%s,\"state\":\"%s\",", it->done_ok == 1 ? "true" : "false",
                state_name(it->state));
        fprintf(f, "\"remembered\":%s,\"error\":", it->remembered ? "true" : "false");
        mfs_json_str(f, first_error(b, it));
        fprintf(f, ",\"meshes\":%u,\"nodes\":%u,\"bones\":%u,\"animations\":%u,\"vertices\":%llu,"
                   "\"triangles\":%llu,\"faces\":%llu,\"placed_triangles\":%llu,\"placed_faces\":%llu,\"min\":[%.9g,%.9g,%.9g],\"max\":[%.9g,%.9g,%.9g],\"outputs\":{",
                st->meshes, st->nodes, st->bones, st->animations, (unsigned long long)st->vertices,
                (unsigned long long)st->triangles, (unsigned long long)st->faces,
                (unsigned long long)st->placed_triangles, (unsigned long long)st->placed_faces, st->min[0], st->min[1], st->min[2], st->max[0],
                st->max[1], st->max[2]);
        int first = 1;
        for (int fm = 0; fm < MFS_FMT_COUNT; fm++) {
            if (!(b->formats & (1u << fm)))
                continue;
            const char *name = mfs_format_get((mfs_format)fm)->name;
            fprintf(f, "%s\"%s\":{\"ok\":%s,\"size\":%llu,\"path\":", first ? "" : ",", name,
                    it->rep.fmt[fm].ok ? "true" : "false", (unsigned long long)it->rep.fmt[fm].size);
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s.%s", it->outdir, it->p->base, name);
            mfs_json_str(f, p);
            fputs(",\"error\":", f);
            mfs_json_str(f, it->rep.fmt[fm].error);
            fputs(",\"note\":", f); /* written, with a remark (.tex: why the fallback) */
            mfs_json_str(f, it->rep.fmt[fm].note);
            fputc('}', f);
            first = 0;
        }
        fputs("},\"deps\":[", f);
        int any = 0;
        for (uint32_t d = 0; d < it->rep.deps.n; d++) {
            if (it->rep.deps.v[d].kind != MFS_DEP_FILE)
                continue; /* the files read; paths only looked at are not */
            if (any++)
                fputc(',', f);
            mfs_json_str(f, it->rep.deps.v[d].path);
        }
        fputs("],\"warnings\":[", f);
        for (size_t w = 0; w < it->p->nwarnings; w++) {
            if (w)
                fputc(',', f);
            mfs_json_str(f, it->p->warnings[w]);
        }
        uint32_t w = (uint32_t)it->p->nwarnings;
        for (uint32_t d = 0; d < it->rep.deps.n; d++) {
            if (!mfs_input_said(it->rep.deps.v, it->rep.deps.n, d))
                continue;
            char msg[PATH_MAX + 64];
            mfs_input_warning(&it->rep.deps.v[d], msg, sizeof msg);
            if (w++)
                fputc(',', f);
            mfs_json_str(f, msg);
        }
        if (it->rep.ok && it->rep.repairs[0]) {
            if (w++)
                fputc(',', f);
            mfs_json_str(f, it->rep.repairs);
        }
        fputs("]}\n", f);
    }
    for (size_t i = 0; i < b->plan.nnotes; i++) {
        fputs("{\"warning\":", f);
        mfs_json_str(f, b->plan.notes[i].text);
        fputs(",\"path\":", f);
        mfs_json_str(f, b->plan.notes[i].path);
        fputs("}\n", f);
    }
    int bad = ferror(f);
    errno = 0;
    int e = fclose(f) != 0 || bad ? (errno ? errno : EIO) : 0;
    /* fclose's errno when it failed; a write that failed earlier left
     * only the stream's error flag */
    if (!e && r->tmp[0] && rename(r->tmp, path) < 0)
        e = errno;
    if (r->tmp[0]) {
        if (e)
            unlink(r->tmp);
        mfs_batch_tmp_forget(r->tmp);
    }
    if (e) {
        fprintf(stderr, "meshfs-convert: --report '%s': %s%s\n", path, strerror(e),
                r->tmp[0] ? " (not written; an earlier report is left as it was)" : "");
        return -1;
    }
    return 0;
}

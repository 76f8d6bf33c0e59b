/* The importer's only way to the disk.
 *
 * assimp opens side files (.mtl, .bin, textures, .md5anim...) on its own by
 * composing paths from what the model says.  A hostile model can say
 * "../../etc/passwd", an absolute path, or ship a symlink pointing out of the
 * asset tree.  Every open goes through here: the path is normalised, refused
 * if it leaves the source root (openat2 with RESOLVE_BENEATH also catches
 * symlinks that escape), and each file read is recorded with its size and
 * XXH3-128, which is the input list the cache keys are built from; a path
 * tried and not found is recorded as absent (assimp's Exists is an open
 * through here too), since a file appearing there changes the views.
 *
 * Files are mapped, not copied: the hash and assimp's reads see the very same
 * bytes, and a large model costs no second heap copy. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include "iofs.h"
#include "meshfs/import.h"

typedef struct mapped_file {
    const uint8_t *data;
    size_t size, pos;   /* size: what the parser sees, the file's bytes and
                           then tail zero bytes */
    size_t mapped;      /* the file's bytes: what is mapped and hashed */
} mapped_file;

/* One zero byte after a Quake 2 model (magic "IDP2"), which the parser
 * sees as the file's last.  assimp's MD2 importer checks each section's
 * end with ">= file size" where "> file size" is meant, so a model whose
 * frames end exactly at the end of the file (one without GL commands,
 * which id's own loaders never read) is refused as "some offsets are
 * outside the file".  A byte past the end is never read as data: every
 * section it reads ends at or before the real end.  The model's hash and
 * key are those of its real bytes (docs/import.md, "MD2 without GL
 * commands"). */
static size_t parser_tail(const uint8_t *data, size_t size)
{
    return size >= 4 && memcmp(data, "IDP2", 4) == 0 ? 1 : 0;
}

int mfs_iofs_normalise(const char *in, char *out, size_t outsz)
{
    if (!in || in[0] == '/' || in[0] == '\0')
        return -1;
    size_t n = 0;
    size_t marks[256]; /* output length before each component */
    int depth = 0;
    const char *p = in;
    while (*p) {
        const char *e = p;
        while (*e && *e != '/' && *e != '\\')
            e++;
        size_t len = (size_t)(e - p);
        if (len == 0 || (len == 1 && p[0] == '.')) {
            /* skip */
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            if (depth == 0)
                return -1;
            n = marks[--depth];
        } else {
            if (depth >= 256 || n + len + 2 > outsz)
                return -1;
            marks[depth++] = n;
            if (n)
                out[n++] = '/';
            memcpy(out + n, p, len);
            n += len;
        }
        p = *e ? e + 1 : e;
    }
    if (n == 0)
        return -1;
    out[n] = '\0';
    return 0;
}

int mfs_iofs_model_path_ok(const char *rel)
{
    if (!rel || rel[0] == '\0' || rel[0] == '/')
        return 0;
    for (const char *p = rel;;) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (!e)
            return 1;
        p = e + 1;
    }
}

int mfs_iofs_set_model(mfs_iofs *fs, const char *rel, mfs_err *err)
{
    if (!mfs_iofs_model_path_ok(rel) || strlen(rel) >= 4096)
        return mfs_errf(err, "%s: not a path beneath the source root", rel ? rel : "(null)");
    const char *slash = strrchr(rel, '/');
    size_t parser = 0;
    for (const char *q = rel; *q; q++)
        if (*q == '/' || *q == '\\')
            parser = (size_t)(q - rel);
    fs->model = rel;
    fs->model_dir = slash ? (size_t)(slash - rel) : 0;
    fs->parser_dir = parser;
    return 0;
}

/* Does path start with the model's folder as a parser takes it, followed by
 * a separator?  fast_obj turns every '\' of the joined path into '/', so a
 * '\' of the model's may come back as '/'. */
static int parser_prefixed(const mfs_iofs *fs, const char *path)
{
    for (size_t i = 0; i < fs->parser_dir; i++)
        if (path[i] != fs->model[i] && !(fs->model[i] == '\\' && path[i] == '/'))
            return 0;
    return path[fs->parser_dir] == '/' || path[fs->parser_dir] == '\\';
}

/* A parser composes a side file's path from the model's: its folder as the
 * parser sees it, a separator, the reference.  Where the model's name holds
 * a '\', that folder is longer than the real one ("drop/..\a" against
 * "drop"): the part after the real folder is the model's name, which is
 * swapped back for the real folder, so a reference stays relative to where
 * the model is and the name is never read as a way up and across. */
int mfs_iofs_resolve(const mfs_iofs *fs, const char *path, char *out, size_t outsz)
{
    if (!path)
        return -1;
    if (fs->model && strcmp(path, fs->model) == 0) {
        size_t n = strlen(path);
        if (n >= outsz)
            return -1;
        memcpy(out, path, n + 1);
        return 0;
    }
    char joined[8192];
    if (fs->model && fs->parser_dir > fs->model_dir && parser_prefixed(fs, path)) {
        const char *ref = path + fs->parser_dir + 1;
        int n = snprintf(joined, sizeof joined, "%.*s%s%s", (int)fs->model_dir, fs->model,
                         fs->model_dir ? "/" : "", ref);
        if (n < 0 || (size_t)n >= sizeof joined)
            return -1;
        path = joined;
    }
    return mfs_iofs_normalise(path, out, outsz);
}

/* O_NONBLOCK: a FIFO (or a device) beneath the root that a model names
 * would otherwise block the open until the conversion's deadline; opened
 * at once, it is then refused for not being a regular file.  But a file
 * under a lease (a Samba share's oplock, an editor's) refuses such an
 * open with EWOULDBLOCK, which only a regular file does: it is opened
 * again the ordinary way, which waits for the holder to let go, as any
 * reader of the file would. */
static int open_beneath(int rootfd, const char *rel)
{
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
    if (fd < 0 && errno == EWOULDBLOCK) {
        how.flags &= ~(uint64_t)O_NONBLOCK;
        fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
    }
    return fd;
}

static void note_refused(mfs_iofs *fs, const char *path)
{
    if (fs->refused_count++ == 0) {
        size_t n = strlen(path);
        if (n >= sizeof fs->refused)
            n = sizeof fs->refused - 1;
        memcpy(fs->refused, path, n);
        fs->refused[n] = '\0';
    }
}

/* The dep slot for rel, or NULL if rel is recorded already (or out of
 * memory, which fs->oom says).  An open's outcome (a file or absent) and a
 * search for the name are apart: "Wood.png" not found as written is one
 * input, the folder's names equal to it ignoring case another. */
static mfs_dep *new_dep(mfs_iofs *fs, const char *rel, int listing)
{
    mfs_deps *d = fs->deps;
    for (uint32_t i = 0; i < d->n; i++)
        if ((d->v[i].kind == MFS_DEP_LISTING) == listing && strcmp(d->v[i].path, rel) == 0)
            return NULL;
    if (d->n == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 8;
        mfs_dep *nv = realloc(d->v, sizeof(mfs_dep) * cap);
        if (!nv) {
            fs->oom = 1;
            return NULL;
        }
        d->v = nv;
        d->cap = cap;
    }
    mfs_dep *dep = &d->v[d->n];
    memset(dep, 0, sizeof *dep);
    dep->texture = fs->texture != 0;
    dep->path = strdup(rel);
    if (!dep->path) {
        fs->oom = 1;
        return NULL;
    }
    d->n++;
    return dep;
}

static void record_dep(mfs_iofs *fs, const char *rel, const uint8_t *data, size_t size)
{
    mfs_dep *dep = new_dep(fs, rel, 0);
    if (!dep)
        return;
    dep->size = size;
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, size));
    memcpy(dep->hash, c.digest, 16);
}

/* A path tried and not found is an input too (include/meshfs/import.h, "inputs"):
 * the file that appears there later must make the views again. */
static void record_absent(mfs_iofs *fs, const char *rel)
{
    /* Not before the first file read, which is the model: a model that
     * could not be opened is no input (mfs_deps.model_unopened), and the
     * model comes first in every list the cache keys. */
    if (fs->deps->n == 0)
        return;
    mfs_dep *dep = new_dep(fs, rel, 0);
    if (dep)
        dep->kind = fs->searching ? MFS_DEP_ABSENT : MFS_DEP_MISSING;
}

/* A file there that the conversion may not read (it runs as the model's
 * owner): converted without it, said as a warning, and an input whose value
 * is its stat, so a chmod that lets the owner read it makes the views again
 * (include/meshfs/import.h, "inputs"). */
static void record_unreadable(mfs_iofs *fs, const char *rel)
{
    uint8_t h[16];
    if (fs->deps->n == 0 || mfs_input_stat_hash(fs->rootfd, rel, h) != 0)
        return;
    mfs_dep *dep = new_dep(fs, rel, 0);
    if (dep) {
        dep->kind = MFS_DEP_UNREADABLE;
        memcpy(dep->hash, h, 16);
    }
}

int mfs_iofs_hold_model_place(mfs_iofs *fs)
{
    if (fs->deps->n || !fs->model)
        return 0;
    mfs_dep *dep = new_dep(fs, fs->model, 0);
    return dep ? 0 : -1; /* size 0, hash zero: a place, not a reading */
}

void mfs_iofs_mark_missing(mfs_iofs *fs, const char *rel)
{
    mfs_deps *d = fs->deps;
    for (uint32_t i = 0; i < d->n; i++)
        if (d->v[i].kind == MFS_DEP_ABSENT && strcmp(d->v[i].path, rel) == 0)
            d->v[i].kind = MFS_DEP_MISSING;
}

void mfs_iofs_record_listing(mfs_iofs *fs, const char *rel)
{
    uint64_t n;
    uint8_t h[16];
    if (mfs_input_listing(fs->rootfd, rel, &n, h) < 0) {
        fs->oom = 1;
        return;
    }
    mfs_dep *dep = new_dep(fs, rel, 1);
    if (!dep)
        return;
    dep->kind = MFS_DEP_LISTING;
    dep->size = n;
    memcpy(dep->hash, h, 16);
}

static size_t f_read(struct aiFile *f, char *buf, size_t size, size_t count)
{
    mapped_file *m = (mapped_file *)f->UserData;
    if (size == 0 || count == 0)
        return 0;
    size_t avail = m->size - m->pos;
    size_t items = avail / size;
    if (items > count)
        items = count;
    size_t n = items * size, real = m->pos < m->mapped ? m->mapped - m->pos : 0;
    if (real > n)
        real = n;
    if (real)
        memcpy(buf, m->data + m->pos, real);
    memset(buf + real, 0, n - real); /* the tail */
    m->pos += n;
    return items;
}

static size_t f_write(struct aiFile *f, const char *buf, size_t size, size_t count)
{
    (void)f; (void)buf; (void)size; (void)count;
    return 0; /* read-only by design */
}

static size_t f_tell(struct aiFile *f)
{
    return ((mapped_file *)f->UserData)->pos;
}

static size_t f_size(struct aiFile *f)
{
    return ((mapped_file *)f->UserData)->size;
}

static enum aiReturn f_seek(struct aiFile *f, size_t off, enum aiOrigin origin)
{
    mapped_file *m = (mapped_file *)f->UserData;
    size_t base = origin == aiOrigin_SET ? 0 : origin == aiOrigin_CUR ? m->pos : m->size;
    if (origin == aiOrigin_END) {
        /* assimp passes the distance back from the end */
        if (off > m->size)
            return aiReturn_FAILURE;
        m->pos = m->size - off;
        return aiReturn_SUCCESS;
    }
    if (off > m->size - base)
        return aiReturn_FAILURE;
    m->pos = base + off;
    return aiReturn_SUCCESS;
}

static void f_flush(struct aiFile *f)
{
    (void)f;
}

static struct aiFile *open_recorded(mfs_iofs *fs, const char *rel, const char *path, unsigned *uid);

static struct aiFile *fs_open(struct aiFileIO *io, const char *path, const char *mode)
{
    mfs_iofs *fs = (mfs_iofs *)io->UserData;
    if (!mode || strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+'))
        return NULL;
    char rel[4096];
    if (mfs_iofs_resolve(fs, path, rel, sizeof rel) < 0) {
        note_refused(fs, path);
        return NULL;
    }
    return open_recorded(fs, rel, path, NULL);
}

/* Opens rel (beneath the root, already resolved) and records it, found or
 * absent; path is what the parser asked for, for a refusal's message. */
static struct aiFile *open_recorded(mfs_iofs *fs, const char *rel, const char *path, unsigned *uid)
{
    int fd = open_beneath(fs->rootfd, rel);
    if (fd < 0) {
        if (errno == EXDEV || errno == ELOOP)
            note_refused(fs, path);
        if (errno == ENOENT || errno == ENOTDIR || errno == EXDEV || errno == ELOOP)
            record_absent(fs, rel); /* as mfs_input_absent says it */
        else if (errno == EACCES)
            record_unreadable(fs, rel);
        return NULL;
    }
    struct stat st = {0};
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (st.st_mode && !S_ISREG(st.st_mode))
            record_absent(fs, rel);
        close(fd);
        return NULL;
    }
    /* the host chose who runs this from the file it stat'ed: under the
     * model's name, any other file (swapped in since) is refused */
    if (fs->model_id_known && fs->model && strcmp(rel, fs->model) == 0 &&
        (st.st_dev != fs->model_dev || st.st_ino != fs->model_ino)) {
        fs->model_replaced = 1;
        close(fd);
        return NULL;
    }
    struct aiFile *f = calloc(1, sizeof *f);
    mapped_file *m = calloc(1, sizeof *m);
    if (!f || !m)
        goto fail;
    m->size = m->mapped = (size_t)st.st_size;
    if (uid)
        *uid = (unsigned)st.st_uid;
    if (m->size) {
        void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            /* the memory limit (RLIMIT_AS) against a huge input: named,
             * since assimp only says it was "Unable to open" it */
            if (!fs->oom_file[0])
                snprintf(fs->oom_file, sizeof fs->oom_file, "%s, %zu bytes", rel, m->size);
            goto fail;
        }
        m->data = p;
    } else {
        m->data = (const uint8_t *)"";
    }
    close(fd);
    record_dep(fs, rel, m->data, m->mapped);
    if (fs->model && strcmp(rel, fs->model) == 0)
        m->size += parser_tail(m->data, m->mapped);
    f->ReadProc = f_read;
    f->WriteProc = f_write;
    f->TellProc = f_tell;
    f->FileSizeProc = f_size;
    f->SeekProc = f_seek;
    f->FlushProc = f_flush;
    f->UserData = (aiUserData)m;
    return f;
fail:
    close(fd);
    free(f);
    free(m);
    fs->oom = 1;
    return NULL;
}

static void fs_close(struct aiFileIO *io, struct aiFile *f)
{
    (void)io;
    if (!f)
        return;
    mapped_file *m = (mapped_file *)f->UserData;
    if (m && m->mapped)
        munmap((void *)m->data, m->mapped);
    free(m);
    free(f);
}

struct aiFile *mfs_iofs_view(mfs_iofs *fs, const char *rel, const uint8_t **data, size_t *size)
{
    struct aiFile *f = fs_open(&fs->io, rel, "rb");
    if (!f)
        return NULL;
    const mapped_file *m = (const mapped_file *)f->UserData;
    *data = m->data;
    *size = m->mapped;
    return f;
}

struct aiFile *mfs_iofs_view_at_root(mfs_iofs *fs, const char *rel, const uint8_t **data, size_t *size,
                                     unsigned *uid, int *absent)
{
    *absent = 0;
    if (!mfs_iofs_model_path_ok(rel))
        return NULL;
    int was = fs->searching;
    uint32_t before = fs->deps ? fs->deps->n : 0;
    fs->searching = 1; /* a file that may be there: absent is no warning */
    struct aiFile *f = open_recorded(fs, rel, rel, uid);
    fs->searching = was;
    if (!f) {
        /* absent, or there and unreadable (which the caller fails on) */
        const mfs_deps *d = fs->deps;
        *absent = d && d->n > before && d->v[d->n - 1].kind == MFS_DEP_ABSENT &&
                  strcmp(d->v[d->n - 1].path, rel) == 0;
        return NULL;
    }
    const mapped_file *m = (const mapped_file *)f->UserData;
    *data = m->data;
    *size = m->mapped;
    return f;
}

int mfs_iofs_owner(mfs_iofs *fs, const char *rel, unsigned *uid)
{
    int fd = open_beneath(fs->rootfd, rel);
    if (fd < 0)
        return -1;
    struct stat st;
    int rc = fstat(fd, &st);
    close(fd);
    if (rc < 0)
        return -1;
    *uid = (unsigned)st.st_uid;
    return 0;
}

void mfs_iofs_unview(mfs_iofs *fs, struct aiFile *f)
{
    fs_close(&fs->io, f);
}

int mfs_iofs_init(mfs_iofs *fs, const char *root, mfs_deps *deps, mfs_err *err)
{
    memset(fs, 0, sizeof *fs);
    fs->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fs->rootfd < 0)
        return mfs_errf(err, "%s: cannot open source root: %s", root, strerror(errno));
    fs->deps = deps;
    fs->io.OpenProc = fs_open;
    fs->io.CloseProc = fs_close;
    fs->io.UserData = (aiUserData)fs;
    return 0;
}

void mfs_iofs_close(mfs_iofs *fs)
{
    if (fs->rootfd >= 0)
        close(fs->rootfd);
    fs->rootfd = -1;
}

void mfs_iofs_expect_model(mfs_iofs *fs, dev_t dev, ino_t ino)
{
    fs->model_id_known = 1;
    fs->model_dev = dev;
    fs->model_ino = ino;
}

int mfs_iofs_refusal(const mfs_iofs *fs, mfs_err *err)
{
    if (fs->model_replaced)
        return mfs_errf(err, "the model '%s' was replaced during the conversion: not converted",
                        fs->model);
    return fs->refused_count ? mfs_errf(err, "refused to open '%s': outside the source root", fs->refused)
                             : 0;
}

int mfs_iofs_oom(const mfs_iofs *fs, mfs_err *err)
{
    if (!fs->oom)
        return 0;
    if (fs->oom_file[0])
        return mfs_errf(err, "out of memory while reading inputs (mapping %s)", fs->oom_file);
    return mfs_errf(err, "out of memory while reading inputs");
}

/* The model's first diffuse texture, found and decoded for .tex.
 *
 * Models name their textures in every way there is: relative to the model
 * ("textures/wood.png"), as the absolute path of the artist's machine
 * ("C:\Users\artist\tex\wood.png", which is what exported FBX files carry),
 * with the wrong case (Windows does not care), with another extension than
 * the image that ships (id Tech loads a .jpg for a .tga name), with none (a
 * shader name), or embedded in the model ("*0", or by file name in FBX).
 * So the lookup is: embedded first, then the path as written relative to
 * the model's folder, then in the model's folder and then in a textures/
 * beside it: the base name, that name ignoring case, an image of its stem
 * (docs/formats/tex.md).
 *
 * Every file is opened through the importer's confined file system, so a
 * texture outside the source root is refused unopened, and whatever is read
 * is recorded as a dependency (it decides the .tex bytes, so it must be part
 * of the cache key), as is every candidate not found and every search
 * (include/meshfs/import.h, "inputs").  Nothing here fails the import: a model
 * without a usable texture still has every other view, and .tex says why
 * in its note.
 *
 * The search runs in every import, .tex or not; only the decoding waits for
 * mfs_import_opts.textures.  Which candidates are opened never depends on
 * the decoding (the first file found settles it, decodable or not), so a
 * run without .tex records exactly the inputs a run with it does, and a
 * model's inputs, its model entry and its views' keys are the same
 * whichever formats a run writes (docs/cache.md, "Keys"). */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <assimp/scene.h>
#include <stb_image.h>

#include "meshfs/import.h"
#include "texture.h"

/* Compressed image files larger than this are not read (a 16384^2 PNG of
 * real content is far smaller; anything bigger is not a texture). */
#define MAX_FILE_BYTES (256u << 20)

#define PATH_CAP 4096

typedef struct tex_ctx {
    mfs_scene *s;
    const mfs_embedded_image *emb; /* the model's embedded images, "*N" is emb[N] */
    unsigned n_emb;
    mfs_iofs *fs;
    int decode;                    /* mfs_import_opts.textures */
} tex_ctx;

static void note(tex_ctx *c, const char *fmt, ...) MFS_PRINTF(2, 3);
static void note(tex_ctx *c, const char *fmt, ...)
{
    char buf[MFS_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(c->s->image.note);
    c->s->image.note = mfs_strdup(buf);
}

/* The texture .tex shows: the first triangle mesh's (in scene order) whose
 * material names a diffuse texture, since .vrt draws triangle meshes only;
 * failing that, any mesh's. */
static const char *pick(const mfs_scene *s)
{
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < s->n_meshes; i++) {
            const mfs_mesh *m = &s->meshes[i];
            if (pass == 0 && m->prim != MFS_PRIM_TRIANGLES)
                continue;
            if (m->material < 0 || (uint32_t)m->material >= s->n_materials)
                continue;
            const char *t = s->materials[m->material].textures[MFS_TEX_DIFFUSE];
            if (t && t[0])
                return t;
        }
    return NULL;
}

static const char *base_of(const char *p)
{
    const char *b = p;
    for (const char *q = p; *q; q++)
        if (*q == '/' || *q == '\\')
            b = q + 1;
    return b;
}

static int dims_ok(tex_ctx *c, const char *label, uint64_t w, uint64_t h, uint64_t channels)
{
    if (w == 0 || h == 0) {
        note(c, "texture '%s' has no pixels (%llux%llu)", label, (unsigned long long)w,
             (unsigned long long)h);
        return 0;
    }
    if (w > MFS_IMAGE_MAX_DIM || h > MFS_IMAGE_MAX_DIM || w * h * channels > MFS_IMAGE_MAX_BYTES) {
        note(c, "texture '%s' is %llux%llu: larger than the importer decodes (at most %ux%u "
             "and %u MiB of pixels)", label, (unsigned long long)w, (unsigned long long)h,
             MFS_IMAGE_MAX_DIM, MFS_IMAGE_MAX_DIM, MFS_IMAGE_MAX_BYTES >> 20);
        return 0;
    }
    return 1;
}

static void set_image(tex_ctx *c, uint8_t *pixels, uint32_t w, uint32_t h, uint32_t channels,
                      const char *source)
{
    mfs_image *im = &c->s->image;
    char *src = mfs_strdup(source);
    if (!src) {
        free(pixels);
        note(c, "out of memory keeping texture '%s'", source);
        return;
    }
    im->pixels = pixels;
    im->width = w;
    im->height = h;
    im->channels = channels;
    im->source = src;
    free(im->note);
    im->note = NULL;
}

/* An image file's bytes (PNG, JPEG, TGA, BMP, PSD, GIF, HDR, PIC, PNM) ->
 * 8-bit RGB, or RGBA when the file has alpha. */
static void decode_file_bytes(tex_ctx *c, const uint8_t *p, size_t n, const char *label)
{
    int w, h, comp;
    if (n > INT_MAX || !stbi_info_from_memory(p, (int)n, &w, &h, &comp)) {
        const char *why = n > INT_MAX ? "too large" : stbi_failure_reason();
        note(c, "texture '%s' cannot be decoded: %s", label, why ? why : "unknown image type");
        return;
    }
    uint32_t channels = (comp == 2 || comp == 4) ? 4 : 3;
    if (!dims_ok(c, label, (uint64_t)(w > 0 ? w : 0), (uint64_t)(h > 0 ? h : 0), channels))
        return;
    int lw, lh, lcomp;
    stbi_uc *px = stbi_load_from_memory(p, (int)n, &lw, &lh, &lcomp, (int)channels);
    if (!px) {
        const char *why = stbi_failure_reason();
        note(c, "texture '%s' cannot be decoded: %s", label, why ? why : "unknown error");
        return;
    }
    /* the header said one size; what was decoded is what counts */
    if (lw != w || lh != h || !dims_ok(c, label, (uint64_t)lw, (uint64_t)lh, channels)) {
        if (lw != w || lh != h)
            note(c, "texture '%s' decoded to %dx%d, its header says %dx%d", label, lw, lh, w, h);
        stbi_image_free(px);
        return;
    }
    /* own copy: the scene frees with free(), stb with its own allocator */
    size_t bytes = (size_t)lw * (size_t)lh * channels;
    uint8_t *own = malloc(bytes);
    if (!own) {
        stbi_image_free(px);
        note(c, "out of memory decoding texture '%s'", label);
        return;
    }
    memcpy(own, px, bytes);
    stbi_image_free(px);
    set_image(c, own, (uint32_t)lw, (uint32_t)lh, channels, label);
}

/* Embedded image k: compressed file bytes (height == 0) or raw texels
 * (width x height, b g r a in memory). */
static void decode_embedded(tex_ctx *c, unsigned k)
{
    const mfs_embedded_image *t = &c->emb[k];
    char label[32];
    snprintf(label, sizeof label, "*%u", k);
    if (!t->data) {
        note(c, "embedded texture '%s' has no data", label);
        return;
    }
    if (t->height == 0) {
        decode_file_bytes(c, t->data, t->size, label);
        return;
    }
    if (!dims_ok(c, label, t->width, t->height, 4))
        return;
    size_t n = (size_t)t->width * t->height;
    if (t->size / 4 < n) {
        note(c, "embedded texture '%s' is shorter than %ux%u texels", label, t->width, t->height);
        return;
    }
    uint8_t *px = malloc(n * 4);
    if (!px) {
        note(c, "out of memory copying texture '%s'", label);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *x = &t->data[4 * i];
        px[4 * i] = x[2];
        px[4 * i + 1] = x[1];
        px[4 * i + 2] = x[0];
        px[4 * i + 3] = x[3];
    }
    set_image(c, px, t->width, t->height, 4, label);
}

/* Which embedded image a material path means: "*N", or (FBX) one whose
 * recorded file name matches the path or its base name.  -1: none. */
static long embedded_index(const tex_ctx *c, const char *path, int *bad_star)
{
    *bad_star = 0;
    if (path[0] == '*') {
        char *end;
        unsigned long k = strtoul(path + 1, &end, 10);
        if (!isdigit((unsigned char)path[1]) || *end || k >= c->n_emb) {
            *bad_star = 1;
            return -1;
        }
        return (long)k;
    }
    const char *base = base_of(path);
    for (unsigned k = 0; k < c->n_emb; k++) {
        const char *fn = c->emb[k].filename;
        if (!fn || !fn[0])
            continue;
        if (strcmp(fn, path) == 0 || (base[0] && strcasecmp(base_of(fn), base) == 0))
            return (long)k;
    }
    return -1;
}

/* Opens rel through the confined file system (recording it) and reads it
 * whole.  1: read; 0: absent (or not a regular file); -1: refused (leaves
 * the root through a symlink); -2: too large (note set); -3: out of memory
 * (note set). */
static int read_file(tex_ctx *c, const char *rel, uint8_t **data, size_t *n)
{
    mfs_iofs *fs = c->fs;
    int refused_before = fs->refused_count;
    struct aiFile *f = fs->io.OpenProc(&fs->io, rel, "rb");
    if (!f)
        return fs->refused_count != refused_before ? -1 : 0;
    size_t size = f->FileSizeProc(f);
    if (fs->oom) {
        /* the dependency was not recorded: a view keyed without it could
         * outlive an edit of the texture */
        fs->io.CloseProc(&fs->io, f);
        note(c, "out of memory recording texture '%s'", rel);
        return -3;
    }
    if (size > MAX_FILE_BYTES) {
        fs->io.CloseProc(&fs->io, f);
        note(c, "texture '%s' is %zu bytes: larger than the importer reads (%u MiB)", rel, size,
             MAX_FILE_BYTES >> 20);
        return -2;
    }
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        fs->io.CloseProc(&fs->io, f);
        note(c, "out of memory reading texture '%s'", rel);
        return -3;
    }
    size_t got = size ? f->ReadProc(f, (char *)buf, 1, size) : 0;
    fs->io.CloseProc(&fs->io, f);
    *data = buf;
    *n = got;
    return 1;
}

/* dir/name, normalised under the root; 0 on success, -1 if it leaves the
 * root (or does not fit). */
static int join(const char *dir, const char *name, char *out, size_t cap)
{
    char tmp[PATH_CAP * 2];
    snprintf(tmp, sizeof tmp, "%s%s%s", dir, dir[0] ? "/" : "", name);
    return mfs_iofs_normalise(tmp, out, cap);
}

/* The file of dir that pattern picks (include/meshfs/import.h, "inputs": a name
 * ignoring case, or "STEM.*"), into out as a path under the root.  The
 * search is an input whatever it finds: a name that matches better (or at
 * all) when it appears makes the views again.  0 if none. */
static int search(tex_ctx *c, const char *dir, const char *pattern, char *out, size_t cap)
{
    char searched[PATH_CAP], name[256];
    if (join(dir, pattern, searched, sizeof searched) < 0)
        return 0;
    mfs_iofs_record_listing(c->fs, searched);
    return mfs_input_search(c->fs->rootfd, searched, name, sizeof name) &&
           join(dir, name, out, cap) == 0;
}

static int is_absolute(const char *p)
{
    return p[0] == '/' || p[0] == '\\' || (isalpha((unsigned char)p[0]) && p[1] == ':');
}

/* The open of read_file alone, which records the file as read_file's
 * does, for a run that does not decode: 1 opened, 0 absent, -1 refused. */
static int touch_file(tex_ctx *c, const char *rel)
{
    mfs_iofs *fs = c->fs;
    int refused_before = fs->refused_count;
    struct aiFile *f = fs->io.OpenProc(&fs->io, rel, "rb");
    if (!f)
        return fs->refused_count != refused_before ? -1 : 0;
    fs->io.CloseProc(&fs->io, f);
    return 1;
}

/* Tries one candidate path; 1 when it settled the matter (an image, or a
 * note that should stand), 0 to go on looking.  A file found settles it
 * whether or not it decodes, so the same candidates are opened with or
 * without decoding. */
static int try_candidate(tex_ctx *c, const char *rel, int *refused)
{
    if (!c->decode) {
        int t = touch_file(c, rel);
        if (t == -1)
            *refused = 1;
        return t == 1;
    }
    uint8_t *data = NULL;
    size_t n = 0;
    int r = read_file(c, rel, &data, &n);
    if (r == -1)
        *refused = 1;
    if (r <= 0)
        return r < -1;
    decode_file_bytes(c, data, n, rel);
    free(data);
    return 1;
}

/* In folder dir, the texture named base, as engines find it: that name,
 * the name ignoring case, then an image of its stem (stem.* of
 * inputs.h).  skip: a path tried already.  1 when a candidate settled it. */
static int find_in(tex_ctx *c, const char *dir, const char *base, const char *skip, int *refused)
{
    char exact[PATH_CAP], found[PATH_CAP], stem[256];
    if (join(dir, base, exact, sizeof exact) < 0)
        return 0;
    if (strcmp(exact, skip) != 0 && try_candidate(c, exact, refused))
        return 1;
    if (search(c, dir, base, found, sizeof found) && strcmp(found, exact) != 0 &&
        strcmp(found, skip) != 0 && try_candidate(c, found, refused))
        return 1;
    return mfs_input_stem_pattern(base, stem, sizeof stem) == 0 &&
           search(c, dir, stem, found, sizeof found) && strcmp(found, exact) != 0 &&
           strcmp(found, skip) != 0 && try_candidate(c, found, refused);
}

/* The path as written, relative to the model's folder; then its base name
 * (which is all an absolute or foreign path has to go by) in the model's
 * folder and in a textures/ folder beside the model (docs/formats/tex.md). */
static void from_disk(tex_ctx *c, const char *path, const char *model_dir)
{
    char written[PATH_CAP];
    snprintf(written, sizeof written, "%s", path);
    for (char *q = written; *q; q++)
        if (*q == '\\')
            *q = '/';
    const char *base = base_of(written);
    char rel[PATH_CAP] = "", by_base[PATH_CAP] = "", tex_dir[PATH_CAP];
    int escapes = 0, refused = 0, absolute = is_absolute(path);

    if (!absolute) {
        if (join(model_dir, written, rel, sizeof rel) < 0) {
            escapes = 1; /* never opened: the confinement says no before any syscall */
            rel[0] = '\0';
        } else if (try_candidate(c, rel, &refused)) {
            return;
        }
    }
    if (base[0] && join(model_dir, base, by_base, sizeof by_base) < 0)
        by_base[0] = '\0';
    if (by_base[0] && find_in(c, model_dir, base, rel, &refused))
        return;
    if (base[0] && join(model_dir, "textures", tex_dir, sizeof tex_dir) == 0 &&
        find_in(c, tex_dir, base, rel, &refused))
        return;

    /* not found: the reference is said missing, as written if it could
     * be looked up so, else by its base name */
    if (!escapes && !refused && !absolute)
        mfs_iofs_mark_missing(c->fs, rel);
    else if (!escapes && !refused && by_base[0])
        mfs_iofs_mark_missing(c->fs, by_base);
    if (escapes || refused)
        note(c, "texture '%s' refused: it leaves the source root (and the model's folder has "
             "no '%s')", path, base);
    else if (absolute)
        note(c, "texture '%s' not found: an absolute path, and neither the model's folder nor "
             "its textures/ has '%s' or another image of its stem", path, base);
    else
        note(c, "texture '%s' not found (neither as written nor as '%s' or another image of "
             "its stem in the model's folder or its textures/)", path, base);
}

void mfs_import_texture_from(mfs_scene *s, const mfs_embedded_image *emb, unsigned n_emb,
                             mfs_iofs *fs, const char *model_rel, const mfs_import_opts *o)
{
    if (!s || !fs || !o)
        return;
    tex_ctx c = {s, emb, emb ? n_emb : 0, fs, o->textures};
    int texture_before = fs->texture;
    fs->texture = 1; /* what is recorded from here on is .tex's input alone */
    /* The import's refusal record is checked before this runs and means
     * "the model reached outside"; a texture refused here is only a note. */
    char refused[sizeof fs->refused];
    int refused_count = fs->refused_count;
    memcpy(refused, fs->refused, sizeof refused);

    const char *path = pick(s);
    if (!path) {
        note(&c, "the model names no diffuse texture");
    } else {
        int bad_star;
        long k = embedded_index(&c, path, &bad_star);
        if (k >= 0) {
            if (c.decode)
                decode_embedded(&c, (unsigned)k);
        } else if (bad_star) {
            note(&c, "embedded texture '%s' does not exist (the model embeds %u)", path, c.n_emb);
        } else {
            char dir[PATH_CAP];
            snprintf(dir, sizeof dir, "%s", model_rel);
            char *slash = strrchr(dir, '/');
            if (slash)
                *slash = '\0';
            else
                dir[0] = '\0';
            fs->searching = 1;
            from_disk(&c, path, dir);
            fs->searching = 0;
        }
    }
    if (c.decode && !s->image.pixels && !s->image.note)
        note(&c, "out of memory");
    fs->refused_count = refused_count;
    memcpy(fs->refused, refused, sizeof refused);
    fs->texture = texture_before;
}

void mfs_import_texture(mfs_scene *s, const struct aiScene *ai, mfs_iofs *fs, const char *model_rel,
                        const mfs_import_opts *o)
{
    if (!s || !ai || !fs || !o)
        return;
    unsigned n = ai->mNumTextures;
    mfs_embedded_image *emb = calloc(n ? n : 1, sizeof *emb);
    char (*names)[MAXLEN] = calloc(n ? n : 1, MAXLEN);
    if (!emb || !names) {
        free(emb);
        free(names);
        free(s->image.note);
        s->image.note = mfs_strdup("out of memory");
        return;
    }
    for (unsigned k = 0; k < n; k++) {
        const struct aiTexture *t = ai->mTextures[k];
        if (!t)
            continue;
        _Static_assert(sizeof(struct aiTexel) == 4, "aiTexel is b g r a bytes");
        emb[k].data = (const uint8_t *)t->pcData;
        emb[k].width = t->mWidth;
        emb[k].height = t->mHeight;
        emb[k].size = t->mHeight ? (size_t)t->mWidth * t->mHeight * 4 : t->mWidth;
        size_t len = t->mFilename.length < MAXLEN ? t->mFilename.length : MAXLEN - 1;
        memcpy(names[k], t->mFilename.data, len);
        names[k][len] = '\0';
        emb[k].filename = names[k];
    }
    mfs_import_texture_from(s, emb, n, fs, model_rel, o);
    free(emb);
    free(names);
}

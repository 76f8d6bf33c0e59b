/* Frenetic .fmi writer (docs/formats/fmi.md): the text file FGE opens to
 * find a model's .fmd and the textures of its meshes.
 *
 * Every line is "key=value" and FGE splits on every '=' and on '\n' only,
 * compares keys exactly, and passes paths through FFPUtilities.CleanFileName,
 * so everything written here is shaped to come out of that parsing intact. */
#include <stdlib.h>
#include <string.h>

#include "frenetic.h"
#include "meshfs/formats.h"

/* ---- names FGE treats specially (keep in step with fmd.c) ---- */

static char lower_ascii(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* ---- CleanFileName ---- */

static int clean_keeps(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ' ' ||
           c == '/';
}

/* FFPUtilities.CleanFileName on s[0..n): ASCII lowercase, '\' -> '/', drop
 * everything outside [a-z0-9_. /], trim '/' and ' ' at both ends.  Writing
 * the cleaned form means the file says exactly what FGE will load. */
static char *clean_file_name(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (!r)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i] == '\\' ? '/' : lower_ascii(s[i]);
        if (clean_keeps(c))
            r[k++] = c;
    }
    size_t a = 0;
    while (a < k && (r[a] == '/' || r[a] == ' '))
        a++;
    while (k > a && (r[k - 1] == '/' || r[k - 1] == ' '))
        k--;
    memmove(r, r + a, k - a);
    r[k - a] = '\0';
    return r;
}

/* ---- texture names ---- */

static int is_sep(char c)
{
    return c == '/' || c == '\\';
}

/* Start of the part of path that names the texture under FGE's textures/:
 * what follows the last "textures" folder if there is one (so a source
 * tree laid out like the engine's keeps its subfolders), else the file
 * name alone. */
static const char *texture_rel_start(const char *path)
{
    const char *base = path, *after = NULL;
    for (const char *p = path; *p; p++) {
        if (!is_sep(*p))
            continue;
        base = p + 1;
        const char *c = p;
        while (c > path && !is_sep(c[-1]))
            c--;
        if (p - c == 8 && mfs_fge_has_prefix(c, "textures"))
            after = p + 1;
    }
    return after && *after ? after : base;
}

/* Engine texture name for a material's texture path, e.g.
 * "../textures/Cars/Red.PNG" -> "cars/red", "C:\art\Wood.jpg" -> "wood";
 * NULL when no name can be made (assimp's "*0" embedded textures, or
 * nothing left after cleaning) -- the caller writes UNKNOWN then. */
static char *texture_name(const char *path, int *oom)
{
    *oom = 0;
    if (path[0] == '*')
        return NULL;
    const char *start = texture_rel_start(path);
    size_t n = strlen(start);
    const char *file = start;
    for (size_t i = 0; i < n; i++)
        if (is_sep(start[i]))
            file = start + i + 1;
    const char *dot = strrchr(file, '.');
    if (dot && dot > file)
        n = (size_t)(dot - start);
    char *r = clean_file_name(start, n);
    if (!r) {
        *oom = 1;
        return NULL;
    }
    if (!r[0]) {
        free(r);
        return NULL;
    }
    return r;
}

/* ---- lines ---- */

/* FGE's core reader takes a line keyed exactly "model" or "offset" as its
 * own setting; for a mesh of that name the diffuse line uses the "color"
 * type, which FGE's texture reader treats the same as no type. */
static void put_key(mfs_sink *out, const char *mesh, const char *type)
{
    mfs_put_str(out, mesh);
    if (!type && (strcmp(mesh, "model") == 0 || strcmp(mesh, "offset") == 0))
        type = "color";
    if (type) {
        mfs_put_str(out, ":::");
        mfs_put_str(out, type);
    }
    mfs_put_u8(out, '=');
}

static int put_texture_line(mfs_sink *out, const char *mesh, const char *type, const char *path)
{
    int oom;
    char *tex = texture_name(path, &oom);
    if (oom)
        return -1;
    put_key(out, mesh, type);
    mfs_put_str(out, tex ? tex : "UNKNOWN");
    mfs_put_u8(out, '\n');
    free(tex);
    return 0;
}

/* The order FMC writes them in; NULL type is the diffuse/colour slot. */
static const struct {
    mfs_tex_kind kind;
    const char *type;
} tex_lines[] = {
    {MFS_TEX_DIFFUSE, NULL},
    {MFS_TEX_SPECULAR, "specular"},
    {MFS_TEX_REFLECTION, "reflectivity"},
    {MFS_TEX_NORMAL, "normal"},
};

static int put_mesh_lines(mfs_sink *out, const mfs_scene *s, const mfs_mesh *m, const char *name,
                          int textures)
{
    if (!textures) {
        put_key(out, name, NULL);
        mfs_put_str(out, "UNKNOWN\n");
        return 0;
    }
    if (m->material < 0)
        return 0;
    const mfs_material *mat = &s->materials[m->material];
    for (size_t i = 0; i < sizeof tex_lines / sizeof tex_lines[0]; i++) {
        const char *path = mat->textures[tex_lines[i].kind];
        if (path && put_texture_line(out, name, tex_lines[i].type, path) < 0)
            return -1;
    }
    return 0;
}

/* ---- one line group per visible mesh name ---- */

static int ci_compare(const char *a, const char *b)
{
    for (; *a && lower_ascii(*a) == lower_ascii(*b); a++, b++)
        ;
    return (int)(unsigned char)lower_ascii(*a) - (int)(unsigned char)lower_ascii(*b);
}

typedef struct named {
    char *name;     /* as written (fge_mesh_name), NULL for hidden meshes */
    uint32_t mesh;
    int dup;        /* an earlier mesh has the same name, ignoring case */
} named;

static int by_name_then_index(const void *pa, const void *pb)
{
    const named *a = *(named *const *)pa, *b = *(named *const *)pb;
    int c = ci_compare(a->name, b->name);
    return c ? c : (a->mesh > b->mesh) - (a->mesh < b->mesh);
}

/* FGE matches keys to meshes by lowercased name and gives a texture to every
 * mesh of that name, so a later mesh of the same name could only override
 * the first one's lines; only the first is written.  Sorting keeps this
 * O(n log n) for models with very many meshes. */
static int mark_duplicates(named *v, uint32_t n)
{
    named **order = malloc(sizeof *order * (n ? n : 1));
    if (!order)
        return -1;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (v[i].name)
            order[k++] = &v[i];
    qsort(order, k, sizeof *order, by_name_then_index);
    for (uint32_t i = 1; i < k; i++)
        order[i]->dup = ci_compare(order[i - 1]->name, order[i]->name) == 0;
    free(order);
    return 0;
}

static int name_meshes(named *v, const mfs_scene *s, mfs_err *err)
{
    for (uint32_t i = 0; i < s->n_meshes; i++) {
        v[i].mesh = i;
        if (mfs_fge_hidden(s->meshes[i].name))
            continue;
        v[i].name = mfs_fge_mesh_name(s->meshes[i].name);
        if (!v[i].name)
            return mfs_errf(err, "mesh '%s': out of memory", s->meshes[i].name);
    }
    if (mark_duplicates(v, s->n_meshes) < 0)
        return mfs_errf(err, "out of memory");
    return 0;
}

static int put_meshes(mfs_sink *out, const mfs_scene *s, int textures, mfs_err *err)
{
    named *v = calloc(s->n_meshes ? s->n_meshes : 1, sizeof *v);
    if (!v)
        return mfs_errf(err, "out of memory");
    int rc = name_meshes(v, s, err);
    for (uint32_t i = 0; i < s->n_meshes && rc == 0; i++)
        if (v[i].name && !v[i].dup &&
            put_mesh_lines(out, s, &s->meshes[i], v[i].name, textures) < 0)
            rc = mfs_errf(err, "mesh '%s': out of memory", s->meshes[i].name);
    for (uint32_t i = 0; i < s->n_meshes; i++)
        free(v[i].name);
    free(v);
    return rc;
}

/* model= names the .fmd relative to models/.  Without a path the line is
 * left out: FGE then loads the .fmd beside the .fmi, which is where meshfs
 * puts it. */
static int put_model_line(mfs_sink *out, const char *model_path, mfs_err *err)
{
    if (!model_path)
        return 0;
    char *clean = clean_file_name(model_path, strlen(model_path));
    if (!clean)
        return mfs_errf(err, "out of memory");
    if (clean[0]) {
        mfs_put_str(out, "model=");
        mfs_put_str(out, clean);
        mfs_put_u8(out, '\n');
    }
    free(clean);
    return 0;
}

int mfs_write_fmi(const mfs_scene *s, mfs_prepared *prep, const mfs_options *o, mfs_sink *out,
                  mfs_err *err)
{
    (void)prep; /* nothing prepared is of use here */
    if (put_model_line(out, o ? o->model_path : NULL, err) < 0)
        return -1;
    return put_meshes(out, s, o && o->fmi_textures, err);
}

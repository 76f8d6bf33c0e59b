/* Reader for the Frenetic .fmd model (seed 000 and research/fmd.md): the
 * magic "FMD001", then a gzip (RFC 1952) stream whose payload is
 *   Matrix4 root; int meshCount; meshes; node tree (one root node)
 * with Matrix4 = 16 floats row by row, column-vector convention
 * (translation at 3, 7, 11).  Counts are signed 32-bit.
 *
 * The payload is inflated with a hard cap and parsed in place: nothing is
 * allocated from a count that the remaining bytes cannot back.
 *
 * Bounds are what FGE draws: every mesh at its stored vertex positions.
 * FGE applies no node matrix to a mesh (Model.UpdateTransforms uses the
 * identity for every node without animation, and a .fmd carries no
 * animation), so neither does this reader.  The one thing FGE's loader does
 * move is every vertex, by minus the model-space translation of the nodes
 * named marker_center* (ModelHandler.LoadModel); that is applied too. */
#include "readers.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "meshfs/util.h"

#define MAGIC_BYTES 6
#define MAT_BYTES 64
/* Inflated-size cap: real payloads are mostly float arrays and compress by
 * 1.1-4x; a stream expanding 64 times is a bomb, not a model. */
#define INFLATE_RATIO 64
#define INFLATE_FLOOR ((uint64_t)1 << 20)
#define INFLATE_CEIL ((uint64_t)2 << 30)
/* FGE reads at most this many bones per mesh and 8 influences per vertex. */
#define FGE_MAX_BONES 128
#define FGE_MAX_INFLUENCES 8
/* Smallest encodings, for counts checked against the bytes left:
 * mesh = name len + 5 counts; bone = name len + weight count + matrix;
 * node = name len + matrix + child count. */
#define MIN_MESH 24
#define MIN_BONE (4 + 4 + MAT_BYTES)
#define MIN_NODE (4 + MAT_BYTES + 4)

typedef struct fmd_str {
    const char *s;
    uint32_t n;
} fmd_str;

typedef struct fmd_mesh {
    fmd_str name;
    const uint8_t *pos;
    uint32_t nv;
    uint32_t nb; /* bone records */
} fmd_mesh;

typedef struct fmd_node {
    fmd_str name;
    float global[16]; /* parent * local, up to the tree's root */
} fmd_node;

typedef struct fmd {
    mfs_rd *r;
    mfs_cur c;
    fmd_mesh *meshes;
    uint32_t n_meshes;
    fmd_node *nodes;
    size_t n_nodes, cap_nodes;
    fmd_str *bones; /* every bone record, all meshes */
    size_t n_bones, cap_bones;
} fmd;

/* ---- inflate ---- */

static int inflate_payload(mfs_rd *r, const uint8_t *p, size_t n, uint8_t **out, size_t *len)
{
    uint64_t limit = (uint64_t)n * INFLATE_RATIO;
    if (limit < INFLATE_FLOOR)
        limit = INFLATE_FLOOR;
    if (limit > INFLATE_CEIL)
        limit = INFLATE_CEIL;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 15 + 16) != Z_OK) /* +16: gzip wrapper only */
        return mfs_errf(r->err, "zlib: inflateInit2 failed");
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n; /* n <= 2 GiB (the file-size cap) */

    size_t cap = n * 4 < 4096 ? 4096 : n * 4, used = 0;
    if (cap > limit)
        cap = (size_t)limit;
    uint8_t *buf = malloc(cap);
    int rc = buf ? 0 : mfs_errf(r->err, "out of memory");
    while (rc == 0) {
        if (used == cap) {
            if (cap >= limit) {
                rc = mfs_errf(r->err, "gzip payload inflates to more than %llu bytes "
                              "(limit: %dx the file size, at least 1 MiB): refused",
                              (unsigned long long)limit, INFLATE_RATIO);
                break;
            }
            size_t ncap = (uint64_t)cap * 2 > limit ? (size_t)limit : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                rc = mfs_errf(r->err, "out of memory (%zu bytes)", ncap);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        zs.next_out = buf + used;
        zs.avail_out = (uInt)(cap - used);
        int z = inflate(&zs, Z_NO_FLUSH);
        used = cap - zs.avail_out;
        if (z == Z_STREAM_END)
            break;
        if (z == Z_BUF_ERROR && zs.avail_in == 0)
            rc = mfs_errf(r->err, "gzip stream is truncated (ends after %zu inflated bytes)",
                          used);
        else if (z != Z_OK && z != Z_BUF_ERROR)
            rc = mfs_errf(r->err, "corrupt gzip stream at file offset %zu: %s",
                          MAGIC_BYTES + (n - zs.avail_in), zs.msg ? zs.msg : "zlib error");
    }
    if (rc == 0 && zs.avail_in)
        mfs_rd_violation(r, "%u bytes after the end of the gzip stream", (unsigned)zs.avail_in);
    inflateEnd(&zs);
    if (rc) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = used;
    return 0;
}

/* ---- primitives ---- */

static int read_str(fmd *f, const char *what, fmd_str *s)
{
    uint32_t n;
    if (mfs_cur_count(f->r, &f->c, 1, what, &n))
        return -1;
    s->s = (const char *)f->c.p + f->c.off;
    s->n = n;
    f->c.off += n;
    return 0;
}

/* Reads a matrix; the bottom row of a column-vector affine matrix is
 * 0 0 0 1, so anything else (beyond float noise) means a transposed or
 * foreign matrix. */
static int read_mat(fmd *f, const char *what, float m[16])
{
    size_t at = f->c.off;
    if (mfs_cur_need(f->r, &f->c, MAT_BYTES, what))
        return -1;
    mfs_cur_floats(&f->c, m, 16);
    if (!mfs_rd_affine_row(m[12], m[13], m[14], m[15]))
        mfs_rd_violation(f->r, "offset %zu: %s: bottom row is (%.9g %.9g %.9g %.9g), not "
                         "(0 0 0 1)", at, what, (double)m[12], (double)m[13], (double)m[14],
                         (double)m[15]);
    return 0;
}


static int str_caseeq(fmd_str a, fmd_str b)
{
    return a.n == b.n && strncasecmp(a.s, b.s, a.n) == 0;
}

/* ---- meshes ---- */

static void check_positions(fmd *f, const char *mesh, const uint8_t *pos, uint32_t nv)
{
    mfs_tally bad = {0};
    for (uint32_t i = 0; i < nv; i++) {
        float v[3] = {mfs_ld_f32(pos + 12 * (size_t)i), mfs_ld_f32(pos + 12 * (size_t)i + 4),
                      mfs_ld_f32(pos + 12 * (size_t)i + 8)};
        if (!mfs_rd_finite3(v))
            mfs_tally_add(&bad, i, 0);
    }
    if (bad.n)
        mfs_rd_violation(f->r, "mesh '%s': %llu vertices are NaN or infinite (first: %llu)",
                         mesh, (unsigned long long)bad.n, (unsigned long long)bad.first);
}

static int read_faces(fmd *f, const char *mesh, uint32_t nv)
{
    uint32_t nf;
    if (mfs_cur_count(f->r, &f->c, 12, "faces", &nf))
        return -1;
    mfs_tally out = {0};
    for (uint64_t i = 0; i < (uint64_t)nf * 3; i++) {
        uint32_t ix = mfs_ld_u32(f->c.p + f->c.off + 4 * i);
        if (ix >= nv)
            mfs_tally_add(&out, i, ix);
    }
    f->c.off += (size_t)nf * 12;
    f->r->sum->triangles += nf;
    if (out.n)
        mfs_rd_violation(f->r, "mesh '%s': %llu face indices out of range (first: index %llu "
                         "= %.0f, %lu vertices)", mesh, (unsigned long long)out.n,
                         (unsigned long long)out.first, out.value, (unsigned long)nv);
    return 0;
}

/* FGE uses texcoords and normals only when their count equals the vertex
 * count, and silently replaces all of them otherwise. */
static int read_texcoords(fmd *f, const char *mesh, uint32_t nv)
{
    uint32_t n;
    if (mfs_cur_count(f->r, &f->c, 8, "texture coordinates", &n))
        return -1;
    if (n != nv && n != 0)
        mfs_rd_violation(f->r, "mesh '%s': %lu texture coordinates for %lu vertices (FGE then "
                         "drops them all)", mesh, (unsigned long)n, (unsigned long)nv);
    f->c.off += (size_t)n * 8;
    return 0;
}

static int read_normals(fmd *f, const char *mesh, uint32_t nv)
{
    uint32_t n;
    if (mfs_cur_count(f->r, &f->c, 12, "normals", &n))
        return -1;
    if (n != nv && n != 0)
        mfs_rd_violation(f->r, "mesh '%s': %lu normals for %lu vertices (FGE then drops them "
                         "all)", mesh, (unsigned long)n, (unsigned long)nv);
    mfs_tally bad = {0}, zero = {0};
    for (uint32_t i = 0; i < n; i++) {
        float v[3];
        mfs_cur_floats(&f->c, v, 3);
        double len;
        int k = mfs_rd_normal_class(v, &len);
        if (k == 1)
            mfs_tally_add(&zero, i, 0);
        else if (k == 2)
            mfs_tally_add(&bad, i, len);
    }
    if (bad.n)
        mfs_rd_violation(f->r, "mesh '%s': %llu normals are not unit length (first: %llu, "
                         "length %g)", mesh, (unsigned long long)bad.n,
                         (unsigned long long)bad.first, bad.value);
    if (zero.n)
        mfs_rd_warn(f->r, "mesh '%s': %llu normals are zero (first: %llu)", mesh,
                    (unsigned long long)zero.n, (unsigned long long)zero.first);
    return 0;
}

/* Per-vertex weight totals of one mesh, over all its bones. */
typedef struct weights {
    float *sum;
    uint8_t *count; /* influences, saturating at 255 */
    mfs_tally range, nonfinite;
} weights;

static int read_bone(fmd *f, uint32_t nv, weights *w)
{
    fmd_str name;
    if (read_str(f, "bone name", &name))
        return -1;
    if (mfs_rd_grow(f->r, (void **)&f->bones, &f->cap_bones, f->n_bones + 1, sizeof(fmd_str)))
        return -1;
    f->bones[f->n_bones++] = name;
    uint32_t nw;
    if (mfs_cur_count(f->r, &f->c, 8, "bone weights", &nw))
        return -1;
    for (uint32_t i = 0; i < nw; i++) {
        int32_t id = mfs_ld_i32(f->c.p + f->c.off);
        float wt = mfs_ld_f32(f->c.p + f->c.off + 4);
        f->c.off += 8;
        if (id < 0 || (uint32_t)id >= nv) {
            mfs_tally_add(&w->range, i, id);
            continue;
        }
        if (!isfinite(wt))
            mfs_tally_add(&w->nonfinite, (uint64_t)id, wt);
        w->sum[id] += wt;
        if (w->count[id] < 255)
            w->count[id]++;
    }
    float m[16];
    return read_mat(f, "bone offset matrix", m);
}

static void check_weights(fmd *f, const char *mesh, uint32_t nv, const weights *w)
{
    mfs_tally sum = {0}, none = {0}, many = {0};
    for (uint32_t i = 0; i < nv; i++) {
        if (w->count[i] == 0)
            mfs_tally_add(&none, i, 0);
        else if (fabs((double)w->sum[i] - 1.0) > 1e-3)
            mfs_tally_add(&sum, i, w->sum[i]);
        if (w->count[i] > FGE_MAX_INFLUENCES)
            mfs_tally_add(&many, i, w->count[i]);
    }
    if (w->range.n)
        mfs_rd_violation(f->r, "mesh '%s': %llu bone weights name a vertex out of range "
                         "(first: vertex id %.0f, %lu vertices)", mesh,
                         (unsigned long long)w->range.n, w->range.value, (unsigned long)nv);
    if (w->nonfinite.n)
        mfs_rd_violation(f->r, "mesh '%s': %llu bone weights are NaN or infinite", mesh,
                         (unsigned long long)w->nonfinite.n);
    if (sum.n)
        mfs_rd_violation(f->r, "mesh '%s': weights of %llu vertices do not sum to 1 (first: "
                         "vertex %llu, sum %.6g)", mesh, (unsigned long long)sum.n,
                         (unsigned long long)sum.first, sum.value);
    if (none.n)
        mfs_rd_warn(f->r, "mesh '%s': %llu vertices have no bone weight (first: %llu)", mesh,
                    (unsigned long long)none.n, (unsigned long long)none.first);
    if (many.n)
        mfs_rd_warn(f->r, "mesh '%s': %llu vertices have more than %d influences (FGE folds "
                    "the rest into the 4th)", mesh, (unsigned long long)many.n,
                    FGE_MAX_INFLUENCES);
}

static int read_bones(fmd *f, const char *mesh, uint32_t nv, uint32_t *nb_out)
{
    uint32_t nb;
    if (mfs_cur_count(f->r, &f->c, MIN_BONE, "bones", &nb))
        return -1;
    *nb_out = nb;
    if (nb == 0)
        return 0;
    if (nb > FGE_MAX_BONES)
        mfs_rd_warn(f->r, "mesh '%s': %lu bones, FGE uses the first %d", mesh,
                    (unsigned long)nb, FGE_MAX_BONES);
    /* nv * 12 bytes were present, so these are bounded by the payload. */
    weights w = {calloc(nv ? nv : 1, sizeof(float)), calloc(nv ? nv : 1, 1), {0}, {0}};
    int rc = (w.sum && w.count) ? 0 : mfs_errf(f->r->err, "out of memory");
    for (uint32_t b = 0; b < nb && rc == 0; b++)
        if (read_bone(f, nv, &w))
            rc = mfs_err_prefix(f->r->err, "bone %lu", (unsigned long)b);
    if (rc == 0)
        check_weights(f, mesh, nv, &w);
    free(w.sum);
    free(w.count);
    return rc;
}

static int read_mesh(fmd *f, fmd_mesh *m)
{
    if (read_str(f, "mesh name", &m->name))
        return -1;
    char name[MFS_SUMMARY_NAME_LEN];
    mfs_rd_name(name, sizeof name, m->name.s, m->name.n);
    if (mfs_cur_count(f->r, &f->c, 12, "vertices", &m->nv))
        return -1;
    m->pos = f->c.p + f->c.off;
    f->c.off += (size_t)m->nv * 12;
    f->r->sum->vertices += m->nv;
    check_positions(f, name, m->pos, m->nv);
    if (read_faces(f, name, m->nv) || read_texcoords(f, name, m->nv) ||
        read_normals(f, name, m->nv) || read_bones(f, name, m->nv, &m->nb))
        return -1;
    return 0;
}

/* ---- node tree ---- */

static int read_node(fmd *f, const float parent[16], unsigned depth)
{
    if (depth >= MFS_INSPECT_MAX_DEPTH)
        return mfs_errf(f->r->err, "offset %zu: node tree nested deeper than %d levels",
                        f->c.off, MFS_INSPECT_MAX_DEPTH);
    fmd_node node;
    float local[16];
    if (read_str(f, "node name", &node.name) || read_mat(f, "node matrix", local))
        return -1;
    /* FGE's Model3DNode.GetMatrix: Parent.GetMatrix() * MatrixA, on the
     * matrices as stored (column-vector convention), so parent * child. */
    mfs_rd_mat_mul(node.global, parent, local);
    if (mfs_rd_grow(f->r, (void **)&f->nodes, &f->cap_nodes, f->n_nodes + 1, sizeof node))
        return -1;
    f->nodes[f->n_nodes++] = node;
    uint32_t kids;
    if (mfs_cur_count(f->r, &f->c, MIN_NODE, "child nodes", &kids))
        return -1;
    for (uint32_t i = 0; i < kids; i++)
        if (read_node(f, node.global, depth + 1))
            return -1;
    return 0;
}

/* ---- after parsing ---- */

/* FGE's recentring (ModelHandler.LoadModel): minus the summed model-space
 * translation of every node whose name starts with "marker_center" (case
 * sensitive there), applied to all vertices when its squared length
 * exceeds 0.0001.  Returns 0 when FGE leaves the vertices alone. */
static int marker_offset(const fmd *f, float off[3])
{
    static const char mark[] = "marker_center";
    double d[3] = {0, 0, 0};
    for (size_t i = 0; i < f->n_nodes; i++) {
        fmd_str n = f->nodes[i].name;
        if (n.n < sizeof mark - 1 || memcmp(n.s, mark, sizeof mark - 1) != 0)
            continue;
        for (int k = 0; k < 3; k++)
            d[k] -= f->nodes[i].global[4 * k + 3];
    }
    for (int k = 0; k < 3; k++)
        off[k] = (float)d[k];
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] > 0.0001;
}

/* The mesh's vertices where FGE draws them: as stored, in the file's
 * frame, moved by the marker_center offset if there is one. */
static void mesh_bounds(fmd *f, const fmd_mesh *m, const float *off)
{
    for (uint32_t i = 0; i < m->nv; i++) {
        const uint8_t *q = m->pos + 12 * (size_t)i;
        float v[3] = {mfs_ld_f32(q), mfs_ld_f32(q + 4), mfs_ld_f32(q + 8)};
        if (off)
            for (int k = 0; k < 3; k++)
                v[k] += off[k];
        mfs_rd_point(f->r, v);
    }
}

static int str_cmp(const void *a, const void *b)
{
    const fmd_str *x = a, *y = b;
    uint32_t n = x->n < y->n ? x->n : y->n;
    int c = strncasecmp(x->s, y->s, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Bones are matched to nodes case-insensitively by FGE (a bone without a
 * node throws there); the summary counts distinct bone names. */
static void finish_bones(fmd *f)
{
    for (size_t i = 0; i < f->n_bones; i++) {
        size_t k = 0;
        while (k < f->n_nodes && !str_caseeq(f->bones[i], f->nodes[k].name))
            k++;
        if (k == f->n_nodes)
            mfs_rd_violation(f->r, "bone '%.*s' has no node of the same name (FGE fails)",
                             (int)(f->bones[i].n > 60 ? 60 : f->bones[i].n), f->bones[i].s);
    }
    if (f->n_bones == 0)
        return;
    qsort(f->bones, f->n_bones, sizeof(fmd_str), str_cmp);
    uint64_t d = 1;
    for (size_t i = 1; i < f->n_bones; i++)
        if (str_cmp(&f->bones[i - 1], &f->bones[i]))
            d++;
    f->r->sum->bones = d;
}

static int visible(fmd_str name)
{
    static const char *const hidden[] = {"collisionconvex_", "collisioncomplex_", "marker_",
                                         "norender_"};
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++) {
        size_t k = strlen(hidden[i]);
        if (name.n >= k && strncasecmp(name.s, hidden[i], k) == 0)
            return 0;
    }
    return 1;
}

/* FGE's graphics side (ModelEngine.FromSceneNoGenerate) gives the bones of
 * the file's mesh record i to model.Meshes[i], a list of the visible meshes
 * only: a record's bones reach it only when it is visible and no hidden
 * record precedes it.  Otherwise they go to another mesh, or past the end
 * of the list and the load fails (research/fmd.md section 1, "Bone weights
 * as consumed"). */
static void check_bone_pairing(fmd *f)
{
    uint32_t n_visible = 0;
    for (uint32_t i = 0; i < f->n_meshes; i++)
        n_visible += (uint32_t)visible(f->meshes[i].name);
    uint32_t bad = 0, first = 0, seen = 0;
    for (uint32_t i = 0; i < f->n_meshes; i++) {
        int v = visible(f->meshes[i].name);
        if (f->meshes[i].nb && !(v && seen == i) && bad++ == 0)
            first = i;
        seen += (uint32_t)v;
    }
    if (!bad)
        return;
    char name[MFS_SUMMARY_NAME_LEN], other[MFS_SUMMARY_NAME_LEN + 16];
    mfs_rd_name(name, sizeof name, f->meshes[first].name.s, f->meshes[first].name.n);
    if (first < n_visible) {
        uint32_t k = 0, j = 0;
        for (; j < f->n_meshes; j++)
            if (visible(f->meshes[j].name) && k++ == first)
                break;
        char on[MFS_SUMMARY_NAME_LEN];
        mfs_rd_name(on, sizeof on, f->meshes[j].name.s, f->meshes[j].name.n);
        snprintf(other, sizeof other, "'%s'", on);
    } else {
        snprintf(other, sizeof other, "of %u: the load fails", n_visible);
    }
    mfs_rd_violation(f->r,
                     "mesh '%s' (record %u) has bones, but FGE gives record %u's bones to "
                     "visible mesh %u (%s); hidden meshes must come after skinned ones and "
                     "carry no bones (%u such records)",
                     name, first, first, first, other, bad);
}

static void finish(fmd *f)
{
    int shown = 0;
    float off[3];
    int moved = marker_offset(f, off);
    const fmd_mesh *first_visible = NULL;
    for (uint32_t i = 0; i < f->n_meshes; i++) {
        mesh_bounds(f, &f->meshes[i], moved ? off : NULL);
        shown |= visible(f->meshes[i].name) && f->meshes[i].nv > 0;
        if (!first_visible && visible(f->meshes[i].name))
            first_visible = &f->meshes[i];
    }
    if (!shown) {
        mfs_rd_violation(f->r, "no visible mesh with vertices (FGE refuses such a model)");
    } else if (first_visible->nv == 0) {
        /* ModelHandler.GetBounds: Meshes.First(m => m.IsVisible).Vertices[0] */
        char name[MFS_SUMMARY_NAME_LEN];
        mfs_rd_name(name, sizeof name, first_visible->name.s, first_visible->name.n);
        mfs_rd_violation(f->r,
                         "first visible mesh '%s' has no vertex (FGE's GetBounds reads "
                         "its vertex 0; the load fails)",
                         name);
    }
    check_bone_pairing(f);
    finish_bones(f);
    f->r->sum->nodes = f->n_nodes;
}

static int parse_payload(fmd *f)
{
    float root[16];
    if (read_mat(f, "root matrix", root) ||
        mfs_cur_count(f->r, &f->c, MIN_MESH, "meshes", &f->n_meshes))
        return -1;
    f->r->sum->meshes = f->n_meshes;
    f->meshes = calloc(f->n_meshes ? f->n_meshes : 1, sizeof *f->meshes);
    if (!f->meshes)
        return mfs_errf(f->r->err, "out of memory");
    for (uint32_t i = 0; i < f->n_meshes; i++)
        if (read_mesh(f, &f->meshes[i]))
            return mfs_err_prefix(f->r->err, "mesh %lu", (unsigned long)i);
    float id[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    if (read_node(f, id, 0))
        return mfs_err_prefix(f->r->err, "node tree");
    if (mfs_cur_left(&f->c))
        mfs_rd_violation(f->r, "payload offset %zu: %zu bytes after the node tree", f->c.off,
                         mfs_cur_left(&f->c));
    finish(f);
    return 0;
}

static int read_magic(mfs_rd *r, const uint8_t *p, size_t n)
{
    if (n < MAGIC_BYTES)
        return mfs_errf(r->err, "file is %zu bytes, shorter than the 6-byte magic FMD001", n);
    if ((p[0] != 'F' && p[0] != 'V') || p[1] != 'M' || p[2] != 'D')
        return mfs_errf(r->err, "bad magic '%c%c%c' (expected FMD001)", isprint(p[0]) ? p[0] : '?',
                        isprint(p[1]) ? p[1] : '?', isprint(p[2]) ? p[2] : '?');
    if (!isdigit(p[3]) || !isdigit(p[4]) || !isdigit(p[5]))
        return mfs_errf(r->err, "bad version in magic (expected three digits, as in FMD001)");
    r->sum->version = (p[3] - '0') * 100 + (p[4] - '0') * 10 + (p[5] - '0');
    if (p[0] == 'V')
        mfs_rd_violation(r, "legacy magic VMD (meshfs writes FMD)");
    if (r->sum->version != 1)
        mfs_rd_violation(r, "version %03d: the format defines only 001", r->sum->version);
    return 0;
}

int mfs_read_fmd(mfs_rd *r, const uint8_t *p, size_t n)
{
    if (read_magic(r, p, n))
        return -1;
    uint8_t *payload = NULL;
    size_t len = 0;
    if (inflate_payload(r, p + MAGIC_BYTES, n - MAGIC_BYTES, &payload, &len))
        return -1;
    fmd f = {.r = r, .c = {payload, len, 0}};
    int rc = parse_payload(&f);
    if (rc)
        mfs_err_prefix(r->err, "inflated payload");
    free(f.meshes);
    free(f.nodes);
    free(f.bones);
    free(payload);
    return rc;
}

/* Reader for the Despair Engine .dem text model (seed 002 and
 * research/dem_vrt.md).  One `keyword fields...` line at a time:
 *   DEM 10 (or the older DEM_10), model, joints, meshes, sequences,
 *   j <name> <parent> <px py pz rx ry rz>            (model joints)
 *   mesh, mat (or s), verts, v, tris, t, weights, w  (per mesh)
 *   sequence, rate, components, joints, j, bounds, b, events, e, frames, f
 * `v` carries 12 numbers, or 14 with meshfs's skin extension (startWeight
 * countWeight); `t` carries 3 indices, or a polygon index and 3 indices.
 * Element lines are counted as they come, never allocated from a declared
 * count, so a count that disagrees with its lines is a finding, not a
 * hazard.  Frame: Blender's right-handed Z-up.
 *
 * The reader itself is tolerant (runs of spaces and tabs split tokens, the
 * old DEM_10 header reads), but everything the author's loader (mod_dem.ixx,
 * research/dem_vrt.md) cannot take is a violation, so --check passes only
 * what that loader reads: it splits each trimmed line on single spaces, reads
 * numbers with std::stof / std::stoi / std::stoul (which throw on subnormal
 * or out-of-range text), knows only the header `DEM 10`, takes the first
 * token after a keyword as the name, indexes the first token of every line
 * and four fields of every `t` line (docs/formats/dem.md, "Loader rules").
 *
 * This file reads the lines into the model and checks what they declare;
 * dem_fields.c splits a line into fields and numbers and keeps the loader's
 * rules (dem_read.h). */
#include "dem_read.h"

#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- meshes ---- */

static int vertex_line(dem *d, const line *l)
{
    dem_mesh *m = &d->m;
    unsigned k = l->all - 1;
    if (k != V_NUMBERS && k != V_SKINNED)
        return mfs_errf(d->r->err, "line %u: 'v' needs %d or %d numbers, has %u", l->no,
                        V_NUMBERS, V_SKINNED, k);
    double v[V_SKINNED];
    if (dem_numbers(d, l, 1, k, v, "u" "fffffffffff" "uu"))
        return -1;
    if (m->v_form && m->v_form != (int)k)
        mfs_rd_violation(d->r, "line %u: 'v' with %u numbers after ones with %d", l->no, k,
                         m->v_form);
    if (!m->v_form)
        m->v_form = (int)k;
    uint64_t idx = m->verts.lines++;
    if (v[0] != (double)idx)
        mfs_rd_violation(d->r, "line %u: vertex index %.0f, expected %llu", l->no, v[0],
                         (unsigned long long)idx);
    float pos[3] = {(float)v[1], (float)v[2], (float)v[3]};
    float nrm[3] = {(float)v[4], (float)v[5], (float)v[6]};
    for (int i = 1; i < V_NUMBERS; i++)
        if (!isfinite(v[i])) {
            mfs_tally_add(&m->nonfinite, l->no, 0);
            break;
        }
    mfs_rd_point(d->r, pos);
    double len;
    int c = mfs_rd_normal_class(nrm, &len);
    if (c == 1)
        mfs_tally_add(&m->zeronormal, l->no, 0);
    else if (c == 2)
        mfs_tally_add(&m->badnormal, l->no, len);
    if (m->v_form == V_SKINNED) {
        /* Stored for every vertex once the mesh is skinned, so check_skin
         * can index refs by vertex; a 12-number line stands for no weight. */
        uint32_t start = 0, cnt = 0;
        if (k == V_SKINNED) {
            if (v[12] < 0 || v[13] < 0 || v[12] > UINT32_MAX || v[13] > UINT32_MAX)
                return mfs_errf(d->r->err, "line %u: weight range %.0f %.0f is negative or "
                                "too large", l->no, v[12], v[13]);
            start = (uint32_t)v[12];
            cnt = (uint32_t)v[13];
        }
        if (mfs_rd_grow(d->r, (void **)&m->refs, &m->cap_refs, 2 * (idx + 1), sizeof(uint32_t)))
            return -1;
        m->refs[2 * idx] = start;
        m->refs[2 * idx + 1] = cnt;
    }
    return 0;
}

static int triangle_line(dem *d, const line *l)
{
    dem_mesh *m = &d->m;
    unsigned k = l->all - 1;
    if (k != 3 && k != 4)
        return mfs_errf(d->r->err, "line %u: 't' needs 3 or 4 integers, has %u", l->no, k);
    double v[4];
    if (dem_numbers(d, l, 1, k, v, k == 4 ? "uiii" : "iii"))
        return -1;
    if (m->t_form && m->t_form != (int)k)
        mfs_rd_violation(d->r, "line %u: 't' with %u integers after ones with %d", l->no, k,
                         m->t_form);
    if (!m->t_form)
        m->t_form = (int)k;
    if (k == 3)
        dem_loader_rule(d, R_TRI3, l->no, "'t' line without a polygon index (the early exporter's "
                    "form; the loader reads fields 1 to 4)");
    uint64_t idx = m->tris.lines++;
    const double *ix = v + (k - 3);
    if (k == 4 && v[0] != (double)idx)
        mfs_rd_violation(d->r, "line %u: polygon index %.0f, expected %llu", l->no, v[0],
                         (unsigned long long)idx);
    for (int i = 0; i < 3; i++) {
        if (ix[i] < 0)
            mfs_rd_violation(d->r, "line %u: negative vertex index %.0f", l->no, ix[i]);
        else if ((int64_t)ix[i] > m->max_index) {
            m->max_index = (int64_t)ix[i];
            m->max_index_line = l->no;
        }
    }
    return 0;
}

static int weight_line(dem *d, const line *l)
{
    dem_mesh *m = &d->m;
    double v[6];
    if (dem_want_fields(d, l, 6) || dem_numbers(d, l, 1, 6, v, "iiffff"))
        return -1;
    uint64_t idx = m->weights.lines++;
    if (v[0] != (double)idx)
        mfs_rd_violation(d->r, "line %u: weight index %.0f, expected %llu", l->no, v[0],
                         (unsigned long long)idx);
    if (v[1] < 0)
        mfs_rd_violation(d->r, "line %u: negative joint index %.0f", l->no, v[1]);
    else if ((int64_t)v[1] > d->max_joint) {
        d->max_joint = (int64_t)v[1];
        d->max_joint_line = l->no;
    }
    if (!isfinite(v[2]) || !isfinite(v[3]) || !isfinite(v[4]) || !isfinite(v[5]))
        mfs_rd_violation(d->r, "line %u: weight has NaN or infinite values", l->no);
    if (mfs_rd_grow(d->r, (void **)&m->bias, &m->cap_bias, idx + 1, sizeof(float)))
        return -1;
    m->bias[idx] = (float)v[2];
    return 0;
}

/* Each vertex's weights [start, start+count) must exist and sum to 1. */
static void check_skin(dem *d, const char *owner)
{
    dem_mesh *m = &d->m;
    uint64_t nw = m->weights.lines, nv = m->verts.lines;
    if (m->v_form != V_SKINNED) {
        if (nw)
            mfs_rd_violation(d->r, "%s%llu weights but the 'v' lines carry no weight range",
                             owner, (unsigned long long)nw);
        return;
    }
    mfs_tally range = {0}, sum = {0}, none = {0};
    for (uint64_t i = 0; i < nv; i++) {
        uint64_t start = m->refs[2 * i], cnt = m->refs[2 * i + 1];
        if (cnt == 0) {
            mfs_tally_add(&none, i, 0);
            continue;
        }
        if (start + cnt > nw) {
            mfs_tally_add(&range, i, (double)(start + cnt));
            continue;
        }
        double s = 0;
        for (uint64_t k = start; k < start + cnt; k++)
            s += m->bias[k];
        if (fabs(s - 1.0) > 1e-3)
            mfs_tally_add(&sum, i, s);
    }
    if (range.n)
        mfs_rd_violation(d->r, "%s%llu vertices reference weights past the %llu present (first: "
                         "vertex %llu)", owner, (unsigned long long)range.n,
                         (unsigned long long)nw, (unsigned long long)range.first);
    if (sum.n)
        mfs_rd_violation(d->r, "%sweights of %llu vertices do not sum to 1 (first: vertex %llu, "
                         "sum %.6g)", owner, (unsigned long long)sum.n,
                         (unsigned long long)sum.first, sum.value);
    if (none.n)
        mfs_rd_warn(d->r, "%s%llu vertices have no weight (first: %llu)", owner,
                    (unsigned long long)none.n, (unsigned long long)none.first);
}

static void close_mesh(dem *d)
{
    dem_mesh *m = &d->m;
    if (!m->open)
        return;
    char owner[MFS_SUMMARY_NAME_LEN + 16];
    snprintf(owner, sizeof owner, "mesh '%s': ", m->name);
    dem_check_count(d, owner, &m->verts, "verts", "v");
    dem_check_count(d, owner, &m->tris, "tris", "t");
    dem_check_count(d, owner, &m->weights, "weights", "w");
    if (m->max_index >= 0 && (uint64_t)m->max_index >= m->verts.lines)
        mfs_rd_violation(d->r, "line %u: %svertex index %lld out of range (%llu vertices)",
                         m->max_index_line, owner, (long long)m->max_index,
                         (unsigned long long)m->verts.lines);
    if (m->nonfinite.n)
        mfs_rd_violation(d->r, "%s%llu vertices have NaN or infinite values (first: line %llu)",
                         owner, (unsigned long long)m->nonfinite.n,
                         (unsigned long long)m->nonfinite.first);
    if (m->badnormal.n)
        mfs_rd_violation(d->r, "%s%llu normals are not unit length (first: line %llu, length "
                         "%g)", owner, (unsigned long long)m->badnormal.n,
                         (unsigned long long)m->badnormal.first, m->badnormal.value);
    if (m->zeronormal.n)
        mfs_rd_warn(d->r, "%s%llu normals are zero (first: line %llu)", owner,
                    (unsigned long long)m->zeronormal.n,
                    (unsigned long long)m->zeronormal.first);
    check_skin(d, owner);
    d->r->sum->vertices += m->verts.lines;
    d->r->sum->triangles += m->tris.lines;
    free(m->refs);
    free(m->bias);
    memset(m, 0, sizeof *m);
}

static void open_mesh(dem *d, const line *l)
{
    close_mesh(d);
    dem_mesh *m = &d->m;
    m->open = 1;
    m->verts.declared = m->tris.declared = m->weights.declared = -1;
    m->max_index = -1;
    mfs_rd_name(m->name, sizeof m->name, l->rest ? l->rest : "", l->rest_n);
    d->mesh_blocks++;
    d->sec = SEC_NONE;
}

/* ---- joints and sequences ---- */

/* The x, y, z of a unit quaternion whose w the reader derives:
 * x^2 + y^2 + z^2 may not exceed 1 (float rounding allowed). */
static int quat_xyz_ok(const double *q)
{
    return q[0] * q[0] + q[1] * q[1] + q[2] * q[2] <= 1.0 + 1e-3;
}

static int model_joint_line(dem *d, const line *l)
{
    /* j <name> <parent> <px> <py> <pz> <rx> <ry> <rz>; the name may hold
     * spaces, so the numbers are taken from the end. */
    if (l->all < 9 || l->all > MAX_TOK)
        return mfs_errf(d->r->err, "line %u: 'j' needs a name, a parent index and 6 numbers",
                        l->no);
    if (l->all > 9)
        dem_loader_rule(d, R_NAME, l->no, "'j' name '%.*s' is not one word",
                    (int)(l->t[l->nt - 7].s - l->t[1].s - 1), l->t[1].s);
    unsigned first = l->nt - 7;
    double v[7];
    if (dem_numbers(d, l, first, 7, v, "iffffff"))
        return -1;
    uint64_t idx = d->joints.lines++;
    if (v[0] != -1 && (v[0] < 0 || v[0] >= (double)idx))
        mfs_rd_violation(d->r, "line %u: joint %llu has parent %.0f (must be -1 or an earlier "
                         "joint)", l->no, (unsigned long long)idx, v[0]);
    for (int i = 1; i < 7; i++)
        if (!isfinite(v[i])) {
            mfs_rd_violation(d->r, "line %u: joint has NaN or infinite values", l->no);
            return 0;
        }
    if (!quat_xyz_ok(v + 4))
        mfs_rd_violation(d->r, "line %u: joint rotation (%g %g %g) is longer than a unit "
                         "quaternion", l->no, v[4], v[5], v[6]);
    return 0;
}

static int seq_joint_line(dem *d, const line *l)
{
    if (l->all < 5 || l->all > MAX_TOK)
        return mfs_errf(d->r->err, "line %u: 'j' needs a name and 3 integers", l->no);
    if (l->all > 5)
        dem_loader_rule(d, R_NAME, l->no, "'j' name '%.*s' is not one word",
                    (int)(l->t[l->nt - 3].s - l->t[1].s - 1), l->t[1].s);
    double v[3];
    if (dem_numbers(d, l, l->nt - 3, 3, v, "iii"))
        return -1;
    uint64_t idx = d->q.joints.lines++;
    if (v[0] != -1 && (v[0] < 0 || v[0] >= (double)idx))
        mfs_rd_violation(d->r, "line %u: sequence joint %llu has parent %.0f", l->no,
                         (unsigned long long)idx, v[0]);
    return 0;
}

static int bounds_line(dem *d, const line *l)
{
    double v[6];
    if (dem_want_fields(d, l, 6) || dem_numbers(d, l, 1, 6, v, NULL))
        return -1;
    d->q.bounds.lines++;
    if (!(v[0] <= v[3] && v[1] <= v[4] && v[2] <= v[5]))
        mfs_rd_violation(d->r, "line %u: bounds minimum exceeds maximum", l->no);
    return 0;
}

static int event_line(dem *d, const line *l)
{
    if (l->all < 4)
        return mfs_errf(d->r->err, "line %u: 'e' needs an index, a frame and a name", l->no);
    if (l->all > 4)
        dem_loader_rule(d, R_NAME, l->no, "'e' name '%.*s' is not one word",
                    (int)(l->rest + l->rest_n - l->t[3].s), l->t[3].s);
    double v[2];
    if (dem_numbers(d, l, 1, 2, v, "ii"))
        return -1;
    uint64_t idx = d->q.events.lines++;
    if (v[0] != (double)idx)
        mfs_rd_violation(d->r, "line %u: event index %.0f, expected %llu", l->no, v[0],
                         (unsigned long long)idx);
    if (v[1] < 0)
        mfs_rd_violation(d->r, "line %u: negative event frame %.0f", l->no, v[1]);
    else if ((int64_t)v[1] > d->q.max_e_frame) {
        d->q.max_e_frame = (int64_t)v[1];
        d->q.max_e_line = l->no;
    }
    return 0;
}

static int frame_line(dem *d, const line *l)
{
    dem_seq *q = &d->q;
    unsigned k = 2 + (unsigned)q->components;
    if (q->components > MAX_TOK - 3)
        return mfs_errf(d->r->err, "line %u: %lld components per frame line is more than this "
                        "reader takes", l->no, (long long)q->components);
    if (dem_want_fields(d, l, k))
        return -1;
    double v[MAX_TOK];
    if (dem_numbers(d, l, 1, 2, v, "ii") || dem_numbers(d, l, 3, k - 2, v + 2, NULL))
        return -1;
    q->frames.lines++;
    int bad = v[0] < 0 || v[1] < 0 ||
              (q->frames.declared >= 0 && v[0] >= (double)q->frames.declared) ||
              (q->joints.declared >= 0 && v[1] >= (double)q->joints.declared);
    for (unsigned i = 2; i < k; i++)
        bad |= !isfinite(v[i]);
    if (q->components == DEFAULT_COMPONENTS) /* t q s: q's x y z are fields 5..7 */
        bad |= !quat_xyz_ok(v + 5);
    if (bad && q->bad_f++ == 0)
        q->first_bad_f = l->no;
    return 0;
}

static void close_seq(dem *d)
{
    dem_seq *q = &d->q;
    if (!q->open)
        return;
    char owner[MFS_SUMMARY_NAME_LEN + 16];
    snprintf(owner, sizeof owner, "sequence '%s': ", q->name);
    dem_check_count(d, owner, &q->joints, "joints", "j");
    dem_check_count(d, owner, &q->bounds, "bounds", "b");
    dem_check_count(d, owner, &q->events, "events", "e");
    /* "There will be an f line for every joint in the frame." */
    if (q->frames.declared >= 0) {
        uint64_t joints = q->joints.declared >= 0 ? (uint64_t)q->joints.declared : 0;
        uint64_t want = (uint64_t)q->frames.declared * joints;
        if (q->frames.lines != want)
            mfs_rd_violation(d->r, "%sframes %lld x joints %llu needs %llu 'f' lines, found %llu",
                             owner, (long long)q->frames.declared, (unsigned long long)joints,
                             (unsigned long long)want, (unsigned long long)q->frames.lines);
    }
    if (q->bad_f)
        mfs_rd_violation(d->r, "line %u: %s%llu 'f' lines have a frame or joint out of range "
                         "or non-finite values or a rotation longer than a unit quaternion",
                         q->first_bad_f, owner,
                         (unsigned long long)q->bad_f);
    if (q->max_e_frame >= 0 && q->frames.declared >= 0 && q->max_e_frame >= q->frames.declared)
        mfs_rd_violation(d->r, "line %u: %sevent at frame %lld, past the %lld frames",
                         q->max_e_line, owner, (long long)q->max_e_frame,
                         (long long)q->frames.declared);
    memset(q, 0, sizeof *q);
}

static void open_seq(dem *d, const line *l)
{
    close_mesh(d);
    close_seq(d);
    dem_seq *q = &d->q;
    q->open = 1;
    q->components = DEFAULT_COMPONENTS;
    q->max_e_frame = -1;
    q->joints.declared = q->bounds.declared = q->events.declared = q->frames.declared = -1;
    mfs_rd_name(q->name, sizeof q->name, l->rest ? l->rest : "", l->rest_n);
    mfs_rd_anim_name(d->r, l->rest ? l->rest : "", l->rest_n);
    d->seq_blocks++;
    d->in_seq = 1;
    d->sec = SEC_NONE;
}

static int seq_value(dem *d, const line *l, int64_t *out)
{
    int64_t v;
    if (dem_want_fields(d, l, 1))
        return -1;
    if (dem_parse_i(l->t[1], &v) || v <= 0)
        return mfs_errf(d->r->err, "line %u: '%.*s' needs a positive integer", l->no,
                        (int)l->t[0].n, l->t[0].s);
    *out = v;
    return 0;
}

/* ---- dispatch ---- */

static int element(dem *d, const line *l, section need, const char *kw)
{
    if (d->sec == need)
        return 1;
    mfs_errf(d->r->err, "line %u: '%s' line outside its section", l->no, kw);
    return -1;
}

static int needs_mesh(dem *d, const line *l)
{
    if (d->m.open && !d->in_seq)
        return 0;
    return mfs_errf(d->r->err, "line %u: '%.*s' outside a mesh", l->no, (int)l->t[0].n,
                    l->t[0].s);
}

static int needs_seq(dem *d, const line *l)
{
    if (d->in_seq)
        return 0;
    return mfs_errf(d->r->err, "line %u: '%.*s' outside a sequence", l->no, (int)l->t[0].n,
                    l->t[0].s);
}

static int mesh_keyword(dem *d, const line *l, tok k, int *handled)
{
    *handled = 1;
    if (dem_tok_is(k, "mat") || dem_tok_is(k, "s")) {
        if (needs_mesh(d, l))
            return -1;
        dem_single_word(d, l, 1);
        if (d->m.has_mat++)
            mfs_rd_violation(d->r, "line %u: second material line in mesh '%s'", l->no,
                             d->m.name);
        return 0;
    }
    if (dem_tok_is(k, "verts"))
        return needs_mesh(d, l) ? -1 : dem_set_count(d, l, &d->m.verts, SEC_VERTS);
    if (dem_tok_is(k, "tris"))
        return needs_mesh(d, l) ? -1 : dem_set_count(d, l, &d->m.tris, SEC_TRIS);
    if (dem_tok_is(k, "weights"))
        return needs_mesh(d, l) ? -1 : dem_set_count(d, l, &d->m.weights, SEC_WEIGHTS);
    if (dem_tok_is(k, "v"))
        return element(d, l, SEC_VERTS, "v") < 0 ? -1 : vertex_line(d, l);
    if (dem_tok_is(k, "t"))
        return element(d, l, SEC_TRIS, "t") < 0 ? -1 : triangle_line(d, l);
    if (dem_tok_is(k, "w"))
        return element(d, l, SEC_WEIGHTS, "w") < 0 ? -1 : weight_line(d, l);
    *handled = 0;
    return 0;
}

static int seq_keyword(dem *d, const line *l, tok k, int *handled)
{
    *handled = 1;
    if (dem_tok_is(k, "rate")) {
        int64_t v;
        return needs_seq(d, l) || seq_value(d, l, &v) ? -1 : 0;
    }
    if (dem_tok_is(k, "components"))
        return needs_seq(d, l) || seq_value(d, l, &d->q.components) ? -1 : 0;
    if (dem_tok_is(k, "bounds"))
        return needs_seq(d, l) ? -1 : dem_set_count(d, l, &d->q.bounds, SEC_BOUNDS);
    if (dem_tok_is(k, "events"))
        return needs_seq(d, l) ? -1 : dem_set_count(d, l, &d->q.events, SEC_EVENTS);
    if (dem_tok_is(k, "frames"))
        return needs_seq(d, l) ? -1 : dem_set_count(d, l, &d->q.frames, SEC_FRAMES);
    if (dem_tok_is(k, "b"))
        return element(d, l, SEC_BOUNDS, "b") < 0 ? -1 : bounds_line(d, l);
    if (dem_tok_is(k, "e"))
        return element(d, l, SEC_EVENTS, "e") < 0 ? -1 : event_line(d, l);
    if (dem_tok_is(k, "f"))
        return element(d, l, SEC_FRAMES, "f") < 0 ? -1 : frame_line(d, l);
    *handled = 0;
    return 0;
}

static int model_keyword(dem *d, const line *l, tok k)
{
    if (dem_tok_is(k, "model")) {
        if (!l->rest)
            return mfs_errf(d->r->err, "line %u: 'model' needs a name", l->no);
        dem_single_word(d, l, 1);
        if (d->model_lines++)
            mfs_rd_violation(d->r, "line %u: second 'model' line", l->no);
        else
            mfs_rd_name(d->r->sum->name, sizeof d->r->sum->name, l->rest, l->rest_n);
        return 0;
    }
    if (dem_tok_is(k, "joints"))
        return d->in_seq ? dem_set_count(d, l, &d->q.joints, SEC_SJOINTS)
                         : dem_set_count(d, l, &d->joints, SEC_NONE);
    if (dem_tok_is(k, "j")) {
        if (d->sec == SEC_SJOINTS)
            return seq_joint_line(d, l);
        /* Model joints follow the count lines, before the first mesh. */
        if (d->joints.declared < 0 || d->m.open || d->in_seq)
            return mfs_errf(d->r->err, "line %u: 'j' line outside its section", l->no);
        return model_joint_line(d, l);
    }
    if (dem_tok_is(k, "meshes"))
        return dem_set_count(d, l, &d->meshes, SEC_NONE);
    if (dem_tok_is(k, "sequences"))
        return dem_set_count(d, l, &d->sequences, SEC_NONE);
    if (dem_tok_is(k, "mesh")) {
        if (!l->rest)
            return mfs_errf(d->r->err, "line %u: 'mesh' needs a name", l->no);
        dem_single_word(d, l, 1);
        close_seq(d);
        d->in_seq = 0;
        open_mesh(d, l);
        return 0;
    }
    if (dem_tok_is(k, "sequence")) {
        if (!l->rest)
            return mfs_errf(d->r->err, "line %u: 'sequence' needs a name", l->no);
        dem_single_word(d, l, 1);
        open_seq(d, l);
        return 0;
    }
    mfs_rd_violation(d->r, "line %u: unknown keyword '%.*s'", l->no, (int)(k.n > 40 ? 40 : k.n),
                     k.s);
    return 0;
}

/* The loader sets the version from a line whose first token is `DEM` and
 * ignores any other first token, so `DEM_10` leaves it unset. */
static int header_line(dem *d, const line *l, const char *raw, size_t n)
{
    tok k = l->t[0];
    int64_t v = 0;
    if (dem_tok_is(k, "DEM") && l->all == 2 && dem_parse_i(l->t[1], &v) == 0) {
        if (v == 10 && !(n == 6 && memcmp(raw, "DEM 10", 6) == 0))
            dem_loader_rule(d, R_HEADER, l->no, "header '%.*s' is not exactly 'DEM 10'",
                        (int)(n > 40 ? 40 : n), raw);
    } else if (k.n > 4 && memcmp(k.s, "DEM_", 4) == 0 && l->all == 1 &&
               dem_parse_i((tok){k.s + 4, k.n - 4}, &v) == 0) {
        dem_loader_rule(d, R_HEADER, l->no, "header 'DEM_%lld' is the older form of 'DEM %lld', "
                    "which the loader does not recognise (it reads only 'DEM 10')", (long long)v,
                    (long long)v);
    } else {
        return mfs_errf(d->r->err, "line %u: expected the header 'DEM 10'", l->no);
    }
    d->r->sum->version = (int)(v > 0 && v < 1000000 ? v : 0);
    if (v != 10)
        mfs_rd_violation(d->r, "line %u: version %lld (the format is version 10)", l->no,
                         (long long)v);
    d->header = 1;
    return 0;
}

static int one_line(dem *d, const char *s, size_t n, unsigned no)
{
    if (n && s[n - 1] == '\r') {
        mfs_rd_violation(d->r, "line %u ends with CR (LF only)", no);
        n--;
    }
    line l;
    l.no = no;
    dem_split(&l, s, n);
    if (l.all == 0) {
        dem_loader_rule(d, R_EMPTY, no, "empty line (the loader reads the first token of every "
                    "line and there is none)");
        return 0;
    }
    tok k = l.t[0];
    if (k.s[0] == '#' || (k.n >= 2 && k.s[0] == '/' && k.s[1] == '/'))
        return 0;
    dem_check_raw_line(d, s, n, no);
    if (!d->header)
        return header_line(d, &l, s, n);
    int handled, rc = mesh_keyword(d, &l, k, &handled);
    if (handled)
        return rc;
    rc = seq_keyword(d, &l, k, &handled);
    if (handled)
        return rc;
    return model_keyword(d, &l, k);
}

static void finish(dem *d)
{
    close_mesh(d);
    close_seq(d);
    d->meshes.lines = d->mesh_blocks;
    d->sequences.lines = d->seq_blocks;
    dem_check_count(d, "", &d->joints, "joints", "j");
    dem_check_count(d, "", &d->meshes, "meshes", "mesh");
    dem_check_count(d, "", &d->sequences, "sequences", "sequence");
    mfs_summary *s = d->r->sum;
    s->meshes = d->mesh_blocks;
    s->animations = d->seq_blocks;
    uint64_t joints = d->joints.lines ? d->joints.lines
                      : d->joints.declared > 0 ? (uint64_t)d->joints.declared : 0;
    s->bones = joints;
    if (d->max_joint >= 0 && (uint64_t)d->max_joint >= joints)
        mfs_rd_violation(d->r, "line %u: weight names joint %lld but the model has %llu joints",
                         d->max_joint_line, (long long)d->max_joint, (unsigned long long)joints);
    dem_loader_totals(d);
}

int mfs_read_dem(mfs_rd *r, const uint8_t *p, size_t n)
{
    const char *s = (const char *)p;
    if (memchr(s, 0, n))
        return mfs_errf(r->err, "offset %zu: NUL byte in a text file",
                        (size_t)((const char *)memchr(s, 0, n) - s));
    dem d = {.r = r, .max_joint = -1};
    d.joints.declared = d.meshes.declared = d.sequences.declared = -1;
    size_t at = 0;
    unsigned no = 0;
    int rc = 0;
    while (at < n && rc == 0) {
        const char *nl = memchr(s + at, '\n', n - at);
        size_t end = nl ? (size_t)(nl - s) : n;
        rc = one_line(&d, s + at, end - at, ++no);
        at = end + 1;
    }
    if (rc == 0 && !d.header)
        rc = mfs_errf(r->err, "empty file: expected the header 'DEM 10'");
    if (rc == 0 && n && s[n - 1] != '\n')
        mfs_rd_violation(r, "the last line does not end with LF");
    if (rc == 0)
        finish(&d);
    free(d.m.refs);
    free(d.m.bias);
    return rc;
}

/* Block frames for the .gmf writer (gmf_frames.h, docs/formats/gmf.md
 * "Placement"). */
#include "gmf_frames.h"

static void linear_part(mfs_mat4 *r, const mfs_mat4 *m)
{
    *r = *m;
    r->m[3] = r->m[7] = r->m[11] = 0.0f;
    r->m[12] = r->m[13] = r->m[14] = 0.0f;
    r->m[15] = 1.0f;
}

static void invert_or_identity(mfs_mat4 *r, const mfs_mat4 *m)
{
    if (mfs_mat4_invert(r, m) < 0)
        mfs_mat4_identity(r);
}

void gmf_plan_frames(const mfs_scene *s, const mfs_mat4 *world, const int32_t *bone_id,
                     const mfs_mat4 *bind_world, gmf_frame *out)
{
    for (uint32_t n = 0; n < s->n_nodes; n++) {
        gmf_frame *f = &out[n];
        int32_t p = s->nodes[n].parent;
        f->bone = n == 0 ? -1 : bone_id[n] >= 0 ? (int32_t)n : out[p].bone;
        if (f->bone == (int32_t)n) {
            /* a BONE: it is where its bind pose puts it */
            f->target = bind_world[n];
            f->at = bind_world[n];
            mfs_mat4_identity(&f->bake);
        } else if (f->bone >= 0) {
            /* below a bone: rides with it, so its rest chain from the bone
             * is applied to the bone's bind pose; the bone's axes are kept,
             * for a NODE's matrix must be a translation in them */
            mfs_mat4_mul(&f->target, &out[p].target, &s->nodes[n].local);
            linear_part(&f->at, &out[p].at);
            f->at.m[3] = f->target.m[3];
            f->at.m[7] = f->target.m[7];
            f->at.m[11] = f->target.m[11];
        } else {
            /* outside the skeleton: a translation to the world origin; the
             * world's rotation and scale are baked into the content */
            f->target = world[n];
            mfs_mat4_identity(&f->at);
            f->at.m[3] = world[n].m[3];
            f->at.m[7] = world[n].m[7];
            f->at.m[11] = world[n].m[11];
        }
        mfs_mat4 lin;
        linear_part(&lin, &f->at);
        invert_or_identity(&f->in_axes, &lin);
        if (f->bone != (int32_t)n) {
            linear_part(&lin, &f->target);
            mfs_mat4_mul(&f->bake, &f->in_axes, &lin);
        }
        invert_or_identity(&f->unbake, &f->bake);
    }
}

void gmf_limb_translation(const mfs_scene *s, const gmf_frame *fr, uint32_t n, float t[3])
{
    const mfs_mat4 *at = &fr[n].at;
    int32_t p = s->nodes[n].parent;
    if (p < 0) {
        t[0] = at->m[3], t[1] = at->m[7], t[2] = at->m[11];
        return;
    }
    const mfs_mat4 *pa = &fr[p].at;
    float d[3] = {at->m[3] - pa->m[3], at->m[7] - pa->m[7], at->m[11] - pa->m[11]};
    if (mfs_mat4_is_identity(&fr[p].in_axes))
        t[0] = d[0], t[1] = d[1], t[2] = d[2]; /* exact: no product rounding */
    else
        mfs_mat4_vector(&fr[p].in_axes, d, t);
}

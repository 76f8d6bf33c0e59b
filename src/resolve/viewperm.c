/* Who may read a view (docs/security.md, S1): the mount's rule, and
 * meshfs-convert's for the files it writes.
 *
 * A view is owned by its model's owner and group; the question is which of
 * its three read bits may be set so that nobody reads through the view what
 * they could not read directly: the model, each dependency, and each folder
 * those lie in (search permission) outside the model's own folder, whose
 * folders the kernel checks on the way to the view anyway.
 *
 * For each input the rule asks, per class of the view: which classes of the
 * input could a user in it fall into?  The daemon does not look up group
 * memberships (a name service call in a FUSE request can hang), so it
 * assumes the worst:
 *   - the view's owner is the input's owner when the uids match; otherwise
 *     it is the input's group or "other", unknown which: both bits needed;
 *   - a user of the view's group or "other" class is not the view's owner,
 *     but may be the input's owner if that is someone else: the input's
 *     owner bit is needed too;
 *   - such a user is in the input's group when the input's group is the
 *     view's group (then for the view's "other" class, certainly not);
 *     otherwise either, so both the group and "other" bits are needed.
 * With an input owned like the model this is a plain AND of the bits. */
#include "meshfs/views.h"

mode_t mfs_perm_narrow(mode_t perm, uid_t vuid, gid_t vgid, uid_t fuid, gid_t fgid, mode_t fmode,
                       int search)
{
    int bu = (fmode & (search ? S_IXUSR : S_IRUSR)) != 0;
    int bg = (fmode & (search ? S_IXGRP : S_IRGRP)) != 0;
    int bo = (fmode & (search ? S_IXOTH : S_IROTH)) != 0;
    int other_owner = fuid != vuid;
    int same_group = fgid == vgid;
    int u = other_owner ? bg && bo : bu;
    int g = (!other_owner || bu) && (same_group ? bg : bg && bo);
    int o = (!other_owner || bu) && (same_group ? bo : bg && bo);
    return perm & (mode_t)((u ? S_IRUSR : 0) | (g ? S_IRGRP : 0) | (o ? S_IROTH : 0));
}

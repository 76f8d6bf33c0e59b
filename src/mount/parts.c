/* The states of names/ and coherence/ inside the mount's (mfs_fs.names,
 * mfs_fs.coherence): what they read of the mount, copied or lent once,
 * and coherence's calls up into the session, which go through here so
 * that nothing below the mount sees mfs_fs or the session. */
#include "mount.h"

static int up_renew(void *ctx, const char *path, uint64_t node, const struct stat *kept)
{
    mfs_fs *fs = ctx;
    return fs->session && fs->session->renew(fs, path, node, kept);
}

static int up_node_current(void *ctx, uint64_t node)
{
    mfs_fs *fs = ctx;
    return fs->session && fs->session->node_current(fs, node);
}

void mfs_fs_parts_init(mfs_fs *fs)
{
    mfs_names_state *ns = &fs->names;
    ns->src = fs->cfg.src;
    ns->lowercase_names = fs->cfg.lowercase_names;
    ns->hide_sources = fs->cfg.hide_sources;
    ns->formats = fs->cfg.formats;
    ns->shown = fs->cfg.shown;
    ns->memo_size = fs->cfg.memo_size;
    ns->cache = fs->cache;
    ns->spawner = fs->spawner;

    mfs_coherence *co = &fs->coherence;
    co->limits = fs->cfg.limits;
    co->cache_size = fs->cfg.cache_size;
    co->cache = fs->cache;
    co->names = ns;
    co->renew = up_renew;
    co->node_current = up_node_current;
    co->ctx = fs;
}

/* The FUSE operations: a read-only mirror of SRC plus the views (the
 * directory operations are listing.c's).
 *
 * Paths arrive as "/dir/name"; everything is resolved beneath the SRC
 * directory descriptor following no symbolic link (beneath.c), never
 * through the mount or an absolute path. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../coherence/coherence.h"
#include "mount.h"
#include "meshfs/remote.h"
#include "meshfs/rules.h"
#include "meshfs/settings.h"

#define XATTR_ERROR "user.meshfs.error"
#define XATTR_WARNING "user.meshfs.warning"
#define XATTR_WARNINGS "user.meshfs.warnings"
#define XATTR_STATS "user.meshfs.stats"
#define XATTR_EXPLAIN "user.meshfs.explain"
#define XATTR_EXPLAIN_JSON "user.meshfs.explain.json"


/* The one place a mount path becomes SRC-relative: the real path, in a
 * per-thread buffer valid until this thread's next call.  NULL with errno
 * set when the path shows nothing (-o lowercase_names, casemap.c).  The
 * buffer is the thread's, not the mount's: each request thread's answer
 * lives until its own next call (mount.h). */
const char *mfs_ops_rel(mfs_fs *fs, const char *path)
{
    static _Thread_local char buf[4096];
    while (*path == '/')
        path++;
    if (!fs->cfg.lowercase_names)
        return path[0] ? path : ".";
    mfs_err err;
    if (mfs_casemap_path(&fs->names, path, buf, sizeof buf, &err) < 0) {
        errno = mfs_err_errno(&err);
        return NULL;
    }
    return buf[0] ? buf : ".";
}

/* Splits "a/b/c" into dir "a/b" and name "c" (dir "" at the root). */
static void split(const char *r, char *dir, size_t n, const char **name)
{
    const char *slash = strrchr(r, '/');
    if (!slash) {
        dir[0] = '\0';
        *name = r;
        return;
    }
    snprintf(dir, n, "%.*s", (int)(slash - r), r);
    *name = slash + 1;
}

static int is_hidden_source(mfs_fs *fs, const char *r, const struct stat *st)
{
    if (!fs->cfg.hide_sources || !S_ISREG(st->st_mode))
        return 0;
    const char *slash = strrchr(r, '/');
    const char *name = slash ? slash + 1 : r;
    return mfs_spawner_is_model(fs->spawner, name) || mfs_settings_is_file(name);
}

static void ref_free(mfs_view_ref *ref)
{
    free(ref->model);
    free(ref->base);
}

/* Is r a view?  Fills ref and returns 1; 0 if not; -1 with err (its code
 * the errno to answer). */
static int find_view(mfs_fs *fs, const char *r, char *dir, size_t n, mfs_view_ref *ref,
                     mfs_err *err)
{
    const char *name;
    split(r, dir, n, &name);
    if (!strcmp(name, MFS_LGEPKG_FILE_NAME)) {
        /* the folder's package: a view whose format is MFS_FS_LGEPKG */
        int p = mfs_lgepkg_present(fs, dir, err);
        if (p < 0) {
            int e = mfs_err_errno(err);
            return mfs_err_sys(err, e, "%s: %s", r, strerror(e));
        }
        if (p == 0)
            return 0;
        ref->model = strdup("");
        ref->base = strdup(MFS_LGEPKG_DEFAULT_NAME);
        ref->format = MFS_FS_LGEPKG;
        if (ref->model && ref->base)
            return 1;
        ref_free(ref);
        return mfs_err_sys(err, ENOMEM, "%s: out of memory", r);
    }
    return mfs_dirmap_lookup(&fs->names, dir, name, ref, err);
}

/* Whether a view is not shown: a known failure under -o hide_failed, or
 * any view of a model that holds no mesh (docs/import.md, "Files without
 * geometry"). */
static int failure_hidden(const mfs_fs *fs, mfs_view_outcome o, const mfs_view_info *info)
{
    return o == MFS_VIEW_FAILED_MODEL && (fs->cfg.hide_failed || info->no_views);
}

/* The one place a resolver outcome that is not a HIT becomes an errno
 * (meshfs/views.h): a model gone, or a view not shown, is not there;
 * anything else is an I/O error. */
static int failure_errno(const mfs_fs *fs, mfs_view_outcome o, const mfs_view_info *info)
{
    if (o == MFS_VIEW_FAILED_MACHINE && info->errnum == ENOENT)
        return -ENOENT;
    if (failure_hidden(fs, o, info))
        return -ENOENT;
    return -EIO;
}

/* Test builds only (tests/integration/test_listing.py): with
 * MESHFS_TEST_FG_DELAY_MS=N, a stat that queued prefetches waits N ms
 * before it resolves its own view, so the prefetch threads always reach
 * the free slots first. */
static void test_fg_delay(void)
{
    mfs_test_delay("MESHFS_TEST_FG_DELAY_MS");
}

/* The view's attributes; *have_key and key: its entry's, when it has one. */
static int view_attr(mfs_fs *fs, const char *dir, const mfs_view_ref *ref, struct stat *st,
                     uint8_t key[16], int *have_key)
{
    *have_key = 0;
    if (ref->format == MFS_FS_LGEPKG)
        return mfs_lgepkg_attr(fs, dir, st);
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref->model);
    struct stat mst;
    if (mfs_beneath_stat(&fs->names, mpath, &mst) < 0)
        return -errno;
    mfs_view_info vi;
    mfs_err err;
    /* cold right after a listing (ls -l): its neighbours convert meanwhile,
     * after this one has its slot (mfs_fs_fg_coming) */
    mfs_prefetch_attr(fs, dir, ref);
    test_fg_delay();
    mfs_view_given given = {.model = &mst, .folder = &ref->dir_st};
    mfs_view_outcome o = mfs_view_get_given(fs, dir, ref->model, ref->base, ref->format,
                                            MFS_VIEW_ATTR, &given, &vi, &err);
    mfs_fs_fg_done(fs);
    if (o == MFS_VIEW_FAILED_MACHINE) {
        /* failed for now (e.g. the cache disk is full): like a failed
         * conversion, an empty view whose reason can be read; with no
         * reason to read, an error */
        if (vi.errnum == ENOENT || !err.msg[0])
            return failure_errno(fs, o, &vi);
        vi.size = 0;
        vi.mtime = mst.st_mtim;
    } else if (failure_hidden(fs, o, &vi)) {
        return failure_errno(fs, o, &vi);
    }
    if (o == MFS_VIEW_HIT || o == MFS_VIEW_FAILED_MODEL) {
        memcpy(key, vi.key.b, 16);
        *have_key = 1;
    }
    mfs_view_stat(&mst, &vi, mfs_inode_where(dir, ref->base), ref->format, st);
    return 0;
}

/* The attributes the kernel is to hold for path.  lookup: for a LOOKUP of
 * the name, which moves a view to a new inode when the one it has holds
 * another entry for open handles (kview.c). */
static int path_attr(mfs_fs *fs, const char *path, struct stat *st, int lookup,
                     const mfs_ops_prestat *pre)
{
    const char *r = mfs_ops_rel(fs, path);
    if (!r)
        return -errno;
    int rc;
    if (pre && pre->known && !strcmp(pre->rel, r)) {
        rc = pre->rc;
        *st = pre->st;
    } else {
        rc = mfs_beneath_stat(&fs->names, r, st) == 0 ? 0 : -errno;
    }
    if (rc == 0) {
        if (is_hidden_source(fs, r, st))
            return -ENOENT;
        st->st_ino = mfs_inode_src(&fs->names, st->st_dev, st->st_ino);
        return 0;
    }
    if (rc != -ENOENT)
        return rc;
    char dir[4096];
    mfs_view_ref ref;
    mfs_err verr;
    int v = find_view(fs, r, dir, sizeof dir, &ref, &verr);
    if (v <= 0)
        return v == 0 ? -ENOENT : -mfs_err_errno(&verr);
    uint8_t key[16];
    int have_key;
    rc = view_attr(fs, dir, &ref, st, key, &have_key);
    ref_free(&ref);
    if (rc < 0)
        return rc;
    /* what the kernel will hold (kview.c) */
    if (lookup)
        mfs_renew_named_attr(&fs->coherence, path, have_key ? key : NULL, st);
    else
        mfs_kview_attr(fs->coherence.kviews, path, st);
    return 0;
}

int mfs_ops_getattr(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre)
{
    atomic_fetch_add(&fs->stats.attr_requests, 1);
    return path_attr(fs, path, st, 0, pre);
}


int mfs_ops_lookup(mfs_fs *fs, const char *path, struct stat *st, const mfs_ops_prestat *pre)
{
    atomic_fetch_add(&fs->stats.attr_requests, 1);
    return path_attr(fs, path, st, 1, pre);
}


int mfs_ops_open_path(mfs_fs *fs, const char *path, mfs_ops_opened *out)
{
    const char *r = mfs_ops_rel(fs, path);
    if (!r)
        return -errno;
    *out = (mfs_ops_opened){.fd = -1};
    struct stat st;
    if (mfs_beneath_stat(&fs->names, r, &st) == 0 && !is_hidden_source(fs, r, &st)) {
        /* never a blocking open, which a lease would hold up to the lease
         * break time: O_NONBLOCK starts the break and answers EWOULDBLOCK,
         * and the caller waits elsewhere (leasewait.h).  For a regular file
         * only a lease answers so (FIFOs never reach the daemon). */
        out->fd = mfs_beneath_open(&fs->names, r, O_RDONLY | O_NONBLOCK);
        if (out->fd < 0) {
            int e = errno;
            return e == EWOULDBLOCK && S_ISREG(st.st_mode) ? MFS_OPS_LEASED : -e;
        }
        int fl = fcntl(out->fd, F_GETFL);
        if (fl >= 0)
            fcntl(out->fd, F_SETFL, fl & ~O_NONBLOCK); /* reads as a plain open's */
        return 0;
    }
    char dir[4096];
    mfs_view_ref ref;
    mfs_err verr;
    int v = find_view(fs, r, dir, sizeof dir, &ref, &verr);
    if (v <= 0)
        return v == 0 ? -ENOENT : -mfs_err_errno(&verr);
    if (ref.format == MFS_FS_LGEPKG) {
        mfs_cache_hit hit;
        mfs_cache_key key;
        struct stat pst;
        int rc = mfs_lgepkg_open(fs, dir, &hit, &key, &pst);
        ref_free(&ref);
        if (rc < 0)
            return rc == -ENOENT ? -ENOENT : -EIO;
        *out = (mfs_ops_opened){.is_view = 1, .fd = hit.fd, .offset = hit.offset,
                                .length = hit.length, .st = pst};
        memcpy(out->key, key.b, 16);
        return 0;
    }
    mfs_view_info vi;
    mfs_err err;
    mfs_view_outcome o = mfs_view_get(fs, dir, ref.model, ref.base, ref.format, MFS_VIEW_OPEN,
                                      &vi, &err);
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref.model);
    int format = ref.format;
    uint64_t where = mfs_inode_where(dir, ref.base);
    ref_free(&ref);
    struct stat mst;
    /* the model under a lease: its hash's O_NONBLOCK open answered
     * EWOULDBLOCK (beneath.c), and the open waits as a plain file's */
    int rc = o == MFS_VIEW_HIT                                         ? 0
             : o == MFS_VIEW_FAILED_MACHINE && vi.errnum == EWOULDBLOCK ? MFS_OPS_LEASED
                                                                        : failure_errno(fs, o, &vi);
    if (rc == 0 && mfs_beneath_stat(&fs->names, mpath, &mst) < 0)
        rc = errno == ENOENT ? -ENOENT : -EIO;
    if (rc != 0) {
        mfs_cache_hit_release(&vi.hit);
        return rc;
    }
    out->is_view = 1;
    out->fd = vi.hit.fd;
    out->offset = vi.hit.offset;
    out->length = vi.hit.length;
    memcpy(out->key, vi.key.b, 16);
    vi.hit.fd = -1;
    mfs_cache_hit_release(&vi.hit);
    /* A cache entry's bytes never change, so the kernel may keep its pages
     * as long as this path still shows the same entry; kview.c decides,
     * from what the kernel was last told. */
    mfs_view_stat(&mst, &vi, where, format, &out->st);
    return 0;
}


int mfs_ops_leased(mfs_fs *fs, const char *path)
{
    const char *r = mfs_ops_rel(fs, path);
    struct stat st;
    char dir[4096], mpath[4200];
    mfs_view_ref ref;
    if (!r)
        return 0;
    if (mfs_beneath_stat(&fs->names, r, &st) < 0) {
        mfs_err verr;
        if (find_view(fs, r, dir, sizeof dir, &ref, &verr) <= 0)
            return 0;
        snprintf(mpath, sizeof mpath, "%s%s%s", dir, dir[0] ? "/" : "", ref.model);
        ref_free(&ref);
        r = mpath;
    }
    int fd = mfs_beneath_open(&fs->names, r, O_RDONLY | O_NONBLOCK);
    if (fd >= 0)
        close(fd);
    return fd < 0 && errno == EWOULDBLOCK;
}


int mfs_ops_readlink(mfs_fs *fs, const char *path, char *buf, size_t size)
{
    const char *r = mfs_ops_rel(fs, path);
    ssize_t n = r ? mfs_beneath_readlink(&fs->names, r, buf, size - 1) : -1;
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    /* a relative link is followed inside the mount, where only lowercase
     * names exist */
    if (buf[0] != '/')
        mfs_casemap_fold(&fs->names, buf);
    return 0;
}

int mfs_ops_statfs(mfs_fs *fs, struct statvfs *sv)
{
    return fstatvfs(fs->names.rootfd, sv) < 0 ? -errno : 0;
}

/* The bounded structures' sizes (docs/scale.md): entries held now and
 * evictions for their caps, so tests can see that the caps hold. */
static int bounds_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_views_stats vs;
    mfs_views_get_stats(fs->views, &vs);
    uint64_t kv, kv_ev, kv_bytes, dt, dn, d_ev;
    mfs_kview_stats(fs->coherence.kviews, &kv, &kv_ev, &kv_bytes);
    mfs_dirmaps_stats(fs->names.dirs, &dt, &dn, &d_ev);
    mfs_cache_stats cs;
    mfs_cache_get_stats(fs->cache, &cs);
    mfs_session_counts sc = {0};
    if (fs->session)
        fs->session->counts(fs, &sc);
    return snprintf(buf, n,
                    " memo_size=%llu memo_entries=%llu memo_evictions=%llu kview_entries=%llu "
                    "kview_evictions=%llu dirmap_tables=%llu dirmap_names=%llu "
                    "dirmap_evictions=%llu listing_handles=%llu listing_names=%llu "
                    "index_records=%llu index_shard_loads=%llu index_shard_drops=%llu "
                    "cache_files_opened=%llu folder_record_hits=%llu folder_records_written=%llu "
                    "inodes=%llu inode_files=%llu inode_cap=%llu inode_drops=%llu "
                    "inodes_freed=%llu readdir_ahead_sent=%llu readdir_ahead_dropped=%llu "
                    "readdir_ahead_waiting=%llu memo_bytes=%llu memo_byte_cap=%llu "
                    "kview_bytes=%llu",
                    (unsigned long long)vs.cap, (unsigned long long)vs.entries,
                    (unsigned long long)vs.evictions, (unsigned long long)kv,
                    (unsigned long long)kv_ev, (unsigned long long)dt, (unsigned long long)dn,
                    (unsigned long long)d_ev, (unsigned long long)sc.listing_handles, (unsigned long long)sc.listing_names,
                    (unsigned long long)cs.index_records, (unsigned long long)cs.index_shard_loads,
                    (unsigned long long)cs.index_shard_drops, (unsigned long long)cs.files_opened,
                    (unsigned long long)atomic_load(&fs->stats.folder_record_hits),
                    (unsigned long long)atomic_load(&fs->stats.folder_records_written),
                    (unsigned long long)sc.nodes, (unsigned long long)sc.node_files,
                    (unsigned long long)sc.node_cap, (unsigned long long)sc.nodes_offered,
                    (unsigned long long)sc.nodes_freed, (unsigned long long)sc.ahead_sent,
                    (unsigned long long)sc.ahead_dropped, (unsigned long long)sc.ahead_waiting,
                    (unsigned long long)vs.bytes, (unsigned long long)vs.byte_cap,
                    (unsigned long long)kv_bytes);
}

static int stats_text_base(mfs_fs *fs, char *buf, size_t n);

/* The remote tier's counters (zeros without one); remote_queue is the
 * uploads waiting or in flight, so a test can wait for it to drain. */
static int remote_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_remote_stats rs = {0};
    if (fs->remote)
        mfs_remote_get_stats(fs->remote, &rs);
    const mfs_counter c[] = {
        {"remote_hits", rs.hits},
        {"remote_misses", rs.misses},
        {"remote_errors", rs.errors},
        {"remote_bytes_down", rs.bytes_down},
        {"remote_bytes_up", rs.bytes_up},
        {"remote_uploads", rs.uploads},
        {"remote_queue", rs.queue},
        {"remote_dropped", rs.dropped},
        {"remote_read_backoffs", rs.read_backoffs},
        {"remote_upload_backoffs", rs.upload_backoffs},
        {"remote_repaired", rs.repaired},
        {"remote_owed", rs.owed},
        {"remote_owed_sent", rs.owed_sent},
        {"remote_owed_dropped", rs.owed_dropped},
        {"remote_slow", rs.slow},
    };
    return mfs_counters_text(buf, n, c, sizeof c / sizeof *c);
}

/* The remote tier's leases (meshfs/remote.h, "leases"; zeros without one). */
static int lease_text(mfs_fs *fs, char *buf, size_t n)
{
    mfs_remote_lease_stats ls = {0};
    if (fs->remote)
        mfs_remote_lease_get_stats(fs->remote, &ls);
    const mfs_counter c[] = {
        {"remote_leases", ls.taken},
        {"remote_lease_waits", ls.waited},
        {"remote_lease_takeovers", ls.taken_over},
        {"remote_lock_unsupported", ls.unsupported},
        {"remote_lease_errors", ls.errors},
    };
    return mfs_counters_text(buf, n, c, sizeof c / sizeof *c);
}

static int stats_text(mfs_fs *fs, char *buf, size_t n)
{
    int len = stats_text_base(fs, buf, n);
    char more[4096];
    int m = bounds_text(fs, more, sizeof more);
    if (m > 0 && (size_t)m < sizeof more)
        m += remote_text(fs, more + m, sizeof more - (size_t)m);
    if (m > 0 && (size_t)m < sizeof more)
        m += lease_text(fs, more + m, sizeof more - (size_t)m);
    if (m > 0 && (size_t)m < sizeof more && fs->session)
        m += fs->session->share_text(fs, more + m, sizeof more - (size_t)m);
    /* the base ends in a newline: the bounds go before it, if they fit */
    if (len <= 0 || m <= 0 || (size_t)m >= sizeof more || (size_t)len + (size_t)m >= n)
        return len;
    memcpy(buf + len - 1, more, (size_t)m);
    len += m;
    buf[len - 1] = '\n';
    buf[len] = '\0';
    return len;
}

static int stats_text_base(mfs_fs *fs, char *buf, size_t n)
{
    mfs_cache_stats cs;
    mfs_cache_get_stats(fs->cache, &cs);
    pthread_mutex_lock(&fs->job_lock);
    unsigned slot_waiters = fs->jobs_fg_waiting;
    pthread_mutex_unlock(&fs->job_lock);
    return snprintf(buf, n,
                    "conversions=%llu conversion_failures=%llu views_served=%llu attr_requests=%llu "
                    "cache_hits=%llu "
                    "cache_misses=%llu cache_negative_hits=%llu cache_stores=%llu "
                    "cache_corrupt_discarded=%llu cache_evictions=%llu files_hashed=%llu "
                    "readdir_requests=%llu conversions_running=%llu conversions_peak=%llu "
                    "read_requests=%llu passthrough_opens=%llu views_renewed=%llu prefetched=%llu "
                    "prefetch_queued=%u slot_waiters=%u cache_store_failures=%llu "
                    "conversions_redone=%llu packages_redone=%llu views_evicted_at_store=%llu\n",
                    (unsigned long long)atomic_load(&fs->stats.conversions),
                    (unsigned long long)atomic_load(&fs->stats.conversion_failures),
                    (unsigned long long)atomic_load(&fs->stats.views_served),
                    (unsigned long long)atomic_load(&fs->stats.attr_requests),
                    (unsigned long long)cs.view_hits, (unsigned long long)cs.view_misses,
                    (unsigned long long)cs.negative_hits, (unsigned long long)cs.stores,
                    (unsigned long long)cs.corrupt_discarded, (unsigned long long)cs.evictions,
                    (unsigned long long)cs.files_hashed,
                    (unsigned long long)atomic_load(&fs->stats.readdir_requests),
                    (unsigned long long)atomic_load(&fs->stats.conversions_running),
                    (unsigned long long)atomic_load(&fs->stats.conversions_peak),
                    (unsigned long long)atomic_load(&fs->stats.read_requests),
                    (unsigned long long)atomic_load(&fs->stats.passthrough_opens),
                    (unsigned long long)atomic_load(&fs->coherence.views_renewed),
                    (unsigned long long)atomic_load(&fs->stats.prefetched), mfs_prefetch_waiting(fs),
                    slot_waiters,
                    (unsigned long long)atomic_load(&fs->stats.cache_store_failures),
                    (unsigned long long)atomic_load(&fs->stats.conversions_redone),
                    (unsigned long long)atomic_load(&fs->stats.packages_redone),
                    (unsigned long long)atomic_load(&fs->coherence.views_evicted_at_store));
}

/* The view's failure reason (for user.meshfs.error); 0 if it has none. */
static int view_error(mfs_fs *fs, const char *r, char *out, size_t n)
{
    char dir[4096];
    mfs_view_ref ref;
    mfs_err verr;
    int v = find_view(fs, r, dir, sizeof dir, &ref, &verr);
    if (v <= 0)
        return v == 0 ? -ENODATA : -mfs_err_errno(&verr);
    if (ref.format == MFS_FS_LGEPKG) {
        ref_free(&ref);
        return mfs_lgepkg_error(fs, dir, out, n);
    }
    mfs_view_info vi;
    mfs_err err;
    mfs_view_outcome o = mfs_view_get(fs, dir, ref.model, ref.base, ref.format, MFS_VIEW_ATTR,
                                      &vi, &err);
    ref_free(&ref);
    if (o == MFS_VIEW_HIT)
        return 0;
    if (o == MFS_VIEW_FAILED_MACHINE && !err.msg[0])
        return -EIO;
    return snprintf(out, n, "%s", err.msg[0] ? err.msg : "conversion failed");
}

/* The view's naming warning (user.meshfs.warning: its base is an FGE
 * built-in model name); 0 if it has none.  Unlike an error it does not
 * fail the view: the bytes are fine, FGE just never asks for them. */
static int view_warning(mfs_fs *fs, const char *r, char *out, size_t n)
{
    char dir[4096];
    mfs_view_ref ref;
    mfs_err verr;
    int v = find_view(fs, r, dir, sizeof dir, &ref, &verr);
    if (v <= 0)
        return v == 0 ? 0 : -mfs_err_errno(&verr);
    /* the folder's package has no model of its own to warn about */
    int len = ref.format == MFS_FS_LGEPKG ? 0 : mfs_name_warning(ref.base, out, n);
    ref_free(&ref);
    return len;
}

static int reply_xattr(const char *text, int len, char *value, size_t size)
{
    if (size == 0)
        return len;
    if ((size_t)len > size)
        return -ERANGE;
    memcpy(value, text, (size_t)len);
    return len;
}

/* user.meshfs.warnings of a view: the files its model references that its
 * import found missing (the .mtl copied in later, a glTF buffer, a texture
 * behind the white fallback), one per line; ENODATA if none. */
static int view_missing(mfs_fs *fs, const char *r, char *value, size_t size)
{
    char dir[4096];
    mfs_view_ref ref;
    mfs_err verr;
    int v = find_view(fs, r, dir, sizeof dir, &ref, &verr);
    if (v <= 0)
        return v == 0 ? -ENODATA : -mfs_err_errno(&verr);
    if (ref.format == MFS_FS_LGEPKG) { /* its models' views say theirs */
        ref_free(&ref);
        return -ENODATA;
    }
    char *text = malloc(65536);
    int len = text ? mfs_view_missing(fs, dir, ref.model, ref.base, ref.format, text, 65536)
                   : -ENOMEM;
    ref_free(&ref);
    if (len > 0)
        len = reply_xattr(text, len, value, size);
    free(text);
    return len == 0 ? -ENODATA : len;
}

/* user.meshfs.error of a model file: its failed views, one per line
 * (failed.c), so the reasons stay readable under -o hide_failed.  Read by
 * name only: listxattr does not offer it, so `cp -a` and `rsync -X` do not
 * copy a reason about the mount onto a copy of the model. */
static int model_error(mfs_fs *fs, const char *r, char *value, size_t size)
{
    const char *slash = strrchr(r, '/');
    if (!mfs_spawner_is_model(fs->spawner, slash ? slash + 1 : r))
        return -ENODATA;
    size_t cap = (size_t)MFS_FMT_COUNT * (MFS_ERR_MAX + 64);
    char *text = malloc(cap), *shown = malloc(cap);
    int len = text && shown ? mfs_model_errors(fs, r, text, cap) : -ENOMEM;
    if (len > 0) {
        mfs_errtext(&fs->names, text, shown, cap);
        len = reply_xattr(shown, (int)strlen(shown), value, size);
    } else if (len == 0) {
        len = -ENODATA;
    }
    free(text);
    free(shown);
    return len;
}

/* user.meshfs.explain[.json] of a view: what its model's views' keys are
 * made of and why a lookup would convert (views.h, "explain").  Only on views, whose
 * readers may read every input the explanation names (the kernel checks
 * it: default_permissions, docs/security.md S1); meshfs-cache explain
 * finds a model's views itself.  Read by name only, like the others. */
static int explain(mfs_fs *fs, const char *r, int json, char *value, size_t size)
{
    char dir[4096];
    mfs_view_ref ref;
    mfs_err verr;
    int v = find_view(fs, r, dir, sizeof dir, &ref, &verr);
    if (v <= 0)
        return v == 0 ? -ENODATA : -mfs_err_errno(&verr);
    if (ref.format == MFS_FS_LGEPKG) { /* its models' views explain theirs */
        ref_free(&ref);
        return -ENODATA;
    }
    mfs_err err;
    mfs_err_clear(&err);
    char *text = mfs_view_explain(fs, dir, ref.model, ref.base, json, &err);
    ref_free(&ref);
    int len = text ? reply_xattr(text, (int)strlen(text), value, size) : -EIO;
    free(text);
    return len;
}

int mfs_ops_getxattr(mfs_fs *fs, const char *path, const char *name, char *value, size_t size)
{
    const char *r = mfs_ops_rel(fs, path);
    if (!r)
        return -errno;
    char text[MFS_ERR_MAX + 8192];
    if (!strcmp(r, ".") && !strcmp(name, XATTR_STATS))
        return reply_xattr(text, stats_text(fs, text, sizeof text), value, size);
    if (!strcmp(name, XATTR_EXPLAIN) || !strcmp(name, XATTR_EXPLAIN_JSON))
        return explain(fs, r, !strcmp(name, XATTR_EXPLAIN_JSON), value, size);
    int warning = !strcmp(name, XATTR_WARNING);
    int warnings = !strcmp(name, XATTR_WARNINGS);
    if (strcmp(name, XATTR_ERROR) && !warning && !warnings)
        return -ENODATA;
    struct stat st;
    if (warnings) /* paths relative to SRC already: nothing to rewrite */
        return mfs_beneath_stat(&fs->names, r, &st) == 0 ? -ENODATA : view_missing(fs, r, value, size);
    if (mfs_beneath_stat(&fs->names, r, &st) == 0) {
        if (!warning && S_ISDIR(st.st_mode)) { /* entries lowercase_names hides */
            mfs_err err;
            int len = mfs_dirmap_hidden(&fs->names, strcmp(r, ".") ? r : "", value, size, &err);
            return len < 0 ? -mfs_err_errno(&err) : len;
        }
        return !warning && S_ISREG(st.st_mode) ? model_error(fs, r, value, size) : -ENODATA;
    }
    int len = warning ? view_warning(fs, r, text, sizeof text) : view_error(fs, r, text, sizeof text);
    if (len <= 0)
        return len == 0 ? -ENODATA : len;
    /* reasons come from everywhere: files named relative to SRC, no
     * cache or other internal path (errtext.c) */
    char shown[sizeof text];
    mfs_errtext(&fs->names, text, shown, sizeof shown);
    return reply_xattr(shown, (int)strlen(shown), value, size);
}

/* Every user.meshfs.* attribute is read by name (getfattr -n) and none is
 * listed: cp -a, rsync -X, tar --xattrs and getfattr -d see only what
 * listxattr names, and these attributes describe the mount (its counters;
 * a conversion's failure under its limits, options and cache), not bytes a
 * copy keeps.  A readable package's "left out" reasons or a root's counters
 * copied onto a game folder would be stale the moment they landed
 * (meshfs.1, EXTENDED ATTRIBUTES). */
int mfs_ops_listxattr(mfs_fs *fs, const char *path, char *list, size_t size)
{
    (void)list;
    (void)size;
    return mfs_ops_rel(fs, path) ? 0 : -errno;
}


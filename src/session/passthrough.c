/* Passthrough: the kernel serves reads of an open view from a backing file.
 *
 * The kernel reads the backing file at the view's offsets and up to the
 * backing file's own end, so the file must be the payload and nothing
 * else: a cache entry of container version 2 in its xattr form (payload at
 * 0, its record in an extended attribute, docs/cache.md).  That file is
 * handed over as it is: no copy, and its pages are the only cached copy of
 * the view.  An entry in the trailer form (a cache on a file system
 * without user xattrs) would show its trailer, so it is served by the
 * daemon, said once; so is a small view inside its model's entry, at an
 * offset (docs/cache.md, "Small views inside the model entry"), which is
 * the design and not worth a line.
 *
 * The daemon registers the file itself with FUSE_DEV_IOC_BACKING_OPEN on
 * the session's descriptor (needs CAP_SYS_ADMIN), which works with the
 * 3.14 headers too.  The kernel binds one backing file to an inode
 * while any passthrough open of it lasts, and fails opens of the inode
 * with another file or none; so one backing id per kernel inode (node
 * id), counted, and an open of a newer entry of a view asks for a new
 * inode (-ESTALE: renew.c moves the name to a new node).  The
 * first refusal that means "not here" (no privilege, an old kernel) turns
 * passthrough off for the mount, logged once. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../mount/mount.h"
#include "passthrough.h"
#include "llstate.h"

/* linux/fuse.h of Debian 12's kernel headers predates passthrough */
struct pt_backing_map {
    int32_t fd;
    uint32_t flags;
    uint64_t padding;
};
#define PT_IOC_BACKING_OPEN _IOW(229, 1, struct pt_backing_map)
#define PT_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

typedef struct pt_node {
    struct pt_node *next;
    uint64_t node; /* the kernel inode's node id */
    uint8_t key[16];
    int id;
    unsigned refs;
} pt_node;

/* One mount's backing ids (fs->pt). */
struct mfs_pt {
    pthread_mutex_t lock;
    pt_node *nodes;          /* under lock */
    atomic_int mode;         /* MFS_PT_*, as asked */
    atomic_int enabled;      /* negotiated with the kernel and not yet refused */
    atomic_int logged;       /* the read path in use was logged */
    atomic_int trailer_logged;
};

mfs_pt *mfs_pt_new(void)
{
    mfs_pt *pt = calloc(1, sizeof *pt);
    if (pt)
        pthread_mutex_init(&pt->lock, NULL);
    return pt;
}

void mfs_pt_free(mfs_pt *pt)
{
    if (!pt)
        return;
    while (pt->nodes) { /* ids the kernel dropped with the session */
        pt_node *p = pt->nodes;
        pt->nodes = p->next;
        free(p);
    }
    pthread_mutex_destroy(&pt->lock);
    free(pt);
}

/* The read path, once per mount.  A fallback is worth a warning only when
 * passthrough was asked for by name (-o passthrough=on); under auto it is
 * the expected state of an unprivileged mount. */
static void log_path(mfs_pt *pt, int warn, const char *how)
{
    if (atomic_exchange(&pt->logged, 1) == 0)
        mfs_log(warn ? MFS_LOG_WARNING : MFS_LOG_INFO, "reads of views: %s", how);
}

int mfs_pt_parse(const char *name, const char *value, int *out, mfs_err *err)
{
    static const char *const names[] = {"off", "auto", "on"};
    if (!value) {
        *out = MFS_PT_ON;
        return 0;
    }
    for (int i = 0; i < 3; i++)
        if (!strcmp(value, names[i])) {
            *out = i;
            return 0;
        }
    return mfs_errf(err, "%s=%s: not auto, on or off", name, value);
}

static int have_sys_admin(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &hdr, d) != 0)
        return 1; /* cannot tell: let the kernel decide */
    return (d[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

void mfs_pt_init(mfs_fs *fs, struct fuse_conn_info *conn, int m)
{
    mfs_pt *pt = fs->pt;
    atomic_store(&pt->mode, m);
    if (m == MFS_PT_OFF) {
        log_path(pt, 0, "through the daemon (-o passthrough=off)");
        return;
    }
    int on = m == MFS_PT_ON;
#ifdef MESHFS_HAVE_FUSE_317
    if (!(conn->capable & FUSE_CAP_PASSTHROUGH)) {
        log_path(pt, on, "through the daemon (the kernel offers no passthrough: Linux < 6.9?)");
        return;
    }
    /* auto does not ask for what the kernel would refuse; on asks anyway,
     * so the kernel's own answer is what the warning reports */
    if (!on && !have_sys_admin()) {
        log_path(pt, 0, "through the daemon (passthrough needs CAP_SYS_ADMIN, which the "
                    "daemon lacks)");
        return;
    }
    fuse_set_feature_flag(conn, FUSE_CAP_PASSTHROUGH);
    conn->max_backing_stack_depth = 1; /* the cache may sit on an overlay */
    atomic_store(&pt->enabled, 1);
#else
    (void)conn;
    (void)have_sys_admin;
    log_path(pt, on, "through the daemon (built against libfuse < 3.17: no passthrough)");
#endif
}

/* Whether fd is the payload and nothing else, so the kernel may read it to
 * its end. */
static int whole_payload(int fd, uint64_t off, uint64_t len)
{
    struct stat st;
    if (off != 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_size != len)
        return 0;
    return 1;
}

static pt_node *find_node(mfs_pt *pt, uint64_t node)
{
    pt_node *p = pt->nodes;
    while (p && p->node != node)
        p = p->next;
    return p;
}

int mfs_pt_open(mfs_fs *fs, uint64_t node, const uint8_t key[16], int fd, uint64_t off,
                uint64_t len)
{
    mfs_pt *pt = fs->pt;
    if (!atomic_load(&pt->enabled))
        return 0;
    pthread_mutex_lock(&pt->lock);
    pt_node *p = find_node(pt, node);
    if (p) {
        /* the kernel binds one backing file to an inode while a passthrough
         * handle lasts, and fails any other open of it: a newer entry needs
         * a new inode.  So does an open racing the RELEASE of the last old
         * handle, which the kernel sends after close() has returned. */
        int rc = memcmp(p->key, key, 16) == 0 ? p->id : -ESTALE;
        if (rc > 0)
            p->refs++;
        pthread_mutex_unlock(&pt->lock);
        return rc;
    }
    if (!whole_payload(fd, off, len)) {
        pthread_mutex_unlock(&pt->lock);
        if (off == 0 && atomic_exchange(&pt->trailer_logged, 1) == 0)
            mfs_log(atomic_load(&pt->mode) == MFS_PT_ON ? MFS_LOG_WARNING : MFS_LOG_INFO,
                    "reads of views: through the daemon for cache entries in the trailer form "
                    "(the cache's file system has no user xattrs; docs/cache.md)");
        return 0;
    }
    int rc = 0;
    int sfd = mfs_ll_session_fd(fs);
    pt_node *nn = calloc(1, sizeof *nn);
    if (sfd >= 0 && nn) {
        struct pt_backing_map map = {.fd = fd};
        int id = ioctl(sfd, PT_IOC_BACKING_OPEN, &map);
        if (id > 0) {
            memcpy(nn->key, key, 16);
            nn->node = node;
            nn->id = id;
            nn->refs = 1;
            nn->next = pt->nodes;
            pt->nodes = nn;
            nn = NULL;
            rc = id;
            log_path(pt, 0, "passthrough (the kernel reads the cache entry, not the daemon)");
        } else if (errno == EPERM || errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP) {
            int e = errno;
            atomic_store(&pt->enabled, 0);
            atomic_store(&pt->logged, 1);
            mfs_log(atomic_load(&pt->mode) == MFS_PT_ON ? MFS_LOG_WARNING : MFS_LOG_INFO,
                    "reads of views: through the daemon (passthrough refused by the kernel: "
                    "%s%s)", strerror(e), e == EPERM ? ": the daemon lacks CAP_SYS_ADMIN" : "");
        }
    }
    free(nn);
    pthread_mutex_unlock(&pt->lock);
    return rc;
}

void mfs_pt_release(mfs_fs *fs, int backing_id)
{
    if (backing_id <= 0)
        return;
    mfs_pt *pt = fs->pt;
    pthread_mutex_lock(&pt->lock);
    for (pt_node **pp = &pt->nodes; *pp; pp = &(*pp)->next) {
        pt_node *p = *pp;
        if (p->id != backing_id)
            continue;
        if (--p->refs == 0) {
            int sfd = mfs_ll_session_fd(fs);
            uint32_t id = (uint32_t)p->id;
            if (sfd >= 0)
                ioctl(sfd, PT_IOC_BACKING_CLOSE, &id);
            *pp = p->next;
            free(p);
        }
        break;
    }
    pthread_mutex_unlock(&pt->lock);
}

void mfs_pt_test_drop_sys_admin(void)
{
    if (!getenv("MESHFS_TEST_NO_SYS_ADMIN"))
        return;
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    uint32_t bit = 1u << (CAP_SYS_ADMIN % 32);
    if (syscall(SYS_capget, &hdr, d) == 0) {
        d[CAP_SYS_ADMIN / 32].effective &= ~bit;
        d[CAP_SYS_ADMIN / 32].permitted &= ~bit;
        d[CAP_SYS_ADMIN / 32].inheritable &= ~bit;
        if (syscall(SYS_capset, &hdr, d) != 0)
            perror("meshfs: MESHFS_TEST_NO_SYS_ADMIN: capset");
    }
}

/* Passthrough: the kernel serves reads of an open view from a backing file.
 *
 * The kernel reads the backing file at the same offsets as the view, so it
 * must hold the payload at offset 0.  A cache entry starts with its 40-byte
 * header (docs/cache.md), so the payload is first copied into an anonymous
 * file (O_TMPFILE beside the entry, copy_file_range: in the kernel, a
 * reflink where the file system has them).  The copy lives as long as the
 * kernel holds its backing id: from the first open of the path to the last
 * release.  An entry whose payload already starts at 0 is used as is.
 *
 * The high-level API has no passthrough call, so the daemon registers the
 * file itself with FUSE_DEV_IOC_BACKING_OPEN on the session's descriptor
 * (needs CAP_SYS_ADMIN).  The kernel binds one backing file to an inode
 * while any passthrough open of it lasts, and then refuses opens of the
 * inode with another file or none; so one backing id per path, counted.
 * The first failure that means "not here" (no privilege, an old kernel)
 * turns passthrough off for the mount, logged once. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <libgen.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs.h"
#include "passthrough.h"

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
    char *path;
    uint8_t key[16];
    int id;
    unsigned refs;
} pt_node;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pt_node *nodes;
static atomic_int enabled;   /* negotiated with the kernel and not yet refused */
static atomic_int logged;    /* the read path in use was logged */

static void log_path(const char *how)
{
    if (atomic_exchange(&logged, 1) == 0)
        fprintf(stderr, "meshfs: reads of views: %s\n", how);
}

void mfs_pt_init(struct fuse_conn_info *conn, int wanted)
{
#ifdef MESHFS_HAVE_FUSE_317
    if (wanted && (conn->capable & FUSE_CAP_PASSTHROUGH)) {
        fuse_set_feature_flag(conn, FUSE_CAP_PASSTHROUGH);
        conn->max_backing_stack_depth = 1; /* the cache may sit on an overlay */
        atomic_store(&enabled, 1);
        return;
    }
    if (wanted)
        log_path("through the daemon (the kernel offers no passthrough: Linux < 6.9?)");
#else
    (void)conn;
    if (wanted)
        log_path("through the daemon (built against libfuse < 3.17: no passthrough)");
#endif
    if (!wanted)
        atomic_store(&logged, 1); /* the ordinary path, as asked: nothing to say */
}

static int session_fd(void)
{
    struct fuse_context *cx = fuse_get_context();
    return cx && cx->fuse ? fuse_session_fd(fuse_get_session(cx->fuse)) : -1;
}

/* An anonymous file holding fd's len bytes at off, at offset 0; -1 on failure. */
static int payload_copy(int fd, uint64_t off, uint64_t len)
{
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0 || n == (ssize_t)sizeof path - 1)
        return -1;
    path[n] = '\0';
    int t = open(dirname(path), O_TMPFILE | O_RDWR | O_CLOEXEC, 0400);
    if (t < 0)
        return -1;
    loff_t in = (loff_t)off, out = 0;
    while ((uint64_t)out < len) {
        ssize_t k = copy_file_range(fd, &in, t, &out, (size_t)(len - (uint64_t)out), 0);
        if (k <= 0) {
            close(t);
            return -1;
        }
    }
    return t;
}

int mfs_pt_open(const char *path, const uint8_t key[16], int fd, uint64_t off, uint64_t len)
{
    if (!atomic_load(&enabled))
        return 0;
    pthread_mutex_lock(&lock);
    pt_node *p = nodes;
    while (p && strcmp(p->path, path))
        p = p->next;
    if (p) {
        int rc = memcmp(p->key, key, 16) ? -EBUSY : p->id;
        if (rc > 0)
            p->refs++;
        pthread_mutex_unlock(&lock);
        return rc;
    }
    int rc = 0;
    int sfd = session_fd();
    int bfd = off == 0 ? fd : payload_copy(fd, off, len);
    pt_node *nn = calloc(1, sizeof *nn);
    if (sfd >= 0 && bfd >= 0 && nn && (nn->path = strdup(path))) {
        struct pt_backing_map map = {.fd = bfd};
        int id = ioctl(sfd, PT_IOC_BACKING_OPEN, &map);
        if (id > 0) {
            memcpy(nn->key, key, 16);
            nn->id = id;
            nn->refs = 1;
            nn->next = nodes;
            nodes = nn;
            nn = NULL;
            rc = id;
            log_path("passthrough (the kernel reads the cache, not the daemon)");
        } else if (errno == EPERM || errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP) {
            atomic_store(&enabled, 0);
            fprintf(stderr, "meshfs: passthrough refused by the kernel (%s%s): reads of views "
                    "go through the daemon\n", strerror(errno),
                    errno == EPERM ? ": the daemon lacks CAP_SYS_ADMIN" : "");
            atomic_store(&logged, 1);
        }
    }
    if (bfd >= 0 && bfd != fd)
        close(bfd); /* the kernel holds the file while the id lives */
    if (nn)
        free(nn->path);
    free(nn);
    pthread_mutex_unlock(&lock);
    return rc;
}

void mfs_pt_release(int backing_id)
{
    if (backing_id <= 0)
        return;
    pthread_mutex_lock(&lock);
    for (pt_node **pp = &nodes; *pp; pp = &(*pp)->next) {
        pt_node *p = *pp;
        if (p->id != backing_id)
            continue;
        if (--p->refs == 0) {
            int sfd = session_fd();
            uint32_t id = (uint32_t)p->id;
            if (sfd >= 0)
                ioctl(sfd, PT_IOC_BACKING_CLOSE, &id);
            *pp = p->next;
            free(p->path);
            free(p);
        }
        break;
    }
    pthread_mutex_unlock(&lock);
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

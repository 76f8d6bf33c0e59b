/* Passthrough (libfuse >= 3.17, Linux >= 6.9, CAP_SYS_ADMIN): the kernel
 * reads an open view straight from its cache entry file, so its reads never
 * reach the daemon and its pages are cached once.  On by default where it
 * works, the daemon's own read path otherwise (docs/passthrough.md). */
#ifndef MESHFS_FS_PASSTHROUGH_H
#define MESHFS_FS_PASSTHROUGH_H

#include <stdint.h>

#include "../mount/mount.h"
#include "meshfs/err.h"

struct fuse_conn_info;

/* One mount's passthrough state (fs->pt): its backing ids by node, and
 * whether the kernel took passthrough.  NULL: out of memory. */
mfs_pt *mfs_pt_new(void);
void mfs_pt_free(mfs_pt *pt);

/* -o passthrough=MODE.  auto (the default): used where the kernel and the
 * daemon's privilege allow, else the daemon serves, said at info level;
 * on: the same, but a mount that cannot pass through warns; off: never. */
enum { MFS_PT_OFF = 0, MFS_PT_AUTO = 1, MFS_PT_ON = 2 };

/* "auto", "on" or "off"; NULL (the bare option) is on.  Fails with a
 * message naming the option (`name`, "-o passthrough") and the value. */
int mfs_pt_parse(const char *name, const char *value, int *mode, mfs_err *err);

/* From init: asks the kernel for passthrough if mode allows and it is
 * offered; logs which read path the mount uses when it is decided. */
void mfs_pt_init(mfs_fs *fs, struct fuse_conn_info *conn, int mode);

/* An open of the view on kernel inode `node` (a node id) showing entry
 * `key`, whose payload is `len` bytes at `off` in `fd`.  Only a file that
 * is the payload, offset 0 to its end, can back a view.
 * > 0: the backing id to give the kernel (a reference: mfs_pt_release);
 * 0: serve this open the ordinary way;
 * -ESTALE: the inode is bound to another entry's backing file by an open
 * handle, or by one whose RELEASE is still on its way (the kernel takes one
 * backing file per inode at a time and fails every other open of it), so
 * this entry needs an inode of its own: the caller moves the view's name to
 * a new node and the kernel, told ESTALE, looks the name up again. */
int mfs_pt_open(mfs_fs *fs, uint64_t node, const uint8_t key[16], int fd, uint64_t off,
                uint64_t len);

/* Drops a reference mfs_pt_open gave (0 is no reference). */
void mfs_pt_release(mfs_fs *fs, int backing_id);

/* Tests only: with MESHFS_TEST_NO_SYS_ADMIN set, the daemon gives up
 * CAP_SYS_ADMIN once mounted (before its FUSE threads start), so the
 * kernel's own refusal of passthrough can be tested as root. */
void mfs_pt_test_drop_sys_admin(void);

#endif

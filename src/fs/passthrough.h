/* Passthrough (libfuse >= 3.17, Linux >= 6.9, CAP_SYS_ADMIN): the kernel
 * reads an open view straight from a backing file, so its reads never
 * reach the daemon.  docs/architecture.md, "Passthrough", says why it is
 * opt-in (-o passthrough) and what it costs. */
#ifndef MESHFS_FS_PASSTHROUGH_H
#define MESHFS_FS_PASSTHROUGH_H

#include <stdint.h>

struct fuse_conn_info;

/* From init: asks the kernel for passthrough if `wanted` and it is offered;
 * logs which read path the mount uses when it is decided. */
void mfs_pt_init(struct fuse_conn_info *conn, int wanted);

/* An open of the view at `path` (the kernel's path: one kernel inode)
 * showing entry `key`, whose payload is `len` bytes at `off` in `fd`.
 * > 0: the backing id to give the kernel (a reference: mfs_pt_release);
 * 0: serve this open the ordinary way;
 * -EBUSY: the path is open with passthrough on another entry (the kernel
 * takes one backing file per inode at a time, and refuses other opens). */
int mfs_pt_open(const char *path, const uint8_t key[16], int fd, uint64_t off, uint64_t len);

/* Drops a reference mfs_pt_open gave (0 is no reference). */
void mfs_pt_release(int backing_id);

/* Tests only: with MESHFS_TEST_NO_SYS_ADMIN set, the daemon gives up
 * CAP_SYS_ADMIN once mounted (before its FUSE threads start), so the
 * kernel's own refusal of passthrough can be tested as root. */
void mfs_pt_test_drop_sys_admin(void);

#endif

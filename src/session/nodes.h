/* The inodes the kernel holds for the mount (nodes.c; docs/scale.md,
 * "The kernel's inodes").
 *
 * The kernel names every file by a node id it got from a LOOKUP reply or a
 * readdirplus entry, and holds it until it sends FORGET with as many
 * lookups as it was given.  This table maps those ids to (parent, name), so
 * a request becomes the mount path the operations take, and counts the
 * lookups.  It is bounded: beyond `cap` files (not folders) it offers the
 * least recently used ones as victims, whose entries the caller tells the
 * kernel to drop (FUSE_NOTIFY_INVAL_ENTRY); the kernel then forgets their
 * inodes and the table frees them.  Folders are never offered: a shell's
 * working directory inside the mount would become unreachable (getcwd
 * fails on an invalidated dentry), and folders are few beside files.
 * Ids are never reused, so a stale id reads as ESTALE, not as another file.
 * Thread-safe: one lock. */
#ifndef MESHFS_FS_NODES_H
#define MESHFS_FS_NODES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define MFS_NODE_ROOT 1 /* FUSE_ROOT_ID */

typedef struct mfs_nodes mfs_nodes;

/* cap: files whose inodes the kernel may hold before victims are offered
 * (at least 1).  NULL on out of memory. */
mfs_nodes *mfs_nodes_new(size_t cap);
void mfs_nodes_free(mfs_nodes *t);

/* The mount path of id ("/" for the root, "/a/b" below it) in buf.
 * 0; -ESTALE for an id the table does not hold; -ENAMETOOLONG. */
int mfs_nodes_path(mfs_nodes *t, uint64_t id, char *buf, size_t n);

/* The mount path of name in folder `parent`; errors as mfs_nodes_path. */
int mfs_nodes_child_path(mfs_nodes *t, uint64_t parent, const char *name, char *buf, size_t n);

/* The node of name in parent, made if new, with one more lookup (the
 * kernel is about to be given its id).  is_dir: it is a folder (never a
 * victim).  Its id; 0 on out of memory or an unknown parent. */
uint64_t mfs_nodes_lookup(mfs_nodes *t, uint64_t parent, const char *name, int is_dir);

/* The kernel forgot n lookups of id (FORGET, or a reply it never got). */
void mfs_nodes_forget(mfs_nodes *t, uint64_t id, uint64_t n);

/* A handle on id was opened (+1) or released (-1): a node with handles
 * open is never a victim (dropping its entry would show "(deleted)" in
 * /proc/PID/fd and buys nothing: the open file holds the inode). */
void mfs_nodes_opened(mfs_nodes *t, uint64_t id, int delta);

/* Takes file node id out of the name index: it keeps its id, path and
 * counts for the requests the kernel sends by id (its open handles, its
 * FORGET), and the next lookup of its name makes a new node.  For a view
 * whose kernel inode holds an older cache entry for its open handles
 * (renew.c): the name moves to a fresh inode.  st, if not NULL: the
 * attributes the old node answers GETATTR with from now on (those of the
 * entry its handles read; mfs_nodes_kept_attr).  1: detached now; 0: it
 * already was (st ignored); -ENOMEM (not detached); -ESTALE (unknown id);
 * -EISDIR (a folder or the root, never detached). */
int mfs_nodes_detach(mfs_nodes *t, uint64_t id, const struct stat *st);

/* 1 when id is a detached node. */
int mfs_nodes_is_detached(mfs_nodes *t, uint64_t id);

/* An OPEN of node id by thread tid was answered ESTALE.  The VFS retries
 * such an open once, at once, from the same thread: a path walk looks the
 * name up again and opens the node it has then, an open that does not go
 * through the name (/proc/PID/fd/N) comes back to id.  mfs_nodes_retry_of,
 * asked at each OPEN: 1 when tid's last OPEN was refused and was of the
 * same name as id (so this is its retry); either way tid's refusal is
 * spent. */
void mfs_nodes_refused(mfs_nodes *t, uint64_t id, uint32_t tid);
int mfs_nodes_retry_of(mfs_nodes *t, uint64_t id, uint32_t tid);

/* 1 with *st when id is a detached node with attributes of its own. */
int mfs_nodes_kept_attr(mfs_nodes *t, uint64_t id, struct stat *st);

/* Marks id used now (the LRU order). */
void mfs_nodes_touch(mfs_nodes *t, uint64_t id);

/* The id of the node at a mount path ("/a/b"), if the table holds it; 0
 * otherwise. */
uint64_t mfs_nodes_find(mfs_nodes *t, const char *path);

/* 1 when more files are held than the cap allows. */
int mfs_nodes_over(mfs_nodes *t);

/* An entry to drop: the kernel's (parent, name). */
typedef struct mfs_node_victim {
    uint64_t parent;
    char name[256];
} mfs_node_victim;

/* Up to max victims, least recently used first, enough to bring the files
 * held to 7/8 of the cap once the kernel forgets them.  Each is moved to
 * the most recently used end, so one the kernel keeps (in use) is offered
 * again only after every other file.  Their count. */
size_t mfs_nodes_victims(mfs_nodes *t, mfs_node_victim *v, size_t max);

typedef struct mfs_nodes_stats {
    uint64_t nodes;   /* every node held, folders and the root included */
    uint64_t files;   /* of which files: what the cap bounds */
    uint64_t cap;
    uint64_t offered; /* victims offered so far */
    uint64_t freed;   /* nodes freed after the kernel forgot them */
    uint64_t detached; /* names moved to a new node (mfs_nodes_detach) */
} mfs_nodes_stats;
void mfs_nodes_get_stats(mfs_nodes *t, mfs_nodes_stats *s);

#endif

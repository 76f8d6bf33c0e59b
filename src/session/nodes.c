/* The kernel's inodes for the mount: id -> (parent, name), lookup counts,
 * and the least recently used files to let go of (nodes.h). */
#include "nodes.h"

#include <errno.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct node {
    uint64_t id;
    struct node *parent;
    struct node *by_name, *by_id; /* hash chains */
    struct node *older, *newer;   /* LRU list: files only */
    uint64_t nlookup;
    uint32_t children;            /* nodes whose parent this is */
    uint32_t open;
    uint32_t hash;                /* of (parent id, name) */
    uint8_t is_dir;
    uint8_t detached;             /* out of the name index (mfs_nodes_detach) */
    char name[];
} node;

/* The attributes a detached node answers GETATTR with: few (one per view
 * renewed while a handle is open), so a list. */
typedef struct kept {
    struct kept *next;
    uint64_t id;
    int has_st;
    struct stat st;
} kept;

/* A thread's last OPEN answered ESTALE, and the name it was of: the
 * VFS's retry comes from the same thread, next (mfs_nodes_retry_of). */
typedef struct refusal {
    uint32_t tid;
    uint32_t hash; /* the node's (parent, name) hash */
} refusal;
#define REFUSALS 64

struct mfs_nodes {
    pthread_mutex_t lock;
    kept *kept;
    refusal refused[REFUSALS]; /* by tid: a clash costs a retry's ESTALE */
    node **by_name, **by_id;
    size_t buckets; /* of each table, a power of two */
    size_t count, files, cap;
    uint64_t next_id, offered, freed, detached;
    node *oldest, *newest;
    node *root;
};

static uint32_t name_hash(uint64_t parent, const char *name)
{
    return (uint32_t)XXH3_64bits_withSeed(name, strlen(name), parent);
}

static size_t id_slot(const mfs_nodes *t, uint64_t id)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (t->buckets - 1);
}

static node *by_id(const mfs_nodes *t, uint64_t id)
{
    node *n = t->by_id[id_slot(t, id)];
    while (n && n->id != id)
        n = n->by_id;
    return n;
}

static node *by_name(const mfs_nodes *t, const node *parent, const char *name, uint32_t h)
{
    node *n = t->by_name[h & (t->buckets - 1)];
    while (n && !(n->hash == h && n->parent == parent && !strcmp(n->name, name)))
        n = n->by_name;
    return n;
}

static void lru_unlink(mfs_nodes *t, node *n)
{
    if (n->older)
        n->older->newer = n->newer;
    else
        t->oldest = n->newer;
    if (n->newer)
        n->newer->older = n->older;
    else
        t->newest = n->older;
    n->older = n->newer = NULL;
}

static void lru_push(mfs_nodes *t, node *n)
{
    n->older = t->newest;
    n->newer = NULL;
    if (t->newest)
        t->newest->newer = n;
    else
        t->oldest = n;
    t->newest = n;
}

static void touch(mfs_nodes *t, node *n)
{
    if (n->is_dir || t->newest == n)
        return;
    lru_unlink(t, n);
    lru_push(t, n);
}

/* Doubles both tables when they hold more nodes than buckets; a failed
 * allocation only leaves the chains longer. */
static void grow(mfs_nodes *t)
{
    size_t nb = t->buckets * 2;
    node **bn = calloc(nb, sizeof *bn), **bi = calloc(nb, sizeof *bi);
    if (!bn || !bi) {
        free(bn);
        free(bi);
        return;
    }
    for (size_t i = 0; i < t->buckets; i++) {
        for (node *n = t->by_name[i], *next; n; n = next) {
            next = n->by_name; /* detached nodes are in no name chain */
            n->by_name = bn[n->hash & (nb - 1)];
            bn[n->hash & (nb - 1)] = n;
        }
    }
    node **old_id = t->by_id;
    size_t ob = t->buckets;
    free(t->by_name);
    t->by_name = bn;
    t->by_id = bi;
    t->buckets = nb;
    for (size_t i = 0; i < ob; i++) {
        for (node *n = old_id[i], *next; n; n = next) {
            next = n->by_id;
            size_t s = id_slot(t, n->id);
            n->by_id = bi[s];
            bi[s] = n;
        }
    }
    free(old_id);
}

static void unchain(node **head, node *n, int name_chain)
{
    for (node **pp = head; *pp; pp = name_chain ? &(*pp)->by_name : &(*pp)->by_id) {
        if (*pp == n) {
            *pp = name_chain ? n->by_name : n->by_id;
            return;
        }
    }
}

static kept **find_kept(mfs_nodes *t, uint64_t id)
{
    kept **pp = &t->kept;
    while (*pp && (*pp)->id != id)
        pp = &(*pp)->next;
    return pp;
}

static void drop_kept(mfs_nodes *t, uint64_t id)
{
    kept **pp = find_kept(t, id);
    if (*pp) {
        kept *k = *pp;
        *pp = k->next;
        free(k);
    }
}

/* Frees n, and its parent in turn, once nothing holds them. */
static void release(mfs_nodes *t, node *n)
{
    while (n && n != t->root && n->nlookup == 0 && n->children == 0 && n->open == 0) {
        node *parent = n->parent;
        if (!n->detached)
            unchain(&t->by_name[n->hash & (t->buckets - 1)], n, 1);
        else
            drop_kept(t, n->id);
        unchain(&t->by_id[id_slot(t, n->id)], n, 0);
        if (!n->is_dir) {
            lru_unlink(t, n);
            t->files--;
        }
        t->count--;
        t->freed++;
        free(n);
        parent->children--;
        n = parent;
    }
}

mfs_nodes *mfs_nodes_new(size_t cap)
{
    mfs_nodes *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->buckets = 1024;
    t->by_name = calloc(t->buckets, sizeof *t->by_name);
    t->by_id = calloc(t->buckets, sizeof *t->by_id);
    t->root = calloc(1, sizeof *t->root + 1);
    if (!t->by_name || !t->by_id || !t->root) {
        free(t->by_name);
        free(t->by_id);
        free(t->root);
        free(t);
        return NULL;
    }
    pthread_mutex_init(&t->lock, NULL);
    t->cap = cap ? cap : 1;
    t->root->id = MFS_NODE_ROOT;
    t->root->is_dir = 1;
    t->root->nlookup = 1;
    t->by_id[id_slot(t, MFS_NODE_ROOT)] = t->root;
    t->count = 1;
    t->next_id = MFS_NODE_ROOT + 1;
    return t;
}

void mfs_nodes_free(mfs_nodes *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->buckets; i++) {
        for (node *n = t->by_id[i], *next; n; n = next) {
            next = n->by_id;
            free(n);
        }
    }
    while (t->kept) {
        kept *k = t->kept;
        t->kept = k->next;
        free(k);
    }
    free(t->by_name);
    free(t->by_id);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Writes n's path ending at buf[n_len]; 0 or -ENAMETOOLONG. */
static int build_path(const node *n, char *buf, size_t cap)
{
    size_t end = cap - 1;
    buf[end] = '\0';
    for (; n->parent; n = n->parent) {
        size_t len = strlen(n->name);
        if (len + 1 > end)
            return -ENAMETOOLONG;
        end -= len;
        memcpy(buf + end, n->name, len);
        buf[--end] = '/';
    }
    if (end == cap - 1) {
        if (end == 0)
            return -ENAMETOOLONG;
        buf[--end] = '/';
    }
    memmove(buf, buf + end, cap - end);
    return 0;
}

int mfs_nodes_path(mfs_nodes *t, uint64_t id, char *buf, size_t n)
{
    if (n < 2)
        return -ENAMETOOLONG;
    pthread_mutex_lock(&t->lock);
    node *nd = by_id(t, id);
    int rc = nd ? build_path(nd, buf, n) : -ESTALE;
    if (nd)
        touch(t, nd);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int mfs_nodes_child_path(mfs_nodes *t, uint64_t parent, const char *name, char *buf, size_t n)
{
    int rc = mfs_nodes_path(t, parent, buf, n);
    if (rc < 0)
        return rc;
    size_t len = strlen(buf), nl = strlen(name);
    if (len == 1)
        len = 0; /* the root: "/" + name */
    if (len + 1 + nl + 1 > n)
        return -ENAMETOOLONG;
    buf[len] = '/';
    memcpy(buf + len + 1, name, nl + 1);
    return 0;
}

uint64_t mfs_nodes_lookup(mfs_nodes *t, uint64_t parent, const char *name, int is_dir)
{
    pthread_mutex_lock(&t->lock);
    uint64_t id = 0;
    node *p = by_id(t, parent);
    if (!p)
        goto out;
    uint32_t h = name_hash(parent, name);
    node *n = by_name(t, p, name, h);
    if (!n) {
        size_t len = strlen(name);
        n = calloc(1, sizeof *n + len + 1);
        if (!n)
            goto out;
        memcpy(n->name, name, len + 1);
        n->id = t->next_id++;
        n->parent = p;
        n->hash = h;
        n->is_dir = is_dir != 0;
        p->children++;
        if (t->count >= t->buckets)
            grow(t);
        n->by_name = t->by_name[h & (t->buckets - 1)];
        t->by_name[h & (t->buckets - 1)] = n;
        n->by_id = t->by_id[id_slot(t, n->id)];
        t->by_id[id_slot(t, n->id)] = n;
        t->count++;
        if (!n->is_dir) {
            t->files++;
            lru_push(t, n);
        }
    } else {
        touch(t, n);
    }
    n->nlookup++;
    id = n->id;
out:
    pthread_mutex_unlock(&t->lock);
    return id;
}

void mfs_nodes_forget(mfs_nodes *t, uint64_t id, uint64_t count)
{
    pthread_mutex_lock(&t->lock);
    node *n = by_id(t, id);
    if (n && n != t->root) {
        n->nlookup = count >= n->nlookup ? 0 : n->nlookup - count;
        release(t, n);
    }
    pthread_mutex_unlock(&t->lock);
}

void mfs_nodes_opened(mfs_nodes *t, uint64_t id, int delta)
{
    pthread_mutex_lock(&t->lock);
    node *n = by_id(t, id);
    if (n && n != t->root) {
        if (delta > 0)
            n->open++;
        else if (n->open > 0)
            n->open--;
        release(t, n);
    }
    pthread_mutex_unlock(&t->lock);
}

int mfs_nodes_detach(mfs_nodes *t, uint64_t id, const struct stat *st)
{
    pthread_mutex_lock(&t->lock);
    node *n = by_id(t, id);
    int rc = 1;
    if (!n || n == t->root || n->is_dir) {
        rc = n ? -EISDIR : -ESTALE;
    } else if (n->detached) {
        rc = 0; /* its attributes stay those of its first move */
    } else {
        /* every moved node has its record: the attributes its handles
         * read (or none known: GETATTR answers from the path) */
        kept *k = calloc(1, sizeof *k);
        if (!k) {
            rc = -ENOMEM; /* not moved: the name keeps this node */
        } else {
            k->id = id;
            if (st)
                k->st = *st;
            k->has_st = st != NULL;
            k->next = t->kept;
            t->kept = k;
            unchain(&t->by_name[n->hash & (t->buckets - 1)], n, 1);
            n->by_name = NULL;
            n->detached = 1;
            t->detached++;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int mfs_nodes_is_detached(mfs_nodes *t, uint64_t id)
{
    pthread_mutex_lock(&t->lock);
    node *n = by_id(t, id);
    int d = n && n->detached;
    pthread_mutex_unlock(&t->lock);
    return d;
}

void mfs_nodes_refused(mfs_nodes *t, uint64_t id, uint32_t tid)
{
    pthread_mutex_lock(&t->lock);
    node *n = by_id(t, id);
    if (n && tid)
        t->refused[tid % REFUSALS] = (refusal){.tid = tid, .hash = n->hash};
    pthread_mutex_unlock(&t->lock);
}

int mfs_nodes_retry_of(mfs_nodes *t, uint64_t id, uint32_t tid)
{
    pthread_mutex_lock(&t->lock);
    refusal *r = &t->refused[tid % REFUSALS];
    int retry = 0;
    if (tid && r->tid == tid) {
        node *n = by_id(t, id);
        retry = n && r->hash == n->hash;
        *r = (refusal){0}; /* one retry per refusal, whatever it opens */
    }
    pthread_mutex_unlock(&t->lock);
    return retry;
}

int mfs_nodes_kept_attr(mfs_nodes *t, uint64_t id, struct stat *st)
{
    pthread_mutex_lock(&t->lock);
    node *n = by_id(t, id);
    kept *k = n && n->detached ? *find_kept(t, id) : NULL;
    int have = k && k->has_st;
    if (have)
        *st = k->st;
    pthread_mutex_unlock(&t->lock);
    return have;
}

void mfs_nodes_touch(mfs_nodes *t, uint64_t id)
{
    pthread_mutex_lock(&t->lock);
    node *n = by_id(t, id);
    if (n)
        touch(t, n);
    pthread_mutex_unlock(&t->lock);
}

uint64_t mfs_nodes_find(mfs_nodes *t, const char *path)
{
    pthread_mutex_lock(&t->lock);
    node *n = t->root;
    char name[256];
    while (n && *path) {
        while (*path == '/')
            path++;
        if (!*path)
            break;
        size_t len = strcspn(path, "/");
        if (len >= sizeof name) {
            n = NULL;
            break;
        }
        memcpy(name, path, len);
        name[len] = '\0';
        path += len;
        n = by_name(t, n, name, name_hash(n->id, name));
    }
    uint64_t id = n ? n->id : 0;
    pthread_mutex_unlock(&t->lock);
    return id;
}

int mfs_nodes_over(mfs_nodes *t)
{
    pthread_mutex_lock(&t->lock);
    int over = t->files > t->cap;
    pthread_mutex_unlock(&t->lock);
    return over;
}

size_t mfs_nodes_victims(mfs_nodes *t, mfs_node_victim *v, size_t max)
{
    pthread_mutex_lock(&t->lock);
    size_t keep = t->cap - t->cap / 8, k = 0;
    size_t want = t->files > keep ? t->files - keep : 0;
    /* each node at most once a call: a victim moves to the newest end */
    for (size_t seen = 0, files = t->files; k < max && k < want && seen < files; seen++) {
        node *n = t->oldest;
        touch(t, n);
        /* a detached node's name is another node's now */
        if (n->open || n->detached || strlen(n->name) >= sizeof v[k].name)
            continue;
        v[k].parent = n->parent->id;
        strcpy(v[k].name, n->name);
        k++;
    }
    t->offered += k;
    pthread_mutex_unlock(&t->lock);
    return k;
}

void mfs_nodes_get_stats(mfs_nodes *t, mfs_nodes_stats *s)
{
    pthread_mutex_lock(&t->lock);
    *s = (mfs_nodes_stats){.nodes = t->count, .files = t->files, .cap = t->cap,
                           .offered = t->offered, .freed = t->freed,
                           .detached = t->detached};
    pthread_mutex_unlock(&t->lock);
}

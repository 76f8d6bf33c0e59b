/* The view cache (docs/cache.md): keys, entries, verification, the stat
 * index, manifests, eviction, crash leftovers and sharing between handles.
 * Every test runs in its own temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <xxhash.h>

#include "fixtures.h"
#include "meshfs/cache.h"
#include "meshfs/import.h"
#include "meshfs/util.h"
#include "../../src/cache/cache_int.h" /* mfs_cache_entry_check */

typedef fixture_cache_dirs fx;

static int setup(void **state)
{
    return fixture_cache_dirs_setup(state, "test_cache");
}

static int teardown(void **state)
{
    return fixture_cache_dirs_teardown(state);
}

/* ---- helpers ---------------------------------------------------------- */

static mfs_cache *open_cache(const fx *f, uint64_t max, unsigned flags)
{
    mfs_cache_config cfg = {.dir = f->dir, .max_size = max, .flags = flags};
    mfs_cache *c = NULL;
    mfs_err err = {0};
    if (mfs_cache_open(&cfg, &c, &err) < 0)
        fail_msg("open: %s", err.msg);
    return c;
}

static mfs_cache_stats stats(mfs_cache *c)
{
    mfs_cache_stats s;
    mfs_cache_get_stats(c, &s);
    return s;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

static mfs_cache_key key_of(const char *s)
{
    mfs_cache_keyb kb;
    mfs_cache_key k;
    assert_int_equal(mfs_cache_key_init(&kb, "test", NULL), 0);
    mfs_cache_key_add_str(&kb, s);
    mfs_cache_key_final(&kb, &k);
    return k;
}

/* The entry's file, worked out from the documented layout. */
static void entry_path(const fx *f, const mfs_cache_key *k, char suffix, char *out, size_t n)
{
    char hex[33];
    mfs_cache_key_hex(k, hex);
    snprintf(out, n, "%s/v2/%.2s/%s.%c", f->dir, hex, hex + 2, suffix);
}

static int exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static void write_file(const fx *f, const char *rel, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", f->root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

/* Sets mtime to a fixed second; ctime becomes "now" as a side effect. */
static void set_mtime(const char *path, time_t sec)
{
    struct timespec ts[2] = {{sec, 0}, {sec, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void canon128(const void *p, size_t n, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
    memcpy(out, c.digest, 16);
}

static void assert_payload(const mfs_cache_hit *h, const uint8_t *want, size_t n)
{
    assert_true(h->fd >= 0);
    assert_int_equal(h->length, n);
    uint8_t *got = malloc(n ? n : 1);
    assert_int_equal(pread(h->fd, got, n, (off_t)h->offset), (ssize_t)n);
    assert_memory_equal(got, want, n);
    free(got);
}

/* ---- keys ------------------------------------------------------------- */

/* Appends the documented field encodings to a buffer. */
typedef struct kbuf {
    uint8_t b[512];
    size_t n;
} kbuf;

static void kb_u64(kbuf *k, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        k->b[k->n++] = (uint8_t)(v >> (8 * i));
}

static void kb_str(kbuf *k, const char *s)
{
    k->b[k->n++] = 'S';
    kb_u64(k, strlen(s));
    memcpy(k->b + k->n, s, strlen(s));
    k->n += strlen(s);
}

static void kb_dep(kbuf *k, const char *path, uint64_t size, const uint8_t h[16])
{
    k->b[k->n++] = 'D';
    kb_u64(k, strlen(path));
    memcpy(k->b + k->n, path, strlen(path));
    k->n += strlen(path);
    kb_u64(k, size);
    memcpy(k->b + k->n, h, 16);
    k->n += 16;
}

static void test_key_encoding(void **state)
{
    (void)state;
    mfs_dep deps[2] = {{"car.obj", 1234, {0}, 0, 0}, {"car.mtl", 56, {0}, 0, 0}};
    for (int i = 0; i < 16; i++) {
        deps[0].hash[i] = (uint8_t)i;
        deps[1].hash[i] = (uint8_t)(0xf0 + i);
    }
    kbuf want = {{0}, 0};
    kb_str(&want, "meshfs.view.v2");
    kb_dep(&want, "car.obj", 1234, deps[0].hash);
    kb_dep(&want, "car.mtl", 56, deps[1].hash);
    kb_str(&want, "fmd");
    kb_str(&want, "pretrans;");
    kb_str(&want, "meshfs 0.1.0");
    /* 'S' + u64 14 + "meshfs.view.v2" = 23 bytes, first bytes spelled out. */
    static const uint8_t head[10] = {'S', 14, 0, 0, 0, 0, 0, 0, 0, 'm'};
    assert_memory_equal(want.b, head, sizeof head);
    uint8_t h[16];
    canon128(want.b, want.n, h);

    mfs_cache_key k, k2;
    assert_int_equal(mfs_cache_view_key(deps, 2, "fmd", "pretrans;", "meshfs 0.1.0", &k, NULL), 0);
    assert_memory_equal(k.b, h, 16);
    assert_int_equal(mfs_cache_view_key(deps, 2, "fmd", "pretrans;", "meshfs 0.1.0", &k2, NULL), 0);
    assert_memory_equal(k.b, k2.b, 16);

    /* The manifest key: its domain, the model as a dep, options, version. */
    kbuf mw = {{0}, 0};
    kb_str(&mw, "meshfs.manifest.v3");
    kb_dep(&mw, "car.obj", 1234, deps[0].hash);
    kb_str(&mw, "");
    kb_str(&mw, "v");
    canon128(mw.b, mw.n, h);
    assert_int_equal(mfs_cache_manifest_key("car.obj", 1234, deps[0].hash, "", "v", &k, NULL), 0);
    assert_memory_equal(k.b, h, 16);

    /* u64 and byte fields. */
    kbuf uw = {{0}, 0};
    kb_str(&uw, "d");
    uw.b[uw.n++] = 'U';
    kb_u64(&uw, 0x0102030405060708ull);
    canon128(uw.b, uw.n, h);
    mfs_cache_keyb kb;
    assert_int_equal(mfs_cache_key_init(&kb, "d", NULL), 0);
    mfs_cache_key_add_u64(&kb, 0x0102030405060708ull);
    mfs_cache_key_final(&kb, &k);
    assert_memory_equal(k.b, h, 16);

    char hex[33];
    mfs_cache_key_hex(&(mfs_cache_key){{0x01, 0xab, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}}, hex);
    assert_string_equal(hex, "01abff00000000000000000000000010");
}

static mfs_cache_key two_strs(const char *a, const char *b)
{
    mfs_cache_keyb kb;
    mfs_cache_key k;
    assert_int_equal(mfs_cache_key_init(&kb, "t", NULL), 0);
    mfs_cache_key_add_str(&kb, a);
    mfs_cache_key_add_str(&kb, b);
    mfs_cache_key_final(&kb, &k);
    return k;
}

static void test_key_separation(void **state)
{
    (void)state;
    mfs_cache_key a = two_strs("ab", "c"), b = two_strs("a", "bc");
    assert_memory_not_equal(a.b, b.b, 16);
    /* Tags alone do not separate fields: lengths must. */
    a = two_strs("aSb", "c");
    b = two_strs("a", "bSc");
    assert_memory_not_equal(a.b, b.b, 16);
    a = two_strs("", "x");
    b = two_strs("x", "");
    assert_memory_not_equal(a.b, b.b, 16);
    a = two_strs("ab", "c");
    b = two_strs("ab", "c");
    assert_memory_equal(a.b, b.b, 16);

    /* A dep is not a string with the same bytes; order of deps matters. */
    uint8_t h1[16] = {1}, h2[16] = {2};
    mfs_dep d12[2] = {{"a", 1, {1}, 0, 0}, {"b", 1, {2}, 0, 0}};
    mfs_dep d21[2] = {{"b", 1, {2}, 0, 0}, {"a", 1, {1}, 0, 0}};
    mfs_cache_key k12, k21;
    mfs_cache_view_key(d12, 2, "fmd", "", "v", &k12, NULL);
    mfs_cache_view_key(d21, 2, "fmd", "", "v", &k21, NULL);
    assert_memory_not_equal(k12.b, k21.b, 16);

    /* Each dep field changes the key. */
    mfs_dep one = {"a", 1, {0}, 0, 0};
    memcpy(one.hash, h1, 16);
    mfs_cache_key base, k;
    mfs_cache_view_key(&one, 1, "fmd", "", "v", &base, NULL);
    memcpy(one.hash, h2, 16);
    mfs_cache_view_key(&one, 1, "fmd", "", "v", &k, NULL);
    assert_memory_not_equal(base.b, k.b, 16);
    memcpy(one.hash, h1, 16);
    one.size = 2;
    mfs_cache_view_key(&one, 1, "fmd", "", "v", &k, NULL);
    assert_memory_not_equal(base.b, k.b, 16);
    one.size = 1;
    /* Format, options and version are separate fields. */
    mfs_cache_key fo1, fo2;
    mfs_cache_view_key(&one, 1, "fmd", "x", "v", &fo1, NULL);
    mfs_cache_view_key(&one, 1, "fmdx", "", "v", &fo2, NULL);
    assert_memory_not_equal(fo1.b, fo2.b, 16);
    mfs_cache_view_key(&one, 1, "fmd", "", "v", &k, NULL);
    assert_memory_equal(base.b, k.b, 16);
    /* Same fields, other domain. */
    mfs_cache_manifest_key("a", 1, h1, "", "v", &k, NULL);
    assert_memory_not_equal(base.b, k.b, 16);
}

/* The texture search's inputs (mfs_dep.texture) are in the key of a view
 * that reads the image and in no other: a texture edit leaves .gmf's key
 * as it was, and .tex's moves. */
static void test_key_texture_inputs(void **state)
{
    (void)state;
    mfs_dep d[3] = {{"m.obj", 1, {1}, 0, 0}, {"wood.png", 7, {2}, 0, 1}, {"m.mtl", 2, {3}, 0, 0}};
    mfs_dep plain[2] = {d[0], d[2]};
    mfs_cache_key a, b, c;
    assert_int_equal(mfs_cache_view_key_for(d, 3, 0, "gmf", "", "v", &a, NULL), 0);
    assert_int_equal(mfs_cache_view_key(plain, 2, "gmf", "", "v", &b, NULL), 0);
    assert_memory_equal(a.b, b.b, 16);
    d[1].hash[0] = 9; /* the texture edited */
    assert_int_equal(mfs_cache_view_key_for(d, 3, 0, "gmf", "", "v", &c, NULL), 0);
    assert_memory_equal(a.b, c.b, 16);
    assert_int_equal(mfs_cache_view_key_for(d, 3, 1, "tex", "", "v", &a, NULL), 0);
    d[1].hash[0] = 2;
    assert_int_equal(mfs_cache_view_key_for(d, 3, 1, "tex", "", "v", &b, NULL), 0);
    assert_memory_not_equal(a.b, b.b, 16);
    assert_int_equal(mfs_cache_view_key(d, 3, "tex", "", "v", &c, NULL), 0);
    assert_memory_equal(b.b, c.b, 16);
    /* the mark survives the model entry's codec, and a reader without
     * .tex drops what it marks */
    mfs_cache_manifest m = {d, 3, NULL, 0, 0};
    mfs_sink s;
    mfs_sink_init_mem(&s);
    mfs_manifest_put_table(&s, &m);
    mfs_cache_manifest back;
    memset(&back, 0, sizeof back);
    uint64_t used;
    assert_int_equal(mfs_manifest_get_table(s.buf, s.len, &used, &back), 0);
    assert_int_equal(back.ndeps, 3);
    assert_int_equal(back.deps[0].texture, 0);
    assert_int_equal(back.deps[1].texture, 1);
    assert_int_equal(back.deps[1].kind, MFS_DEP_FILE);
    mfs_cache_manifest_drop_texture_inputs(&back);
    assert_int_equal(back.ndeps, 2);
    assert_string_equal(back.deps[0].path, "m.obj");
    assert_string_equal(back.deps[1].path, "m.mtl");
    mfs_cache_manifest_free(&back);
    mfs_sink_free(&s);
}

/* ---- entries ---------------------------------------------------------- */

static void test_store_lookup(void **state)
{
    fx *f = *state;
    enum { N = 300000 }; /* more than one verification chunk */
    uint8_t *data = malloc(N);
    fill(data, N, 7);
    mfs_cache_key k = key_of("view-1");
    mfs_err err = {0};

    mfs_cache *c = open_cache(f, 0, 0);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(c, &k, &h, &err), 0);
    assert_int_equal(h.fd, -1);
    assert_int_equal(mfs_cache_store(c, &k, data, N, &h, &err), 0);
    assert_int_equal(h.offset, 0);
    assert_payload(&h, data, N);
    struct stat fst;
    assert_int_equal(fstat(h.fd, &fst), 0);
    assert_int_equal(fst.st_size, N); /* the file is the payload: a backing file */
    mfs_cache_hit_release(&h);
    assert_int_equal(mfs_cache_lookup(c, &k, &h, &err), 1);
    assert_payload(&h, data, N);
    mfs_cache_hit_release(&h);
    mfs_cache_stats s = stats(c);
    assert_int_equal(s.stores, 1);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.verified, 0); /* written by us: trusted */
    assert_int_equal(s.size, N);
    mfs_cache_close(c);

    /* A fresh handle (another mount) verifies once, then trusts. */
    c = open_cache(f, 0, 0);
    assert_int_equal(stats(c).size, N);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mfs_cache_lookup(c, &k, &h, &err), 1);
        assert_payload(&h, data, N);
        mfs_cache_hit_release(&h);
    }
    s = stats(c);
    assert_int_equal(s.verified, 1);
    assert_int_equal(s.hits, 2);
    assert_int_equal(s.corrupt_discarded, 0);

    /* Streaming writer, in pieces, gives the same entry format. */
    mfs_cache_key k2 = key_of("view-2");
    mfs_cache_writer *w;
    assert_int_equal(mfs_cache_writer_begin(c, &k2, &w, &err), 0);
    for (size_t off = 0; off < N; off += 70001)
        assert_int_equal(mfs_cache_writer_write(w, data + off, N - off < 70001 ? N - off : 70001, &err), 0);
    assert_int_equal(mfs_cache_writer_commit(w, NULL, &err), 0);
    mfs_cache_close(c);
    c = open_cache(f, 0, 0);
    assert_int_equal(mfs_cache_lookup(c, &k2, &h, &err), 1);
    assert_payload(&h, data, N);
    mfs_cache_hit_release(&h);
    assert_int_equal(stats(c).verified, 1);

    /* An aborted writer leaves nothing. */
    mfs_cache_key k3 = key_of("view-3");
    assert_int_equal(mfs_cache_writer_begin(c, &k3, &w, &err), 0);
    assert_int_equal(mfs_cache_writer_write(w, data, 100, &err), 0);
    mfs_cache_writer_abort(w);
    assert_int_equal(mfs_cache_lookup(c, &k3, &h, &err), 0);
    char tmpdir[512];
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", f->dir);
    assert_int_equal(count_files(tmpdir), 0);

    /* Removal. */
    assert_int_equal(mfs_cache_remove(c, &k2, &err), 0);
    assert_int_equal(mfs_cache_lookup(c, &k2, &h, &err), 0);
    mfs_cache_close(c);
    free(data);
}

/* The 40-byte descriptor and 16-byte checksum of a view, as docs/cache.md
 * lays them out. */
static void expected_record(const mfs_cache_key *k, const char *payload, size_t n, uint8_t rec[56])
{
    static const uint8_t head[16] = {'m', 'f', 's', 'c', 'a', 'c', 'h', 'e', 2, 0, 0, 0, 1, 0, 0, 0};
    memset(rec, 0, 56);
    memcpy(rec, head, 16);
    memcpy(rec + 16, k->b, 16);
    for (int i = 0; i < 8; i++)
        rec[32 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    uint8_t both[256];
    assert_true(n + 40 <= sizeof both);
    memcpy(both, payload, n);
    memcpy(both + n, rec, 40);
    canon128(both, n + 40, rec + 40);
}

static void test_entry_bytes(void **state)
{
    fx *f = *state;
    mfs_cache_key k = key_of("bytes");
    mfs_cache *c = open_cache(f, 0, 0);
    assert_int_equal(mfs_cache_store(c, &k, "hello", 5, NULL, NULL), 0);
    mfs_cache_close(c);
    uint8_t want[56];
    expected_record(&k, "hello", 5, want);

    /* The xattr form: the file is exactly the payload, the record is the
     * attribute user.meshfs.entry. */
    char path[512];
    entry_path(f, &k, 'e', path, sizeof path);
    uint8_t b[128];
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, b, sizeof b), 5);
    assert_memory_equal(b, "hello", 5);
    assert_int_equal(fgetxattr(fd, "user.meshfs.entry", b, sizeof b), 56);
    assert_memory_equal(b, want, 56);
    close(fd);

    /* The trailer form (no user xattrs): payload at 0, the same 56 bytes
     * after it; file size n + 56, and no attribute. */
    mfs_cache_key kt = key_of("bytes-trailer");
    c = open_cache(f, 0, MFS_CACHE_TRAILER_FORM);
    assert_int_equal(mfs_cache_store(c, &kt, "hello", 5, NULL, NULL), 0);
    mfs_cache_close(c);
    expected_record(&kt, "hello", 5, want);
    entry_path(f, &kt, 'e', path, sizeof path);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, b, sizeof b), 61);
    assert_memory_equal(b, "hello", 5);
    assert_memory_equal(b + 5, want, 40);       /* magic 5, version 13, kind 17, key 21, n 37 */
    assert_memory_equal(b + 45, want + 40, 16); /* checksum */
    assert_int_equal(fgetxattr(fd, "user.meshfs.entry", b, sizeof b), -1);
    assert_int_equal(errno, ENODATA);
    close(fd);
    /* and it is served, from offset 0 */
    c = open_cache(f, 0, 0);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(c, &kt, &h, NULL), 1);
    assert_int_equal(h.offset, 0);
    assert_int_equal(h.length, 5);
    assert_payload(&h, (const uint8_t *)"hello", 5);
    mfs_cache_hit_release(&h);
    assert_int_equal(stats(c).verified, 1);
    mfs_cache_close(c);

    /* CACHEDIR.TAG carries the standard signature. */
    char tag[512], text[64];
    snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", f->dir);
    fd = open(tag, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, text, 44), 44);
    close(fd);
    assert_memory_equal(text, "Signature: 8a477f597d28d172789f06886806bc55\n", 44);
}

static void flip_byte(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x20;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

/* peek answers from the header alone; the bytes are checked when served. */
static void test_peek(void **state)
{
    fx *f = *state;
    mfs_err err;
    mfs_cache_key k = key_of("peek"), kn = key_of("peek-neg"), km = key_of("peek-missing");
    mfs_cache *c = open_cache(f, 0, 0);
    assert_int_equal(mfs_cache_store(c, &k, "0123456789", 10, NULL, &err), 0);
    assert_int_equal(mfs_cache_store_negative(c, &kn, "importer crashed: SIGSEGV", &err), 0);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_peek(c, &k, &h, &err), 1);
    assert_int_equal(h.fd, -1);
    assert_int_equal(h.length, 10);
    assert_null(h.reason);
    mfs_cache_hit_release(&h);
    assert_int_equal(mfs_cache_peek(c, &kn, &h, &err), 1);
    assert_string_equal(h.reason, "importer crashed: SIGSEGV");
    mfs_cache_hit_release(&h);
    assert_int_equal(mfs_cache_peek(c, &km, &h, &err), 0);
    /* a payload byte flipped: peek cannot tell, the serving lookup can */
    char path[512];
    entry_path(f, &k, 'e', path, sizeof path);
    flip_byte(path, 5);
    mfs_cache_close(c);
    c = open_cache(f, 0, 0);
    assert_int_equal(mfs_cache_peek(c, &k, &h, &err), 1);
    mfs_cache_hit_release(&h);
    assert_int_equal(mfs_cache_lookup(c, &k, &h, &err), 0);
    assert_int_equal(mfs_cache_peek(c, &k, &h, &err), 0); /* discarded */
    /* a record that disagrees with the file's size is not an entry */
    assert_int_equal(mfs_cache_store(c, &k, "abc", 3, NULL, &err), 0);
    assert_int_equal(truncate(path, 2), 0);
    assert_int_equal(mfs_cache_peek(c, &k, &h, &err), 0);
    mfs_cache_close(c);
}

/* Flips one bit of byte off of the record in the entry's xattr. */
static void flip_xattr_byte(const char *path, size_t off)
{
    uint8_t rec[56];
    assert_int_equal(getxattr(path, "user.meshfs.entry", rec, sizeof rec), 56);
    rec[off] ^= 0x20;
    assert_int_equal(setxattr(path, "user.meshfs.entry", rec, sizeof rec, XATTR_REPLACE), 0);
}

/* Stores N bytes under "corrupt" (trailer form or not), damages the file
 * with damage(path, arg), and checks the next handle discards it. */
static void corrupt_case(fx *f, int trailer, void (*damage)(const char *, long), long arg)
{
    enum { N = 1000 };
    uint8_t data[N];
    fill(data, N, 3);
    mfs_cache_key k = key_of("corrupt");
    mfs_cache *c = open_cache(f, 0, trailer ? MFS_CACHE_TRAILER_FORM : 0);
    assert_int_equal(mfs_cache_store(c, &k, data, N, NULL, NULL), 0);
    mfs_cache_close(c);
    char path[512];
    entry_path(f, &k, 'e', path, sizeof path);
    damage(path, arg);

    c = open_cache(f, 0, 0);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 0);
    assert_int_equal(h.fd, -1);
    mfs_cache_stats s = stats(c);
    assert_int_equal(s.corrupt_discarded, 1);
    assert_int_equal(s.hits, 0);
    assert_false(exists(path));
    mfs_cache_close(c);
}

static void damage_file(const char *path, long off) { flip_byte(path, (off_t)off); }
static void damage_xattr(const char *path, long off) { flip_xattr_byte(path, (size_t)off); }
static void damage_truncate(const char *path, long len) { assert_int_equal(truncate(path, len), 0); }
static void damage_strip(const char *path, long unused)
{
    (void)unused; /* as a copy that does not keep xattrs leaves it */
    assert_int_equal(removexattr(path, "user.meshfs.entry"), 0);
}
static void damage_xattr_size(const char *path, long n)
{
    uint8_t rec[64] = {0};
    assert_int_equal(getxattr(path, "user.meshfs.entry", rec, 56), 56);
    assert_int_equal(setxattr(path, "user.meshfs.entry", rec, (size_t)n, XATTR_REPLACE), 0);
}

static void test_corrupt_entry(void **state)
{
    fx *f = *state;
    enum { N = 1000 };
    /* record fields: magic, version, kind, key, length, checksum first and
     * last byte; then first and last payload byte */
    const long rec[] = {0, 8, 12, 20, 33, 40, 55};
    for (size_t i = 0; i < sizeof rec / sizeof *rec; i++) {
        corrupt_case(f, 0, damage_xattr, rec[i]);
        corrupt_case(f, 1, damage_file, N + rec[i]);
    }
    const long payload[] = {0, N - 1};
    for (size_t i = 0; i < 2; i++) {
        corrupt_case(f, 0, damage_file, payload[i]);
        corrupt_case(f, 1, damage_file, payload[i]);
    }
    corrupt_case(f, 0, damage_strip, 0);
    corrupt_case(f, 0, damage_xattr_size, 55);
    corrupt_case(f, 0, damage_xattr_size, 64);
}

static void test_truncated_entry(void **state)
{
    fx *f = *state;
    /* trailer form: n + 56 = 1056 bytes; xattr form: 1000 */
    const long trailer_lens[] = {1055, 1000, 56, 40, 10, 0};
    for (size_t i = 0; i < sizeof trailer_lens / sizeof *trailer_lens; i++)
        corrupt_case(f, 1, damage_truncate, trailer_lens[i]);
    const long xattr_lens[] = {999, 500, 0, 1001, 1056};
    for (size_t i = 0; i < sizeof xattr_lens / sizeof *xattr_lens; i++)
        corrupt_case(f, 0, damage_truncate, xattr_lens[i]);
}

/* A file in the version 1 layout: header, payload, checksum. */
static void write_v1_entry(const char *path, const mfs_cache_key *k, const char *payload, size_t n)
{
    uint8_t file[256] = {'m', 'f', 's', 'c', 'a', 'c', 'h', 'e', 1, 0, 0, 0, 1, 0, 0, 0};
    memcpy(file + 16, k->b, 16);
    file[32] = (uint8_t)n;
    memcpy(file + 40, payload, n);
    uint8_t both[256];
    memcpy(both, payload, n);
    memcpy(both + n, file, 40);
    canon128(both, n + 40, file + 40 + n);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, file, 56 + n), (ssize_t)(56 + n));
    close(fd);
}

/* A cache from the previous layout is never served wrong: its v1/ is
 * removed when the cache opens, and a version 1 file found where a version
 * 2 entry belongs (copied by hand) is discarded. */
static void test_old_layout_never_served(void **state)
{
    fx *f = *state;
    mfs_cache_key k = key_of("old");
    char hex[33], dir[512], path[600];
    mfs_cache_key_hex(&k, hex);
    mfs_cache *c = open_cache(f, 0, 0);
    mfs_cache_close(c);
    snprintf(dir, sizeof dir, "%s/v1", f->dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof dir, "%s/v1/%.2s", f->dir, hex);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/%s.e", dir, hex + 2);
    write_v1_entry(path, &k, "old bytes", 9);

    c = open_cache(f, 0, 0);
    snprintf(dir, sizeof dir, "%s/v1", f->dir);
    assert_false(exists(dir));
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 0);
    assert_int_equal(mfs_cache_peek(c, &k, &h, NULL), 0);
    assert_int_equal(stats(c).size, 0); /* nothing of it counted */

    /* a version 1 file under the version 2 name */
    snprintf(dir, sizeof dir, "%s/v2/%.2s", f->dir, hex);
    mkdir(dir, 0700);
    entry_path(f, &k, 'e', path, sizeof path);
    write_v1_entry(path, &k, "old bytes", 9);
    assert_int_equal(mfs_cache_peek(c, &k, &h, NULL), 0);
    assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 0);
    assert_int_equal(stats(c).corrupt_discarded, 1);
    assert_false(exists(path));
    /* a v1 symbolic link is not followed: only the link goes */
    char victim[512], link[512];
    snprintf(victim, sizeof victim, "%s/victim", f->base);
    assert_int_equal(mkdir(victim, 0700), 0);
    snprintf(path, sizeof path, "%s/keep", victim);
    write_v1_entry(path, &k, "x", 1);
    mfs_cache_close(c);
    snprintf(link, sizeof link, "%s/v1", f->dir);
    assert_int_equal(symlink(victim, link), 0);
    c = open_cache(f, 0, 0);
    assert_true(exists(path));
    mfs_cache_close(c);
}

/* The single-file check a verifier calls: each outcome and its reason. */
static void test_entry_check(void **state)
{
    fx *f = *state;
    mfs_cache_key k = key_of("check"), other = key_of("other");
    mfs_cache *c = open_cache(f, 0, 0);
    assert_int_equal(mfs_cache_store(c, &k, "0123456789", 10, NULL, NULL), 0);
    mfs_cache_close(c);
    char path[512];
    entry_path(f, &k, 'e', path, sizeof path);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    mfs_cache_entry_info info;
    const char *why = "unset";
    assert_int_equal(mfs_cache_entry_check(fd, &k, 'e', &info, &why), 1);
    assert_null(why);
    assert_int_equal(info.kind, 1);
    assert_int_equal(info.form, MFS_CACHE_FORM_XATTR);
    assert_int_equal(info.length, 10);
    assert_int_equal(info.size, 10);
    assert_memory_equal(info.key.b, k.b, 16);
    assert_int_equal(mfs_cache_entry_check(fd, NULL, 'e', &info, &why), 1);
    assert_int_equal(mfs_cache_entry_check(fd, &other, 'e', &info, &why), 0);
    assert_string_equal(why, "its key is not the one its name says");
    assert_int_equal(mfs_cache_entry_check(fd, &k, 'm', &info, &why), 0);
    assert_string_equal(why, "a kind that does not belong under its name");
    close(fd);
    flip_byte(path, 3);
    fd = open(path, O_RDONLY);
    assert_int_equal(mfs_cache_entry_check(fd, &k, 'e', &info, &why), 0);
    assert_string_equal(why, "checksum mismatch");
    close(fd);
    assert_true(exists(path)); /* a check never removes */
    assert_int_equal(truncate(path, 11), 0);
    fd = open(path, O_RDONLY);
    assert_int_equal(mfs_cache_entry_check(fd, &k, 'e', &info, &why), 0);
    assert_string_equal(why, "its length does not match the file's size");
    close(fd);
}

static void test_negative_entry(void **state)
{
    fx *f = *state;
    const char *why = "fmd: mesh 'wheel': 70000 vertices exceed 65535";
    mfs_cache_key k = key_of("neg");
    mfs_cache *c = open_cache(f, 0, 0);
    assert_int_equal(mfs_cache_store_negative(c, &k, why, NULL), 0);
    mfs_cache_close(c);
    c = open_cache(f, 0, 0);
    for (int i = 0; i < 2; i++) {
        mfs_cache_hit h;
        assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 1);
        assert_int_equal(h.fd, -1);
        assert_non_null(h.reason);
        assert_string_equal(h.reason, why);
        mfs_cache_hit_release(&h);
        assert_null(h.reason);
    }
    mfs_cache_stats s = stats(c);
    assert_int_equal(s.hits, 2);
    assert_int_equal(s.negative_hits, 2);
    assert_int_equal(s.verified, 1);
    /* A later success replaces the failure under the same key. */
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_store(c, &k, "ok", 2, NULL, NULL), 0);
    assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 1);
    assert_null(h.reason);
    assert_payload(&h, (const uint8_t *)"ok", 2);
    mfs_cache_hit_release(&h);
    mfs_cache_close(c);
}

/* ---- stat index ------------------------------------------------------- */

static void test_index(void **state)
{
    fx *f = *state;
    char text[5000], path[512];
    fill((uint8_t *)text, sizeof text, 9);
    write_file(f, "m.obj", text, sizeof text);
    snprintf(path, sizeof path, "%s/m.obj", f->root);
    set_mtime(path, 1000000000);
    uint8_t want[16], h[16];
    canon128(text, sizeof text, want);

    mfs_cache *c = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);
    struct stat st;
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "m.obj", &st, h, NULL), 0);
    assert_memory_equal(h, want, 16);
    assert_int_equal(st.st_size, sizeof text);
    assert_int_equal(stats(c).files_hashed, 1);
    assert_int_equal(stats(c).bytes_hashed, sizeof text);
    /* Same stat: answered by the index. */
    memset(h, 0, 16);
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "m.obj", NULL, h, NULL), 0);
    assert_memory_equal(h, want, 16);
    assert_int_equal(stats(c).files_hashed, 1);
    assert_int_equal(stats(c).index_hits, 1);
    mfs_cache_close(c);

    /* Persisted: another handle re-reads no bytes. */
    c = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);
    int fd = openat(f->rootfd, "m.obj", O_RDONLY);
    assert_int_equal(mfs_cache_file_hash(c, fd, NULL, h, NULL), 0);
    close(fd);
    assert_memory_equal(h, want, 16);
    assert_int_equal(stats(c).files_hashed, 0);
    assert_int_equal(stats(c).index_hits, 1);

    /* touch: stat changes, bytes do not -> re-hashed, same hash. */
    set_mtime(path, 1000000100);
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "m.obj", NULL, h, NULL), 0);
    assert_memory_equal(h, want, 16);
    assert_int_equal(stats(c).files_hashed, 1);
    /* ... and recorded again. */
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "m.obj", NULL, h, NULL), 0);
    assert_int_equal(stats(c).files_hashed, 1);

    /* Same size, other bytes: a new hash. */
    text[100] ^= 1;
    write_file(f, "m.obj", text, sizeof text);
    set_mtime(path, 1000000200);
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "m.obj", NULL, h, NULL), 0);
    canon128(text, sizeof text, want);
    assert_memory_equal(h, want, 16);
    assert_int_equal(stats(c).files_hashed, 2);

    /* Missing file: error with errno. */
    errno = 0;
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "nope.obj", NULL, h, NULL), -1);
    assert_int_equal(errno, ENOENT);
    mfs_cache_close(c);
}

static void test_index_racy(void **state)
{
    fx *f = *state;
    /* Just written, ctime = now: inside the racy window, so never recorded. */
    write_file(f, "fresh.obj", "abc", 3);
    mfs_cache *c = open_cache(f, 0, 0);
    uint8_t h[16], want[16];
    canon128("abc", 3, want);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "fresh.obj", NULL, h, NULL), 0);
        assert_memory_equal(h, want, 16);
    }
    assert_int_equal(stats(c).files_hashed, 2);
    assert_int_equal(stats(c).index_hits, 0);
    mfs_cache_close(c);
}

/* Shards, their damage, compaction and the memory cap: test_index.c. */

static void test_index_shared(void **state)
{
    fx *f = *state;
    /* Two live handles: what one hashes, the other finds without hashing. */
    write_file(f, "s.obj", "shared", 6);
    mfs_cache *a = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);
    mfs_cache *b = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);
    uint8_t h[16];
    assert_int_equal(mfs_cache_file_hash_at(a, f->rootfd, "s.obj", NULL, h, NULL), 0);
    assert_int_equal(mfs_cache_file_hash_at(b, f->rootfd, "s.obj", NULL, h, NULL), 0);
    assert_int_equal(stats(a).files_hashed, 1);
    assert_int_equal(stats(b).files_hashed, 0);
    mfs_cache_close(a);
    mfs_cache_close(b);
}

/* ---- manifests -------------------------------------------------------- */

/* Absent inputs are inputs (docs/cache.md, "Absent inputs"): a path the
 * importer tried and did not find, and a case-insensitive search, are kept
 * with their kind, keyed apart from files, and a manifest stops being
 * current when a file appears there or the search would find other names. */
static void test_manifest_absent_inputs(void **state)
{
    fx *f = *state;
    write_file(f, "car.obj", "v 0 0 0\nmtllib car.mtl\n", 23);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tex", f->root);
    assert_int_equal(mkdir(dir, 0755), 0);
    write_file(f, "tex/wood.png", "PNG", 3);
    mfs_cache *c = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);

    mfs_dep deps[3] = {{0}};
    struct stat st;
    deps[0].path = "car.obj";
    assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, "car.obj", &st, deps[0].hash, NULL), 0);
    deps[0].size = (uint64_t)st.st_size;
    deps[1] = (mfs_dep){.path = "car.mtl", .kind = MFS_DEP_ABSENT};
    deps[2] = (mfs_dep){.path = "tex/WOOD.png", .kind = MFS_DEP_LISTING};
    assert_int_equal(mfs_input_listing(f->rootfd, "tex/WOOD.png", &deps[2].size, deps[2].hash), 0);
    assert_int_equal(deps[2].size, 1);
    assert_int_equal(mfs_input_absent(f->rootfd, "car.mtl"), 1);
    assert_int_equal(mfs_input_absent(f->rootfd, "car.obj"), 0);
    assert_int_equal(mfs_input_absent(f->rootfd, "tex"), 1); /* a folder is no file */
    assert_int_equal(mfs_input_absent(f->rootfd, "car.obj/x"), 1);

    /* keys: an absent path is its own field, never a file of size 0 */
    mfs_cache_key k3, k1, kfile;
    assert_int_equal(mfs_cache_view_key(deps, 3, "fmd", "", "v", &k3, NULL), 0);
    assert_int_equal(mfs_cache_view_key(deps, 1, "fmd", "", "v", &k1, NULL), 0);
    assert_memory_not_equal(k3.b, k1.b, 16);
    mfs_dep asfile[2] = {deps[0], deps[1]};
    asfile[1].kind = MFS_DEP_FILE;
    mfs_cache_key k2;
    assert_int_equal(mfs_cache_view_key(deps, 2, "fmd", "", "v", &k2, NULL), 0);
    assert_int_equal(mfs_cache_view_key(asfile, 2, "fmd", "", "v", &kfile, NULL), 0);
    assert_memory_not_equal(k2.b, kfile.b, 16);
    kbuf want = {{0}, 0};
    kb_str(&want, "meshfs.view.v2");
    kb_dep(&want, "car.obj", deps[0].size, deps[0].hash);
    want.b[want.n++] = 'A';
    kb_u64(&want, 7);
    memcpy(want.b + want.n, "car.mtl", 7);
    want.n += 7;
    kb_str(&want, "fmd");
    kb_str(&want, "");
    kb_str(&want, "v");
    uint8_t h[16];
    canon128(want.b, want.n, h);
    assert_memory_equal(k2.b, h, 16);

    /* stored and read back with their kinds */
    mfs_cache_view views[1] = {{.format = "fmd", .key = k3}};
    mfs_cache_key mk;
    mfs_cache_manifest_key("car.obj", deps[0].size, deps[0].hash, "", "v", &mk, NULL);
    mfs_cache_manifest m = {deps, 3, views, 1, 0}, got;
    assert_int_equal(mfs_cache_manifest_store(c, &mk, &m, NULL, NULL), 0);
    assert_int_equal(mfs_cache_manifest_load(c, &mk, &got, NULL), 1);
    assert_int_equal(got.ndeps, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(got.deps[i].path, deps[i].path);
        assert_int_equal(got.deps[i].kind, deps[i].kind);
        assert_int_equal(got.deps[i].size, deps[i].size);
        assert_memory_equal(got.deps[i].hash, deps[i].hash, 16);
    }
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 1);
    assert_int_equal(mfs_cache_manifest_known(c, f->rootfd, &got, NULL), 1);

    /* the .mtl copied in after the model: stale; gone again: current */
    write_file(f, "car.mtl", "newmtl a\n", 9);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 0);
    assert_int_equal(mfs_cache_manifest_known(c, f->rootfd, &got, NULL), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/car.mtl", f->root);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 1);

    /* a name the search does not match changes nothing */
    write_file(f, "tex/stone.png", "PNG", 3);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 1);
    /* a better match appears: stale; removed: current */
    write_file(f, "tex/WOOD.png", "PNG", 3);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 0);
    snprintf(p, sizeof p, "%s/tex/WOOD.png", f->root);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 1);
    /* the only match renamed away: stale */
    char q[512];
    snprintf(p, sizeof p, "%s/tex/wood.png", f->root);
    snprintf(q, sizeof q, "%s/tex/wood2.png", f->root);
    assert_int_equal(rename(p, q), 0);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 0);
    mfs_cache_manifest_free(&got);
    mfs_cache_close(c);
}

/* The stem search (issue 34 item 6): "STEM.*" matches the image
 * extensions ignoring case, ranked so a decodable image wins and the pick
 * never depends on directory order; its listing moves when an image of
 * the stem appears, and not for other names. */
static void test_stem_search(void **state)
{
    fx *f = *state;
    assert_int_equal(mfs_input_name_rank("wood.*", "WOOD.JPG"), 2);
    assert_int_equal(mfs_input_name_rank("wood.*", "wood.tga"), 0);
    assert_int_equal(mfs_input_name_rank("wood.*", "wood.dds"), 5);
    assert_int_equal(mfs_input_name_rank("wood.*", "wood.txt"), -1);
    assert_int_equal(mfs_input_name_rank("wood.*", "woody.png"), -1);
    assert_int_equal(mfs_input_name_rank("wood.*", "wood.png.bak"), -1);
    assert_int_equal(mfs_input_name_rank("wood.*", "wood."), -1);
    assert_int_equal(mfs_input_name_rank("Wood.PNG", "wood.png"), 0);
    assert_int_equal(mfs_input_name_rank("Wood.PNG", "wood.jpg"), -1);
    char pat[16];
    assert_int_equal(mfs_input_stem_pattern("wood.tga", pat, sizeof pat), 0);
    assert_string_equal(pat, "wood.*");
    assert_int_equal(mfs_input_stem_pattern("skin", pat, sizeof pat), 0);
    assert_string_equal(pat, "skin.*");
    assert_int_equal(mfs_input_stem_pattern("metal.001", pat, sizeof pat), 0);
    assert_string_equal(pat, "metal.001.*");
    assert_int_equal(mfs_input_stem_pattern(".png", pat, sizeof pat), 0);
    assert_string_equal(pat, ".png.*");
    assert_int_equal(mfs_input_stem_pattern("a-very-long-name.png", pat, sizeof pat), -1);

    char dir[512], best[64];
    snprintf(dir, sizeof dir, "%s/t", f->root);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mfs_input_search(f->rootfd, "t/wood.*", best, sizeof best), 0);
    write_file(f, "t/wood.txt", "x", 1);
    write_file(f, "t/WOOD.dds", "x", 1);
    write_file(f, "t/Wood.JPG", "x", 1);
    write_file(f, "t/wood.jpg", "x", 1);
    assert_int_equal(mfs_input_search(f->rootfd, "t/wood.*", best, sizeof best), 1);
    assert_string_equal(best, "Wood.JPG"); /* jpg before dds; byte order among equals */
    uint64_t n, n2;
    uint8_t h[16], h2[16];
    assert_int_equal(mfs_input_listing(f->rootfd, "t/wood.*", &n, h), 0);
    assert_int_equal(n, 3);
    mfs_dep d = {.path = "t/wood.*", .kind = MFS_DEP_LISTING, .size = n};
    memcpy(d.hash, h, 16);
    assert_int_equal(mfs_input_holds(f->rootfd, &d), 1);
    write_file(f, "t/wood.obj", "x", 1); /* not an image: nothing moves */
    assert_int_equal(mfs_input_holds(f->rootfd, &d), 1);
    write_file(f, "t/wood.tga", "x", 1);
    assert_int_equal(mfs_input_holds(f->rootfd, &d), 0);
    assert_int_equal(mfs_input_search(f->rootfd, "t/wood.*", best, sizeof best), 1);
    assert_string_equal(best, "wood.tga");
    assert_int_equal(mfs_input_listing(f->rootfd, "t/wood.*", &n2, h2), 0);
    assert_int_equal(n2, 4);
    assert_memory_not_equal(h, h2, 16);
    /* a folder that is not there matches nothing */
    assert_int_equal(mfs_input_search(f->rootfd, "none/wood.*", best, sizeof best), 0);
    assert_int_equal(mfs_input_listing(f->rootfd, "none/wood.*", &n, h), 0);
    assert_int_equal(n, 0);
}

static void test_manifest(void **state)
{
    fx *f = *state;
    write_file(f, "car.obj", "v 0 0 0\nmtllib car.mtl\n", 23);
    write_file(f, "car.mtl", "newmtl paint\nmap_Kd tex.png\n", 28);
    write_file(f, "tex.png", "PNGDATA", 7);
    char mtl[512];
    snprintf(mtl, sizeof mtl, "%s/car.mtl", f->root);
    set_mtime(mtl, 1000000000);
    mfs_cache *c = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);

    static const char *names[3] = {"car.obj", "car.mtl", "tex.png"};
    mfs_dep deps[3] = {{0}};
    for (int i = 0; i < 3; i++) {
        struct stat st;
        deps[i].path = (char *)names[i];
        assert_int_equal(mfs_cache_file_hash_at(c, f->rootfd, names[i], &st, deps[i].hash, NULL), 0);
        deps[i].size = (uint64_t)st.st_size;
    }
    mfs_cache_view views[2] = {{.format = "fmd"}, {.format = "gmf"}};
    mfs_cache_view_key(deps, 3, "fmd", "pretrans;", "v1", &views[0].key, NULL);
    mfs_cache_view_key(deps, 3, "gmf", "", "v1", &views[1].key, NULL);
    mfs_cache_key mk;
    mfs_cache_manifest_key("car.obj", deps[0].size, deps[0].hash, "pretrans;", "v1", &mk, NULL);
    mfs_cache_manifest m = {deps, 3, views, 2, 0}, got;
    assert_int_equal(mfs_cache_manifest_load(c, &mk, &got, NULL), 0);
    assert_int_equal(mfs_cache_manifest_store(c, &mk, &m, NULL, NULL), 0);
    mfs_cache_close(c);

    c = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);
    assert_int_equal(mfs_cache_manifest_load(c, &mk, &got, NULL), 1);
    assert_int_equal(got.ndeps, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(got.deps[i].path, names[i]);
        assert_int_equal(got.deps[i].size, deps[i].size);
        assert_memory_equal(got.deps[i].hash, deps[i].hash, 16);
    }
    assert_int_equal(got.nviews, 2);
    assert_string_equal(got.views[1].format, "gmf");
    assert_memory_equal(mfs_cache_manifest_find(&got, "fmd")->b, views[0].key.b, 16);
    assert_memory_equal(mfs_cache_manifest_find(&got, "gmf")->b, views[1].key.b, 16);
    assert_null(mfs_cache_manifest_find(&got, "dem"));
    assert_int_equal(stats(c).manifest_hits, 1);

    /* A load marks the manifest used (its mtime is the LRU stamp); a peek,
     * as a listing does, leaves it alone. */
    char mpath[512];
    entry_path(f, &mk, 'm', mpath, sizeof mpath);
    struct stat mst;
    set_mtime(mpath, 1000000000);
    mfs_cache_manifest peeked;
    assert_int_equal(mfs_cache_manifest_peek(c, &mk, &peeked, NULL), 1);
    assert_int_equal(peeked.ndeps, 3);
    mfs_cache_manifest_free(&peeked);
    assert_int_equal(stat(mpath, &mst), 0);
    assert_int_equal(mst.st_mtime, 1000000000);
    mfs_cache_manifest_free(&got);
    assert_int_equal(mfs_cache_manifest_load(c, &mk, &got, NULL), 1);
    assert_int_equal(stat(mpath, &mst), 0);
    assert_true(mst.st_mtime > 1000000000);

    /* Deps unchanged: current, from the index alone. */
    assert_int_equal(mfs_cache_manifest_known(c, f->rootfd, &got, NULL), 1);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 1);
    assert_int_equal(stats(c).files_hashed, 0);
    struct stat ost;
    uint8_t oh[16];
    assert_int_equal(fstatat(f->rootfd, "car.obj", &ost, 0), 0);
    assert_int_equal(mfs_cache_file_hash_known(c, &ost, oh), 1);
    assert_memory_equal(oh, deps[0].hash, 16);
    /* Touched, same bytes: the index no longer knows it, so the index-only
     * answer is "not known" (and reads nothing); hashing says current. */
    set_mtime(mtl, 1000000100);
    assert_int_equal(mfs_cache_manifest_known(c, f->rootfd, &got, NULL), 0);
    assert_int_equal(stats(c).files_hashed, 0);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 1);
    assert_int_equal(stats(c).files_hashed, 1);
    assert_int_equal(mfs_cache_manifest_known(c, f->rootfd, &got, NULL), 1);
    /* Same size, other bytes: stale. */
    write_file(f, "car.mtl", "newmtl paint\nmap_Kd tex.jpg\n", 28);
    set_mtime(mtl, 1000000200);
    assert_int_equal(mfs_cache_manifest_known(c, f->rootfd, &got, NULL), 0);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 0);
    /* Recorded, but under other bytes: never mistaken for current. */
    assert_int_equal(mfs_cache_manifest_known(c, f->rootfd, &got, NULL), 0);
    /* Back to the old bytes: current again. */
    write_file(f, "car.mtl", "newmtl paint\nmap_Kd tex.png\n", 28);
    set_mtime(mtl, 1000000300);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 1);
    /* Other size: stale without hashing. */
    uint64_t hashed = stats(c).files_hashed;
    write_file(f, "tex.png", "PNGDATA2", 8);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 0);
    assert_int_equal(stats(c).files_hashed, hashed);
    /* Gone: stale. */
    assert_int_equal(unlinkat(f->rootfd, "tex.png", 0), 0);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &got, NULL), 0);
    mfs_cache_manifest_free(&got);

    /* A damaged manifest is discarded, not decoded. */
    mfs_cache_close(c);
    char path[512];
    entry_path(f, &mk, 'm', path, sizeof path);
    flip_byte(path, 5);
    c = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);
    assert_int_equal(mfs_cache_manifest_load(c, &mk, &got, NULL), 0);
    assert_int_equal(stats(c).corrupt_discarded, 1);
    assert_false(exists(path));
    mfs_cache_close(c);
}

static void test_manifest_escape(void **state)
{
    fx *f = *state;
    /* A dep that now leads out of the root never counts as current, even
     * when the file outside has the recorded bytes. */
    char outside[512], link[512];
    snprintf(outside, sizeof outside, "%s/outside.png", f->base);
    int fd = open(outside, O_WRONLY | O_CREAT, 0600);
    assert_int_equal(write(fd, "PNG", 3), 3);
    close(fd);
    snprintf(link, sizeof link, "%s/tex.png", f->root);
    assert_int_equal(symlink(outside, link), 0);
    mfs_dep d = {"tex.png", 3, {0}, 0, 0};
    canon128("PNG", 3, d.hash);
    mfs_cache_manifest m = {&d, 1, NULL, 0, 0};
    mfs_cache *c = open_cache(f, 0, MFS_CACHE_TRUST_FRESH_STAT);
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &m, NULL), 0);
    d.path = "../outside.png";
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &m, NULL), 0);
    d.path = "";
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &m, NULL), 0);
    /* The same bytes inside the root are current. */
    write_file(f, "in.png", "PNG", 3);
    d.path = "in.png";
    assert_int_equal(mfs_cache_manifest_current(c, f->rootfd, &m, NULL), 1);
    assert_int_equal(stats(c).files_hashed, 1);
    mfs_cache_close(c);
}

/* ---- eviction --------------------------------------------------------- */

static void test_evict_lru(void **state)
{
    fx *f = *state;
    enum { N = 1000 }; /* files of 1000 bytes (the record is an xattr) */
    uint8_t data[4][N];
    mfs_cache_key k[4];
    char path[4][512];
    for (int i = 0; i < 4; i++) {
        fill(data[i], N, (uint32_t)i + 20);
        char name[8] = {'e', (char)('A' + i), 0};
        k[i] = key_of(name);
        entry_path(f, &k[i], 'e', path[i], sizeof path[i]);
    }
    /* Cap 3500: three entries (3000) fit, four (4000) do not, and trimming
     * to 90% (3150) takes exactly one. */
    mfs_cache *c = open_cache(f, 3500, 0);
    mfs_cache_hit h;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(mfs_cache_store(c, &k[i], data[i], N, NULL, NULL), 0);
        /* served: no longer fresh (test_evict_fresh_last) */
        assert_int_equal(mfs_cache_lookup(c, &k[i], &h, NULL), 1);
        mfs_cache_hit_release(&h);
    }
    assert_int_equal(mfs_cache_lookup(c, &k[0], &h, NULL), 1); /* A is now newer than B */
    mfs_cache_hit_release(&h);
    assert_int_equal(stats(c).evictions, 0);
    assert_int_equal(mfs_cache_store(c, &k[3], data[3], N, NULL, NULL), 0);
    assert_int_equal(stats(c).evictions, 1);
    assert_int_equal(stats(c).size, 3 * N);
    assert_true(exists(path[0]));
    assert_false(exists(path[1]));
    assert_true(exists(path[2]));
    assert_true(exists(path[3]));

    /* A held-open entry survives its own eviction for its reader. */
    mfs_cache_hit held;
    assert_int_equal(mfs_cache_lookup(c, &k[2], &held, NULL), 1);
    mfs_cache_set_max_size(c, 1);
    assert_int_equal(mfs_cache_evict(c, NULL), 3);
    assert_false(exists(path[2]));
    assert_payload(&held, data[2], N);
    mfs_cache_hit_release(&held);
    assert_int_equal(mfs_cache_lookup(c, &k[2], &h, NULL), 0);
    assert_int_equal(stats(c).size, 0);
    assert_int_equal(stats(c).evictions, 4);
    mfs_cache_close(c);

    /* Opening with a lower cap trims at once. */
    c = open_cache(f, 0, 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(mfs_cache_store(c, &k[i], data[i], N, NULL, NULL), 0);
    mfs_cache_close(c);
    c = open_cache(f, 2200, 0);
    assert_int_equal(stats(c).evictions, 3); /* down to 1980 */
    assert_false(exists(path[2]));
    assert_true(exists(path[3]));
    mfs_cache_close(c);
}

/* A download's reservation (src/remote/xfer.c) counts against the cap: it makes room
 * by evicting the oldest entries, and is refused when even that leaves too
 * little beside other downloads; giving it back with kept bytes turns them
 * into the size estimate. */
static void test_reserve_makes_room(void **state)
{
    fx *f = *state;
    enum { N = 1000 };
    uint8_t data[3][N];
    mfs_cache_key k[3];
    char path[3][512];
    for (int i = 0; i < 3; i++) {
        fill(data[i], N, (uint32_t)i + 40);
        char name[8] = {'r', (char)('A' + i), 0};
        k[i] = key_of(name);
        entry_path(f, &k[i], 'e', path[i], sizeof path[i]);
    }
    mfs_cache *c = open_cache(f, 3500, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(mfs_cache_store(c, &k[i], data[i], N, NULL, NULL), 0);
    assert_int_equal(mfs_cache_reserve(c, 400), 0); /* 3400: fits as it is */
    assert_int_equal(stats(c).evictions, 0);
    /* 3800 would not: the oldest entry goes (trimmed to 90% less the 800 held) */
    assert_int_equal(mfs_cache_reserve(c, 400), 0);
    assert_int_equal(stats(c).evictions, 1);
    assert_false(exists(path[0]));
    assert_true(exists(path[2]));
    assert_int_equal(stats(c).size, 2 * N);
    /* 2800 beside the 800 held: no eviction can make room, and none is done */
    assert_int_equal(mfs_cache_reserve(c, 2800), -1);
    assert_int_equal(stats(c).evictions, 1);
    assert_true(exists(path[1]));
    /* a download given back, one kept as an entry of 500 bytes */
    mfs_cache_unreserve(c, 400, 0);
    mfs_cache_unreserve(c, 400, 500);
    assert_int_equal(stats(c).size, 2 * N + 500);
    assert_int_equal(mfs_cache_reserve(c, 1000), 0); /* 3500: exactly the cap */
    /* one byte more: the trim's scan finds the true size (no file of 500
     * bytes was kept here), so it fits without evicting */
    assert_int_equal(mfs_cache_reserve(c, 1), 0);
    assert_int_equal(stats(c).evictions, 1);
    assert_int_equal(stats(c).size, 2 * N);
    /* a second download of the whole cap: hopeless beside the first */
    assert_int_equal(mfs_cache_reserve(c, 3500), -1);
    mfs_cache_unreserve(c, 1001, 0);
    /* alone, it empties the cache for itself */
    assert_int_equal(mfs_cache_reserve(c, 3500), 0);
    assert_int_equal(stats(c).evictions, 3);
    assert_int_equal(stats(c).size, 0);
    mfs_cache_unreserve(c, 3500, 0);
    mfs_cache_close(c);
}

/* An entry stored and not yet served goes after every other one, even
 * entries used since its store: its reader is waiting for it (issue 36: a
 * view that fits the cap was evicted as soon as stored while others'
 * reads kept their stamps newer).  Only when the others cannot make room
 * does it go too. */
static void test_evict_fresh_last(void **state)
{
    fx *f = *state;
    enum { N = 1000 };
    uint8_t data[5][N];
    mfs_cache_key k[5];
    char path[5][512];
    for (int i = 0; i < 5; i++) {
        fill(data[i], N, (uint32_t)i + 40);
        char name[8] = {'f', (char)('A' + i), 0};
        k[i] = key_of(name);
        entry_path(f, &k[i], 'e', path[i], sizeof path[i]);
    }
    /* Cap 4500: four entries fit, a fifth trims to 4050, one goes. */
    mfs_cache *c = open_cache(f, 4500, 0);
    mfs_cache_hit h;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(mfs_cache_store(c, &k[i], data[i], N, NULL, NULL), 0);
        assert_int_equal(mfs_cache_lookup(c, &k[i], &h, NULL), 1);
        mfs_cache_hit_release(&h);
    }
    assert_int_equal(mfs_cache_store(c, &k[3], data[3], N, NULL, NULL), 0); /* fresh: D */
    for (int i = 0; i < 3; i++) { /* the others are used after it: newer stamps */
        assert_int_equal(mfs_cache_lookup(c, &k[i], &h, NULL), 1);
        mfs_cache_hit_release(&h);
    }
    assert_int_equal(mfs_cache_store(c, &k[4], data[4], N, NULL, NULL), 0);
    assert_int_equal(stats(c).evictions, 1);
    assert_false(exists(path[0])); /* the least recently used of the served ones */
    assert_true(exists(path[3]));  /* the fresh one stays */
    assert_true(exists(path[4]));
    /* served, it is an entry like any other: the oldest now */
    assert_int_equal(mfs_cache_lookup(c, &k[3], &h, NULL), 1);
    mfs_cache_hit_release(&h);
    /* a cap the fresh one alone does not fit: it goes as well */
    mfs_cache_set_max_size(c, 500);
    assert_int_equal(mfs_cache_evict(c, NULL), 4);
    for (int i = 0; i < 5; i++)
        assert_false(exists(path[i]));
    mfs_cache_close(c);
}

/* ---- crash leftovers -------------------------------------------------- */

static void test_crash_and_tmp_cleanup(void **state)
{
    fx *f = *state;
    mfs_cache_key k = key_of("crash");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        mfs_cache *c = open_cache(f, 0, 0);
        mfs_cache_writer *w;
        uint8_t data[5000];
        fill(data, sizeof data, 1);
        if (mfs_cache_writer_begin(c, &k, &w, NULL) < 0 ||
            mfs_cache_writer_write(w, data, sizeof data, NULL) < 0)
            _exit(1);
        raise(SIGKILL); /* kill -9 mid-write */
        _exit(2);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    char tmpdir[512], entry[512], old[1024], fresh[1024];
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", f->dir);
    entry_path(f, &k, 'e', entry, sizeof entry);
    assert_int_equal(count_files(tmpdir), 1); /* only a temp file ... */
    assert_false(exists(entry));              /* ... never a half entry */

    /* Age the dead writer's file past the 1 h limit; a live writer's file
     * (fresh) must stay. */
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            snprintf(old, sizeof old, "%s/%s", tmpdir, de->d_name);
    closedir(d);
    set_mtime(old, time(NULL) - 3601);
    snprintf(fresh, sizeof fresh, "%s/live-writer.tmp", tmpdir);
    close(open(fresh, O_WRONLY | O_CREAT, 0600));
    /* The daemon's worker output directories: a dead one (everything old)
     * goes, a live one (a fresh file inside an old directory) stays. */
    char dead[1024], dead_file[1100], live[1024], live_file[1100];
    snprintf(dead, sizeof dead, "%s/job-dead", tmpdir);
    snprintf(dead_file, sizeof dead_file, "%s/car.fmd", dead);
    snprintf(live, sizeof live, "%s/job-live", tmpdir);
    snprintf(live_file, sizeof live_file, "%s/car.fmd", live);
    assert_int_equal(mkdir(dead, 0700), 0);
    assert_int_equal(mkdir(live, 0700), 0);
    close(open(dead_file, O_WRONLY | O_CREAT, 0600));
    close(open(live_file, O_WRONLY | O_CREAT, 0600));
    set_mtime(dead_file, time(NULL) - 7200);
    set_mtime(dead, time(NULL) - 7200);
    set_mtime(live, time(NULL) - 7200);
    mfs_cache *c = open_cache(f, 0, 0);
    assert_int_equal(stats(c).tmp_cleaned, 2);
    assert_false(exists(old));
    assert_true(exists(fresh));
    assert_false(exists(dead));
    assert_true(exists(live_file));
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 0);
    assert_int_equal(stats(c).corrupt_discarded, 0);
    mfs_cache_close(c);
}

/* ---- trust in the directory (docs/security.md, S3) -------------------- */

/* mfs_cache_open's failure text, or "" if it opened. */
static void open_error(const fx *f, char *msg, size_t n)
{
    mfs_cache_config cfg = {.dir = f->dir};
    mfs_cache *c = NULL;
    mfs_err err = {0};
    msg[0] = '\0';
    if (mfs_cache_open(&cfg, &c, &err) < 0)
        snprintf(msg, n, "%s", err.msg);
    else
        mfs_cache_close(c);
}

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void assert_text(const char *path, const char *text)
{
    char buf[256] = {0};
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_true(read(fd, buf, sizeof buf - 1) >= 0);
    close(fd);
    assert_string_equal(buf, text);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

/* A removed cache directory is made again on the next store, unless the
 * handle was told to stop reviving (a meshfs-convert run being stopped
 * removes its private cache while its threads still store into it). */
static void test_stop_reviving(void **state)
{
    fx *f = *state;
    for (int stop = 0; stop < 2; stop++) {
        mfs_cache_key k = key_of(stop ? "after" : "before");
        mfs_cache *c = open_cache(f, 0, 0);
        if (stop)
            mfs_cache_stop_reviving(c);
        assert_int_equal(nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
        struct stat st;
        assert_int_equal(lstat(f->dir, &st), -1);
        mfs_err err = {0};
        int rc = mfs_cache_store(c, &k, "hello", 5, NULL, &err);
        assert_int_equal(rc, stop ? -1 : 0);
        assert_int_equal(lstat(f->dir, &st), stop ? -1 : 0);
        mfs_cache_close(c);
    }
}

static void test_trust_created_private(void **state)
{
    fx *f = *state;
    mode_t old = umask(0);
    mfs_cache *c = open_cache(f, 0, 0);
    umask(old);
    mfs_cache_close(c);
    struct stat st;
    assert_int_equal(lstat(f->dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(st.st_uid, geteuid());
}

static void test_trust_symlink_refused(void **state)
{
    fx *f = *state;
    char real[400], msg[MFS_ERR_MAX], want[600];
    snprintf(real, sizeof real, "%s/elsewhere", f->base);
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, f->dir), 0);
    open_error(f, msg, sizeof msg);
    snprintf(want, sizeof want, "cache: %s is a symbolic link; refusing to use it", f->dir);
    assert_non_null(strstr(msg, want));
    assert_int_equal(count_files(real), 0); /* nothing was created through it */
}

static void test_trust_group_writable_refused(void **state)
{
    fx *f = *state;
    char msg[MFS_ERR_MAX], want[600];
    assert_int_equal(mkdir(f->dir, 0700), 0);
    assert_int_equal(chmod(f->dir, 0770), 0);
    open_error(f, msg, sizeof msg);
    snprintf(want, sizeof want,
             "cache: %s is writable by its group or others (mode 0770; chmod go-w it); "
             "refusing to use it", f->dir);
    assert_string_equal(msg, want);
    assert_int_equal(chmod(f->dir, 0702), 0); /* other-writable alone too */
    open_error(f, msg, sizeof msg);
    assert_non_null(strstr(msg, "writable by its group or others (mode 0702"));
    assert_int_equal(chmod(f->dir, 0755), 0); /* readable is fine */
    open_error(f, msg, sizeof msg);
    assert_string_equal(msg, "");
}

static void test_trust_other_owner_refused(void **state)
{
    fx *f = *state;
    if (geteuid() != 0)
        skip(); /* only root can give a directory away */
    char msg[MFS_ERR_MAX], want[600];
    assert_int_equal(mkdir(f->dir, 0700), 0);
    assert_int_equal(chown(f->dir, 54321, 54321), 0);
    open_error(f, msg, sizeof msg);
    snprintf(want, sizeof want,
             "cache: %s is owned by uid 54321, not by uid 0 who runs meshfs; refusing to use it",
             f->dir);
    assert_string_equal(msg, want);
    /* the same for a subdirectory planted by that user */
    assert_int_equal(chown(f->dir, 0, 0), 0);
    mfs_cache_close(open_cache(f, 0, 0));
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s/tmp", f->dir);
    assert_int_equal(chown(tmp, 54321, 54321), 0);
    open_error(f, msg, sizeof msg);
    snprintf(want, sizeof want, "cache: %s is owned by uid 54321", tmp);
    assert_non_null(strstr(msg, want));
}

/* tmp/ itself replaced by a link to a victim folder: refused, and nothing
 * in the victim is touched although it is all "stale". */
static void test_trust_tmp_symlink_refused(void **state)
{
    fx *f = *state;
    mfs_cache_close(open_cache(f, 0, 0));
    char tmp[400], victim[400], precious[500], msg[MFS_ERR_MAX], want[600];
    snprintf(tmp, sizeof tmp, "%s/tmp", f->dir);
    snprintf(victim, sizeof victim, "%s/victim", f->base);
    snprintf(precious, sizeof precious, "%s/precious.tmp", victim);
    assert_int_equal(mkdir(victim, 0700), 0);
    write_text(precious, "keep me");
    set_mtime(precious, time(NULL) - 7200);
    assert_int_equal(rmdir(tmp), 0);
    assert_int_equal(symlink(victim, tmp), 0);
    open_error(f, msg, sizeof msg);
    snprintf(want, sizeof want, "cache: %s is a symbolic link; refusing to use it", tmp);
    assert_non_null(strstr(msg, want));
    assert_text(precious, "keep me");
}

/* The stale-temporary cleanup removes links planted in tmp/ as links: the
 * files and folders they point at survive, however old. */
static void test_tmp_cleanup_never_follows(void **state)
{
    fx *f = *state;
    mfs_cache_close(open_cache(f, 0, 0));
    char victim[400], precious[500], inner[500], inner_file[600];
    snprintf(victim, sizeof victim, "%s/victim", f->base);
    snprintf(precious, sizeof precious, "%s/precious", victim);
    snprintf(inner, sizeof inner, "%s/sub", victim);
    snprintf(inner_file, sizeof inner_file, "%s/file", inner);
    assert_int_equal(mkdir(victim, 0700), 0);
    assert_int_equal(mkdir(inner, 0700), 0);
    write_text(precious, "keep me");
    write_text(inner_file, "keep me too");
    set_mtime(precious, time(NULL) - 7200);
    set_mtime(inner_file, time(NULL) - 7200);
    set_mtime(inner, time(NULL) - 7200);
    set_mtime(victim, time(NULL) - 7200);
    /* links at the top of tmp/ and inside a stale job directory */
    const char *names[] = {"tmp/evil-dir", "tmp/evil-file", "tmp/job-old/link", NULL};
    const char *targets[] = {victim, precious, victim};
    char job[400];
    snprintf(job, sizeof job, "%s/tmp/job-old", f->dir);
    assert_int_equal(mkdir(job, 0700), 0);
    struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    for (int i = 0; names[i]; i++) {
        char link[500];
        snprintf(link, sizeof link, "%s/%s", f->dir, names[i]);
        assert_int_equal(symlink(targets[i], link), 0);
        assert_int_equal(utimensat(AT_FDCWD, link, old, AT_SYMLINK_NOFOLLOW), 0);
    }
    set_mtime(job, time(NULL) - 7200);
    mfs_cache *c = open_cache(f, 0, 0);
    assert_int_equal(stats(c).tmp_cleaned, 3); /* two links and the job folder */
    mfs_cache_close(c);
    assert_text(precious, "keep me");
    assert_text(inner_file, "keep me too");
    assert_true(exists(inner));
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s/tmp", f->dir);
    assert_int_equal(count_files(tmp), 0);
}

/* ---- sharing ---------------------------------------------------------- */

enum { SHARED_N = 200000, ROUNDS = 40 };

/* Child process body: 0 on success. */
static int child_store(const fx *f, const mfs_cache_key *k, const uint8_t *data)
{
    mfs_cache_config cfg = {.dir = f->dir};
    mfs_cache *c;
    if (mfs_cache_open(&cfg, &c, NULL) < 0)
        return 1;
    for (int i = 0; i < ROUNDS; i++)
        if (mfs_cache_store(c, k, data, SHARED_N, NULL, NULL) < 0)
            return 2;
    mfs_cache_close(c);
    return 0;
}

static int child_read(const fx *f, const mfs_cache_key *k, const uint8_t *data)
{
    mfs_cache_config cfg = {.dir = f->dir};
    mfs_cache *c;
    if (mfs_cache_open(&cfg, &c, NULL) < 0)
        return 1;
    uint8_t *buf = malloc(SHARED_N);
    for (int i = 0; i < ROUNDS * 4; i++) {
        mfs_cache_hit h;
        int r = mfs_cache_lookup(c, k, &h, NULL);
        if (r < 0)
            return 3;
        if (r == 1 && (h.length != SHARED_N ||
                       pread(h.fd, buf, SHARED_N, (off_t)h.offset) != SHARED_N ||
                       memcmp(buf, data, SHARED_N) != 0))
            return 4;
        mfs_cache_hit_release(&h);
    }
    mfs_cache_stats s;
    mfs_cache_get_stats(c, &s);
    free(buf);
    mfs_cache_close(c);
    return s.corrupt_discarded ? 5 : 0;
}

static void test_two_handles_same_key(void **state)
{
    fx *f = *state;
    uint8_t *data = malloc(SHARED_N);
    fill(data, SHARED_N, 99);
    mfs_cache_key k = key_of("shared");
    mfs_cache *c = open_cache(f, 0, 0); /* creates the directory first */
    mfs_cache_close(c);
    pid_t pids[3];
    fflush(NULL);
    for (int i = 0; i < 3; i++) {
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(i < 2 ? child_store(f, &k, data) : child_read(f, &k, data));
    }
    for (int i = 0; i < 3; i++) {
        int status;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    c = open_cache(f, 0, 0);
    mfs_cache_hit h;
    assert_int_equal(mfs_cache_lookup(c, &k, &h, NULL), 1);
    assert_payload(&h, data, SHARED_N);
    mfs_cache_hit_release(&h);
    assert_int_equal(stats(c).corrupt_discarded, 0);
    mfs_cache_close(c);
    char hex[33], dir[512], tmpdir[512];
    mfs_cache_key_hex(&k, hex);
    snprintf(dir, sizeof dir, "%s/v2/%.2s", f->dir, hex);
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", f->dir);
    assert_int_equal(count_files(dir), 1);
    assert_int_equal(count_files(tmpdir), 0);
    free(data);
}

typedef struct thr_arg {
    mfs_cache *c;
    int id;
    int bad;
} thr_arg;

static void *thread_body(void *p)
{
    thr_arg *a = p;
    uint8_t data[3000], buf[3000];
    for (int i = 0; i < 50; i++) {
        char name[32];
        int which = (i % 2) ? a->id * 100 + i : i; /* shared and own keys */
        snprintf(name, sizeof name, "t%d", which);
        mfs_cache_key k = key_of(name);
        fill(data, sizeof data, (uint32_t)which);
        if (mfs_cache_store(a->c, &k, data, sizeof data, NULL, NULL) < 0)
            a->bad++;
        mfs_cache_hit h;
        if (mfs_cache_lookup(a->c, &k, &h, NULL) == 1) {
            if (pread(h.fd, buf, sizeof buf, (off_t)h.offset) != (ssize_t)sizeof buf ||
                memcmp(buf, data, sizeof buf) != 0)
                a->bad++;
            mfs_cache_hit_release(&h);
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    fx *f = *state;
    /* A cap of ~20 entries keeps eviction running under the threads. */
    mfs_cache *c = open_cache(f, 20 * 3056, 0);
    pthread_t t[4];
    thr_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (thr_arg){c, i + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, thread_body, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].bad, 0);
    }
    mfs_cache_stats s = stats(c);
    assert_int_equal(s.stores, 200);
    assert_int_equal(s.corrupt_discarded, 0);
    assert_true(s.evictions > 0);
    assert_true(mfs_cache_evict(c, NULL) >= 0);
    assert_true(stats(c).size <= 20 * 3056);
    mfs_cache_close(c);
}

static void test_default_dir(void **state)
{
    (void)state;
    char buf[512];
    const char *oh = getenv("HOME"), *ox = getenv("XDG_CACHE_HOME");
    char *save_h = oh ? strdup(oh) : NULL, *save_x = ox ? strdup(ox) : NULL;
    setenv("HOME", "/home/u", 1);
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    if (geteuid() == 0) {
        /* root never adopts a directory from its (maybe a user's) HOME */
        assert_int_equal(mfs_cache_default_dir(buf, sizeof buf, NULL), 0);
        assert_string_equal(buf, "/var/cache/meshfs");
        unsetenv("HOME");
        unsetenv("XDG_CACHE_HOME");
        assert_int_equal(mfs_cache_default_dir(buf, sizeof buf, NULL), 0);
        assert_string_equal(buf, "/var/cache/meshfs");
        goto restore;
    }
    assert_int_equal(mfs_cache_default_dir(buf, sizeof buf, NULL), 0);
    assert_string_equal(buf, "/x/cache/meshfs");
    setenv("XDG_CACHE_HOME", "relative", 1); /* ignored per the XDG spec */
    assert_int_equal(mfs_cache_default_dir(buf, sizeof buf, NULL), 0);
    assert_string_equal(buf, "/home/u/.cache/meshfs");
    unsetenv("XDG_CACHE_HOME");
    assert_int_equal(mfs_cache_default_dir(buf, sizeof buf, NULL), 0);
    assert_string_equal(buf, "/home/u/.cache/meshfs");
    unsetenv("HOME");
    assert_int_equal(mfs_cache_default_dir(buf, sizeof buf, NULL), -1);
restore:
    if (save_h)
        setenv("HOME", save_h, 1);
    if (save_x)
        setenv("XDG_CACHE_HOME", save_x, 1);
    free(save_h);
    free(save_x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_encoding),
        cmocka_unit_test(test_key_separation),
        cmocka_unit_test(test_key_texture_inputs),
        cmocka_unit_test(test_default_dir),
        cmocka_unit_test_setup_teardown(test_store_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peek, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_negative_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_layout_never_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_racy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manifest_absent_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stem_search, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manifest_escape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_evict_lru, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_makes_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_evict_fresh_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_and_tmp_cleanup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_reviving, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_created_private, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_symlink_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_group_writable_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_other_owner_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_tmp_symlink_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmp_cleanup_never_follows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_handles_same_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

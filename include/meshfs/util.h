/* The utility layer's face (src/util/): small helpers every other folder
 * may use and none of which knows the others' business.  One header, by
 * parts: little-endian bytes, timespec arithmetic, number formatting, JSON
 * strings, a latch, the byte sink the writers write to, the daemon's log,
 * option values, store errors, the test hold, and -V/--version.
 *
 * The error type and rule stay in meshfs/err.h, which this includes: every
 * public header declares its functions with mfs_err and needs that alone,
 * not this folder's helpers (docs/architecture.md, "Errors"). */
#ifndef MESHFS_UTIL_H
#define MESHFS_UTIL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "meshfs/err.h"

/* ---- bytes ---- */

/* Little-endian byte helpers: the only code writers and readers share.
 *
 * Everything on disk is explicitly little-endian; nothing is written by
 * dumping a struct, so the bytes do not depend on the host or compiler. */

/* On little-endian hosts the byte order already matches, and a memcpy
 * compiles to one store where the compiler does not merge four byte stores
 * (about 30% fewer instructions in the .gmf writer). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MFS_HOST_LE 1
#else
#define MFS_HOST_LE 0
#endif

static inline void mfs_st_u16(uint8_t *p, uint16_t v)
{
#if MFS_HOST_LE
    memcpy(p, &v, 2);
#else
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
#endif
}

static inline void mfs_st_u32(uint8_t *p, uint32_t v)
{
#if MFS_HOST_LE
    memcpy(p, &v, 4);
#else
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
#endif
}

static inline void mfs_st_f32(uint8_t *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    mfs_st_u32(p, v);
}

static inline uint16_t mfs_ld_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t mfs_ld_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline int32_t mfs_ld_i32(const uint8_t *p)
{
    uint32_t v = mfs_ld_u32(p);
    int32_t r;
    memcpy(&r, &v, 4);
    return r;
}

static inline float mfs_ld_f32(const uint8_t *p)
{
    uint32_t v = mfs_ld_u32(p);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* ---- timespec ---- */

/* Comparing file times (struct timespec), and the monotonic clock in
 * seconds for ages and deadlines: the project's one copy of each. */

/* 1 if a is later than b. */
static inline int mfs_ts_later(struct timespec a, struct timespec b)
{
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

/* 1 if a and b are the same time. */
static inline int mfs_ts_equal(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* The monotonic clock, in seconds. */
static inline double mfs_mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- numfmt ---- */

/* Shortest round-trip text for float32 values (the .dem writer's numbers).
 *
 * mfs_fmt_f32 writes the shortest decimal that strtof() reads back to the
 * same float, in Python repr style so the output matches the reference
 * Blender exporter's look: "1.0", "-0.5", "0.125", "1e-05", "1.5e+20",
 * "-0.0", "nan", "inf".  Fixed notation for 1e-4 <= |x| < 1e16, exponent
 * notation otherwise.  Returns the length; buf needs MFS_F32_BUF bytes
 * (those after the NUL are used as scratch); the result is NUL-terminated. */

#define MFS_F32_BUF 32

size_t mfs_fmt_f32(float x, char *buf);

/* ---- fullio: whole buffers through pread(2) and pwrite(2) ---- */

/* The narrow exception to the one error rule (docs/architecture.md): thin
 * wrappers of a system call answer as the call does, -1 and errno.
 * 0 once all n bytes are written, or -1 (EINTR retried). */
int mfs_pwrite_full(int fd, const void *p, size_t n, uint64_t off);
/* The bytes read (short only at end of file), or -1 (EINTR retried). */
int64_t mfs_pread_full(int fd, void *p, size_t n, uint64_t off);

/* ---- counters: named counts as text ---- */

typedef struct mfs_counter {
    const char *name;
    uint64_t value;
} mfs_counter;

/* " name=value" for each of the k counters, into buf (cut to n, always
 * terminated when n > 0); the length the whole text has, as snprintf
 * counts it. */
int mfs_counters_text(char *buf, size_t n, const mfs_counter *c, size_t k);

/* ---- json ---- */

/* Writing JSON strings (meshfs-inspect --json, meshfs-convert --report). */

/* s as a JSON string, quotes included; NULL as null.  Control characters
 * are escaped and invalid UTF-8 bytes (assimp quotes raw file bytes in its
 * messages) become U+FFFD, so every line stays valid JSON. */
void mfs_json_str(FILE *f, const char *s);

/* ---- latch ---- */

/* A condition said once when it begins and once when it ends.
 *
 * For a state that many threads run into at once and for a long time (the
 * cache's disk full: every conversion meets it), so the log gets one line
 * when it starts and one when it is over, not one per event.  Lock-free:
 * of the threads that raise a lowered latch (or lower a raised one) at the
 * same moment exactly one is told it was first. */

typedef struct mfs_latch {
    atomic_int on; /* zero-initialised: lowered */
} mfs_latch;

/* Raises it: 1 if it was lowered (the caller says the condition), else 0. */
int mfs_latch_raise(mfs_latch *l);

/* Lowers it: 1 if it was raised (the caller says it is over), else 0. */
int mfs_latch_lower(mfs_latch *l);

/* ---- sink ---- */

/* Output sinks: where writers put their bytes.
 *
 * A writer never knows whether it is filling memory (tests, inspect round
 * trips), a file (meshfs-convert, the cache) or a gzip stream (.fmd).  Errors
 * are sticky: after the first failure every put is a no-op and
 * mfs_sink_finish() reports it, so writers need not check each call.
 *
 * A sink may carry a byte limit (the worker's output cap); exceeding it is an
 * error like any other (EFBIG). */

typedef struct mfs_sink mfs_sink;

/* Receives a full buffer; returns 0 or a positive errno. */
typedef int (*mfs_sink_flush_fn)(mfs_sink *s, const uint8_t *p, size_t n);

struct mfs_sink {
    uint8_t *buf;
    size_t len, cap;
    mfs_sink_flush_fn flush; /* NULL: memory sink, buf grows */
    void *ctx;
    void (*release)(mfs_sink *s); /* frees ctx, if the kind has one */
    int err;          /* first errno seen, 0 if none */
    uint64_t total;   /* bytes accepted so far */
    uint64_t limit;   /* 0 = unlimited */
};

/* Growable in-memory sink.  Take the bytes with mfs_sink_take(). */
void mfs_sink_init_mem(mfs_sink *s);

/* Buffered sink writing to fd (which it does not close). */
int mfs_sink_init_fd(mfs_sink *s, int fd);

/* One gzip (RFC 1952) member into dst with a fixed header: mtime 0, no
 * name, OS byte 255, so output depends only on the input bytes and level
 * (libdeflate's, 0-12).  The payload is collected and compressed whole by
 * libdeflate at mfs_sink_finish(); one that reaches whole_max bytes goes to
 * zlib (level capped at 9) and streams from there, so the sink holds at most
 * whole_max bytes of payload plus libdeflate's output room (about the
 * payload's size).  A result that would pass dst's byte limit leaves EFBIG
 * on dst.  -1: out of memory, or a level outside 0-12. */
#define MFS_GZIP_WHOLE_MAX ((size_t)256 << 20)
int mfs_sink_init_gzip(mfs_sink *s, mfs_sink *dst, int level);
int mfs_sink_init_gzip_bounded(mfs_sink *s, mfs_sink *dst, int level, size_t whole_max);

void mfs_sink_put_slow(mfs_sink *s, const void *p, size_t n);

static inline void mfs_put(mfs_sink *s, const void *p, size_t n)
{
    if (s->len + n <= s->cap && !s->err &&
        (!s->limit || s->total + n <= s->limit)) {
        memcpy(s->buf + s->len, p, n);
        s->len += n;
        s->total += n;
        return;
    }
    mfs_sink_put_slow(s, p, n);
}

static inline void mfs_put_u8(mfs_sink *s, uint8_t v) { mfs_put(s, &v, 1); }

static inline void mfs_put_u16(mfs_sink *s, uint16_t v)
{
    uint8_t b[2];
    mfs_st_u16(b, v);
    mfs_put(s, b, 2);
}

static inline void mfs_put_u32(mfs_sink *s, uint32_t v)
{
    uint8_t b[4];
    mfs_st_u32(b, v);
    mfs_put(s, b, 4);
}

static inline void mfs_put_i32(mfs_sink *s, int32_t v) { mfs_put_u32(s, (uint32_t)v); }

static inline void mfs_put_f32(mfs_sink *s, float f)
{
    uint8_t b[4];
    mfs_st_f32(b, f);
    mfs_put(s, b, 4);
}

static inline void mfs_put_str(mfs_sink *s, const char *str) { mfs_put(s, str, strlen(str)); }

void mfs_putf(mfs_sink *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Flushes what is buffered (and, for gzip, ends the stream).  Returns 0 or
 * the sticky errno.  Memory sinks keep their bytes. */
int mfs_sink_finish(mfs_sink *s);

/* Memory sink: hands over the buffer (caller frees) and its length. */
uint8_t *mfs_sink_take(mfs_sink *s, size_t *len);

/* Releases buffers of any sink kind (after finish, or on an error path). */
void mfs_sink_free(mfs_sink *s);

/* ---- log ---- */

/* The daemon's log: one line per event, with a level, to stderr while the
 * daemon runs in the foreground (-f, -d) and to syslog (the journal, on a
 * systemd machine) once it has detached from the terminal.
 *
 * Levels, most important first (-o log_level=, default warning):
 *   error    meshfs itself cannot do its job (the cache cannot be written);
 *   warning  a model or a view failed, or something the user should fix
 *            (a name conflict, a cache too small);
 *   info     what the mount does: each conversion, the read path in use;
 *   debug    why it did it that way (the importer's fallback reason).
 * A line is written when its level is at or above the one set.
 *
 * On stderr a line reads "meshfs: LEVEL: text"; in syslog the level is the
 * priority (LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG) and the text stands
 * alone after "meshfs[PID]: ".  Lines about a model name it relative to SRC:
 * the mount's callers go through mfs_errtext_log (src/names/errtext.c), which
 * rewrites absolute, cache and worker paths first (docs/security.md).
 *
 * The level and destination are set once at start-up, before any thread;
 * writing is safe from any thread (one write per line).  Writing never
 * blocks on syslog: a line that finds the syslog socket full is dropped and
 * counted, and "N log lines dropped" precedes the next one sent (log.c). */

typedef enum mfs_log_level {
    MFS_LOG_ERROR,
    MFS_LOG_WARNING,
    MFS_LOG_INFO,
    MFS_LOG_DEBUG,
} mfs_log_level;

#define MFS_LOG_DEFAULT MFS_LOG_WARNING

/* "error", "warning", "info" or "debug".  Fails with a message naming the
 * option as the user wrote it (`name`, e.g. "-o log_level") and the value. */
int mfs_log_level_parse(const char *name, const char *s, mfs_log_level *out, mfs_err *err);
const char *mfs_log_level_name(mfs_log_level level);

/* The lines written from now on: those at `level` or above.  `ident`
 * starts every line ("meshfs"); it is kept, not copied. */
void mfs_log_setup(const char *ident, mfs_log_level level);
mfs_log_level mfs_log_get_level(void);

/* From now on to syslog (facility daemon), not stderr: called once the
 * daemon has detached, when stderr is /dev/null.  To the log file instead
 * if one was opened. */
void mfs_log_to_syslog(void);

/* -o log_file=PATH: opens PATH for appending (created 0640), before the
 * daemon detaches; once it has (mfs_log_to_syslog), lines go there as
 * "YYYY-mm-dd HH:MM:SS meshfs[PID]: level: text" instead of to syslog.
 * Fails naming the option and the path. */
int mfs_log_file_open(const char *path, mfs_err *err);

/* Whether a syslog socket (/dev/log) accepts a connection now: without
 * one and without a log file, a detached daemon's lines are lost. */
int mfs_log_syslog_reachable(void);

/* Whether a line at `level` would be written: lets a caller skip building
 * an expensive one. */
int mfs_log_enabled(mfs_log_level level);

void mfs_log(mfs_log_level level, const char *fmt, ...) MFS_PRINTF(2, 3);
void mfs_vlog(mfs_log_level level, const char *fmt, va_list ap) MFS_PRINTF(2, 0);

/* Another library's own message (libfuse's, prefixed "fuse: ", ending in a
 * newline), passed on unfiltered (that library decides what it says, and
 * -d is how its debug output is asked for) and without meshfs's prefix. */
void mfs_vlog_foreign(mfs_log_level level, const char *fmt, va_list ap) MFS_PRINTF(2, 0);

/* ---- optvalue ---- */

/* Values of command-line and mount options, checked whole.
 *
 * atoi, strtod and libfuse's "%u" accept far too much: "-5" becomes
 * 4294967291 jobs, "inf" and "nan" become sizes (undefined behaviour when
 * converted to an integer), "12abc" becomes 12.  Each parser here accepts
 * one plain spelling and otherwise fails with a message naming the option
 * and the value ("-o cache_size=inf: not a size ..."), which both meshfs
 * and meshfs-convert print before exiting with status 2.
 *
 * `name` is the option as the user wrote it: "-o cache_size", "--memory". */

/* A byte size: decimal digits with an optional fraction, then an optional
 * K, M, G or T (powers of 1024, either case), optionally followed by B or
 * iB.  No sign, no exponent, no spaces.  Within [min, max]. */
int mfs_optv_size(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out,
                  mfs_err *err);

/* Seconds: decimal digits with an optional fraction; more than 0, at most
 * max. */
int mfs_optv_seconds(const char *name, const char *s, double max, double *out, mfs_err *err);

/* A count: decimal digits only, within [min, max]. */
int mfs_optv_count(const char *name, const char *s, unsigned min, unsigned max, unsigned *out,
                   mfs_err *err);

/* Text for a size in messages: "512M", "1.5G", "300" (bytes). */
void mfs_optv_size_text(uint64_t v, char *buf, unsigned n);

/* ---- storerr ---- */

/* The cache's file system refusing to store: told apart from a model's
 * failure, and said as the cache's.
 *
 * A worker writes its outputs into the cache's tmp/, and the host copies
 * them into entries there, so a full disk (ENOSPC), a full quota (EDQUOT),
 * a file system remounted read-only (EROFS) or failing (EIO) shows as a
 * failure of every view of every model.  Such a failure comes up as text
 * (the worker's report, an mfs_err); it ends with strerror() of its errno,
 * which is what is recognised here. */

/* ENOSPC, EDQUOT, EROFS or EIO when msg ends with its strerror() text
 * (msg may be NULL), else 0. */
int mfs_storerr_of(const char *msg);

/* The reason a view fails for it, as users read it (user.meshfs.error):
 * "cache: No space left on device while storing views; ...".  No path. */
void mfs_storerr_reason(int errnum, char *out, size_t n);

/* Is msg such a reason (mfs_storerr_reason)? */
int mfs_storerr_is_reason(const char *msg);

/* What brings storing back, for errnum: "space is freed", ... */
const char *mfs_storerr_remedy(int errnum);

/* ---- test_hold ---- */

/* Test builds only (-Dtest_hooks=true): a step that waits for the test.
 *
 * With VAR=SUBSTR:FILE[,SUBSTR:FILE...] in the environment, a call for a
 * path containing a SUBSTR creates FILE.held and waits until FILE exists
 * (at most 120 s).  A test then orders events by files, never by sleeps:
 * it waits for FILE.held, does what must happen meanwhile, and creates
 * FILE.  In other builds, and with VAR unset, it returns at once. */

void mfs_test_hold_until(const char *var, const char *path);

/* ---- version ---- */

/* What -V/--version prints, the same lines for every tool (README,
 * "Versions"): meshfs's version, the cache format and output versions, and
 * the libraries a tool's bytes depend on.
 *
 * A conversion's bytes come from meshfs-worker, so a tool that converts
 * (meshfs, meshfs-convert) also names the worker's libraries, as meson
 * found them when building: assimp, meshoptimizer, and the native parsers
 * cgltf and fast_obj (or "not built").  zlib and xxhash are the ones loaded
 * now (their run-time version); libfuse is the daemon's to print. */

enum { MFS_VERSION_WORKER_LIBS = 1 };

/* "TOOL VERSION" and the lines after it; `flags`: MFS_VERSION_WORKER_LIBS. */
void mfs_version_print(FILE *f, const char *tool, unsigned flags);

#endif

/* meshfs SRC MNT: mount a folder of models with converted views beside them.
 *
 * Options follow FUSE conventions: generic ones (-f, -d, -s, -o allow_other,
 * ...) pass through to libfuse, every meshfs option is an -o name=value so
 * the mount works from fstab. */
#define FUSE_USE_VERSION 314
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../coherence/coherence.h"
#include "../mount/mount.h"
#include "meshfs/convert.h"
#include "meshfs/formats.h"
#include "meshfs/remote.h"
#include "meshfs/util.h"
#include "dirreply.h"
#include "files.h"
#include "listing.h"
#include "lowlevel.h"
#include "optsuggest.h"
#include "passthrough.h"
#include "unmount_guard.h"

typedef struct cli {
    char *src;
    char *cache_dir;
    char *cache_size;
    char *formats;
    char *convert_memory;
    char *vrt_layout;
    char *importer;
    char *lgepkg_name, *lgepkg_version;
    char *worker_user;
    char *log_level;
    char *log_file;         /* -o log_file=PATH: the detached daemon's log */
    char *convert_timeout, *convert_jobs; /* checked whole (util.h, "optvalue") */
    char *prefetch;         /* likewise */
    char *memo_size;
    char *entry_timeout, *attr_timeout, *negative_timeout; /* the kernel's cache times */
    double entry_s, attr_s, negative_s;
    char *remote, *remote_timeout_ms, *remote_data_timeout_s, *remote_token_file, *remote_owed_max;
    int remote_read_only;
    char *mnt;              /* the second non-option argument */
    int hide_failed;
    int passthrough;        /* the bare option: on */
    char *passthrough_mode; /* -o passthrough=auto|on|off */
    int hide_sources, pretrans, fmi_textures, reverse_winding, source_frame;
    int fmd_raw, lowercase_names;
    int no_auto_unmount;
    int stack;              /* -o stack: mount over a live mount of SRC */
    int show_help, show_version;
    int nonopts;
} cli;


#define OPT(t, p) {t, offsetof(cli, p), 1}
static const struct fuse_opt cli_spec[] = {
    OPT("cache_dir=%s", cache_dir),
    OPT("cache_size=%s", cache_size),
    OPT("formats=%s", formats),
    OPT("convert_timeout=%s", convert_timeout),
    OPT("convert_memory=%s", convert_memory),
    OPT("convert_jobs=%s", convert_jobs),
    OPT("prefetch=%s", prefetch),
    OPT("memo_size=%s", memo_size),
    OPT("entry_timeout=%s", entry_timeout),
    OPT("attr_timeout=%s", attr_timeout),
    OPT("negative_timeout=%s", negative_timeout),
    OPT("remote=%s", remote),
    OPT("remote_timeout_ms=%s", remote_timeout_ms),
    OPT("remote_data_timeout_s=%s", remote_data_timeout_s),
    OPT("remote_read_only", remote_read_only),
    OPT("remote_token_file=%s", remote_token_file),
    OPT("remote_owed_max=%s", remote_owed_max),
    OPT("hide_sources", hide_sources),
    OPT("hide_failed", hide_failed),
    OPT("passthrough", passthrough),
    OPT("passthrough=%s", passthrough_mode),
    OPT("pretrans", pretrans),
    OPT("fmi_textures", fmi_textures),
    OPT("reverse_winding", reverse_winding),
    OPT("source_frame", source_frame),
    OPT("vrt_layout=%s", vrt_layout),
    OPT("importer=%s", importer),
    OPT("fmd_raw", fmd_raw),
    OPT("lowercase_names", lowercase_names),
    OPT("lgepkg_name=%s", lgepkg_name),
    OPT("lgepkg_version=%s", lgepkg_version),
    OPT("worker_user=%s", worker_user),
    OPT("log_level=%s", log_level),
    OPT("log_file=%s", log_file),
    OPT("no_auto_unmount", no_auto_unmount),
    OPT("stack", stack),
    /* the default, done by meshfs (unmount_guard.h), not by libfuse */
    FUSE_OPT_KEY("auto_unmount", FUSE_OPT_KEY_DISCARD),
    OPT("-h", show_help),
    OPT("--help", show_help),
    OPT("-V", show_version),
    OPT("--version", show_version),
    FUSE_OPT_END,
};

/* The first non-option argument is SRC; the rest (MNT) goes to libfuse. */
static int cli_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
    cli *c = data;
    if (key == FUSE_OPT_KEY_NONOPT && c->nonopts++ == 0) {
        c->src = strdup(arg);
        return 0;
    }
    if (key == FUSE_OPT_KEY_NONOPT && c->nonopts == 2)
        c->mnt = strdup(arg); /* checked against SRC; libfuse still takes it */
    return 1;
}

/* The bare name, as the other tools print theirs: argv[0] is a full path
 * when mount(8) or a unit runs meshfs. */
static void usage(void)
{
    printf("usage: meshfs [options] SRC MNT\n\n"
           "Mounts SRC read-only at MNT; every model shows up beside its converted views\n"
           "(.fmd .fmi .gmf .dem .vrt .tri .sph .tex), converted on first access and\n"
           "cached, and every folder with models shows game_resources.lgepkg.\n\n"
           "meshfs options:\n"
           "    -o formats=LIST          views to show, ':' or '+' between them (a comma\n"
           "                             ends the option); default all:\n"
           "                             fmd:fmi:gmf:dem:vrt:tri:sph:tex:lgepkg\n"
           "    -o hide_sources          show only views and non-model files\n"
           "    -o hide_failed           a view known to have failed is not shown (its\n"
           "                             reason: user.meshfs.error of the model file)\n"
           "    -o passthrough=MODE      auto (default): the kernel reads open views from\n"
           "                             the cache itself where it can (libfuse 3.17,\n"
           "                             Linux 6.9, CAP_SYS_ADMIN), else the daemon does;\n"
           "                             on (or bare -o passthrough): the same, warning\n"
           "                             when it cannot; off: always the daemon\n"
           "    -o fmd_raw               fmd: FMC's raw layout, node matrices not applied\n"
           "                             (default: placed geometry, as FGE draws it;\n"
           "                             -o pretrans is accepted and changes nothing)\n"
           "    -o vrt_layout=LAYOUT     vrt: skinned (64-byte vertex, default) or plain\n"
           "    -o importer=NAME         auto (native glTF/OBJ parsers, assimp for the\n"
           "                             rest; default) or assimp (assimp for all)\n"
           "    -o lowercase_names       show every name in lowercase (FGE opens lowercase)\n"
           "    -o lgepkg_name=NAME      game_resources.lgepkg package name (default\n"
           "                             game_resources, at most 19 bytes)\n"
           "    -o lgepkg_version=TEXT   its version string (default 1.0, at most 19 bytes)\n"
           "    -o fmi_textures          fmi: texture names instead of UNKNOWN\n"
           "    -o reverse_winding       tri: reverse every triangle\n"
           "    -o source_frame          keep the importer's raw coordinates\n"
           "    -o cache_dir=DIR         default ${XDG_CACHE_HOME:-$HOME/.cache}/meshfs,\n"
           "                             /var/cache/meshfs for root\n"
           "    -o cache_size=SIZE       cap, e.g. 512M, 2G (default: the cache's own, set\n"
           "                             by meshfs-cache max-size, else 2G)\n"
           "    -o convert_timeout=SECS  per conversion, then SIGKILL (default 60)\n"
           "    -o convert_memory=SIZE   address-space cap per conversion (default 4G)\n"
           "    -o convert_jobs=N        conversions at once, 1 to 64 (default: number\n"
           "                             of CPUs, at most 64)\n"
           "    -o prefetch=N            a stat of a cold view right after its folder was\n"
           "                             listed (ls -l, find -ls) also converts the\n"
           "                             folder's other cold models in the background,\n"
           "                             convert_jobs at a time; at most N wait (default\n"
           "                             256, 0 = off, at most 65536)\n"
           "    -o memo_size=N           models whose records the daemon keeps in memory,\n"
           "                             least recently used out first (default 4096:\n"
           "                             about 20 MiB, 40 with real models; docs/scale.md)\n"
           "    -o entry_timeout=T       seconds the kernel keeps a name (default 1)\n"
           "    -o attr_timeout=T        ... its attributes (default 1)\n"
           "    -o negative_timeout=T    ... an absent name (default 0)\n"
           "    -o remote=URL            a shared cache over HTTP (WebDAV: GET, HEAD, PUT),\n"
           "                             e.g. http://cache:8080/meshfs (docs/cache.md)\n"
           "    -o remote_timeout_ms=MS  to connect, then for the answer to begin (default 150)\n"
           "    -o remote_data_timeout_s=S  a remote read's whole transfer (default 5)\n"
           "    -o remote_read_only      never upload\n"
           "    -o remote_token_file=F   bearer token, a file only its owner may read\n"
           "    -o remote_owed_max=SIZE  the list of uploads owed after an outage (default 64M)\n"
           "    -o worker_user=USER      when run as root, the user conversions run as\n"
           "                             (default nobody; docs/security.md)\n"
           "    -o log_level=LEVEL       error, warning (default), info (also each\n"
           "                             conversion) or debug (also the importer's\n"
           "                             choices; the default with -d); to stderr with\n"
           "                             -f or -d, else to syslog (the journal)\n"
           "    -o log_file=PATH         once in the background, log to PATH (appended)\n"
           "                             instead of syslog\n"
           "    -o no_auto_unmount       leave the mount behind if the daemon is killed\n"
           "                             (default: a meshfs-umount process unmounts MNT\n"
           "                             when the daemon is gone, even after kill -9)\n"
           "    -o stack                 mount even over a live meshfs mount of the same\n"
           "                             SRC (default: refused with status 2)\n"
           "An unknown -o option stops the mount with status 2, naming the closest known one.\n"
           "Of the FUSE options below, -o max_threads is 64 unless given (not libfuse's\n"
           "10), and -o max_idle_threads changes nothing: no idle thread is retired.\n\n");
}

/* Limits on what options may ask (docs: README, "Options"). */
#define MAX_JOBS 64                      /* FUSE threads a mount runs conversions on */
#define MAX_TIMEOUT_S (7 * 24 * 3600.0)  /* a week: past that, a limit means nothing */
#define MIN_MEMORY (64ull << 20)         /* 16M cannot import even a tiny OBJ, 32M just can */

static int bad_option(const mfs_err *err)
{
    fprintf(stderr, "meshfs: %s\n", err->msg);
    return -1;
}

/* libfuse 3 mounts over a non-empty folder without a word (the nonempty
 * option is gone); the files there are hidden until the unmount, which is
 * worth saying, not refusing (fstab mounts over placeholder folders). */
static void warn_nonempty(const char *mnt)
{
    DIR *d = mnt ? opendir(mnt) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            mfs_log(MFS_LOG_WARNING, "mount point %s is not empty; its files are "
                                     "hidden while meshfs is mounted there", mnt);
            break;
        }
    closedir(d);
}

/* How long the kernel may keep a name or attributes: seconds, 0 included
 * (libfuse's high-level library took these; meshfs keeps them). */
static int cache_time(const char *name, const char *s, double dflt, double *out, mfs_err *err)
{
    *out = dflt;
    if (!s)
        return 0;
    if (s[0] && strspn(s, "0.") == strlen(s) && strchr(s, '0') && strchr(s, '.') == strrchr(s, '.')) {
        *out = 0;
        return 0;
    }
    return mfs_optv_seconds(name, s, 86400, out, err);
}

static int configure(mfs_fs *fs, cli *c)
{
    mfs_fs_config *cfg = &fs->cfg;
    char real[PATH_MAX];
    mfs_err err;
    mfs_log_level level = MFS_LOG_DEFAULT;
    if (c->log_level && mfs_log_level_parse("-o log_level", c->log_level, &level, &err) < 0)
        return bad_option(&err);
    mfs_log_setup("meshfs", level);
    if (c->log_file && (!c->log_file[0] || mfs_log_file_open(c->log_file, &err) < 0)) {
        if (!c->log_file[0])
            mfs_errf(&err, "-o log_file=: empty (give a file)");
        return bad_option(&err);
    }
    if (!c->src || !realpath(c->src, real)) {
        fprintf(stderr, "meshfs: source folder %s: %s\n", c->src ? c->src : "(missing)",
                c->src ? strerror(errno) : "give SRC and MNT");
        return -1;
    }
    /* a file as SRC is a usage error, not a daemon failing later */
    struct stat sst;
    if (stat(real, &sst) == 0 && !S_ISDIR(sst.st_mode)) {
        fprintf(stderr, "meshfs: source folder %s: not a folder (meshfs mounts a folder of "
                        "models)\n", c->src);
        return -1;
    }
    cfg->src = strdup(real);
    char under[PATH_MAX];
    if (mfs_mount_point_check(real, c->mnt, &err) < 0 ||
        mfs_mount_point_live(real, c->mnt, c->stack, under, sizeof under, &err) < 0)
        return bad_option(&err);
    if (under[0])
        mfs_log(MFS_LOG_WARNING, "mount point %s is a meshfs mount of %s; it is hidden while "
                                 "this one is mounted over it", c->mnt, under);
    else
        warn_nonempty(c->mnt);
    if (c->cache_dir && !c->cache_dir[0]) {
        fprintf(stderr, "meshfs: -o cache_dir=: empty (give a folder; a relative one is taken "
                        "from the current folder)\n");
        return -1;
    }
    cfg->cache_dir = c->cache_dir;
    if (c->cache_dir && c->cache_dir[0] != '/') {
        /* the daemon leaves its working directory when it detaches */
        char cwd[PATH_MAX], *abs = malloc(PATH_MAX * 2);
        if (!abs || !getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "meshfs: -o cache_dir: cannot resolve %s\n", c->cache_dir);
            return -1;
        }
        snprintf(abs, PATH_MAX * 2, "%s/%s", cwd, c->cache_dir);
        cfg->cache_dir = abs;
    }
    unsigned asked = MFS_FMT_DEFAULT;
    if (c->formats && mfs_format_parse_list(c->formats, &asked, &err) < 0) {
        fprintf(stderr, "meshfs: -o formats=%s: %s\n", c->formats, err.msg);
        return -1;
    }
    /* a package needs its four views whether or not they are listed */
    cfg->shown = asked & MFS_FMT_ALL;
    cfg->formats = asked | (asked & MFS_FMT_LGEPKG_BIT ? MFS_LGEPKG_NEEDS : 0);
    cfg->cache_size = 0; /* the cache's stored cap (meshfs-cache max-size), else 2G */
    if (c->cache_size &&
        mfs_optv_size("-o cache_size", c->cache_size, 1, UINT64_MAX, &cfg->cache_size, &err) < 0)
        return bad_option(&err);
    mfs_limits_default(&cfg->limits);
    if (c->convert_timeout && mfs_optv_seconds("-o convert_timeout", c->convert_timeout,
                                               MAX_TIMEOUT_S, &cfg->limits.timeout_s, &err) < 0)
        return bad_option(&err);
    if (c->convert_memory && mfs_optv_size("-o convert_memory", c->convert_memory, MIN_MEMORY,
                                           UINT64_MAX, &cfg->limits.memory, &err) < 0)
        return bad_option(&err);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->convert_jobs = cpus < 1 ? 1 : cpus > MAX_JOBS ? MAX_JOBS : (unsigned)cpus;
    if (c->convert_jobs &&
        mfs_optv_count("-o convert_jobs", c->convert_jobs, 1, MAX_JOBS, &cfg->convert_jobs, &err) < 0)
        return bad_option(&err);
    cfg->prefetch = MFS_PREFETCH_DEFAULT;
    if (c->prefetch &&
        mfs_optv_count("-o prefetch", c->prefetch, 0, MFS_PREFETCH_MAX, &cfg->prefetch, &err) < 0)
        return bad_option(&err);
    unsigned memo = MFS_VIEWS_MEMO_DEFAULT;
    if (c->memo_size &&
        mfs_optv_count("-o memo_size", c->memo_size, 1, 1u << 28, &memo, &err) < 0)
        return bad_option(&err);
    cfg->memo_size = memo;
    if (cache_time("-o entry_timeout", c->entry_timeout, 1.0, &c->entry_s, &err) < 0 ||
        cache_time("-o attr_timeout", c->attr_timeout, 1.0, &c->attr_s, &err) < 0 ||
        cache_time("-o negative_timeout", c->negative_timeout, 0.0, &c->negative_s, &err) < 0)
        return bad_option(&err);
    /* the remote tier: every value checked here, so a typo exits 2 */
    if (c->remote && mfs_remote_check_url("-o remote", c->remote, &err) < 0)
        return bad_option(&err);
    cfg->remote = c->remote;
    cfg->remote_timeout_ms = MFS_REMOTE_TIMEOUT_MS_DEFAULT;
    if (c->remote_timeout_ms && mfs_optv_count("-o remote_timeout_ms", c->remote_timeout_ms, 1,
                                               600000, &cfg->remote_timeout_ms, &err) < 0)
        return bad_option(&err);
    cfg->remote_data_timeout_s = MFS_REMOTE_DATA_TIMEOUT_S_DEFAULT;
    if (c->remote_data_timeout_s &&
        mfs_optv_count("-o remote_data_timeout_s", c->remote_data_timeout_s, 1, 3600,
                       &cfg->remote_data_timeout_s, &err) < 0)
        return bad_option(&err);
    cfg->remote_read_only = c->remote_read_only;
    cfg->remote_owed_max = MFS_REMOTE_OWED_MAX_DEFAULT;
    if (c->remote_owed_max && mfs_optv_size("-o remote_owed_max", c->remote_owed_max, 1, UINT64_MAX,
                                            &cfg->remote_owed_max, &err) < 0)
        return bad_option(&err);
    if (c->remote_token_file &&
        mfs_remote_read_token(c->remote_token_file, &cfg->remote_token, &err) < 0)
        return bad_option(&err);
    if (!c->remote && (c->remote_timeout_ms || c->remote_data_timeout_s || c->remote_read_only ||
                       c->remote_token_file || c->remote_owed_max)) {
        mfs_errf(&err, "-o remote_*: given without -o remote=URL");
        return bad_option(&err);
    }
    cfg->hide_sources = c->hide_sources;
    cfg->hide_failed = c->hide_failed;
    cfg->passthrough = c->passthrough ? MFS_PT_ON : MFS_PT_AUTO;
    if (c->passthrough_mode &&
        mfs_pt_parse("-o passthrough", c->passthrough_mode, &cfg->passthrough, &err) < 0)
        return bad_option(&err);
    mfs_options_default(&cfg->opts);
    cfg->opts.pretrans = c->pretrans;
    cfg->opts.fmi_textures = c->fmi_textures;
    cfg->opts.reverse_winding = c->reverse_winding;
    cfg->opts.source_frame = c->source_frame;
    cfg->opts.fmd_raw = c->fmd_raw;
    if (c->vrt_layout && mfs_options_set_vrt_layout(&cfg->opts, c->vrt_layout, &err) < 0) {
        fprintf(stderr, "meshfs: -o vrt_layout=%s: %s\n", c->vrt_layout, err.msg);
        return -1;
    }
    if (c->importer && mfs_importer_parse(c->importer, &cfg->opts.importer, &err) < 0) {
        fprintf(stderr, "meshfs: -o importer=%s: %s\n", c->importer, err.msg);
        return -1;
    }
    if ((c->worker_user || geteuid() == 0) && mfs_worker_user_resolve(c->worker_user, &fs->worker_user, &err) < 0) {
        fprintf(stderr, "meshfs: -o worker_user: %s\n", err.msg);
        return -1;
    }
    cfg->lowercase_names = c->lowercase_names;
    cfg->lgepkg_name = c->lgepkg_name ? c->lgepkg_name : "game_resources";
    cfg->lgepkg_version = c->lgepkg_version ? c->lgepkg_version : "1.0";
    if (strlen(cfg->lgepkg_name) > 19 || !cfg->lgepkg_name[0]) {
        fprintf(stderr, "meshfs: -o lgepkg_name=%s: must be 1 to 19 bytes (PackageHeader holds 20 with its NUL)\n",
                cfg->lgepkg_name);
        return -1;
    }
    if (strlen(cfg->lgepkg_version) > 19) {
        fprintf(stderr, "meshfs: -o lgepkg_version=%s: at most 19 bytes (PackageHeader holds 20 with its NUL)\n",
                cfg->lgepkg_version);
        return -1;
    }
    return 0;
}

static void remote_log(void *ctx, const char *msg)
{
    mfs_errtext_log(&((mfs_fs *)ctx)->names, "%s", msg);
}

static int open_state(mfs_fs *fs)
{
    mfs_err err;
    mfs_err_clear(&err);
    fs->names.rootfd = open(fs->cfg.src, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fs->names.rootfd < 0) {
        mfs_log(MFS_LOG_ERROR, "%s: %s", fs->cfg.src, strerror(errno));
        return -1;
    }
    struct stat sst;
    if (fstat(fs->names.rootfd, &sst) < 0) {
        mfs_log(MFS_LOG_ERROR, "%s: %s", fs->cfg.src, strerror(errno));
        return -1;
    }
    fs->names.src_dev = sst.st_dev;
    if (mfs_spawner_open(&fs->spawner, &fs->worker_user, &err) < 0 || !mfs_spawner_extensions(fs->spawner, &err)) {
        mfs_log(MFS_LOG_ERROR, "%s", err.msg);
        return -1;
    }
    const char *sandbox = mfs_spawner_sandbox_warning(fs->spawner);
    if (sandbox)
        mfs_log(MFS_LOG_WARNING, "%s", sandbox);
    mfs_cache_config cc = {.dir = fs->cfg.cache_dir, .max_size = fs->cfg.cache_size};
    if (mfs_cache_open(&cc, &fs->cache, &err) < 0) {
        mfs_log(MFS_LOG_ERROR, "%s", err.msg); /* the cache layer names itself */
        return -1;
    }
    fs->cfg.cache_size = mfs_cache_max_size(fs->cache);
    mfs_fs_parts_init(fs); /* names/ and coherence/ read the options, cache, spawner */
    /* worker output goes beside the cache, so filing it is a local copy */
    snprintf(fs->tmpdir, sizeof fs->tmpdir, "%s/tmp", mfs_cache_dir(fs->cache));
    if (mkdir(fs->tmpdir, 0700) < 0 && errno != EEXIST) {
        mfs_log(MFS_LOG_ERROR, "%s: %s", fs->tmpdir, strerror(errno));
        return -1;
    }
    if (!(fs->jobdirs = mfs_jobdirs_new(fs->cache, fs->tmpdir))) {
        mfs_log(MFS_LOG_ERROR, "out of memory");
        return -1;
    }
    if (fs->cfg.remote) {
        mfs_remote_cfg rc = {.url = fs->cfg.remote,
                             .timeout_ms = fs->cfg.remote_timeout_ms,
                             .data_timeout_s = fs->cfg.remote_data_timeout_s,
                             .view_max = fs->cfg.limits.output,
                             .read_only = fs->cfg.remote_read_only,
                             .token = fs->cfg.remote_token,
                             .owed_max = fs->cfg.remote_owed_max,
                             .convert_timeout_s = (unsigned)(fs->cfg.limits.timeout_s + 0.999),
                             .log = remote_log,
                             .log_ctx = fs};
        if (!(fs->remote = mfs_remote_new(&rc, fs->cache, &err))) {
            mfs_log(MFS_LOG_ERROR, "%s", err.msg);
            return -1;
        }
    }
    fs->names.dirs = mfs_dirmaps_new();
    fs->coherence.pins = mfs_pins_new();
    /* what the kernel holds of views: 8 records a model the memo keeps */
    fs->coherence.kviews = mfs_kviews_new(8 * (size_t)fs->cfg.memo_size);
    pthread_mutex_init(&fs->job_lock, NULL);
    pthread_mutex_init(&fs->coherence.moving, NULL);
    for (int i = 0; i < MFS_PKG_STRIPES; i++)
        pthread_mutex_init(&fs->pkg_locks[i], NULL);
    pthread_cond_init(&fs->job_cond, NULL);
    if (!fs->names.dirs || !fs->coherence.pins || !fs->coherence.kviews)
        return -1;
    return mfs_fs_views_open(fs, &err) == 0 && mfs_prefetch_open(fs, &err) == 0 ? 0 : -1;
}

/* FUSE threads that can be waiting for conversions at once, beyond which
 * an ls would have to queue behind them (docs/listing.md). */
#define DEFAULT_MAX_THREADS 64

/* libfuse names an unknown -o option ("fuse: unknown option(s): `...'",
 * in several calls) and fuse_session_new fails; seen here, its words are
 * left out for meshfs's own (optsuggest.h) and the mount exits 2 like for
 * meshfs's own bad options instead of 1 like a failed mount.  1: inside
 * libfuse's message, 2: after it, 3: probing which options it refused
 * (libfuse's words are not wanted then either).  A static: libfuse's log
 * function takes no context pointer.  Written only on the main thread,
 * before the session's threads start (session_new, the probes). */
static int unknown_option_seen;

/* libfuse's own messages go where meshfs's go (stderr, or syslog once
 * detached), at the matching level. */
static void fuse_log_stderr(enum fuse_log_level level, const char *fmt, va_list ap)
{
    if (strstr(fmt, "unknown option(s)"))
        unknown_option_seen = 1;
    if (unknown_option_seen == 3)
        return;
    if (unknown_option_seen == 1) {
        size_t n = strlen(fmt);
        if (n >= 2 && !strcmp(fmt + n - 2, "'\n"))
            unknown_option_seen = 2;
        return;
    }
    mfs_vlog_foreign(level <= FUSE_LOG_ERR       ? MFS_LOG_ERROR
                     : level == FUSE_LOG_WARNING ? MFS_LOG_WARNING
                     : level == FUSE_LOG_DEBUG   ? MFS_LOG_DEBUG
                                                 : MFS_LOG_INFO,
                     fmt, ap);
}

/* Does libfuse refuse this one -o option alone?  A session it makes is
 * only parsed options: nothing is opened or mounted. */
static int fuse_refuses(const char *opt, void *ctx)
{
    const char *argv0 = ctx;
    char *argv[] = {(char *)argv0, "-o", (char *)opt, NULL};
    struct fuse_args one = FUSE_ARGS_INIT(3, argv);
    struct fuse_session *se = fuse_session_new(&one, &mfs_ll_ops, sizeof mfs_ll_ops, NULL);
    if (se)
        fuse_session_destroy(se);
    return se == NULL;
}

/* meshfs's words for what libfuse refused (optsuggest.h); `given` is a
 * copy of the arguments libfuse was handed, which it freed. */
static void say_unknown(const struct fuse_args *given, const cli *c)
{
    const char *known[sizeof cli_spec / sizeof cli_spec[0]];
    size_t n = 0;
    for (size_t i = 0; cli_spec[i].templ; i++)
        known[n++] = cli_spec[i].templ;
    known[n] = NULL;
    unknown_option_seen = 3;
    int said = mfs_unknown_options_say(given->argc, given->argv, fuse_refuses, given->argv[0],
                                       known, c->formats);
    unknown_option_seen = 2;
    if (!said) /* refused together, not alone: libfuse's words, then */
        fprintf(stderr, "meshfs: libfuse refused the options (meshfs --help lists them)\n");
}

/* What fuse_main() did, on a low-level session (lowlevel.c says why), with
 * the thread limit applied: libfuse 3.14.0's fuse_main parsed -o
 * max_threads but never passed it to the loop (libfuse PR #742), leaving a
 * handful of threads that conversions could all occupy. */
static int run(struct fuse_args *args, mfs_fs *fs, const cli *c)
{
    struct fuse_cmdline_opts opts;
    /* fuse_parse_cmdline sets max_threads to 10 when -o max_threads is not
     * given (3.14 and 3.17 alike), so meshfs's default goes in first and a
     * user's later -o max_threads still wins. */
    char mt[32];
    snprintf(mt, sizeof mt, "-omax_threads=%d", DEFAULT_MAX_THREADS);
    if (fuse_opt_insert_arg(args, 1, mt) != 0 || fuse_parse_cmdline(args, &opts) != 0)
        return 2;
    int rc = 1;
    if (!opts.mountpoint) {
        fprintf(stderr, "meshfs: no mount point given (usage: meshfs [options] SRC MNT)\n");
        return 2;
    }
    fs->cfg.foreground = opts.foreground;
    /* -d asks for debug output: meshfs's too, unless -o log_level says otherwise */
    if (opts.debug && !c->log_level)
        mfs_log_setup("meshfs", MFS_LOG_DEBUG);
    fuse_set_log_func(fuse_log_stderr);
    /* the kernel may hold 32 files' inodes a model the memo keeps: names
     * cost a tenth of a memo record (docs/scale.md) */
    if (mfs_ll_setup(fs, 32 * fs->cfg.memo_size, c->entry_s, c->attr_s, c->negative_s) < 0)
        goto out;
    struct fuse_args given = FUSE_ARGS_INIT(0, NULL);
    for (int i = 0; i < args->argc; i++)
        if (fuse_opt_add_arg(&given, args->argv[i]) < 0)
            goto out;
    struct fuse_session *se = fuse_session_new(args, &mfs_ll_ops, sizeof mfs_ll_ops, fs);
    if (!se && unknown_option_seen)
        say_unknown(&given, c);
    fuse_opt_free_args(&given);
    if (!se) {
        rc = unknown_option_seen ? 2 : 1;
        goto out;
    }
    if (fuse_session_mount(se, opts.mountpoint) != 0)
        goto destroy;
    /* a killed daemon leaves no dead mount ("Transport endpoint is not
     * connected") behind */
    if (!c->no_auto_unmount)
        mfs_unmount_guard_start(opts.mountpoint);
    /* the last chance to say it where it is seen: once detached, with no
     * syslog socket (a container, a minimal CI image) every line is lost */
    if (!opts.foreground && !c->log_file && !mfs_log_syslog_reachable())
        fprintf(stderr, "meshfs: warning: no syslog socket (/dev/log) and no -o log_file: once in "
                        "the background, this mount logs nothing (failures are then only in "
                        "user.meshfs.error); give -o log_file=PATH, or run it with -f\n");
    if (fuse_daemonize(opts.foreground) != 0 || fuse_set_signal_handlers(se) != 0)
        goto unmount;
    if (!opts.foreground)
        mfs_log_to_syslog(); /* stderr is /dev/null from here on */
    mfs_pt_test_drop_sys_admin();
    mfs_remote_start(fs->remote); /* owed uploads of an earlier session go now */
    unsigned max = opts.singlethread ? 1
                   : opts.max_threads && opts.max_threads != UINT_MAX ? opts.max_threads
                                                                      : DEFAULT_MAX_THREADS;
    if (mfs_ll_start(fs, se, max) < 0)
        goto handlers;
    if (opts.singlethread) {
        rc = fuse_session_loop(se) ? 1 : 0;
    } else {
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        fuse_loop_cfg_set_clone_fd(lc, (unsigned)opts.clone_fd);
        fuse_loop_cfg_set_max_threads(lc, max);
        /* never retire idle threads: a worker spawned by a thread that
         * exits would lose nothing (lifeline), but thread churn is waste */
        fuse_loop_cfg_set_idle_threads(lc, max);
        rc = fuse_session_loop_mt(se, lc) ? 1 : 0;
        fuse_loop_cfg_destroy(lc);
    }
    mfs_ll_stop(fs);
    mfs_files_close_all(fs);
    mfs_dirreply_close_all(fs); /* before the listings its handles hold */
    mfs_listing_close_all(fs);
handlers:
    fuse_remove_signal_handlers(se);
unmount:
    fuse_session_unmount(se);
destroy:
    fuse_session_destroy(se);
out:
    mfs_ll_teardown(fs);
    free(opts.mountpoint);
    return rc;
}

/* "-o" and the options every meshfs mount has.  fsname is SRC: mount(8)
 * compares an fstab line's source with the mounted ones, so `mount -a`
 * sees the mount is there instead of stacking another (with one name for
 * every mount it never could).  The type is fuse.meshfs (subtype).  libfuse
 * splits -o at commas, so SRC's commas and backslashes are escaped. */
static char *mount_options(const char *src)
{
    char *o = NULL;
    char *fsname = malloc(strlen(src) + sizeof "fsname=");
    if (!fsname)
        return NULL;
    strcpy(fsname, "fsname=");
    strcat(fsname, src);
    int bad = fuse_opt_add_opt(&o, "-oro,nosuid,nodev,subtype=meshfs,default_permissions") < 0 ||
              fuse_opt_add_opt_escaped(&o, fsname) < 0;
    free(fsname);
    if (bad) {
        free(o);
        return NULL;
    }
    return o;
}

int main(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    cli c;
    memset(&c, 0, sizeof c);
    static mfs_fs fs;
    int rc = 0;
    mfs_nofile_raise(); /* each open file through the mount holds one here */
    /* One malloc arena, not one per FUSE thread: each thread's arena keeps
     * the high-water mark of the listings it served (a big folder's
     * snapshot is many small blocks), so RSS grew with the threads and the
     * largest folder.  FUSE threads allocate little besides, so sharing
     * the arena costs no measurable time (docs/scale.md). */
    mallopt(M_ARENA_MAX, 1);
    if (fuse_opt_parse(&args, &c, cli_spec, cli_proc) < 0) {
        rc = 2;
    } else if (c.show_version) {
        mfs_version_print(stdout, "meshfs", MFS_VERSION_WORKER_LIBS);
        printf("FUSE library version %s\n", fuse_pkgversion());
        fflush(stdout);
        fuse_lowlevel_version(); /* the kernel interface's */
    } else if (c.show_help) {
        usage();
        printf("FUSE options:\n");
        fuse_cmdline_help();
        fuse_lowlevel_help();
    } else if (configure(&fs, &c) < 0) {
        rc = 2;
    } else if (open_state(&fs) < 0) {
        rc = 1;
    } else {
        /* read-only at the kernel too; and a setuid file or device node in
         * SRC is never honoured through the mount, even from fstab as root */
        char *mo = mount_options(fs.cfg.src);
        if (!mo || fuse_opt_add_arg(&args, mo) < 0)
            rc = 1;
        else
            rc = run(&args, &fs, &c);
        free(mo);
    }
    mfs_prefetch_close(&fs); /* before what its threads use */
    mfs_remote_free(fs.remote); /* its upload thread uses the cache */
    mfs_jobdirs_free(fs.jobdirs); /* no conversion runs any more */
    if (fs.cache)
        mfs_cache_close(fs.cache);
    mfs_views_free(fs.views);
    if (fs.cfg.remote_token) {
        memset(fs.cfg.remote_token, 0, strlen(fs.cfg.remote_token));
        free(fs.cfg.remote_token);
    }
    mfs_dirmaps_free(fs.names.dirs);
    mfs_pins_free(fs.coherence.pins);
    mfs_kviews_free(fs.coherence.kviews); /* after the session: no handle holds a record */
    mfs_spawner_close(fs.spawner);
    fuse_opt_free_args(&args);
    if (fs.cfg.cache_dir != c.cache_dir)
        free(fs.cfg.cache_dir);
    free(fs.cfg.src);
    free(c.src);
    free(c.cache_dir);
    free(c.cache_size);
    free(c.formats);
    free(c.convert_memory);
    free(c.vrt_layout);
    free(c.importer);
    free(c.lgepkg_name);
    free(c.lgepkg_version);
    free(c.worker_user);
    free(c.log_level);
    free(c.log_file);
    free(c.convert_timeout);
    free(c.convert_jobs);
    free(c.passthrough_mode);
    free(c.prefetch);
    free(c.memo_size);
    free(c.entry_timeout);
    free(c.attr_timeout);
    free(c.negative_timeout);
    free(c.remote);
    free(c.remote_timeout_ms);
    free(c.remote_data_timeout_s);
    free(c.remote_token_file);
    free(c.remote_owed_max);
    free(c.mnt);
    return rc;
}

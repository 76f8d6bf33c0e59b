/* meshfs-worker: one conversion in a process of its own.
 *
 * Started by meshfs-convert and the mount daemon (src/spawn/),
 * never by hand.  It limits and sandboxes itself before touching the model
 * (include/meshfs/worker.h), imports it once, writes every requested format
 * into its output directory, and writes its report to fd 3.  Anything it
 * says is checked by the parent; anything it does wrong (crash, hang,
 * runaway allocation, an exploited parser) costs only this process. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <assimp/cimport.h>

#include "meshfs/import.h"

#include "meshfs/worker.h"

static void usage(void)
{
    fprintf(stderr, "usage: meshfs-worker --root DIR --model REL --outdir DIR --formats LIST\n"
                    "         [--pretrans] [--fmi-textures] [--reverse-winding] [--source-frame]\n"
                    "         [--fmd-raw] [--vrt-plain] [--importer auto|assimp]\n"
                    "         [--model-path P] [--memory BYTES] [--cpu SECONDS] [--output BYTES]\n"
                    "         [--uid UID --gid GID [--groups G,G,...]]\n"
                    "       meshfs-worker --list-extensions\n"
                    "       meshfs-worker --sandbox-status\n"
                    "       meshfs-worker --server\n"
                    "Internal helper of meshfs: writes its report to fd %d.\n",
            MFS_REPORT_FD);
}

static int list_extensions(void)
{
    struct aiString s;
    /* assimp appends to the string, so it must start empty */
    memset(&s, 0, sizeof s);
    aiGetExtensionList(&s);
    /* "*.3ds;*.obj;..." -> one lower-case extension per line */
    const char *p = s.data;
    while (*p) {
        while (*p == '*' || *p == '.' || *p == ';')
            p++;
        const char *e = p;
        while (*e && *e != ';')
            e++;
        if (e > p) {
            for (const char *c = p; c < e; c++)
                putchar((*c >= 'A' && *c <= 'Z') ? *c + 32 : *c);
            putchar('\n');
        }
        p = e;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static void limit(int res, unsigned long long v)
{
    if (!v)
        return;
    struct rlimit rl = {v, v};
    if (res == RLIMIT_CPU)
        rl.rlim_max = v + 5; /* SIGXCPU first, SIGKILL 5 s later */
    setrlimit(res, &rl);
}

static void *watch_parent(void *arg)
{
    char c;
    while (read(MFS_LIFELINE_FD, &c, 1) < 0 && errno == EINTR)
        ;
    _exit(71); /* EOF: the parent is gone, nobody wants this result */
}

/* Keeps only the descriptors it needs: a worker must not hold the daemon's
 * /dev/fuse or cache files open. */
static void confine(void)
{
    close_range(MFS_LIFELINE_FD + 1, ~0u, 0);
    struct rlimit rl = {0, 0}; /* a crashing importer leaves no core files */
    setrlimit(RLIMIT_CORE, &rl);
}

/* Dies with the parent.  Started only once the sandbox is up: Landlock and
 * capabilities are per thread, so a thread from before would be outside. */
static void watch_lifeline(void)
{
    pthread_t t;
    if (fcntl(MFS_LIFELINE_FD, F_GETFD) >= 0)
        pthread_create(&t, NULL, watch_parent, NULL);
}

static int send_report(const mfs_report *rep)
{
    uint8_t *buf;
    size_t len;
    if (mfs_report_encode(rep, &buf, &len) < 0)
        return -1;
    const uint8_t *p = buf;
    while (len) {
        ssize_t w = write(MFS_REPORT_FD, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            free(buf);
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    free(buf);
    return 0;
}

/* "G,G,..." into groups (MFS_WORKER_GROUPS_MAX of them at most); -1 if
 * malformed. */
static int parse_groups(const char *v, gid_t *groups, int *n)
{
    *n = 0;
    while (*v) {
        char *end;
        unsigned long g = strtoul(v, &end, 10);
        if (end == v || (*end && *end != ',') || *n == MFS_WORKER_GROUPS_MAX)
            return -1;
        groups[(*n)++] = (gid_t)g;
        v = *end ? end + 1 : end;
    }
    return 0;
}

/* groups: where --groups is parsed to (sb->groups points into it). */
static int parse_args(int argc, char **argv, mfs_job *job, mfs_sandbox_cfg *sb, gid_t *groups)
{
    memset(job, 0, sizeof *job);
    memset(sb, 0, sizeof *sb);
    mfs_options_default(&job->opts);
    mfs_err err;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--pretrans")) job->opts.pretrans = 1;
        else if (!strcmp(a, "--fmi-textures")) job->opts.fmi_textures = 1;
        else if (!strcmp(a, "--reverse-winding")) job->opts.reverse_winding = 1;
        else if (!strcmp(a, "--source-frame")) job->opts.source_frame = 1;
        else if (!strcmp(a, "--fmd-raw")) job->opts.fmd_raw = 1;
        else if (!strcmp(a, "--vrt-plain")) job->opts.vrt_plain = 1;
        else if (!v) return -1;
        else if (!strcmp(a, "--root")) job->root = v, i++;
        else if (!strcmp(a, "--model")) job->model = v, i++;
        else if (!strcmp(a, "--outdir")) job->outdir = v, i++;
        else if (!strcmp(a, "--model-path")) job->opts.model_path = v, i++;
        else if (!strcmp(a, "--model-id")) {
            unsigned long long dev, ino;
            char end;
            if (sscanf(v, "%llu:%llu%c", &dev, &ino, &end) != 2) {
                fprintf(stderr, "meshfs-worker: --model-id %s: not DEV:INO\n", v);
                return -1;
            }
            job->model_id_known = 1, job->model_dev = (dev_t)dev, job->model_ino = (ino_t)ino, i++;
        }
        else if (!strcmp(a, "--importer")) {
            if (mfs_importer_parse(v, &job->opts.importer, &err) < 0) {
                fprintf(stderr, "meshfs-worker: %s\n", err.msg);
                return -1;
            }
            i++;
        }
        else if (!strcmp(a, "--memory")) job->limits.memory = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--cpu")) job->limits.cpu_s = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--output")) job->limits.output = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--uid")) sb->uid = (uid_t)strtoul(v, NULL, 10), sb->drop = 1, i++;
        else if (!strcmp(a, "--gid")) sb->gid = (gid_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--groups")) {
            if (parse_groups(v, groups, &sb->ngroups) < 0) {
                fprintf(stderr, "meshfs-worker: --groups %s: not a list of at most %d gids\n", v,
                        MFS_WORKER_GROUPS_MAX);
                return -1;
            }
            sb->groups = groups;
            i++;
        }
        else if (!strcmp(a, "--formats")) {
            if (mfs_format_parse_list(v, &job->formats, &err) < 0) {
                fprintf(stderr, "meshfs-worker: %s\n", err.msg);
                return -1;
            }
            i++;
        } else return -1;
    }
    sb->root = job->root;
    sb->outdir = job->outdir;
    return job->root && job->model && job->outdir && job->formats ? 0 : -1;
}

/* Started as root with no user given (by hand): the documented default. */
static void default_user(mfs_sandbox_cfg *sb)
{
    if (geteuid() != 0 || sb->drop)
        return;
    struct passwd *pw = getpwnam("nobody");
    if (pw && pw->pw_uid != 0) {
        sb->uid = pw->pw_uid;
        sb->gid = pw->pw_gid;
        sb->drop = 1;
    }
}

/* Could not confine itself: say why in a report, and exit with the status
 * that tells the parent it was the machine, not the model. */
static int sandbox_failed(const mfs_err *err)
{
    mfs_report rep;
    memset(&rep, 0, sizeof rep);
    snprintf(rep.error, sizeof rep.error, "%s", err->msg);
    fprintf(stderr, "meshfs-worker: %s\n", err->msg);
    send_report(&rep);
    return MFS_SANDBOX_EXIT;
}

/* fd moved above the report and lifeline numbers: run by hand (or by a
 * test) those may be free, and a descriptor there would be taken for them. */
static int high(int fd)
{
    if (fd < 0 || fd > MFS_LIFELINE_FD)
        return fd;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, MFS_LIFELINE_FD + 1);
    close(fd);
    return h;
}

/* Every layer of the sandbox; -1 with err if one that must hold failed.
 * *rootfd: SRC, for enter_root (-1: none, the job reads by its path). */
static int sandbox_up(mfs_job *job, mfs_sandbox_cfg *sb, mfs_err *err, int *rootfd)
{
    *rootfd = -1;
#ifdef MESHFS_TEST_HOOKS
    /* The benchmark's baseline (docs/benchmarks.md): test builds only. */
    if (getenv("MESHFS_TEST_NO_SANDBOX"))
        return 0;
#endif
    default_user(sb);
    mfs_sandbox_state st;
    mfs_err_clear(err);
    /* the sandbox changes the working directory: a relative root (as
     * meshfs-convert passes) must be made absolute first */
    static char root[PATH_MAX];
    if (job->root[0] != '/') {
        if (!realpath(job->root, root))
            return mfs_errf(err, "%s: cannot open source root: %s", job->root, strerror(errno));
        job->root = sb->root = root;
    }
    if (mfs_sandbox_enter(sb, &st, err) < 0)
        return -1;
    *rootfd = high(st.rootfd);
    if (sb->outdir)
        job->outdir = "."; /* the sandbox left us in the output directory */
    return 0;
}

/* Once it is the model's owner: into SRC by the descriptor the sandbox
 * opened, and the job reads beneath "." from then on.  So the folders
 * above SRC (a 0700 folder of root's, say) are walked with the daemon's
 * rights, as the daemon walks them, and everything inside SRC with the
 * owner's.  An owner who may not enter SRC itself fails the import
 * ("cannot open source root"), as with any folder of SRC it cannot read. */
static void enter_root(mfs_job *job, int rootfd)
{
    if (rootfd < 0)
        return;
    if (fchdir(rootfd) == 0)
        job->root = ".";
    close(rootfd);
}

static int enter_sandbox(mfs_job *job, mfs_sandbox_cfg *sb, int *rootfd)
{
    mfs_err err;
    return sandbox_up(job, sb, &err, rootfd) < 0 ? sandbox_failed(&err) : 0;
}

/* The job once the sandbox is up: limits, test hooks, conversion, report.
 * *written (may be NULL): the formats whose output was written whole. */
static int run_job(mfs_job *job, unsigned *written)
{
#ifdef MESHFS_TEST_HOOKS
    const char *probe = getenv("MESHFS_TEST_SANDBOX_PROBE");
    if (probe) {
        mfs_sandbox_probe(probe);
        return 0;
    }
#endif
#if defined(__SANITIZE_ADDRESS__)
    /* ASan reserves terabytes of address space for its shadow memory; an
     * address-space cap would kill every sanitized worker at start. */
#else
    limit(RLIMIT_AS, job->limits.memory);
#endif
    limit(RLIMIT_CPU, job->limits.cpu_s);
    /* Test hook (docs/reliability.md): simulate a hanging importer. */
    const char *hang = getenv("MESHFS_TEST_WORKER_SLEEP");
    if (hang)
        sleep((unsigned)atoi(hang));
    mfs_report rep;
    mfs_job_run(job, &rep);
#ifdef MESHFS_TEST_HOOKS
    /* Test hook (tests/integration/test_hostile.py): a report that lies
     * about an output's size, as a compromised worker could. */
    const char *lie = getenv("MESHFS_TEST_REPORT_LIE");
    for (int f = 0; lie && f < MFS_FMT_COUNT; f++)
        if (!strcmp(lie, mfs_format_get((mfs_format)f)->name) && rep.fmt[f].ok)
            rep.fmt[f].size += 1;
#endif
    int rc = send_report(&rep) < 0 ? 1 : 0;
    for (int f = 0; written && f < MFS_FMT_COUNT; f++)
        if (rep.ok && rep.fmt[f].ok)
            *written |= 1u << f;
    mfs_report_free(&rep);
    return rc;
}

/* One conversion: the whole life of a spawned worker. */
static int convert_main(int argc, char **argv)
{
    mfs_job job;
    mfs_sandbox_cfg sb;
    gid_t groups[MFS_WORKER_GROUPS_MAX];
    if (parse_args(argc, argv, &job, &sb, groups) < 0) {
        usage();
        return 2;
    }
    confine();
    int rootfd;
    int sbrc = enter_sandbox(&job, &sb, &rootfd);
    if (sbrc)
        return sbrc;
    /* the outputs are opened here, in the output directory the sandbox
     * left us in, before it leaves it for SRC (enter_root) */
    int fd[MFS_FMT_COUNT];
    int outdir = rootfd >= 0 ? high(open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) : -1;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        fd[f] = -1;
        if (outdir >= 0 && (job.formats & (1u << f)))
            fd[f] = high(openat(outdir, mfs_format_get((mfs_format)f)->name,
                                O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    }
    if (outdir >= 0) {
        job.out_fd = fd;
#ifdef MESHFS_TEST_HOOKS
        /* the escape probes (ProbeTest) write "inside" the output folder */
        if (!getenv("MESHFS_TEST_SANDBOX_PROBE"))
#endif
            enter_root(&job, rootfd);
    }
    watch_lifeline();
    unsigned written = 0;
    int rc = run_job(&job, &written);
    /* a format that failed leaves no file behind, as without out_fd */
    for (int f = 0; outdir >= 0 && f < MFS_FMT_COUNT; f++)
        if ((job.formats & (1u << f)) && !(written & (1u << f)))
            unlinkat(outdir, mfs_format_get((mfs_format)f)->name, 0);
    return rc;
}

/* ---- a child of the fork server (include/meshfs/worker.h) ---- */

/* A child of the server, from its preparation to its job (the fork
 * server's mfs_fs_worker.ctx: each child has its own copy). */
typedef struct spare {
    mfs_sandbox_prepared prepared; /* the server's share of the sandbox */
    const char *root;   /* as the request gave it */
    const char *abs;    /* made absolute: the sandbox left us in it */
    int failed;         /* the sandbox did not hold: err says why */
    int defer;          /* its user comes with the job (it is root) */
    pid_t server;       /* its parent, the server */
    int rootfd;         /* SRC, entered once it is the owner */
    mfs_err err;
} spare;

static void *warm_thread(void *arg)
{
    void *volatile p = malloc(64); /* makes the thread's malloc arena */
    free(p);
    return arg;
}

/* A built-in one-triangle model through assimp's whole pipeline, in the
 * spare while it waits for its job: a fresh process's first import faults
 * in code and heap pages that every conversion touches, and here that is
 * off the conversion's path.  Likewise one thread started and joined: the
 * job's writer thread then reuses its stack and malloc arena instead of
 * mapping new ones.  No file is read; nothing comes out.  The server runs
 * it once too, before it serves (mfs_fs_worker.warm): the libraries'
 * one-time set-up is then inherited by every child instead of redone in
 * each (docs/benchmarks.md, "Fork server"). */
static void warm_up(void *ctx)
{
    (void)ctx;
    pthread_t t;
    if (pthread_create(&t, NULL, warm_thread, NULL) == 0)
        pthread_join(t, NULL);
    static const char stl[] = "solid w\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\n"
                              "vertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid w\n";
    const struct aiScene *s =
        aiImportFileFromMemory(stl, sizeof stl - 1, mfs_import_ai_flags(NULL), "stl");
    if (s)
        aiReleaseImport(s);
}

/* Before the job: argv is "meshfs-worker --root R".  Which user it will
 * run as is the job's (the model's owner), so as root it is confined with
 * the user switch deferred: it keeps CAP_SETUID and CAP_SETGID only. */
static void spare_prepare(void *ctx, int argc, char **argv)
{
    spare *sp = ctx;
    mfs_job job;
    mfs_sandbox_cfg sb;
    memset(&job, 0, sizeof job);
    memset(&sb, 0, sizeof sb);
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--root"))
            job.root = argv[i + 1];
    sp->root = job.root;
    sp->server = getppid();
    if (geteuid() == 0)
        sb.drop = sb.defer = 1;
    confine();
    /* for tests/integration/test_fork_server.py: which child was made
     * for which root, and which model it then converted */
    if (getenv("MESHFS_WORKER_STDERR"))
        fprintf(stderr, "meshfs-worker: child %d prepared for %s\n", (int)getpid(),
                job.root ? job.root : "?");
    if (!job.root) {
        sp->failed = 1;
        mfs_errf(&sp->err, "fork server: request without a source root");
        return;
    }
    sb.root = job.root;
    sb.outdir = NULL; /* it writes only to the files the parent hands it */
    sb.prepared = &sp->prepared;
    if (sandbox_up(&job, &sb, &sp->err, &sp->rootfd) < 0) {
        sp->failed = 1;
        return;
    }
    sp->abs = job.root;
    sp->defer = sb.defer;
    /* no watch_lifeline: the server's child dies with the server instead
     * (fork_server.c) */
    warm_up(NULL);
}

/* The job: the request's argv and one open output file per format. */
static int spare_run(void *ctx, int argc, char **argv, const int *out, int nout)
{
    spare *sp = ctx;
    mfs_job job;
    mfs_sandbox_cfg sb;
    gid_t groups[MFS_WORKER_GROUPS_MAX];
    if (parse_args(argc, argv, &job, &sb, groups) < 0) {
        usage();
        return 2;
    }
    if (getenv("MESHFS_WORKER_STDERR"))
        fprintf(stderr, "meshfs-worker: child %d converts %s/%s\n", (int)getpid(), job.root,
                job.model);
    if (sp->failed)
        return sandbox_failed(&sp->err);
    /* the server prepared this child for the request's root; a mismatch
     * would be the server's bug, and no model is opened under it */
    if (!sp->root || strcmp(sp->root, job.root) != 0) {
        mfs_err err;
        mfs_errf(&err, "fork server: child prepared for another source root");
        return sandbox_failed(&err);
    }
    job.root = sp->abs;
    if (sp->defer) {
        /* now it becomes the model's owner (or the worker user), and
         * holds no capability from here on */
        mfs_err err;
        if (!sb.drop) {
            mfs_errf(&err, "fork server: a job for a root server names no user");
            return sandbox_failed(&err);
        }
        if (mfs_sandbox_switch(sb.uid, sb.gid, sb.groups, sb.ngroups, &err) < 0)
            return sandbox_failed(&err);
        /* a change of user clears it: dies with the server again */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != sp->server)
            return 71;
    }
    enter_root(&job, sp->rootfd);
    int fd[MFS_FMT_COUNT];
    int k = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++)
        fd[f] = (job.formats & (1u << f)) && k < nout ? out[k++] : -1;
    if (k != nout || __builtin_popcount(job.formats) != nout) {
        mfs_err err;
        mfs_errf(&err, "fork server: %d output files for %d formats", nout,
                 __builtin_popcount(job.formats));
        return sandbox_failed(&err);
    }
    job.out_fd = fd;
    return run_job(&job, NULL);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list-extensions"))
        return list_extensions();
    if (argc == 2 && !strcmp(argv[1], "--sandbox-status")) {
        mfs_sandbox_print_status(stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (argc == 2 && !strcmp(argv[1], "--server")) {
        /* libraries are loaded and relocated by now: that is what each
         * forked child saves.  Name the process for ps and the tests. */
        if (getenv("MESHFS_WORKER_STDERR"))
            fprintf(stderr, "meshfs-worker: fork server %d started\n", (int)getpid());
        /* the per-process part of the sandbox, once for every child;
         * failing here, each child fails its own sandbox with the reason */
        mfs_err err;
        spare sp = {.rootfd = -1};
        mfs_sandbox_prepare(&sp.prepared, &err);
        /* then it gives up what it does not use; failing, it does not
         * serve, and the parent spawns each worker directly */
        if (mfs_sandbox_confine_server(&err) < 0) {
            fprintf(stderr, "meshfs-worker: %s\n", err.msg);
            return 1;
        }
        const mfs_fs_worker w = {spare_prepare, spare_run, warm_up, &sp};
        return mfs_fork_server_run(&w);
    }
    return convert_main(argc, argv);
}

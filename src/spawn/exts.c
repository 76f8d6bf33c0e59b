/* Which files are models (spawn_int.h). */
#include "spawn_int.h"

/* ---- which files are models ---- */

/* Extensions assimp claims that are too generic to treat every such file as
 * a model (an asset folder's .xml or .txt is far more likely something
 * else), plus animation-only inputs with no geometry. */
static const char *const skipped_ext[] = {"xml", "md5anim", "md5camera", "pk3", "prj", NULL};

static int skipped(const char *e)
{
    for (int i = 0; skipped_ext[i]; i++)
        if (strcmp(skipped_ext[i], e) == 0)
            return 1;
    return 0;
}

void mfs_sp_load_exts(mfs_spawner *sp)
{
    char *model_exts_err = sp->exts_err;
    size_t errsz = sizeof sp->exts_err;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(model_exts_err, errsz, "pipe: %s", strerror(errno));
        return;
    }
    char *argv[] = {sp->path, "--list-extensions", NULL};
    pid_t pid;
    mfs_err err;
    if (mfs_sp_spawn(sp, argv, -1, p[1], &pid, &err) < 0) {
        close(p[0]);
        close(p[1]);
        snprintf(model_exts_err, errsz, "%s", err.msg);
        return;
    }
    close(p[1]);
    uint8_t *buf;
    size_t len;
    mfs_sp_read_report(p[0], mfs_sp_now_s() + 30, &buf, &len);
    close(p[0]);
    int to;
    mfs_sp_reap(pid, mfs_sp_now_s() + 30, &to, NULL);
    size_t n = 0;
    char **v = calloc(len / 2 + 2, sizeof(char *));
    if (!v || !buf) {
        free(buf);
        free(v);
        snprintf(model_exts_err, errsz, "out of memory");
        return;
    }
    char *s = (char *)buf;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && buf[j] != '\n')
            j++;
        if (j > i && j - i < 32) {
            char e[32];
            memcpy(e, s + i, j - i);
            e[j - i] = '\0';
            if (!skipped(e))
                v[n++] = strdup(e);
        }
        i = j + 1;
    }
    free(buf);
    if (n == 0) {
        free(v);
        snprintf(model_exts_err, errsz, "worker %s listed no model extensions",
                 sp->path);
        return;
    }
    sp->exts = v;
}

const char *const *mfs_spawner_extensions(const mfs_spawner *sp, mfs_err *err)
{
    if (!sp->exts) {
        mfs_errf(err, "%s", sp->exts_err);
        return NULL;
    }
    return (const char *const *)sp->exts;
}

int mfs_spawner_is_model(const mfs_spawner *sp, const char *name)
{
    return mfs_model_name_in(mfs_spawner_extensions(sp, NULL), name);
}

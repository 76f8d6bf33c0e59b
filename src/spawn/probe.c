/* Is the sandbox complete here (spawn_int.h). */
#include "spawn_int.h"

/* ---- is the sandbox complete here ---- */

static void ask_sandbox(mfs_spawner *sp)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return;
    char *argv[] = {sp->path, "--sandbox-status", NULL};
    pid_t pid;
    if (mfs_sp_spawn(sp, argv, -1, p[1], &pid, NULL) < 0) {
        close(p[0]);
        close(p[1]);
        return; /* the first conversion will say the worker cannot start */
    }
    close(p[1]);
    uint8_t *buf;
    size_t len = 0;
    mfs_sp_read_report(p[0], mfs_sp_now_s() + 30, &buf, &len);
    close(p[0]);
    int to;
    mfs_sp_reap(pid, mfs_sp_now_s() + 30, &to, NULL);
    if (!buf)
        return;
    char *text = calloc(1, len + 1);
    if (text) {
        memcpy(text, buf, len);
        const char *ll = strstr(text, "landlock: unsupported");
        const char *sc = strstr(text, "seccomp: unsupported");
        if (ll || sc)
            snprintf(sp->sandbox_warning, sizeof sp->sandbox_warning,
                     "%s%s%s is not available on this kernel, so conversions run with "
                     "less confinement (docs/security.md)",
                     ll ? "Landlock" : "", ll && sc ? " and " : "", sc ? "seccomp" : "");
    }
    free(text);
    free(buf);
}

const char *mfs_spawner_sandbox_warning(mfs_spawner *sp)
{
    pthread_mutex_lock(&sp->sandbox_mu);
    if (!sp->sandbox_asked)
        ask_sandbox(sp);
    sp->sandbox_asked = 1;
    pthread_mutex_unlock(&sp->sandbox_mu);
    return sp->sandbox_warning[0] ? sp->sandbox_warning : NULL;
}

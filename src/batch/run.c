/* Running a plan through the engine, -j models at a time, with the progress
 * line (include/meshfs/batch.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "meshfs/batch.h"
#include "meshfs/scene.h"
#include "meshfs/settings.h"

typedef struct runstate {
    mfs_batch_run *run;
    atomic_size_t next;
    pthread_mutex_t lock; /* counts and the progress line */
    size_t done;
    const char *current;  /* the model last started */
    struct timespec t0, last_draw;
} runstate;

mfs_batch_state mfs_batch_state_of(const mfs_batch_result *r)
{
    int failed = 0, no_mesh = 0;
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!r->view[f].error[0] || mfs_settings_not_shown(r->view[f].error))
            continue; /* left out by formats =: not there, no failure */
        failed++;
        no_mesh += !r->view[f].machine && !strcmp(r->view[f].error, MFS_SCENE_NO_MESH);
    }
    if (failed)
        return failed == no_mesh ? MFS_BATCH_NO_MESH : MFS_BATCH_FAILED;
    return r->converted ? MFS_BATCH_CONVERTED : MFS_BATCH_UP_TO_DATE;
}

static double since(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (b->tv_nsec - a->tv_nsec) / 1e9;
}

/* One line, cut to the terminal's width so it never wraps (a wrapped line
 * cannot be redrawn in place).  Called with the lock held. */
static void draw(runstate *s, int final)
{
    FILE *f = s->run->progress;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!final && s->done && since(&s->last_draw, &now) < 0.1)
        return;
    s->last_draw = now;
    size_t total = s->run->plan->n;
    double secs = since(&s->t0, &now);
    double rate = secs > 0 ? (double)s->done / secs : 0;
    char eta[32] = "--:--";
    if (rate > 0 && s->done < total) {
        unsigned long left = (unsigned long)((double)(total - s->done) / rate + 0.5);
        snprintf(eta, sizeof eta, "%lu:%02lu", left / 60, left % 60);
    } else if (s->done == total) {
        snprintf(eta, sizeof eta, "0:00");
    }
    char cur[512] = "";
    if (s->current && !final)
        mfs_batch_quote(s->current, cur, sizeof cur);
    char line[1024];
    int n = snprintf(line, sizeof line, "%zu/%zu  %.1f models/s  ETA %s  %s", s->done, total,
                     rate, eta, cur);
    struct winsize ws;
    int width = ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
    if (n > width)
        n = width;
    fprintf(f, "\r\033[K%.*s%s", n, line, final ? "\n" : "");
    fflush(f);
}

static void *worker(void *arg)
{
    runstate *s = arg;
    mfs_batch_run *run = s->run;
    for (;;) {
        size_t i = atomic_fetch_add(&s->next, 1);
        if (i >= run->plan->n)
            return NULL;
        const mfs_plan_item *it = &run->plan->v[i];
        if (run->progress) {
            pthread_mutex_lock(&s->lock);
            s->current = it->shown;
            draw(s, 0);
            pthread_mutex_unlock(&s->lock);
        }
        mfs_batch_state st;
        if (it->refused) {
            st = run->each(run->ctx, i, NULL);
        } else {
            mfs_batch_result r;
            mfs_err err;
            mfs_err_clear(&err);
            if (mfs_batch_resolve(run->b, it->root, it->model, it->fmi_model, &r, &err) < 0) {
                /* the root cannot be opened: every view fails with why */
                memset(&r, 0, sizeof r);
                for (int f = 0; f < MFS_FMT_COUNT; f++) {
                    r.view[f].hit.fd = -1;
                    if (mfs_batch_views(run->b) & (1u << f)) {
                        r.view[f].machine = 1;
                        snprintf(r.view[f].error, sizeof r.view[f].error, "%s", err.msg);
                    }
                }
            }
            st = run->each(run->ctx, i, &r);
            mfs_batch_result_free(&r);
        }
        pthread_mutex_lock(&s->lock);
        s->done++;
        if (st == MFS_BATCH_CONVERTED)
            run->converted++;
        else if (st == MFS_BATCH_UP_TO_DATE)
            run->up_to_date++;
        else if (st == MFS_BATCH_NO_MESH)
            run->no_mesh++;
        else
            run->failed++;
        if (run->progress)
            draw(s, 0);
        pthread_mutex_unlock(&s->lock);
    }
}

void mfs_batch_run_all(mfs_batch_run *run)
{
    runstate s;
    memset(&s, 0, sizeof s);
    s.run = run;
    pthread_mutex_init(&s.lock, NULL);
    clock_gettime(CLOCK_MONOTONIC, &s.t0);
    run->converted = run->up_to_date = run->failed = run->no_mesh = 0;
    int n = run->jobs < 1 ? 1 : run->jobs > 64 ? 64 : run->jobs;
    if ((size_t)n > run->plan->n)
        n = run->plan->n ? (int)run->plan->n : 1;
    pthread_t th[64];
    int started = 0;
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[started], NULL, worker, &s) == 0)
            started++;
    if (started == 0)
        worker(&s); /* no thread to spare: this one does it all */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (run->progress && run->plan->n)
        draw(&s, 1);
    pthread_mutex_destroy(&s.lock);
}

/* Opens waiting for a file lease, retried from one thread (leasewait.h).
 *
 * Polling, because the kernel tells only the lease holder (a signal) and
 * nobody else when a lease goes; an O_NONBLOCK open costs a path walk,
 * and a waiting request is retried at most ten times a second once it has
 * waited a while, so even thousands of them cost little.  The retries run
 * outside the lock: one that answers the kernel may take a moment. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "leasewait.h"

#define FIRST_MS 10
#define MAX_MS 100

struct mfs_leasewait {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    pthread_t thread;
    int stop;
    mfs_leasewait_entry *list;
    unsigned handed; /* requests on threads of their own (hand_begin) */
    pthread_cond_t handed_cond;
    size_t waiting;
    uint64_t total;
};

static void add_ms(struct timespec *t, unsigned ms)
{
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *wait_main(void *arg)
{
    mfs_leasewait *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        mfs_leasewait_entry *due = NULL, **pp = &w->list;
        while (*pp) {
            mfs_leasewait_entry *e = *pp;
            if (before(&now, &e->due)) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            e->next = due;
            due = e;
        }
        if (due) {
            pthread_mutex_unlock(&w->lock);
            mfs_leasewait_entry *again = NULL;
            while (due) {
                mfs_leasewait_entry *e = due;
                due = e->next;
                if (e->again(e, 0) == 1) {
                    e->due = now;
                    add_ms(&e->due, e->delay_ms);
                    e->delay_ms = e->delay_ms * 2 > MAX_MS ? MAX_MS : e->delay_ms * 2;
                    e->next = again;
                    again = e;
                }
            }
            pthread_mutex_lock(&w->lock);
            while (again) {
                mfs_leasewait_entry *e = again;
                again = e->next;
                e->next = w->list;
                w->list = e;
            }
            w->waiting = 0;
            for (mfs_leasewait_entry *e = w->list; e; e = e->next)
                w->waiting++;
            continue;
        }
        if (!w->list) {
            pthread_cond_wait(&w->cond, &w->lock);
            continue;
        }
        struct timespec next = w->list->due;
        for (mfs_leasewait_entry *e = w->list->next; e; e = e->next)
            if (before(&e->due, &next))
                next = e->due;
        pthread_cond_timedwait(&w->cond, &w->lock, &next);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

mfs_leasewait *mfs_leasewait_new(void)
{
    mfs_leasewait *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&w->handed_cond, NULL);
    pthread_mutex_init(&w->lock, NULL);
    if (pthread_create(&w->thread, NULL, wait_main, w) != 0) {
        pthread_cond_destroy(&w->handed_cond);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void mfs_leasewait_free(mfs_leasewait *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    /* a request handed on may come back (leased again): into the list,
     * answered below */
    pthread_mutex_lock(&w->lock);
    while (w->handed)
        pthread_cond_wait(&w->handed_cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
    while (w->list) {
        mfs_leasewait_entry *e = w->list;
        w->list = e->next;
        e->again(e, 1);
    }
    pthread_cond_destroy(&w->handed_cond);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

void mfs_leasewait_add(mfs_leasewait *w, mfs_leasewait_entry *e)
{
    clock_gettime(CLOCK_MONOTONIC, &e->due);
    add_ms(&e->due, FIRST_MS);
    e->delay_ms = FIRST_MS * 2;
    pthread_mutex_lock(&w->lock);
    e->next = w->list;
    w->list = e;
    w->waiting++;
    w->total++;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

void mfs_leasewait_hand_begin(mfs_leasewait *w)
{
    pthread_mutex_lock(&w->lock);
    w->handed++;
    pthread_mutex_unlock(&w->lock);
}

void mfs_leasewait_hand_end(mfs_leasewait *w)
{
    pthread_mutex_lock(&w->lock);
    if (--w->handed == 0)
        pthread_cond_broadcast(&w->handed_cond);
    pthread_mutex_unlock(&w->lock);
}

void mfs_leasewait_counts(mfs_leasewait *w, uint64_t *total, size_t *now)
{
    if (!w) {
        *total = 0;
        *now = 0;
        return;
    }
    pthread_mutex_lock(&w->lock);
    *total = w->total;
    *now = w->waiting;
    pthread_mutex_unlock(&w->lock);
}

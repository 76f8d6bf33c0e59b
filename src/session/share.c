/* Each user's share of the request threads (share.h).
 *
 * The table holds only users with a request running, a handful at a time,
 * so a list does.  A user's entry lives while any of its requests runs:
 * whoever queues sees running >= cap >= 1, and the last running thread
 * empties the queue before it lets the entry go, so no queued request is
 * ever left without a thread to run it. */
#include <pthread.h>
#include <stdlib.h>

#include "share.h"

typedef struct share_user {
    struct share_user *next;
    uid_t uid;
    unsigned running;
    mfs_share_job *head, *tail; /* queued, oldest first */
} share_user;

struct mfs_share {
    pthread_mutex_t lock;
    unsigned cap;
    share_user *users;
    uint64_t queued;
};

mfs_share *mfs_share_new(unsigned cap)
{
    mfs_share *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->cap = cap ? cap : 1;
    return s;
}

void mfs_share_free(mfs_share *s)
{
    if (!s)
        return;
    while (s->users) { /* only if a thread died mid-request */
        share_user *u = s->users;
        s->users = u->next;
        free(u);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

unsigned mfs_share_cap(const mfs_share *s)
{
    return s->cap;
}

uint64_t mfs_share_queued(mfs_share *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->queued;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static share_user *user_of(mfs_share *s, uid_t uid)
{
    for (share_user *u = s->users; u; u = u->next)
        if (u->uid == uid)
            return u;
    share_user *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->uid = uid;
    u->next = s->users;
    s->users = u;
    return u;
}

static void user_drop(mfs_share *s, share_user *u)
{
    for (share_user **pp = &s->users; *pp; pp = &(*pp)->next)
        if (*pp == u) {
            *pp = u->next;
            free(u);
            return;
        }
}

void mfs_share_run(mfs_share *s, mfs_share_job *job)
{
    pthread_mutex_lock(&s->lock);
    share_user *u = user_of(s, job->uid);
    if (!u) {
        pthread_mutex_unlock(&s->lock);
        job->run(job);
        return;
    }
    if (u->running >= s->cap) {
        job->next = NULL;
        if (u->tail)
            u->tail->next = job;
        else
            u->head = job;
        u->tail = job;
        s->queued++;
        pthread_mutex_unlock(&s->lock);
        return;
    }
    u->running++;
    while (job) {
        pthread_mutex_unlock(&s->lock);
        job->run(job);
        pthread_mutex_lock(&s->lock);
        if ((job = u->head) != NULL && !(u->head = job->next))
            u->tail = NULL;
    }
    if (--u->running == 0)
        user_drop(s, u);
    pthread_mutex_unlock(&s->lock);
}

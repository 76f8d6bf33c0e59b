/* Handles the kernel holds (held.h). */
#include "held.h"

#include <stddef.h>

void mfs_held_add(mfs_held_list *l, mfs_held *n)
{
    pthread_mutex_lock(&l->lock);
    n->prev = NULL;
    n->next = l->head;
    if (l->head)
        l->head->prev = n;
    l->head = n;
    pthread_mutex_unlock(&l->lock);
}

void mfs_held_remove(mfs_held_list *l, mfs_held *n)
{
    pthread_mutex_lock(&l->lock);
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    pthread_mutex_unlock(&l->lock);
}

int mfs_held_visit(mfs_held_list *l, int (*fn)(mfs_held *, void *), void *arg)
{
    int rc = 0;
    pthread_mutex_lock(&l->lock);
    for (mfs_held *n = l->head; n && !rc; n = n->next)
        rc = fn(n, arg);
    pthread_mutex_unlock(&l->lock);
    return rc;
}

void mfs_held_free_all(mfs_held_list *l, void (*free_one)(mfs_held *))
{
    pthread_mutex_lock(&l->lock);
    mfs_held *n = l->head;
    l->head = NULL;
    pthread_mutex_unlock(&l->lock);
    while (n) {
        mfs_held *next = n->next;
        free_one(n);
        n = next;
    }
}

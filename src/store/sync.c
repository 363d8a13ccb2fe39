/*
 * sync.c - the run store's source syncer: the fsyncs that make a new RUN/src file
 * durable (its bytes, then the directory's entry), off the thread that wrote it.
 *
 * kf_store_put_source writes a text under a temporary name and renames it; the file is
 * then whole for every reader and survives a killed process (the page cache keeps it),
 * and only a power cut could still lose it. Syncing it took the coordinator's main
 * thread 1.8-8.2 ms per source on a shared disk (BENCHMARKS.md, coordinator overhead),
 * before the evaluation it proposed could start. Here the name is handed to a thread of
 * the syncer that fsyncs each file handed over since its last round, then the directory
 * once for all of them (one directory fsync covers every earlier entry), while the
 * evaluation runs; the store waits for a source's round (kf_store_sync_wait) before it
 * commits an outcome that names it, so the rule stays: no outcome is recorded for a text
 * that is not on disk. The wait is normally none: an evaluation takes far longer.
 *
 * Data: every name handed over, in a table that only grows (one entry per distinct
 * source of the process's run, about 100 bytes each), with the generation asked for and
 * the one synced, and the queue of names waiting for a round. One mutex, two condition
 * variables (work for the thread, done for the waiters).
 *
 * Guarantees: a failed step (open, fsync, close, the directory's fsync) is kept as the
 * name's error for the syncer's life, never retried: after a failed write-back Linux may
 * mark the pages clean, and a second fsync succeed with the bytes lost. A thread that
 * cannot start, or a table that cannot grow, makes the caller sync in its own thread, as
 * before the syncer: slower, never less durable; so does a forked child of its process,
 * which has no thread (but must not use a store whose lock the thread held at the fork).
 * Freeing syncs what is still queued.
 *
 * It does not know rows, nodes or SQLite: the store decides what must wait.
 */
#define _GNU_SOURCE
#include "sync.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_MAX_ 80 /* <sha256>.<ext>: 64 + 1 + 7, and the NUL */
#define BATCH 64     /* names per round (a round's items live on the thread's stack) */
#define FDS_MAX 64   /* descriptors kept open for the thread; past it, names are reopened */

typedef struct {
    char name[NAME_MAX_];
    int fd;           /* handed over and not taken by a round yet; -1: none */
    unsigned want;    /* the generation asked for: one per hand-over */
    unsigned done;    /* the generation a round made durable */
    int queued;       /* in the queue */
    int err;          /* a failed step: final */
    const char *what; /* its name */
} entry;

typedef struct {
    size_t idx;
    unsigned gen;
    int fd, err;
    const char *what;
    char name[NAME_MAX_];
} item;

struct kf_store_syncer {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    int dirfd;
    entry *e;
    size_t n, cap;
    size_t *slot; /* open addressing: index + 1, 0 empty */
    size_t nslot;
    size_t *queue;
    size_t nq, qcap;
    size_t nfd;
    int started, alone, quit; /* alone: no thread; callers run the rounds */
    pthread_t th;
    pid_t pid; /* the thread's process: a forked child has no thread */
};

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The index of name, or (size_t)-1. */
static size_t find(const kf_store_syncer *y, const char *name) {
    if (!y->nslot) return (size_t)-1;
    for (size_t i = name_hash(name) & (y->nslot - 1);; i = (i + 1) & (y->nslot - 1)) {
        if (!y->slot[i]) return (size_t)-1;
        if (!strcmp(y->e[y->slot[i] - 1].name, name)) return y->slot[i] - 1;
    }
}

static int rehash(kf_store_syncer *y, size_t nslot) {
    size_t *s = calloc(nslot, sizeof *s);
    if (!s) return -1;
    for (size_t k = 0; k < y->n; k++) {
        size_t i = name_hash(y->e[k].name) & (nslot - 1);
        while (s[i]) i = (i + 1) & (nslot - 1);
        s[i] = k + 1;
    }
    free(y->slot);
    y->slot = s;
    y->nslot = nslot;
    return 0;
}

/* The index of name, added when new (with room in the queue for it); (size_t)-1 when
 * out of memory. */
static size_t find_add(kf_store_syncer *y, const char *name) {
    size_t k = find(y, name);
    if (k != (size_t)-1) return k;
    if (strlen(name) >= NAME_MAX_) return (size_t)-1;
    if (y->n == y->cap) {
        size_t cap = y->cap ? 2 * y->cap : 64;
        entry *e = realloc(y->e, cap * sizeof *e);
        if (!e) return (size_t)-1;
        y->e = e;
        y->cap = cap;
    }
    if (y->qcap < y->cap) {
        size_t *q = realloc(y->queue, y->cap * sizeof *q);
        if (!q) return (size_t)-1;
        y->queue = q;
        y->qcap = y->cap;
    }
    if (2 * (y->n + 1) > y->nslot && rehash(y, y->nslot ? 2 * y->nslot : 128)) return (size_t)-1;
    entry *e = &y->e[y->n];
    memset(e, 0, sizeof *e);
    e->fd = -1;
    memcpy(e->name, name, strlen(name) + 1); /* length checked above */
    size_t i = name_hash(name) & (y->nslot - 1);
    while (y->slot[i]) i = (i + 1) & (y->nslot - 1);
    y->slot[i] = y->n + 1;
    return y->n++;
}

/* One file's sync: its descriptor (or name) fsynced and closed. */
static void sync_file(int dirfd, item *it) {
    int fd = it->fd >= 0 ? it->fd : openat(dirfd, it->name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        it->err = errno, it->what = "open";
        return;
    }
    if (fsync(fd)) it->err = errno, it->what = "fsync";
    if (close(fd) && !it->err) it->err = errno, it->what = "close";
}

/* A round, under the lock: up to BATCH queued names taken, synced without the lock (each
 * file, then the directory once), their results recorded, the waiters woken. */
static void round_locked(kf_store_syncer *y) {
    item its[BATCH];
    size_t n = y->nq < BATCH ? y->nq : BATCH;
    for (size_t k = 0; k < n; k++) {
        entry *e = &y->e[y->queue[k]];
        its[k] = (item){.idx = y->queue[k], .gen = e->want, .fd = e->fd};
        memcpy(its[k].name, e->name, NAME_MAX_);
        if (e->fd >= 0) y->nfd--;
        e->fd = -1;
        e->queued = 0;
    }
    memmove(y->queue, y->queue + n, (y->nq - n) * sizeof *y->queue);
    y->nq -= n;
    pthread_mutex_unlock(&y->mu);
    int any = 0;
    for (size_t k = 0; k < n; k++) {
        sync_file(y->dirfd, &its[k]);
        any |= !its[k].err;
    }
    /* every entry renamed before this fsync is in it */
    int derr = any && fsync(y->dirfd) ? errno : 0;
    pthread_mutex_lock(&y->mu);
    for (size_t k = 0; k < n; k++) {
        entry *e = &y->e[its[k].idx];
        int err = its[k].err ? its[k].err : derr;
        if (err && !e->err) e->err = err, e->what = its[k].err ? its[k].what : "fsync of the directory";
        if (!err && its[k].gen > e->done) e->done = its[k].gen;
    }
    pthread_cond_broadcast(&y->done);
}

static void *syncer_main(void *arg) {
    kf_store_syncer *y = arg;
    pthread_mutex_lock(&y->mu);
    for (;;) {
        while (!y->nq && !y->quit) pthread_cond_wait(&y->work, &y->mu);
        if (!y->nq) break;
        round_locked(y);
    }
    pthread_mutex_unlock(&y->mu);
    return NULL;
}

kf_store_syncer *kf_store_sync_new(int dirfd) {
    kf_store_syncer *y = calloc(1, sizeof *y);
    if (!y) return NULL;
    if ((y->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0) {
        free(y);
        return NULL;
    }
    pthread_mutex_init(&y->mu, NULL);
    pthread_cond_init(&y->work, NULL);
    pthread_cond_init(&y->done, NULL);
    return y;
}

/* name queued (generation want + 1) with fd, under the lock; its index, or (size_t)-1
 * when the table cannot grow (fd is then still the caller's). */
static size_t enqueue_locked(kf_store_syncer *y, const char *name, int fd) {
    size_t k = find_add(y, name);
    if (k == (size_t)-1) return k;
    entry *e = &y->e[k];
    e->want++;
    if (fd >= 0) {
        if (e->fd >= 0) { /* a replaced file's old descriptor: the new bytes are what count */
            close(e->fd);
            y->nfd--;
        }
        if (y->nfd < FDS_MAX) {
            e->fd = fd;
            y->nfd++;
        } else {
            close(fd);
            e->fd = -1;
        }
    }
    if (!e->queued) {
        y->queue[y->nq++] = k;
        e->queued = 1;
    }
    if (y->started && y->pid != getpid()) y->started = 0, y->alone = 1;
    if (!y->started && !y->alone) {
        if (pthread_create(&y->th, NULL, syncer_main, y)) y->alone = 1;
        else y->started = 1, y->pid = getpid();
    }
    if (y->started) pthread_cond_signal(&y->work);
    return k;
}

/* Block until entry k reaches generation gen or fails (under the lock); its error. */
static int wait_locked(kf_store_syncer *y, size_t k, unsigned gen, const char **what) {
    if (y->started && y->pid != getpid()) y->started = 0, y->alone = 1;
    while (!y->e[k].err && y->e[k].done < gen) {
        if (y->alone && y->nq) round_locked(y);
        else pthread_cond_wait(&y->done, &y->mu); /* the thread's round, or another caller's */
    }
    *what = y->e[k].what;
    return y->e[k].err;
}

int kf_store_sync_put(kf_store_syncer *y, const char *name, int fd, const char **what) {
    pthread_mutex_lock(&y->mu);
    size_t k = enqueue_locked(y, name, fd);
    int err = 0;
    if (k == (size_t)-1) { /* no room to remember it: synced here and now */
        pthread_mutex_unlock(&y->mu);
        item it = {.fd = fd};
        snprintf(it.name, sizeof it.name, "%s", name);
        sync_file(y->dirfd, &it);
        if (!it.err && fsync(y->dirfd)) it.err = errno, it.what = "fsync of the directory";
        *what = it.what;
        return it.err;
    }
    if (y->alone) err = wait_locked(y, k, y->e[k].want, what);
    pthread_mutex_unlock(&y->mu);
    return err;
}

int kf_store_sync_wait(kf_store_syncer *y, const char *name, const char **what) {
    pthread_mutex_lock(&y->mu);
    size_t k = find(y, name);
    if (k == (size_t)-1 && (k = enqueue_locked(y, name, -1)) == (size_t)-1) {
        pthread_mutex_unlock(&y->mu);
        item it = {.fd = -1};
        snprintf(it.name, sizeof it.name, "%s", name);
        sync_file(y->dirfd, &it);
        if (!it.err && fsync(y->dirfd)) it.err = errno, it.what = "fsync of the directory";
        *what = it.what;
        return it.err;
    }
    int err = wait_locked(y, k, y->e[k].want, what);
    pthread_mutex_unlock(&y->mu);
    return err;
}

void kf_store_sync_free(kf_store_syncer *y) {
    if (!y) return;
    pthread_mutex_lock(&y->mu);
    y->quit = 1;
    pthread_cond_signal(&y->work);
    pthread_mutex_unlock(&y->mu);
    if (y->started && y->pid == getpid()) pthread_join(y->th, NULL);
    pthread_mutex_lock(&y->mu);
    while (y->nq) round_locked(y); /* a syncer without its thread */
    pthread_mutex_unlock(&y->mu);
    close(y->dirfd);
    free(y->e);
    free(y->slot);
    free(y->queue);
    pthread_cond_destroy(&y->work);
    pthread_cond_destroy(&y->done);
    pthread_mutex_destroy(&y->mu);
    free(y);
}

/*
 * sync.h - the run store's source syncer (sync.c): the fsyncs of RUN/src's new files and
 * of the directory, done by a thread of their own, waited for before a row records an
 * outcome naming the file (docs/run.md "The run store", Crash safety).
 *
 * Internal to the store: one syncer per kf_store_open or create, shared by its peers
 * (kf_store_open_peer); every function is safe from any thread.
 */
#ifndef KF_STORE_SYNC_H
#define KF_STORE_SYNC_H

typedef struct kf_store_syncer kf_store_syncer;

/* A syncer for the directory dirfd (duplicated: the caller keeps its own). NULL when out
 * of memory or out of descriptors. No thread starts before the first file. */
kf_store_syncer *kf_store_sync_new(int dirfd);
/* Hand over name (a file of the directory, already under its final name) and fd, a
 * descriptor of it that the syncer closes (-1: it opens name itself): its bytes and its
 * directory entry are made durable, on the syncer's thread. A name handed over before is
 * synced again (its file may have been replaced). 0; or, when the thread cannot start
 * and the sync ran here and failed, the errno with *what ("fsync", "open", ...). */
int kf_store_sync_put(kf_store_syncer *y, const char *name, int fd, const char **what);
/* Wait until everything handed over for name is durable: 0, or the errno of the step
 * that failed (*what names it). A name this syncer has not seen (a file an earlier
 * process wrote) is synced first. A failure is final for the syncer's life: a later
 * fsync of a file whose write-back failed may succeed without its bytes on disk. */
int kf_store_sync_wait(kf_store_syncer *y, const char *name, const char **what);
/* Sync everything still pending, stop the thread and free; accepts NULL. */
void kf_store_sync_free(kf_store_syncer *y);

#endif

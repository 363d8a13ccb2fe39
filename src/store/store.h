/*
 * store.h - the run store: one run of the optimisation loop as a directory (docs/run.md).
 *
 *     RUN/run.db                 SQLite (WAL, synchronous=NORMAL, foreign keys on)
 *     RUN/src/<sha256>.<ext>     every candidate text, content-addressed
 *
 * Guarantees: a source file is whole under its name (tmp + rename) before a node can
 * refer to it, and on disk (its fsync and the directory's, on the store's syncer thread)
 * before an outcome that names it is committed; a node's outcome is written in one
 * transaction; a
 * process killed at any moment leaves a database that passes `PRAGMA integrity_check`,
 * with every recorded outcome intact and every unrecorded one listed by
 * kf_store_unfinished.
 *
 * Threads: a kf_store (one SQLite connection) and the kf_ctx it was opened with belong to
 * one thread at a time. Several threads or processes write the same run by opening a
 * kf_store each (each with its own kf_ctx); writes are short transactions that wait for
 * one another (busy timeout 5 s).
 */
#ifndef KF_STORE_H
#define KF_STORE_H

#include "../task/task.h"

#include <stdint.h>

#define KF_STORE_SCHEMA_VERSION 1

/* Node states. X(name, text): the text is what the database stores. */
#define KF_NODE_STATE_MAP(X)            \
    X(PROPOSED, "proposed")             \
    X(BUILT, "built")                   \
    X(COMPILE_FAILED, "compile_failed") \
    X(REJECTED, "rejected")             \
    X(MEASURED, "measured")             \
    X(KEPT, "kept")                     \
    X(REVERTED, "reverted")             \
    X(CRASHED, "crashed")               \
    X(PRUNED, "pruned")                 \
    X(NO_CANDIDATE, "no_candidate")     \
    X(SCREENED, "screened")

// clang-format off
typedef enum {
#define KF_X(n, s) KF_NODE_##n,
    KF_NODE_STATE_MAP(KF_X)
#undef KF_X
    KF_NODE_STATE_COUNT
} kf_node_state;
// clang-format on

/* "proposed", ... or "unknown" */
const char *kf_node_state_name(kf_node_state s);
/* 0 and *out set, or -1 for a name that is not a state. */
int kf_node_state_parse(const char *name, kf_node_state *out);
/* 1 for the states whose outcome is not recorded yet (proposed, built): resume evaluates
 * such a node again. */
int kf_node_state_unfinished(kf_node_state s);

typedef struct kf_store kf_store;

typedef struct {
    int64_t id, parent;        /* parent 0: the root (the reference) */
    char src_hash[65], ext[8]; /* the text is RUN/src/<src_hash>.<ext> */
    char proposer[32], category[32];
    kf_node_state state;
    char *params_json;  /* {"BLOCK": 256} or NULL */
    char *reasons;      /* "wrong_result,timeout" or NULL */
    char *verdict_json; /* the check's JSON, as `kforge check --json` prints it */
    char *shapes_json;  /* per visible shape: sizes, speedup, ci95, win, ns */
    double speedup;     /* geometric mean over visible shapes, 0 if none */
    double cost_s;      /* wall seconds of proposing + evaluating */
    int64_t tokens_in, tokens_out;
    int64_t review_tokens;    /* not stored: this evaluation's advisory review (part of tokens_in) */
    double created, finished; /* Unix seconds; finished 0 while unfinished */
    char *note;
    int tampered; /* not stored: read as rejected, its row did not match its seal */
} kf_node;

/* A constraint learnt from a failure (docs/run.md). scope 0: the whole run; N > 0: the
 * children of node N. */
typedef struct {
    int64_t id, node, scope;                      /* node 0: not learnt at a node */
    const char *category, *text, *predicate_json; /* category, predicate_json may be NULL */
    double created;
} kf_constraint;

/* Create a new run in dir (made if missing; it must not hold a run already) for task,
 * locking the task's fingerprint. config_json (may be NULL) is kept as given, for resume.
 * KF_EUSAGE when dir already holds a run, KF_EIO with the path and the system's or
 * SQLite's message otherwise. On KF_OK *out is the caller's: kf_store_close. ctx must
 * outlive the store; errors of later calls are set on it. */
kf_status kf_store_create(kf_ctx *ctx, const char *dir, const kf_task *task, const char *config_json,
                          kf_store **out);
/* 1 when kf_store_create found dir holding an interrupted creation (an empty run.db, as
 * an older kforge killed while creating left it) and replaced it. Creation itself is
 * atomic: the database is built under a temporary name and published whole. */
int kf_store_replaced(const kf_store *s);
/* Open an existing run (resume). An older schema is migrated (one transaction); a newer
 * one is refused (KF_EIO). With a task, its fingerprint must be the run's: KF_ETASK
 * "RUN: the task changed since this run started (fingerprint A, now B)" otherwise. task
 * NULL skips that check (reading a run: tree, best). Temporary files in RUN/src left by a
 * writer that was killed are removed. */
kf_status kf_store_open(kf_ctx *ctx, const char *dir, const kf_task *task, kf_store **out);
/* Another connection to main's run, for a thread of the same process (--jobs
 * evaluators): what kf_store_open read and checked is main's (the schema, the run's row
 * and its seal, the task's fingerprint, the key), so only the connection is opened,
 * which costs a fraction of an open (64 evaluators reopened and rechecked everything).
 * main must stay open while the new store is used from its own thread. */
kf_status kf_store_open_peer(kf_ctx *ctx, const kf_store *main, kf_store **out);
void kf_store_close(kf_store *s); /* accepts NULL */

/* The fingerprint of the task's files as they are on disk now: SHA-256 over task.json,
 * a NUL byte and the reference's text (the value kf_task_load computes, so it matches
 * the "fingerprint" of every verdict). A task names no other files today; when it does,
 * they are appended here. KF_ETASK when the files differ from what task was loaded
 * from; KF_EIO when one cannot be read. */
kf_status kf_store_fingerprint(kf_ctx *ctx, const kf_task *task, char hex[65]);

/* The run's directory, task directory (as given at create), fingerprint and config
 * (NULL when none); owned by the store. */
const char *kf_store_dir(const kf_store *s);
const char *kf_store_task_dir(const kf_store *s);
const char *kf_store_task_fingerprint(const kf_store *s);
const char *kf_store_config(const kf_store *s);
/* runs.status: "running" from create; the loop sets "done", "stopped", ... */
kf_status kf_store_set_status(kf_store *s, const char *status);

/* Store a candidate text as RUN/src/<sha256>.<ext> (ext: 1-7 of [a-z0-9], e.g. "c",
 * "cu"); hash receives the hex SHA-256. Idempotent: an existing file is kept. Returns
 * once the file is whole under its name; its fsyncs (the file's, RUN/src's) are the
 * store's syncer thread's, and kf_store_finish_node waits for them. */
kf_status kf_store_put_source(kf_store *s, const char *text, size_t len, const char *ext, char hash[65]);
/* Read a stored text back, verifying its hash (KF_EIO when it does not match). The
 * caller frees *text (NUL-terminated; *len excludes the NUL). */
kf_status kf_store_read_source(kf_store *s, const char *hash, const char *ext, char **text, size_t *len);

/* Insert n as a proposed node: parent, src_hash/ext (the source must have been stored),
 * params_json, proposer, category, cost_s, tokens, note, created (0: now). Sets n->id,
 * n->state = KF_NODE_PROPOSED and n->created. KF_EUSAGE for a missing source or an
 * unknown parent. */
kf_status kf_store_add_node(kf_store *s, kf_node *n);
/* Record node n->id's evaluation in one transaction: state, reasons, verdict_json,
 * shapes_json, speedup, cost_s, tokens_in/out, note, finished (0: now; stays unset for
 * an unfinished state). May be called again (the Critic turns measured into kept or
 * reverted). KF_EUSAGE for an unknown node. A finished state first waits until the
 * node's source is on disk (kf_store_put_source): KF_EIO naming the failed fsync, and
 * nothing recorded, when it could not be synced (for good in this process). */
kf_status kf_store_finish_node(kf_store *s, const kf_node *n);
/* Read node id into *out (strings are the caller's: kf_node_free). KF_EUSAGE when there
 * is no such node. */
kf_status kf_store_get_node(kf_store *s, int64_t id, kf_node *out);
/* Call fn for every node in id order (a parent before its children) until it returns
 * non-zero. The node and its strings are borrowed: valid during the call only. */
kf_status kf_store_each_node(kf_store *s, int (*fn)(void *arg, const kf_node *n), void *arg);
/* The ids of the nodes resume must evaluate again (state proposed or built), ascending.
 * *ids (NULL when *n is 0) is the caller's: free(). */
kf_status kf_store_unfinished(kf_store *s, int64_t **ids, size_t *n);
/* Frees the strings of a node filled by kf_store_get_node (not the struct); NULL ok. */
void kf_node_free(kf_node *n);

/* scope: 0 the run, else a node id (its children). node 0: none. category and
 * predicate_json may be NULL. */
kf_status kf_store_add_constraint(kf_store *s, int64_t node, int64_t scope, const char *category,
                                  const char *text, const char *predicate_json);
/* Call fn for every constraint in id order; borrowed as in kf_store_each_node. */
kf_status kf_store_each_constraint(kf_store *s, int (*fn)(void *arg, const kf_constraint *c), void *arg);
kf_status kf_store_savepoint(kf_store *s, int64_t node, const char *label);
/* Append to the event log. node 0: a run-wide event. json may be NULL. */
kf_status kf_store_event(kf_store *s, int64_t node, const char *kind, const char *json);
/* Call fn for every event of this kind (NULL: all) in id order, with its id, node (0:
 * run-wide), json (NULL when none; borrowed for the call) and time; a non-zero return
 * stops. Not from inside another store callback. */
kf_status kf_store_each_event(kf_store *s, const char *kind,
                              int (*fn)(void *arg, int64_t id, int64_t node, const char *json,
                                        double created),
                              void *arg);

/* Seals (docs/run.md "Seals"): every finished node of a run carries an HMAC of its
 * outcome and identity under a key kept outside the run directory, in
 * kf_store_keys_dir: $KFORGE_KEYS, else $XDG_DATA_HOME/kforge/keys, else
 * ~/.local/share/kforge/keys. A node whose row does not match is read (get_node,
 * each_node) as rejected with reasons "tampered" and tampered = 1; an event that does
 * not match is skipped by kf_store_each_event. A run.db holding a trigger or view is
 * refused at open. The run's state:
 * "sealed", "tampered" (the run's own row does not match), "unsealed" (made before
 * seals, or its key id removed: nothing is verified) or "key missing" (not verified). */
void kf_store_keys_dir(char *out, size_t n);
const char *kf_store_seal_state(const kf_store *s);
/* The key file's path (NULL for an unsealed run). */
const char *kf_store_key_path(const kf_store *s);
/* The run's key id: 32 hex digits, random per run, the same in every copy of the run
 * directory (NULL for an unsealed run). What names a run across paths and copies. */
const char *kf_store_key_id(const kf_store *s);
/* The ids of the nodes read as tampered, ascending (*ids NULL when *n is 0; the
 * caller's: free()). */
kf_status kf_store_tampered(kf_store *s, int64_t **ids, size_t *n);

/* A seal over bytes under a run key of its own, for a record kept beside a run.db (a
 * system run's system.json, docs/system.md "The record"): key_id "" makes a new key (as a
 * new run's, in kf_store_keys_dir) and writes its id there, else the named key is read.
 * mac: 64 hex digits of HMAC-SHA256 over a fixed tag and the bytes. Errors on ctx. */
kf_status kf_store_seal_bytes(kf_ctx *ctx, char key_id[33], const void *p, size_t n, char mac[65]);
/* Check bytes against their seal: *state "sealed", "tampered" or "key missing"; the key's
 * path into key_path (n bytes). KF_EIO with the message for an unreadable key file. */
kf_status kf_store_check_bytes(kf_ctx *ctx, const char *key_id, const void *p, size_t n, const char *mac,
                               const char **state, char *key_path, size_t kn);

/* How many events do not match their seal (or belong to no run of this database):
 * kf_store_each_event skips them. */
kf_status kf_store_tampered_events(kf_store *s, int64_t *n);

/* Rows missing below the highest id (kforge numbers nodes and events 1, 2, 3... and
 * deletes none): nodes and events deleted by hand. The last rows' deletion leaves no gap. */
kf_status kf_store_gaps(kf_store *s, int64_t *nodes, int64_t *events);

/* PRAGMA integrity_check: KF_OK, or KF_EIO with SQLite's first complaint. */
kf_status kf_store_check(kf_store *s);

/* The writer's lock of a run directory (docs/run.md "One writer at a time"): RUN/lock,
 * an open-file-description lock (fcntl F_OFD_SETLK) that the kernel drops when its holder
 * exits or is killed, so no lock outlives its process. The file holds the holder's pid,
 * host, start time and command, for the message others get. The descriptor is
 * close-on-exec: no compiler, worker or agent holds it. */
typedef struct kf_store_lock kf_store_lock;
enum {
    KF_STORE_LOCK_CREATE = 1, /* make dir when it is missing (a new run) */
    KF_STORE_LOCK_QUEUE = 2   /* tool mode: wait while another queueing command holds it; the
                                 writer's byte only, so kf_store_lock_evaluate can hand it on */
};
#define KF_STORE_LOCK_QUEUE_S 600.0 /* the longest a queueing command waits */
/* Take dir's lock for `command` ("run", "submit", ...). KF_OK and *out (the caller's:
 * kf_store_unlock); KF_EBUSY when another writer holds it, with "RUN is in use by kforge
 * CMD (pid N on HOST since TIME)"; KF_EIO when dir or the lock file cannot be made or
 * opened. It does not wait for a live holder, except that with KF_STORE_LOCK_QUEUE it
 * waits (up to KF_STORE_LOCK_QUEUE_S) behind another command that took it with that flag;
 * a holder that is gone (its children, between fork and exec, still hold the lock) is
 * waited for up to 2 s, and one that has not written its line yet up to 1 s. */
kf_status kf_store_lock_take(kf_ctx *ctx, const char *dir, const char *command, unsigned flags,
                             kf_store_lock **out);
/* Tool mode's evaluation of node without the writer's turn (docs/run.md "One writer at
 * a time"): l, a KF_STORE_LOCK_QUEUE lock held, becomes a shared hold on the run that
 * excludes `kforge run` and `--resume` (their take fails, KF_EBUSY, naming the
 * evaluations) but lets other tool-mode commands take their turns and evaluate too, and
 * an exclusive one on node (kf_store_lock_evaluating). Store writes made meanwhile are
 * SQLite's transactions, one writer at a time. KF_EUSAGE for another lock, KF_EIO. */
kf_status kf_store_lock_evaluate(kf_ctx *ctx, kf_store_lock *l, int64_t node);
/* 1 when another live command is evaluating node of l's run (kf_store_lock_evaluate); 0
 * for a node no one is evaluating, such as one a killed submit left unfinished. */
int kf_store_lock_evaluating(const kf_store_lock *l, int64_t node);
/* The writer's turn again for l after kf_store_lock_evaluate (waiting as
 * kf_store_lock_take does with KF_STORE_LOCK_QUEUE); KF_OK at once when l holds it. */
kf_status kf_store_lock_resume(kf_ctx *ctx, kf_store_lock *l);
void kf_store_unlock(kf_store_lock *l); /* accepts NULL */

/* Tests only: replace the migrations (steps[i] takes schema version i to i + 1) with
 * n given steps; NULL restores kforge's own. Not thread-safe. */
void kf_store__set_migrations(const char *const *steps, int n);

#endif

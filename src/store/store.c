/*
 * store.c - the run store: a run directory holding run.db (SQLite) and the candidate
 * sources it refers to (docs/run.md, "The run store").
 *
 * A kf_store is one SQLite connection with its statements prepared once, the run's row
 * (id, task fingerprint, config) and an open descriptor of RUN/src.
 *
 * Guarantees:
 *  - WAL journal, synchronous=NORMAL: a killed process loses nothing it committed and
 *    never leaves a damaged database (a power cut may lose the last commits, not
 *    consistency). Foreign keys are on: a node's parent exists.
 *  - A source is written tmp + rename before add_node accepts a node naming it (add_node
 *    checks that the file is there): whole for every reader, and past a kill. Its fsync
 *    and RUN/src's run on the syncer's thread (sync.c), shared with the store's peers;
 *    an outcome naming it (finish_node of a finished state) waits for them first, and
 *    fails with KF_EIO, recording nothing, when one failed. A proposed row may reach the
 *    disk before its text does; only a power cut can then lose that text, and the node,
 *    unfinished, is evaluated again on resume (its unreadable text recorded as crashed).
 *  - Every change is one statement or one transaction: a node's outcome is one UPDATE;
 *    creating a run (schema + its row) and each migration are one transaction each.
 *  - The schema version is in meta; older databases are migrated forward in one
 *    transaction under a write lock (BEGIN IMMEDIATE), newer ones refused (the
 *    migration runner of util/db.h, which the lessons database uses too).
 *  - The writer's lock (RUN/lock): `kforge run` holds the whole file; tool-mode commands
 *    take byte 0 in turns and evaluate under a shared byte 1 (kf_store_lock_evaluate).
 *  - Concurrent writers (threads with a store each, or processes) wait for each other
 *    up to 5 s per statement; write transactions start IMMEDIATE, so a waiting writer
 *    never has to fail on a stale snapshot.
 *
 * It does not judge, schedule or interpret anything: the JSON columns are kept as given.
 */
#define _GNU_SOURCE
#include "store.h"
#include "sync.h"
#include "../util/db.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SRC_MAX (64u << 20) /* a candidate text larger than this is not a kernel */
#define TASK_FILE_MAX (64u << 20)

/* ---- schema ------------------------------------------------------------------- */

/* migrations[i] takes schema version i to i + 1; meta.schema_version is set after each.
 * Append only: a released step never changes. */
static const char *const builtin_migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, task_dir TEXT NOT NULL,"
    "  task_fingerprint TEXT NOT NULL, backend TEXT NOT NULL, config_json TEXT,"
    "  created REAL NOT NULL, status TEXT NOT NULL);"
    "CREATE TABLE nodes(id INTEGER PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id),"
    "  parent INTEGER REFERENCES nodes(id), src_hash TEXT NOT NULL, ext TEXT NOT NULL,"
    "  params_json TEXT, proposer TEXT NOT NULL, category TEXT NOT NULL,"
    "  state TEXT NOT NULL, reasons TEXT, verdict_json TEXT, shapes_json TEXT,"
    "  speedup REAL NOT NULL DEFAULT 0, cost_s REAL NOT NULL DEFAULT 0,"
    "  tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,"
    "  created REAL NOT NULL, finished REAL, note TEXT);"
    "CREATE INDEX nodes_parent ON nodes(parent);"
    "CREATE INDEX nodes_unfinished ON nodes(state) WHERE state IN ('proposed', 'built');"
    "CREATE TABLE constraints(id INTEGER PRIMARY KEY,"
    "  run INTEGER NOT NULL REFERENCES runs(id), node INTEGER REFERENCES nodes(id),"
    "  scope INTEGER REFERENCES nodes(id), category TEXT, text TEXT NOT NULL,"
    "  predicate_json TEXT, created REAL NOT NULL);"
    "CREATE TABLE savepoints(id INTEGER PRIMARY KEY,"
    "  run INTEGER NOT NULL REFERENCES runs(id), node INTEGER REFERENCES nodes(id),"
    "  label TEXT NOT NULL, created REAL NOT NULL);"
    "CREATE TABLE events(id INTEGER PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id),"
    "  node INTEGER REFERENCES nodes(id), kind TEXT NOT NULL, json TEXT,"
    "  created REAL NOT NULL);"
    "CREATE INDEX events_node ON events(node);",
    /* 1 -> 2: seals (docs/run.md "Seals"): the run's key id, its row's seal and counts,
     * each node's, event's and constraint's seal */
    "ALTER TABLE runs ADD COLUMN key_id TEXT;"
    "ALTER TABLE runs ADD COLUMN seal TEXT;"
    "ALTER TABLE runs ADD COLUMN nnodes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN nfinished INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN nevents INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN nconstraints INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE nodes ADD COLUMN seal TEXT;"
    "ALTER TABLE events ADD COLUMN seal TEXT;"
    "ALTER TABLE constraints ADD COLUMN seal TEXT;",
};

static const char *const *migrations = builtin_migrations;
static int nmigrations = (int)(sizeof builtin_migrations / sizeof builtin_migrations[0]);

void kf_store__set_migrations(const char *const *steps, int n) {
    if (steps) {
        migrations = steps;
        nmigrations = n;
    } else {
        migrations = builtin_migrations;
        nmigrations = (int)(sizeof builtin_migrations / sizeof builtin_migrations[0]);
    }
}

#define NODE_COLS                                                                  \
    "id, parent, src_hash, ext, params_json, proposer, category, state, reasons,"  \
    " verdict_json, shapes_json, speedup, cost_s, tokens_in, tokens_out, created," \
    " finished, note, seal"

/* The seals (docs/run.md "Seals"), computed by kf_mac over the row as stored: the same
 * expression writes a seal and checks it, so nothing depends on how a value was bound. */
#define NODE_MAC                                                                        \
    "kf_mac('node', id, parent, src_hash, ext, params_json, proposer, category, state," \
    " reasons, verdict_json, shapes_json, speedup, cost_s, tokens_in, tokens_out,"      \
    " created, finished, note)"
#define EVENT_MAC "kf_mac('event', id, node, kind, json, created)"
#define CONS_MAC "kf_mac('constraint', id, node, scope, category, text, predicate_json, created)"
#define RUN_MAC                                                                            \
    "kf_mac('run', id, task_fingerprint, backend, key_id, config_json, nnodes, nfinished," \
    " nevents, nconstraints)"
#define FINISHED "state NOT IN ('proposed', 'built')"

enum {
    Q_ADD,
    Q_FINISH,
    Q_GET,
    Q_EACH,
    Q_UNFINISHED,
    Q_CONSTRAINT,
    Q_EACH_CONSTRAINT,
    Q_SAVEPOINT,
    Q_EVENT,
    Q_STATUS,
    Q_SEAL_NODE,
    Q_SEAL_EVENT,
    Q_SEAL_CONS,
    Q_RUN_COUNT,
    Q_SEAL_RUN,
    Q_NODE_NOW,
    Q_NODE_SRC,
    Q_COUNT
};

static const char *const queries[Q_COUNT] = {
    [Q_ADD] = "INSERT INTO nodes(run, parent, src_hash, ext, params_json, proposer, category,"
              " state, cost_s, tokens_in, tokens_out, created, note)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 'proposed', ?8, ?9, ?10, ?11, ?12)",
    /* the outcome goes on the row kforge evaluated, as sealed (when the caller names it:
     * ?13 = 1): a row changed meanwhile, or no longer matching its seal, is not updated */
    [Q_FINISH] = "UPDATE nodes SET state = ?1, reasons = ?2, verdict_json = ?3,"
                 " shapes_json = ?4, speedup = ?5, cost_s = ?6, tokens_in = ?7,"
                 " tokens_out = ?8, finished = ?9, note = coalesce(?10, note)"
                 " WHERE id = ?11 AND run = ?12 AND (?13 = 0 OR (src_hash = ?14 AND ext = ?15 AND"
                 " proposer = ?16 AND category = ?17 AND parent IS ?18 AND params_json IS ?19))"
                 " AND (?20 = 0 OR seal IS " NODE_MAC ")",
    [Q_GET] = "SELECT " NODE_COLS ", seal IS " NODE_MAC " FROM nodes WHERE id = ?1 AND run = ?2",
    [Q_EACH] = "SELECT " NODE_COLS ", seal IS " NODE_MAC " FROM nodes WHERE run = ?1 ORDER BY id",
    [Q_UNFINISHED] = "SELECT id FROM nodes WHERE state IN ('proposed', 'built') AND run = ?1"
                     " ORDER BY id",
    [Q_CONSTRAINT] = "INSERT INTO constraints(run, node, scope, category, text, predicate_json,"
                     " created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [Q_EACH_CONSTRAINT] = "SELECT id, node, scope, category, text, predicate_json, created,"
                          " seal IS " CONS_MAC " FROM constraints WHERE run = ?1 ORDER BY id",
    [Q_SAVEPOINT] = "INSERT INTO savepoints(run, node, label, created) VALUES(?1, ?2, ?3, ?4)",
    [Q_EVENT] = "INSERT INTO events(run, node, kind, json, created) VALUES(?1, ?2, ?3, ?4, ?5)",
    [Q_STATUS] = "UPDATE runs SET status = ?1 WHERE id = ?2",
    [Q_SEAL_NODE] = "UPDATE nodes SET seal = " NODE_MAC " WHERE id = ?1",
    [Q_SEAL_EVENT] = "UPDATE events SET seal = " EVENT_MAC " WHERE id = ?1",
    [Q_SEAL_CONS] = "UPDATE constraints SET seal = " CONS_MAC " WHERE id = ?1",
    /* the run's counts move with every write, and its seal with them (SET sees the old
     * row: the seal is computed by the next statement) */
    [Q_RUN_COUNT] =
        "UPDATE runs SET nnodes = nnodes + ?2, nfinished = nfinished + ?3, nevents = nevents + ?4,"
        " nconstraints = nconstraints + ?5 WHERE id = ?1",
    [Q_SEAL_RUN] = "UPDATE runs SET seal = " RUN_MAC " WHERE id = ?1",
    [Q_NODE_NOW] = "SELECT " FINISHED ", seal IS " NODE_MAC " FROM nodes WHERE id = ?1 AND run = ?2",
    [Q_NODE_SRC] = "SELECT src_hash, ext FROM nodes WHERE id = ?1 AND run = ?2",
};

struct kf_store {
    kf_ctx *ctx;
    sqlite3 *db;
    char *dir, *dbpath, *task_dir, *config;
    char fingerprint[65];
    int64_t run;
    int srcfd; /* RUN/src */
    kf_store_syncer *sync; /* its files' fsyncs (sync.c): this store's, or its main's for a peer */
    int own_sync;
    sqlite3_stmt *q[Q_COUNT];
    /* seals: key_id "" for a run made before seals; keyed once the key file was read */
    char key_id[33], key_path[4200];
    unsigned char key[32];
    int keyed;
    EVP_MAC_CTX *mac;      /* HMAC-SHA256 initialised with the key, duplicated per seal */
    int run_tampered;      /* the run's row (fingerprint, settings) does not match its seal */
    char tamper_note[512]; /* a borrowed row's note when its seal does not match */
    int replaced;          /* create: dir held an interrupted creation, now replaced */
};

static kf_status key_create(kf_store *s);
static kf_status key_load(kf_store *s);
static int mac_init(kf_store *s);
static void sql_mac(sqlite3_context *cx, int argc, sqlite3_value **v);

/* ---- node states ---------------------------------------------------------------- */

static const char *const state_names[] = {
#define KF_X(n, s) s,
    KF_NODE_STATE_MAP(KF_X)
#undef KF_X
};

const char *kf_node_state_name(kf_node_state s) {
    return (unsigned)s < KF_NODE_STATE_COUNT ? state_names[s] : "unknown";
}

int kf_node_state_parse(const char *name, kf_node_state *out) {
    for (int i = 0; name && i < KF_NODE_STATE_COUNT; i++)
        if (!strcmp(name, state_names[i])) {
            *out = (kf_node_state)i;
            return 0;
        }
    return -1;
}

int kf_node_state_unfinished(kf_node_state s) { return s == KF_NODE_PROPOSED || s == KF_NODE_BUILT; }

/* ---- helpers -------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static kf_status serr(kf_store *s, int rc, const char *what) {
    return kf_db_err(s->ctx, s->db, s->dbpath, rc, what);
}

static int is_hex64(const char *h) {
    if (!h || strlen(h) != 64) return 0;
    for (int i = 0; i < 64; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'))) return 0;
    return 1;
}

static int ext_ok(const char *e) {
    size_t n = e ? strlen(e) : 0;
    if (n < 1 || n > 7) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((e[i] >= 'a' && e[i] <= 'z') || (e[i] >= '0' && e[i] <= '9'))) return 0;
    return 1;
}

static int bind_text(sqlite3_stmt *q, int i, const char *t) {
    return t ? sqlite3_bind_text(q, i, t, -1, SQLITE_STATIC) : sqlite3_bind_null(q, i);
}

static int bind_id(sqlite3_stmt *q, int i, int64_t id) { /* 0: NULL */
    return id ? sqlite3_bind_int64(q, i, id) : sqlite3_bind_null(q, i);
}

/* Step a bound write statement once and reset it. */
static int step_done(sqlite3_stmt *q) {
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int exec1(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

/* ---- fingerprint ---------------------------------------------------------------- */

kf_status kf_store_fingerprint(kf_ctx *ctx, const kf_task *t, char hex[65]) {
    if (!t || !t->dir || !t->ref_path || !hex)
        return kf__err(ctx, KF_EUSAGE, "kf_store_fingerprint: NULL argument");
    char *path = kf__asprintf("%s/task.json", t->dir), *json = NULL, *ref = NULL;
    size_t jlen = 0, rlen = 0;
    kf_status st = KF_OK;
    if (!path) return kf__err(ctx, KF_ENOMEM, "out of memory");
    if (kf__read_file(path, TASK_FILE_MAX, &json, &jlen)) {
        st = kf__err(ctx, kf__io_status(errno), "%s: %s", path, strerror(errno));
        goto out;
    }
    if (kf__read_file(t->ref_path, TASK_FILE_MAX, &ref, &rlen)) {
        st = kf__err(ctx, kf__io_status(errno), "%s: %s", t->ref_path, strerror(errno));
        goto out;
    }
    /* the same bytes kf_task_load hashes: the run's fingerprint is the verdicts' */
    const void *parts[] = {json, "\0", ref};
    size_t lens[] = {jlen, 1, rlen};
    if (kf__sha256_hex(parts, lens, 3, hex)) {
        st = kf__err(ctx, KF_EINTERNAL, "sha256 failed");
        goto out;
    }
    if (t->fingerprint[0] && strcmp(hex, t->fingerprint))
        st = kf__err(ctx, KF_ETASK,
                     "%s: the task's files changed since it was loaded "
                     "(fingerprint %.12s, now %.12s)",
                     t->dir, t->fingerprint, hex);
out:
    free(path);
    free(json);
    free(ref);
    return st;
}

/* ---- open, create, close ----------------------------------------------------------- */

void kf_store_close(kf_store *s) {
    if (!s) return;
    for (int i = 0; i < Q_COUNT; i++) sqlite3_finalize(s->q[i]);
    if (s->db) sqlite3_close(s->db);
    if (s->own_sync) kf_store_sync_free(s->sync); /* what is still queued is synced first */
    if (s->srcfd >= 0) close(s->srcfd);
    OPENSSL_cleanse(s->key, sizeof s->key);
    EVP_MAC_CTX_free(s->mac);
    free(s->dir);
    free(s->dbpath);
    free(s->task_dir);
    free(s->config);
    free(s);
}

static kf_store *store_new(kf_ctx *ctx, const char *dir) {
    kf_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ctx = ctx;
    s->srcfd = -1;
    s->dir = kf__strdup(dir);
    s->dbpath = kf__asprintf("%s/run.db", dir);
    if (!s->dir || !s->dbpath) {
        kf_store_close(s);
        return NULL;
    }
    return s;
}

/* This build's schema, as the migration runner (util/db.h) takes it. */
static kf_db_schema schema(void) {
    return (kf_db_schema){migrations, nmigrations, "schema", "kforge run database",
                          "open the run with a newer kforge"};
}

/* Open the connection and set it up: WAL (persistent in the file, and required),
 * synchronous=NORMAL, foreign keys, the busy timeout. */
static kf_status db_open(kf_store *s) {
    return kf_db_open(s->ctx, s->dbpath, KF_DB_WAL, "PRAGMA foreign_keys=ON", &s->db);
}

static kf_status rollback(kf_store *s, kf_status st) {
    if (!sqlite3_get_autocommit(s->db)) exec1(s->db, "ROLLBACK");
    return st;
}

/* Bring an existing database to the current schema (open). */
static kf_status migrate(kf_store *s) {
    kf_db_schema sc = schema();
    int ver;
    kf_status st = kf_db_version(s->ctx, s->db, s->dbpath, &sc, &ver);
    if (st) return st;
    if (ver == 0)
        return kf__err(s->ctx, KF_EIO,
                       "%s: an empty database: no run was ever recorded here "
                       "(its creation was interrupted; `kforge run TASK --run %s` creates it again)",
                       s->dbpath, s->dir);
    return kf_db_migrate(s->ctx, s->db, s->dbpath, &sc);
}

/* kforge makes tables and indexes only. A trigger or view in run.db was planted: a trigger
 * fires inside kforge's own writes and could change a row between the evaluation and its
 * seal (tests/redteam/notes/seal S1), so such a database is refused. */
static kf_status no_planted(kf_store *s) {
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT type, name FROM sqlite_master WHERE type NOT IN ('table', 'index')"
                                " LIMIT 1",
                                -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    kf_status st = KF_OK;
    if (rc == SQLITE_ROW)
        st = kf__err(s->ctx, KF_EIO,
                     "%s: holds a %s \"%s\" that kforge did not make (run.db was changed outside "
                     "kforge): refused",
                     s->dbpath, (const char *)sqlite3_column_text(q, 0),
                     (const char *)sqlite3_column_text(q, 1));
    else if (rc != SQLITE_DONE) st = serr(s, rc, "reading the schema");
    sqlite3_finalize(q);
    return st;
}

/* kforge's connection: kf_mac (DIRECTONLY: no trigger or view can call it), and no
 * trigger or view runs at all, even one planted after this process checked the schema
 * (tests/redteam/notes/seal S1: checking at open alone is not enough). */
static kf_status seal_setup(kf_store *s) {
    int off = 0, rc = sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &off);
    if (!rc) rc = sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, &off);
    if (!rc)
        rc = sqlite3_create_function(s->db, "kf_mac", -1,
                                     SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, s, sql_mac, NULL,
                                     NULL);
    return rc ? serr(s, rc, "setting up the seals") : KF_OK;
}

static kf_status prepare_all(kf_store *s) {
    for (int i = 0; i < Q_COUNT; i++) {
        int rc = sqlite3_prepare_v3(s->db, queries[i], -1, SQLITE_PREPARE_PERSISTENT, &s->q[i], NULL);
        if (rc) return serr(s, rc, "preparing statements");
    }
    return KF_OK;
}

/* Remove RUN/src/.tmp-PID-* files whose writer is dead (killed between write and rename):
 * a live writer's file, in this process or another, is left alone. Best effort. */
static void sweep_tmp(kf_store *s) {
    int fd = dup(s->srcfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        if (strncmp(e->d_name, ".tmp-", 5) || sscanf(e->d_name + 5, "%ld-", &pid) != 1 || pid <= 0) continue;
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) unlinkat(s->srcfd, e->d_name, 0);
    }
    closedir(d);
}

static kf_status open_src(kf_store *s, int create) {
    char *src = kf__asprintf("%s/src", s->dir);
    if (!src) return kf__err(s->ctx, KF_ENOMEM, "out of memory");
    if (create && mkdir(src, 0755) < 0 && errno != EEXIST) {
        kf_status st = kf__err(s->ctx, KF_EIO, "%s: %s", src, strerror(errno));
        free(src);
        return st;
    }
    s->srcfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    kf_status st = s->srcfd < 0 ? kf__err(s->ctx, KF_EIO,
                                          "%s: %s (the run's candidate "
                                          "sources)",
                                          src, strerror(errno))
                                : KF_OK;
    free(src);
    if (!st && !(s->sync = kf_store_sync_new(s->srcfd)))
        st = kf__err(s->ctx, kf__io_status(errno), "%s/src: %s", s->dir, strerror(errno));
    s->own_sync = s->sync != NULL;
    if (!st && !create) sweep_tmp(s);
    return st;
}

/* Read the run's row. */
static kf_status load_run(kf_store *s) {
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, task_dir, task_fingerprint, config_json, key_id"
                                " FROM runs ORDER BY id LIMIT 1",
                                -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    kf_status st = KF_OK;
    if (rc == SQLITE_DONE) {
        st = kf__err(s->ctx, KF_EIO, "%s: holds no run", s->dbpath);
    } else if (rc != SQLITE_ROW) {
        st = serr(s, rc, "reading the run");
    } else {
        const char *fp = (const char *)sqlite3_column_text(q, 2);
        const char *td = (const char *)sqlite3_column_text(q, 1);
        const char *cf = (const char *)sqlite3_column_text(q, 3);
        s->run = sqlite3_column_int64(q, 0);
        if (!is_hex64(fp)) {
            st = kf__err(s->ctx, KF_EIO, "%s: the run's task fingerprint is damaged", s->dbpath);
        } else {
            memcpy(s->fingerprint, fp, 65);
            s->task_dir = kf__strdup(td ? td : "");
            s->config = cf ? kf__strdup(cf) : NULL;
            if (!s->task_dir || (cf && !s->config)) st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
            const char *kid = (const char *)sqlite3_column_text(q, 4);
            s->key_id[0] = 0;
            if (kid) {
                size_t kl = strlen(kid), i = 0;
                while (i < kl && ((kid[i] >= '0' && kid[i] <= '9') || (kid[i] >= 'a' && kid[i] <= 'f'))) i++;
                if (kl != 32 || i != kl)
                    st = kf__err(s->ctx, KF_EIO, "%s: the run's key id is damaged", s->dbpath);
                else memcpy(s->key_id, kid, 33);
            }
        }
    }
    sqlite3_finalize(q);
    if (!st && s->key_id[0] && !s->keyed) st = key_load(s);
    if (!st && s->keyed) {
        /* the run's row matches its seal, its counts match the tables (a node reopened,
         * a row deleted or added by hand moves them), and it is the only run */
        q = NULL;
        rc = sqlite3_prepare_v2(
            s->db,
            "SELECT seal IS " RUN_MAC " AND nnodes = (SELECT count(*) FROM nodes) AND"
            /* the unfinished count uses the partial index: no scan of the verdicts */
            " nfinished = nnodes - (SELECT count(*) FROM nodes WHERE state IN ('proposed', 'built')) AND"
            " nevents = (SELECT count(*) FROM events) AND"
            " nconstraints = (SELECT count(*) FROM constraints) AND"
            " (SELECT count(*) FROM runs) = 1 FROM runs WHERE id = ?1",
            -1, &q, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int64(q, 1, s->run);
            rc = sqlite3_step(q);
        }
        if (rc == SQLITE_ROW) s->run_tampered = sqlite3_column_int(q, 0) != 1;
        else st = serr(s, rc, "checking the run's seal");
        sqlite3_finalize(q);
    }
    return st;
}

/* Remove path and SQLite's -wal and -shm beside it (no allocation: this runs when memory
 * ran out too). */
static void unlink_db(const char *path) {
    char side[4300];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* 1 when dir/run.db holds no run at all: an empty database, what a creation by an older
 * kforge left when it was killed before its one transaction committed. */
static int half_made(kf_store *s) {
    sqlite3 *db = NULL;
    kf_ctx *quiet = kf_ctx_new();
    int ver = -1;
    kf_db_schema sc = schema();
    if (quiet && !kf_db_open(quiet, s->dbpath, KF_DB_WAL, NULL, &db) &&
        kf_db_version(quiet, db, s->dbpath, &sc, &ver))
        ver = -1;
    if (db) sqlite3_close(db);
    kf_ctx_free(quiet);
    return ver == 0;
}

/* Remove DIR/.run.db.tmp-PID-* left by a creator that is dead (killed before it
 * published run.db). Best effort. */
static void sweep_creations(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        if (strncmp(e->d_name, ".run.db.tmp-", 12) || sscanf(e->d_name + 12, "%ld-", &pid) != 1 || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    closedir(d);
}

/* The new run's database, complete, at s->dbpath (a temporary name): schema, the run's
 * row, its seal, in one transaction; closed again, so that the file alone holds it. */
static kf_status build_db(kf_store *s, const kf_task *task, const char *config_json, const char *fp) {
    kf_ctx *ctx = s->ctx;
    kf_status st;
    char *abs = realpath(task->dir, NULL);
    if (!abs && errno == ENOMEM) /* not the relative path instead: resume must find the task */
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    if ((st = db_open(s)) || (st = seal_setup(s))) goto out;
    int rc = exec1(s->db, "BEGIN IMMEDIATE");
    if (rc) {
        st = serr(s, rc, "starting the run");
        goto out;
    }
    kf_db_schema sc = schema();
    if ((st = kf_db_migrate_steps(ctx, s->db, s->dbpath, &sc, 0))) goto out;
    if ((st = key_create(s))) goto out;
    sqlite3_stmt *q = NULL;
    rc =
        sqlite3_prepare_v2(s->db,
                           "INSERT INTO runs(task_dir, task_fingerprint, backend,"
                           " config_json, created, status, key_id) VALUES(?1, ?2, ?3, ?4, ?5, 'running', ?6)",
                           -1, &q, NULL);
    if (rc == SQLITE_OK) {
        bind_text(q, 1, abs ? abs : task->dir);
        bind_text(q, 2, fp);
        bind_text(q, 3, task->backend ? task->backend : "");
        bind_text(q, 4, config_json);
        sqlite3_bind_double(q, 5, now_s());
        bind_text(q, 6, s->key_id);
        rc = sqlite3_step(q);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        s->run = sqlite3_last_insert_rowid(s->db);
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_OK) {
        char sql[160];
        snprintf(sql, sizeof sql, "INSERT INTO meta(key, value) VALUES('created_by', 'kforge %s')",
                 KF_VERSION);
        rc = exec1(s->db, sql);
    }
    if (rc == SQLITE_OK) { /* the run's own seal, in the same transaction */
        char sql[200];
        memcpy(s->fingerprint, fp, 65);
        snprintf(sql, sizeof sql, "UPDATE runs SET seal = " RUN_MAC " WHERE id = %lld", (long long)s->run);
        rc = exec1(s->db, sql);
    }
    if (rc == SQLITE_OK) rc = exec1(s->db, "COMMIT");
    if (rc == SQLITE_OK) rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    if (rc) {
        st = serr(s, rc, "recording the run");
        goto out;
    }
    rc = sqlite3_close(s->db);
    s->db = NULL;
    if (rc) st = kf__err(ctx, KF_EIO, "%s: closing: %s", s->dbpath, sqlite3_errstr(rc));
out:
    if (s->db && !sqlite3_get_autocommit(s->db)) exec1(s->db, "ROLLBACK");
    free(abs);
    return st;
}

/* Creation is atomic: the database is built whole under a temporary name in dir and
 * published as run.db with link(2), which fails when run.db exists (exactly one creator
 * wins). A process killed at any moment leaves either a complete run or no run.db (and
 * a temporary file the next creation sweeps), never a run.db that neither resume nor a
 * new run accepts. */
kf_status kf_store_create(kf_ctx *ctx, const char *dir, const kf_task *task, const char *config_json,
                          kf_store **out) {
    if (!dir || !*dir || !task || !out) return kf__err(ctx, KF_EUSAGE, "kf_store_create: NULL argument");
    *out = NULL;
    char fp[65];
    kf_status st = kf_store_fingerprint(ctx, task, fp);
    if (st) return st;
    struct stat sb;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return kf__err(ctx, KF_EIO, "%s: not a directory (a run is a directory)", dir);
    if (kf__mkdirs(dir)) return kf__err(ctx, KF_EIO, "%s: %s", dir, strerror(errno));
    kf_store *s = store_new(ctx, dir);
    if (!s) return kf__err(ctx, KF_ENOMEM, "out of memory");
    int replaced = 0;
    if (lstat(s->dbpath, &sb) == 0) {
        if (!S_ISREG(sb.st_mode) || !half_made(s)) {
            st = kf__err(ctx, KF_EUSAGE,
                         "%s: already holds a run (run.db): resume it, or choose another run "
                         "directory",
                         dir);
            kf_store_close(s);
            return st;
        }
        unlink_db(s->dbpath); /* an interrupted creation: nothing was ever recorded in it */
        replaced = 1;
    }
    sweep_creations(dir);
    char final[4200], tmp[4300];
    snprintf(final, sizeof final, "%s", s->dbpath);
    snprintf(tmp, sizeof tmp, "%s/.run.db.tmp-%ld-%016llx", dir, (long)getpid(),
             (unsigned long long)kf__secret_u64());
    free(s->dbpath);
    if (!(s->dbpath = kf__strdup(tmp))) {
        kf_store_close(s);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = kf__err(ctx, kf__io_status(errno), "%s: %s", tmp, strerror(errno));
        kf_store_close(s);
        return st;
    }
    close(fd);
    if ((st = open_src(s, 1)) || (st = build_db(s, task, config_json, fp))) goto fail;
    if (link(tmp, final) < 0) {
        st = errno == EEXIST
                 ? kf__err(ctx, KF_EUSAGE,
                           "%s: already holds a run (run.db): resume it, or choose "
                           "another run directory",
                           dir)
                 : kf__err(ctx, kf__io_status(errno), "%s: publishing the run: %s", final, strerror(errno));
        goto fail;
    }
    unlink(tmp);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd)) (void)0; /* durability against a power cut only; a kill loses nothing here */
        close(dfd);
    }
    kf_store_close(s);
    /* from here the run exists: opened as any run is, its seals and fingerprint checked */
    if ((st = kf_store_open(ctx, dir, task, out))) return st;
    (*out)->replaced = replaced;
    return KF_OK;
fail:
    if (s->keyed) unlink(s->key_path); /* the key of a run that does not exist */
    kf_store_close(s);
    unlink_db(tmp);
    return st;
}

int kf_store_replaced(const kf_store *s) { return s && s->replaced; }

kf_status kf_store_open(kf_ctx *ctx, const char *dir, const kf_task *task, kf_store **out) {
    if (!dir || !*dir || !out) return kf__err(ctx, KF_EUSAGE, "kf_store_open: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) < 0) return kf__err(ctx, KF_EIO, "%s: %s (no run here)", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return kf__err(ctx, KF_EIO, "%s: not a directory (a run is a directory holding run.db)", dir);
    kf_store *s = store_new(ctx, dir);
    if (!s) return kf__err(ctx, KF_ENOMEM, "out of memory");
    kf_status st;
    if (stat(s->dbpath, &sb) < 0) {
        char srcd[4200];
        snprintf(srcd, sizeof srcd, "%s/src", dir);
        int e = errno;
        /* a creation killed before it published run.db leaves src/ (and a temporary file) */
        if (e == ENOENT && stat(srcd, &sb) == 0)
            st = kf__err(ctx, KF_EIO,
                         "%s: no run.db: the run's creation was interrupted before it was recorded "
                         "(`kforge run TASK --run %s` creates it again)",
                         dir, dir);
        else st = kf__err(ctx, KF_EIO, "%s: %s (not a kforge run directory)", s->dbpath, strerror(e));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = kf__err(ctx, KF_EIO, "%s: not a regular file", s->dbpath);
        goto fail;
    }
    if ((st = db_open(s)) || (st = seal_setup(s)) || (st = migrate(s)) || (st = no_planted(s)) ||
        (st = load_run(s)) || (st = open_src(s, 0)) || (st = prepare_all(s)))
        goto fail;
    if (task) {
        char fp[65];
        if ((st = kf_store_fingerprint(ctx, task, fp))) goto fail;
        if (strcmp(fp, s->fingerprint)) {
            st = kf__err(ctx, KF_ETASK,
                         "%s: the task changed since this run started "
                         "(fingerprint %.12s, now %.12s)",
                         dir, s->fingerprint, fp);
            goto fail;
        }
    }
    *out = s;
    return KF_OK;
fail:
    kf_store_close(s);
    return st;
}

kf_status kf_store_open_peer(kf_ctx *ctx, const kf_store *main, kf_store **out) {
    if (!main || !out) return kf__err(ctx, KF_EUSAGE, "kf_store_open_peer: NULL argument");
    *out = NULL;
    kf_store *s = store_new(ctx, main->dir);
    if (!s) return kf__err(ctx, KF_ENOMEM, "out of memory");
    /* what main's open read and checked (the schema, no planted trigger, the run's row
     * and seal, the task's fingerprint, the key) is taken from it; the connection is
     * set up as every connection is: no trigger or view runs on it (seal_setup) */
    kf_status st = db_open(s);
    if (!st) st = seal_setup(s);
    if (!st) {
        s->run = main->run;
        memcpy(s->fingerprint, main->fingerprint, sizeof s->fingerprint);
        memcpy(s->key_id, main->key_id, sizeof s->key_id);
        memcpy(s->key_path, main->key_path, sizeof s->key_path);
        s->run_tampered = main->run_tampered;
        s->task_dir = kf__strdup(main->task_dir ? main->task_dir : "");
        s->config = main->config ? kf__strdup(main->config) : NULL;
        if (!s->task_dir || (main->config && !s->config)) st = kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    if (!st && main->keyed) {
        memcpy(s->key, main->key, sizeof s->key);
        if (mac_init(s)) st = kf__err(ctx, KF_EINTERNAL, "OpenSSL has no HMAC-SHA256 (the run's seals)");
        else s->keyed = 1;
    }
    if (!st && (s->srcfd = dup(main->srcfd)) < 0)
        st = kf__err(ctx, KF_EIO, "%s/src: %s (the run's candidate sources)", s->dir, strerror(errno));
    s->sync = main->sync; /* main's files are waited for where a peer records their outcome */
    if (!st) st = prepare_all(s);
    if (st) {
        kf_store_close(s);
        return st;
    }
    *out = s;
    return KF_OK;
}

const char *kf_store_dir(const kf_store *s) { return s ? s->dir : NULL; }
const char *kf_store_task_dir(const kf_store *s) { return s ? s->task_dir : NULL; }
const char *kf_store_task_fingerprint(const kf_store *s) { return s ? s->fingerprint : NULL; }
const char *kf_store_config(const kf_store *s) { return s ? s->config : NULL; }

kf_status kf_store_set_status(kf_store *s, const char *status) {
    if (!s || !status) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_set_status: NULL argument");
    sqlite3_stmt *q = s->q[Q_STATUS];
    bind_text(q, 1, status);
    sqlite3_bind_int64(q, 2, s->run);
    int rc = step_done(q);
    return rc ? serr(s, rc, "setting the run's status") : KF_OK;
}

kf_status kf_store_check(kf_store *s) {
    if (!s) return KF_EUSAGE;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    kf_status st = KF_OK;
    if (rc != SQLITE_ROW) {
        st = serr(s, rc, "integrity_check");
    } else {
        const char *r = (const char *)sqlite3_column_text(q, 0);
        if (!r || strcmp(r, "ok"))
            st = kf__err(s->ctx, KF_EIO, "%s: integrity_check: %s", s->dbpath, r ? r : "?");
    }
    sqlite3_finalize(q);
    return st;
}

/* ---- sources ---------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

kf_status kf_store_put_source(kf_store *s, const char *text, size_t len, const char *ext, char hash[65]) {
    if (!s || (!text && len) || !hash)
        return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_put_source: NULL argument");
    if (!ext_ok(ext))
        return kf__err(s->ctx, KF_EUSAGE,
                       "kf_store_put_source: extension \"%s\" (expected 1-7 "
                       "of a-z, 0-9)",
                       ext ? ext : "(null)");
    if (len > SRC_MAX)
        return kf__err(s->ctx, KF_EUSAGE, "a candidate of %zu bytes (at most %u)", len, SRC_MAX);
    const void *parts[] = {text ? text : ""};
    size_t lens[] = {len};
    if (kf__sha256_hex(parts, lens, 1, hash)) return kf__err(s->ctx, KF_EINTERNAL, "sha256 failed");
    char name[80], tmp[128];
    snprintf(name, sizeof name, "%s.%s", hash, ext);
    struct stat sb;
    const char *what = NULL;
    int e = 0;
    /* a final name only ever appears by rename of a complete file; one already there is
     * kept only when its bytes are these (a planted file of the same size under a
     * predictable name, or one a power cut cut short, is replaced), and is synced as a
     * new one is: another process may have written it and not synced it yet */
    if (fstatat(s->srcfd, name, &sb, 0) == 0 && S_ISREG(sb.st_mode) && (size_t)sb.st_size == len) {
        char *have = NULL;
        size_t hl = 0;
        if (kf_store_read_source(s, hash, ext, &have, &hl) == KF_OK && hl == len &&
            !memcmp(have, text, len)) {
            free(have);
            if ((e = kf_store_sync_put(s->sync, name, -1, &what)))
                return kf__err(s->ctx, KF_EIO, "%s/src/%s: %s: %s", s->dir, name, what, strerror(e));
            return KF_OK;
        }
        free(have);
    }
    /* unique per thread: concurrent writers of one text each rename a whole copy */
    snprintf(tmp, sizeof tmp, ".tmp-%d-%ld-%.16s", (int)getpid(), (long)syscall(SYS_gettid), hash);
    int fd = openat(s->srcfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return kf__err(s->ctx, KF_EIO, "%s/src/%s: %s", s->dir, tmp, strerror(errno));
    if (write_all(fd, text, len)) what = "write", e = errno;
    else if (renameat(s->srcfd, tmp, s->srcfd, name)) what = "rename", e = errno;
    if (what) {
        close(fd);
        unlinkat(s->srcfd, tmp, 0);
        return kf__err(s->ctx, KF_EIO, "%s/src/%s: %s: %s", s->dir, name, what, strerror(e));
    }
    /* whole under its name now, for every reader and past a kill; its bytes and the
     * directory's entry reach the disk on the syncer's thread (sync.c), and an outcome
     * naming it waits for that (kf_store_finish_node): the caller goes on at once */
    if ((e = kf_store_sync_put(s->sync, name, fd, &what)))
        return kf__err(s->ctx, KF_EIO, "%s/src/%s: %s: %s", s->dir, name, what, strerror(e));
    return KF_OK;
}

kf_status kf_store_read_source(kf_store *s, const char *hash, const char *ext, char **text, size_t *len) {
    if (!s || !text) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_read_source: NULL argument");
    *text = NULL;
    if (!is_hex64(hash) || !ext_ok(ext))
        return kf__err(s->ctx, KF_EUSAGE, "kf_store_read_source: bad name \"%s.%s\"", hash ? hash : "(null)",
                       ext ? ext : "(null)");
    char *path = kf__asprintf("%s/src/%s.%s", s->dir, hash, ext);
    if (!path) return kf__err(s->ctx, KF_ENOMEM, "out of memory");
    char *p = NULL, got[65];
    size_t n = 0;
    kf_status st = KF_OK;
    if (kf__read_file(path, SRC_MAX, &p, &n)) {
        st = kf__err(s->ctx, kf__io_status(errno), "%s: %s", path, strerror(errno));
    } else {
        const void *parts[] = {p};
        size_t lens[] = {n};
        if (kf__sha256_hex(parts, lens, 1, got) || strcmp(got, hash))
            st = kf__err(s->ctx, KF_EIO, "%s: damaged (its SHA-256 is %.12s)", path, got);
    }
    free(path);
    if (st) {
        free(p);
        return st;
    }
    *text = p;
    if (len) *len = n;
    return KF_OK;
}

/* ---- seals ------------------------------------------------------------------------- */

/* Seals make a hand-edited run.db visible (docs/run.md "Seals"). Each run has a random
 * 256-bit key in a file of its own OUTSIDE the run directory (keys_dir); run.db names it
 * (runs.key_id). Every node, event and constraint carries seal = kf_mac(its row),
 * written in the same transaction as the row, with the run's counts and the run row's
 * own seal. A reader recomputes it: a node whose row does not match (state set to kept,
 * speedup raised, source swapped, reopened) is read as rejected with reason "tampered",
 * an event or constraint that does not match is skipped, and a run whose row or counts
 * do not match records nothing more. What it stops: editing run.db (or copying rows between
 * runs) without the key. What it does not: someone who can read the key file (the same
 * user, deliberately), or deleting key_id (the run then reads as "unsealed", and says so). */

void kf_store_keys_dir(char *out, size_t n) {
    const char *k = getenv("KFORGE_KEYS"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (k && *k) snprintf(out, n, "%s", k);
    else if (xdg && *xdg) snprintf(out, n, "%s/kforge/keys", xdg);
    else if (home && *home) snprintf(out, n, "%s/.local/share/kforge/keys", home);
    else snprintf(out, n, ".kforge-keys");
}

static void hex(const unsigned char *b, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) out[2 * i] = d[b[i] >> 4], out[2 * i + 1] = d[b[i] & 15];
    out[2 * n] = 0;
}

static int unhex(const char *h, unsigned char *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = h[2 * i + k];
            int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (x < 0) return -1;
            v = v * 16 + (unsigned)x;
        }
        out[i] = (unsigned char)v;
    }
    return h[2 * n] && h[2 * n] != '\n' ? -1 : 0;
}

/* s->mac: HMAC-SHA256 keyed with s->key (0, or -1 when OpenSSL has no HMAC). */
static int mac_init(kf_store *s) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *m = mac ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM prm[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
                        OSSL_PARAM_construct_end()};
    int ok = m && EVP_MAC_init(m, s->key, sizeof s->key, prm);
    EVP_MAC_free(mac); /* the context holds its own reference */
    if (!ok) {
        EVP_MAC_CTX_free(m);
        return -1;
    }
    s->mac = m;
    return 0;
}

/* A new key: s->key, s->key_id, and its file (mode 0600, in a 0700 directory). */
static kf_status key_create(kf_store *s) {
    unsigned char id[16];
    char dir[4096], body[66];
    if (RAND_bytes(id, sizeof id) != 1 || RAND_bytes(s->key, sizeof s->key) != 1)
        return kf__err(s->ctx, KF_EIO, "no random bytes from OpenSSL for the run's seal key");
    hex(id, sizeof id, s->key_id);
    kf_store_keys_dir(dir, sizeof dir);
    snprintf(s->key_path, sizeof s->key_path, "%s/%s.key", dir, s->key_id);
    if (dir[0] != '/') {
        const char *k = getenv("KFORGE_KEYS"), *x = getenv("XDG_DATA_HOME");
        const char *why = k && *k   ? "KFORGE_KEYS is relative"
                          : x && *x ? "XDG_DATA_HOME is relative"
                                    : "HOME is unset";
        return kf__err(s->ctx, KF_EUSAGE,
                       "runs' seal keys would go to \"%s\", a relative path (%s): set "
                       "KFORGE_KEYS to an absolute directory outside the projects agents may write",
                       dir, why);
    }
    if (kf__mkdirs(dir))
        return kf__err(s->ctx, KF_EIO,
                       "%s: %s (where runs' seal keys are kept; set KFORGE_KEYS to "
                       "another directory)",
                       dir, strerror(errno));
    struct stat ds;
    if (stat(dir, &ds) || !S_ISDIR(ds.st_mode) || ds.st_uid != geteuid() || (ds.st_mode & 022))
        return kf__err(s->ctx, KF_EUSAGE,
                       "%s: the keys directory must be yours and writable by you alone (mode "
                       "0700): others could plant or replace keys there",
                       dir);
    int fd = open(s->key_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return kf__err(s->ctx, KF_EIO, "%s: %s (the run's seal key)", s->key_path, strerror(errno));
    hex(s->key, sizeof s->key, body);
    body[64] = '\n';
    int bad = write(fd, body, 65) != 65 || fsync(fd);
    int e = errno;
    OPENSSL_cleanse(body, sizeof body);
    if (close(fd) || bad) {
        unlink(s->key_path);
        return kf__err(s->ctx, KF_EIO, "%s: %s (the run's seal key)", s->key_path, strerror(bad ? e : errno));
    }
    if (mac_init(s)) return kf__err(s->ctx, KF_EINTERNAL, "OpenSSL has no HMAC-SHA256 (the run's seals)");
    s->keyed = 1;
    return KF_OK;
}

/* Read the key named by s->key_id; a missing file leaves s->keyed 0 (readers say so). */
static kf_status key_load(kf_store *s) {
    char dir[4096], body[80];
    kf_store_keys_dir(dir, sizeof dir);
    snprintf(s->key_path, sizeof s->key_path, "%s/%s.key", dir, s->key_id);
    /* O_NONBLOCK: a FIFO planted in its place does not hang the open */
    int fd = open(s->key_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return KF_OK;
        return kf__err(s->ctx, KF_EIO, "%s: %s (the run's seal key)", s->key_path, strerror(errno));
    }
    struct stat ks;
    if (fstat(fd, &ks) || !S_ISREG(ks.st_mode)) {
        close(fd);
        return kf__err(s->ctx, KF_EIO, "%s: not a regular file (the run's seal key)", s->key_path);
    }
    ssize_t n = read(fd, body, sizeof body - 1);
    close(fd);
    body[n > 0 ? n : 0] = 0;
    int bad = n < 64 || unhex(body, s->key, sizeof s->key);
    OPENSSL_cleanse(body, sizeof body);
    if (bad) return kf__err(s->ctx, KF_EIO, "%s: not a kforge seal key (64 hex digits)", s->key_path);
    if (mac_init(s)) return kf__err(s->ctx, KF_EINTERNAL, "OpenSSL has no HMAC-SHA256 (the run's seals)");
    s->keyed = 1;
    return KF_OK;
}

/* SQL kf_mac(tag, v1, v2, ...): HMAC-SHA256 under the run's key of the run's id and
 * fingerprint, the tag and each value with its type (NULL, integer, real as %.17g with
 * -0 as 0, text and blob with their length), as 64 hex digits; NULL for a run without
 * its key. Registered SQLITE_DIRECTONLY: usable by kforge's own statements only, never
 * from a trigger or view. */
static void sql_mac(sqlite3_context *cx, int argc, sqlite3_value **v) {
    kf_store *s = sqlite3_user_data(cx);
    if (!s->keyed || !s->mac) {
        sqlite3_result_null(cx);
        return;
    }
    EVP_MAC_CTX *m = EVP_MAC_CTX_dup(s->mac);
    unsigned char md[32];
    size_t mdlen = 0;
    char head[160];
    int k = snprintf(head, sizeof head, "kforge-mac-2;%lld;%s;", (long long)s->run, s->fingerprint);
    int ok = m && EVP_MAC_update(m, (const unsigned char *)head, (size_t)k);
    for (int i = 0; ok && i < argc; i++) {
        char pre[64];
        const unsigned char *body = NULL;
        size_t len = 0;
        switch (sqlite3_value_type(v[i])) {
        case SQLITE_NULL: k = snprintf(pre, sizeof pre, "N;"); break;
        case SQLITE_INTEGER:
            k = snprintf(pre, sizeof pre, "I%lld;", (long long)sqlite3_value_int64(v[i]));
            break;
        case SQLITE_FLOAT: {
            double d = sqlite3_value_double(v[i]);
            k = snprintf(pre, sizeof pre, "F%.17g;", d == 0 ? 0.0 : d);
            break;
        }
        default: /* text and blob: length, then the bytes */
            body =
                sqlite3_value_type(v[i]) == SQLITE_TEXT ? sqlite3_value_text(v[i]) : sqlite3_value_blob(v[i]);
            len = (size_t)sqlite3_value_bytes(v[i]);
            k = snprintf(pre, sizeof pre, "%c%zu:", sqlite3_value_type(v[i]) == SQLITE_TEXT ? 'T' : 'B', len);
        }
        ok = EVP_MAC_update(m, (const unsigned char *)pre, (size_t)k) &&
             (!len || EVP_MAC_update(m, body, len)) &&
             (!body || EVP_MAC_update(m, (const unsigned char *)";", 1));
    }
    ok = ok && EVP_MAC_final(m, md, &mdlen, sizeof md) && mdlen == sizeof md;
    EVP_MAC_CTX_free(m);
    if (!ok) {
        sqlite3_result_error(cx, "kforge: computing a seal failed", -1);
        return;
    }
    char out[65];
    hex(md, sizeof md, out);
    sqlite3_result_text(cx, out, 64, SQLITE_TRANSIENT);
}

/* The HMAC of a keyed s over the tag and p[0..n), as hex into mac: 0, or -1. */
static int bytes_mac(kf_store *s, const void *p, size_t n, char mac[65]) {
    static const char tag[] = "kforge-file-mac-1;";
    EVP_MAC_CTX *m = EVP_MAC_CTX_dup(s->mac);
    unsigned char md[32];
    size_t mdlen = 0;
    int ok = m && EVP_MAC_update(m, (const unsigned char *)tag, sizeof tag - 1) &&
             (!n || EVP_MAC_update(m, p, n)) && EVP_MAC_final(m, md, &mdlen, sizeof md) && mdlen == sizeof md;
    EVP_MAC_CTX_free(m);
    if (ok) hex(md, sizeof md, mac);
    return ok ? 0 : -1;
}

/* A store of no database: only the key's fields are used. */
static void keyed_free(kf_store *s) {
    if (!s) return;
    EVP_MAC_CTX_free(s->mac);
    OPENSSL_cleanse(s->key, sizeof s->key);
    free(s);
}

kf_status kf_store_seal_bytes(kf_ctx *ctx, char key_id[33], const void *p, size_t n, char mac[65]) {
    kf_store *s = calloc(1, sizeof *s);
    if (!s) return kf__err(ctx, KF_ENOMEM, "out of memory");
    s->ctx = ctx;
    snprintf(s->key_id, sizeof s->key_id, "%s", key_id);
    kf_status st = key_id[0] ? key_load(s) : key_create(s);
    if (!st && !s->keyed)
        st = kf__err(ctx, KF_EIO, "%s: the seal key is missing: nothing can be sealed with it", s->key_path);
    if (!st && bytes_mac(s, p, n, mac)) st = kf__err(ctx, KF_EINTERNAL, "computing a seal failed");
    if (!st) memcpy(key_id, s->key_id, sizeof s->key_id);
    keyed_free(s);
    return st;
}

kf_status kf_store_check_bytes(kf_ctx *ctx, const char *key_id, const void *p, size_t n, const char *mac,
                               const char **state, char *key_path, size_t kn) {
    *state = "key missing";
    if (kn) key_path[0] = 0;
    if (strlen(key_id) != 32 || strspn(key_id, "0123456789abcdef") != 32) {
        *state = "tampered"; /* a key id kforge never writes */
        return KF_OK;
    }
    kf_store *s = calloc(1, sizeof *s);
    if (!s) return kf__err(ctx, KF_ENOMEM, "out of memory");
    s->ctx = ctx;
    snprintf(s->key_id, sizeof s->key_id, "%s", key_id);
    kf_status st = key_load(s);
    if (kn) snprintf(key_path, kn, "%s", s->key_path);
    char got[65];
    if (!st && s->keyed) {
        if (bytes_mac(s, p, n, got)) st = kf__err(ctx, KF_EINTERNAL, "computing a seal failed");
        else *state = mac && !strcmp(got, mac) ? "sealed" : "tampered";
    }
    keyed_free(s);
    return st;
}

const char *kf_store_seal_state(const kf_store *s) {
    return !s->key_id[0] ? "unsealed" : !s->keyed ? "key missing" : s->run_tampered ? "tampered" : "sealed";
}

const char *kf_store_key_path(const kf_store *s) { return s->key_id[0] ? s->key_path : NULL; }
const char *kf_store_key_id(const kf_store *s) { return s->key_id[0] ? s->key_id : NULL; }

/* ---- nodes ------------------------------------------------------------------------- */

static const char *col_text(sqlite3_stmt *q, int i) { return (const char *)sqlite3_column_text(q, i); }

/* Fill n from the current row of a NODE_COLS statement. copy: strings are strdup'ed
 * (the caller's), else borrowed from the statement. */
static kf_status row_node(kf_store *s, sqlite3_stmt *q, kf_node *n, int copy) {
    memset(n, 0, sizeof *n);
    n->id = sqlite3_column_int64(q, 0);
    n->parent = sqlite3_column_int64(q, 1); /* NULL reads as 0: the root */
    const char *h = col_text(q, 2), *e = col_text(q, 3), *state = col_text(q, 7);
    if (!is_hex64(h) || !ext_ok(e))
        return kf__err(s->ctx, KF_EIO, "%s: node %lld: damaged source name", s->dbpath, (long long)n->id);
    memcpy(n->src_hash, h, 65);
    snprintf(n->ext, sizeof n->ext, "%s", e);
    snprintf(n->proposer, sizeof n->proposer, "%s", col_text(q, 5) ? col_text(q, 5) : "");
    snprintf(n->category, sizeof n->category, "%s", col_text(q, 6) ? col_text(q, 6) : "");
    if (kf_node_state_parse(state, &n->state))
        return kf__err(s->ctx, KF_EIO, "%s: node %lld: unknown state \"%s\"", s->dbpath, (long long)n->id,
                       state ? state : "(null)");
    n->speedup = sqlite3_column_double(q, 11);
    n->cost_s = sqlite3_column_double(q, 12);
    n->tokens_in = sqlite3_column_int64(q, 13);
    n->tokens_out = sqlite3_column_int64(q, 14);
    n->created = sqlite3_column_double(q, 15);
    n->finished = sqlite3_column_double(q, 16);
    static const int cols[] = {4, 8, 9, 10, 17};
    char **dst[] = {&n->params_json, &n->reasons, &n->verdict_json, &n->shapes_json, &n->note};
    for (int i = 0; i < 5; i++) {
        const char *t = col_text(q, cols[i]);
        if (!t && sqlite3_errcode(s->db) == SQLITE_NOMEM) goto oom;
        if (!t) continue;
        if (!copy) {
            *dst[i] = (char *)t;
        } else if (!(*dst[i] = kf__strdup(t))) {
            goto oom;
        }
    }
    /* a node of a sealed run must match its seal (column 19: seal IS kf_mac(the row)); one
     * that does not is read as what it is: rejected, "tampered", nothing of its outcome
     * kept, what the row claimed in its note */
    if (s->keyed) {
        if (sqlite3_column_int(q, 19) != 1) {
            char claim[512];
            snprintf(claim, sizeof claim,
                     "run.db was changed outside kforge: node %lld's recorded outcome (%s, %.3fx) does not "
                     "match its seal, so none of it is trusted",
                     (long long)n->id, kf_node_state_name(n->state), n->speedup);
            n->state = KF_NODE_REJECTED;
            n->speedup = 0;
            n->tampered = 1;
            if (copy) {
                free(n->reasons);
                free(n->note);
                free(n->shapes_json);
                free(n->verdict_json);
                n->shapes_json = n->verdict_json = NULL;
                n->reasons = kf__strdup("tampered");
                n->note = kf__strdup(claim);
                if (!n->reasons || !n->note) goto oom;
            } else {
                snprintf(s->tamper_note, sizeof s->tamper_note, "%s", claim);
                n->reasons = (char *)"tampered";
                n->note = s->tamper_note;
                n->shapes_json = n->verdict_json = NULL;
            }
        }
    }
    return KF_OK;
oom:
    if (copy) kf_node_free(n);
    return kf__err(s->ctx, KF_ENOMEM, "out of memory");
}

void kf_node_free(kf_node *n) {
    if (!n) return;
    free(n->params_json);
    free(n->reasons);
    free(n->verdict_json);
    free(n->shapes_json);
    free(n->note);
    n->params_json = n->reasons = n->verdict_json = n->shapes_json = n->note = NULL;
}

static int fixed_ok(const char *p, size_t cap) { return memchr(p, 0, cap) != NULL; }

/* Writes to a run whose key is elsewhere, or whose own row was edited, are refused:
 * they could not be sealed, or would seal what someone else put there. */
static kf_status writable(kf_store *s) {
    if (s->key_id[0] && !s->keyed)
        return kf__err(s->ctx, KF_EUSAGE,
                       "%s: this run's seal key %s is not on this machine: nothing can be "
                       "recorded (copy the key there, or set KFORGE_KEYS to its directory)",
                       s->dbpath, s->key_path);
    if (s->run_tampered)
        return kf__err(s->ctx, KF_EUSAGE,
                       "%s: the run's own row (task fingerprint, settings, counts) was changed "
                       "outside kforge: nothing more is recorded in this run",
                       s->dbpath);
    return KF_OK;
}

/* In a write transaction: seal row id with statement k, move the run's counts by the
 * deltas and seal the run's row again. */
static int seal_write(kf_store *s, int k, int64_t id, int dn, int df, int de, int dc) {
    sqlite3_stmt *q = s->q[k];
    sqlite3_bind_int64(q, 1, id);
    int rc = step_done(q);
    if (rc) return rc;
    q = s->q[Q_RUN_COUNT];
    sqlite3_bind_int64(q, 1, s->run);
    sqlite3_bind_int(q, 2, dn);
    sqlite3_bind_int(q, 3, df);
    sqlite3_bind_int(q, 4, de);
    sqlite3_bind_int(q, 5, dc);
    if ((rc = step_done(q))) return rc;
    q = s->q[Q_SEAL_RUN];
    sqlite3_bind_int64(q, 1, s->run);
    return step_done(q);
}

/* Insert with the bound statement q as one sealed write: the row, its seal (statement
 * kseal), the run's counts moved by dn nodes, de events, dc constraints. *id: the new
 * row. A foreign-key failure sets *fk and rolls back without a message (the caller words
 * it); any other failure is a status with the detail on the context. */
static kf_status sealed_insert(kf_store *s, sqlite3_stmt *q, int kseal, int dn, int de, int dc,
                               const char *what, int64_t *id, int *fk) {
    *fk = 0;
    kf_status st = writable(s);
    int rc = st ? 0 : exec1(s->db, "BEGIN IMMEDIATE");
    if (st || rc) {
        sqlite3_reset(q);
        return st ? st : serr(s, rc, what);
    }
    rc = step_done(q);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
        *fk = 1;
        return rollback(s, KF_EUSAGE);
    }
    *id = sqlite3_last_insert_rowid(s->db);
    if (!rc) rc = seal_write(s, kseal, *id, dn, 0, de, dc);
    if (!rc) rc = exec1(s->db, "COMMIT");
    return rc ? rollback(s, serr(s, rc, what)) : KF_OK;
}

kf_status kf_store_add_node(kf_store *s, kf_node *n) {
    if (!s || !n) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_add_node: NULL argument");
    if (!fixed_ok(n->src_hash, sizeof n->src_hash) || !is_hex64(n->src_hash) ||
        !fixed_ok(n->ext, sizeof n->ext) || !ext_ok(n->ext) || !fixed_ok(n->proposer, sizeof n->proposer) ||
        !fixed_ok(n->category, sizeof n->category))
        return kf__err(s->ctx, KF_EUSAGE,
                       "kf_store_add_node: a malformed source name, "
                       "proposer or category");
    if (n->parent < 0 || !isfinite(n->cost_s) || !isfinite(n->created))
        return kf__err(s->ctx, KF_EUSAGE, "kf_store_add_node: parent %lld, cost %g, created %g",
                       (long long)n->parent, n->cost_s, n->created);
    char name[80];
    struct stat sb;
    snprintf(name, sizeof name, "%s.%s", n->src_hash, n->ext);
    if (fstatat(s->srcfd, name, &sb, 0) < 0)
        return kf__err(s->ctx, KF_EUSAGE, "%s/src/%s: %s (store the source before its node)", s->dir, name,
                       strerror(errno));
    double created = n->created > 0 ? n->created : now_s();
    sqlite3_stmt *q = s->q[Q_ADD];
    sqlite3_bind_int64(q, 1, s->run);
    bind_id(q, 2, n->parent);
    bind_text(q, 3, n->src_hash);
    bind_text(q, 4, n->ext);
    bind_text(q, 5, n->params_json);
    bind_text(q, 6, n->proposer);
    bind_text(q, 7, n->category);
    sqlite3_bind_double(q, 8, n->cost_s);
    sqlite3_bind_int64(q, 9, n->tokens_in);
    sqlite3_bind_int64(q, 10, n->tokens_out);
    sqlite3_bind_double(q, 11, created);
    bind_text(q, 12, n->note);
    int64_t id = 0;
    int fk;
    kf_status st = sealed_insert(s, q, Q_SEAL_NODE, 1, 0, 0, "adding a node", &id, &fk);
    if (fk)
        return kf__err(s->ctx, KF_EUSAGE, "%s: adding a node: parent %lld: no such node", s->dbpath,
                       (long long)n->parent);
    if (st) return st;
    n->id = id;
    n->state = KF_NODE_PROPOSED;
    n->created = created;
    n->finished = 0;
    return KF_OK;
}

/* An outcome names its node's source: wait until the syncer (sync.c) has that file and
 * its directory entry on disk. KF_OK, or KF_EIO naming the step that failed (nothing is
 * recorded then: the node stays as it was, and a resume evaluates it again). A node
 * that is not there is left to the caller's own check. */
static kf_status source_durable(kf_store *s, const kf_node *n) {
    char name[80] = "";
    if (is_hex64(n->src_hash) && ext_ok(n->ext)) {
        snprintf(name, sizeof name, "%s.%s", n->src_hash, n->ext);
    } else {
        sqlite3_stmt *q = s->q[Q_NODE_SRC];
        sqlite3_bind_int64(q, 1, n->id);
        sqlite3_bind_int64(q, 2, s->run);
        int rc = sqlite3_step(q);
        const char *h = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
        const char *x = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 1) : NULL;
        if (h && x && is_hex64(h) && ext_ok(x)) snprintf(name, sizeof name, "%s.%s", h, x);
        sqlite3_reset(q);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return serr(s, rc, "reading a node's source name");
    }
    if (!name[0]) return KF_OK;
    const char *what = NULL;
    int e = kf_store_sync_wait(s->sync, name, &what);
    /* a text that is gone (lost to a power cut before its sync, or removed) is recorded
     * only as the crash it made of its evaluation: otherwise its node stays unfinished */
    if (!e || (e == ENOENT && what && !strcmp(what, "open") && n->state == KF_NODE_CRASHED)) return KF_OK;
    return kf__err(s->ctx, KF_EIO,
                   "%s/src/%s: %s: %s: node %lld's outcome is not recorded (its source is not on disk; "
                   "the node stays unfinished, and a resume evaluates it again)",
                   s->dir, name, what ? what : "fsync", strerror(e), (long long)n->id);
}

kf_status kf_store_finish_node(kf_store *s, const kf_node *n) {
    if (!s || !n) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_finish_node: NULL argument");
    if ((unsigned)n->state >= KF_NODE_STATE_COUNT || !isfinite(n->speedup) || !isfinite(n->cost_s) ||
        !isfinite(n->finished))
        return kf__err(s->ctx, KF_EUSAGE,
                       "kf_store_finish_node: node %lld: state %d, speedup "
                       "%g, cost %g, finished %g",
                       (long long)n->id, (int)n->state, n->speedup, n->cost_s, n->finished);
    kf_status st = writable(s);
    if (st) return st;
    /* before the write lock: the wait is normally none (the evaluation took longer than
     * the sync), and a slow disk must not hold up every other writer */
    if (!kf_node_state_unfinished(n->state) && (st = source_durable(s, n))) return st;
    int rc = exec1(s->db, "BEGIN IMMEDIATE");
    if (rc) return serr(s, rc, "recording a node's outcome");
    /* the row as it stands: finished or not (the run's count moves by the difference),
     * and still matching its seal (an outcome is never sealed over an edited row) */
    sqlite3_stmt *q = s->q[Q_NODE_NOW];
    sqlite3_bind_int64(q, 1, n->id);
    sqlite3_bind_int64(q, 2, s->run);
    rc = sqlite3_step(q);
    int was_finished = rc == SQLITE_ROW && sqlite3_column_int(q, 0);
    int row_ok = rc == SQLITE_ROW && sqlite3_column_int(q, 1) == 1;
    sqlite3_reset(q);
    if (rc == SQLITE_DONE)
        return rollback(s, kf__err(s->ctx, KF_EUSAGE, "%s: recording an outcome: node %lld: no such node",
                                   s->dbpath, (long long)n->id));
    if (rc != SQLITE_ROW) return rollback(s, serr(s, rc, "recording a node's outcome"));
    if (s->keyed && !row_ok)
        return rollback(s, kf__err(s->ctx, KF_EUSAGE,
                                   "%s: node %lld does not match its seal (run.db was changed "
                                   "outside kforge): its outcome is not recorded",
                                   s->dbpath, (long long)n->id));
    /* the Critic's veto is mechanical: kept only with its approval on record, an event
     * kforge sealed, of this attempt: the node's last Critic decision, with no `attempt`
     * event after it (an interrupted attempt's approval does not count for its re-run) */
    if (n->state == KF_NODE_KEPT) {
        sqlite3_stmt *a = NULL;
        rc = sqlite3_prepare_v2(
            s->db,
            "SELECT 1 FROM events e WHERE run = ?1 AND node = ?2 AND kind = 'critic'"
            " AND json_extract(json, '$.decision') = 'approve' AND (?3 = 0 OR seal IS " EVENT_MAC
            ") AND NOT EXISTS (SELECT 1 FROM events f WHERE f.node = ?2 AND f.id > e.id AND"
            " f.kind IN ('critic', 'attempt')) LIMIT 1",
            -1, &a, NULL);
        if (rc) return rollback(s, serr(s, rc, "reading the Critic's decisions"));
        sqlite3_bind_int64(a, 1, s->run);
        sqlite3_bind_int64(a, 2, n->id);
        sqlite3_bind_int(a, 3, s->keyed);
        rc = sqlite3_step(a);
        sqlite3_finalize(a);
        if (rc != SQLITE_ROW)
            return rollback(s, rc == SQLITE_DONE ? kf__err(s->ctx, KF_EUSAGE,
                                                           "%s: node %lld: only the Critic may mark a node "
                                                           "kept, and it has not approved this one",
                                                           s->dbpath, (long long)n->id)
                                                 : serr(s, rc, "reading the Critic's decisions"));
    }
    q = s->q[Q_FINISH];
    bind_text(q, 1, state_names[n->state]);
    bind_text(q, 2, n->reasons);
    bind_text(q, 3, n->verdict_json);
    bind_text(q, 4, n->shapes_json);
    sqlite3_bind_double(q, 5, n->speedup);
    sqlite3_bind_double(q, 6, n->cost_s);
    sqlite3_bind_int64(q, 7, n->tokens_in);
    sqlite3_bind_int64(q, 8, n->tokens_out);
    if (kf_node_state_unfinished(n->state)) sqlite3_bind_null(q, 9);
    else sqlite3_bind_double(q, 9, n->finished > 0 ? n->finished : now_s());
    bind_text(q, 10, n->note);
    sqlite3_bind_int64(q, 11, n->id);
    sqlite3_bind_int64(q, 12, s->run);
    /* the node kforge evaluated, when the caller says which (its source name) */
    int known = n->src_hash[0] != 0;
    sqlite3_bind_int(q, 13, known);
    bind_text(q, 14, known ? n->src_hash : NULL);
    bind_text(q, 15, known ? n->ext : NULL);
    bind_text(q, 16, known ? n->proposer : NULL);
    bind_text(q, 17, known ? n->category : NULL);
    bind_id(q, 18, known ? n->parent : 0);
    bind_text(q, 19, known ? n->params_json : NULL);
    sqlite3_bind_int(q, 20, s->keyed);
    rc = step_done(q);
    if (rc) return rollback(s, serr(s, rc, "recording a node's outcome"));
    if (sqlite3_changes(s->db) != 1)
        return rollback(s, kf__err(s->ctx, KF_EUSAGE,
                                   "%s: recording an outcome: node %lld: its row is not the "
                                   "node that was evaluated (run.db changed meanwhile)",
                                   s->dbpath, (long long)n->id));
    int now_finished = !kf_node_state_unfinished(n->state);
    rc = seal_write(s, Q_SEAL_NODE, n->id, 0, now_finished - was_finished, 0, 0);
    if (!rc) rc = exec1(s->db, "COMMIT");
    return rc ? rollback(s, serr(s, rc, "recording a node's outcome")) : KF_OK;
}

kf_status kf_store_get_node(kf_store *s, int64_t id, kf_node *out) {
    if (!s || !out) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_get_node: NULL argument");
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q = s->q[Q_GET];
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, s->run);
    int rc = sqlite3_step(q);
    kf_status st;
    if (rc == SQLITE_ROW) st = row_node(s, q, out, 1);
    else if (rc == SQLITE_DONE)
        st = kf__err(s->ctx, KF_EUSAGE, "%s: node %lld: no such node", s->dbpath, (long long)id);
    else st = serr(s, rc, "reading a node");
    sqlite3_reset(q);
    return st;
}

kf_status kf_store_each_node(kf_store *s, int (*fn)(void *, const kf_node *), void *arg) {
    if (!s || !fn) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_each_node: NULL argument");
    sqlite3_stmt *q = s->q[Q_EACH];
    if (sqlite3_stmt_busy(q))
        return kf__err(s->ctx, KF_EUSAGE, "kf_store_each_node: called from its own callback");
    sqlite3_bind_int64(q, 1, s->run);
    kf_status st = KF_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        kf_node n;
        if ((st = row_node(s, q, &n, 0))) break;
        if (fn(arg, &n)) break;
    }
    if (!st && rc != SQLITE_ROW && rc != SQLITE_DONE) st = serr(s, rc, "reading the nodes");
    sqlite3_reset(q);
    return st;
}

typedef struct {
    int64_t *v;
    size_t n, cap;
    int oom;
} id_list;

static int collect_tampered(void *arg, const kf_node *n) {
    id_list *l = arg;
    if (!n->tampered) return 0;
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 8;
        int64_t *p = realloc(l->v, c * sizeof *p);
        if (!p) return l->oom = 1;
        l->v = p, l->cap = c;
    }
    l->v[l->n++] = n->id;
    return 0;
}

kf_status kf_store_tampered(kf_store *s, int64_t **ids, size_t *n) {
    if (!s || !ids || !n) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_tampered: NULL argument");
    id_list l = {0};
    kf_status st = kf_store_each_node(s, collect_tampered, &l);
    if (!st && l.oom) st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
    if (st) {
        free(l.v);
        l.v = NULL, l.n = 0;
    }
    *ids = l.v;
    *n = l.n;
    return st;
}

kf_status kf_store_gaps(kf_store *s, int64_t *nodes, int64_t *events) {
    if (!s || !nodes || !events) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_gaps: NULL argument");
    *nodes = *events = 0;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT coalesce(max(id), 0) - count(*) FROM nodes UNION ALL"
                                " SELECT coalesce(max(id), 0) - count(*) FROM events",
                                -1, &q, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        *nodes = sqlite3_column_int64(q, 0);
        if ((rc = sqlite3_step(q)) == SQLITE_ROW) *events = sqlite3_column_int64(q, 0), rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    return rc ? serr(s, rc, "counting rows") : KF_OK;
}

kf_status kf_store_tampered_events(kf_store *s, int64_t *n) {
    if (!s || !n) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_tampered_events: NULL argument");
    *n = 0;
    if (!s->keyed) return KF_OK;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(
        s->db,
        "SELECT (SELECT count(*) FROM events WHERE run IS NOT ?1 OR seal IS NOT " EVENT_MAC ") +"
        " (SELECT count(*) FROM constraints WHERE run IS NOT ?1 OR seal IS NOT " CONS_MAC ")",
        -1, &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, s->run);
        if ((rc = sqlite3_step(q)) == SQLITE_ROW) *n = sqlite3_column_int64(q, 0), rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    return rc ? serr(s, rc, "checking the events' seals") : KF_OK;
}

kf_status kf_store_unfinished(kf_store *s, int64_t **ids, size_t *n) {
    if (!s || !ids || !n) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_unfinished: NULL argument");
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *q = s->q[Q_UNFINISHED];
    sqlite3_bind_int64(q, 1, s->run);
    int64_t *v = NULL;
    size_t len = 0, cap = 0;
    int rc;
    kf_status st = KF_OK;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (len == cap) {
            size_t nc = cap ? 2 * cap : 16;
            int64_t *p = realloc(v, nc * sizeof *v);
            if (!p) {
                st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
                break;
            }
            v = p;
            cap = nc;
        }
        v[len++] = sqlite3_column_int64(q, 0);
    }
    if (!st && rc != SQLITE_DONE) st = serr(s, rc, "listing unfinished nodes");
    sqlite3_reset(q);
    if (st) {
        free(v);
        return st;
    }
    *ids = v;
    *n = len;
    return KF_OK;
}

/* ---- constraints, savepoints, events ---------------------------------------------- */

kf_status kf_store_add_constraint(kf_store *s, int64_t node, int64_t scope, const char *category,
                                  const char *text, const char *predicate_json) {
    if (!s || !text || node < 0 || scope < 0)
        return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_add_constraint: bad argument");
    sqlite3_stmt *q = s->q[Q_CONSTRAINT];
    sqlite3_bind_int64(q, 1, s->run);
    bind_id(q, 2, node);
    bind_id(q, 3, scope);
    bind_text(q, 4, category);
    bind_text(q, 5, text);
    bind_text(q, 6, predicate_json);
    sqlite3_bind_double(q, 7, now_s());
    int64_t id = 0;
    int fk;
    kf_status st = sealed_insert(s, q, Q_SEAL_CONS, 0, 0, 1, "adding a constraint", &id, &fk);
    if (fk)
        return kf__err(s->ctx, KF_EUSAGE, "%s: adding a constraint: node %lld or scope %lld: no such node",
                       s->dbpath, (long long)node, (long long)scope);
    return st;
}

kf_status kf_store_each_constraint(kf_store *s, int (*fn)(void *, const kf_constraint *), void *arg) {
    if (!s || !fn) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_each_constraint: NULL argument");
    sqlite3_stmt *q = s->q[Q_EACH_CONSTRAINT];
    if (sqlite3_stmt_busy(q))
        return kf__err(s->ctx, KF_EUSAGE, "kf_store_each_constraint: called from its own callback");
    sqlite3_bind_int64(q, 1, s->run);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        /* a constraint that does not match its seal was not learnt by kforge: skipped (it
         * would be told to agents as a rule) */
        if (s->keyed && sqlite3_column_int(q, 7) != 1) continue;
        kf_constraint c = {
            .id = sqlite3_column_int64(q, 0),
            .node = sqlite3_column_int64(q, 1),
            .scope = sqlite3_column_int64(q, 2),
            .category = col_text(q, 3),
            .text = col_text(q, 4),
            .predicate_json = col_text(q, 5),
            .created = sqlite3_column_double(q, 6),
        };
        if (!c.text) c.text = "";
        if (fn(arg, &c)) break;
    }
    kf_status st = rc == SQLITE_ROW || rc == SQLITE_DONE ? KF_OK : serr(s, rc, "reading constraints");
    sqlite3_reset(q);
    return st;
}

kf_status kf_store_savepoint(kf_store *s, int64_t node, const char *label) {
    if (!s || !label || node < 0)
        return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_savepoint: bad argument");
    sqlite3_stmt *q = s->q[Q_SAVEPOINT];
    sqlite3_bind_int64(q, 1, s->run);
    bind_id(q, 2, node);
    bind_text(q, 3, label);
    sqlite3_bind_double(q, 4, now_s());
    int rc = step_done(q);
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
        return kf__err(s->ctx, KF_EUSAGE, "%s: savepoint \"%s\": node %lld: no such node", s->dbpath, label,
                       (long long)node);
    return rc ? serr(s, rc, "adding a savepoint") : KF_OK;
}

kf_status kf_store_event(kf_store *s, int64_t node, const char *kind, const char *json) {
    if (!s || !kind || node < 0) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_event: bad argument");
    sqlite3_stmt *q = s->q[Q_EVENT];
    sqlite3_bind_int64(q, 1, s->run);
    bind_id(q, 2, node);
    bind_text(q, 3, kind);
    bind_text(q, 4, json);
    sqlite3_bind_double(q, 5, now_s());
    int64_t id = 0;
    int fk;
    kf_status st = sealed_insert(s, q, Q_SEAL_EVENT, 0, 1, 0, "logging an event", &id, &fk);
    if (fk)
        return kf__err(s->ctx, KF_EUSAGE, "%s: event \"%s\": node %lld: no such node", s->dbpath, kind,
                       (long long)node);
    return st;
}

kf_status kf_store_each_event(kf_store *s, const char *kind,
                              int (*fn)(void *, int64_t, int64_t, const char *, double), void *arg) {
    if (!s || !fn) return kf__err(s ? s->ctx : NULL, KF_EUSAGE, "kf_store_each_event: NULL argument");
    /* rare (tool mode reads its pending actions): prepared per call, not kept */
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, node, json, created, seal IS " EVENT_MAC
                                " FROM events WHERE run = ?1 AND"
                                " (?2 IS NULL OR kind = ?2) ORDER BY id",
                                -1, &q, NULL);
    if (rc) return serr(s, rc, "reading events");
    sqlite3_bind_int64(q, 1, s->run);
    bind_text(q, 2, kind);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        /* an event that does not match its seal was not written by kforge: skipped */
        if (s->keyed && sqlite3_column_int(q, 4) != 1) continue;
        if (fn(arg, sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1), col_text(q, 2),
               sqlite3_column_double(q, 3)))
            break;
    }
    kf_status st = rc == SQLITE_ROW || rc == SQLITE_DONE ? KF_OK : serr(s, rc, "reading events");
    sqlite3_finalize(q);
    return st;
}

/* ---- the writer's lock ------------------------------------------------------------- */

/* RUN/lock's byte ranges: byte 0 is the writer's, byte 1 is held shared by each tool-mode
 * command evaluating without the writer's byte. `kforge run` locks the whole file, so
 * it excludes and is excluded by both; tool-mode commands lock byte 0 alone, so they
 * take turns for their bookkeeping and evaluate side by side under byte 1, each holding
 * the byte LOCK_NODES + N of the node N it evaluates (which no one else can tell from a
 * node a killed submit left unfinished otherwise). */
enum { LOCK_WRITER = 0, LOCK_EVAL = 1 };
#define LOCK_NODES ((off_t)1 << 20) /* + N: held by the command evaluating node N */

struct kf_store_lock {
    int fd;
    unsigned flags;
    int writer; /* byte 0 (or, without KF_STORE_LOCK_QUEUE, the whole file) held */
    char dir[4096], command[64];
};

/* The holder's line in RUN/lock, as "kforge CMD (pid N on HOST since TIME)", or "" when
 * it cannot be read (the holder has not written it yet). *pid: its pid, 0 if unknown;
 * *queue: 1 when the holder is a command that others may queue behind. */
static void lock_holder(int fd, char *out, size_t n, long *pid, int *queue) {
    char buf[512];
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    buf[k > 0 ? k : 0] = 0;
    char host[256] = "?", cmd[64] = "?";
    long long since = 0;
    *pid = 0;
    *queue = 0;
    out[0] = 0;
    if (sscanf(buf, "pid=%ld host=%255s since=%lld queue=%d command=%63[^\n]", pid, host, &since, queue,
               cmd) < 5) {
        *pid = 0;
        return;
    }
    time_t t = (time_t)since;
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    snprintf(out, n, "kforge %s (pid %ld on %s since %s)", cmd, *pid, host, when);
}

/* 1 when some other open file description holds a lock on byte b of fd's file. */
static int byte_held(int fd, off_t b) {
    struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = b, .l_len = 1};
    return !fcntl(fd, F_OFD_GETLK, &q) && q.l_type != F_UNLCK;
}

/* Take l's writer's range (the whole file, or byte 0 for a queueing command), waiting
 * as kf_store_lock_take says; then write the holder's line. */
static kf_status lock_writer(kf_ctx *ctx, kf_store_lock *l) {
    const char *dir = l->dir;
    char path[4200];
    snprintf(path, sizeof path, "%s/lock", dir);
    struct flock fl = {.l_type = F_WRLCK,
                       .l_whence = SEEK_SET,
                       .l_start = LOCK_WRITER,
                       .l_len = (l->flags & KF_STORE_LOCK_QUEUE) ? 1 : 0};
    uint64_t t0 = kf__now_ns();
    for (;;) {
        if (!fcntl(l->fd, F_OFD_SETLK, &fl)) break;
        int e = errno;
        if (e != EAGAIN && e != EACCES) return kf__err(ctx, KF_EIO, "%s: locking: %s", path, strerror(e));
        char who[600];
        long pid;
        int queue;
        lock_holder(l->fd, who, sizeof who, &pid, &queue);
        /* the writer's byte free: what holds the file is tool-mode evaluations */
        int evals = !(l->flags & KF_STORE_LOCK_QUEUE) && !byte_held(l->fd, LOCK_WRITER);
        double waited = (double)(kf__now_ns() - t0) / 1e9;
        /* wait: for a holder that has not written its line yet (it does right after
         * taking the lock); for one that is gone, whose children keep the lock for the
         * moment between their fork and exec (or until their parent-death signal); and,
         * when both queue, for a tool-mode command to end its turn */
        int wait = (!evals && !pid && waited < ((l->flags & KF_STORE_LOCK_QUEUE) ? 10 : 1)) ||
                   (!evals && pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH && waited < 2) ||
                   ((l->flags & KF_STORE_LOCK_QUEUE) && queue && waited < KF_STORE_LOCK_QUEUE_S);
        if (wait) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (evals)
            return kf__err(ctx, KF_EBUSY,
                           "%s is in use by tool-mode submits still evaluating (the latest to take it: "
                           "%s): one writer at a time (tree, best and export still read it); wait for "
                           "them to end, or stop them",
                           dir, who[0] ? who : "another kforge process");
        return kf__err(
            ctx, KF_EBUSY,
            "%s is in use by %s: one writer at a time (tree, best and export still read it); wait for it "
            "to end, or stop it",
            dir, who[0] ? who : "another kforge process");
    }
    char host[256] = "?", line[512];
    if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = 0;
    for (char *p = host; *p; p++)
        if (*p == ' ' || *p == '\n') *p = '_';
    int k = snprintf(line, sizeof line, "pid=%ld host=%s since=%lld queue=%d command=%s\n", (long)getpid(),
                     host, (long long)time(NULL), (l->flags & KF_STORE_LOCK_QUEUE) ? 1 : 0,
                     l->command[0] ? l->command : "?");
    /* the line is for messages only: a lock without it still excludes. Written over the
     * last holder's, then cut to length: a waiter never reads an empty file (it took
     * one for a holder that had not written yet, and a queueing one gave up) */
    if (k > 0 && pwrite(l->fd, line, (size_t)k, 0) == (ssize_t)k && ftruncate(l->fd, k)) (void)0;
    l->writer = 1;
    return KF_OK;
}

kf_status kf_store_lock_take(kf_ctx *ctx, const char *dir, const char *command, unsigned flags,
                             kf_store_lock **out) {
    if (!dir || !*dir || !out) return kf__err(ctx, KF_EUSAGE, "kf_store_lock_take: NULL argument");
    *out = NULL;
    struct stat sb;
    if ((flags & KF_STORE_LOCK_CREATE) && kf__mkdirs(dir))
        return kf__err(ctx, KF_EIO, "%s: %s", dir, strerror(errno));
    if (stat(dir, &sb) < 0) return kf__err(ctx, KF_EIO, "%s: %s (no run here)", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return kf__err(ctx, KF_EIO, "%s: not a directory (a run is a directory)", dir);
    if (strlen(dir) >= sizeof((kf_store_lock *)0)->dir)
        return kf__err(ctx, KF_EUSAGE, "%s: the run directory's name is too long", dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/lock", dir);
    kf_store_lock *l = calloc(1, sizeof *l);
    if (!l) return kf__err(ctx, KF_ENOMEM, "out of memory");
    l->flags = flags;
    snprintf(l->dir, sizeof l->dir, "%s", dir);
    snprintf(l->command, sizeof l->command, "%s", command ? command : "");
    if ((l->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0) {
        kf_status st = kf__err(ctx, kf__io_status(errno), "%s: %s (the run's lock)", path, strerror(errno));
        free(l);
        return st;
    }
    kf_status st = lock_writer(ctx, l);
    if (st) {
        kf_store_unlock(l);
        return st;
    }
    *out = l;
    return KF_OK;
}

kf_status kf_store_lock_evaluate(kf_ctx *ctx, kf_store_lock *l, int64_t node) {
    if (!l || !(l->flags & KF_STORE_LOCK_QUEUE) || !l->writer || node <= 0)
        return kf__err(ctx, KF_EUSAGE, "kf_store_lock_evaluate: not a tool-mode command's writer's lock");
    /* the evaluations' byte first: no instant in which this command holds neither, so a
     * `kforge run` never slips in between */
    struct flock ev = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = LOCK_EVAL, .l_len = 1};
    struct flock nd = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LOCK_NODES + node, .l_len = 1};
    struct flock wr = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = LOCK_WRITER, .l_len = 1};
    if (fcntl(l->fd, F_OFD_SETLK, &ev) || fcntl(l->fd, F_OFD_SETLK, &nd) || fcntl(l->fd, F_OFD_SETLK, &wr))
        return kf__err(ctx, KF_EIO, "%s/lock: locking: %s", l->dir, strerror(errno));
    l->writer = 0;
    return KF_OK;
}

int kf_store_lock_evaluating(const kf_store_lock *l, int64_t node) {
    return l && node > 0 && byte_held(l->fd, LOCK_NODES + node);
}

kf_status kf_store_lock_resume(kf_ctx *ctx, kf_store_lock *l) {
    if (!l) return kf__err(ctx, KF_EUSAGE, "kf_store_lock_resume: NULL argument");
    return l->writer ? KF_OK : lock_writer(ctx, l);
}

void kf_store_unlock(kf_store_lock *l) {
    if (!l) return;
    close(l->fd); /* the lock goes with the last descriptor of its open file description */
    free(l);
}

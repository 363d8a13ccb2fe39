/*
 * db.c - the SQLite helper (db.h): open, errors, and the migration runner shared by the
 * run store and the lessons database. It knows no table but `meta`, and no statement
 * but its own: each schema's steps are its owner's.
 */
#define _GNU_SOURCE
#include "db.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int exec1(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

kf_status kf_db_err(kf_ctx *ctx, sqlite3 *db, const char *path, int rc, const char *what) {
    int base = rc & 0xff;
    if (base == SQLITE_NOMEM) return kf__err(ctx, KF_ENOMEM, "%s: %s: out of memory", path, what);
    if (base == SQLITE_NOTADB)
        return kf__err(ctx, KF_EIO, "%s: %s: not a SQLite database (a damaged file, or not one of kforge's)",
                       path, what);
    /* for an I/O failure, what the system said ("disk I/O error" alone says little) */
    int sys = db && (base == SQLITE_IOERR || base == SQLITE_FULL || base == SQLITE_CANTOPEN)
                  ? sqlite3_system_errno(db)
                  : 0;
    return kf__err(ctx, KF_EIO, "%s: %s: %s%s%s%s", path, what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                   sys ? " (" : "", sys ? strerror(sys) : "", sys ? ")" : "");
}

/* The wait for another connection's write lock: up to KF_DB_BUSY_MS in all, in sleeps of
 * 50 us doubling to 2 ms. SQLite's own busy timeout sleeps 1, 2, 5, 10, ... 100 ms
 * between tries, so with many writers (--jobs evaluators and the main thread, each
 * holding the lock well under a millisecond) a waiting writer slept long after the lock
 * was free: most of the coordinator's wall time with 64 workers. count is how many
 * times this wait has slept already. */
static int busy_wait(void *arg, int count) {
    (void)arg;
    long us = count < 6 ? 50L << count : 2000;
    long slept = count <= 6 ? 50L * ((1L << count) - 1) : 50L * 63 + (long)(count - 6) * 2000;
    if (slept >= KF_DB_BUSY_MS * 1000L) return 0;
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
    return 1;
}

kf_status kf_db_open(kf_ctx *ctx, const char *path, unsigned flags, const char *pragmas, sqlite3 **out) {
    int oflags =
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (flags & KF_DB_CREATE ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, out, oflags, NULL);
    if (rc != SQLITE_OK) return kf_db_err(ctx, *out, path, rc, "opening");
    sqlite3 *db = *out;
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_handler(db, busy_wait, NULL);
    sqlite3_stmt *q = NULL;
    rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        kf_status st = kf_db_err(ctx, db, path, rc, "setting WAL mode");
        sqlite3_finalize(q);
        return st;
    }
    const char *mode = (const char *)sqlite3_column_text(q, 0);
    kf_status st = KF_OK;
    if (flags & KF_DB_WAL && !(mode && !strcmp(mode, "wal")))
        st = kf__err(ctx, KF_EIO,
                     "%s: the database cannot use WAL mode (journal mode stays \"%s\"): is "
                     "its directory on a network file system?",
                     path, mode ? mode : "?");
    sqlite3_finalize(q);
    if (st) return st;
    if ((rc = exec1(db, "PRAGMA synchronous=NORMAL")) || (pragmas && (rc = exec1(db, pragmas))))
        return kf_db_err(ctx, db, path, rc, "setting pragmas");
    return KF_OK;
}

kf_status kf_db_version(kf_ctx *ctx, sqlite3 *db, const char *path, const kf_db_schema *sc, int *ver) {
    sqlite3_stmt *q = NULL;
    *ver = 0;
    int rc =
        sqlite3_prepare_v2(db,
                           "SELECT (SELECT count(*) FROM sqlite_master),"
                           " (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
                           -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        kf_status st = kf_db_err(ctx, db, path, rc, "reading the schema");
        sqlite3_finalize(q);
        return st;
    }
    int64_t objects = sqlite3_column_int64(q, 0), meta = sqlite3_column_int64(q, 1);
    sqlite3_finalize(q);
    if (!objects) return KF_OK;
    if (!meta) return kf__err(ctx, KF_EIO, "%s: not a %s (no meta table)", path, sc->kind);
    rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        kf_status st = kf_db_err(ctx, db, path, rc, "reading meta.schema_version");
        sqlite3_finalize(q);
        return st;
    }
    const char *v = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : -1;
    kf_status st = KF_OK;
    if (!v || !*v || *end || n < 1 || n > 1000000)
        st = kf__err(ctx, KF_EIO, "%s: meta.schema_version is %s%s%s", path, v ? "\"" : "missing", v ? v : "",
                     v ? "\"" : "");
    else *ver = (int)n;
    sqlite3_finalize(q);
    return st;
}

kf_status kf_db_migrate_steps(kf_ctx *ctx, sqlite3 *db, const char *path, const kf_db_schema *sc, int from) {
    for (int v = from; v < sc->nsteps; v++) {
        int rc = exec1(db, sc->steps[v]);
        if (rc == SQLITE_OK) {
            char sql[128];
            snprintf(sql, sizeof sql,
                     "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', '%d')", v + 1);
            rc = exec1(db, sql);
        }
        if (rc != SQLITE_OK) {
            char what[128];
            snprintf(what, sizeof what, "migrating the %s from version %d to %d", sc->name, v, v + 1);
            return kf_db_err(ctx, db, path, rc, what);
        }
    }
    return KF_OK;
}

static kf_status newer(kf_ctx *ctx, const char *path, const kf_db_schema *sc, int ver) {
    return kf__err(ctx, KF_EIO, "%s: %s version %d is newer than this kforge (%s) understands (%d): %s", path,
                   sc->name, ver, KF_VERSION, sc->nsteps, sc->newer);
}

static kf_status rollback(sqlite3 *db, kf_status st) {
    if (!sqlite3_get_autocommit(db)) exec1(db, "ROLLBACK");
    return st;
}

kf_status kf_db_migrate(kf_ctx *ctx, sqlite3 *db, const char *path, const kf_db_schema *sc) {
    int ver;
    kf_status st = kf_db_version(ctx, db, path, sc, &ver);
    if (st) return st;
    if (ver > sc->nsteps) return newer(ctx, path, sc, ver);
    if (ver == sc->nsteps) return KF_OK;
    int rc = exec1(db, "BEGIN IMMEDIATE");
    if (rc) return kf_db_err(ctx, db, path, rc, "starting the migration");
    /* another process may have migrated it meanwhile */
    if ((st = kf_db_version(ctx, db, path, sc, &ver))) return rollback(db, st);
    if (ver > sc->nsteps) return rollback(db, newer(ctx, path, sc, ver));
    if ((st = kf_db_migrate_steps(ctx, db, path, sc, ver))) return rollback(db, st);
    if ((rc = exec1(db, "COMMIT")))
        return rollback(db, kf_db_err(ctx, db, path, rc, "committing the migration"));
    return KF_OK;
}

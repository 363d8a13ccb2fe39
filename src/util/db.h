/*
 * db.h - the one SQLite helper: how the run store (store/) and the lessons database
 * (lessons/) open a file, report SQLite's failures, and bring a file's schema forward.
 *
 * A schema is a table of versioned steps, append only: steps[v] takes a database from
 * version v to v + 1, and the row ('schema_version', 'N') of its `meta` table (TEXT,
 * created by step 0) records the version reached. A database is migrated forward in one
 * transaction under a write lock (BEGIN IMMEDIATE), a newer one is refused, and a file
 * with tables but no `meta` is not the schema's at all.
 */
#ifndef KF_DB_H
#define KF_DB_H

#include "util.h"

#include <sqlite3.h>

#define KF_DB_BUSY_MS 5000 /* how long a statement waits for another connection's write */

/* kf_db_open's flags */
#define KF_DB_CREATE 0x1u /* create the file when it is missing */
#define KF_DB_WAL 0x2u    /* refuse a file that cannot use the WAL journal (else accept it) */

typedef struct {
    const char *const *steps; /* steps[v]: SQL taking version v to v + 1 */
    int nsteps;               /* the version this build writes */
    const char *name;         /* what messages call it: "schema", "lessons schema" */
    const char *kind;         /* what a file without meta is not: "kforge run database" */
    const char *newer;        /* what to do about a newer version: "open the run with a newer kforge" */
} kf_db_schema;

/* An SQLite failure (result code rc, extended or not) as an error on ctx, and its status:
 * "PATH: WHAT: SQLite's message", with the system's reason for an I/O failure, as
 * KF_ENOMEM for memory and KF_EIO otherwise. db may be NULL (no connection yet). */
kf_status kf_db_err(kf_ctx *ctx, sqlite3 *db, const char *path, int rc, const char *what);

/* Open path read-write (flags: KF_DB_*) for one thread (no mutex), with extended result
 * codes, a busy timeout of KF_DB_BUSY_MS, the WAL journal, synchronous=NORMAL, then the
 * statements of pragmas (NULL: none). KF_OK with *out set; else an error, and *out may
 * still hold a connection, which the caller closes (sqlite3_close accepts NULL). */
kf_status kf_db_open(kf_ctx *ctx, const char *path, unsigned flags, const char *pragmas, sqlite3 **out);

/* *ver = the schema version in meta, or 0 for a database without tables. KF_EIO for a
 * database with tables but no meta (not sc's), or a missing or malformed version. */
kf_status kf_db_version(kf_ctx *ctx, sqlite3 *db, const char *path, const kf_db_schema *sc, int *ver);

/* Run sc's steps from version `from` to the last, recording each, inside the caller's
 * transaction (creating a database: from 0, with the rows that come with it). */
kf_status kf_db_migrate_steps(kf_ctx *ctx, sqlite3 *db, const char *path, const kf_db_schema *sc, int from);

/* Bring db to sc's version: nothing to do when it is there; a newer version is refused
 * (KF_EIO); an older one (0 for a database without tables) is migrated in one
 * transaction under a write lock, read again inside it (another process may have
 * migrated it meanwhile), and left as it was when a step fails. */
kf_status kf_db_migrate(kf_ctx *ctx, sqlite3 *db, const char *path, const kf_db_schema *sc);

#endif

/*
 * lessons.c - the lessons database (docs/lessons.md): one SQLite file holding lessons,
 * their FTS5 index and their embeddings; adding, reading, listing, export and import.
 *
 * A lesson is a row of `lessons` (its JSON form is the interface: kf_lessons__from_json
 * validates it, kf_lessons__to_json writes it). `lessons_fts` is an external-content FTS5
 * index over situation, action, boundaries and tags, kept in step by triggers. `embed`
 * holds the lesson's vector under the embedding named in meta.
 *
 * Guarantees: WAL, synchronous=NORMAL, a busy timeout of 5 s; the schema version is in
 * meta and older files are migrated forward in one transaction, newer ones and SQLite
 * files of something else refused (the runner of util/db.h, as the run store's); an
 * import is one transaction (all lines or none); a lesson without a situation or an
 * action never reaches the table (validated here, and NOT NULL there).
 *
 * Not here: ranking (retrieve.c), embeddings (embed.c), distillation (distill.c).
 */
#define _GNU_SOURCE
#include "lessons.h"
#include "../util/db.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE lessons(id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, key TEXT UNIQUE,"
    "  situation TEXT NOT NULL, backend TEXT, arch TEXT, ops TEXT, shape TEXT,"
    "  action TEXT NOT NULL, boundaries TEXT, evidence TEXT,"
    "  confirmations INTEGER NOT NULL DEFAULT 0, refutations INTEGER NOT NULL DEFAULT 0,"
    "  source TEXT NOT NULL CHECK(source IN ('distilled', 'agent', 'person')),"
    "  tags TEXT, retired INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL,"
    "  updated REAL NOT NULL, embed BLOB);"
    "CREATE VIRTUAL TABLE lessons_fts USING fts5(situation, action, boundaries, tags,"
    "  content='lessons', content_rowid='id', tokenize=\"porter unicode61 tokenchars '_'\");"
    "CREATE TRIGGER lessons_ai AFTER INSERT ON lessons BEGIN"
    "  INSERT INTO lessons_fts(rowid, situation, action, boundaries, tags)"
    "  VALUES(new.id, new.situation, new.action, new.boundaries, new.tags); END;"
    "CREATE TRIGGER lessons_ad AFTER DELETE ON lessons BEGIN"
    "  INSERT INTO lessons_fts(lessons_fts, rowid, situation, action, boundaries, tags)"
    "  VALUES('delete', old.id, old.situation, old.action, old.boundaries, old.tags); END;"
    "CREATE TRIGGER lessons_au AFTER UPDATE OF situation, action, boundaries, tags ON lessons"
    "  BEGIN"
    "  INSERT INTO lessons_fts(lessons_fts, rowid, situation, action, boundaries, tags)"
    "  VALUES('delete', old.id, old.situation, old.action, old.boundaries, old.tags);"
    "  INSERT INTO lessons_fts(rowid, situation, action, boundaries, tags)"
    "  VALUES(new.id, new.situation, new.action, new.boundaries, new.tags); END;",
    /* 1 -> 2: what each distilled lesson has counted (distill.c), one row per node */
    "CREATE TABLE distilled(what TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY(what, item)) WITHOUT ROWID;",
};
static const kf_db_schema schema = {migrations, (int)(sizeof migrations / sizeof migrations[0]),
                                    "lessons schema", "kforge lessons database",
                                    "open it with a newer kforge"};

#define COLS                                                                            \
    "id, uid, key, situation, backend, arch, ops, shape, action, boundaries, evidence," \
    " confirmations, refutations, source, tags, retired, created, updated"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static kf_status dberr(kf_lessons *db, const char *what) {
    kf_status st = (sqlite3_errcode(db->db) & 0xff) == SQLITE_NOMEM ? KF_ENOMEM : KF_EIO;
    return kf__err(db->ctx, st, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->db));
}

kf_status kf_lessons__exec(kf_lessons *db, const char *sql) {
    if (sqlite3_exec(db->db, sql, NULL, NULL, NULL) != SQLITE_OK) return dberr(db, sql);
    return KF_OK;
}

double kf_lessons__trust(int64_t c, int64_t r) { return ((double)c + 1.0) / ((double)c + (double)r + 2.0); }

void kf_lesson_free(kf_lesson *l) {
    if (!l) return;
    free(l->key);
    free(l->situation);
    free(l->backend);
    free(l->arch);
    free(l->shape);
    free(l->ops_json);
    free(l->action);
    free(l->boundaries);
    free(l->evidence_json);
    free(l->tags_json);
    memset(l, 0, sizeof *l);
}

int kf_lessons__tag_under(const char *tag, const char *filter) {
    size_t n = strlen(filter);
    while (n && filter[n - 1] == '/') n--;
    return !strncmp(tag, filter, n) && (tag[n] == 0 || tag[n] == '/');
}

/* ---- the JSON form ------------------------------------------------------------------ */

/* A tag: segments of [a-z0-9_.=+-] separated by single '/'. */
static int tag_ok(const char *t) {
    size_t n = strlen(t);
    if (!n || n > 128 || t[0] == '/' || t[n - 1] == '/') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '/' && t[i + 1] == '/') return 0;
        if (!(islower(c) || isdigit(c) || strchr("_.=+-/", c))) return 0;
    }
    return 1;
}

static int name_ok(const char *s, size_t max, const char *extra) {
    size_t n = strlen(s);
    if (!n || n >= max) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr(extra, s[i])) return 0;
    return 1;
}

/* What kf_lessons__from_json's helpers write to err when memory ran out. */
static const char oom_text[] = "out of memory";

/* An optional string field: *out stays NULL when absent or empty. */
static int opt_text(json_t *o, const char *field, const char *label, char **out, char *err, size_t errlen) {
    json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) {
        snprintf(err, errlen, "field '%s': expected a string", label);
        return -1;
    }
    const char *s = json_string_value(v);
    if (*s && !s[strspn(s, " \t\r\n")]) { /* blanks: no words */
        if (strcmp(label, "situation") && strcmp(label, "situation.text") && strcmp(label, "action"))
            return 0; /* an optional field left blank (older exports have some): absent */
        snprintf(err, errlen, "field '%s': only blanks (it needs words)", label);
        return -1;
    }
    if (strlen(s) > KF_LESSONS_TEXT_MAX) {
        snprintf(err, errlen, "field '%s': longer than %d bytes", label, KF_LESSONS_TEXT_MAX);
        return -1;
    }
    if (*s && !(*out = strdup(s))) {
        snprintf(err, errlen, "%s", oom_text);
        return -1;
    }
    return 0;
}

static int tag_array(json_t *o, const char *field, const char *label, char **out, char *err, size_t errlen) {
    json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) {
        snprintf(err, errlen, "field '%s': expected an array of tags", label);
        return -1;
    }
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_string(x) || !tag_ok(json_string_value(x))) {
            char shown[80] = "a non-string";
            if (json_is_string(x)) snprintf(shown, sizeof shown, "\"%.70s\"", json_string_value(x));
            snprintf(err, errlen,
                     "field '%s': %s (tag %zu) is not a tag (segments of a-z 0-9 _ . = + -"
                     " separated by '/', like \"cuda/memory/coalescing\")",
                     label, shown, i + 1);
            return -1;
        }
    }
    if (json_array_size(v) && !(*out = kf__json_dumps(v, JSON_COMPACT))) {
        snprintf(err, errlen, "%s", oom_text);
        return -1;
    }
    return 0;
}

static int check_keys(json_t *o, const char *const *known, const char *where, char *err, size_t errlen) {
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(k, known[i]);
        if (!ok) {
            snprintf(err, errlen, "field '%s%s': unknown field", where, k);
            return -1;
        }
    }
    return 0;
}

static int count(json_t *o, const char *field, const char *label, int64_t *out, char *err, size_t errlen) {
    json_t *v = json_object_get(o, field);
    if (!v) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        snprintf(err, errlen, "field '%s': expected a non-negative integer", label);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

kf_status kf_lessons__from_json(json_t *o, kf_lesson *l, char *err, size_t errlen) {
    static const char *const top[] = {"id",       "key",     "situation", "action", "boundaries",
                                      "evidence", "trust",   "source",    "tags",   "status",
                                      "created",  "updated", NULL};
    static const char *const sit[] = {"text", "backend", "arch", "ops", "shape", NULL};
    static const char *const tr[] = {"confirmations", "refutations", "value", NULL};
    memset(l, 0, sizeof *l);
    snprintf(l->source, sizeof l->source, "person");
    if (!json_is_object(o)) {
        snprintf(err, errlen, "a lesson is a JSON object");
        return KF_EUSAGE;
    }
    if (check_keys(o, top, "", err, errlen)) goto bad;
    json_t *v = json_object_get(o, "id");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || !name_ok(json_string_value(v), sizeof l->id, "._-")) {
            snprintf(err, errlen, "field 'id': 1 to 63 of A-Z a-z 0-9 . _ -");
            goto bad;
        }
        snprintf(l->id, sizeof l->id, "%s", json_string_value(v));
    }
    json_t *s = json_object_get(o, "situation");
    if (json_is_string(s)) { /* a situation in words only: no scope */
        if (opt_text(o, "situation", "situation", &l->situation, err, errlen)) goto bad;
    } else if (json_is_object(s)) {
        if (check_keys(s, sit, "situation.", err, errlen) ||
            opt_text(s, "text", "situation.text", &l->situation, err, errlen) ||
            opt_text(s, "backend", "situation.backend", &l->backend, err, errlen) ||
            opt_text(s, "arch", "situation.arch", &l->arch, err, errlen) ||
            opt_text(s, "shape", "situation.shape", &l->shape, err, errlen) ||
            tag_array(s, "ops", "situation.ops", &l->ops_json, err, errlen))
            goto bad;
        if (l->backend && !name_ok(l->backend, 32, "_")) {
            snprintf(err, errlen, "field 'situation.backend': a backend name such as \"cuda\" or \"c\"");
            goto bad;
        }
        if (l->arch && !name_ok(l->arch, 64, "_.-")) {
            snprintf(err, errlen, "field 'situation.arch': a name such as \"sm_90\" or \"x86_64\"");
            goto bad;
        }
        if (l->shape) {
            char e[256];
            kf_expr *x = kf_expr_parse(l->shape, e, sizeof e);
            if (!x) {
                if (errno == ENOMEM) snprintf(err, errlen, "%s", oom_text);
                else snprintf(err, errlen, "field 'situation.shape': %s", e);
                goto bad;
            }
            kf_expr_free(x);
        }
    } else if (s && !json_is_null(s)) {
        snprintf(err, errlen, "field 'situation': expected an object or a string");
        goto bad;
    }
    if (!l->situation) {
        snprintf(err, errlen,
                 json_is_object(s) ? "field 'situation.text': missing (the situation in words; "
                                     "the other situation fields only scope it)"
                                   : "field 'situation': missing (a lesson needs the situation it applies "
                                     "to, in words: situation.text, and an action)");
        goto bad;
    }
    if (opt_text(o, "action", "action", &l->action, err, errlen)) goto bad;
    if (!l->action) {
        snprintf(err, errlen, "field 'action': missing (a lesson needs an action: what to do)");
        goto bad;
    }
    if (opt_text(o, "boundaries", "boundaries", &l->boundaries, err, errlen) ||
        opt_text(o, "key", "key", &l->key, err, errlen) ||
        tag_array(o, "tags", "tags", &l->tags_json, err, errlen))
        goto bad;
    v = json_object_get(o, "evidence");
    if (v && !json_is_null(v)) {
        if (!json_is_object(v)) {
            snprintf(err, errlen, "field 'evidence': expected an object (nodes, effects, fingerprints)");
            goto bad;
        }
        if (!(l->evidence_json = kf__json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS))) {
            snprintf(err, errlen, "%s", oom_text);
            goto bad;
        }
    }
    v = json_object_get(o, "trust");
    if (v && !json_is_null(v)) {
        if (!json_is_object(v)) {
            snprintf(err, errlen, "field 'trust': expected {\"confirmations\": N, \"refutations\": N}");
            goto bad;
        }
        if (check_keys(v, tr, "trust.", err, errlen) ||
            count(v, "confirmations", "trust.confirmations", &l->confirmations, err, errlen) ||
            count(v, "refutations", "trust.refutations", &l->refutations, err, errlen))
            goto bad;
    }
    v = json_object_get(o, "source");
    if (v && !json_is_null(v)) {
        const char *src = json_string_value(v);
        if (!src || (strcmp(src, "distilled") && strcmp(src, "agent") && strcmp(src, "person"))) {
            snprintf(err, errlen, "field 'source': one of \"distilled\", \"agent\", \"person\"");
            goto bad;
        }
        snprintf(l->source, sizeof l->source, "%s", src);
    }
    v = json_object_get(o, "status");
    if (v && !json_is_null(v)) {
        const char *st = json_string_value(v);
        if (!st || (strcmp(st, "active") && strcmp(st, "retired"))) {
            snprintf(err, errlen, "field 'status': \"active\" or \"retired\"");
            goto bad;
        }
        l->retired = !strcmp(st, "retired");
    }
    v = json_object_get(o, "created");
    if (v) l->created = json_number_value(v);
    v = json_object_get(o, "updated");
    if (v) l->updated = json_number_value(v);
    if (!l->id[0]) { /* the same situation, action and scope are the same lesson */
        /* the scope beyond the backend counts only when there is one, so a lesson
         * without it keeps the id it always had */
        int scoped = l->arch || l->shape || l->ops_json;
        char ops_sorted[4096] = ""; /* the ops as a set: their order names no other scope */
        if (l->ops_json) {
            json_t *a = json_loads(l->ops_json, 0, NULL);
            if (!a) { /* it was just written from valid JSON */
                snprintf(err, errlen, "%s", oom_text);
                goto bad;
            }
            size_t n = json_array_size(a), at = 0;
            const char *tv[64];
            for (size_t i = 0; i < n && i < 64; i++) tv[i] = json_string_value(json_array_get(a, i));
            if (n > 64) n = 64;
            for (size_t i = 1; i < n; i++) /* insertion sort: a handful of tags */
                for (size_t j = i; j > 0 && strcmp(tv[j - 1], tv[j]) > 0; j--) {
                    const char *t = tv[j];
                    tv[j] = tv[j - 1];
                    tv[j - 1] = t;
                }
            for (size_t i = 0; i < n && at < sizeof ops_sorted; i++)
                at += (size_t)snprintf(ops_sorted + at, sizeof ops_sorted - at, "%s%s", i ? "," : "", tv[i]);
            json_decref(a);
        }
        const char *a = l->arch ? l->arch : "", *sh = l->shape ? l->shape : "", *op = ops_sorted;
        const void *parts[10] = {l->situation, "", l->action, l->backend ? l->backend : "", "", a, "",
                                 sh,           "", op};
        size_t lens[10] = {
            strlen(l->situation), 1, strlen(l->action), l->backend ? strlen(l->backend) : 0, 1, strlen(a), 1,
            strlen(sh),           1, strlen(op)};
        char hex[65];
        if (kf__sha256_hex(parts, lens, scoped ? 10 : 4, hex)) {
            snprintf(err, errlen, "SHA-256 failed");
            kf_lesson_free(l);
            return KF_EINTERNAL;
        }
        snprintf(l->id, sizeof l->id, "L-%.12s", hex);
    }
    return KF_OK;
bad: /* the lesson's fault, unless memory ran out */
    kf_lesson_free(l);
    return strcmp(err, oom_text) ? KF_EUSAGE : KF_ENOMEM;
}

json_t *kf_lessons__to_json(const kf_lesson *l) {
    json_t *sit = json_pack("{s:s}", "text", l->situation);
    if (l->backend) json_object_set_new(sit, "backend", json_string(l->backend));
    if (l->arch) json_object_set_new(sit, "arch", json_string(l->arch));
    if (l->ops_json) json_object_set_new(sit, "ops", json_loads(l->ops_json, 0, NULL));
    if (l->shape) json_object_set_new(sit, "shape", json_string(l->shape));
    json_t *o = json_pack("{s:s, s:o, s:s}", "id", l->id, "situation", sit, "action", l->action);
    if (l->boundaries) json_object_set_new(o, "boundaries", json_string(l->boundaries));
    if (l->evidence_json) json_object_set_new(o, "evidence", json_loads(l->evidence_json, 0, NULL));
    json_object_set_new(o, "trust",
                        json_pack("{s:I, s:I, s:f}", "confirmations", (json_int_t)l->confirmations,
                                  "refutations", (json_int_t)l->refutations, "value",
                                  kf_lessons__trust(l->confirmations, l->refutations)));
    json_object_set_new(o, "source", json_string(l->source));
    json_object_set_new(o, "tags", l->tags_json ? json_loads(l->tags_json, 0, NULL) : json_array());
    json_object_set_new(o, "status", json_string(l->retired ? "retired" : "active"));
    if (l->key) json_object_set_new(o, "key", json_string(l->key));
    json_object_set_new(o, "created", json_real(l->created));
    json_object_set_new(o, "updated", json_real(l->updated));
    return o;
}

char *kf_lessons__doc_text(const kf_lesson *l) {
    return kf__asprintf("%s\n%s\n%s\n%s %s", l->situation, l->action, l->boundaries ? l->boundaries : "",
                        l->tags_json ? l->tags_json : "", l->ops_json ? l->ops_json : "");
}

/* ---- rows ------------------------------------------------------------------------ */

/* Column i's text, copied (NULL when NULL or empty); *oom set when the copy failed. */
static char *col(sqlite3_stmt *q, int i, int *oom) {
    const unsigned char *t = sqlite3_column_text(q, i);
    char *p = t && *t ? strdup((const char *)t) : NULL;
    if (t && *t && !p) *oom = 1;
    return p;
}

/* The lesson of q's row: 0, or -1 (l freed) when memory ran out. */
static int row(sqlite3_stmt *q, kf_lesson *l) {
    int oom = 0;
    memset(l, 0, sizeof *l);
    l->rowid = sqlite3_column_int64(q, 0);
    snprintf(l->id, sizeof l->id, "%s", (const char *)sqlite3_column_text(q, 1));
    l->key = col(q, 2, &oom);
    l->situation = col(q, 3, &oom);
    l->backend = col(q, 4, &oom);
    l->arch = col(q, 5, &oom);
    l->ops_json = col(q, 6, &oom);
    l->shape = col(q, 7, &oom);
    l->action = col(q, 8, &oom);
    l->boundaries = col(q, 9, &oom);
    l->evidence_json = col(q, 10, &oom);
    l->confirmations = sqlite3_column_int64(q, 11);
    l->refutations = sqlite3_column_int64(q, 12);
    snprintf(l->source, sizeof l->source, "%s", (const char *)sqlite3_column_text(q, 13));
    l->tags_json = col(q, 14, &oom);
    l->retired = sqlite3_column_int(q, 15);
    l->created = sqlite3_column_double(q, 16);
    l->updated = sqlite3_column_double(q, 17);
    if (oom) kf_lesson_free(l);
    return oom ? -1 : 0;
}

static void bind_s(sqlite3_stmt *q, int i, const char *s) {
    if (s) sqlite3_bind_text(q, i, s, -1, SQLITE_STATIC);
    else sqlite3_bind_null(q, i);
}

kf_status kf_lessons__put(kf_lessons *db, kf_lesson *l) {
    /* an endpoint's dimensions are known from its first answer: room for its maximum */
    float *vec = malloc(sizeof(float) * (db->embed_url ? KF_LESSONS_MAX_DIM : (size_t)db->dim));
    char *doc = kf_lessons__doc_text(l);
    if (!vec || !doc) {
        free(vec);
        free(doc);
        return kf__err(db->ctx, KF_ENOMEM, "out of memory");
    }
    const char *t[1] = {doc};
    kf_status st = kf_lessons__embed(db, t, 1, vec);
    free(doc);
    if (st) {
        free(vec);
        return st;
    }
    int dim = db->dim;
    double now = now_s();
    if (!l->created) l->created = now;
    l->updated = l->updated ? l->updated : now;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(
        db->db,
        "INSERT INTO lessons(uid, key, situation, backend, arch, ops, shape, action, boundaries,"
        " evidence, confirmations, refutations, source, tags, retired, created, updated, embed)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
        " ON CONFLICT(uid) DO UPDATE SET key = excluded.key, situation = excluded.situation,"
        " backend = excluded.backend, arch = excluded.arch, ops = excluded.ops,"
        " shape = excluded.shape, action = excluded.action, boundaries = excluded.boundaries,"
        " evidence = excluded.evidence, confirmations = excluded.confirmations,"
        " refutations = excluded.refutations, source = excluded.source, tags = excluded.tags,"
        " retired = excluded.retired, created = excluded.created, updated = excluded.updated,"
        " embed = excluded.embed RETURNING id",
        -1, &q, NULL);
    if (rc != SQLITE_OK) {
        st = dberr(db, "preparing the insert");
        goto out;
    }
    bind_s(q, 1, l->id);
    bind_s(q, 2, l->key);
    bind_s(q, 3, l->situation);
    bind_s(q, 4, l->backend);
    bind_s(q, 5, l->arch);
    bind_s(q, 6, l->ops_json);
    bind_s(q, 7, l->shape);
    bind_s(q, 8, l->action);
    bind_s(q, 9, l->boundaries);
    bind_s(q, 10, l->evidence_json);
    sqlite3_bind_int64(q, 11, l->confirmations);
    sqlite3_bind_int64(q, 12, l->refutations);
    bind_s(q, 13, l->source);
    bind_s(q, 14, l->tags_json);
    sqlite3_bind_int(q, 15, l->retired);
    sqlite3_bind_double(q, 16, l->created);
    sqlite3_bind_double(q, 17, l->updated);
    sqlite3_bind_blob(q, 18, vec, (int)(sizeof(float) * (size_t)dim), SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        st = dberr(db, "storing a lesson");
        goto out;
    }
    l->rowid = sqlite3_column_int64(q, 0);
    /* the statement's end can still fail (out of memory: SQLite then rolls back) */
    if (sqlite3_step(q) != SQLITE_DONE) {
        st = dberr(db, "storing a lesson");
        goto out;
    }
    kf_lessons__cache_drop(db);
out:
    sqlite3_finalize(q);
    free(vec);
    return st;
}

static kf_status get_where(kf_lessons *db, const char *where, const char *val, kf_lesson *l, int *found) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT " COLS " FROM lessons WHERE %s = ?1", where);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->db, sql, -1, &q, NULL) != SQLITE_OK) return dberr(db, "reading a lesson");
    sqlite3_bind_text(q, 1, val, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    kf_status st = KF_OK;
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW && row(q, l)) {
        *found = 0;
        st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        st = dberr(db, "reading a lesson");
    }
    sqlite3_finalize(q);
    return st;
}

kf_status kf_lessons__get(kf_lessons *db, const char *id, kf_lesson *l) {
    int found;
    kf_status st = get_where(db, "uid", id, l, &found);
    if (!st && !found) return kf__err(db->ctx, KF_EUSAGE, "%s: no lesson '%s'", db->path, id);
    return st;
}

kf_status kf_lessons__get_by_key(kf_lessons *db, const char *key, kf_lesson *l, int *found) {
    return get_where(db, "key", key, l, found);
}

kf_status kf_lessons__each(kf_lessons *db, int (*fn)(void *, kf_lesson *), void *arg) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->db, "SELECT " COLS " FROM lessons ORDER BY id", -1, &q, NULL))
        return dberr(db, "listing lessons");
    int rc;
    kf_status st = KF_OK;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        kf_lesson l;
        if (row(q, &l)) {
            st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        int stop = fn(arg, &l);
        kf_lesson_free(&l);
        if (stop) break;
    }
    if (!st && rc != SQLITE_ROW && rc != SQLITE_DONE) st = dberr(db, "listing lessons");
    sqlite3_finalize(q);
    return st;
}

/* ---- open ------------------------------------------------------------------------- */

static kf_status meta_get(kf_lessons *db, const char *key, char **out) {
    *out = NULL;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->db, "SELECT value FROM meta WHERE key = ?1", -1, &q, NULL))
        return dberr(db, "reading meta");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    const char *v = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
    kf_status st = KF_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) st = dberr(db, "reading meta");
    else if (v && *v && !(*out = strdup(v))) st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    sqlite3_finalize(q);
    return st;
}

static kf_status meta_set(kf_lessons *db, const char *key, const char *val) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", -1, &q, NULL))
        return dberr(db, "writing meta");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, val, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? KF_OK : dberr(db, "writing meta");
}

/* Embed every lesson again under db's embedding (it changed since they were stored). */
static kf_status reembed(kf_lessons *db) {
    kf_status st = kf_lessons__exec(db, "BEGIN IMMEDIATE");
    if (st) return st;
    sqlite3_stmt *q = NULL, *u = NULL;
    if (sqlite3_prepare_v2(db->db, "SELECT " COLS " FROM lessons ORDER BY id", -1, &q, NULL) ||
        sqlite3_prepare_v2(db->db, "UPDATE lessons SET embed = ?1 WHERE id = ?2", -1, &u, NULL)) {
        st = dberr(db, "re-embedding");
        goto out;
    }
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        kf_lesson l;
        if (row(q, &l)) {
            st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
            goto out;
        }
        char *doc = kf_lessons__doc_text(&l);
        const char *t[1] = {doc};
        float *v = malloc(sizeof(float) * KF_LESSONS_MAX_DIM);
        st = doc && v ? kf_lessons__embed(db, t, 1, v) : kf__err(db->ctx, KF_ENOMEM, "out of memory");
        if (!st) {
            sqlite3_bind_blob(u, 1, v, (int)(sizeof(float) * (size_t)db->dim), SQLITE_STATIC);
            sqlite3_bind_int64(u, 2, l.rowid);
            if (sqlite3_step(u) != SQLITE_DONE) st = dberr(db, "re-embedding");
            sqlite3_reset(u);
        }
        free(v);
        free(doc);
        kf_lesson_free(&l);
        if (st) goto out;
    }
    if (rc != SQLITE_DONE) { /* not every lesson was read: not every one re-embedded */
        st = dberr(db, "re-embedding");
        goto out;
    }
    char num[16];
    snprintf(num, sizeof num, "%d", db->dim);
    if ((st = meta_set(db, "embedding", db->embed_name)) || (st = meta_set(db, "embed_dim", num))) goto out;
out:
    sqlite3_finalize(q);
    sqlite3_finalize(u);
    if (st) sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    else st = kf_lessons__exec(db, "COMMIT");
    return st;
}

void kf_lessons_opts_init(kf_lessons_opts *o) {
    memset(o, 0, sizeof *o);
    o->timeout_s = 30;
}

void kf_lessons_default_path(char *out, size_t n) {
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(out, n, "%s/kforge/lessons.db", xdg);
    else if (home && *home) snprintf(out, n, "%s/.local/share/kforge/lessons.db", home);
    else snprintf(out, n, "lessons.db");
}

const char *kf_lessons_embedding(const kf_lessons *db) { return db->embed_name; }

kf_status kf_lessons_open(kf_ctx *ctx, const char *path, const kf_lessons_opts *o, kf_lessons **out) {
    *out = NULL;
    kf_lessons_opts def;
    if (!o) {
        kf_lessons_opts_init(&def);
        o = &def;
    }
    if (!path || !*path) return kf__err(ctx, KF_EUSAGE, "lessons: no database path");
    if (o->embed_url && (strncmp(o->embed_url, "http://", 7) && strncmp(o->embed_url, "https://", 8)))
        return kf__err(ctx, KF_EUSAGE, "lessons: embeddings URL '%s' is not http:// or https://",
                       o->embed_url);
    if (o->embed_url && (!o->embed_model || !*o->embed_model))
        return kf__err(ctx, KF_EUSAGE, "lessons: an embeddings URL needs a model name");
    kf_lessons *db = calloc(1, sizeof *db);
    if (!db) return kf__err(ctx, KF_ENOMEM, "out of memory");
    db->ctx = ctx;
    db->path = strdup(path);
    db->timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
    if (o->embed_url) {
        db->embed_url = strdup(o->embed_url);
        size_t n = db->embed_url ? strlen(db->embed_url) : 0;
        while (n > 8 && db->embed_url[n - 1] == '/') db->embed_url[--n] = 0;
        db->embed_model = strdup(o->embed_model);
        db->embed_name = db->embed_url ? kf__asprintf("openai:%s@%s", o->embed_model, db->embed_url) : NULL;
        const char *k = getenv(o->api_key_env ? o->api_key_env : "OPENAI_API_KEY");
        if (k && *k && !(db->api_key = strdup(k))) { /* out of memory, as below */
            free(db->embed_model);
            db->embed_model = NULL;
        }
    } else {
        db->embed_name = strdup(KF_LESSONS_HASH_NAME);
        db->dim = KF_LESSONS_HASH_DIM;
    }
    kf_status st = KF_OK;
    if (!db->path || !db->embed_name || (o->embed_url && !db->embed_model)) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto fail;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (kf__mkdirs(dir) && errno != EEXIST) {
            st = kf__err(ctx, KF_EIO, "%s: cannot create the directory: %s", dir, strerror(errno));
            goto fail;
        }
    }
    if ((st = kf_db_open(ctx, path, KF_DB_CREATE, NULL, &db->db)) ||
        (st = kf_db_migrate(ctx, db->db, path, &schema)))
        goto fail;
    char *name = NULL, *dim = NULL;
    if ((st = meta_get(db, "embedding", &name)) || (st = meta_get(db, "embed_dim", &dim))) goto fail;
    if (name && !strcmp(name, db->embed_name)) {
        db->dim = dim ? (int)strtol(dim, NULL, 10) : db->dim;
    } else {
        st = reembed(db);
    }
    free(name);
    free(dim);
    if (st) goto fail;
    *out = db;
    return KF_OK;
fail:
    kf_lessons_close(db);
    return st;
}

void kf_lessons_close(kf_lessons *db) {
    if (!db) return;
    kf_lessons__cache_drop(db);
    sqlite3_close(db->db);
    free(db->path);
    free(db->embed_name);
    free(db->embed_url);
    free(db->embed_model);
    free(db->api_key);
    free(db);
}

/* ---- the public calls ---------------------------------------------------------------- */

/* A lesson given without an id but with the key of one stored (a distilled lesson
 * exported by an earlier kforge, whose ids were computed differently, and its id
 * removed) is that lesson: it takes its id, and replaces it. */
static kf_status adopt_key_id(kf_lessons *db, json_t *o, kf_lesson *l) {
    json_t *v = json_object_get(o, "id");
    if ((v && !json_is_null(v)) || !l->key) return KF_OK;
    kf_lesson old;
    int found = 0;
    kf_status st = get_where(db, "key", l->key, &old, &found);
    if (st || !found) return st;
    snprintf(l->id, sizeof l->id, "%s", old.id);
    kf_lesson_free(&old);
    return KF_OK;
}

kf_status kf_lessons_add_json(kf_lessons *db, const char *json, char id[64]) {
    return kf_lessons_add_json_ex(db, json, id, NULL);
}

kf_status kf_lessons_add_json_ex(kf_lessons *db, const char *json, char id[64], int *replaced) {
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    if (!o) return kf__err(db->ctx, KF_EUSAGE, "lesson: not JSON: %s (column %d)", je.text, je.column);
    kf_lesson l;
    char err[512];
    kf_status st = kf_lessons__from_json(o, &l, err, sizeof err);
    int refused = st != KF_OK;
    if (!st && (st = adopt_key_id(db, o, &l))) kf_lesson_free(&l);
    json_decref(o);
    if (refused || st == KF_EUSAGE) return kf__err(db->ctx, st, "lesson refused: %s", err);
    if (st) return st;
    if (replaced) {
        sqlite3_stmt *q = NULL;
        *replaced = 0;
        if (sqlite3_prepare_v2(db->db, "SELECT 1 FROM lessons WHERE uid = ?1", -1, &q, NULL) == SQLITE_OK) {
            sqlite3_bind_text(q, 1, l.id, -1, SQLITE_STATIC);
            *replaced = sqlite3_step(q) == SQLITE_ROW;
        }
        sqlite3_finalize(q);
    }
    st = kf_lessons__put(db, &l);
    if (!st && id) snprintf(id, 64, "%s", l.id);
    kf_lesson_free(&l);
    return st;
}

kf_status kf_lessons_get_json(kf_lessons *db, const char *id, char **json) {
    kf_lesson l;
    kf_status st = kf_lessons__get(db, id, &l);
    if (st) return st;
    json_t *o = kf_lessons__to_json(&l);
    *json = kf__json_dumps(o, JSON_INDENT(1));
    json_decref(o);
    kf_lesson_free(&l);
    return *json ? KF_OK : kf__err(db->ctx, KF_ENOMEM, "out of memory");
}

typedef struct {
    json_t *arr;
    const char *const *tags;
    int ntags, all;
    kf_buf *b;
} lister;

static int tags_match(const char *tags_json, const char *const *filters, int n) {
    if (!n) return 1;
    json_t *t = tags_json ? json_loads(tags_json, 0, NULL) : NULL;
    int ok = 1;
    for (int f = 0; f < n && ok; f++) {
        int hit = 0;
        size_t i;
        json_t *x;
        json_array_foreach(t, i, x) hit |= kf_lessons__tag_under(json_string_value(x), filters[f]);
        ok = hit;
    }
    json_decref(t);
    return ok;
}

static int list_one(void *arg, kf_lesson *l) {
    lister *ls = arg;
    if ((!ls->all && l->retired) || !tags_match(l->tags_json, ls->tags, ls->ntags)) return 0;
    json_t *o = kf_lessons__to_json(l);
    if (ls->arr) {
        json_array_append_new(ls->arr, o);
    } else {
        char *s = kf__json_dumps(o, JSON_COMPACT);
        if (s) kf_buf_printf(ls->b, "%s\n", s);
        free(s);
        json_decref(o);
    }
    return 0;
}

kf_status kf_lessons_list_json(kf_lessons *db, const char *const *tags, int ntags, int all, char **json) {
    lister ls = {json_array(), tags, ntags, all, NULL};
    kf_status st = kf_lessons__each(db, list_one, &ls);
    if (!st) {
        *json = kf__json_dumps(ls.arr, JSON_INDENT(1));
        if (!*json) st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    }
    json_decref(ls.arr);
    return st;
}

kf_status kf_lessons_export(kf_lessons *db, char **jsonl) {
    kf_buf b;
    kf_buf_init(&b, (size_t)1 << 32);
    lister ls = {NULL, NULL, 0, 1, &b};
    kf_status st = kf_lessons__each(db, list_one, &ls);
    if (!st && !b.p) kf_buf_append(&b, "", 0);
    if (!st && (!b.p || b.dropped)) st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    if (st) {
        kf_buf_free(&b);
        return st;
    }
    *jsonl = b.p;
    return KF_OK;
}

kf_status kf_lessons_check_json(kf_ctx *ctx, const char *json) {
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    if (!o) return kf__err(ctx, KF_EUSAGE, "lesson: not JSON: %s (column %d)", je.text, je.column);
    kf_lesson l;
    char err[512];
    kf_status st = kf_lessons__from_json(o, &l, err, sizeof err);
    json_decref(o);
    if (st) return kf__err(ctx, st, "lesson refused: %s", err);
    kf_lesson_free(&l);
    return KF_OK;
}

kf_status kf_lessons_check_jsonl(kf_ctx *ctx, const char *text, size_t len, const char *name) {
    if (!name) name = "import";
    size_t pos = 0;
    int line = 0;
    while (pos < len) {
        const char *p = text + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + 1;
        line++;
        size_t k = 0;
        while (k < n && isspace((unsigned char)p[k])) k++;
        if (k == n) continue;
        json_error_t je;
        json_t *o = json_loadb(p, n, 0, &je);
        if (!o)
            return kf__err(ctx, KF_EUSAGE, "%s:%d: not a JSON object: %s (column %d)", name, line, je.text,
                           je.column);
        kf_lesson l;
        char err[512];
        kf_status st = kf_lessons__from_json(o, &l, err, sizeof err);
        json_decref(o);
        if (st) return kf__err(ctx, st, "%s:%d: %s", name, line, err);
        kf_lesson_free(&l);
    }
    return KF_OK;
}

kf_status kf_lessons_import(kf_lessons *db, const char *text, size_t len, const char *name, int *added,
                            int *updated) {
    int na = 0, nu = 0;
    if (!name) name = "import";
    kf_status st = kf_lessons__exec(db, "BEGIN IMMEDIATE");
    if (st) return st;
    size_t pos = 0;
    int line = 0;
    while (pos < len) {
        const char *p = text + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + 1;
        line++;
        size_t k = 0;
        while (k < n && isspace((unsigned char)p[k])) k++;
        if (k == n) continue;
        json_error_t je;
        unsigned long jf = kf__json_failures();
        json_t *o = json_loadb(p, n, 0, &je);
        if (!o && (json_error_code(&je) == json_error_out_of_memory || kf__json_failures() != jf)) {
            st = kf__err(db->ctx, KF_ENOMEM, "%s:%d: out of memory", name, line);
            break;
        }
        if (!o) {
            st = kf__err(db->ctx, KF_EUSAGE, "%s:%d: not a JSON object: %s (column %d)", name, line, je.text,
                         je.column);
            break;
        }
        kf_lesson l;
        char err[512];
        st = kf_lessons__from_json(o, &l, err, sizeof err);
        if (st) {
            json_decref(o);
            st = kf__err(db->ctx, st, "%s:%d: %s", name, line, err);
            break;
        }
        st = adopt_key_id(db, o, &l);
        json_decref(o);
        if (st) {
            kf_lesson_free(&l);
            break;
        }
        kf_lesson old;
        int found = 0;
        if ((st = get_where(db, "uid", l.id, &old, &found))) {
            kf_lesson_free(&l);
            break;
        }
        if (found) kf_lesson_free(&old);
        st = kf_lessons__put(db, &l);
        kf_lesson_free(&l);
        if (st) {
            char msg[KF_ERRMAX];
            snprintf(msg, sizeof msg, "%s", kf_errmsg(db->ctx));
            st = kf__err(db->ctx, st, "%s:%d: %s", name, line, msg);
            break;
        }
        if (found) nu++;
        else na++;
    }
    if (st) {
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
        kf_lessons__cache_drop(db);
        return st;
    }
    if ((st = kf_lessons__exec(db, "COMMIT"))) return st;
    if (added) *added = na;
    if (updated) *updated = nu;
    return KF_OK;
}

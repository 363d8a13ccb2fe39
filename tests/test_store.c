/*
 * test_store.c - the run store (src/store/): every field survives a round trip; sources
 * are content-addressed; a changed task is refused on resume; schema versions migrate
 * forward and a newer one is refused; a writer SIGKILLed at random moments never loses
 * or damages a recorded outcome; concurrent writers (threads, processes) all land;
 * broken run directories give clear errors.
 */
#define _GNU_SOURCE
#include "kft.h"
#include "fault.h"

#include "store/store.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *task_json =
    "{\"name\":\"twice\",\"backend\":\"c\",\"entry\":\"twice\",\n"
    " \"sizes\":{\"n\":[1,4096]},\n"
    " \"args\":[{\"name\":\"x\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"in\"},\n"
    "          {\"name\":\"y\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"out\"},\n"
    "          {\"name\":\"n\",\"type\":\"i64\",\"value\":\"n\"}],\n"
    " \"shapes\":[{\"n\":1000}],\"hidden\":{\"count\":3}}\n";
static const char *task_ref =
    "#include <stdint.h>\n"
    "void twice(const float *x, float *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i]; }\n";

/* A scratch directory: ROOT/task (a task) and ROOT/run (where runs go). */
typedef struct {
    char root[128], task[160], run[160];
} scratch;

static void write_text(const char *path, const char *text, const char *mode) {
    FILE *f = fopen(path, mode);
    CHECKF(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    CHECK(fclose(f) == 0);
}

static void scratch_make(scratch *sc) {
    snprintf(sc->root, sizeof sc->root, "/tmp/kft-store-XXXXXX");
    CHECK(mkdtemp(sc->root));
    snprintf(sc->task, sizeof sc->task, "%s/task", sc->root);
    snprintf(sc->run, sizeof sc->run, "%s/run", sc->root);
    CHECK(mkdir(sc->task, 0755) == 0);
    char p[256];
    snprintf(p, sizeof p, "%s/task.json", sc->task);
    write_text(p, task_json, "w");
    snprintf(p, sizeof p, "%s/reference.c", sc->task);
    write_text(p, task_ref, "w");
}

static kf_task *load(kf_ctx *ctx, const char *dir) {
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, dir, &t) == KF_OK, "%s: %s", dir, kf_errmsg(ctx));
    return t;
}

static kf_store *must_open(kf_ctx *ctx, const char *run, const kf_task *t) {
    kf_store *s = NULL;
    kf_status st = kf_store_open(ctx, run, t, &s);
    CHECKF(st == KF_OK, "open %s: %s: %s", run, kf_strstatus(st), kf_errmsg(ctx));
    return s;
}

#define HAS(ctx, needle) \
    CHECKF(strstr(kf_errmsg(ctx), needle), "message \"%s\" lacks \"%s\"", kf_errmsg(ctx), needle)

static int streq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* Run a statement on run.db directly (fakes, damage, inspection); returns the first
 * column of the first row as text (static) or "". */
static const char *raw_sql(const char *run, const char *sql) {
    static char out[256];
    char p[256];
    snprintf(p, sizeof p, "%s/run.db", run);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    CHECKF(rc == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    rc = sqlite3_step(q);
    CHECKF(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    snprintf(out, sizeof out, "%s",
             rc == SQLITE_ROW && sqlite3_column_text(q, 0) ? (const char *)sqlite3_column_text(q, 0) : "");
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
}

/* ---- round trip ---------------------------------------------------------------- */

/* Seals at the store (docs/run.md "Seals"): a node is sealed from the moment it is
 * added; an outcome is recorded only on the row that was evaluated (its source swapped
 * meanwhile is refused, tests/redteam/notes/seal S1); a node reopened by hand (finished ->
 * proposed, S4) reads as tampered, and the run's counts no longer match: the run is
 * "tampered" and records nothing more. */
static void t_seal_identity(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECKF(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(!strcmp(kf_store_seal_state(s), "sealed"));
    char h1[65], h2[65];
    CHECK(kf_store_put_source(s, "int honest;", 11, "c", h1) == KF_OK);
    CHECK(kf_store_put_source(s, "int trapdoor;", 13, "c", h2) == KF_OK);
    kf_node n = {0};
    memcpy(n.src_hash, h1, 65);
    strcpy(n.ext, "c");
    strcpy(n.proposer, "builtin");
    strcpy(n.category, "tiling");
    CHECK(kf_store_add_node(s, &n) == KF_OK);
    kf_node g;
    CHECK(kf_store_get_node(s, n.id, &g) == KF_OK && g.state == KF_NODE_PROPOSED && !g.tampered);
    kf_node_free(&g);
    /* swapped while it was being evaluated */
    char q[400];
    snprintf(q, sizeof q, "UPDATE nodes SET src_hash = '%s' WHERE id = %lld", h2, (long long)n.id);
    raw_sql(sc.run, q);
    n.state = KF_NODE_REVERTED;
    n.speedup = 3;
    n.finished = 1;
    CHECK(kft_finish_node(s, &n) == KF_EUSAGE);
    HAS(ctx, "does not match its seal");
    /* and the swap itself shows: the proposed row no longer matches its seal */
    CHECK(kf_store_get_node(s, n.id, &g) == KF_OK && g.tampered && !strcmp(g.reasons, "tampered"));
    kf_node_free(&g);
    snprintf(q, sizeof q, "UPDATE nodes SET src_hash = '%s' WHERE id = %lld", h1, (long long)n.id);
    raw_sql(sc.run, q);
    CHECKF(kft_finish_node(s, &n) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(kf_store_get_node(s, n.id, &g) == KF_OK && g.state == KF_NODE_REVERTED && !g.tampered);
    kf_node_free(&g);
    /* reopened by hand */
    snprintf(q, sizeof q, "UPDATE nodes SET state = 'proposed', seal = NULL, finished = NULL WHERE id = %lld",
             (long long)n.id);
    raw_sql(sc.run, q);
    CHECK(kf_store_get_node(s, n.id, &g) == KF_OK && g.tampered && g.state == KF_NODE_REJECTED);
    kf_node_free(&g);
    int64_t *bad = NULL;
    size_t nbad = 0;
    CHECK(kf_store_tampered(s, &bad, &nbad) == KF_OK && nbad == 1 && bad[0] == n.id);
    free(bad);
    kf_store_close(s);
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_OK);
    CHECK(!strcmp(kf_store_seal_state(s), "tampered"));
    kf_node m = {0};
    memcpy(m.src_hash, h1, 65);
    strcpy(m.ext, "c");
    strcpy(m.proposer, "builtin");
    strcpy(m.category, "tiling");
    CHECK(kf_store_add_node(s, &m) == KF_EUSAGE);
    HAS(ctx, "nothing more is recorded");
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

static void t_roundtrip(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECKF(kf_store_create(ctx, sc.run, t, "{\"seed\": 7}", &s) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(!strcmp(kf_store_config(s), "{\"seed\": 7}"));
    CHECK(!strcmp(kf_store_task_fingerprint(s), t->fingerprint));
    CHECK(strstr(kf_store_task_dir(s), "/task") != NULL);
    CHECK(kf_store_check(s) == KF_OK);

    /* states: names round-trip */
    for (int i = 0; i < KF_NODE_STATE_COUNT; i++) {
        kf_node_state back;
        CHECK(kf_node_state_parse(kf_node_state_name((kf_node_state)i), &back) == 0);
        CHECK(back == (kf_node_state)i);
    }
    kf_node_state junk;
    CHECK(kf_node_state_parse("kept ", &junk) == -1);
    CHECK(!strcmp(kf_node_state_name(KF_NODE_COMPILE_FAILED), "compile_failed"));

    const char *text = "void twice(const float *x, float *y, long n) { /* A */ }\n";
    char h[65];
    CHECK(kf_store_put_source(s, text, strlen(text), "c", h) == KF_OK);

    kf_node a = {0};
    memcpy(a.src_hash, h, 65);
    strcpy(a.ext, "c");
    strcpy(a.proposer, "builtin");
    strcpy(a.category, "tiling");
    a.params_json = "{\"BLOCK\": 256}";
    a.note = "first";
    a.tokens_in = 11;
    CHECK(kf_store_add_node(s, &a) == KF_OK);
    CHECK(a.id > 0 && a.state == KF_NODE_PROPOSED && a.created > 1e9 && a.finished == 0);

    /* the outcome: every field */
    a.state = KF_NODE_MEASURED;
    a.reasons = "wrong_result,timeout";
    a.verdict_json = "{\"verdict\": \"accepted\", \"x\": \"\xc3\xa9\"}";
    a.shapes_json = "[{\"n\": 1000, \"speedup\": 1.5}]";
    a.speedup = 1.2345678901234567;
    a.cost_s = 2.5;
    a.tokens_in = 123456789012LL;
    a.tokens_out = -1;
    a.finished = 1700000000.25;
    a.note = NULL; /* keeps "first" */
    CHECKF(kft_finish_node(s, &a) == KF_OK, "%s", kf_errmsg(ctx));

    kf_node g;
    CHECK(kf_store_get_node(s, a.id, &g) == KF_OK);
    CHECK(g.id == a.id && g.parent == 0);
    CHECK(!strcmp(g.src_hash, h) && !strcmp(g.ext, "c"));
    CHECK(!strcmp(g.proposer, "builtin") && !strcmp(g.category, "tiling"));
    CHECK(g.state == KF_NODE_MEASURED);
    CHECK(streq(g.params_json, "{\"BLOCK\": 256}"));
    CHECK(streq(g.reasons, a.reasons) && streq(g.verdict_json, a.verdict_json));
    CHECK(streq(g.shapes_json, a.shapes_json));
    CHECK(g.speedup == a.speedup && g.cost_s == 2.5);
    CHECK(g.tokens_in == 123456789012LL && g.tokens_out == -1);
    CHECK(g.created == a.created && g.finished == 1700000000.25);
    CHECK(streq(g.note, "first"));
    kf_node_free(&g);
    kf_node_free(&g); /* idempotent */

    /* a child, a grandchild, a second root child; NULL strings stay NULL */
    kf_node b = a, c = a, d = a;
    b.parent = a.id;
    b.params_json = NULL;
    b.note = NULL;
    CHECK(kf_store_add_node(s, &b) == KF_OK);
    c.parent = b.id;
    CHECK(kf_store_add_node(s, &c) == KF_OK);
    d.parent = 0;
    d.created = 1600000000.5;
    CHECK(kf_store_add_node(s, &d) == KF_OK);
    CHECK(d.created == 1600000000.5);
    CHECK(a.id < b.id && b.id < c.id && c.id < d.id);
    CHECK(kf_store_get_node(s, b.id, &g) == KF_OK);
    CHECK(g.parent == a.id && !g.params_json && !g.reasons && !g.verdict_json && !g.note);
    CHECK(g.state == KF_NODE_PROPOSED && g.finished == 0 && g.speedup == 0);
    kf_node_free(&g);

    /* a built node is still unfinished; a pruned one is not */
    b.state = KF_NODE_BUILT;
    b.finished = 0;
    b.reasons = b.verdict_json = b.shapes_json = NULL;
    b.speedup = 0;
    CHECK(kft_finish_node(s, &b) == KF_OK);
    d.state = KF_NODE_PRUNED;
    CHECK(kft_finish_node(s, &d) == KF_OK);
    int64_t *ids;
    size_t nids;
    CHECK(kf_store_unfinished(s, &ids, &nids) == KF_OK);
    CHECK(nids == 2 && ids[0] == b.id && ids[1] == c.id);
    free(ids);
    CHECK(kf_store_get_node(s, b.id, &g) == KF_OK);
    CHECK(g.state == KF_NODE_BUILT && g.finished == 0);
    kf_node_free(&g);
    CHECK(kf_store_get_node(s, d.id, &g) == KF_OK);
    CHECK(g.state == KF_NODE_PRUNED && g.finished > 1e9);
    kf_node_free(&g);

    /* constraints, savepoints, events */
    CHECK(kf_store_add_constraint(s, b.id, 0, "tiling", "BLOCK=512 fails to compile", "{\"BLOCK\": 512}") ==
          KF_OK);
    CHECK(kf_store_add_constraint(s, 0, a.id, NULL, "no unrolling under a", NULL) == KF_OK);
    CHECK(kf_store_add_constraint(s, 0, 999, NULL, "x", NULL) == KF_EUSAGE);
    HAS(ctx, "no such node");
    CHECK(kf_store_savepoint(s, a.id, "best so far") == KF_OK);
    CHECK(kf_store_savepoint(s, 999, "nope") == KF_EUSAGE);
    CHECK(kf_store_event(s, a.id, "pick", "{\"h\": 1.5}") == KF_OK);
    CHECK(kf_store_event(s, 0, "start", NULL) == KF_OK);
    CHECK(kf_store_set_status(s, "done") == KF_OK);

    /* refusals */
    kf_node bad = a;
    bad.parent = 424242;
    CHECK(kf_store_add_node(s, &bad) == KF_EUSAGE);
    HAS(ctx, "parent 424242: no such node");
    bad = a;
    memset(bad.src_hash, 'a', 64);
    CHECK(kf_store_add_node(s, &bad) == KF_EUSAGE);
    HAS(ctx, "store the source before its node");
    bad = a;
    bad.id = 424242;
    CHECK(kf_store_finish_node(s, &bad) == KF_EUSAGE);
    HAS(ctx, "node 424242: no such node");
    bad = a;
    bad.speedup = 0.0 / 0.0;
    CHECK(kf_store_finish_node(s, &bad) == KF_EUSAGE);
    CHECK(kf_store_get_node(s, 424242, &g) == KF_EUSAGE);
    kf_store_close(s);

    /* a second create in the same directory is refused and leaves the run alone */
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_EUSAGE);
    HAS(ctx, "already holds a run");

    /* everything again after reopening */
    s = must_open(ctx, sc.run, t);
    CHECK(!strcmp(kf_store_config(s), "{\"seed\": 7}"));
    CHECK(kf_store_get_node(s, a.id, &g) == KF_OK);
    CHECK(g.state == KF_NODE_MEASURED && streq(g.verdict_json, a.verdict_json) && g.speedup == a.speedup &&
          streq(g.note, "first"));
    kf_node_free(&g);
    CHECK(!strcmp(raw_sql(sc.run, "SELECT status FROM runs"), "done"));
    CHECK(!strcmp(raw_sql(sc.run, "SELECT count(*) FROM events"), "2"));
    CHECK(!strcmp(raw_sql(sc.run, "SELECT label FROM savepoints"), "best so far"));
    CHECK(!strcmp(raw_sql(sc.run, "PRAGMA journal_mode"), "wal"));
    CHECK(!strcmp(raw_sql(sc.run, "SELECT scope FROM constraints WHERE id = 1"), ""));
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

typedef struct {
    int64_t ids[16];
    int n, stop_after;
    const char *cats[16];
} collect;

static int collect_fn(void *arg, const kf_node *n) {
    collect *c = arg;
    c->ids[c->n] = n->id;
    c->cats[c->n] = n->category; /* borrowed: only compared during the call below */
    c->n++;
    return c->n == c->stop_after;
}

static int cons_fn(void *arg, const kf_constraint *c) {
    int *k = arg;
    if (*k == 0)
        CHECK(c->scope == 0 && c->node == 2 && !strcmp(c->category, "tiling") &&
              !strcmp(c->predicate_json, "{\"P\": 1}"));
    if (*k == 1)
        CHECK(c->scope == 1 && c->node == 0 && !c->category && !c->predicate_json && !strcmp(c->text, "t2"));
    (*k)++;
    return 0;
}

static void t_each(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    char h[65];
    CHECK(kf_store_put_source(s, "x", 1, "c", h) == KF_OK);
    int64_t want[10];
    for (int i = 0; i < 10; i++) {
        kf_node n = {0};
        memcpy(n.src_hash, h, 65);
        strcpy(n.ext, "c");
        strcpy(n.proposer, "builtin");
        snprintf(n.category, sizeof n.category, "cat%d", i);
        n.parent = i ? want[(i - 1) / 2] : 0; /* a binary tree */
        CHECK(kf_store_add_node(s, &n) == KF_OK);
        want[i] = n.id;
    }
    collect c = {.stop_after = -1};
    CHECK(kf_store_each_node(s, collect_fn, &c) == KF_OK);
    CHECK(c.n == 10);
    for (int i = 0; i < 10; i++) CHECK(c.ids[i] == want[i]);
    /* a callback that stops early; the next iteration starts over */
    collect e = {.stop_after = 3};
    CHECK(kf_store_each_node(s, collect_fn, &e) == KF_OK && e.n == 3);
    e.n = 0;
    e.stop_after = -1;
    CHECK(kf_store_each_node(s, collect_fn, &e) == KF_OK && e.n == 10);
    /* constraints in order */
    CHECK(kf_store_add_constraint(s, want[1], 0, "tiling", "t1", "{\"P\": 1}") == KF_OK);
    CHECK(kf_store_add_constraint(s, 0, want[0], NULL, "t2", NULL) == KF_OK);
    int k = 0;
    CHECK(kf_store_each_constraint(s, cons_fn, &k) == KF_OK && k == 2);
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* ---- sources --------------------------------------------------------------------- */

static int count_files(const char *dir, const char *prefix) {
    char cmd[512], out[64];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '^%s' || true", dir, prefix);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
    return atoi(out);
}

static void t_sources(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    char h1[65], h2[65], h3[65], src[256], p[400];
    snprintf(src, sizeof src, "%s/src", sc.run);
    CHECK(kf_store_put_source(s, "abc", 3, "c", h1) == KF_OK);
    /* SHA-256("abc"), FIPS 180-2 */
    CHECK(!strcmp(h1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    snprintf(p, sizeof p, "%s/%s.c", src, h1);
    struct stat sb;
    CHECK(stat(p, &sb) == 0 && sb.st_size == 3);
    time_t mtime = sb.st_mtime;
    CHECK(kf_store_put_source(s, "abc", 3, "c", h2) == KF_OK);
    CHECK(!strcmp(h1, h2));
    CHECK(stat(p, &sb) == 0 && sb.st_mtime == mtime);
    CHECK(kf_store_put_source(s, "abc", 3, "cu", h3) == KF_OK && !strcmp(h1, h3));
    CHECK(count_files(src, "") == 2);
    CHECK(count_files(src, ".tmp") == 0);
    char *text;
    size_t len;
    CHECK(kf_store_read_source(s, h1, "cu", &text, &len) == KF_OK);
    CHECK(len == 3 && !memcmp(text, "abc", 4));
    free(text);
    /* an empty text and a binary one */
    CHECK(kf_store_put_source(s, "", 0, "c", h2) == KF_OK);
    CHECK(!strcmp(h2, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    CHECK(kf_store_read_source(s, h2, "c", &text, &len) == KF_OK && len == 0);
    free(text);
    CHECK(kf_store_put_source(s, "a\0b", 3, "c", h3) == KF_OK);
    CHECK(kf_store_read_source(s, h3, "c", &text, &len) == KF_OK && len == 3 && !memcmp(text, "a\0b", 3));
    free(text);
    /* bad names */
    CHECK(kf_store_put_source(s, "abc", 3, "../x", h2) == KF_EUSAGE);
    CHECK(kf_store_put_source(s, "abc", 3, "", h2) == KF_EUSAGE);
    CHECK(kf_store_put_source(s, "abc", 3, "abcdefgh", h2) == KF_EUSAGE);
    CHECK(kf_store_read_source(s, "../../etc/passwd", "c", &text, &len) == KF_EUSAGE);
    CHECK(kf_store_read_source(s, h1, "C", &text, &len) == KF_EUSAGE);
    CHECK(kf_store_read_source(s, "0000000000000000000000000000000000000000000000000000000000000000", "c",
                               &text, &len) == KF_EIO);
    HAS(ctx, "No such file");
    /* a damaged file is noticed on reading */
    write_text(p, "abd", "w");
    CHECK(kf_store_read_source(s, h1, "c", &text, &len) == KF_EIO && text == NULL);
    HAS(ctx, "damaged");
    /* a new text is created under its own name, and a name already holding other bytes
     * (a writer killed mid-write, or planted: here a hard link to a file outside the run)
     * is replaced, never written through */
    char outside[400], h4[65];
    snprintf(outside, sizeof outside, "%s/outside.txt", sc.root);
    write_text(outside, "the user's own file", "w");
    CHECK(kf_store_put_source(s, "xyz", 3, "c", h4) == KF_OK);
    snprintf(p, sizeof p, "%s/%s.c", src, h4);
    CHECK(unlink(p) == 0 && link(outside, p) == 0);
    CHECK(kf_store_put_source(s, "xyz", 3, "c", h4) == KF_OK);
    CHECK(kf_store_read_source(s, h4, "c", &text, &len) == KF_OK && len == 3 && !memcmp(text, "xyz", 3));
    free(text);
    CHECK(!kf__read_file(outside, 4096, &text, &len) && len == 19 &&
          !memcmp(text, "the user's own file", 19));
    free(text);
    write_text(p, "xy", "w"); /* partial */
    CHECK(kf_store_put_source(s, "xyz", 3, "c", h4) == KF_OK);
    CHECK(kf_store_read_source(s, h4, "c", &text, &len) == KF_OK && len == 3 && !memcmp(text, "xyz", 3));
    free(text);
    CHECK(count_files(src, ".tmp") == 0);
    kf_store_close(s);
    /* opening removes the temporary files of dead writers, not of live ones */
    pid_t dead = fork();
    CHECK(dead >= 0);
    if (dead == 0) _exit(0);
    CHECK(waitpid(dead, NULL, 0) == dead);
    snprintf(p, sizeof p, "%s/.tmp-%d-%d-0123456789abcdef", src, (int)dead, (int)dead);
    write_text(p, "half a candidate", "w");
    snprintf(p, sizeof p, "%s/.tmp-%d-%d-0123456789abcdef", src, (int)getpid(), (int)getpid());
    write_text(p, "being written", "w");
    CHECK(count_files(src, "\\.tmp-") == 2);
    s = must_open(ctx, sc.run, t);
    CHECK(count_files(src, "\\.tmp-") == 1);
    CHECK(access(p, F_OK) == 0);
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* ---- fingerprint ---------------------------------------------------------------- */

static void t_fingerprint(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    char f1[65], f2[65], msg[512];
    CHECK(kf_store_fingerprint(ctx, t, f1) == KF_OK);
    CHECK(!strcmp(f1, t->fingerprint)); /* the verdicts' fingerprint */
    kf_task *t2 = load(ctx, sc.task);
    CHECK(kf_store_fingerprint(ctx, t2, f2) == KF_OK && !strcmp(f1, f2));
    kf_task_free(t2);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    kf_store_close(s);
    kf_store_close(must_open(ctx, sc.run, t));

    const char *files[] = {"reference.c", "task.json"};
    for (int k = 0; k < 2; k++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", sc.task, files[k]);
        char *orig;
        CHECK(kf__read_file(p, 1 << 20, &orig, NULL) == 0);
        write_text(p, k ? "\n" : "/* an edit */\n", "a");
        /* a task loaded before the edit: its files are not what it was loaded from */
        CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_ETASK && s == NULL);
        HAS(ctx, "changed since it was loaded");
        kf_task *te = load(ctx, sc.task);
        CHECK(kf_store_fingerprint(ctx, te, f2) == KF_OK && strcmp(f1, f2));
        CHECK(kf_store_open(ctx, sc.run, te, &s) == KF_ETASK && s == NULL);
        snprintf(msg, sizeof msg,
                 "%s: the task changed since this run started (fingerprint "
                 "%.12s, now %.12s)",
                 sc.run, f1, f2);
        CHECKF(!strcmp(kf_errmsg(ctx), msg), "got \"%s\", want \"%s\"", kf_errmsg(ctx), msg);
        /* reading the run needs no task */
        kf_store_close(must_open(ctx, sc.run, NULL));
        kf_task_free(te);
        write_text(p, orig, "w"); /* restored: the run opens again */
        free(orig);
        te = load(ctx, sc.task);
        kf_store_close(must_open(ctx, sc.run, te));
        kf_task_free(te);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* ---- schema versions ------------------------------------------------------------- */

static void t_schema(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    char h[65];
    CHECK(kf_store_put_source(s, "x", 1, "c", h) == KF_OK);
    kf_node n = {0};
    memcpy(n.src_hash, h, 65);
    strcpy(n.ext, "c");
    strcpy(n.proposer, "builtin");
    strcpy(n.category, "other");
    n.note = "before";
    CHECK(kf_store_add_node(s, &n) == KF_OK);
    kf_store_close(s);
    CHECK(!strcmp(raw_sql(sc.run, "SELECT value FROM meta WHERE key = 'schema_version'"), "2"));

    /* an older database (version 2 when kforge knows 3) is migrated, its data intact */
    /* steps 0 and 1 never run on a database that is at version 2 already */
    const char *failing[3] = {"SELECT 1", "SELECT 1", "ALTER TABLE nosuch ADD COLUMN y TEXT"};
    const char *adding[3] = {"SELECT 1", "SELECT 1", "ALTER TABLE nodes ADD COLUMN extra TEXT DEFAULT 'new'"};
    kf_store__set_migrations(failing, 3);
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO && s == NULL);
    HAS(ctx, "migrating the schema from version 2 to 3");
    HAS(ctx, "no such table: nosuch");
    /* a failed migration leaves the database as it was */
    CHECK(!strcmp(raw_sql(sc.run, "SELECT value FROM meta WHERE key = 'schema_version'"), "2"));
    kf_store__set_migrations(adding, 3);
    s = must_open(ctx, sc.run, t);
    CHECK(!strcmp(raw_sql(sc.run, "SELECT value FROM meta WHERE key = 'schema_version'"), "3"));
    CHECK(!strcmp(raw_sql(sc.run, "SELECT extra FROM nodes"), "new"));
    kf_node g;
    CHECK(kf_store_get_node(s, n.id, &g) == KF_OK && streq(g.note, "before"));
    kf_node_free(&g);
    kf_store_close(s);
    kf_store_close(must_open(ctx, sc.run, t)); /* already at 3: nothing to do */

    /* back to this kforge's schema (2): version 3 is newer, refused */
    kf_store__set_migrations(NULL, 0);
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO && s == NULL);
    HAS(ctx, "schema version 3 is newer than this kforge");
    raw_sql(sc.run, "UPDATE meta SET value = '999' WHERE key = 'schema_version'");
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO);
    HAS(ctx, "schema version 999 is newer");
    raw_sql(sc.run, "UPDATE meta SET value = 'one' WHERE key = 'schema_version'");
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO);
    HAS(ctx, "meta.schema_version is \"one\"");
    raw_sql(sc.run, "DELETE FROM meta");
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO);
    HAS(ctx, "meta.schema_version is missing");

    /* a SQLite database of something else, and an empty one */
    char p[256];
    snprintf(p, sizeof p, "%s/other", sc.root);
    CHECK(mkdir(p, 0755) == 0);
    raw_sql(p, "CREATE TABLE t(x)");
    CHECK(kf_store_open(ctx, p, t, &s) == KF_EIO);
    HAS(ctx, "not a kforge run database");
    snprintf(p, sizeof p, "%s/empty", sc.root);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/empty/run.db", sc.root);
    write_text(p, "", "w");
    snprintf(p, sizeof p, "%s/empty", sc.root);
    CHECK(kf_store_open(ctx, p, t, &s) == KF_EIO);
    HAS(ctx, "no run was ever recorded");
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* ---- crash safety ----------------------------------------------------------------- */

/* What the writer records for node id: every field a function of the id, so the
 * parent can check any node exactly. */
static void outcome(kf_node *n, int64_t id, char *verdict, size_t vcap, char *shapes, size_t scap, char *note,
                    size_t ncap) {
    static const kf_node_state st[] = {KF_NODE_MEASURED, KF_NODE_REJECTED, KF_NODE_KEPT, KF_NODE_CRASHED,
                                       KF_NODE_COMPILE_FAILED};
    n->id = id;
    n->state = st[id % 5];
    n->reasons = id % 2 ? "wrong_result,timeout" : NULL;
    int off = snprintf(verdict, vcap, "{\"id\": %lld, \"pad\": \"", (long long)id);
    for (; off < (int)vcap - 8; off++) verdict[off] = (char)('a' + (id + off) % 26);
    snprintf(verdict + off, vcap - (size_t)off, "\"}");
    n->verdict_json = verdict;
    snprintf(shapes, scap, "[{\"n\": %lld, \"speedup\": %.17g}]", (long long)id, 1 + id / 7.0);
    n->shapes_json = shapes;
    n->speedup = 1 + id / 7.0;
    n->cost_s = id * 0.25;
    n->tokens_in = id * 3;
    n->tokens_out = id * 7 + 1;
    n->finished = 1.5e9 + (double)id;
    snprintf(note, ncap, "n%lld", (long long)id);
    n->note = note;
}

static int outcome_matches(const kf_node *g) {
    kf_node w = {0};
    char v[1500], sh[128], note[32];
    outcome(&w, g->id, v, sizeof v, sh, sizeof sh, note, sizeof note);
    return g->state == w.state && streq(g->reasons, w.reasons) && streq(g->verdict_json, w.verdict_json) &&
           streq(g->shapes_json, w.shapes_json) && g->speedup == w.speedup && g->cost_s == w.cost_s &&
           g->tokens_in == w.tokens_in && g->tokens_out == w.tokens_out && g->finished == w.finished &&
           streq(g->note, w.note);
}

static void source_of(char *buf, size_t cap, int round, int i) {
    snprintf(buf, cap,
             "/* round %d candidate %d */\nvoid twice(const float *x, float *y, long n)"
             " { for (long k = 0; k < n; k++) y[k] = x[k] + x[k]; }\n",
             round, i / 4);
}

/* The writer: add and finish nodes as fast as it can, reporting each step once it has
 * returned. Never returns; killed by the parent. */
static void crash_writer(const scratch *sc, int round, int wfd) {
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *s = NULL;
    char line[256];
    if (kf_task_load(ctx, sc->task, &t) || kf_store_open(ctx, sc->run, t, &s)) {
        snprintf(line, sizeof line, "E %s\n", kf_errmsg(ctx));
        if (write(wfd, line, strlen(line)) < 0) _exit(4);
        _exit(3);
    }
    for (int i = 0;; i++) {
        char text[256], params[64], v[1500], sh[128], note[32];
        source_of(text, sizeof text, round, i);
        kf_node n = {0};
        if (kf_store_put_source(s, text, strlen(text), "c", n.src_hash)) break;
        strcpy(n.ext, "c");
        strcpy(n.proposer, "builtin");
        strcpy(n.category, "unrolling");
        snprintf(params, sizeof params, "{\"round\": %d, \"i\": %d}", round, i);
        n.params_json = params;
        n.note = "proposed";
        if (kf_store_add_node(s, &n)) break;
        snprintf(line, sizeof line, "A %lld %d %d\n", (long long)n.id, round, i);
        if (write(wfd, line, strlen(line)) < 0) _exit(4);
        /* an evaluation takes time between the node and its outcome (in a real run,
         * most of it): 0-2 ms here, so kills land there too */
        uint64_t until = kf__now_ns() + (uint64_t)(i % 3) * 1000000u;
        if (i % 3 == 0) { /* built first, like a real evaluation sometimes records */
            kf_node b = n;
            b.state = KF_NODE_BUILT;
            if (kft_finish_node(s, &b)) break;
            until = kf__now_ns() + 1000000u;
        }
        while (kf__now_ns() < until) {
        }
        outcome(&n, n.id, v, sizeof v, sh, sizeof sh, note, sizeof note);
        if (kft_finish_node(s, &n)) break;
        snprintf(line, sizeof line, "F %lld\n", (long long)n.id);
        if (write(wfd, line, strlen(line)) < 0) _exit(4);
    }
    snprintf(line, sizeof line, "E %s\n", kf_errmsg(ctx));
    if (write(wfd, line, strlen(line)) < 0) _exit(4);
    _exit(3);
}

#define MAXN 200000
typedef struct {
    signed char added[MAXN], finished[MAXN], seen[MAXN];
    int round[MAXN], idx[MAXN];
} crash_book;

static int seen_fn(void *arg, const kf_node *n) {
    crash_book *b = arg;
    CHECKF(n->id > 0 && n->id < MAXN, "node id %lld", (long long)n->id);
    b->seen[n->id] = 1;
    return 0;
}

static void t_crash(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    kf_store_close(s);
    crash_book *b = calloc(1, sizeof *b);
    CHECK(b);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    printf("seed %u\n", seed);
    srand(seed);
    int64_t total_finished_by_writer = 0, resumed = 0, max_id = 0;
    for (int round = 0; round < 20; round++) {
        int p[2];
        CHECK(pipe(p) == 0);
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            crash_writer(&sc, round, p[1]);
        }
        close(p[1]);
        int delay_ms = 1 + rand() % 50;
        /* some rounds: kill right as it opens; most: mid-stream */
        if (round % 5 == 4) delay_ms = rand() % 3;
        usleep((useconds_t)delay_ms * 1000);
        kill(pid, SIGKILL);
        int status;
        CHECK(waitpid(pid, &status, 0) == pid);
        /* everything it reported */
        static char buf[1 << 20];
        size_t len = 0;
        ssize_t r;
        while ((r = read(p[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)r;
        buf[len] = 0;
        close(p[0]);
        CHECKF(WIFSIGNALED(status), "round %d: the writer stopped by itself: %s", round, buf);
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
            long long id;
            int rd, i;
            CHECKF(line[0] != 'E', "round %d: the writer failed: %s", round, line);
            if (sscanf(line, "A %lld %d %d", &id, &rd, &i) == 3) {
                CHECK(id > 0 && id < MAXN && !b->added[id]);
                b->added[id] = 1;
                b->round[id] = rd;
                b->idx[id] = i;
                if (id > max_id) max_id = id;
            } else if (sscanf(line, "F %lld", &id) == 1) {
                CHECK(id > 0 && id < MAXN && b->added[id]);
                b->finished[id] = 1;
                total_finished_by_writer++;
            } else {
                CHECKF(0, "round %d: a torn report line \"%s\"", round, line);
            }
        }

        /* the database after the kill */
        s = must_open(ctx, sc.run, t);
        CHECKF(kf_store_check(s) == KF_OK, "round %d: %s", round, kf_errmsg(ctx));
        memset(b->seen, 0, sizeof b->seen);
        CHECK(kf_store_each_node(s, seen_fn, b) == KF_OK);
        int64_t *ids;
        size_t nids;
        CHECK(kf_store_unfinished(s, &ids, &nids) == KF_OK);
        signed char *unfinished = calloc(MAXN, 1);
        CHECK(unfinished);
        for (size_t k = 0; k < nids; k++) {
            CHECK(ids[k] > 0 && ids[k] < MAXN);
            unfinished[ids[k]] = 1;
        }
        for (int64_t id = 1; id < MAXN; id++) {
            if (b->added[id])
                CHECKF(b->seen[id], "round %d: reported node %lld is missing", round, (long long)id);
            if (!b->seen[id]) continue;
            kf_node g;
            CHECK(kf_store_get_node(s, id, &g) == KF_OK);
            if (kf_node_state_unfinished(g.state)) {
                /* its outcome was never recorded: resume lists it */
                CHECKF(unfinished[id], "round %d: node %lld is %s but not listed", round, (long long)id,
                       kf_node_state_name(g.state));
                CHECKF(!b->finished[id], "round %d: node %lld was finished, now %s", round, (long long)id,
                       kf_node_state_name(g.state));
                CHECK(g.finished == 0 && !g.verdict_json);
            } else {
                CHECKF(!unfinished[id], "round %d: finished node %lld listed", round, (long long)id);
                /* the seal is written in the outcome's own UPDATE: never one without the other */
                CHECKF(!g.tampered, "round %d: node %lld does not match its seal", round, (long long)id);
                CHECKF(outcome_matches(&g),
                       "round %d: node %lld's outcome is not exactly what "
                       "was written",
                       round, (long long)id);
            }
            /* its source is there, whole */
            char *text, want[256];
            size_t tl;
            CHECKF(kf_store_read_source(s, g.src_hash, g.ext, &text, &tl) == KF_OK, "%s", kf_errmsg(ctx));
            if (b->added[id]) {
                char params[64];
                source_of(want, sizeof want, b->round[id], b->idx[id]);
                CHECK(!strcmp(text, want));
                snprintf(params, sizeof params, "{\"round\": %d, \"i\": %d}", b->round[id], b->idx[id]);
                CHECK(streq(g.params_json, params));
            }
            free(text);
            kf_node_free(&g);
        }
        /* resume: record the outcomes that were never recorded */
        for (size_t k = 0; k < nids; k++) {
            kf_node n = {0};
            char v[1500], sh[128], note[32];
            outcome(&n, ids[k], v, sizeof v, sh, sizeof sh, note, sizeof note);
            CHECK(kft_finish_node(s, &n) == KF_OK);
            resumed++;
        }
        free(ids);
        free(unfinished);
        kf_store_close(s);
    }
    printf("%lld nodes, %lld finished by the writer, %lld by resume\n", (long long)max_id,
           (long long)total_finished_by_writer, (long long)resumed);
    CHECK(total_finished_by_writer > 0);
    /* a writer killed between writing a source and renaming it left a temporary file:
     * the next open removed it */
    char src[256];
    snprintf(src, sizeof src, "%s/src", sc.run);
    CHECK(count_files(src, "\\.tmp-") == 0);
    free(b);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* ---- concurrency -------------------------------------------------------------------- */

#define PER_WRITER 200

typedef struct {
    const scratch *sc;
    int who;
    int64_t ids[PER_WRITER];
    int ok;
    char err[512];
} writer;

/* One writer: its own context and connection, PER_WRITER nodes added and finished. */
static void *write_nodes(void *arg) {
    writer *w = arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *s = NULL;
    w->ok = 0;
    if (kf_task_load(ctx, w->sc->task, &t) || kf_store_open(ctx, w->sc->run, t, &s)) goto out;
    for (int i = 0; i < PER_WRITER; i++) {
        char text[128], note[64];
        snprintf(text, sizeof text, "/* writer %d node %d */", w->who, i);
        kf_node n = {0};
        if (kf_store_put_source(s, text, strlen(text), "c", n.src_hash)) goto out;
        strcpy(n.ext, "c");
        strcpy(n.proposer, "builtin");
        strcpy(n.category, "tiling");
        snprintf(note, sizeof note, "w%d.%d", w->who, i);
        n.note = note;
        if (kf_store_add_node(s, &n)) goto out;
        n.state = KF_NODE_MEASURED;
        n.speedup = w->who + i / 1000.0;
        if (kft_finish_node(s, &n)) goto out;
        if (i % 50 == 0 && kf_store_event(s, n.id, "verdict", "{}")) goto out;
        w->ids[i] = n.id;
    }
    w->ok = 1;
out:
    if (!w->ok) snprintf(w->err, sizeof w->err, "%s", kf_errmsg(ctx));
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    return NULL;
}

typedef struct {
    int n;
    int64_t last;
    int ordered, finished;
} count_st;

static int count_fn(void *arg, const kf_node *n) {
    count_st *c = arg;
    if (n->id <= c->last) c->ordered = 0;
    c->last = n->id;
    c->finished += n->state == KF_NODE_MEASURED && n->note && n->note[0] == 'w';
    c->n++;
    return 0;
}

static void verify_writers(const scratch *sc, writer *w, int nw) {
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc->task);
    kf_store *s = must_open(ctx, sc->run, t);
    CHECK(kf_store_check(s) == KF_OK);
    count_st c = {0, 0, 1, 0};
    CHECK(kf_store_each_node(s, count_fn, &c) == KF_OK);
    CHECKF(c.n == nw * PER_WRITER && c.finished == c.n && c.ordered, "%d nodes, %d finished", c.n,
           c.finished);
    /* every id a writer got is its own node */
    for (int k = 0; k < nw; k++)
        for (int i = 0; i < PER_WRITER; i += 17) {
            kf_node g;
            char note[64];
            snprintf(note, sizeof note, "w%d.%d", w[k].who, i);
            CHECK(kf_store_get_node(s, w[k].ids[i], &g) == KF_OK);
            CHECKF(streq(g.note, note), "node %lld: note %s, want %s", (long long)w[k].ids[i], g.note, note);
            CHECK(g.speedup == w[k].who + i / 1000.0);
            kf_node_free(&g);
        }
    int64_t *ids;
    size_t nids;
    CHECK(kf_store_unfinished(s, &ids, &nids) == KF_OK && nids == 0 && !ids);
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void t_threads(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    kf_store_close(s);
    enum { NT = 4 };
    static writer w[NT];
    pthread_t th[NT];
    for (int k = 0; k < NT; k++) {
        w[k].sc = &sc;
        w[k].who = k;
        CHECK(pthread_create(&th[k], NULL, write_nodes, &w[k]) == 0);
    }
    for (int k = 0; k < NT; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < NT; k++) CHECKF(w[k].ok, "writer %d: %s", k, w[k].err);
    static int64_t all[NT * PER_WRITER];
    for (int k = 0; k < NT; k++) memcpy(all + k * PER_WRITER, w[k].ids, sizeof w[k].ids);
    qsort(all, NT * PER_WRITER, sizeof all[0], cmp_i64);
    for (int i = 1; i < NT * PER_WRITER; i++) CHECK(all[i] != all[i - 1]);
    verify_writers(&sc, w, NT);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* The same from separate processes: each reports its ids through a pipe. */
static void t_processes(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    kf_store_close(s);
    enum { NP = 3 };
    static writer w[NP];
    int fds[NP];
    pid_t pids[NP];
    for (int k = 0; k < NP; k++) {
        int p[2];
        CHECK(pipe(p) == 0);
        w[k].sc = &sc;
        w[k].who = 10 + k;
        fflush(NULL);
        pids[k] = fork();
        CHECK(pids[k] >= 0);
        if (pids[k] == 0) {
            close(p[0]);
            write_nodes(&w[k]);
            ssize_t put = write(p[1], &w[k], sizeof w[k]);
            _exit(put == (ssize_t)sizeof w[k] ? 0 : 1);
        }
        close(p[1]);
        fds[k] = p[0];
    }
    for (int k = 0; k < NP; k++) {
        size_t got = 0;
        ssize_t r;
        while (got < sizeof w[k] && (r = read(fds[k], (char *)&w[k] + got, sizeof w[k] - got)) > 0)
            got += (size_t)r;
        close(fds[k]);
        int status;
        CHECK(waitpid(pids[k], &status, 0) == pids[k]);
        CHECK(got == sizeof w[k] && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        w[k].sc = &sc;
        CHECKF(w[k].ok, "writer %d: %s", k, w[k].err);
    }
    verify_writers(&sc, w, NP);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* ---- broken run directories ---------------------------------------------------------- */

static void t_bad_input(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = (kf_store *)1;
    char p[256], q[256];

    /* no directory */
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO && s == NULL);
    HAS(ctx, "no run here");
    /* the run directory is a file */
    snprintf(p, sizeof p, "%s/file", sc.root);
    write_text(p, "not a run\n", "w");
    CHECK(kf_store_open(ctx, p, t, &s) == KF_EIO);
    HAS(ctx, "not a directory");
    CHECK(kf_store_create(ctx, p, t, NULL, &s) == KF_EIO && s == NULL);
    HAS(ctx, "not a directory");
    /* a directory without run.db */
    CHECK(kf_store_open(ctx, sc.task, t, &s) == KF_EIO);
    HAS(ctx, "not a kforge run directory");

    /* a garbage run.db */
    snprintf(p, sizeof p, "%s/garbage", sc.root);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(q, sizeof q, "%s/run.db", p);
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 7919 % 251 + 1);
    junk[sizeof junk - 1] = 0;
    write_text(q, junk, "w");
    CHECK(kf_store_open(ctx, p, t, &s) == KF_EIO && s == NULL);
    HAS(ctx, "not a SQLite database");
    HAS(ctx, q);

    /* run.db that cannot be opened: a directory */
    snprintf(p, sizeof p, "%s/dirdb", sc.root);
    snprintf(q, sizeof q, "%s/run.db", p);
    CHECK(kf__mkdirs(q) == 0);
    CHECK(kf_store_open(ctx, p, t, &s) == KF_EIO);
    HAS(ctx, "not a regular file");
    CHECK(kf_store_create(ctx, p, t, NULL, &s) == KF_EUSAGE);
    HAS(ctx, "already holds a run");

    /* a real run, damaged in different ways */
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    char h[65];
    for (int i = 0; i < 300; i++) {
        char text[64];
        snprintf(text, sizeof text, "/* %d */", i);
        kf_node n = {0};
        CHECK(kf_store_put_source(s, text, strlen(text), "c", n.src_hash) == KF_OK);
        strcpy(n.ext, "c");
        strcpy(n.proposer, "p");
        strcpy(n.category, "c");
        n.verdict_json = junk;
        CHECK(kf_store_add_node(s, &n) == KF_OK);
        memcpy(h, n.src_hash, 65);
    }
    kf_store_close(s);
    /* an unreadable database (root reads anything: then only the other cases) */
    snprintf(q, sizeof q, "%s/run.db", sc.run);
    if (geteuid() != 0) {
        CHECK(chmod(q, 0) == 0);
        CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO);
        HAS(ctx, q);
        CHECK(chmod(q, 0644) == 0);
    }
    /* a missing src directory */
    snprintf(p, sizeof p, "%s/src", sc.run);
    snprintf(q, sizeof q, "%s/src.away", sc.run);
    CHECK(rename(p, q) == 0);
    CHECK(kf_store_open(ctx, sc.run, t, &s) == KF_EIO);
    HAS(ctx, "the run's candidate sources");
    CHECK(rename(q, p) == 0);
    /* an unknown state in a row */
    raw_sql(sc.run, "UPDATE nodes SET state = 'bogus' WHERE id = 5");
    s = must_open(ctx, sc.run, t);
    kf_node g;
    CHECK(kf_store_get_node(s, 5, &g) == KF_EIO);
    HAS(ctx, "node 5: unknown state \"bogus\"");
    count_st c = {0, 0, 1, 0};
    CHECK(kf_store_each_node(s, count_fn, &c) == KF_EIO && c.n == 4);
    kf_store_close(s);
    /* a truncated database: an error, not a crash */
    raw_sql(sc.run, "PRAGMA wal_checkpoint(TRUNCATE)");
    snprintf(q, sizeof q, "%s/run.db", sc.run);
    struct stat sb;
    CHECK(stat(q, &sb) == 0 && sb.st_size > 8192);
    CHECK(truncate(q, sb.st_size / 2) == 0);
    kf_status st = kf_store_open(ctx, sc.run, t, &s);
    if (st == KF_OK) {
        /* the pages it needed to open may survive; reading the rest must fail cleanly */
        CHECK(kf_store_check(s) == KF_EIO);
        HAS(ctx, "run.db");
        c = (count_st){0, 0, 1, 0};
        CHECK(kf_store_each_node(s, count_fn, &c) == KF_EIO);
        kf_store_close(s);
    } else {
        CHECK(st == KF_EIO);
        HAS(ctx, "run.db");
    }
    (void)h;
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* ---- failing writes ------------------------------------------------------------------ */

/* In a child limited to 1 MiB per file (RLIMIT_FSIZE): a source too large to write, then
 * nodes until the WAL cannot grow. Each failure is a clear KF_EIO, leaves nothing half
 * written, and the run opens intact afterwards. */
static void full_writer(const scratch *sc, int wfd) {
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *s = NULL;
    char line[600];
    int bad = 0;
#define EXPECT(c)                                                                             \
    do {                                                                                      \
        if (!(c) && !bad) {                                                                   \
            snprintf(line, sizeof line, "E line %d: %s: %s\n", __LINE__, #c, kf_errmsg(ctx)); \
            bad = 1;                                                                          \
        }                                                                                     \
    } while (0)
    EXPECT(kf_task_load(ctx, sc->task, &t) == KF_OK && kf_store_open(ctx, sc->run, t, &s) == KF_OK);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1u << 20, 1u << 20};
    EXPECT(setrlimit(RLIMIT_FSIZE, &rl) == 0);
    size_t big = 2u << 20;
    char *text = malloc(big), h[65];
    EXPECT(text);
    if (!bad) {
        memset(text, 'x', big);
        EXPECT(kf_store_put_source(s, text, big, "c", h) == KF_EIO);
        EXPECT(strstr(kf_errmsg(ctx), "write: File too large"));
    }
    int64_t finished = 0;
    static char verdict[8192];
    memset(verdict, 'v', sizeof verdict - 1);
    for (int i = 0; !bad && i < 10000; i++) {
        kf_node n = {0};
        EXPECT(kf_store_put_source(s, "small", 5, "c", n.src_hash) == KF_OK);
        strcpy(n.ext, "c");
        strcpy(n.proposer, "p");
        strcpy(n.category, "c");
        n.verdict_json = verdict;
        kf_status st = bad ? KF_OK : kf_store_add_node(s, &n);
        if (st == KF_OK) {
            n.state = KF_NODE_MEASURED;
            st = kft_finish_node(s, &n);
        }
        if (st == KF_OK) {
            finished = n.id;
            continue;
        }
        EXPECT(st == KF_EIO);
        EXPECT(strstr(kf_errmsg(ctx), "/run.db: recording") || strstr(kf_errmsg(ctx), "/run.db: adding"));
        break;
    }
    EXPECT(finished > 10);
    if (!bad) snprintf(line, sizeof line, "F %lld (%.500s)\n", (long long)finished, kf_errmsg(ctx));
#undef EXPECT
    if (write(wfd, line, strlen(line)) < 0) _exit(4);
    _exit(bad ? 3 : 0);
}

static void t_write_failures(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECK(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK);
    kf_store_close(s);
    int p[2];
    CHECK(pipe(p) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        full_writer(&sc, p[1]);
    }
    close(p[1]);
    char buf[700] = "";
    ssize_t r = read(p[0], buf, sizeof buf - 1);
    buf[r > 0 ? r : 0] = 0;
    close(p[0]);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: %s", buf);
    long long last;
    CHECK(sscanf(buf, "F %lld", &last) == 1);
    printf("%s", buf);
    s = must_open(ctx, sc.run, t);
    CHECK(kf_store_check(s) == KF_OK);
    for (int64_t id = 1; id <= last; id++) {
        kf_node g;
        CHECK(kf_store_get_node(s, id, &g) == KF_OK && g.state == KF_NODE_MEASURED);
        CHECK(g.verdict_json && strlen(g.verdict_json) == 8191);
        kf_node_free(&g);
    }
    char src[256];
    snprintf(src, sizeof src, "%s/src", sc.run);
    CHECK(count_files(src, "") == 1); /* "small": neither the big text nor its temporary */
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* A new source's fsyncs (its bytes, then RUN/src's entry) are not the writer's own
 * (docs/run.md "Crash safety"): put_source and add_node return without one, and the
 * outcome that names the source waits for them, on the store's syncer, which batches
 * the directory's. An fsync that fails there fails that outcome (KF_EIO, the step and
 * the system's message), for good in that process; the node stays proposed, its text
 * whole, and the next process records it. */
static void t_source_sync(const void *arg) {
    (void)arg;
    scratch sc;
    scratch_make(&sc);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = load(ctx, sc.task);
    kf_store *s = NULL;
    CHECKF(kf_store_create(ctx, sc.run, t, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    enum { N = 8 };
    kf_node n[N];
    long mine = 0, total;
    kft_fault_fsync(0, 0);
    for (int i = 0; i < N; i++) {
        char text[64];
        int len = snprintf(text, sizeof text, "int v%d;", i);
        memset(&n[i], 0, sizeof n[i]);
        CHECK(kf_store_put_source(s, text, (size_t)len, "c", n[i].src_hash) == KF_OK);
        snprintf(n[i].ext, sizeof n[i].ext, "c");
        snprintf(n[i].proposer, sizeof n[i].proposer, "p");
        snprintf(n[i].category, sizeof n[i].category, "other");
        CHECKF(kf_store_add_node(s, &n[i]) == KF_OK, "%s", kf_errmsg(ctx));
    }
    total = kft_fault_fsyncs(&mine);
    CHECKF(mine == 0, "storing %d sources and their nodes, the writer made %ld fsyncs itself (of %ld)", N,
           mine, total);
    for (int i = 0; i < N; i++) {
        n[i].state = KF_NODE_MEASURED;
        CHECKF(kf_store_finish_node(s, &n[i]) == KF_OK, "%s", kf_errmsg(ctx));
    }
    total = kft_fault_fsyncs(&mine);
    /* each file once, and the directory at least once and at most once per file */
    CHECKF(mine == 0 && total >= N + 1 && total <= 2 * N, "%ld fsyncs, %ld of them the writer's", total,
           mine);
    printf("    %d sources: %ld fsyncs, none on the writer's thread\n", N, total);

    kf_node f = {0};
    kft_fault_fsync(1, EIO);
    CHECK(kf_store_put_source(s, "int lost;", 9, "c", f.src_hash) == KF_OK);
    snprintf(f.ext, sizeof f.ext, "c");
    snprintf(f.proposer, sizeof f.proposer, "p");
    snprintf(f.category, sizeof f.category, "other");
    CHECKF(kf_store_add_node(s, &f) == KF_OK, "%s", kf_errmsg(ctx));
    f.state = KF_NODE_MEASURED;
    f.verdict_json = (char *)"{}";
    CHECK(kf_store_finish_node(s, &f) == KF_EIO);
    HAS(ctx, "fsync: Input/output error");
    HAS(ctx, "outcome is not recorded");
    /* not retried: a second fsync after a failed write-back may succeed with the bytes lost */
    kft_fault_fsync(0, 0);
    char again[65];
    CHECK(kf_store_put_source(s, "int lost;", 9, "c", again) == KF_OK);
    CHECK(kf_store_finish_node(s, &f) == KF_EIO);
    kf_node g;
    CHECK(kf_store_get_node(s, f.id, &g) == KF_OK && g.state == KF_NODE_PROPOSED && !g.verdict_json);
    kf_node_free(&g);
    kf_store_close(s);

    s = must_open(ctx, sc.run, t);
    int64_t *ids = NULL;
    size_t nu = 0;
    CHECK(kf_store_unfinished(s, &ids, &nu) == KF_OK && nu == 1 && ids[0] == f.id);
    free(ids);
    char *text = NULL;
    size_t len = 0;
    CHECK(kf_store_read_source(s, f.src_hash, "c", &text, &len) == KF_OK && len == 9 &&
          !memcmp(text, "int lost;", 9));
    free(text);
    /* a source this process did not write is synced before an outcome names it */
    kft_fault_fsync(0, 0);
    CHECKF(kf_store_finish_node(s, &f) == KF_OK, "%s", kf_errmsg(ctx));
    total = kft_fault_fsyncs(&mine);
    CHECKF(total == 2 && mine == 0, "resumed: %ld fsyncs, %ld on the writer's thread", total, mine);
    CHECK(kf_store_get_node(s, f.id, &g) == KF_OK && g.state == KF_NODE_MEASURED);
    kf_node_free(&g);
    kf_store_close(s);
    /* a text lost before its sync (a power cut) is recorded only as its evaluation's crash */
    s = must_open(ctx, sc.run, t);
    kf_node m = {0};
    CHECK(kf_store_put_source(s, "int gone;", 9, "c", m.src_hash) == KF_OK);
    snprintf(m.ext, sizeof m.ext, "c");
    snprintf(m.proposer, sizeof m.proposer, "p");
    snprintf(m.category, sizeof m.category, "other");
    CHECKF(kf_store_add_node(s, &m) == KF_OK, "%s", kf_errmsg(ctx));
    kf_store_close(s);
    char gone[300];
    snprintf(gone, sizeof gone, "%s/src/%s.c", sc.run, m.src_hash);
    CHECK(unlink(gone) == 0);
    s = must_open(ctx, sc.run, t);
    m.state = KF_NODE_MEASURED;
    CHECK(kf_store_finish_node(s, &m) == KF_EIO);
    HAS(ctx, "open: No such file or directory");
    m.state = KF_NODE_CRASHED;
    CHECKF(kf_store_finish_node(s, &m) == KF_OK, "%s", kf_errmsg(ctx));
    kf_store_close(s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(sc.root);
}

/* A tool-mode command queueing for the run's lock keeps waiting while the holder's line
 * is not written (an empty RUN/lock: a holder that has just taken it, or one rewriting
 * its line): it once gave up after 1 s, exit 4, though the holder was another queueing
 * command about to end its turn. Here a holder keeps the lock 2.5 s with no line. */
static void t_lock_queue_unwritten(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-lockq-XXXXXX", p[200];
    CHECK(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/lock", dir);
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (!pid) {
        int fd = open(p, O_RDWR | O_CREAT, 0644);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl)) _exit(1);
        if (write(pfd[1], "x", 1) != 1) _exit(1);
        usleep(2500 * 1000);
        _exit(0);
    }
    close(pfd[1]);
    char c;
    CHECK(read(pfd[0], &c, 1) == 1);
    close(pfd[0]);
    kf_ctx *ctx = kf_ctx_new();
    kf_store_lock *l = NULL;
    kf_status st = kf_store_lock_take(ctx, dir, "submit", KF_STORE_LOCK_QUEUE, &l);
    CHECKF(st == KF_OK, "status %d: %s", (int)st, kf_errmsg(ctx));
    kf_store_unlock(l);
    waitpid(pid, NULL, 0);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

void kft_register_store(void) {
    kft_add("store/roundtrip", t_roundtrip, NULL, 30);
    kft_add("store/lock_queue_unwritten", t_lock_queue_unwritten, NULL, 30);
    kft_add("store/seal_identity", t_seal_identity, NULL, 30);
    kft_add("store/each_order", t_each, NULL, 30);
    kft_add("store/sources", t_sources, NULL, 30);
    kft_add("store/fingerprint", t_fingerprint, NULL, 30);
    kft_add("store/schema", t_schema, NULL, 30);
    kft_add("store/crash_sigkill", t_crash, NULL, 120);
    kft_add("store/threads", t_threads, NULL, 120);
    kft_add("store/processes", t_processes, NULL, 120);
    kft_add("store/bad_input", t_bad_input, NULL, 30);
    kft_add("store/write_failures", t_write_failures, NULL, 60);
    kft_add("store/source_sync", t_source_sync, NULL, 60);
}

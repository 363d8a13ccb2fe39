/*
 * test_export.c - kforge export (docs/run.md): a run's per-shape winners and a dispatcher
 * that picks among them by shape, checked before it is written. Runs built by the loop
 * and runs fabricated with the store API (two nodes that win different shapes, a node
 * whose claimed win is wrong, no verified node).
 */
#define _GNU_SOURCE
#include "kft.h"

#include "backend/cuda/host.h"
#include "backend/dispatch.h"
#include "loop/loop.h"
#include "store/store.h"
#include "task/candidate.h"
#include "util/util.h"

#include <glob.h>
#include <math.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char quick[] = "--min-runs 6 --max-runs 12 --min-time 0.02 --hidden 1";

static int cli(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static int exists(const char *dir, const char *name) {
    char p[4096];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

static json_t *load_json(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return json_load_file(p, 0, NULL);
}

/* No DIR.tmp-* or DIR.old-* left beside the export. */
static int leftovers(const char *parent) {
    char pat[4096];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/*.tmp-*", parent);
    int n = glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    globfree(&g);
    snprintf(pat, sizeof pat, "%s/*.old-*", parent);
    n += glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    globfree(&g);
    return n;
}

static int export_events(const char *run) {
    char p[4096];
    snprintf(p, sizeof p, "%s/run.db", run);
    sqlite3 *db = NULL;
    int n = -1;
    if (sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM events WHERE kind = 'export'", -1, &q, NULL) ==
                SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            n = sqlite3_column_int(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
    return n;
}

/* A run of the loop on softmax, exported: the winners and the dispatcher are written,
 * the dispatcher passes `kforge check` on its own, EXPORT.json says what was done and the
 * run's store records it as an event (not a node). Exporting again replaces the export. */
static void t_softmax(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export-XXXXXX", args[2048], out[1 << 16], ex[512];
    CHECK(mkdtemp(dir));
    snprintf(ex, sizeof ex, "%s/ex", dir);
    snprintf(args, sizeof args, "run tasks/c/softmax --budget 3 --seed 5 --run %s/r %s 2>&1", dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "export %s/r -o %s --json %s", dir, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    json_t *f = load_json(ex, "EXPORT.json");
    CHECKF(j && f && json_equal(j, f), "--json prints EXPORT.json: %s", out);
    CHECK(!strcmp(json_string_value(json_object_get(j, "dispatcher")), "softmax_dispatch.c"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(j, "verification"), "verdict")),
                  "accepted"));
    CHECK(json_array_size(json_object_get(json_object_get(j, "verification"), "shapes")) == 2);
    json_t *wins = json_object_get(j, "winners");
    CHECK(json_array_size(wins) >= 1);
    int fallbacks = 0;
    size_t i;
    json_t *w;
    json_array_foreach(wins, i, w) {
        CHECK(exists(ex, json_string_value(json_object_get(w, "file"))));
        fallbacks += json_is_true(json_object_get(w, "fallback"));
        if (json_is_true(json_object_get(w, "fallback")))
            CHECK(json_integer_value(json_object_get(w, "node")) ==
                  json_integer_value(json_object_get(j, "fallback")));
    }
    CHECK(fallbacks == 1);
    json_decref(f);
    json_decref(j);
    snprintf(args, sizeof args, "check tasks/c/softmax %s/softmax_dispatch.c --hidden 2 2>&1", ex);
    CHECKF(cli(args, out, sizeof out) == 0, "the written dispatcher is not accepted: %s", out);
    snprintf(args, sizeof args, "%s/r", dir);
    CHECK(export_events(args) == 1);
    snprintf(args, sizeof args, "tree %s/r --json", dir);
    CHECK(cli(args, out, sizeof out) == 0);
    j = json_loads(out, 0, NULL);
    CHECKF(json_array_size(json_object_get(j, "nodes")) == 3, "the export added a node: %s", out);
    json_decref(j);
    /* again, onto the earlier export (named with a trailing slash): replaced */
    snprintf(args, sizeof args, "export %s/r -o %s/ %s 2>&1", dir, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECK(exists(ex, "EXPORT.json") && exists(ex, "softmax_dispatch.c"));
    CHECK(leftovers(dir) == 0);
    /* -o naming a file, or a directory of other files: refused, nothing written */
    snprintf(args, sizeof args, "export %s/r -o %s/EXPORT.json 2>&1", dir, ex);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "not a directory"), "%s", out);
    snprintf(args, sizeof args, "%s/r", dir);
    snprintf(args, sizeof args, "export %s/r -o %s/r 2>&1", dir, dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "no EXPORT.json"), "%s", out);
    snprintf(args, sizeof args, "export %s/none -o %s/x 2>&1", dir, dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "none"), "%s", out);
    CHECK(!exists(dir, "x") && leftovers(dir) == 0);
    kf__rmtree(dir);
}

/* ---- fabricated runs ---------------------------------------------------------------- */

/* The template at a point. */
static char *point(const char *w) {
    char *t = NULL;
    size_t tl = 0, n = 0;
    CHECK(kf__read_file(kft_src("tasks/c/softmax/candidates/param.c"), 1 << 20, &t, &tl) == 0);
    json_t *p = json_pack("{s:s}", "W", w);
    char *s = kf_loop_materialize(t, tl, p, &n);
    json_decref(p);
    free(t);
    CHECK(s);
    return s;
}

/* A second, hand-written softmax whose file-scope names collide with the template's
 * (vload, vf as a different type) and use what the renamer must follow: an enum, a
 * struct typedef, a static table, a function pointer, a prototype. */
static const char other_src[] =
    "#include <math.h>\n#include <stdint.h>\n"
    "typedef struct acc { float m, s; } vf;\n"
    "enum { BLK = 4 };\n"
    "static const float one[BLK] = {1, 1, 1, 1};\n"
    "static float vload(const float *p, int64_t i);\n"
    "static float vload(const float *p, int64_t i) { return p[i] * one[i % BLK]; }\n"
    "static float (*load)(const float *, int64_t) = vload;\n"
    "void softmax(const float *x, float *y, int64_t rows, int64_t cols)\n{\n"
    "    for (int64_t r = 0; r < rows; r++) {\n"
    "        vf a = {-INFINITY, 0.0f};\n"
    "        for (int64_t c = 0; c < cols; c++) a.m = fmaxf(a.m, load(x + r * cols, c));\n"
    "        for (int64_t c = 0; c < cols; c++) {\n"
    "            y[r * cols + c] = expf(x[r * cols + c] - a.m);\n"
    "            a.s += y[r * cols + c];\n"
    "        }\n"
    "        for (int64_t c = 0; c < cols; c++) y[r * cols + c] /= a.s;\n"
    "    }\n}\n";

static int64_t fab_node(kf_store *st, const char *src, const char *params, double s1, double s2,
                        kf_node_state state) {
    kf_node n;
    memset(&n, 0, sizeof n);
    snprintf(n.ext, sizeof n.ext, "c");
    snprintf(n.proposer, sizeof n.proposer, "builtin");
    snprintf(n.category, sizeof n.category, "other");
    n.params_json = params ? strdup(params) : NULL;
    CHECK(kf_store_put_source(st, src, strlen(src), "c", n.src_hash) == KF_OK);
    CHECK(kf_store_add_node(st, &n) == KF_OK);
    n.state = state;
    if (state != KF_NODE_REJECTED) {
        json_t *sh = json_pack("[{s:{s:i, s:i}, s:f, s:b}, {s:{s:i, s:i}, s:f, s:b}]", "sizes", "rows", 256,
                               "cols", 1024, "speedup", s1, "win", 1, "sizes", "rows", 100, "cols", 777,
                               "speedup", s2, "win", 1);
        n.shapes_json = json_dumps(sh, JSON_COMPACT);
        json_decref(sh);
        n.speedup = sqrt(s1 * s2);
    } else {
        n.reasons = strdup("wrong_result");
    }
    CHECK(kft_finish_node(st, &n) == KF_OK);
    int64_t id = n.id;
    kf_node_free(&n);
    return id;
}

static kf_store *fab_run(kf_ctx *ctx, kf_task **t, const char *dir) {
    *t = kft_task(ctx, "tasks/c/softmax");
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, dir, *t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    return st;
}

/* Node A wins the first shape, node B the second: the dispatcher routes the second
 * shape to B by its sizes and everything else (the first shape, hidden and edge shapes)
 * to A, and passes the checker. B's helpers share names with A's and are kept apart. */
static void t_two_winners(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export2-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *st = fab_run(ctx, &t, run);
    char *a = point("16");
    int64_t ida = fab_node(st, a, "{\"W\": 16}", 6.0, 2.0, KF_NODE_KEPT);
    int64_t idb = fab_node(st, other_src, NULL, 1.5, 3.0, KF_NODE_KEPT);
    fab_node(st, "void softmax(void) {}\n", NULL, 0, 0, KF_NODE_REJECTED); /* never a winner */
    free(a);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s --json %s", run, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "fallback")) == ida, "%s", out);
    json_t *routes = json_object_get(j, "routes");
    CHECKF(json_array_size(routes) == 1, "%s", out);
    json_t *r = json_array_get(routes, 0);
    CHECK(json_integer_value(json_object_get(r, "node")) == idb);
    CHECKF(!strcmp(json_string_value(json_object_get(r, "predicate")), "rows == 100 && cols == 777"), "%s",
           out);
    CHECK(json_array_size(json_object_get(j, "winners")) == 2);
    json_decref(j);
    char name[64];
    snprintf(name, sizeof name, "softmax_%lld.c", (long long)ida);
    CHECK(exists(ex, name));
    snprintf(name, sizeof name, "softmax_%lld.c", (long long)idb);
    CHECK(exists(ex, name));
    /* both helpers named vload, renamed apart; one entry; no directive left from A */
    char p[1024], *txt = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/softmax_dispatch.c", ex);
    CHECK(kf__read_file(p, 1 << 20, &txt, &len) == 0);
    char want[64];
    snprintf(want, sizeof want, "kf_n%lld_vload", (long long)ida);
    CHECK(strstr(txt, want));
    snprintf(want, sizeof want, "kf_n%lld_vload", (long long)idb);
    CHECK(strstr(txt, want));
    CHECK(!strstr(txt, "kforge:param") && !strstr(txt, "kforge:require"));
    free(txt);
    snprintf(args, sizeof args, "check tasks/c/softmax %s --hidden 3 2>&1", p);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECK(leftovers(dir) == 0);
    kf__rmtree(dir);
}

/* A node that claims the second shape and is wrong there: the dispatcher routes that
 * shape to it, the checker rejects it, it is not written (exit 1); the winners are. */
static void t_rejected(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export3-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *st = fab_run(ctx, &t, run);
    char *a = point("8");
    fab_node(st, a, "{\"W\": 8}", 6.0, 2.0, KF_NODE_KEPT);
    /* B: A's text, wrong at rows=100, cols=777 only */
    const char *e = strstr(a, "void softmax(");
    CHECK(e);
    kf_buf b;
    kf_buf_init(&b, 1 << 20);
    kf_buf_append(&b, a, (size_t)(e - a));
    kf_buf_printf(&b,
                  "static void good(const float *restrict x, float *restrict y, int64_t rows, int64_t "
                  "cols);\n"
                  "void softmax(const float *restrict x, float *restrict y, int64_t rows, int64_t cols)\n{\n"
                  "    good(x, y, rows, cols);\n    if (rows == 100 && cols == 777) y[5] += 1.0f;\n}\n"
                  "static void good(%s",
                  e + strlen("void softmax("));
    fab_node(st, b.p, "{\"W\": 8}", 1.5, 9.0, KF_NODE_KEPT);
    kf_buf_free(&b);
    free(a);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s --json %s", run, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 1, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(json_is_null(json_object_get(j, "dispatcher")), "%s", out);
    json_t *v = json_object_get(j, "verification");
    CHECK(!strcmp(json_string_value(json_object_get(v, "verdict")), "rejected"));
    CHECKF(strstr(out, "wrong_result"), "%s", out);
    CHECK(json_array_size(json_object_get(j, "winners")) == 2);
    json_decref(j);
    CHECK(exists(ex, "EXPORT.json") && exists(ex, "softmax_1.c") && exists(ex, "softmax_2.c"));
    CHECK(!exists(ex, "softmax_dispatch.c"));
    CHECK(export_events(run) == 1);
    CHECK(leftovers(dir) == 0);
    kf__rmtree(dir);
}

/* A run with no verified node: exit 2, nothing written. */
static void t_none(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export4-XXXXXX", run[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *st = fab_run(ctx, &t, run);
    fab_node(st, "void softmax(void) {}\n", NULL, 0, 0, KF_NODE_REJECTED);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s/ex 2>&1", run, dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "no kept node"), "%s", out);
    CHECK(!exists(dir, "ex") && leftovers(dir) == 0);
    snprintf(args, sizeof args, "export %s 2>&1", run);
    CHECK(cli(args, out, sizeof out) == 2);
    kf__rmtree(dir);
}

/* A CUDA task on a machine without a GPU: the winners and EXPORT.json are written; the
 * dispatcher (here the one winner's own kernel-mode text) cannot be verified, so it is
 * written only as softmax_dispatch.unverified.cu, "dispatcher" is null, why says so, and
 * export exits 3. The run is fabricated and nothing is run. */
static void t_cuda(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export5-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax");
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    char *src = NULL;
    size_t len = 0;
    CHECK(kf__read_file(kft_src("tasks/cuda/softmax/candidates/fast.cu"), 1 << 20, &src, &len) == 0);
    kf_node n;
    memset(&n, 0, sizeof n);
    snprintf(n.ext, sizeof n.ext, "cu");
    snprintf(n.proposer, sizeof n.proposer, "builtin");
    snprintf(n.category, sizeof n.category, "other");
    CHECK(kf_store_put_source(st, src, len, "cu", n.src_hash) == KF_OK);
    free(src);
    CHECK(kf_store_add_node(st, &n) == KF_OK);
    n.state = KF_NODE_KEPT;
    n.shapes_json = strdup("[{\"sizes\": {\"rows\": 4, \"cols\": 4}, \"speedup\": 2.0, \"win\": true}]");
    n.speedup = 2.0;
    CHECK(kft_finish_node(st, &n) == KF_OK);
    kf_node_free(&n);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    char why[512];
    if (kft_have_gpu(why, sizeof why)) kft_skip("this machine has a GPU (export/cuda_dispatch_gpu)");
    snprintf(args, sizeof args, "export %s -o %s --json 2>/dev/null", run, ex);
    CHECKF(cli(args, out, sizeof out) == 3, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(json_is_null(json_object_get(j, "dispatcher")), "%s", out);
    CHECKF(strstr(json_string_value(json_object_get(j, "why")), "CUDA dispatcher could not be verified"),
           "%s", out);
    json_decref(j);
    CHECK(exists(ex, "softmax_1.cu") && exists(ex, "EXPORT.json") &&
          exists(ex, "softmax_dispatch.unverified.cu") && !exists(ex, "softmax_dispatch.cu") &&
          !exists(ex, "softmax_dispatch.c"));
    kf__rmtree(dir);
}

/* Every bundled C task: its template at the defaults wins the first visible shape, its
 * fast.c the second; the dispatcher joining the two (different helpers, macros,
 * parameters) is accepted by the checker. */
/* Two runs exported into the same DIR: the second replaces the first with a warning that
 * names the first run, and EXPORT.json says whose export it replaced (replaced_run);
 * exporting the same run again replaces it silently. */
static void t_replace_other(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export11-XXXXXX", run[2][512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(ex, sizeof ex, "%s/ex", dir);
    for (int k = 0; k < 2; k++) {
        snprintf(run[k], sizeof run[k], "%s/r%d", dir, k);
        kf_ctx *ctx = kf_ctx_new();
        kf_task *t = NULL;
        kf_store *st = fab_run(ctx, &t, run[k]);
        char *a = point("16");
        fab_node(st, a, "{\"W\": 16}", 6.0, 2.0, KF_NODE_KEPT);
        free(a);
        kf_store_close(st);
        kf_task_free(t);
        kf_ctx_free(ctx);
    }
    for (int k = 0; k < 3; k++) { /* r0, r0 again, then r1 */
        const char *r = run[k == 2];
        snprintf(args, sizeof args, "export %s -o %s --json %s 2>%s/err", r, ex, quick, dir);
        CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
        json_t *j = json_loads(out, 0, NULL);
        char ep[600], *err = NULL;
        size_t el = 0;
        snprintf(ep, sizeof ep, "%s/err", dir);
        CHECK(kf__read_file(ep, 1 << 20, &err, &el) == 0);
        if (k < 2) {
            CHECKF(json_is_null(json_object_get(j, "replaced_run")) && !strstr(err, "another run"), "%s\n%s",
                   out, err);
        } else {
            CHECKF(!strcmp(json_string_value(json_object_get(j, "replaced_run")), run[0]), "%s", out);
            CHECKF(strstr(err, "warning") && strstr(err, "another run") && strstr(err, run[0]), "%s", err);
        }
        free(err);
        json_decref(j);
    }
    kf__rmtree(dir);
}

/* A run of task td fabricated with two kept nodes: its template at the defaults winning
 * the first visible shape, its fast.<ext> (with append after it, or NULL) the second. */
/* Record a kept builtin node of source src (params_json may be NULL) whose speedup at
 * the task's first n visible shapes is sp[i] (a win at each); its speedup is their geomean. */
static void kept_node(kf_store *st, const kf_task *t, const char *ext, const char *src,
                      const char *params_json, const double *sp, int n) {
    kf_node nd;
    memset(&nd, 0, sizeof nd);
    snprintf(nd.ext, sizeof nd.ext, "%s", ext);
    snprintf(nd.proposer, sizeof nd.proposer, "builtin");
    snprintf(nd.category, sizeof nd.category, "other");
    nd.params_json = params_json ? strdup(params_json) : NULL;
    CHECK(kf_store_put_source(st, src, strlen(src), ext, nd.src_hash) == KF_OK);
    CHECK(kf_store_add_node(st, &nd) == KF_OK);
    nd.state = KF_NODE_KEPT;
    json_t *sh = json_array();
    double lg = 0;
    CHECK(n >= 1 && n <= t->nshapes);
    for (int s = 0; s < n; s++) {
        json_t *sz = json_object();
        for (int z = 0; z < t->nsizes; z++)
            json_object_set_new(sz, t->size_names[z], json_integer(t->shapes[s].v[z]));
        json_array_append_new(sh, json_pack("{s:o, s:f, s:b}", "sizes", sz, "speedup", sp[s], "win", 1));
        lg += log(sp[s]);
    }
    nd.shapes_json = json_dumps(sh, JSON_COMPACT);
    json_decref(sh);
    nd.speedup = exp(lg / n);
    CHECK(kft_finish_node(st, &nd) == KF_OK);
    kf_node_free(&nd);
}

static void fab_two(const char *td, const char *ext, const char *run, const char *append) {
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, td);
    CHECK(t->nshapes >= 2);
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    char path[512];
    snprintf(path, sizeof path, "%s/candidates/param.%s", kft_src(td), ext);
    kf_candidate *c = NULL;
    CHECKF(kf_candidate_load(ctx, t, path, NULL, 0, &c) == KF_OK, "%s", kf_errmsg(ctx));
    json_t *pt = json_object();
    for (int i = 0; i < c->nparams; i++)
        json_object_set_new(pt, c->params[i].name, json_string(c->params[i].values[0]));
    size_t n = 0;
    char *a = kf_loop_materialize(c->text, c->len, pt, &n);
    char *pj = json_dumps(pt, JSON_COMPACT);
    json_decref(pt);
    kf_candidate_free(c);
    char *b = NULL;
    size_t bl = 0;
    snprintf(path, sizeof path, "%s/candidates/fast.%s", kft_src(td), ext);
    CHECK(kf__read_file(path, 1 << 20, &b, &bl) == 0);
    if (append) {
        char *bb = kf__asprintf("%s%s", b, append);
        free(b);
        b = bb;
    }
    /* the template wins the first shape, fast the second */
    static const double sp_a[2] = {3.0, 2.0}, sp_b[2] = {1.0, 3.0};
    kept_node(st, t, ext, a, pj, sp_a, 2);
    kept_node(st, t, ext, b, NULL, sp_b, 2);
    free(a);
    free(b);
    free(pj);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* An exported template node compiles as it was checked with any compiler: kforge builds
 * it with -DW=16 from its parameters, and the template's own "#ifndef W / #define W 8"
 * won under a plain cc (a docs-only user's exported ACC=16 kernel compiled as ACC=1). One
 * node wins everywhere here, so the dispatcher is that node's file too. */
static void t_plain_compile(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export8-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax");
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    kf_candidate *c = NULL;
    CHECKF(kf_candidate_load(ctx, t, kft_src("tasks/c/softmax/candidates/param.c"), NULL, 0, &c) == KF_OK,
           "%s", kf_errmsg(ctx));
    json_t *pt = json_object();
    for (int i = 0; i < c->nparams; i++)
        json_object_set_new(pt, c->params[i].name,
                            json_string(!strcmp(c->params[i].name, "W") ? "16" : c->params[i].values[0]));
    size_t n = 0;
    char *text = kf_loop_materialize(c->text, c->len, pt, &n);
    char *pj = json_dumps(pt, JSON_COMPACT);
    static const double sp[2] = {2.0, 2.0};
    CHECK(t->nshapes == 2);
    kept_node(st, t, "c", text, pj, sp, 2);
    free(pj);
    kf_store_close(st);
    free(text);
    json_decref(pt);
    kf_candidate_free(c);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s --json %s 2>&1", run, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    static const char *const files[] = {"softmax_1.c", "softmax_dispatch.c"};
    for (int i = 0; i < 2; i++) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "cc -dM -E '%s/%s' 2>&1 | grep '^#define W '", ex, files[i]);
        int rc = kft_run(cmd, out, sizeof out);
        CHECKF(rc == 0 && strstr(out, "#define W 16"), "%s under cc: %s", files[i], out);
    }
    kf__rmtree(dir);
}

static void t_bundled(const void *arg) {
    (void)arg;
    static const char *const tasks[] = {"linear", "rmsnorm", "saxpy", "sgemm", "softmax", "sum", "transpose"};
    for (size_t ti = 0; ti < sizeof tasks / sizeof *tasks; ti++) {
        char dir[] = "/tmp/kft-export6-XXXXXX", run[512], ex[512], args[2048], out[1 << 16], td[256];
        CHECK(mkdtemp(dir));
        snprintf(run, sizeof run, "%s/r", dir);
        snprintf(ex, sizeof ex, "%s/ex", dir);
        snprintf(td, sizeof td, "tasks/c/%s", tasks[ti]);
        fab_two(td, "c", run, NULL);
        snprintf(args, sizeof args, "export %s -o %s --json %s 2>&1", run, ex, quick);
        CHECKF(cli(args, out, sizeof out) == 0, "%s: %s", td, out);
        json_t *j = json_loads(out, 0, NULL);
        CHECKF(json_array_size(json_object_get(j, "routes")) == 1, "%s: %s", td, out);
        json_decref(j);
        kf__rmtree(dir);
    }
}

/* Every bundled CUDA task, fabricated as in bundled_c_tasks: the export writes a host-mode
 * dispatcher (// kforge:host, kforge_launch with the task's signature) that routes the
 * second shape to fast.cu's kernels and the rest to the template's. Without a GPU it cannot
 * be verified: it must still build with nvcc (host mode's build path), and it is written
 * only as <task>_dispatch.unverified.cu, with "dispatcher": null and exit 3. With a GPU
 * (export/cuda_dispatch_gpu; skipped without one) it is checked and timed like any
 * candidate: accepted, written as <task>_dispatch.cu, exit 0. */
static void t_cuda_dispatch(const void *arg) {
    char why[512];
    if (!kf__cuda_have_nvcc(why, sizeof why)) kft_skip("needs nvcc (host mode): %s", why);
    int gpu = arg != NULL; /* export/cuda_dispatch_gpu */
    if (gpu && !kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU to verify the dispatcher: %s", why);
    if (!gpu && kft_have_gpu(why, sizeof why))
        kft_skip("this machine has a GPU: export/cuda_dispatch_gpu verifies the dispatcher instead");
    setenv("KFORGE_CUDA_ARCH", "sm_90", 0);
    static const char *const tasks[] = {"bgemm",   "gdn_decode", "rmsnorm",  "sgemm",
                                        "softmax", "sum",        "transpose"};
    char failed[256] = "";
    for (size_t ti = 0; ti < sizeof tasks / sizeof *tasks; ti++) {
        char dir[] = "/tmp/kft-export9-XXXXXX", run[512], ex[512], args[2048], out[1 << 16], td[256], f[600];
        CHECK(mkdtemp(dir));
        snprintf(run, sizeof run, "%s/r", dir);
        snprintf(ex, sizeof ex, "%s/ex", dir);
        snprintf(td, sizeof td, "tasks/cuda/%s", tasks[ti]);
        fab_two(td, "cu", run, NULL);
        snprintf(args, sizeof args, "export %s -o %s --json %s 2>/dev/null", run, ex, quick);
        int rc = cli(args, out, sizeof out);
        json_t *j = json_loads(out, 0, NULL);
        json_t *ver = json_object_get(j, "verification");
        CHECKF(json_array_size(json_object_get(j, "routes")) == 1, "%s: %s", td, out);
        if (gpu) {
            /* every task is tried; the failures are reported together at the end */
            if (rc != 0 || !json_string_value(json_object_get(ver, "verdict")) ||
                strcmp(json_string_value(json_object_get(ver, "verdict")), "accepted")) {
                fprintf(stderr, "    export/cuda_dispatch_gpu: %s: exit %d: %s\n", td, rc, out);
                snprintf(failed + strlen(failed), sizeof failed - strlen(failed), " %s", tasks[ti]);
                json_decref(j);
                kf__rmtree(dir);
                continue;
            }
            snprintf(f, sizeof f, "%s_dispatch.cu", tasks[ti]);
            CHECKF(!strcmp(json_string_value(json_object_get(j, "dispatcher")), f) && exists(ex, f), "%s",
                   out);
        } else {
            CHECKF(rc == 3, "%s: exit %d: %s", td, rc, out);
            CHECKF(json_is_null(json_object_get(j, "dispatcher")), "%s", out);
            CHECKF(!strcmp(json_string_value(json_object_get(ver, "verdict")), "unverified") &&
                       json_is_true(json_object_get(ver, "compiled")),
                   "%s: it must build with nvcc: %s", td, out);
            snprintf(f, sizeof f, "%s_dispatch.unverified.cu", tasks[ti]);
            CHECKF(!strcmp(json_string_value(json_object_get(j, "dispatcher_unverified")), f) &&
                       exists(ex, f) &&
                       strstr(json_string_value(json_object_get(j, "why")), "could not be verified"),
                   "%s", out);
            char g[600];
            snprintf(g, sizeof g, "%s_dispatch.cu", tasks[ti]);
            CHECK(!exists(ex, g));
        }
        char p[1200], *txt = NULL;
        size_t len = 0;
        snprintf(p, sizeof p, "%s/%s", ex, f);
        CHECK(kf__read_file(p, 1 << 20, &txt, &len) == 0);
        CHECKF(txt && strstr(txt, "// kforge:host") && strstr(txt, "extern \"C\" int kforge_launch("), "%s",
               txt);
        free(txt);
        json_decref(j);
        kf__rmtree(dir);
    }
    CHECKF(!failed[0], "the dispatcher was not accepted for:%s (each export's JSON above)", failed);
}

/* Without a GPU the verification is a build with nvcc: a dispatcher that does not build
 * (here a "kept" winner damaged in a hand-made run) is rejected with compile_error, not
 * written, and export exits 1. */
static void t_cuda_dispatch_broken(const void *arg) {
    (void)arg;
    char why[512];
    if (!kf__cuda_have_nvcc(why, sizeof why)) kft_skip("needs nvcc (host mode): %s", why);
    if (kft_have_gpu(why, sizeof why))
        kft_skip("this machine has a GPU: the dispatcher is checked, not only built");
    setenv("KFORGE_CUDA_ARCH", "sm_90", 0);
    char dir[] = "/tmp/kft-export10-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    fab_two("tasks/cuda/softmax", "cu", run, "\nstatic int broken = undeclared_name;\n");
    snprintf(args, sizeof args, "export %s -o %s --json %s 2>/dev/null", run, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 1, "%s", out);
    json_t *j = json_loads(out, 0, NULL), *ver = json_object_get(j, "verification");
    CHECKF(!strcmp(json_string_value(json_object_get(ver, "verdict")), "rejected") &&
               !strcmp(json_string_value(
                           json_object_get(json_array_get(json_object_get(ver, "reasons"), 0), "code")),
                       "compile_error"),
           "%s", out);
    CHECKF(json_is_null(json_object_get(j, "dispatcher")) && !json_object_get(j, "dispatcher_unverified"),
           "%s", out);
    json_decref(j);
    CHECK(!exists(ex, "softmax_dispatch.cu") && !exists(ex, "softmax_dispatch.unverified.cu") &&
          exists(ex, "EXPORT.json"));
    kf__rmtree(dir);
}

/* sgemm: square_when.c (kforge:when m == n && n == k && m % 16 == 0) has the best
 * geometric mean over the shapes it was timed on and wins 128^3; fast.c wins the other
 * shape. The fallback is fast.c (a node with a kforge:when claims only its domain), and
 * square_when is routed to at m == n == k == 128 first, then over its domain. */
static void t_when(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export7-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sgemm");
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    int64_t ids[2];
    for (int k = 0; k < 2; k++) {
        char *src = NULL;
        size_t len = 0;
        CHECK(kf__read_file(
                  kft_src(k ? "tasks/c/sgemm/candidates/square_when.c" : "tasks/c/sgemm/candidates/fast.c"),
                  1 << 20, &src, &len) == 0);
        kf_node nd;
        memset(&nd, 0, sizeof nd);
        snprintf(nd.ext, sizeof nd.ext, "c");
        snprintf(nd.proposer, sizeof nd.proposer, "builtin");
        snprintf(nd.category, sizeof nd.category, "specialisation");
        CHECK(kf_store_put_source(st, src, len, "c", nd.src_hash) == KF_OK);
        free(src);
        CHECK(kf_store_add_node(st, &nd) == KF_OK);
        nd.state = KF_NODE_KEPT;
        nd.shapes_json =
            strdup(k ? "[{\"sizes\": {\"m\": 128, \"n\": 128, \"k\": 128}, \"speedup\": 9.0, \"win\": "
                       "true}]"
                     : "[{\"sizes\": {\"m\": 128, \"n\": 128, \"k\": 128}, \"speedup\": 4.0, \"win\": "
                       "true}, {\"sizes\": {\"m\": 96, \"n\": 160, \"k\": 72}, \"speedup\": 4.0, \"win\": "
                       "true}]");
        nd.speedup = k ? 9.0 : 4.0;
        CHECK(kft_finish_node(st, &nd) == KF_OK);
        ids[k] = nd.id;
        kf_node_free(&nd);
    }
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s --json %s 2>&1", run, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "fallback")) == ids[0], "%s", out);
    json_t *r = json_array_get(json_object_get(j, "routes"), 0);
    CHECKF(json_integer_value(json_object_get(r, "node")) == ids[1], "%s", out);
    CHECKF(!strcmp(json_string_value(json_object_get(r, "predicate")), "m == 128 && n == 128 && k == 128"),
           "%s", out);
    json_decref(j);
    char p[1024], *txt = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/sgemm_dispatch.c", ex);
    CHECK(kf__read_file(p, 1 << 20, &txt, &len) == 0);
    CHECKF(!strstr(txt, "kforge:when"), "the dispatcher claims every shape: %s", txt);
    free(txt);
    snprintf(args, sizeof args, "check tasks/c/sgemm %s --hidden 3 2>&1", p);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    kf__rmtree(dir);
}

/* A winner with a kforge:when is routed by its domain, not only by the visible shape it
 * won: the winner of `kforge:when cols == 777` runs for any rows with cols == 777 (it was
 * checked on every shape there), after the exact shapes' routes; the dispatcher is
 * checked as before. (A LayerNorm winner of cols == 768 ran only at rows == 1024.) */
static void t_when_domain(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export9-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *st = fab_run(ctx, &t, run);
    char *a = point("16");
    char *bw = kf__asprintf("/* kforge:when cols == 777 */\n%s", other_src);
    int64_t ida = fab_node(st, a, "{\"W\": 16}", 6.0, 2.0, KF_NODE_KEPT);
    int64_t idb = fab_node(st, bw, NULL, 1.5, 3.0, KF_NODE_KEPT);
    free(a), free(bw);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s --json %s 2>&1", run, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "fallback")) == ida, "%s", out);
    json_t *routes = json_object_get(j, "routes");
    int domain = 0;
    for (size_t i = 0; i < json_array_size(routes); i++) {
        json_t *r = json_array_get(routes, i);
        const char *d = json_string_value(json_object_get(r, "domain"));
        if (d && !strcmp(d, "cols == 777") && json_integer_value(json_object_get(r, "node")) == idb &&
            !strcmp(json_string_value(json_object_get(r, "predicate")), "((int64_t)(cols) == 777)"))
            domain = 1;
    }
    CHECKF(domain, "no route by node %lld's domain: %s", (long long)idb, out);
    json_decref(j);
    char p[1024], *txt = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/softmax_dispatch.c", ex);
    CHECK(kf__read_file(p, 1 << 20, &txt, &len) == 0);
    /* the exact shape first, then the domain, then the fallback */
    char want[256];
    snprintf(want, sizeof want, "if ((int64_t)(cols) == 777) { /* node %lld's domain: cols == 777 */",
             (long long)idb);
    char *ex1 = strstr(txt, "rows == 100 && cols == 777"), *dom = strstr(txt, want),
         *fb = strstr(txt, "the fallback */");
    CHECKF(ex1 && dom && fb && ex1 < dom && dom < fb, "%s", txt);
    free(txt);
    snprintf(args, sizeof args, "check tasks/c/softmax %s --hidden 3 2>&1", p);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    kf__rmtree(dir);
}

/* -o a/b whose parent a does not exist: a clear message naming it (exit 2), nothing
 * written; a path through a file says so. */
static void t_out_parent(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export10-XXXXXX", run[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *st = fab_run(ctx, &t, run);
    char *a = point("16");
    fab_node(st, a, "{\"W\": 16}", 6.0, 2.0, KF_NODE_KEPT);
    free(a);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s/missing/out %s 2>&1", run, dir, quick);
    char want[1024];
    snprintf(want, sizeof want, "its parent directory %s/missing does not exist", dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, want), "%s", out);
    CHECK(!exists(dir, "missing"));
    snprintf(args, sizeof args, "export %s -o %s/r/run.db/out %s 2>&1", run, dir, quick);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "a part of the path is a file"), "%s", out);
    kf__rmtree(dir);
}

/* The domain as a C predicate: sizes that are arguments, parameters as their values;
 * none for a size no argument carries, a call, or a division by a size or by zero. */
static void t_domain_predicate(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax");
    const struct {
        const char *when, *params, *want;
    } c[] = {
        {"cols % W == 0 && rows >= 2", "{\"W\": 8}", "((int64_t)(cols) % 8 == 0 && (int64_t)(rows) >= 2)"},
        {"cols <= 1024 || !(rows > 4)", NULL, "((int64_t)(cols) <= 1024 || !((int64_t)(rows) > 4))"},
        {"min(rows, cols) > 4", NULL, NULL},
        {"cols / rows > 4", NULL, NULL},
        {"cols % 0 == 1", NULL, NULL},
        {"depth == 3", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char *text = kf__asprintf("/* kforge:when %s */\nint x;\n", c[i].when);
        kf_winner w = {0};
        w.text = text;
        w.len = strlen(text);
        w.params_json = (char *)c[i].params;
        kf_buf b;
        kf_buf_init(&b, 1u << 16);
        int rc = kf_dispatch_domain(t, &w, &b);
        if (c[i].want)
            CHECKF(rc == 0 && !strcmp(b.p, c[i].want), "%s: %d '%s'", c[i].when, rc, b.p ? b.p : "");
        else CHECKF(rc == -1, "%s: %s", c[i].when, b.p ? b.p : "");
        kf_buf_free(&b);
        free(text);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The dispatcher slot's plan, typed: each visible shape's winner routed by its exact
 * shape (an index of best), a winner with a kforge:when over its domain, and a note for
 * each shape left to the fallback, and why: arguments that do not pin every size and a
 * kforge:when that cannot be written over them, or no argument that tells shapes apart.
 * (The arguments are taken from softmax's in memory, as a task whose sizes are not all
 * arguments would have them.) */
static void t_plan(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax");
    kf_expr *saved[2] = {NULL, NULL};
    kf_arg *sa[2] = {NULL, NULL};
    for (int i = 0; i < t->nargs; i++)
        if (!t->args[i].is_buffer && t->args[i].value_expr)
            sa[strcmp(kf_expr_src(t->args[i].value_expr), "rows") ? 1 : 0] = &t->args[i];
    CHECK(sa[0] && sa[1]);
    char fb[] = "void softmax(void) {}\n", dom[] = "/* kforge:when rows >= 2 */\nint a;\n",
         odd[] = "/* kforge:when min(rows, cols) > 4 */\nint b;\n";
    kf_winner w[3] = {{1, fb, sizeof fb - 1, NULL, NULL, 2.0, "c", ""},
                      {2, dom, sizeof dom - 1, NULL, NULL, 1.5, "c", ""},
                      {3, odd, sizeof odd - 1, NULL, NULL, 1.5, "c", ""}};
    kf_best_shape best[2] = {{2, 2, {"rows", "cols"}, {256, 1024}}, {3, 2, {"rows", "cols"}, {100, 777}}};
    for (int drop = 0; drop <= 2; drop++) {
        for (int k = 0; k < drop; k++) saved[k] = sa[1 - k]->value_expr, sa[1 - k]->value_expr = NULL;
        int used[3] = {1, 0, 0}, nrt = 0;
        kf_route *rt = NULL;
        kf_dispatch_out d;
        memset(&d, 0, sizeof d);
        CHECK(kf_dispatch_plan(t, w, 3, 0, best, 2, used, &rt, &nrt, &d) == 0 && !d.oom && nrt == d.nroutes);
        if (drop == 0) { /* every size an argument: both shapes by their sizes, then node 2's domain */
            CHECKF(d.nroutes == 3 && !d.nnotes && d.routes[2].node == 2 && d.routes[2].shape == -1 &&
                       d.routes[0].node == 2 && d.routes[0].shape == 0 && !d.routes[0].domain &&
                       !strcmp(d.routes[0].predicate, "rows == 256 && cols == 1024") &&
                       d.routes[1].node == 3 && d.routes[1].shape == 1,
                   "%d routes, %d notes", d.nroutes, d.nnotes);
        } else if (drop == 1) { /* cols no argument: node 2 over its domain, node 3's left */
            CHECKF(d.nroutes == 1 && d.routes[0].node == 2 && d.routes[0].shape == -1 &&
                       !strcmp(d.routes[0].domain, "rows >= 2") &&
                       !strcmp(d.routes[0].predicate, "((int64_t)(rows) >= 2)"),
                   "%d routes", d.nroutes);
            CHECKF(d.nnotes == 1 &&
                       !strcmp(d.notes[0], "rows=100, cols=777: node 3 has a kforge:when and the "
                                           "arguments do not pin every size; the fallback runs "
                                           "there"),
                   "%s", d.nnotes ? d.notes[0] : "no note");
        } else { /* no argument tells shapes apart: every shape to the fallback */
            CHECKF(!d.nroutes && d.nnotes == 2 &&
                       !strcmp(d.notes[0], "rows=256, cols=1024: no integer argument tells this shape apart; "
                                           "the fallback (node 1) runs there"),
                   "%d routes, %s", d.nroutes, d.nnotes ? d.notes[0] : "no note");
        }
        kf_dispatch_plan_free(rt, nrt);
        kf_dispatch_out_free(&d);
        for (int k = 0; k < drop; k++) sa[1 - k]->value_expr = saved[k];
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Every node claims a domain (kforge:when cols >= W, W a parameter): the fallback's
 * domain becomes the dispatcher's, its parameter replaced by its value. */
static void t_all_when(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-export8-XXXXXX", run[512], ex[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(ex, sizeof ex, "%s/ex", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    kf_store *st = fab_run(ctx, &t, run);
    char *a = point("8"), *b = point("16");
    char *aw = kf__asprintf("/* kforge:when cols >= W */\n%s", a);
    char *bw = kf__asprintf("/* kforge:when cols >= W */\n%s", b);
    int64_t ida = fab_node(st, aw, "{\"W\": 8}", 6.0, 2.0, KF_NODE_KEPT);
    int64_t idb = fab_node(st, bw, "{\"W\": 16}", 1.5, 3.0, KF_NODE_KEPT);
    free(a), free(b), free(aw), free(bw);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "export %s -o %s --json %s 2>&1", run, ex, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "fallback")) == ida, "%s", out);
    CHECKF(json_integer_value(json_object_get(json_array_get(json_object_get(j, "routes"), 0), "node")) ==
               idb,
           "%s", out);
    json_decref(j);
    char p[1024], *txt = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/softmax_dispatch.c", ex);
    CHECK(kf__read_file(p, 1 << 20, &txt, &len) == 0);
    CHECKF(strstr(txt, "/* kforge:when cols >= 8 */"), "%s", txt);
    free(txt);
    snprintf(args, sizeof args, "check tasks/c/softmax %s --hidden 3 --json", p);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(strstr(out, "\"when\":\"cols >= 8\""), "the checker reads the domain: %s", out);
    kf__rmtree(dir);
}

void kft_register_export(void) {
    kft_add("export/all_when", t_all_when, NULL, 120);
    kft_add("export/when_domain", t_when_domain, NULL, 120);
    kft_add("export/out_parent", t_out_parent, NULL, 60);
    kft_add("export/domain_predicate", t_domain_predicate, NULL, 30);
    kft_add("export/plan", t_plan, NULL, 30);
    kft_add("export/plain_compile", t_plain_compile, NULL, 120);
    kft_add("export/when_winner", t_when, NULL, 120);
    kft_add("export/bundled_c_tasks", t_bundled, NULL, 240);
    kft_add("export/cuda_winners_only", t_cuda, NULL, 60);
    kft_add("export/cuda_dispatch", t_cuda_dispatch, NULL, 900);
    kft_add("export/cuda_dispatch_gpu", t_cuda_dispatch, "gpu", 900);
    kft_add("export/cuda_dispatch_broken", t_cuda_dispatch_broken, NULL, 300);
    kft_add("export/softmax", t_softmax, NULL, 180);
    kft_add("export/two_winners", t_two_winners, NULL, 120);
    kft_add("export/replace_other_run", t_replace_other, NULL, 120);
    kft_add("export/rejected", t_rejected, NULL, 120);
    kft_add("export/no_verified", t_none, NULL, 60);
}

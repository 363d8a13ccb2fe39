/*
 * test_loop.c - kforge run (docs/run.md): a node's source is self-contained, a run on a
 * bundled task records a lineage with verified speedups, and a run killed with SIGKILL
 * at random moments resumes without losing or repeating a recorded evaluation.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "loop/loop.h"
#include "loop/tree.h"
#include "search/builtin.h"
#include "store/store.h"
#include "task/candidate.h"
#include "util/util.h"

#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The template with each kforge:param list cut to the chosen value; other lines,
 * line numbers and unnamed parameters untouched. */
static void t_materialize(const void *arg) {
    (void)arg;
    const char *t = "/* kforge:param UNROLL = 8, 1, 4 */\n// kforge:param BM = 32, 64 # tiling\n"
                    "/* kforge:param KEEP = a, b */\nint x;\n";
    json_t *p = json_pack("{s:s, s:s}", "UNROLL", "4", "BM", "64");
    size_t n = 0;
    char *s = kf_loop_materialize(t, strlen(t), p, &n);
    json_decref(p);
    CHECKF(s && !strcmp(s, "/* kforge:param UNROLL = 4 */\n// kforge:param BM = 64 \n"
                           "/* kforge:param KEEP = a, b */\nint x;\n"),
           "%s", s ? s : "(null)");
    CHECK(n == strlen(s));
    free(s);
}

/* tree and submit explain their figures: each shape against the parent as well as the
 * reference, and a reverted node's starred first timing next to the Critic's re-timing
 * against the parent that reverted it (a reverted 2.6x* read as better than a kept
 * 2.0x*, and "did not confirm the win" gave no figure). */
static void t_tree_figures(const void *arg) {
    (void)arg;
    kf_node v[3];
    memset(v, 0, sizeof v);
    v[0].id = 1, v[0].state = KF_NODE_KEPT, v[0].speedup = 2.0;
    v[0].shapes_json = (char *)"[{\"sizes\": {\"n\": 100}, \"speedup\": 2.0, \"win\": true}]";
    v[1].id = 2, v[1].parent = 1, v[1].state = KF_NODE_REVERTED, v[1].speedup = 2.6;
    v[1].shapes_json = (char *)"[{\"sizes\": {\"n\": 100}, \"speedup\": 2.6, \"win\": true}]";
    v[2].id = 3, v[2].parent = 1, v[2].state = KF_NODE_REVERTED, v[2].speedup = 2.1;
    v[2].shapes_json = (char *)"[{\"sizes\": {\"n\": 100}, \"speedup\": 2.1, \"win\": true}]";
    for (int i = 0; i < 3; i++) strcpy(v[i].proposer, "builtin"), strcpy(v[i].category, "tiling");
    json_t *critics = json_loads(
        "{\"2\": {\"decision\": \"reject\", \"why\": \"a re-timing against its parent did not confirm the "
        "win\", "
        "\"retimings\": [{\"geomean\": 1.02, \"best\": 1.03, \"best_lo\": 0.99, \"floor\": 1.05}]},"
        " \"3\": {\"decision\": \"reject\", \"why\": \"no shape beats the parent by more than the noise\"}}",
        0, NULL);
    CHECK(critics);
    kf_node_vec a = {v, 3, 3};
    kf_buf b;
    kf_buf_init(&b, 1u << 20);
    kf_tree_text(&b, &a, NULL, 0, 1, critics, NULL);
    CHECKF(b.p && strstr(b.p, "[n=100] 2.600x* (1.300x vs parent)") &&
               strstr(b.p, "[n=100] 2.000x*  critic") == NULL,
           "%s", b.p ? b.p : "");
    CHECKF(
        strstr(b.p,
               "critic: reject: a re-timing against its parent did not confirm the win; re-timed vs parent: "
               "#1 1.020x (best shape 1.030x, 95% from 0.990)"),
        "%s", b.p);
    /* a veto for no gain over the parent is shown too: its star is against the reference */
    CHECKF(strstr(b.p, "#3 reverted") &&
               strstr(b.p, "(1.050x vs parent)  critic: reject: no shape beats the parent"),
           "%s", b.p);
    kf_buf_free(&b);
    json_t *j = kf_tree_node_json(&v[1], &v[0], NULL, critics);
    json_t *vp = json_array_get(json_object_get(j, "vs_parent"), 0);
    CHECKF(fabs(json_number_value(json_object_get(vp, "speedup")) - 1.3) < 1e-9 &&
               fabs(json_number_value(json_object_get(j, "speedup_vs_parent")) - 1.3) < 1e-9 &&
               json_integer_value(json_object_get(json_object_get(vp, "sizes"), "n")) == 100,
           "%s", json_dumps(j, 0));
    json_t *rt = json_object_get(json_object_get(j, "critic"), "retimings");
    CHECK(json_number_value(json_object_get(json_array_get(rt, 0), "geomean")) == 1.02);
    json_decref(j);
    /* a child of the root: its parent is the reference, no second figure */
    j = kf_tree_node_json(&v[0], NULL, NULL, critics);
    CHECK(!json_object_get(j, "vs_parent"));
    json_decref(j);
    json_decref(critics);
}

static int cli(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static const char quick[] = "--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1";

/* A kept node's record after the Critic's re-timings: the lowest implied speedup, and the
 * interval that goes with it (a docs-only user found 1.149x recorded with ci95 [1.170,
 * 1.190], the first timing's interval). */
static void t_conservative(const void *arg) {
    (void)arg;
    kf_node parent = {0}, n = {0};
    parent.shapes_json = (char *)"[{\"sizes\": {\"n\": 100}, \"speedup\": 2.0}]";
    json_t *shapes =
        json_loads("[{\"sizes\": {\"n\": 100}, \"speedup\": 2.4, \"ci95\": [2.34, 2.38]}]", 0, NULL);
    json_t *retimed = json_loads("[[{\"sizes\": {\"n\": 100}, \"speedup\": 1.15, \"ci95\": [1.12, 1.18]}],"
                                 " [{\"sizes\": {\"n\": 100}, \"speedup\": 1.25, \"ci95\": [1.2, 1.3]}]]",
                                 0, NULL);
    struct kf_verdict v;
    kf_verdict_from_json(shapes, &v);
    kf_loop__conservative(&n, &v, &parent, retimed);
    kf_verdict_free(&v);
    json_t *got = json_loads(n.shapes_json, 0, NULL), *s0 = json_array_get(got, 0);
    double sp = json_number_value(json_object_get(s0, "speedup"));
    json_t *ci = json_object_get(s0, "ci95");
    CHECKF(fabs(sp - 2.3) < 1e-9 &&
               fabs(json_number_value(json_object_get(s0, "speedup_first")) - 2.4) < 1e-9,
           "%s", n.shapes_json);
    CHECKF(json_array_size(ci) == 2 && json_number_value(json_array_get(ci, 0)) <= sp &&
               sp <= json_number_value(json_array_get(ci, 1)) &&
               fabs(json_number_value(json_array_get(ci, 0)) - 2.24) < 1e-9,
           "the speedup lies outside its interval: %s", n.shapes_json);
    json_t *cf = json_object_get(s0, "ci95_first");
    CHECKF(json_array_size(cf) == 2 && fabs(json_number_value(json_array_get(cf, 0)) - 2.34) < 1e-9 &&
               fabs(json_number_value(json_array_get(cf, 1)) - 2.38) < 1e-9,
           "the first timing's interval: %s", n.shapes_json);
    CHECK(fabs(n.speedup - 2.3) < 1e-9);
    json_decref(got);
    json_decref(shapes);
    json_decref(retimed);
    free(n.shapes_json);
}

/* A run on a bundled C task: every evaluation recorded, the first (the template's
 * defaults) checked and timed against the reference, tree and best agree. */
static void t_run_saxpy(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-run-XXXXXX", args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 3 --seed 7 --run %s/r --json %s 2>&1", dir,
             quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "tree %s/r --json", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    json_t *nodes = json_object_get(j, "nodes");
    CHECKF(json_array_size(nodes) == 3, "%s", out);
    json_t *first = json_array_get(nodes, 0);
    CHECK(json_integer_value(json_object_get(first, "parent")) == 0);
    CHECK(!strcmp(json_string_value(json_object_get(first, "proposer")), "builtin"));
    const char *st = json_string_value(json_object_get(first, "state"));
    CHECKF(!strcmp(st, "kept") || !strcmp(st, "reverted"), "%s", st);
    CHECK(json_array_size(json_object_get(first, "shapes")) == 2); /* saxpy's visible shapes */
    /* three distinct points */
    for (size_t a = 0; a < 3; a++)
        for (size_t b = a + 1; b < 3; b++)
            CHECK(!json_equal(json_object_get(json_array_get(nodes, a), "params"),
                              json_object_get(json_array_get(nodes, b), "params")));
    int kept = 0;
    for (size_t a = 0; a < 3; a++)
        kept += !strcmp(json_string_value(json_object_get(json_array_get(nodes, a), "state")), "kept");
    json_decref(j);
    /* best: per shape, only what the Critic kept */
    snprintf(args, sizeof args, "best %s/r --json", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    j = json_loads(out, 0, NULL);
    CHECKF(json_array_size(json_object_get(j, "best")) == (kept ? 2u : 0u), "kept %d: %s", kept, out);
    json_decref(j);
    /* a tampered source (same name, other bytes) is refused, not reported */
    if (kept) {
        snprintf(args, sizeof args, "tree %s/r --json", dir);
        cli(args, out, sizeof out);
        j = json_loads(out, 0, NULL);
        char src[600];
        size_t a;
        json_t *nd;
        json_array_foreach(json_object_get(j, "nodes"), a,
                           nd) if (!strcmp(json_string_value(json_object_get(nd, "state")), "kept")) break;
        CHECK(a < 3);
        json_decref(j);
        snprintf(args, sizeof args, "best %s/r --json", dir);
        cli(args, out, sizeof out);
        j = json_loads(out, 0, NULL);
        snprintf(src, sizeof src, "%s",
                 json_string_value(json_object_get(json_array_get(json_object_get(j, "best"), 0), "source")));
        json_decref(j);
        FILE *f = fopen(src, "r+");
        CHECK(f);
        fputc(' ', f); /* one byte changed, same size */
        fclose(f);
        snprintf(args, sizeof args, "best %s/r 2>&1", dir);
        CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "damaged"), "%s", out);
    }
    /* bad input: no such run, no such task */
    snprintf(args, sizeof args, "tree %s/none 2>&1", dir);
    CHECK(cli(args, out, sizeof out) == 2 && strstr(out, "none"));
    CHECK(cli("run tasks/c/nonexistent --budget 1 2>&1", out, sizeof out) == 2 && strstr(out, "nonexistent"));
    kf__rmtree(dir);
}

/* SIGKILL at random moments, then --resume: the run ends with exactly its budget of
 * finished evaluations, no point evaluated twice, an intact database. */
static void t_kill_resume(const void *arg) {
    const char *jobs = arg; /* NULL: --jobs 1; else the first run's --jobs, which resumes keep */
    char dir[] = "/tmp/kft-kill-XXXXXX", run[256], out[1 << 16], args[1024];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    srand((unsigned)time(NULL));
    const int budget = 4;
    pid_t killed[4];
    /* with --jobs, slower timings so that the kills find several evaluations in flight */
    const char *mt = jobs ? "0.15" : "0.01", *mr = jobs ? "400" : "8";
    size_t most = 0; /* the most unfinished nodes a kill left */
    for (int round = 0; round < 4; round++) {
        pid_t pid = fork();
        killed[round] = pid;
        CHECK(pid >= 0);
        if (pid == 0) {
            int nul = open("/dev/null", 1);
            dup2(nul, 1);
            dup2(nul, 2);
            if (chdir(kft_src(".")) != 0) _exit(99);
            char b[16];
            snprintf(b, sizeof b, "%d", budget);
            if (round == 0)
                execl(kft_bin("kforge"), "kforge", "run", "tasks/c/sum", "--budget", b, "--seed", "3",
                      "--run", run, "--min-runs", "5", "--max-runs", mr, "--min-time", mt, "--hidden", "1",
                      "--jobs", jobs ? jobs : "1", (char *)NULL);
            else
                execl(kft_bin("kforge"), "kforge", "run", "--resume", run, "--budget", b, "--min-runs", "5",
                      "--max-runs", mr, "--min-time", mt, "--hidden", "1", (char *)NULL);
            _exit(98);
        }
        usleep((useconds_t)(100000 + rand() % 900000));
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        kf_ctx *c = kf_ctx_new();
        kf_store *s = NULL;
        if (kf_store_open(c, run, NULL, &s) == KF_OK) {
            int64_t *ids = NULL;
            size_t nun = 0;
            if (kf_store_unfinished(s, &ids, &nun) == KF_OK && nun > most) most = nun;
            free(ids);
            kf_store_close(s);
        }
        kf_ctx_free(c);
    }
    /* a test of --jobs that never killed two evaluations in flight tested little */
    if (jobs) CHECKF(most >= 2, "the kills left at most %zu unfinished node(s)", most);
    /* whatever happened, a last resume finishes the run (or the first run never created it) */
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    int exists = kf_store_open(ctx, run, NULL, &st) == KF_OK;
    if (exists) {
        CHECK(kf_store_check(st) == KF_OK);
        kf_store_close(st);
        snprintf(args, sizeof args, "run --resume %s --budget %d %s 2>&1", run, budget, quick);
    } else {
        snprintf(args, sizeof args, "run tasks/c/sum --budget %d --seed 3 --run %s --jobs %s %s 2>&1", budget,
                 run, jobs ? jobs : "1", quick);
    }
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECK(kf_store_open(ctx, run, NULL, &st) == KF_OK);
    CHECK(kf_store_check(st) == KF_OK);
    int64_t *ids = NULL;
    size_t nun = 0;
    CHECK(kf_store_unfinished(st, &ids, &nun) == KF_OK);
    CHECKF(nun == 0, "%zu unfinished after the last resume", nun);
    free(ids);
    /* the run remembers its --jobs */
    char want[32];
    snprintf(want, sizeof want, "\"jobs\":%s", jobs ? jobs : "1");
    CHECKF(kf_store_config(st) && strstr(kf_store_config(st), want), "%s", kf_store_config(st));
    kf_store_close(st);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "tree %s --json", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    json_t *nodes = json_object_get(j, "nodes");
    CHECKF(json_array_size(nodes) == (size_t)budget, "%zu nodes, budget %d: %s", json_array_size(nodes),
           budget, out);
    /* a specialisation is a point already evaluated, on a narrower domain (its "when"):
     * the same (point, domain) twice is the repeat */
    for (size_t a = 0; a < json_array_size(nodes); a++)
        for (size_t b = a + 1; b < json_array_size(nodes); b++) {
            json_t *x = json_array_get(nodes, a), *y = json_array_get(nodes, b);
            CHECKF(!json_equal(json_object_get(x, "params"), json_object_get(y, "params")) ||
                       !json_equal(json_object_get(x, "when") ? json_object_get(x, "when") : json_null(),
                                   json_object_get(y, "when") ? json_object_get(y, "when") : json_null()),
                   "point evaluated twice: %s", out);
        }
    json_decref(j);
    /* the killed runs' private copies are gone: the last resume swept them */
    for (int k = 0; k < 4; k++) {
        char pat[128];
        snprintf(pat, sizeof pat, "ls -d /tmp/kforge-run-%d-* /tmp/kforge-w-%d-* 2>/dev/null | wc -l",
                 (int)killed[k], (int)killed[k]);
        CHECKF(kft_run(pat, out, sizeof out) == 0 && atoi(out) == 0, "%d leftovers of killed run %d",
               atoi(out), (int)killed[k]);
    }
    kf__rmtree(dir);
}

/* --jobs 3: exactly the budget of evaluations, no point twice, evaluations that did run
 * at once, timed phases that never did (the timing lock's count), an intact store;
 * --resume keeps the run's --jobs; bad values are usage errors. */
static void t_jobs(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-jobs-XXXXXX", args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    /* sgemm's template: 99 points, more than the budget */
    snprintf(args, sizeof args,
             "run tasks/c/sgemm --budget 6 --seed 5 --jobs 3 --run %s/r --json %s 2>/dev/null", dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "evaluations")) == 6, "%s", out);
    CHECKF(json_integer_value(json_object_get(j, "jobs")) == 3, "%s", out);
    CHECKF(json_integer_value(json_object_get(j, "max_concurrent_timing")) == 1,
           "timed phases overlapped: %s", out);
    CHECKF(!strcmp(json_string_value(json_object_get(j, "stopped")), "budget spent"), "%s", out);
    json_decref(j);
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    snprintf(args, sizeof args, "%s/r", dir);
    CHECK(kf_store_open(ctx, args, NULL, &st) == KF_OK);
    CHECK(kf_store_check(st) == KF_OK);
    kf_node_vec a = {0};
    CHECK(kf_store_each_node(st, kf_record_collect, &a) == KF_OK);
    CHECKF(a.n == 6, "%zu nodes", a.n);
    int overlap = 0;
    for (size_t x = 0; x < a.n; x++) {
        CHECKF(a.v[x].finished > 0, "node %lld unfinished", (long long)a.v[x].id);
        for (size_t y = x + 1; y < a.n; y++) {
            /* a specialisation repeats its point's parameters on a narrower domain: its text differs */
            CHECKF(strcmp(a.v[x].params_json, a.v[y].params_json) ||
                       !strcmp(a.v[x].category, "specialisation") ||
                       !strcmp(a.v[y].category, "specialisation"),
                   "point evaluated twice: %s", a.v[x].params_json);
            CHECKF(strcmp(a.v[x].src_hash, a.v[y].src_hash), "text evaluated twice: %s", a.v[x].src_hash);
            /* proposed before the other's outcome was recorded: both were in flight */
            overlap += a.v[y].created < a.v[x].finished;
        }
    }
    CHECKF(overlap >= 2, "only %d pairs of evaluations ran at once with --jobs 3", overlap);
    kf_record_vec_free(&a);
    CHECKF(strstr(kf_store_config(st), "\"jobs\":3"), "%s", kf_store_config(st));
    kf_store_close(st);
    /* --resume without --jobs takes the run's */
    snprintf(args, sizeof args, "run --resume %s/r --budget 8 --json %s 2>/dev/null", dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "jobs")) == 3 &&
               json_integer_value(json_object_get(j, "evaluations")) == 8,
           "%s", out);
    CHECKF(json_integer_value(json_object_get(j, "max_concurrent_timing")) == 1, "%s", out);
    json_decref(j);
    /* a stop rule stops new work and waits for what is in flight, which is recorded: the
     * first outcome reaches the target while the other two are being evaluated */
    snprintf(args, sizeof args,
             "run tasks/c/sgemm --budget 9 --seed 5 --jobs 3 --target 2 --run %s/t --json %s "
             "2>/dev/null",
             dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "evaluations")) == 3 &&
               !strcmp(json_string_value(json_object_get(j, "stopped")), "target reached"),
           "%s", out);
    json_decref(j);
    snprintf(args, sizeof args, "%s/t", dir);
    CHECK(kf_store_open(ctx, args, NULL, &st) == KF_OK);
    int64_t *ids = NULL;
    size_t nun = 9;
    CHECK(kf_store_unfinished(st, &ids, &nun) == KF_OK);
    CHECKF(nun == 0, "%zu nodes left in flight after a stop rule", nun);
    free(ids);
    kf_store_close(st);
    kf_ctx_free(ctx);
    static const char *const bad[] = {"0", "abc", "1000", "2.5", "-3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, "run tasks/c/sgemm --budget 1 --run %s/bad --jobs %s 2>&1", dir, bad[i]);
        CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "--jobs") && strstr(out, "1 to 64"),
               "--jobs %s: %s", bad[i], out);
    }
    snprintf(args, sizeof args, "%s/bad", dir);
    CHECKF(access(args, F_OK) != 0, "a run was created for a bad --jobs");
    kf__rmtree(dir);
}

/* A parameter value that never builds is learnt as a constraint, stored in the run and
 * shown by tree; no later candidate uses it. */
static void t_learnt_constraint(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-learn-XXXXXX", p[512], args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(p, sizeof p, "cp -r %s %s/saxpy && rm -f %s/saxpy/candidates/*", kft_src("tasks/c/saxpy"), dir,
             dir);
    CHECK(system(p) == 0);
    snprintf(p, sizeof p, "%s/saxpy/candidates/param.c", dir);
    FILE *f = fopen(p, "w");
    fputs(
        "/* kforge:param UNROLL = 4, 1, 2, 3 */\n#include <stdint.h>\n#if UNROLL == 3\n#error three\n#endif\n"
        "void saxpy(const float *restrict x, const float *restrict y, float *restrict z, int64_t n, float a) "
        "{\n"
        "    int64_t i = 0;\n    for (; i + UNROLL <= n; i += UNROLL)\n"
        "        for (int u = 0; u < UNROLL; u++) z[i + u] = a * x[i + u] + y[i + u];\n"
        "    for (; i < n; i++) z[i] = a * x[i] + y[i];\n}\n",
        f);
    fclose(f);
    snprintf(args, sizeof args, "run %s/saxpy --budget 4 --seed 2 --run %s/r %s 2>&1", dir, dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "tree %s/r --json", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    json_t *cs = json_object_get(j, "constraints");
    CHECKF(json_array_size(cs) == 1 &&
               strstr(json_string_value(json_object_get(json_array_get(cs, 0), "text")), "UNROLL"),
           "%s", out);
    int failed3 = 0;
    size_t i;
    json_t *nd;
    json_array_foreach(json_object_get(j, "nodes"), i, nd) {
        json_t *u = json_object_get(json_object_get(nd, "params"), "UNROLL");
        if (json_integer_value(u) == 3 || (json_is_string(u) && !strcmp(json_string_value(u), "3")))
            failed3 += !strcmp(json_string_value(json_object_get(nd, "state")), "compile_failed");
    }
    CHECKF(failed3 == 1, "%s", out);
    json_decref(j);
    snprintf(args, sizeof args, "tree %s/r", dir);
    CHECK(cli(args, out, sizeof out) == 0 && strstr(out, "constraints learnt from failures"));
    kf__rmtree(dir);
}

/* kf_loop_specs without a run: a point winning shapes that no threshold on a size
 * separates from the others gets them pinned; one winning the largest shapes gets a
 * threshold; noise-sized differences and a template with its own kforge:when get none. */
static void t_spec_domains(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-specd-XXXXXX", p[600];
    CHECK(mkdtemp(dir));
    char *ref = NULL;
    size_t rl = 0;
    CHECK(kf__read_file(kft_src("tests/tasks/lcg/reference.c"), 1 << 20, &ref, &rl) == 0);
    snprintf(p, sizeof p, "%s/reference.c", dir);
    FILE *f = fopen(p, "w");
    CHECK(f && fwrite(ref, 1, rl, f) == rl && !fclose(f));
    free(ref);
    snprintf(p, sizeof p, "%s/task.json", dir);
    f = fopen(p, "w");
    CHECK(f);
    fprintf(f,
            "{\"name\": \"lcg\", \"backend\": \"c\", \"entry\": \"lcg\", \"sizes\": {\"n\": [1, 131072]},\n"
            " \"args\": [{\"name\": \"x\", \"type\": \"i32\", \"shape\": [\"n\"], \"io\": \"in\",\n"
            "            \"init\": {\"dist\": \"int\", \"lo\": 0, \"hi\": 4095}},\n"
            "           {\"name\": \"y\", \"type\": \"i32\", \"shape\": [\"n\"], \"io\": \"out\"},\n"
            "           {\"name\": \"n\", \"type\": \"i64\", \"value\": \"n\"}],\n"
            " \"shapes\": [{\"n\": 16}, {\"n\": 1000}, {\"n\": 65536}]}\n");
    CHECK(!fclose(f));
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, dir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    static const char *const tmpls[] = {
        "/* kforge:param V = 1, 2 */\nint v = V;\n",
        "/* kforge:param V = 1, 2 */\n/* kforge:when n >= 1 */\nint v = V;\n"};
    /* V=1: {100, 200, 100} ns; V=2 (the compromise): {110, 100, 110}, or within the noise */
    static const double times[3][2][3] = {{{100, 200, 100}, {110, 100, 110}},
                                          {{100, 200, 200}, {110, 100, 110}},
                                          {{100, 200, 100}, {101, 100, 101}}};
    for (int c = 0; c < 4; c++) {
        int ti = c == 3, tt = c == 3 ? 0 : c;
        snprintf(p, sizeof p, "%s/param.c", dir);
        f = fopen(p, "w");
        CHECK(f && fputs(tmpls[ti], f) >= 0 && !fclose(f));
        kf_builtin *b = NULL;
        CHECKF(kf_builtin_new(ctx, t, p, 1, &b) == KF_OK, "%s", kf_errmsg(ctx));
        for (int v = 0; v < 2; v++) {
            kf_point pt;
            memset(&pt, 0, sizeof pt);
            pt.v[0] = v;
            kf_shape_time tm[3];
            for (int k = 0; k < 3; k++) tm[k] = (kf_shape_time){times[tt][v][k], 0.01};
            CHECK(kf_builtin_observe(b, &pt, KF_BUILTIN_OK, tm, 3) == 0);
        }
        kf_spec *sp = NULL;
        int n = -1;
        CHECK(kf_loop_specs(ctx, t, b, tmpls[ti], strlen(tmpls[ti]), 0.05, &sp, &n) == KF_OK);
        if (c == 0) {
            CHECKF(n == 1 && !strcmp(sp[0].when, "n == 16 || n == 65536"), "%d %s", n, n ? sp[0].when : "");
            CHECK(!strcmp(sp[0].shapes, "n=16; n=65536") && sp[0].point.v[0] == 0 &&
                  sp[0].compromise.v[0] == 1);
            CHECKF(fabs(sp[0].gain - 1.1) < 1e-9, "gain %g", sp[0].gain);
            CHECKF(strstr(sp[0].text, "kforge:param V = 1 */") &&
                       strstr(sp[0].text, "\n/* kforge:when n == 16 || n == 65536 */\n"),
                   "%s", sp[0].text);
            CHECK(!strcmp(sp[0].params_json, "{\"V\":1}"));
            /* the text is a candidate the checker can parse: its domain is read back */
            char *w = kf_candidate_when_text(sp[0].text);
            CHECK(w && !strcmp(w, sp[0].when));
            free(w);
        } else if (c == 1) {
            CHECKF(n == 1 && !strcmp(sp[0].when, "n <= 16"), "%d %s", n, n ? sp[0].when : "");
        } else {
            CHECKF(n == 0, "case %d: %d specialisations", c, n);
        }
        kf_loop_specs_free(sp, n);
        kf_builtin_free(b);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* tests/tasks/lcg: ALGO 0 wins n=64 (by about 3x), ALGO 1 wins n=65536 (by about 50x) and
 * has the better geometric mean (the compromise). The loop proposes ALGO 0 restricted to
 * the shapes where it wins (kforge:when n <= 64) as a child of the compromise, once: not
 * again after a resume, and not twice within a run. tree shows its domain as what it is
 * safe for; export routes n=64 to ALGO 0 code and its dispatcher is accepted. */
static void t_specialise(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-spec-XXXXXX", args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(args, sizeof args,
             "run tests/tasks/lcg --budget 2 --seed 3 --run %s/r --critic max_speedup=100000 %s 2>&1", dir,
             quick); /* ALGO 1 is 800x the reference: a synthetic gap */
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    for (int k = 0; k < 2; k++) { /* resume: the specialisation; again: nothing new */
        snprintf(args, sizeof args, "run --resume %s/r --budget %d %s 2>&1", dir, 4 + 2 * k, quick);
        CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    }
    snprintf(args, sizeof args, "tree %s/r --json", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL), *nodes = json_object_get(j, "nodes"), *sp = NULL;
    CHECKF(json_array_size(nodes) == 3, "two points and one specialisation: %s", out);
    int64_t comp = 0;
    double best = 0;
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        const char *cat = json_string_value(json_object_get(n, "category"));
        if (!strcmp(cat, "specialisation")) {
            CHECKF(!sp, "proposed twice: %s", out);
            sp = n;
        } else if (json_number_value(json_object_get(n, "speedup")) > best) {
            best = json_number_value(json_object_get(n, "speedup"));
            comp = json_integer_value(json_object_get(n, "id"));
        }
    }
    CHECKF(sp, "no specialisation: %s", out);
    CHECK(!strcmp(json_string_value(json_object_get(sp, "proposer")), "builtin"));
    CHECKF(!strcmp(json_string_value(json_object_get(sp, "state")), "kept"), "%s", out);
    CHECKF(json_integer_value(json_object_get(sp, "parent")) == comp, "its parent is the compromise: %s",
           out);
    CHECK(json_integer_value(json_object_get(json_object_get(sp, "params"), "ALGO")) == 0);
    CHECKF(!strcmp(json_string_value(json_object_get(sp, "when")), "n <= 64"), "%s", out);
    CHECKF(!strcmp(json_string_value(json_object_get(sp, "safe_for")), "the shapes where n <= 64"), "%s",
           out);
    CHECKF(json_array_size(json_object_get(sp, "shapes")) == 1, "timed on its domain only: %s", out);
    json_decref(j);
    snprintf(args, sizeof args, "tree %s/r", dir);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "builtin/specialisation") &&
               strstr(out, "safe for: n <= 64"),
           "%s", out);
    snprintf(args, sizeof args, "export %s/r -o %s/ex --json %s 2>/dev/null", dir, dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    j = json_loads(out, 0, NULL);
    CHECKF(!strcmp(json_string_value(json_object_get(json_object_get(j, "verification"), "verdict")),
                   "accepted"),
           "%s", out);
    json_t *r = json_array_get(json_object_get(j, "routes"), 0), *w;
    CHECKF(r && !strcmp(json_string_value(json_object_get(r, "predicate")), "n == 64"), "%s", out);
    int algo0 = 0;
    json_array_foreach(json_object_get(j, "winners"), i,
                       w) if (json_integer_value(json_object_get(w, "node")) ==
                              json_integer_value(json_object_get(r, "node"))) algo0 =
        json_integer_value(json_object_get(json_object_get(w, "params"), "ALGO")) == 0;
    CHECKF(algo0, "n=64 is routed to ALGO 0 code: %s", out);
    json_decref(j);
    kf__rmtree(dir);
}

static void sql(const char *run, const char *q) {
    char p[512];
    snprintf(p, sizeof p, "%s/run.db", run);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, q, NULL, NULL, &err);
    CHECKF(rc == SQLITE_OK, "%s: %s", q, err ? err : "?");
    sqlite3_close(db);
}

/* The timed rounds of node id's first shape, from its stored verdict. */
static int node_runs(const char *run, int id) {
    char p[512];
    snprintf(p, sizeof p, "%s/run.db", run);
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(db,
                             "SELECT json_extract(verdict_json, '$.shapes[0].runs') FROM nodes WHERE id = ?",
                             -1, &q, NULL) == SQLITE_OK);
    sqlite3_bind_int(q, 1, id);
    CHECK(sqlite3_step(q) == SQLITE_ROW);
    int n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

/* The loop's evaluations stop a shape's timing once its interval is tight enough
 * (--precision, 1% by default): recorded with the run, taken back by --resume, and 0
 * turns it off (the minimum time rules again). */
static void t_precision(const void *arg) {
    (void)arg;
    char run[256], args[1024], out[16384];
    snprintf(run, sizeof run, "/tmp/kft-precision-%d", (int)getpid());
    kf__rmtree(run);
    const char *timing = "--min-runs 5 --max-runs 30 --min-time 30 --hidden 1";
    snprintf(args, sizeof args, "run tasks/c/sum --budget 1 --seed 3 --run %s --precision 0.5 %s 2>&1", run,
             timing);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(node_runs(run, 1) == 20, "--precision 0.5: %d rounds", node_runs(run, 1));
    snprintf(args, sizeof args, "run --resume %s --budget 2 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(node_runs(run, 2) == 20, "resumed: %d rounds", node_runs(run, 2));
    kf__rmtree(run);
    snprintf(args, sizeof args, "run tasks/c/sum --budget 1 --seed 3 --run %s --precision 0 %s 2>&1", run,
             timing);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(node_runs(run, 1) == 30, "--precision 0: %d rounds", node_runs(run, 1));
    snprintf(args, sizeof args, "run --resume %s --budget 2 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(node_runs(run, 2) == 30, "resumed with precision 0: %d rounds", node_runs(run, 2));
    snprintf(args, sizeof args, "run tasks/c/sum --run %s-x --precision 2 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 2, "--precision 2 is out of range: %s", out);
    kf__rmtree(run);
}

/* The run's seal key id (runs.key_id): the name of its file in KFORGE_KEYS. */
static void key_id_of(const char *run, char *out, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/run.db", run);
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(db, "SELECT key_id FROM runs", -1, &q, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0));
    snprintf(out, n, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static json_t *tree_json(const char *run) {
    char args[600], out[1 << 16];
    snprintf(args, sizeof args, "tree %s --json", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(j, "%s", out);
    return j;
}

static json_t *node_of(json_t *tree, int64_t id) {
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(tree, "nodes"), i,
                       n) if (json_integer_value(json_object_get(n, "id")) == id) return n;
    return NULL;
}

/* A kept node of one recorded shape and speedup s (sizes n), as tool mode records one. */
static int64_t kept_node(kf_store *st, const char *category, const char *text, double s) {
    kf_node n;
    memset(&n, 0, sizeof n);
    snprintf(n.ext, sizeof n.ext, "c");
    snprintf(n.proposer, sizeof n.proposer, "tool");
    snprintf(n.category, sizeof n.category, "%s", category);
    CHECK(kf_store_put_source(st, text, strlen(text), "c", n.src_hash) == KF_OK);
    CHECK(kf_store_add_node(st, &n) == KF_OK);
    n.state = KF_NODE_KEPT;
    char sh[256];
    snprintf(sh, sizeof sh, "[{\"sizes\": {\"n\": 65536}, \"speedup\": %g, \"win\": true}]", s);
    n.shapes_json = sh;
    n.speedup = s;
    CHECK(kft_finish_node(st, &n) == KF_OK);
    n.shapes_json = NULL;
    int64_t id = n.id;
    kf_node_free(&n);
    return id;
}

/* The run's best geomean (progress line, summary, --target) leaves out a specialisation
 * from tool mode or an agent too: its figure is over its domain only (a one-shape 5x is
 * no run-wide 5x). */
static void t_best_no_spec(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-bestspec-XXXXXX", run[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    CHECKF(kf_store_open(ctx, run, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    int64_t g = kept_node(st, "unrolling", "/* general */\n", 2.0);
    kept_node(st, "specialisation", "/* kforge:when n == 65536 */\n", 5.0);
    kf_store_close(st);
    kf_ctx_free(ctx);
    snprintf(args, sizeof args, "run --resume %s --budget 2 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    char want[128];
    snprintf(want, sizeof want, "best 2.000x geomean (node %lld)", (long long)g);
    CHECKF(strstr(out, want), "expected '%s': %s", want, out);
    kf__rmtree(dir);
}

/* A resumed run whose nodes so far came from tool mode: the builtin tries the
 * template's defaults first (docs/run.md "the defaults first"), not a restart. */
static void t_resume_defaults(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-resdef-XXXXXX", run[512], args[2048], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args,
             "submit %s --parent 0 tasks/c/saxpy/candidates/fast.c --category unrolling 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "run --resume %s --budget 2 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *tr = tree_json(run), *n2 = node_of(tr, 2);
    const char *prop = json_string_value(json_object_get(n2, "proposer"));
    char *pj = json_dumps(json_object_get(n2, "params"), JSON_COMPACT);
    CHECKF(prop && !strcmp(prop, "builtin") && json_integer_value(json_object_get(n2, "parent")) == 0 && pj &&
               !strcmp(pj, "{\"UNROLL\":8}"),
           "node 2: %s %s, not the defaults (UNROLL=8)", prop ? prop : "?", pj ? pj : "?");
    free(pj);
    json_decref(tr);
    kf__rmtree(dir);
}

static const char seal_timing[] = "--min-runs 6 --max-runs 8 --min-time 0.01 --hidden 1";

/* A run of tasks/c/sum at dir/name with budget evaluations (0: created empty). */
static void sum_run(const char *dir, const char *name, int budget, char *run, size_t n) {
    char args[1024], out[1 << 16];
    snprintf(run, n, "%s/%s", dir, name);
    snprintf(args, sizeof args, "run tasks/c/sum --budget %d --seed 3 --run %s %s 2>&1", budget, run,
             seal_timing);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
}

/* The run's integrity.seals as tree --json gives it. */
static int seals_are(const char *run, const char *want) {
    json_t *t = tree_json(run);
    int ok = !strcmp(json_string_value(json_object_get(json_object_get(t, "integrity"), "seals")), want);
    if (!ok) fprintf(stderr, "integrity: %s\n", json_dumps(json_object_get(t, "integrity"), 0));
    json_decref(t);
    return ok;
}

/* Seals (docs/run.md "Seals", tests/redteam/notes H9): run.db edited by hand - a speedup
 * raised, a reverted node set kept with a forged approval, a kept node pointed at
 * another source - is read as rejected "tampered" by tree, best and export, and said
 * so; a missing key stops resume with a clear error; the run's own row edited (its
 * settings, a second row) makes the run "tampered", refused by resume and submit; an
 * unsealed run says it is not tamper-evident. An honest run verifies clean before and
 * after a resume. */
static void t_sealed(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-seal-XXXXXX", run[256], args[1024], out[1 << 16];
    const char *timing = seal_timing;
    CHECK(mkdtemp(dir));
    sum_run(dir, "r", 3, run, sizeof run);
    CHECKF(seals_are(run, "sealed"), "an honest run");
    json_t *t = tree_json(run);
    json_t *ig = json_object_get(t, "integrity");
    CHECKF(json_array_size(json_object_get(ig, "tampered")) == 0, "an honest run: %s", json_dumps(ig, 0));
    CHECKF(!strcmp(json_string_value(json_object_get(node_of(t, 1), "state")), "kept"), "node 1 kept: %s",
           json_dumps(node_of(t, 1), 0));
    json_decref(t);
    /* the key lives outside the run directory, in KFORGE_KEYS */
    char kp[600];
    snprintf(kp, sizeof kp, "%s", getenv("KFORGE_KEYS") ? getenv("KFORGE_KEYS") : "");
    CHECKF(kp[0], "the test runner sets KFORGE_KEYS");

    /* 1. a kept node's speedup raised */
    sql(run, "UPDATE nodes SET speedup = 50 WHERE id = 1");
    /* 2. node 2 forced to kept (a forged approval on record as well: r4 below; adding a
     * row moves the run's counts, which makes the whole run "tampered") */
    sql(run, "UPDATE nodes SET state = 'kept', speedup = 40 WHERE id = 2");
    /* 3. node 3 pointed at node 1's source, keeping its own seal */
    sql(run, "UPDATE nodes SET src_hash = (SELECT src_hash FROM nodes WHERE id = 1) WHERE id = 3 AND "
             "src_hash != (SELECT src_hash FROM nodes WHERE id = 1)");
    t = tree_json(run);
    ig = json_object_get(t, "integrity");
    size_t ntamp = json_array_size(json_object_get(ig, "tampered"));
    CHECKF(ntamp >= 2, "tampered nodes listed: %s", json_dumps(ig, 0));
    for (int id = 1; id <= 2; id++) {
        json_t *n = node_of(t, id);
        CHECKF(!strcmp(json_string_value(json_object_get(n, "state")), "rejected") &&
                   !strcmp(json_string_value(json_object_get(n, "reasons")), "tampered") &&
                   json_number_value(json_object_get(n, "speedup")) == 0 &&
                   strstr(json_string_value(json_object_get(n, "note")), "does not match its seal"),
               "node %d: %s", id, json_dumps(n, 0));
    }
    json_decref(t);
    snprintf(args, sizeof args, "tree %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 &&
               strstr(out, "WARNING: run.db was changed outside kforge: nodes 1, 2"),
           "%s", out);
    snprintf(args, sizeof args, "best %s --json", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *b = json_loads(out, 0, NULL);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(b, "best"), i, e) {
        int64_t id = json_integer_value(json_object_get(e, "node"));
        CHECKF(id != 1 && id != 2, "best lists tampered node %lld: %s", (long long)id, out);
    }
    CHECKF(json_array_size(json_object_get(json_object_get(b, "integrity"), "tampered")) == ntamp, "%s", out);
    json_decref(b);
    snprintf(args, sizeof args, "best %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "WARNING"), "%s", out);
    snprintf(args, sizeof args, "export %s -o %s/ex --json %s 2>&1", run, dir, timing);
    cli(args, out, sizeof out);
    CHECKF(!strstr(out, "50.000x") && !strstr(out, "40.000x"), "export used a tampered figure: %s", out);

    /* tests/redteam/notes/seal: a trigger planted to rewrite rows as kforge writes them (S1):
     * the database is refused */
    {
        char r4[300];
        sum_run(dir, "r4", 0, r4, sizeof r4);
        sql(r4, "CREATE TRIGGER swap AFTER INSERT ON events BEGIN UPDATE nodes SET note = 'x'; END");
        snprintf(args, sizeof args, "tree %s 2>&1", r4);
        CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "trigger \"swap\" that kforge did not make"),
               "%s", out);
        snprintf(args, sizeof args, "submit %s --parent 0 tasks/c/sum/candidates/fast.c %s 2>&1", r4, timing);
        CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "did not make"), "%s", out);
        /* a finished node reopened (S4): state back to proposed, seal cleared, so that resume
         * would evaluate it again: it reads as tampered, and resume leaves it alone */
        sum_run(dir, "r5", 1, r4, sizeof r4);
        sql(r4, "UPDATE nodes SET state = 'proposed', seal = NULL, reasons = NULL, verdict_json = NULL, "
                "shapes_json = NULL, speedup = 0, finished = NULL WHERE id = 1");
        /* the run's count of finished nodes moved: resume refuses the run */
        snprintf(args, sizeof args, "run --resume %s --budget 1 %s 2>&1", r4, timing);
        CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "does not match its seal"), "%s", out);
        CHECK(seals_are(r4, "tampered"));
        json_t *t5 = tree_json(r4);
        CHECKF(json_array_size(json_object_get(t5, "nodes")) == 1 &&
                   !strcmp(json_string_value(json_object_get(node_of(t5, 1), "reasons")), "tampered"),
               "the reopened node was evaluated again: %s", json_dumps(t5, 0));
        json_decref(t5);
        /* an event rewritten (S5d): a Critic rejection turned into an approval is ignored;
         * a forged approval added is ignored too */
        sql(r4, "UPDATE events SET json = replace(json, 'reject', 'approve') WHERE kind = 'critic'");
        sql(r4, "INSERT INTO events(run, node, kind, json, created) VALUES(1, 1, 'critic', "
                "'{\"decision\": \"approve\"}', 0)");
        t5 = tree_json(r4);
        CHECKF(json_integer_value(json_object_get(json_object_get(t5, "integrity"), "events_tampered")) >= 1,
               "%s", json_dumps(json_object_get(t5, "integrity"), 0));
        json_decref(t5);
        /* rows deleted to hide what was tried (S5e): the gap in the numbering shows */
        sql(r4, "DELETE FROM events WHERE id = 1");
        snprintf(args, sizeof args, "tree %s", r4);
        CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "0 nodes and 1 event were deleted"), "%s", out);
    }

    /* the key elsewhere: nothing can be verified, nor recorded (this run's key only:
     * the directory is shared with the tests running beside this one) */
    char kid[128];
    key_id_of(run, kid, sizeof kid);
    snprintf(args, sizeof args, "mkdir -p %s/away && mv %s/%s.key %s/away/", dir, kp, kid, dir);
    CHECK(kft_run(args, out, sizeof out) == 0);
    snprintf(args, sizeof args, "tree %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "seal key") &&
               strstr(out, "is not on this machine"),
           "%s", out);
    snprintf(args, sizeof args, "run --resume %s --budget 4 %s 2>&1", run, timing);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "seal key") && strstr(out, "KFORGE_KEYS"), "%s",
           out);
    snprintf(args, sizeof args, "mv %s/away/%s.key %s/", dir, kid, kp);
    CHECK(kft_run(args, out, sizeof out) == 0);
    /* back: a resume records a new node, sealed, and the tampered ones stay tampered */
    snprintf(args, sizeof args, "run --resume %s --budget 4 %s 2>&1", run, timing);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "WARNING"), "%s", out);
    t = tree_json(run);
    CHECKF(json_array_size(json_object_get(t, "nodes")) == 4 && node_of(t, 4) &&
               strcmp(json_string_value(json_object_get(node_of(t, 4), "reasons"))
                          ? json_string_value(json_object_get(node_of(t, 4), "reasons"))
                          : "",
                      "tampered"),
           "%s", json_dumps(t, 0));
    CHECK(json_array_size(json_object_get(json_object_get(t, "integrity"), "tampered")) == ntamp);
    json_decref(t);
    /* the free-text note (S5c) is sealed too: node 4, sound until now */
    sql(run, "UPDATE nodes SET note = 'critic: approve: re-timed 3 times' WHERE id = 4");
    t = tree_json(run);
    CHECKF(!strcmp(json_string_value(json_object_get(node_of(t, 4), "reasons")), "tampered"), "%s",
           json_dumps(node_of(t, 4), 0));
    ntamp++;
    json_decref(t);

    /* the run's own row: its settings loosened (what tool mode judges by), or a second
     * run row: tree warns, resume and submit refuse */
    char run2[300];
    sum_run(dir, "r2", 0, run2, sizeof run2);
    sql(run2, "UPDATE runs SET config_json = json_set(config_json, '$.hidden', 0)");
    CHECK(seals_are(run2, "tampered"));
    snprintf(args, sizeof args, "tree %s", run2);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "the run's own row"), "%s", out);
    snprintf(args, sizeof args, "run --resume %s --budget 1 %s 2>&1", run2, timing);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "does not match its seal"), "%s", out);
    snprintf(args, sizeof args, "submit %s --parent 0 tasks/c/sum/candidates/fast.c %s 2>&1", run2, timing);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "does not match its seal"), "%s", out);
    sum_run(dir, "r3", 0, run2, sizeof run2);
    sql(run2,
        "INSERT INTO runs(task_dir, task_fingerprint, backend, config_json, created, status, key_id, seal) "
        "SELECT task_dir, task_fingerprint, backend, config_json, created, status, key_id, seal FROM runs");
    CHECKF(seals_are(run2, "tampered"), "a second run row");

    /* the task the run names, pointed elsewhere (S5a; task_dir is not sealed, since a
     * repository moves): tree says the task there is not the run's */
    sum_run(dir, "r6", 0, run2, sizeof run2);
    t = tree_json(run2);
    CHECK(json_is_true(json_object_get(json_object_get(t, "integrity"), "task_matches")));
    json_decref(t);
    char q6[600];
    snprintf(q6, sizeof q6, "UPDATE runs SET task_dir = '%s'", kft_src("tasks/c/softmax"));
    sql(run2, q6);
    snprintf(args, sizeof args, "tree %s", run2);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "is not the one this run was made for"), "%s", out);
    t = tree_json(run2);
    CHECK(json_is_false(json_object_get(json_object_get(t, "integrity"), "task_matches")));
    json_decref(t);

    /* key id removed: nothing verified any more, and the run says so */
    sql(run, "UPDATE runs SET key_id = NULL");
    CHECK(seals_are(run, "unsealed"));
    snprintf(args, sizeof args, "tree %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "WARNING: this run has no seals"), "%s", out);
    /* its settings could be anyone's: not resumed */
    snprintf(args, sizeof args, "run --resume %s --budget 5 %s 2>&1", run, timing);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "no seals"), "%s", out);
    kf__rmtree(dir);
}

void kft_register_loop(void) {
    kft_add("loop/sealed", t_sealed, NULL, 120);
    kft_add("loop/conservative", t_conservative, NULL, 10);
    kft_add("loop/tree_figures", t_tree_figures, NULL, 10);
    kft_add("loop/resume_defaults", t_resume_defaults, NULL, 120);
    kft_add("loop/precision", t_precision, NULL, 180);
    kft_add("loop/best_no_spec", t_best_no_spec, NULL, 60);
    kft_add("loop/learnt_constraint", t_learnt_constraint, NULL, 120);
    kft_add("loop/materialize", t_materialize, NULL, 10);
    kft_add("loop/specialise", t_specialise, NULL, 180);
    kft_add("loop/spec_domains", t_spec_domains, NULL, 30);
    kft_add("loop/run_saxpy", t_run_saxpy, NULL, 120);
    kft_add("loop/kill_resume", t_kill_resume, NULL, 240);
    kft_add("loop/kill_resume_jobs2", t_kill_resume, "2", 240);
    kft_add("loop/kill_resume_jobs3", t_kill_resume, "3", 240);
    kft_add("loop/jobs", t_jobs, NULL, 240);
}

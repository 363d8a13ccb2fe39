/*
 * test_diagnose.c - root-cause classes from real checker output (bundled red-team
 * candidates and tests/fixtures/diagnose), the constraints they teach, how tree shows
 * them, the pruning of a repeated failed text, and search's circuit breaker.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "loop/diagnose.h"
#include "search/search.h"
#include "store/store.h"
#include "util/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *orempty(const char *s) { return s ? s : ""; }
#define CHECKSTR(hay, needle) \
    CHECKF(strstr(orempty(hay), (needle)), "expected '%s' in '%.3000s'", (needle), orempty(hay))

/* Check cand against task with the checker's own defaults (or a short call timeout)
 * and diagnose the node it would be. */
static void diagnose(const char *task, const char *cand, double call_timeout, kf_diag *d, kf_node *n) {
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, task);
    kf_opts o;
    kf_opts_init(&o);
    if (call_timeout > 0) o.call_timeout_s = call_timeout;
    kf_result *r = NULL;
    CHECKF(kf_check(ctx, t, kft_src(cand), &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED, "%s was accepted", cand);
    memset(n, 0, sizeof *n);
    n->id = 5;
    n->parent = 3;
    n->verdict_json = kf_result_json(r);
    n->state = kf_result_reason(r, 0) == KF_REASON_COMPILE_ERROR ? KF_NODE_COMPILE_FAILED : KF_NODE_REJECTED;
    n->reasons = strdup(kf_reason_name(kf_result_reason(r, 0)));
    snprintf(n->category, sizeof n->category, "tiling");
    CHECK(kf_diag_node(n, d) == 0);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void expect(const char *task, const char *cand, kf_diag_class cls, const char *detail,
                   int constraint) {
    kf_diag d;
    kf_node n;
    diagnose(task, cand, 0, &d, &n);
    CHECKF(d.cls == cls, "%s: %s, expected %s (%s)", cand, kf_diag_class_name(d.cls), kf_diag_class_name(cls),
           d.note);
    if (detail) CHECKF(!strcmp(d.detail, detail), "%s: detail '%s', expected '%s'", cand, d.detail, detail);
    CHECKF(!!d.constraint[0] == constraint, "%s: constraint '%s'", cand, d.constraint);
    CHECK(d.note[0]);
    kf_node_free(&n);
}

static void t_compile(const void *arg) {
    (void)arg;
    expect("tasks/c/saxpy", "tests/fixtures/diagnose/syntax.c", KF_DIAG_COMPILE_SYNTAX, NULL, 0);
    expect("tasks/c/saxpy", "tests/fixtures/diagnose/unknown_symbol.c", KF_DIAG_COMPILE_SYMBOL, "fast_fma",
           1);
    expect("tasks/c/saxpy", "tests/fixtures/diagnose/too_big.c", KF_DIAG_COMPILE_RESOURCE, "size", 1);
    /* ptxas's refusal as it words it (no CUDA toolkit on this machine to produce one):
     * the limit becomes the constraint; a warning that mentions "exceeds" does not count */
    kf_node c = {0};
    c.id = 12;
    c.state = KF_NODE_COMPILE_FAILED;
    c.verdict_json =
        strdup("{\"verdict\":\"rejected\",\"reasons\":[{\"code\":\"compile_error\",\"message\":"
               "\"ptxas failed\"}],\"compile\":{\"ok\":false,\"log\":\"k.cu(3): warning: a write "
               "exceeds the buffer\\nptxas error   : Entry function '_Z1kPf' uses too much shared data "
               "(0x10400 bytes, 0xc000 max)\\n\"}}");
    kf_diag d;
    CHECK(kf_diag_node(&c, &d) == 0);
    CHECKF(d.cls == KF_DIAG_COMPILE_RESOURCE && !strcmp(d.detail, "shared_memory"), "%s %s",
           kf_diag_class_name(d.cls), d.detail);
    CHECKSTR(d.constraint,
             "shared memory above 49152 bytes per block fails to compile (node 12 asked for 66560)");
    kf_node_free(&c);
}

static void t_runtime(const void *arg) {
    (void)arg;
    expect("tasks/c/saxpy", "tests/redteam/16_segfault.c", KF_DIAG_CRASH_SIGNAL, "SIGSEGV", 0);
    expect("tasks/c/saxpy", "tests/redteam/18_socket_connect.c", KF_DIAG_SANDBOX, NULL, 1);
    kf_diag d;
    kf_node n;
    diagnose("tasks/c/saxpy", "tests/redteam/17_infinite_loop.c", 0.5, &d, &n);
    CHECKF(d.cls == KF_DIAG_TIMEOUT, "%s", kf_diag_class_name(d.cls));
    kf_node_free(&n);
    /* a CUDA error as the GPU worker words it (no GPU on this machine to produce one) */
    kf_node c = {0};
    c.state = KF_NODE_REJECTED;
    c.verdict_json =
        strdup("{\"verdict\":\"rejected\",\"reasons\":[{\"code\":\"crash\",\"message\":"
               "\"cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (call 1 of 4 at this shape)\"}]}");
    CHECK(kf_diag_node(&c, &d) == 0 && d.cls == KF_DIAG_CRASH_CUDA &&
          !strcmp(d.detail, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    kf_node_free(&c);
}

/* numeric patterns, from the per-shape results and the first wrong index */
static void t_numeric(const void *arg) {
    (void)arg;
    kf_diag d;
    kf_node n;
    /* an unrolled loop without a tail: wrong only where n is off the step */
    diagnose("tasks/c/saxpy", "tests/redteam/10_no_tail_16.c", 0, &d, &n);
    CHECKF(d.cls == KF_DIAG_NUMERIC_BOUNDARY, "%s: %s", kf_diag_class_name(d.cls), d.note);
    CHECK(d.scope == 3);
    CHECKSTR(d.constraint, "children of node 3 must handle ");
    { /* the strictest divisor the shapes allow: at least the kernel's 16 (the smallest
       * separating one said 4 or 8 when the shapes drawn had no multiple of 4 or 8
       * among the failures) */
        const char *at = strstr(d.constraint, "not divisible by ");
        CHECKF(at && atoi(at + 17) >= 16, "%s", d.constraint);
    }
    kf_node_free(&n);
    { /* two sizes: the smallest separating divisor names the size (rows, off 8 in every
       * failure), then grows on it alone (64); cols, a power of two in both passing
       * shapes, is not blamed (not "cols not divisible by 256") */
        const char *v = "{\"reasons\":[{\"code\":\"wrong_result\",\"message\":\"x\"}],\"shapes\":["
                        "{\"status\":\"passed\",\"kind\":\"visible\",\"sizes\":{\"rows\":64,\"cols\":1024}},"
                        "{\"status\":\"passed\",\"kind\":\"visible\",\"sizes\":{\"rows\":128,\"cols\":2048}},"
                        "{\"status\":\"failed\",\"kind\":\"hidden\",\"sizes\":{\"rows\":100,\"cols\":1000},"
                        "\"max_abs_err\":1},"
                        "{\"status\":\"failed\",\"kind\":\"hidden\",\"sizes\":{\"rows\":36,\"cols\":520},"
                        "\"max_abs_err\":1}]}";
        kf_node m = {0};
        m.id = 5;
        m.parent = 3;
        m.state = KF_NODE_REJECTED;
        m.verdict_json = (char *)v;
        kf_diag dd;
        CHECK(kf_diag_node(&m, &dd) == 0);
        CHECKF(dd.cls == KF_DIAG_NUMERIC_BOUNDARY && strstr(dd.constraint, "rows not divisible by 64") &&
                   !strstr(dd.constraint, "cols not"),
               "%s: %s", kf_diag_class_name(dd.cls), dd.constraint);
    }
    { /* the accumulation rule on fixed figures (docs/run.md "numeric/accumulation"):
       * errors that wander among nearby sizes (an fp16 sum's random walk: 5.7 at 1,183,
       * 2.4 at 2,432, as drawn once) but grow across sizes 4x apart; then the same with
       * one failing shape whose plain call was exact (a shape that failed on other
       * inputs: no accumulation), and with too few pairs 4x apart */
        static const struct {
            const char *shapes;
            int accumulation;
        } cases[] = {
            {"{\"n\":19},\"plain_abs_err\":0.0007},{\"sizes\":{\"n\":73},\"plain_abs_err\":0.04},"
             "{\"sizes\":{\"n\":255},\"plain_abs_err\":0.42},{\"sizes\":{\"n\":1183},\"plain_abs_err\":5.7},"
             "{\"sizes\":{\"n\":1239},\"plain_abs_err\":3.1},{\"sizes\":{\"n\":2432},\"plain_abs_err\":2.4},"
             "{\"sizes\":{\"n\":262144},\"plain_abs_err\":128968",
             1},
            {"{\"n\":19},\"plain_abs_err\":0.0007},{\"sizes\":{\"n\":73},\"plain_abs_err\":0},"
             "{\"sizes\":{\"n\":255},\"plain_abs_err\":0.42},{\"sizes\":{\"n\":1183},\"plain_abs_err\":5.7},"
             "{\"sizes\":{\"n\":262144},\"plain_abs_err\":128968",
             0},
            {"{\"n\":1000},\"plain_abs_err\":1},{\"sizes\":{\"n\":1500},\"plain_abs_err\":20},"
             "{\"sizes\":{\"n\":5000},\"plain_abs_err\":500",
             0},
        };
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            char v[2048], *o = v;
            o += sprintf(o, "{\"reasons\":[{\"code\":\"wrong_result\",\"message\":\"1 of 1 elements of out "
                            "outside tolerance (call 1 of 4 at this shape)\"}],\"shapes\":[");
            /* every shape failed (a hidden one), the figures as listed */
            const char *p = cases[c].shapes;
            int first = 1;
            while (*p) {
                const char *e = strstr(p, "},{\"sizes\":");
                size_t len = e ? (size_t)(e - p) : strlen(p);
                o += sprintf(o, "%s{\"status\":\"failed\",\"kind\":\"hidden\",\"sizes\":%.*s}", first ? "" : ",",
                             (int)len, p);
                first = 0;
                p += len;
                if (e) p += strlen("},{\"sizes\":");
            }
            sprintf(o, "]}");
            kf_node m = {0};
            m.id = 8;
            m.parent = 4;
            m.state = KF_NODE_REJECTED;
            m.verdict_json = v;
            kf_diag dd;
            CHECKF(kf_diag_node(&m, &dd) == 0, "case %zu: %s", c, v);
            CHECKF((dd.cls == KF_DIAG_NUMERIC_ACCUMULATION) == cases[c].accumulation, "case %zu: %s (%s): %s", c,
                   kf_diag_class_name(dd.cls), dd.detail, v);
        }
    }
    /* a tiled sgemm without edge tiles: every visible shape (multiples of 8) passes */
    diagnose("tasks/c/sgemm", "tests/redteam/10_sgemm_tile32_notail.c", 0, &d, &n);
    CHECKF(d.cls == KF_DIAG_NUMERIC_BOUNDARY, "%s: %s", kf_diag_class_name(d.cls), d.note);
    CHECKSTR(d.constraint, "not divisible by ");
    kf_node_free(&n);
    /* right at the visible sizes only */
    diagnose("tasks/c/saxpy", "tests/fixtures/diagnose/visible_only.c", 0, &d, &n);
    CHECKF(d.cls == KF_DIAG_NUMERIC_OVERFIT, "%s: %s", kf_diag_class_name(d.cls), d.note);
    CHECKSTR(d.constraint, "not only the visible shapes");
    kf_node_free(&n);
    /* a half-precision accumulator: the error grows with n */
    diagnose("tasks/c/sum", "tests/redteam/11_sum_fp16_accum.c", 0, &d, &n);
    CHECKF(d.cls == KF_DIAG_NUMERIC_ACCUMULATION, "%s: %s", kf_diag_class_name(d.cls), d.note);
    CHECK(d.scope == 0 && d.constraint[0]);
    kf_node_free(&n);
    /* the tail read off the message alone: 3 of 100003 wrong, the first at 100000 */
    kf_node m = {0};
    m.id = 9;
    m.parent = 2;
    m.state = KF_NODE_REJECTED;
    m.verdict_json =
        strdup("{\"verdict\":\"rejected\",\"reasons\":[{\"code\":\"unwritten_output\",\"message\":\"3 of "
               "100003 elements of output z were never written (first z[100000]; call 1 of 4 at this "
               "shape)\"}]}");
    CHECK(kf_diag_node(&m, &d) == 0 && d.cls == KF_DIAG_NUMERIC_BOUNDARY && !strcmp(d.detail, "tail"));
    kf_node_free(&m);
    /* not a failure: nothing to diagnose */
    m = (kf_node){0};
    m.state = KF_NODE_KEPT;
    CHECK(kf_diag_node(&m, &d) == -1);
}

/* A failure on the checker's stress inputs (spikes, offset or rescaled values, the
 * maximum shape's extremes) is not overfitting to the visible shapes: the shape passed
 * its plain call. It teaches robustness to those inputs, never "not only the visible
 * shapes" (a one-pass LayerNorm, wrong under a hidden shape's offset mean, taught a
 * false constraint that way). */
static void t_stress(const void *arg) {
    (void)arg;
    /* every visible shape passed; hidden ones failed, the first on call 3 (rescaled,
     * some with an offset mean): read as overfitting before */
    const char *v =
        "{\"verdict\":\"rejected\",\"reasons\":[{\"code\":\"wrong_result\",\"shape\":{\"rows\":128,"
        "\"cols\":1024},\"message\":\"3 of 18944 elements of y outside tolerance (first y[0][4] = 0.1, "
        "expected 0.2; allowed |diff| <= 1e-07 + 0.0001*|ref|; call 3 of 4 at this shape)\"}],"
        "\"check\":{\"shapes\":[{\"status\":\"passed\",\"kind\":\"visible\",\"sizes\":{\"rows\":1024,"
        "\"cols\":768},\"max_abs_err\":0},{\"status\":\"passed\",\"kind\":\"visible\",\"sizes\":{"
        "\"rows\":64,\"cols\":4096},\"max_abs_err\":0},{\"status\":\"failed\",\"kind\":\"hidden\","
        "\"sizes\":{\"rows\":128,\"cols\":1024},\"max_abs_err\":0.1},{\"status\":\"failed\",\"kind\":"
        "\"hidden\",\"sizes\":{\"rows\":5,\"cols\":3001},\"max_abs_err\":0.1}]}}";
    kf_node m = {0};
    m.id = 7;
    m.parent = 4;
    m.state = KF_NODE_REJECTED;
    m.verdict_json = (char *)v;
    kf_diag d;
    CHECK(kf_diag_node(&m, &d) == 0);
    CHECKF(d.cls == KF_DIAG_NUMERIC_STRESS && !strcmp(d.detail, "rescaled"), "%s (%s): %s",
           kf_diag_class_name(d.cls), d.detail, d.note);
    CHECKSTR(d.note, "at rows=128,cols=1024 it passed the declared distribution and failed on call 3");
    CHECKSTR(d.constraint, "children of node 4 must stay correct on the checker's stress inputs");
    CHECKF(!strstr(d.constraint, "visible"), "%s", d.constraint);
    CHECK(d.scope == 4);
    /* the same on its plain call (call 1 of 4) stays overfitting */
    char *plain = strdup(v);
    memcpy(strstr(plain, "call 3 of 4"), "call 1 of 4", 11);
    m.verdict_json = plain;
    CHECK(kf_diag_node(&m, &d) == 0 && d.cls == KF_DIAG_NUMERIC_OVERFIT);
    /* a call with threads on every CPU may be a race: not put down to the inputs */
    free(plain);
    const char *raced =
        "{\"verdict\":\"rejected\",\"reasons\":[{\"code\":\"wrong_result\",\"message\":\"1 of 9 "
        "elements of y outside tolerance (call 3 of 4 at this shape, threads on every CPU)\"}]}";
    m.verdict_json = (char *)raced;
    CHECK(kf_diag_node(&m, &d) == 0 && d.cls != KF_DIAG_NUMERIC_STRESS);
    /* the real checker: a softmax without the max subtraction overflows on spikes */
    kf_node n;
    diagnose("tasks/c/softmax", "tests/fixtures/diagnose/naive_softmax.c", 0, &d, &n);
    CHECKF(d.cls == KF_DIAG_NUMERIC_STRESS, "%s: %s", kf_diag_class_name(d.cls), d.note);
    CHECKSTR(d.constraint, "stress inputs");
    kf_node_free(&n);
}

static int cli(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

/* Tool mode: failures get a diagnosis that tree shows (text and JSON), generalising
 * ones become constraints once, and the next pack for that parent carries them. An
 * agent that repeats a failed text is pruned with the reason, and a breaker of 1 trips
 * at the first failure and shows in the run's output, summary and tree. */
static void t_run(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-diag-XXXXXX", args[4096], out[1 << 17];
    CHECK(mkdtemp(dir));
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s/t 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    const char *subs[] = {"tests/redteam/10_no_tail_16.c", "tests/fixtures/diagnose/unknown_symbol.c",
                          "tests/fixtures/diagnose/unknown_symbol.c"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "submit %s/t --parent 0 %s --min-runs 3 --min-time 0.01", dir, subs[i]);
        CHECKF(cli(args, out, sizeof out) == 1, "%s", out);
    }
    snprintf(args, sizeof args, "tree %s/t", dir);
    CHECK(cli(args, out, sizeof out) == 0);
    CHECKSTR(out, "why: numeric/boundary: ");
    CHECKSTR(out, "why: compile/unknown_symbol: ");
    CHECKSTR(out, "'fast_fma' is not defined");
    CHECK(strstr(strstr(out, "'fast_fma' is not defined") + 1, "'fast_fma' is not defined") ==
          NULL); /* once */
    snprintf(args, sizeof args, "tree %s/t --json", dir);
    CHECK(cli(args, out, sizeof out) == 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j);
    json_t *n1 = json_array_get(json_object_get(j, "nodes"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(n1, "diagnosis"), "class")),
                  "numeric/boundary"));
    CHECK(json_array_size(json_object_get(j, "constraints")) == 2);
    json_decref(j);
    snprintf(args, sizeof args, "next %s/t --json --lessons none", dir);
    CHECK(cli(args, out, sizeof out) == 0);
    CHECKSTR(out, "'fast_fma' is not defined in this environment");
    CHECKSTR(out, "must handle ");

    /* an agent that always writes the same failing text */
    char script[1024], path[512];
    snprintf(path, sizeof path, "%s/bad.sh", dir);
    snprintf(script, sizeof script, "cp %s \"$KFORGE_OUT\"\n", kft_src("tests/redteam/10_no_tail_16.c"));
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(script, f);
    fclose(f);
    snprintf(
        args, sizeof args,
        "run tasks/c/saxpy --budget 5 --run %s/a --agent 'cmd:sh %s' --lessons none --search breaker_k=1 "
        "--min-runs 3 --min-time 0.01 --hidden 1 --json 2>%s/err",
        dir, path, dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    j = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(j, "breaker_trips")) == 1, "%s", out);
    CHECKSTR(json_string_value(json_object_get(j, "stopped")), "no new candidate 3 times in a row");
    CHECK(json_integer_value(json_object_get(j, "evaluations")) == 1);
    json_decref(j);
    snprintf(args, sizeof args, "cat %s/err", dir);
    CHECK(kft_run(args, out, sizeof out) == 0);
    CHECKSTR(out, "circuit breaker: agent/");
    CHECKSTR(out, "circuit breaker tripped 1 time");
    snprintf(args, sizeof args, "tree %s/a", dir);
    CHECK(cli(args, out, sizeof out) == 0);
    CHECKSTR(out, "pruned  cmd/");
    CHECKSTR(out, "note: pruned: the same source as node 1, which failed (numeric/boundary)");
    CHECKSTR(out, "circuit breaker: agent/");
    kf__rmtree(dir);
}

/* The breaker: K failures in a row of one (proposer, category) pause it while others
 * score; it comes back after the pause or when another action succeeds; a pause never
 * ends a search by itself; --search sets K and the pause. */
static void t_breaker(const void *arg) {
    (void)arg;
    kf_search_cfg cfg;
    kf_search_defaults(&cfg);
    CHECK(cfg.breaker_k == 4 && cfg.breaker_pause == 8);
    char err[256];
    CHECK(kf_search_cfg_set(&cfg, "breaker_k=2", err, sizeof err) == 0 && cfg.breaker_k == 2);
    CHECK(kf_search_cfg_set(&cfg, "breaker_pause=3", err, sizeof err) == 0 && cfg.breaker_pause == 3);
    CHECK(kf_search_cfg_set(&cfg, "breaker_pause=0", err, sizeof err) == -1);
    /* tiling scores far above everything else: its gain prior is huge */
    cfg.gain_prior[KF_CAT_TILING] = 50;
    cfg.aging = 0;
    kf_search *s = kf_search_new(&cfg);
    kf_action a;
    CHECK(kf_search_pick(s, &a) == 0 && a.category == KF_CAT_TILING);
    int64_t id = 1;
    kf_search_obs o = {0, 0, KF_CAT_TILING, 0, KF_SOBS_REJECTED, 0, 1};
    o.id = id++;
    kf_search_observe(s, &o);
    CHECK(kf_search_trips(s) == 0 && kf_search_pick(s, &a) == 0 && a.category == KF_CAT_TILING);
    o.id = id++;
    kf_search_observe(s, &o); /* the second in a row: paused */
    CHECK(kf_search_trips(s) == 1 && kf_search_paused(s, 0, KF_CAT_TILING) == 3);
    int p, c, k;
    kf_search_last_trip(s, &p, &c, &k);
    CHECK(p == 0 && c == KF_CAT_TILING && k == 2);
    CHECK(kf_search_pick(s, &a) == 0 && a.category != KF_CAT_TILING);
    /* the scores say so */
    CHECK(kf_search_score(s, 0, KF_CAT_TILING, 0, &a) == 0 && a.paused == 3);
    char buf[1024];
    CHECKSTR(kf_search_explain(&a, buf, sizeof buf), "\"paused\":3");
    /* three outcomes elsewhere (failures of other categories) end the pause */
    for (int i = 0; i < 3; i++) {
        kf_search_obs f = {id++, 0, KF_CAT_OTHER + 0 * i, 0, KF_SOBS_CRASHED, 0, 1};
        f.category = i == 0 ? KF_CAT_UNROLLING : i == 1 ? KF_CAT_PRECISION : KF_CAT_ALGORITHM;
        kf_search_observe(s, &f);
    }
    CHECK(kf_search_paused(s, 0, KF_CAT_TILING) == 0);
    CHECK(kf_search_pick(s, &a) == 0 && a.category == KF_CAT_TILING);
    /* paused again; a measured kernel from another category lifts it at once */
    o.id = id++;
    kf_search_observe(s, &o);
    o.id = id++;
    kf_search_observe(s, &o);
    CHECK(kf_search_trips(s) == 2 && kf_search_paused(s, 0, KF_CAT_TILING) > 0);
    kf_search_obs ok = {id++, 0, KF_CAT_VECTORISATION, 0, KF_SOBS_MEASURED, 0.9, 1};
    kf_search_observe(s, &ok);
    CHECK(kf_search_paused(s, 0, KF_CAT_TILING) == 0);
    /* only tiling offered: paused, it is still picked (a pause never stops a run) */
    kf_search_offer(s, 0, 1u << KF_CAT_TILING);
    o.id = id++;
    kf_search_observe(s, &o);
    o.id = id++;
    kf_search_observe(s, &o);
    CHECK(kf_search_paused(s, 0, KF_CAT_TILING) > 0 && kf_search_pick(s, &a) == 0 &&
          a.category == KF_CAT_TILING);
    kf_search_free(s);
    /* breaker_k=0: off */
    cfg.breaker_k = 0;
    s = kf_search_new(&cfg);
    for (int i = 0; i < 10; i++) {
        o.id = i + 1;
        kf_search_observe(s, &o);
    }
    CHECK(kf_search_trips(s) == 0);
    kf_search_free(s);
}

void kft_register_diagnose(void) {
    kft_add("loop/diagnose_stress", t_stress, NULL, 120);
    kft_add("loop/diagnose_compile", t_compile, NULL, 60);
    kft_add("loop/diagnose_runtime", t_runtime, NULL, 60);
    kft_add("loop/diagnose_numeric", t_numeric, NULL, 120);
    kft_add("loop/diagnose_run", t_run, NULL, 180);
    kft_add("search/breaker", t_breaker, NULL, 30);
}

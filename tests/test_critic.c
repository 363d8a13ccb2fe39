/*
 * test_critic.c - the Critic (src/loop/critic.c, docs/run.md): each of its checks
 * vetoes what it should and lets an honest win through, against scripted timings; and
 * end to end, a node that narrows its kforge:when to skip a visible shape is not kept
 * unless it was proposed as a specialisation, and the store refuses `kept` without an
 * approval.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "loop/loop.h"
#include "store/store.h"
#include "util/util.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- scripted timings ----------------------------------------------------------------- */

typedef struct {
    const char *fp_now; /* what the task's fingerprint is "now" */
    const char *normal; /* the verdict every plain re-timing returns (JSON) */
    const char *strict; /* the verdict of a stricter one */
    int calls, strict_calls;
} script;

static int fp_now(void *arg, char hex[65]) {
    script *s = arg;
    snprintf(hex, 65, "%s", s->fp_now);
    return 0;
}

static int bench(void *arg, const char *path, const char *vs, int stricter, struct kf_verdict *out, char *err,
                 size_t n) {
    script *s = arg;
    (void)path;
    (void)vs;
    s->calls++;
    s->strict_calls += stricter;
    const char *txt = stricter ? s->strict : s->normal;
    kf_verdict_init(out);
    if (!txt) {
        snprintf(err, n, "no timing scripted");
        return -1;
    }
    return kf_verdict_from_text(txt, out);
}

#define FP "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP2 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* a check-and-time result against the reference: two visible shapes */
static json_t *result(double s1, double s2, double roof, int narrow) {
    json_t *r =
        json_pack("{s:s, s:s, s:[{s:{s:i}, s:f, s:f, s:b}, {s:{s:i}, s:f, s:f, s:b}]}", "verdict", "accepted",
                  "fingerprint", FP, "shapes", "sizes", "n", 1000, "speedup", s1, "roofline_fraction", roof,
                  "win", 1, "sizes", "n", 5003, "speedup", s2, "roofline_fraction", roof / 2, "win", 1);
    if (narrow) {
        json_array_remove(json_object_get(r, "shapes"), 1);
        json_object_set_new(r, "untimed_shapes", json_pack("[{s:{s:i}}]", "sizes", "n", 5003));
        json_object_set_new(r, "when", json_string("n < 5000"));
    }
    return r;
}

/* one re-timing against the parent: speedup, 95% interval, fairness */
static char *timing(double sp, double lo, double hi, int fair) {
    json_t *j = json_pack("{s:s, s:[{s:{s:i}, s:f, s:[f,f], s:b, s:b}]}", "verdict", "accepted", "shapes",
                          "sizes", "n", 1000, "speedup", sp, "ci95", lo, hi, "fair", fair, "win", lo > 1);
    if (!fair)
        json_object_set_new(json_array_get(json_object_get(j, "shapes"), 0), "fair_reason",
                            json_string("graph against eager launches"));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static const char parent_src[] = "int f(int x) {\n    return x + 1;\n}\n/* a */\n/* b */\n";
static const char tiny_src[] = "int f(int x) {\n    return x + 2;\n}\n/* a */\n/* b */\n";
static const char big_src[] = "int g(void) {\n  return 0;\n}\nint h;\nint i;\nint j;\n";

typedef struct {
    kf_critic_decision d;
    json_t *rep;
} judged;

static judged judge(script *sc, const kf_critic_opts *o, const char *category, json_t *res, int64_t parent,
                    const char *src, int beats) {
    kf_critic_env env = {o, 0.05, FP, fp_now, bench, sc};
    struct kf_verdict v;
    kf_verdict_from_json(res, &v);
    kf_critic_case c = {category,
                        &v,
                        NULL,
                        beats,
                        parent,
                        "/tmp/cand",
                        parent ? "/tmp/parent" : NULL,
                        src,
                        parent ? parent_src : NULL};
    judged j;
    j.d = kf_critic_judge(&env, &c, &j.rep);
    kf_verdict_free(&v);
    return j;
}

/* the outcome the report gives check `name` (the last one of that name) */
static const char *outcome(json_t *rep, const char *name) {
    const char *o = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(rep, "checks"), i, c) {
        if (!strcmp(json_string_value(json_object_get(c, "check")), name))
            o = json_string_value(json_object_get(c, "outcome"));
    }
    return o ? o : "(none)";
}

static void t_honest(const void *arg) {
    (void)arg;
    kf_critic_opts o;
    kf_critic_opts_init(&o);
    char *t = timing(1.30, 1.25, 1.36, 1);
    script sc = {FP, t, NULL, 0, 0};
    json_t *res = result(1.3, 1.1, 0.5, 0);
    judged j = judge(&sc, &o, "tiling", res, 3, big_src, 1);
    char *rs = json_dumps(j.rep, JSON_COMPACT);
    CHECKF(j.d == KF_CRITIC_APPROVE, "an honest 1.3x win was not approved: %s", rs);
    CHECKF(sc.calls == 2 && sc.strict_calls == 0, "%d re-timings (%d strict), expected 2 plain", sc.calls,
           sc.strict_calls);
    CHECKF(!strcmp(json_string_value(json_object_get(j.rep, "decision")), "approve"), "%s", rs);
    free(rs);
    json_decref(j.rep);
    json_decref(res);
    free(t);
}

static void t_integrity(const void *arg) {
    (void)arg;
    kf_critic_opts o;
    kf_critic_opts_init(&o);
    char *t = timing(1.30, 1.25, 1.36, 1);
    /* the task changed on disk during the run */
    script sc = {FP2, t, NULL, 0, 0};
    json_t *res = result(1.3, 1.1, 0.5, 0);
    judged j = judge(&sc, &o, "tiling", res, 3, big_src, 1);
    CHECKF(j.d == KF_CRITIC_REJECT && !strcmp(outcome(j.rep, "integrity"), "fail") && sc.calls == 0,
           "a changed task was not refused before any timing");
    json_decref(j.rep);
    json_decref(res);
    /* the verdict names another task version */
    script sc2 = {FP, t, NULL, 0, 0};
    res = result(1.3, 1.1, 0.5, 0);
    json_object_set_new(res, "fingerprint", json_string(FP2));
    j = judge(&sc2, &o, "tiling", res, 3, big_src, 1);
    CHECK(j.d == KF_CRITIC_REJECT && !strcmp(outcome(j.rep, "integrity"), "fail"));
    json_decref(j.rep);
    json_decref(res);
    /* a narrowed kforge:when that skips a visible shape: refused unless a specialisation */
    script sc3 = {FP, t, NULL, 0, 0};
    res = result(1.3, 1.1, 0.5, 1);
    j = judge(&sc3, &o, "tiling", res, 3, big_src, 1);
    char *rs = json_dumps(j.rep, JSON_COMPACT);
    CHECKF(j.d == KF_CRITIC_REJECT && strstr(rs, "n < 5000") && strstr(rs, "not a specialisation"),
           "a node that dodged n=5003 through its kforge:when was not refused: %s", rs);
    free(rs);
    json_decref(j.rep);
    script sc4 = {FP, t, NULL, 0, 0};
    j = judge(&sc4, &o, "specialisation", res, 3, big_src, 1);
    rs = json_dumps(j.rep, JSON_COMPACT);
    CHECKF(j.d == KF_CRITIC_APPROVE && !strcmp(outcome(j.rep, "integrity"), "pass"),
           "a specialisation was refused for its domain: %s", rs);
    free(rs);
    json_decref(j.rep);
    json_decref(res);
    free(t);
}

static void t_plausibility(const void *arg) {
    (void)arg;
    kf_critic_opts o;
    kf_critic_opts_init(&o);
    char *t = timing(1.30, 1.25, 1.36, 1);
    script sc = {FP, t, NULL, 0, 0};
    json_t *res = result(150.0, 1.1, 0.5, 0);
    judged j = judge(&sc, &o, "algorithm", res, 0, NULL, 1);
    CHECKF(j.d == KF_CRITIC_REJECT && !strcmp(outcome(j.rep, "plausibility"), "fail") && sc.calls == 0,
           "150x against the reference was not refused as impossible");
    json_decref(j.rep);
    json_decref(res);
    res = result(2.0, 1.1, 1.3, 0);
    j = judge(&sc, &o, "algorithm", res, 0, NULL, 1);
    CHECKF(j.d == KF_CRITIC_REJECT && !strcmp(outcome(j.rep, "plausibility"), "fail"),
           "1.3 of the roofline was not refused");
    json_decref(j.rep);
    json_decref(res);
    /* the limit is a setting */
    char err[300];
    CHECK(kf_critic_set(&o, "max_speedup=200", err, sizeof err) == 0);
    res = result(150.0, 1.1, 0.5, 0);
    script sc2 = {FP, t, NULL, 0, 0};
    j = judge(&sc2, &o, "algorithm", res, 0, NULL, 1);
    CHECKF(j.d == KF_CRITIC_APPROVE, "max_speedup=200 still refused 150x");
    json_decref(j.rep);
    json_decref(res);
    free(t);
}

static void t_measurement(const void *arg) {
    (void)arg;
    kf_critic_opts o;
    kf_critic_opts_init(&o);
    json_t *res = result(1.3, 1.1, 0.5, 0);
    /* no win over the parent to start with */
    char *t = timing(1.30, 1.25, 1.36, 1);
    script sc = {FP, t, NULL, 0, 0};
    judged j = judge(&sc, &o, "tiling", res, 3, big_src, 0);
    CHECK(j.d == KF_CRITIC_REJECT && !strcmp(outcome(j.rep, "gain"), "fail") && sc.calls == 0);
    json_decref(j.rep);
    free(t);
    /* a re-timing whose interval is not clear of 1 by the noise floor (0.05) */
    t = timing(1.06, 1.02, 1.10, 1);
    script sc2 = {FP, t, NULL, 0, 0};
    j = judge(&sc2, &o, "tiling", res, 3, big_src, 1);
    CHECKF(j.d == KF_CRITIC_REJECT && !strcmp(outcome(j.rep, "measurement"), "fail"),
           "an interval starting at 1.02 confirmed a win");
    /* and says with which figures: the re-timing's geomean and interval, in why and in
     * figures (what tree and submit show) */
    {
        const char *why = json_string_value(json_object_get(j.rep, "why"));
        json_t *f = json_array_get(json_object_get(j.rep, "figures"), 0);
        CHECKF(why &&
                   strstr(why,
                          "geomean 1.060x over the parent, best 95% interval from 1.020, needed above 1.050"),
               "%s", why ? why : "(none)");
        CHECK(fabs(json_number_value(json_object_get(f, "geomean")) - 1.06) < 1e-9 &&
              fabs(json_number_value(json_object_get(f, "best_lo")) - 1.02) < 1e-9);
    }
    json_decref(j.rep);
    free(t);
    /* not the same launch mode as the parent: a person decides */
    t = timing(1.5, 1.4, 1.6, 0);
    script sc3 = {FP, t, NULL, 0, 0};
    j = judge(&sc3, &o, "tiling", res, 3, big_src, 1);
    CHECKF(j.d == KF_CRITIC_REVIEW &&
               !strcmp(json_string_value(json_object_get(j.rep, "decision")), "needs_review"),
           "an unfair comparison was not sent for review");
    json_decref(j.rep);
    free(t);
    /* a failed re-timing */
    script sc4 = {FP, NULL, NULL, 0, 0};
    j = judge(&sc4, &o, "tiling", res, 3, big_src, 1);
    CHECK(j.d == KF_CRITIC_REJECT && !strcmp(outcome(j.rep, "measurement"), "fail"));
    json_decref(j.rep);
    /* the parent's source could not be copied for the re-timing */
    kf_critic_env env = {&o, 0.05, FP, fp_now, bench, &sc4};
    struct kf_verdict v;
    kf_verdict_from_json(res, &v);
    kf_critic_case c = {"tiling", &v, NULL, 1, 3, "/tmp/cand", NULL, big_src, NULL};
    json_t *rep;
    CHECK(kf_critic_judge(&env, &c, &rep) == KF_CRITIC_REJECT);
    json_decref(rep);
    kf_verdict_free(&v);
    json_decref(res);
}

static void t_suspicious(const void *arg) {
    (void)arg;
    kf_critic_opts o;
    kf_critic_opts_init(&o);
    json_t *res = result(2.2, 2.0, 0.5, 0);
    char *t = timing(2.1, 2.0, 2.2, 1);
    json_t *rj = json_pack("{s:s, s:[{s:s}]}", "verdict", "rejected", "reasons", "code", "wrong_result");
    char *rejected = json_dumps(rj, JSON_COMPACT);
    json_decref(rj);
    /* a one-line change, 2.1x: verified again, and that verification fails */
    script sc = {FP, t, rejected, 0, 0};
    judged j = judge(&sc, &o, "other", res, 3, tiny_src, 1);
    char *rs = json_dumps(j.rep, JSON_COMPACT);
    CHECKF(j.d == KF_CRITIC_REJECT && sc.strict_calls == 1 && strstr(rs, "wrong_result"),
           "a 2x gain from one line was not verified again: %s", rs);
    free(rs);
    json_decref(j.rep);
    /* the same, and it holds: approved after the stricter look */
    script sc2 = {FP, t, t, 0, 0};
    j = judge(&sc2, &o, "other", res, 3, tiny_src, 1);
    CHECKF(j.d == KF_CRITIC_APPROVE && sc2.strict_calls == 1 && !strcmp(outcome(j.rep, "suspicious"), "pass"),
           "a verified gain was refused");
    json_decref(j.rep);
    /* padding with comments and blank lines does not make the change larger (redteam H8) */
    static const char padded[] = "/* one */\n/* two */\n\n// three\nint f(int x) {\n    return x + 2;  \n}\n"
                                 "/* a */\n/* b */\n/* four */\n";
    script sc4 = {FP, t, rejected, 0, 0};
    j = judge(&sc4, &o, "other", res, 3, padded, 1);
    CHECKF(j.d == KF_CRITIC_REJECT && sc4.strict_calls == 1, "comment padding hid a one-line change");
    json_decref(j.rep);
    /* a child of the root is compared with the reference's text (redteam H7) */
    script sc5 = {FP, t, rejected, 0, 0};
    kf_critic_env env = {&o, 0.05, FP, fp_now, bench, &sc5};
    struct kf_verdict v;
    kf_verdict_from_json(res, &v);
    kf_critic_case cr = {"other", &v, NULL, 1, 0, "/tmp/cand", NULL, tiny_src, parent_src};
    json_t *rep;
    CHECKF(kf_critic_judge(&env, &cr, &rep) == KF_CRITIC_REJECT && sc5.strict_calls == 1,
           "a one-line change of the reference was not verified again");
    json_decref(rep);
    kf_verdict_free(&v);
    /* a large rewrite is not "tiny": no extra look */
    script sc3 = {FP, t, rejected, 0, 0};
    j = judge(&sc3, &o, "other", res, 3, big_src, 1);
    CHECK(j.d == KF_CRITIC_APPROVE && sc3.strict_calls == 0);
    json_decref(j.rep);
    json_decref(res);
    free(t);
    free(rejected);
}

/* A decisive win needs one re-timing: when that re-timing and the loop's own timing both
 * put a 95% interval over the parent at `decisive` (1.25) or more, the other re-timing
 * is left out, and why says how many were done. A marginal win, a first timing without
 * an interval, a first timing that is decisive only against the reference (not over the
 * parent), and decisive=0 each still get both. */
static json_t *result_ci(double sp, double lo, double hi) {
    return json_pack("{s:s, s:s, s:[{s:{s:i}, s:f, s:[f,f], s:b}]}", "verdict", "accepted", "fingerprint", FP,
                     "shapes", "sizes", "n", 1000, "speedup", sp, "ci95", lo, hi, "win", 1);
}

static int retimings(const kf_critic_opts *o, json_t *res, const char *timed, const struct kf_verdict *parent,
                     int64_t pid, kf_critic_decision *d, char *why, size_t n) {
    script sc = {FP, timed, NULL, 0, 0};
    kf_critic_env env = {o, 0.05, FP, fp_now, bench, &sc};
    struct kf_verdict v;
    kf_verdict_from_json(res, &v);
    kf_critic_case c = {"tiling", &v, parent, 1, pid, "/tmp/cand", pid ? "/tmp/parent" : NULL, big_src, NULL};
    json_t *rep;
    *d = kf_critic_judge(&env, &c, &rep);
    snprintf(why, n, "%s", json_string_value(json_object_get(rep, "why")));
    json_decref(rep);
    kf_verdict_free(&v);
    return sc.calls;
}

static void t_decisive(const void *arg) {
    (void)arg;
    kf_critic_opts o;
    kf_critic_opts_init(&o);
    char why[1300];
    kf_critic_decision d;
    char *big = timing(1.9, 1.8, 2.0, 1), *marginal = timing(1.2, 1.15, 1.25, 1);
    json_t *first = result_ci(1.9, 1.8, 2.0), *bare = result(1.9, 1.9, 0.5, 0);
    /* a child of the root: its first timing is against the parent */
    int calls = retimings(&o, first, big, NULL, 0, &d, why, sizeof why);
    CHECKF(d == KF_CRITIC_APPROVE && calls == 1 && strstr(why, "1 time: a decisive win (95% interval over the parent from 1.800, and from 1.800 in the first timing"), "%d re-timings: %s", calls, why);
    calls = retimings(&o, first, marginal, NULL, 0, &d, why, sizeof why);
    CHECKF(d == KF_CRITIC_APPROVE && calls == 2 && strstr(why, "2 times"), "marginal: %d re-timings: %s", calls,
           why);
    calls = retimings(&o, bare, big, NULL, 0, &d, why, sizeof why);
    CHECKF(calls == 2, "a first timing without an interval: %d re-timings", calls);
    /* a parent already at 1.7x the reference: 1.8 against the reference is 1.06 over it */
    json_t *pj = result(1.7, 1.7, 0.5, 0);
    json_array_remove(json_object_get(pj, "shapes"), 1);
    struct kf_verdict pv;
    kf_verdict_from_json(pj, &pv);
    calls = retimings(&o, first, big, &pv, 3, &d, why, sizeof why);
    CHECKF(d == KF_CRITIC_APPROVE && calls == 2, "decisive against the reference only: %d re-timings", calls);
    /* a parent at 1.2x: 1.8 / 1.2 = 1.5 over it, decisive */
    json_decref(pj);
    kf_verdict_free(&pv);
    pj = result(1.2, 1.2, 0.5, 0);
    kf_verdict_from_json(pj, &pv);
    calls = retimings(&o, first, big, &pv, 3, &d, why, sizeof why);
    CHECKF(d == KF_CRITIC_APPROVE && calls == 1, "decisive over a 1.2x parent: %d re-timings", calls);
    /* no parent figure for the shape: not decisive */
    calls = retimings(&o, first, big, NULL, 3, &d, why, sizeof why);
    CHECKF(calls == 2, "no parent figure: %d re-timings", calls);
    /* turned off */
    char err[300];
    CHECK(kf_critic_set(&o, "decisive=0", err, sizeof err) == 0);
    calls = retimings(&o, first, big, NULL, 0, &d, why, sizeof why);
    CHECKF(calls == 2, "decisive=0: %d re-timings", calls);
    CHECK(kf_critic_set(&o, "decisive=1", err, sizeof err) < 0 && strstr(err, "decisive"));
    json_decref(pj);
    kf_verdict_free(&pv);
    json_decref(first);
    json_decref(bare);
    free(big);
    free(marginal);
}

static void t_settings(const void *arg) {
    (void)arg;
    kf_critic_opts o;
    kf_critic_opts_init(&o);
    char err[300];
    CHECK(kf_critic_set(&o, "retimes=3", err, sizeof err) == 0 && o.retimes == 3);
    CHECK(kf_critic_set(&o, "tiny_lines=0", err, sizeof err) == 0 && o.tiny_lines == 0);
    CHECK(kf_critic_set(&o, "retimes=0", err, sizeof err) < 0 && strstr(err, "retimes"));
    CHECK(kf_critic_set(&o, "max_speedup=abc", err, sizeof err) < 0 && strstr(err, "number"));
    CHECK(kf_critic_set(&o, "nonsense=1", err, sizeof err) < 0 && strstr(err, "unknown"));
    CHECK(kf_critic_set(&o, "max_speedup", err, sizeof err) < 0 && strstr(err, "KEY=VALUE"));
}

/* ---- end to end: tool mode on a bundled task --------------------------------------------- */

static int cli(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

/* A candidate that narrows its kforge:when to skip a visible shape, submitted as an
 * ordinary change: refused before any evaluation, nothing recorded (the Critic's own
 * integrity check, critic/integrity, stays behind it); and nothing but the Critic's
 * approval lets the store mark a node kept. */
static void t_narrowed_domain(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-critic-XXXXXX", args[2048], out[1 << 16], cand[256];
    CHECK(mkdtemp(dir));
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s/r 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    char *src = NULL;
    size_t n = 0;
    CHECK(kf__read_file(kft_src("tasks/c/saxpy/candidates/fast.c"), 1 << 20, &src, &n) == 0);
    snprintf(cand, sizeof cand, "%s/narrow.c", dir);
    FILE *f = fopen(cand, "w");
    CHECK(f);
    fprintf(f, "// kforge:when n != 100003\n%s", src);
    fclose(f);
    free(src);
    snprintf(
        args, sizeof args,
        "submit %s/r --parent 0 %s --category tiling --json --min-runs 5 --max-runs 8 --min-time 0.01 2>&1",
        dir, cand);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "n != 100003") &&
               strstr(out, "refused before any evaluation"),
           "%s", out);
    kf_ctx *ctx = kf_ctx_new();
    char rd[256];
    snprintf(rd, sizeof rd, "%s/r", dir);
    kf_store *st = NULL;
    CHECKF(kf_store_open(ctx, rd, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    kf_node nd;
    CHECKF(kf_store_get_node(st, 1, &nd) != KF_OK, "a refused file was recorded: %s", out);
    kf_store_close(st);
    /* a wrong kernel, rejected: nothing but an approval lets the store mark a node kept */
    snprintf(cand, sizeof cand, "%s/wrong.c", dir);
    f = fopen(cand, "w");
    CHECK(f);
    fputs("#include <stdint.h>\nvoid saxpy(const float *x, const float *y, float *z, int64_t n, float a) {\n"
          "    for (int64_t i = 0; i < n; i++) z[i] = a * x[i];\n}\n",
          f);
    fclose(f);
    snprintf(args, sizeof args,
             "submit %s/r --parent 0 %s --category tiling --json --min-runs 5 --max-runs 8 2>&1", dir, cand);
    CHECKF(cli(args, out, sizeof out) == 1, "%s", out);
    CHECKF(kf_store_open(ctx, rd, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(kf_store_get_node(st, 1, &nd) == KF_OK, "%s", kf_errmsg(ctx));
    nd.state = KF_NODE_KEPT;
    CHECKF(kf_store_finish_node(st, &nd) != KF_OK && strstr(kf_errmsg(ctx), "Critic"),
           "the store marked node 1 kept without an approval: %s", kf_errmsg(ctx));
    kf_node_free(&nd);
    kf_store_close(st);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* The advisory critic: an agent's second opinion on an approved node is recorded and
 * shown, and never changes the decision (a concern does not un-keep; a broken advisor
 * does not either). */
static void t_advisory(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-advise-XXXXXX", args[4096], out[1 << 16];
    CHECK(mkdtemp(dir));
    const char *quickb =
        "--min-runs 6 --max-runs 10 --min-time 0.01 --hidden 1"; /* 6 pairs at least: fewer give no verdict */
    /* the reviewer is the run's, set when it is created: one that voices a concern, and
     * checks it was shown the candidate */
    snprintf(args, sizeof args,
             "run tasks/c/sgemm --budget 0 --run %s/r %s --critic-agent "
             "\"cmd:grep -q 'The candidate' \\\"\\$KFORGE_PROMPT\\\" && printf 'CONCERN\\nthe k loop assumes "
             "k %%%% 4 == 0\\n' > "
             "\\\"\\$KFORGE_OUT\\\"\" 2>&1",
             dir, quickb);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "submit %s/r --parent 0 tasks/c/sgemm/candidates/fast.c --json 2>&1", dir);
    int rc = cli(args, out, sizeof out);
    CHECKF(rc == 0, "submit: %d: %s", rc, out);
    json_t *j = json_loads(out, 0, NULL);
    const char *st = json_string_value(json_object_get(j, "state"));
    json_t *adv = json_object_get(json_object_get(j, "critic"), "advisory");
    CHECKF(st && !strcmp(st, "kept"), "a 10x sgemm against the naive reference was not kept: %s", out);
    CHECKF(!strcmp(json_string_value(json_object_get(adv, "opinion")), "concern") &&
               strstr(json_string_value(json_object_get(adv, "text")), "k loop"),
           "the concern was not recorded: %s", out);
    json_decref(j);
    snprintf(args, sizeof args, "tree %s/r", dir);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "advisory concern: CONCERN the k loop"), "%s", out);
    /* a submitter may not bring its own judge, nor fewer hidden shapes than the run's */
    snprintf(args, sizeof args,
             "submit %s/r --parent 0 tasks/c/sgemm/candidates/fast.c --critic max_speedup=2 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "the Critic's settings are the run's"), "%s", out);
    snprintf(args, sizeof args,
             "submit %s/r --parent 0 tasks/c/sgemm/candidates/fast.c --critic-agent 'cmd:true' 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 2, "%s", out);
    snprintf(args, sizeof args, "submit %s/r --parent 0 tasks/c/sgemm/candidates/fast.c --hidden 0 2>&1",
             dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "fewer hidden shapes"), "%s", out);
    /* the same text again: pruned, not timed again until a lucky figure comes */
    snprintf(args, sizeof args, "submit %s/r --parent 0 tasks/c/sgemm/candidates/fast.c --json 2>&1", dir);
    rc = cli(args, out, sizeof out);
    j = json_loads(out, 0, NULL);
    CHECKF(rc == 1 && !strcmp(json_string_value(json_object_get(j, "state")), "pruned") &&
               strstr(json_string_value(json_object_get(j, "note")), "node 1"),
           "%d: %s", rc, out);
    json_decref(j);
    /* a reviewer that fails: recorded as such, the node kept all the same */
    snprintf(args, sizeof args,
             "run tasks/c/sgemm --budget 0 --run %s/r2 %s --critic-agent 'cmd:exit 3' 2>&1", dir, quickb);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "submit %s/r2 --parent 0 tasks/c/sgemm/candidates/fast.c --json 2>&1", dir);
    rc = cli(args, out, sizeof out);
    j = json_loads(out, 0, NULL);
    adv = json_object_get(json_object_get(j, "critic"), "advisory");
    CHECKF(rc == 0 && !strcmp(json_string_value(json_object_get(j, "state")), "kept") &&
               !strcmp(json_string_value(json_object_get(adv, "opinion")), "none") &&
               json_object_get(adv, "error"),
           "%s", out);
    json_decref(j);
    /* a bad spec is a usage error, before anything runs */
    snprintf(args, sizeof args, "run tasks/c/sgemm --budget 0 --run %s/r3 --critic-agent nope 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "--critic-agent"), "%s", out);
    kf__rmtree(dir);
}

/* A kforge:when that pins exactly the visible shapes leaves no hidden or edge shape to
 * draw: a file with any kforge:when is evaluated only as a specialisation (redteam H1):
 * submitted as anything else it is refused before any evaluation; as a specialisation,
 * tree shows the domain it is safe for. */
static void t_when_pins_visible(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-pin-XXXXXX", args[2048], out[1 << 16], cand[256];
    CHECK(mkdtemp(dir));
    snprintf(args, sizeof args,
             "run tasks/c/sgemm --budget 0 --run %s/r --min-runs 5 --max-runs 8 --min-time 0.01 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    char *src = NULL;
    size_t n = 0;
    CHECK(kf__read_file(kft_src("tasks/c/sgemm/candidates/fast.c"), 1 << 20, &src, &n) == 0);
    snprintf(cand, sizeof cand, "%s/pin.c", dir);
    FILE *f = fopen(cand, "w");
    CHECK(f);
    fprintf(f, "// kforge:when (m == 128 && n == 128 && k == 128) || (m == 96 && n == 160 && k == 72)\n%s",
            src);
    fclose(f);
    free(src);
    snprintf(args, sizeof args, "submit %s/r --parent 0 %s --category tiling --json 2>&1", dir, cand);
    int rc = cli(args, out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "pin.c:1: kforge:when") && strstr(out, "only a specialisation may"),
           "a node pinning the visible shapes: %s", out);
    snprintf(args, sizeof args, "submit %s/r --parent 0 %s --category specialisation --json 2>&1", dir, cand);
    rc = cli(args, out, sizeof out);
    CHECKF(rc == 0 || rc == 1, "%s", out);
    snprintf(args, sizeof args, "tree %s/r --json", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    json_t *nd = json_array_get(json_object_get(j, "nodes"), 0);
    CHECKF(json_array_size(json_object_get(j, "nodes")) == 1 &&
               json_string_value(json_object_get(nd, "when")) &&
               strstr(json_string_value(json_object_get(nd, "safe_for")), "m == 128"),
           "tree hides the node's domain: %s", out);
    json_decref(j);
    kf__rmtree(dir);
}

void kft_register_critic(void) {
    kft_add("critic/honest", t_honest, NULL, 10);
    kft_add("critic/integrity", t_integrity, NULL, 10);
    kft_add("critic/plausibility", t_plausibility, NULL, 10);
    kft_add("critic/measurement", t_measurement, NULL, 10);
    kft_add("critic/suspicious", t_suspicious, NULL, 10);
    kft_add("critic/settings", t_settings, NULL, 10);
    kft_add("critic/decisive", t_decisive, NULL, 10);
    kft_add("critic/narrowed_domain", t_narrowed_domain, NULL, 180);
    kft_add("critic/advisory", t_advisory, NULL, 240);
    kft_add("critic/when_pins_visible", t_when_pins_visible, NULL, 120);
}

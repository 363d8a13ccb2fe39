/*
 * report_bench.c - what `kforge report` costs on a large run (docs/report.md "Large
 * runs"): a synthetic run of N nodes (default 10,000) on the bundled softmax task, a tree
 * three wide with every state of a real run (kept with the Critic's approval on record,
 * reverted with its refusal, measured, rejected with reasons, crashed, compile_failed),
 * each passed node timed at the task's two visible shapes with a verdict that carries
 * the roofline's rates, and 64 distinct 3.5 KiB sources. Then the HTML report and the
 * Markdown one are made three times each: the median time and the size.
 *
 * Usage: kf-report-bench [N] [DIR]   (DIR: where the run goes, default a fresh directory
 * under /tmp, removed afterwards; KFORGE_KEYS is set inside it). Prints a Markdown table
 * and one line "report_bench: N nodes: html X s, Y bytes: met|not met" (the target:
 * under 2 s and under 5 MB). Exit 0 unless something failed to run.
 */
#define _GNU_SOURCE
#include "kforge.h"
#include "store/store.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double secs(void) { return (double)kf__now_ns() / 1e9; }

static void die(kf_ctx *ctx, const char *what) {
    fprintf(stderr, "report_bench: %s: %s\n", what, kf_errmsg(ctx));
    exit(1);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char shape_tmpl[] =
    "[{\"sizes\": {\"rows\": 256, \"cols\": 1024}, \"speedup\": %.4f, \"ci95\": [%.4f, %.4f], \"win\": %s, "
    "\"candidate_ns\": 247240.0, \"baseline_ns\": 1194340.0, \"roofline_fraction\": 0.58},"
    " {\"sizes\": {\"rows\": 100, \"cols\": 777}, \"speedup\": %.4f, \"ci95\": [%.4f, %.4f], \"win\": %s, "
    "\"candidate_ns\": 68836.0, \"baseline_ns\": 314929.0, \"roofline_fraction\": 0.61}]";

static const char verdict_tmpl[] =
    "{\"verdict\": \"%s\", \"reasons\": %s, \"compile\": {\"ok\": true, \"seconds\": 0.21, \"cached\": "
    "false}, "
    "\"check\": {\"verdict\": \"accepted\", \"reasons\": [], \"seconds\": 0.31}, \"shapes\": "
    "[{\"sizes\": {\"rows\": 256, \"cols\": 1024}, \"speedup\": %.4f, \"gflops\": %.3f, \"gbytes_per_s\": "
    "%.3f, "
    "\"roofline_fraction\": 0.58}, {\"sizes\": {\"rows\": 100, \"cols\": 777}, \"speedup\": %.4f, "
    "\"gflops\": "
    "%.3f, \"gbytes_per_s\": %.3f, \"roofline_fraction\": 0.61}], \"ceilings\": {\"bytes_per_s\": "
    "14611900000.0, "
    "\"flops_per_s\": 248054000000.0, \"cores\": 2}, \"speedup\": %.4f, \"seconds\": 1.2}";

/* A synthetic run of n nodes in dir (docs: the file's note). */
static void make_run(kf_ctx *ctx, const char *dir, long n) {
    kf_task *t = NULL;
    if (kf_task_load(ctx, KF_SOURCE_DIR "/tasks/c/softmax", &t)) die(ctx, "task");
    kf_store *s = NULL;
    if (kf_store_create(ctx, dir, t, NULL, &s)) die(ctx, "create");
    char hashes[64][65], text[8192];
    for (int i = 0; i < 64; i++) {
        int k = snprintf(text, sizeof text, "/* variant %d */\n#include <stdint.h>\n", i);
        for (int l = 0; l < 60 && k < (int)sizeof text - 100; l++)
            k += snprintf(text + k, sizeof text - (size_t)k,
                          "static inline float f%d_%d(float x) { return x * %d; }\n", i, l, l + i);
        if (kf_store_put_source(s, text, strlen(text), "c", hashes[i])) die(ctx, "put");
    }
    static const kf_node_state st[] = {KF_NODE_KEPT,           KF_NODE_REVERTED, KF_NODE_MEASURED,
                                       KF_NODE_REVERTED,       KF_NODE_REJECTED, KF_NODE_CRASHED,
                                       KF_NODE_COMPILE_FAILED, KF_NODE_REVERTED};
    static const char *const cats[] = {"tiling", "unrolling", "vectorisation", "algorithm"};
    char shapes[2048], verdict[4096], params[128];
    for (long i = 0; i < n; i++) {
        kf_node nd;
        memset(&nd, 0, sizeof nd);
        memcpy(nd.src_hash, hashes[i % 64], 65);
        snprintf(nd.ext, sizeof nd.ext, "c");
        snprintf(nd.proposer, sizeof nd.proposer, "builtin");
        snprintf(nd.category, sizeof nd.category, "%s", cats[i % 4]);
        snprintf(params, sizeof params, "{\"W\": %ld, \"UE\": %ld, \"UM\": %ld}", 1L << (i % 4), 1 + i % 3,
                 1 + i % 2);
        nd.params_json = params;
        nd.parent = i ? 1 + (i - 1) / 3 : 0;
        nd.cost_s = 1.5;
        if (kf_store_add_node(s, &nd)) die(ctx, "add");
        nd.state = st[i % 8];
        double sp = 1 + (double)(i % 97) / 25;
        int passed = nd.state == KF_NODE_KEPT || nd.state == KF_NODE_REVERTED || nd.state == KF_NODE_MEASURED;
        if (passed) {
            snprintf(shapes, sizeof shapes, shape_tmpl, sp, sp * 0.9, sp * 1.1, "true", sp * 0.95, sp * 0.85,
                     sp * 1.05, "true");
            snprintf(verdict, sizeof verdict, verdict_tmpl, "accepted", "[]", sp, 5.3, 8.5, sp, 5.6, 9.0, sp);
            nd.shapes_json = shapes, nd.verdict_json = verdict, nd.speedup = sp;
        } else {
            snprintf(verdict, sizeof verdict, verdict_tmpl, "rejected",
                     "[{\"code\": \"wrong_result\", \"message\": \"output 3 differs at 17\"}]", 0.0, 0.0, 0.0,
                     0.0, 0.0, 0.0, 0.0);
            nd.verdict_json = verdict;
            nd.reasons = nd.state == KF_NODE_REJECTED         ? "wrong_result"
                         : nd.state == KF_NODE_COMPILE_FAILED ? "compile_error"
                                                              : "crash";
        }
        if (nd.state == KF_NODE_KEPT)
            kf_store_event(s, nd.id, "critic",
                           "{\"decision\":\"approve\",\"why\":\"re-timed twice: a win\"}");
        if (nd.state == KF_NODE_REVERTED)
            kf_store_event(s, nd.id, "critic",
                           "{\"decision\":\"reject\",\"why\":\"a re-timing did not confirm the win\","
                           "\"figures\":[{\"geomean\":0.99,\"best\":1.01,\"best_lo\":0.95,\"floor\":1.05}]}");
        if (kf_store_finish_node(s, &nd)) die(ctx, "finish");
    }
    kf_store_close(s);
    kf_task_free(t);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
    char root[] = "/tmp/kf-report-bench-XXXXXX", run[4200], keys[4200];
    const char *dir = argc > 2 ? argv[2] : NULL;
    if (!dir && !mkdtemp(root)) return 1;
    snprintf(run, sizeof run, "%s/run", dir ? dir : root);
    snprintf(keys, sizeof keys, "%s/keys", dir ? dir : root);
    setenv("KFORGE_KEYS", keys, 1);
    kf_ctx *ctx = kf_ctx_new();
    double t0 = secs();
    make_run(ctx, run, n);
    double fill = secs() - t0;
    double th[3], tm[3];
    size_t hlen = 0, mlen = 0;
    for (int rep = 0; rep < 3; rep++) {
        char *out = NULL;
        double a = secs();
        if (kf_report_run(ctx, run, "html", &out, &hlen)) die(ctx, "report");
        th[rep] = secs() - a;
        free(out);
        a = secs();
        if (kf_report_run(ctx, run, "md", &out, &mlen)) die(ctx, "report md");
        tm[rep] = secs() - a;
        free(out);
    }
    qsort(th, 3, sizeof th[0], cmp_d);
    qsort(tm, 3, sizeof tm[0], cmp_d);
    printf("| report of a %ld-node run | median of 3 | bytes |\n|---|---|---|\n", n);
    printf("| the run made (add_node + finish_node) | %.1f s | |\n", fill);
    printf("| `kforge report` HTML | %.3f s (%.3f-%.3f) | %zu |\n", th[1], th[0], th[2], hlen);
    printf("| `kforge report --format md` | %.3f s (%.3f-%.3f) | %zu |\n", tm[1], tm[0], tm[2], mlen);
    printf("report_bench: %ld nodes: html %.3f s, %zu bytes: %s\n", n, th[1], hlen,
           th[1] < 2.0 && hlen < 5u * 1000 * 1000 ? "met" : "not met");
    kf_ctx_free(ctx);
    if (!dir) kf__rmtree(root);
    return 0;
}

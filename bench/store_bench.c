/*
 * store_bench.c - what the run store costs the loop (docs/run.md, "The run store").
 *
 *   1. one evaluation's bookkeeping: put_source (a new 4 KiB text: write, fsync, rename,
 *      directory fsync) + add_node + finish_node (a 2 KiB verdict); target <= 5 ms;
 *   2. a 100,000-node tree: filling it through the API, then loading it with each_node
 *      (what resume, `kforge tree` and selection's warm-up do), and the resume query.
 *
 * Usage: kf-store-bench [DIR] [EVALS] [TREE]   (DIR: where the runs go, default a fresh
 * directory under /tmp, removed afterwards; it measures that file system's fsync).
 * Prints a Markdown table. Not a test: nothing is asserted.
 */
#define _GNU_SOURCE
#include "store/store.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double secs(void) { return (double)kf__now_ns() / 1e9; }

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(kf_ctx *ctx, const char *what) {
    fprintf(stderr, "store_bench: %s: %s\n", what, kf_errmsg(ctx));
    exit(1);
}

typedef struct {
    long n;
    double sum;
} tally;

static int count(void *arg, const kf_node *n) {
    tally *t = arg;
    t->n++;
    t->sum += n->speedup + (double)(n->verdict_json ? strlen(n->verdict_json) : 0);
    return 0;
}

int main(int argc, char **argv) {
    char root[256];
    if (argc > 1 && argv[1][0] == '-') { /* an option would become a 400 MB directory */
        fprintf(stderr, "usage: kf-store-bench [DIR [EVALUATIONS [TREE_NODES]]] (DIR: an empty directory to "
                        "work in; default a fresh one under /tmp)\n");
        return strcmp(argv[1], "--help") && strcmp(argv[1], "-h") ? 2 : 0;
    }
    int own = argc < 2;
    if (own) {
        snprintf(root, sizeof root, "/tmp/kf-store-bench-XXXXXX");
        if (!mkdtemp(root)) return perror("mkdtemp"), 1;
    } else {
        snprintf(root, sizeof root, "%s", argv[1]);
    }
    int evals = argc > 2 ? atoi(argv[2]) : 2000;
    long tree = argc > 3 ? atol(argv[3]) : 100000;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    if (kf_task_load(ctx, KF_SOURCE_DIR "/tasks/c/saxpy", &t)) die(ctx, "task");

    char verdict[2048], shapes[512], text[4096], run[300];
    memset(verdict, 'v', sizeof verdict - 1);
    memcpy(verdict, "{\"pad\": \"", 9);
    strcpy(verdict + sizeof verdict - 3, "\"}");
    snprintf(shapes, sizeof shapes,
             "[{\"n\": 65536, \"speedup\": 1.31, \"ci95\": [1.2, 1.4], "
             "\"win\": true, \"ns\": 12345}, {\"n\": 100003, \"speedup\": 1.28, \"ci95\": "
             "[1.2, 1.35], \"win\": true, \"ns\": 23456}]");
    memset(text, 'x', sizeof text);

    /* 1. per evaluation */
    snprintf(run, sizeof run, "%s/evals", root);
    kf_store *s = NULL;
    if (kf_store_create(ctx, run, t, NULL, &s)) die(ctx, "create");
    double *put = malloc(sizeof(double) * (size_t)evals), *rec = malloc(sizeof(double) * (size_t)evals);
    double *all = malloc(sizeof(double) * (size_t)evals);
    if (!put || !rec || !all) return 1;
    for (int i = 0; i < evals; i++) {
        int k = snprintf(text, 64, "/* candidate %d */", i);
        text[k] = ' ';
        kf_node n = {0};
        double t0 = secs();
        if (kf_store_put_source(s, text, sizeof text, "c", n.src_hash)) die(ctx, "put");
        double t1 = secs();
        strcpy(n.ext, "c");
        strcpy(n.proposer, "builtin");
        strcpy(n.category, "tiling");
        n.params_json = "{\"BLOCK\": 256, \"UNROLL\": 4}";
        n.parent = i ? 1 + i / 2 : 0;
        if (kf_store_add_node(s, &n)) die(ctx, "add");
        n.state = KF_NODE_MEASURED;
        n.verdict_json = verdict;
        n.shapes_json = shapes;
        n.speedup = 1.3;
        n.cost_s = 0.2;
        if (kf_store_finish_node(s, &n)) die(ctx, "finish");
        double t2 = secs();
        put[i] = t1 - t0;
        rec[i] = t2 - t1;
        all[i] = t2 - t0;
    }
    kf_store_close(s);
    qsort(put, (size_t)evals, sizeof *put, cmp_d);
    qsort(rec, (size_t)evals, sizeof *rec, cmp_d);
    qsort(all, (size_t)evals, sizeof *all, cmp_d);
    printf("| store: one evaluation's bookkeeping (%d evaluations) | median | p99 |\n|---|---|---|\n", evals);
    printf("| put_source (new 4 KiB text, fsync + rename + dir fsync) | %.3f ms | %.3f ms |\n",
           put[evals / 2] * 1e3, put[evals * 99 / 100] * 1e3);
    printf("| add_node + finish_node (2 KiB verdict) | %.3f ms | %.3f ms |\n", rec[evals / 2] * 1e3,
           rec[evals * 99 / 100] * 1e3);
    printf("| total (target <= 5 ms) | %.3f ms | %.3f ms |\n\n", all[evals / 2] * 1e3,
           all[evals * 99 / 100] * 1e3);

    /* 2. a large tree (64 distinct texts: the source files are not what is measured) */
    snprintf(run, sizeof run, "%s/tree", root);
    if (kf_store_create(ctx, run, t, NULL, &s)) die(ctx, "create");
    char hashes[64][65];
    for (int i = 0; i < 64; i++) {
        snprintf(text, 64, "/* text %d */", i);
        if (kf_store_put_source(s, text, strlen(text), "c", hashes[i])) die(ctx, "put");
    }
    double t0 = secs();
    for (long i = 0; i < tree; i++) {
        kf_node n = {0};
        memcpy(n.src_hash, hashes[i % 64], 65);
        strcpy(n.ext, "c");
        strcpy(n.proposer, "builtin");
        strcpy(n.category, "tiling");
        n.params_json = "{\"BLOCK\": 256, \"UNROLL\": 4}";
        n.parent = i ? 1 + (i - 1) / 3 : 0;
        if (kf_store_add_node(s, &n)) die(ctx, "add");
        n.state = i % 4 ? KF_NODE_MEASURED : KF_NODE_REJECTED;
        n.verdict_json = verdict;
        n.shapes_json = shapes;
        n.speedup = 1 + (double)(i % 100) / 100;
        if (i % 1000 != 999 && kf_store_finish_node(s, &n)) die(ctx, "finish");
    }
    double fill = secs() - t0;
    kf_store_close(s);
    double best_load = 1e9, best_unf = 1e9, best_open = 1e9;
    tally tl = {0, 0};
    size_t nu = 0;
    for (int rep = 0; rep < 3; rep++) {
        double a = secs();
        if (kf_store_open(ctx, run, t, &s)) die(ctx, "open");
        double b = secs();
        tl = (tally){0, 0};
        if (kf_store_each_node(s, count, &tl)) die(ctx, "each");
        double c = secs();
        int64_t *ids;
        if (kf_store_unfinished(s, &ids, &nu)) die(ctx, "unfinished");
        double d = secs();
        free(ids);
        kf_store_close(s);
        if (b - a < best_open) best_open = b - a;
        if (c - b < best_load) best_load = c - b;
        if (d - c < best_unf) best_unf = d - c;
    }
    printf("| store: a %ld-node tree (2 KiB verdict each) | time |\n|---|---|\n", tree);
    printf("| filling it: add_node + finish_node | %.1f s (%.1f us a node) |\n", fill,
           fill / (double)tree * 1e6);
    printf("| kf_store_open (fingerprint, schema, prepare) | %.2f ms |\n", best_open * 1e3);
    printf("| each_node over all %ld nodes | %.0f ms |\n", tl.n, best_load * 1e3);
    printf("| unfinished (resume query, %zu found) | %.2f ms |\n", nu, best_unf * 1e3);
    char sizecmd[400], out[64] = "";
    snprintf(sizecmd, sizeof sizecmd, "du -sh '%s/run.db' | cut -f1", run);
    FILE *p = popen(sizecmd, "r");
    if (p) {
        if (!fgets(out, sizeof out, p)) out[0] = 0;
        pclose(p);
        out[strcspn(out, "\n")] = 0;
        printf("| run.db size | %s |\n", out);
    }
    free(put);
    free(rec);
    free(all);
    kf_task_free(t);
    kf_ctx_free(ctx);
    if (own) kf__rmtree(root);
    return 0;
}

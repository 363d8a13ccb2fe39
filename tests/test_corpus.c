/*
 * test_corpus.c - the red-team and honest corpora, the bundled candidates, and the
 * degenerate tasks. Each file's first line says what must happen:
 *   / * kforge-test: task=NAME expect=rejected reason=CODE threat=N * /
 *   / * kforge-test: task=NAME expect=accepted * /
 *   / * kforge-test: task=NAME expect=not_faster * /   (accepted, bench speedup <= 1.2)
 *   / * kforge-test: task=NAME expect=no_fake_speedup * /   (bench: rejected, or
 *                                        accepted with a speedup <= 1.2)
 *   / * kforge-test: task=NAME expect=bench_rejected reason=CODE * /   (passes the
 *                                        check, rejected by bench with CODE)
 * and optionally seed=N (the check's input seed) or timeout=S (the per-call deadline,
 * 3 s unless said: a memory hog reaches the 512 MiB limit in 0.3 s on one machine and in
 * 3 s on a loaded VM whose page faults take 1.7 us, and must be stopped by the limit,
 * not by the clock).
 */
#define _GNU_SOURCE
#include "kft.h"

#include "util/util.h"
#include "task/task.h"
#include "backend/cuda/host.h"

#include <dirent.h>
#include <jansson.h>
#include <string.h>

typedef struct {
    char path[512];
    char task[64];
    char expect[32];
    char reason[64];
    char param[128];
    char seed[24]; /* "seed=N": the check's input seed (a catch that is probable per
                    * check, e.g. one value pattern at the maximum shape, made exact) */
    char timeout[16]; /* "timeout=S": the per-call deadline */
    /* other parameters' non-default values ("TILE=32"): tried one at a time beside param
     * when the template's own kforge:require excludes param with the others at defaults */
    char alt[8][72];
    int nalt;
} corpus_case;

static int header(const char *path, corpus_case *c) {
    char *text = NULL;
    size_t n;
    if (kf__read_file(path, 1u << 20, &text, &n)) return -1;
    char *nl = strchr(text, '\n');
    if (nl) *nl = 0;
    int ok = strstr(text, "kforge-test:") != NULL;
    const char *keys[] = {"task=", "expect=", "reason=", "seed=", "timeout="};
    char *dst[] = {c->task, c->expect, c->reason, c->seed, c->timeout};
    size_t cap[] = {sizeof c->task, sizeof c->expect, sizeof c->reason, sizeof c->seed, sizeof c->timeout};
    for (int k = 0; k < 5; k++) {
        dst[k][0] = 0;
        char *p = strstr(text, keys[k]);
        if (!p) continue;
        p += strlen(keys[k]);
        size_t m = strcspn(p, " *");
        snprintf(dst[k], cap[k], "%.*s", (int)m, p);
    }
    free(text);
    return ok && c->task[0] && c->expect[0] ? 0 : -1;
}

static kf_opts corpus_opts(void) {
    kf_opts o;
    kf_opts_init(&o);
    o.call_timeout_s = 3; /* honest kernels here take milliseconds */
    o.cpu_limit_s = 20;
    o.mem_limit = 512ull << 20; /* memory hogs hit it fast */
    return o;
}

static void run_case(const void *arg) {
    const corpus_case *c = arg;
    kf_ctx *ctx = kf_ctx_new();
    char rel[128]; /* a bundled task's name, or a path from the repository root */
    snprintf(rel, sizeof rel, strchr(c->task, '/') ? "%s" : "tasks/c/%s", c->task);
    kf_task *t = kft_task(ctx, rel);
    char why[512];
    if (!strcmp(t->backend, "cuda") && !kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    if (t->ref_torch) kft_need_torch();
    int hostmode = 0;
    if (!strcmp(t->backend, "cuda")) { /* host mode builds with nvcc */
        char *text = NULL;
        size_t len = 0;
        int host = !kf__read_file(c->path, 1 << 20, &text, &len) && kf__cuda_host_mode(t, text, len);
        free(text);
        if (host && !kf__cuda_have_nvcc(why, sizeof why)) kft_skip("host mode: %s", why);
        hostmode = host;
    }
    kf_opts o = corpus_opts();
    if (c->seed[0]) {
        o.seed = strtoull(c->seed, NULL, 10);
        o.has_seed = 1;
    }
    if (c->timeout[0]) o.call_timeout_s = strtod(c->timeout, NULL);
    if (hostmode) { /* the first call starts the CUDA runtime and cuBLAS */
        o.call_timeout_s = 20;
        o.cpu_limit_s = 60;
    }
    const char *params[2] = {c->param, NULL};
    if (c->param[0]) {
        o.params = params;
        o.nparams = 1;
    }
    kf_result *r = NULL;
    int nofake = !strcmp(c->expect, "no_fake_speedup");
    int bench_rej = !strcmp(c->expect, "bench_rejected");
    int bench = !strcmp(c->expect, "not_faster") || nofake || bench_rej;
    if (bench) {
        o.bench_min_time_s = 0.05;
        o.bench_min_runs = 21;
        o.bench_max_runs = 81;
    }
    kf_status st = bench ? kf_bench(ctx, t, c->path, &o, &r) : kf_check(ctx, t, c->path, &o, &r);
    /* a value the template allows only beside another parameter's non-default value
     * (transpose: BROWS=32 needs TILE=32): the first partner its kforge:require accepts */
    for (int a = 0; st != KF_OK && a < c->nalt && strstr(kf_errmsg(ctx), "kforge:require"); a++) {
        params[1] = c->alt[a];
        o.nparams = 2;
        st = kf_check(ctx, t, c->path, &o, &r);
    }
    CHECKF(st == KF_OK, "%s: no verdict: %s", c->path, kf_errmsg(ctx));
    char *json = kf_result_json(r);
    if (nofake) {
        double sp = kf_result_speedup(r);
        CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED || (sp > 0 && sp <= 1.2),
               "a fake speedup of %.3fx was accepted: %s", sp, json);
    } else if (!strcmp(c->expect, "rejected") || bench_rej) {
        CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED, "cheat accepted: %s", json);
        if (bench_rej) { /* the check passed: bench's timing is what refused it */
            json_t *j = json_loads(json, 0, NULL);
            const char *v = json_string_value(json_object_get(json_object_get(j, "check"), "verdict"));
            CHECKF(v && !strcmp(v, "accepted"), "rejected at check: %s", json);
            json_decref(j);
        }
        int found = 0;
        for (int i = 0; i < kf_result_nreasons(r); i++)
            for (const char *alt = c->reason; *alt;) { /* "reason=a|b": either */
                size_t m = strcspn(alt, "|");
                const char *got = kf_reason_name(kf_result_reason(r, i));
                found |= strlen(got) == m && !strncmp(got, alt, m);
                alt += m + (alt[m] == '|');
            }
        CHECKF(found, "expected reason %s, got %s: %s", c->reason, kft_reasons(r), json);
    } else {
        CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "falsely rejected: %s", json);
        if (bench) {
            double sp = kf_result_speedup(r);
            CHECKF(sp > 0 && sp <= 1.2, "timing trick measured a %.3fx speedup: %s", sp, json);
        }
    }
    free(json);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void add_dir(const char *rel, const char *prefix, const char *force_task, const char *force_expect) {
    DIR *d = opendir(kft_src(rel));
    if (!d) return;
    struct dirent *e;
    char *names[512];
    int n = 0;
    while ((e = readdir(d)) && n < 512) {
        size_t l = strlen(e->d_name);
        if ((l > 2 && !strcmp(e->d_name + l - 2, ".c")) || (l > 3 && !strcmp(e->d_name + l - 3, ".cu")))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char *tmp = names[i];
                names[i] = names[j];
                names[j] = tmp;
            }
    for (int i = 0; i < n; i++) {
        corpus_case *c = calloc(1, sizeof *c);
        char rp[512];
        snprintf(rp, sizeof rp, "%s/%s", rel, names[i]);
        snprintf(c->path, sizeof c->path, "%s", kft_src(rp));
        if (force_task) {
            snprintf(c->task, sizeof c->task, "%s", force_task);
            snprintf(c->expect, sizeof c->expect, "%s", force_expect);
        } else if (header(c->path, c)) {
            fprintf(stderr, "%s: no kforge-test header; not registered\n", c->path);
            free(c);
            continue;
        }
        char name[256];
        snprintf(name, sizeof name, "%s/%s", prefix, names[i]);
        kft_add(name, run_case, c, 120);
        free(names[i]);
    }
}

/* Every declared value of each of a template's parameters (the others at their
 * defaults) is accepted. */
static void add_param_values(const char *backend, const char *task) {
    char rel[128];
    snprintf(rel, sizeof rel, "tasks/%s/%s/candidates/param.%s", backend, task,
             strcmp(backend, "c") ? "cu" : "c");
    char *text = NULL;
    size_t n;
    if (kf__read_file(kft_src(rel), 1u << 20, &text, &n)) return;
    char alts[16][72]; /* every parameter's non-default values, "NAME=VALUE" */
    int nalts = 0;
    for (char *p = strstr(text, "kforge:param"); p; p = strstr(p + 12, "kforge:param")) {
        char name[64], vals[256];
        if (sscanf(p, "kforge:param %63[A-Za-z0-9_] = %255[^*#\n]", name, vals) != 2) continue;
        char *save = NULL;
        int k = 0;
        for (char *v = strtok_r(vals, ", ", &save); v && nalts < 16; v = strtok_r(NULL, ", ", &save), k++)
            if (k) snprintf(alts[nalts++], sizeof alts[0], "%s=%s", name, v);
    }
    for (char *p = strstr(text, "kforge:param"); p; p = strstr(p + 12, "kforge:param")) {
        char name[64];
        char vals[256];
        if (sscanf(p, "kforge:param %63[A-Za-z0-9_] = %255[^*#\n]", name, vals) == 2) { /* '#': a category */
            char *save = NULL;
            int k = 0;
            for (char *v = strtok_r(vals, ", ", &save); v; v = strtok_r(NULL, ", ", &save), k++) {
                if (k == 0) continue; /* the default runs in bundled/ */
                corpus_case *c = calloc(1, sizeof *c);
                snprintf(c->path, sizeof c->path, "%s", kft_src(rel));
                snprintf(c->task, sizeof c->task, "tasks/%s/%s", backend, task);
                snprintf(c->expect, sizeof c->expect, "accepted");
                snprintf(c->param, sizeof c->param, "%s=%s", name, v);
                size_t nl = strlen(name);
                for (int a = 0; a < nalts && c->nalt < 8; a++)
                    if (strncmp(alts[a], name, nl) || alts[a][nl] != '=')
                        snprintf(c->alt[c->nalt++], sizeof c->alt[0], "%s", alts[a]);
                char tn[256];
                snprintf(tn, sizeof tn, "bundled/%s%s%s/param:%s", strcmp(backend, "c") ? backend : "",
                         strcmp(backend, "c") ? "/" : "", task, c->param);
                kft_add(tn, run_case, c, 120);
            }
        }
    }
    free(text);
}

static void validate_case(const void *arg) {
    const char *rel = arg;
    int degenerate = strstr(rel, "degenerate") != NULL;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, rel);
    char why[512];
    if (!strcmp(t->backend, "cuda") && !kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    kf_result *r = NULL;
    kf_opts o = corpus_opts();
    kf_status st = kf_validate(ctx, t, &o, &r);
    CHECKF(st == KF_OK, "%s: %s", rel, kf_errmsg(ctx));
    char *json = kf_result_json(r);
    if (degenerate) {
        CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED, "degenerate task passed: %s", json);
        CHECK(strstr(json, "degenerate task"));
        /* one reason code for every degenerate case (zeros, a copy, constant, empty) */
        CHECKF(strstr(json, "\"code\":\"degenerate_task\"") && !strstr(json, "wrong_result"), "%s", json);
        /* check refuses it too (exit 2 path): a trivial candidate cannot be judged */
        kf_result *r2 = NULL;
        char ref[512];
        snprintf(ref, sizeof ref, "%s/reference.c", kft_src(rel));
        CHECK(kf_check(ctx, t, ref, &o, &r2) == KF_ETASK);
        CHECK(strstr(kf_errmsg(ctx), "degenerate"));
    } else {
        CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "bundled task refused: %s", json);
    }
    free(json);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

void kft_register_corpus(void) {
    static const char *tasks[] = {"saxpy", "softmax", "rmsnorm", "sum",  "transpose",   "sgemm",
                                  "linear", "add",     "rope",    "silu_mul", "attn_decode"};
    add_dir("tests/redteam", "redteam", NULL, NULL);
    add_dir("tests/honest", "honest", NULL, NULL);
    for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++) {
        char rel[128], prefix[128];
        snprintf(rel, sizeof rel, "tasks/c/%s/candidates", tasks[i]);
        snprintf(prefix, sizeof prefix, "bundled/%s", tasks[i]);
        add_dir(rel, prefix, tasks[i], "accepted");
        add_param_values("c", tasks[i]);
        char *v = kf__asprintf("tasks/c/%s", tasks[i]);
        char name[128];
        snprintf(name, sizeof name, "validate/%s", tasks[i]);
        kft_add(name, validate_case, v, 60);
    }
    add_dir("tests/redteam/cuda", "redteam/cuda", NULL, NULL);
    add_dir("tests/honest/cuda", "honest/cuda", NULL, NULL);
    for (int i = 0; kft_cuda_tasks[i]; i++) {
        char rel[128], prefix[128], task[128];
        snprintf(rel, sizeof rel, "tasks/cuda/%s/candidates", kft_cuda_tasks[i]);
        snprintf(prefix, sizeof prefix, "bundled/cuda/%s", kft_cuda_tasks[i]);
        snprintf(task, sizeof task, "tasks/cuda/%s", kft_cuda_tasks[i]);
        add_dir(rel, prefix, task, "accepted");
        add_param_values("cuda", kft_cuda_tasks[i]);
        char *v = kf__asprintf("tasks/cuda/%s", kft_cuda_tasks[i]);
        char name[128];
        snprintf(name, sizeof name, "validate/cuda/%s", kft_cuda_tasks[i]);
        kft_add(name, validate_case, v, 120);
    }
    DIR *d = opendir(kft_src("tests/redteam/tasks"));
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *v = kf__asprintf("tests/redteam/tasks/%s", e->d_name);
        char name[256];
        snprintf(name, sizeof name, "validate/%s", e->d_name);
        kft_add(name, validate_case, v, 60);
    }
    if (d) closedir(d);
}

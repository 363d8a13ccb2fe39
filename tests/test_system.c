/*
 * test_system.c - the system gate (docs/system.md): pipeline.json's errors with their
 * FILE:LINE, the bundled pipelines checked end to end with their slots' candidates and
 * engagement counts, a candidate its own task accepts that the pipeline's captured
 * tensors reject, the planted local win that loses in the step (tests/system/), the
 * knob search of system run (tests/system/knobs: kept, not kept, refused, resumed,
 * exported), and the command's exit codes.
 */
#define _GNU_SOURCE
#include "kft.h"
#include "system/system.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char small[] = "pipelines/c/norm_softmax_sum/pipeline.json";

/* Run check (bench 0) or bench on a pipeline; the report, parsed. */
static json_t *sys_run(int bench, const char *pipeline, const char *const *slots, int nslots, int local,
                       int *accepted) {
    kf_ctx *ctx = kf_ctx_new();
    kf_system_opts o;
    kf_system_opts_init(&o);
    for (int i = 0; i < nslots; i++) o.slots[o.nslots++] = slots[i];
    o.check.bench_min_time_s = 0.05;
    o.check.bench_min_runs = 8;
    o.check.hidden_count = 1;
    o.local_bench = local;
    char *out = NULL;
    kf_status st = bench ? kf_system_bench(ctx, kft_src(pipeline), &o, &out, accepted)
                         : kf_system_check(ctx, kft_src(pipeline), &o, &out, accepted);
    CHECKF(st == KF_OK, "%s: %s", pipeline, kf_errmsg(ctx));
    json_error_t je;
    json_t *r = json_loads(out, 0, &je);
    CHECKF(r, "report is not JSON: %s", je.text);
    free(out);
    kf_ctx_free(ctx);
    return r;
}

static json_t *slot_of(json_t *r, const char *name) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "slots"), i,
                       v) if (!strcmp(json_string_value(json_object_get(v, "name")), name)) return v;
    return NULL;
}

static int has_reason(json_t *r, const char *code, const char *text) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "reasons"), i, v) {
        const char *m = json_string_value(json_object_get(v, "message"));
        if (!strcmp(json_string_value(json_object_get(v, "code")), code) && (!text || (m && strstr(m, text))))
            return 1;
    }
    return 0;
}

/* ---- loading ---- */

typedef struct {
    const char *name;
    const char *json; /* %s: a task folder's absolute path prefix (tasks/c) */
    const char *want; /* in the message */
    int line;
} bad_case;

#define STAGES_OK                                                                                     \
    "  \"stages\": [\n"                                                                               \
    "    {\"name\": \"norm\", \"task\": \"%1$s/rmsnorm\", \"sizes\": {\"rows\": \"rows\", \"cols\": " \
    "\"cols\"},\n"                                                                                    \
    "     \"bind\": {\"x\": \"x\", \"w\": \"w\", \"y\": \"y\"}}\n"                                    \
    "  ]\n"
#define HEAD "{\n  \"name\": \"t\", \"backend\": \"c\",\n  \"dims\": {\"rows\": 4, \"cols\": 8},\n"
#define BUFS_OK                                                                               \
    "  \"buffers\": {\n"                                                                      \
    "    \"x\": {\"type\": \"f32\", \"shape\": [\"rows\", \"cols\"], \"role\": \"input\",\n"  \
    "          \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}},\n"                 \
    "    \"w\": {\"type\": \"f32\", \"shape\": [\"cols\"], \"role\": \"weight\",\n"           \
    "          \"init\": {\"dist\": \"uniform\", \"lo\": 0.5, \"hi\": 1.5}},\n"               \
    "    \"y\": {\"type\": \"f32\", \"shape\": [\"rows\", \"cols\"], \"role\": \"output\",\n" \
    "          \"tolerance\": {\"rtol\": 1e-4, \"atol\": 1e-5}}\n"                            \
    "  },\n"

static const bad_case bad_cases[] = {
    {"syntax", HEAD BUFS_OK "  \"stages\": [,]\n}\n", "", 12},
    {"unknown_key", HEAD "  \"stepz\": 3,\n" BUFS_OK STAGES_OK "}\n", "unknown key \"stepz\"", 4},
    {"no_task",
     HEAD BUFS_OK "  \"stages\": [\n    {\"name\": \"norm\", \"task\": \"%1$s/nope\", \"sizes\": {},\n"
                  "     \"bind\": {}}\n  ]\n}\n",
     "slot nope: task", 13},
    {"unbound",
     HEAD BUFS_OK
     "  \"stages\": [\n    {\"name\": \"norm\", \"task\": \"%1$s/rmsnorm\",\n"
     "     \"sizes\": {\"rows\": \"rows\", \"cols\": \"cols\"}, \"bind\": {\"x\": \"x\", \"y\": \"y\"}}\n"
     "  ]\n}\n",
     "buffer argument w is not bound", 13},
    {"count",
     HEAD BUFS_OK "  \"stages\": [\n    {\"name\": \"norm\", \"task\": \"%1$s/rmsnorm\",\n"
                  "     \"sizes\": {\"rows\": \"rows\", \"cols\": \"cols + 1\"},\n"
                  "     \"bind\": {\"x\": \"x\", \"w\": \"w\", \"y\": \"y\"}}\n  ]\n}\n",
     "needs 36 elements, buffer x has 32", 13},
    {"writes_weight",
     HEAD BUFS_OK "  \"stages\": [\n    {\"name\": \"norm\", \"task\": \"%1$s/rmsnorm\",\n"
                  "     \"sizes\": {\"rows\": \"rows\", \"cols\": \"cols\"},\n"
                  "     \"bind\": {\"x\": \"y\", \"w\": \"w\", \"y\": \"x\"}}\n  ]\n}\n",
     "which is an input or a weight", 13},
    {"read_first",
     HEAD BUFS_OK "  \"stages\": [\n    {\"name\": \"norm\", \"task\": \"%1$s/rmsnorm\",\n"
                  "     \"sizes\": {\"rows\": \"rows\", \"cols\": \"cols\"},\n"
                  "     \"bind\": {\"x\": \"y\", \"w\": \"w\", \"y\": \"y\"}}\n  ]\n}\n",
     "both bound to y", 13},
    {"no_init",
     HEAD "  \"buffers\": {\n    \"x\": {\"type\": \"f32\", \"shape\": [\"rows\", \"cols\"], \"role\": "
          "\"input\"},\n"
          "    \"w\": {\"type\": \"f32\", \"shape\": [\"cols\"], \"role\": \"weight\",\n"
          "          \"init\": {\"dist\": \"uniform\", \"lo\": 0.5, \"hi\": 1.5}},\n"
          "    \"y\": {\"type\": \"f32\", \"shape\": [\"rows\", \"cols\"], \"role\": \"output\",\n"
          "          \"tolerance\": {\"rtol\": 1e-4, \"atol\": 1e-5}}\n  },\n" STAGES_OK "}\n",
     "needs an \"init\"", 5},
    {"unknown_dim",
     HEAD "  \"buffers\": {\n    \"x\": {\"type\": \"f32\", \"shape\": [\"rowz\", \"cols\"], \"role\": "
          "\"input\",\n"
          "          \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}}\n  },\n" STAGES_OK "}\n",
     "shape[0]", 5},
};

static void t_load_errors(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-pipe-XXXXXX";
    CHECK(mkdtemp(dir));
    char tasks[4096];
    snprintf(tasks, sizeof tasks, "%s", kft_src("tasks/c"));
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const bad_case *c = &bad_cases[i];
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.json", dir, c->name);
        FILE *f = fopen(path, "w");
        CHECK(f);
        fprintf(f, c->json, tasks);
        fclose(f);
        kf_ctx *ctx = kf_ctx_new();
        kf_system_opts o;
        kf_system_opts_init(&o);
        char *out = NULL;
        int acc = 0;
        kf_status st = kf_system_check(ctx, path, &o, &out, &acc);
        char want[4300];
        snprintf(want, sizeof want, "%s:%d: ", path, c->line);
        CHECKF(st == KF_ETASK, "%s: status %d (%s)", c->name, st, kf_errmsg(ctx));
        CHECKF(!strncmp(kf_errmsg(ctx), want, strlen(want)) && strstr(kf_errmsg(ctx), c->want),
               "%s: message \"%s\", want \"%s...%s\"", c->name, kf_errmsg(ctx), want, c->want);
        CHECK(!out);
        kf_ctx_free(ctx);
        unlink(path);
    }
    rmdir(dir);
}

/* The bundled pipelines follow docs/pipeline.schema.json, and a pipeline the loader
 * refuses for its shape (an unknown role) is refused by the schema too. */
static void t_schema(const void *arg) {
    (void)arg;
    char cmd[8192], out[8192];
    if (kft_run("python3 -c 'import jsonschema' 2>/dev/null", out, sizeof out))
        kft_skip("needs python3 with jsonschema (deps.txt: python3-jsonschema)");
    snprintf(
        cmd, sizeof cmd,
        "cd %s && python3 -c 'import json, sys, jsonschema\n"
        "s = json.load(open(\"docs/pipeline.schema.json\"))\n"
        "for p in sys.argv[1:]: jsonschema.validate(json.load(open(p)), s)\n"
        "bad = json.load(open(sys.argv[1])); bad[\"buffers\"][\"x\"][\"role\"] = \"scratch\"\n"
        "try:\n    jsonschema.validate(bad, s)\nexcept jsonschema.ValidationError:\n    print(\"refused\")\n'"
        " %s pipelines/c/decode/pipeline.json pipelines/cuda/decode/pipeline.json tests/system/knobs/pipeline.json "
        "2>&1",
        kft_src("."), small);
    int rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "refused"), "rc %d: %s", rc, out);
}

/* The CUDA decode step without a GPU: the file loads and binds (every stage's task, bf16
 * buffers of the right element counts at both batches), each stage's cost model is
 * positive and no larger than the traffic of the buffers it binds (the roofline's
 * floor), a stage bound to a task of another type is refused at its line, and
 * launch=graph is refused as not built instead of running eagerly. */
static const char cuda_decode[] = "pipelines/cuda/decode/pipeline.json";

static void t_cuda_decode_load(const void *arg) {
    (void)arg;
    static const char *const names[] = {"linear", "attn_decode", "rope", "silu_mul", "add", "rmsnorm_bf16"};
    static const int per_layer[] = {7, 1, 2, 1, 2, 2};
    for (int batch = 1; batch <= 8; batch += 7) {
        kf_ctx *ctx = kf_ctx_new();
        char knob[32];
        snprintf(knob, sizeof knob, "batch=%d", batch);
        const char *knobs[1] = {knob};
        kf_pipeline *p = NULL;
        CHECKF(kf_pipeline_load(ctx, kft_src(cuda_decode), knobs, 1, 0, 0, &p) == KF_OK, "%s", kf_errmsg(ctx));
        CHECK(!strcmp(p->backend, "cuda") && p->nstages == 15 && p->nslots == 6 && p->layers == 1);
        for (int i = 0; i < 6; i++) {
            int k = kf_pipeline_slot(p, names[i]), n = 0;
            CHECKF(k >= 0, "no slot %s", names[i]);
            CHECK(!strcmp(p->slots[k].task->backend, "cuda"));
            for (int j = 0; j < p->nstages; j++) n += p->stages[j].slot == k;
            CHECKF(n == per_layer[i], "slot %s: %d stages", names[i], n);
        }
        int64_t wd = 0, x = 0;
        for (int b = 0; b < p->nbufs; b++) {
            CHECKF(p->bufs[b].type == KF_T_BF16, "buffer %s is not bf16", p->bufs[b].name);
            if (!strcmp(p->bufs[b].name, "wd")) wd = p->bufs[b].count;
            if (!strcmp(p->bufs[b].name, "x")) x = p->bufs[b].count;
        }
        CHECK(wd == 4096LL * 14336 && x == 4096LL * batch);
        for (int j = 0; j < p->nstages; j++) {
            const kf_sys_stage *st = &p->stages[j];
            const kf_task *t = p->slots[st->slot].task;
            int64_t v[KF_MAX_SIZES], flops = 0, bytes = 0;
            char err[256];
            CHECKF(!kf_pipeline_stage_sizes(p, st, 2, 0, v, err, sizeof err), "%s: %s", st->name, err);
            kf_shape sh = {v, KF_SHAPE_VISIBLE, 0};
            kf_vars vars = kf_task_vars(t, &sh);
            CHECK(t->cost_flops && t->cost_bytes);
            CHECK(!kf_expr_eval(t->cost_flops, &vars, &flops, err, sizeof err) &&
                  !kf_expr_eval(t->cost_bytes, &vars, &bytes, err, sizeof err));
            int64_t traffic = 0; /* every bound buffer once, an inout twice */
            for (int a = 0; a < t->nargs; a++)
                if (st->bind[a] >= 0)
                    traffic += p->bufs[st->bind[a]].count * 2 * (t->args[a].io == KF_IO_INOUT ? 2 : 1);
            CHECKF(flops > 0 && bytes > 0 && bytes <= traffic, "stage %s: cost %lld flops, %lld bytes, traffic %lld",
                   st->name, (long long)flops, (long long)bytes, (long long)traffic);
            if (!strcmp(st->name, "attention")) CHECK(v[5] == 1002); /* pos: prefill + step */
        }
        kf_pipeline_free(p);
        kf_ctx_free(ctx);
    }
    /* a stage bound to the f32 rmsnorm: refused at the stage's line */
    char dir[] = "/tmp/kft-cudapipe-XXXXXX", cmd[8192], out[8192];
    CHECK(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys; s = open(sys.argv[1]).read().replace(\"../../../tasks/cuda/\", "
             "sys.argv[2] + \"/\").replace(\"/rmsnorm_bf16\\\", \\\"sizes\\\": {\\\"rows\\\": \\\"batch\\\", "
             "\\\"cols\\\": \\\"hidden\\\"}, \\\"bind\\\": {\\\"x\\\": \\\"x1\\\"\", \"/rmsnorm\\\", \\\"slot\\\": "
             "\\\"rmsnorm_f32\\\", \\\"sizes\\\": {\\\"rows\\\": \\\"batch\\\", \\\"cols\\\": \\\"hidden\\\"}, "
             "\\\"bind\\\": {\\\"x\\\": \\\"x1\\\"\"); open(sys.argv[3], \"w\").write(s)' %s %s %s/p.json",
             kft_src(cuda_decode), kft_src("tasks/cuda"), dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    kf_ctx *ctx = kf_ctx_new();
    kf_pipeline *p = NULL;
    char path[600];
    snprintf(path, sizeof path, "%s/p.json", dir);
    CHECK(kf_pipeline_load(ctx, path, NULL, 0, 0, 0, &p) == KF_ETASK);
    char want[700];
    snprintf(want, sizeof want, "%s:54: stage ffn_norm: x is f32, buffer x1 is bf16", path);
    CHECKF(strstr(kf_errmsg(ctx), want), "message \"%s\", want \"%s\"", kf_errmsg(ctx), want);
    kf_ctx_free(ctx);
    unlink(path);
    rmdir(dir);
    /* launch=graph: refused before any worker starts, GPU or not */
    snprintf(cmd, sizeof cmd, "cd %s && %s system check %s --knob launch=graph 2>&1", kft_src("."),
             kft_bin("kforge"), cuda_decode);
    CHECK(kft_run(cmd, out, sizeof out) == 2);
    CHECKF(strstr(out, "launch=graph: not built") && strstr(out, "own worker process"), "%s", out);
}

/* GPU: the CUDA decode step with every slot's fast candidate passes end to end over its
 * steps, each candidate engaged once per stage of its slot per step; the linear that drops
 * its bias (accepted by nothing) is rejected in the step, named by slot. */
static void t_cuda_decode(const void *arg) {
    (void)arg;
    char why[512];
    if (!kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    static const char *const names[] = {"linear", "attn_decode", "rope", "silu_mul", "add", "rmsnorm_bf16"};
    static const int per_layer[] = {7, 1, 2, 1, 2, 2};
    char buf[6][4200];
    const char *slots[6];
    for (int i = 0; i < 6; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tasks/cuda/%s/candidates/fast.cu", names[i]);
        snprintf(buf[i], sizeof buf[i], "%s=%s", names[i], kft_src(rel));
        slots[i] = buf[i];
    }
    int acc = 0;
    json_t *r = sys_run(0, cuda_decode, slots, 6, 0, &acc);
    CHECKF(acc, "rejected: %s", json_dumps(json_object_get(r, "reasons"), 0));
    CHECK(json_integer_value(json_object_get(r, "steps_passed")) == 3);
    for (int i = 0; i < 6; i++) {
        json_t *e = json_object_get(slot_of(r, names[i]), "engagement");
        CHECKF(json_integer_value(json_object_get(e, "calls")) == per_layer[i] * 3, "%s: %lld calls", names[i],
               (long long)json_integer_value(json_object_get(e, "calls")));
        CHECK(json_is_true(json_object_get(e, "engaged")));
    }
    json_decref(r);
    char bad[4200];
    snprintf(bad, sizeof bad, "linear=%s", kft_src("tests/redteam/cuda/linear_no_bias.cu"));
    const char *one[1] = {bad};
    r = sys_run(0, cuda_decode, one, 1, 0, &acc);
    CHECK(!acc);
    char *js = json_dumps(json_object_get(r, "reasons"), 0);
    CHECKF(js && strstr(js, "\"slot\": \"linear\"") && strstr(js, "wrong_result"), "%s", js);
    free(js);
    json_decref(r);
    /* bench: a stage's time is its launches' event time, as kforge bench clocks a call, not
     * the worker's host span (launch and synchronise add about 10 us a call): the residual
     * add of 4096 bf16 values takes a few us */
    slots[0] = buf[0];
    r = sys_run(1, cuda_decode, slots, 1, 0, &acc);
    CHECKF(acc, "bench rejected: %s", json_dumps(json_object_get(r, "reasons"), 0));
    json_t *stages = json_object_get(r, "stages");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(stages); i++) {
        json_t *e = json_array_get(stages, i);
        if (strcmp(json_string_value(json_object_get(e, "stage")), "residual1")) continue;
        double ns = json_number_value(json_object_get(e, "candidate_ns"));
        CHECKF(ns > 0 && ns < 8000, "residual1: %.0f ns a step", ns);
        seen = 1;
    }
    CHECK(seen);
    json_decref(r);
}

/* ---- check ---- */

static void t_check_small(const void *arg) {
    (void)arg;
    int acc = 0;
    json_t *r = sys_run(0, small, NULL, 0, 0, &acc);
    CHECK(acc && !strcmp(json_string_value(json_object_get(r, "verdict")), "accepted"));
    CHECK(json_integer_value(json_object_get(r, "steps_passed")) == 3);
    json_decref(r);
    const char *slots[] = {"softmax=tasks/c/softmax/candidates/fast.c", "sum=tasks/c/sum/candidates/fast.c"};
    char s0[4200], s1[4200];
    snprintf(s0, sizeof s0, "softmax=%s", kft_src("tasks/c/softmax/candidates/fast.c"));
    snprintf(s1, sizeof s1, "sum=%s", kft_src("tasks/c/sum/candidates/fast.c"));
    slots[0] = s0, slots[1] = s1;
    r = sys_run(0, small, slots, 2, 0, &acc);
    CHECKF(acc, "fast candidates rejected: %s", json_dumps(json_object_get(r, "reasons"), 0));
    json_t *sm = slot_of(r, "softmax"), *e = json_object_get(sm, "engagement");
    CHECK(json_integer_value(json_object_get(e, "expected")) == 3 &&
          json_integer_value(json_object_get(e, "calls")) == 3);
    CHECK(json_is_true(json_object_get(e, "engaged")));
    CHECK(json_integer_value(json_object_get(json_object_get(sm, "captured"), "calls")) == 3);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(sm, "task_check"), "verdict")),
                  "accepted"));
    CHECK(json_is_null(json_object_get(slot_of(r, "rmsnorm"), "candidate")));
    json_decref(r);
}

/* Right on its own task, wrong on the tensors the pipeline gives it: the captured check
 * and the end-to-end output both say so. */
static void t_captured(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sum");
    kf_result *res = kft_check(ctx, t, kft_src("tests/system/sum_small_wrong.c"), NULL, 0);
    CHECKF(kf_result_verdict(res) == KF_VERDICT_ACCEPTED, "its own task rejects it: %s", kft_reasons(res));
    kf_result_free(res);
    kf_task_free(t);
    kf_ctx_free(ctx);
    char s[4200];
    snprintf(s, sizeof s, "sum=%s", kft_src("tests/system/sum_small_wrong.c"));
    const char *slots[] = {s};
    int acc = 1;
    json_t *r = sys_run(0, small, slots, 1, 0, &acc);
    CHECK(!acc);
    CHECK(has_reason(r, "wrong_result", "captured"));
    CHECK(has_reason(r, "wrong_result", "end to end, step "));
    json_t *cap = json_object_get(slot_of(r, "sum"), "captured");
    CHECK(!strcmp(json_string_value(json_object_get(cap, "verdict")), "rejected"));
    json_decref(r);
}

/* ---- bench: the planted local win that is a global loss ---- */

static void t_local_win_global_loss(const void *arg) {
    (void)arg;
    char s[4200];
    snprintf(s, sizeof s, "sum=%s", kft_src("tests/system/sum_small_slow.c"));
    const char *slots[] = {s};
    int acc = 0;
    json_t *r = sys_run(1, small, slots, 1, 1, &acc);
    CHECKF(acc, "rejected: %s", json_dumps(json_object_get(r, "reasons"), 0));
    json_t *loc = json_array_get(json_object_get(r, "local"), 0);
    CHECKF(json_is_true(json_object_get(loc, "win")), "no local win: speedup %g",
           json_number_value(json_object_get(loc, "speedup")));
    CHECKF(!json_is_true(json_object_get(r, "keep")) && json_is_true(json_object_get(r, "slower")),
           "the step did not lose: gain %g [%g, %g]", json_number_value(json_object_get(r, "gain")),
           json_number_value(json_array_get(json_object_get(r, "gain_ci95"), 0)),
           json_number_value(json_array_get(json_object_get(r, "gain_ci95"), 1)));
    CHECK(!strcmp(json_string_value(json_object_get(r, "outcome")), "local_win_global_loss"));
    /* the stage's share moved: the sum's share of the step is larger than the reference's */
    size_t i;
    json_t *v;
    int seen = 0;
    json_array_foreach(json_object_get(r, "stages"), i,
                       v) if (!strcmp(json_string_value(json_object_get(v, "stage")), "sum")) {
        seen = 1;
        CHECK(json_number_value(json_object_get(v, "candidate_share")) >
              json_number_value(json_object_get(v, "baseline_share")));
    }
    CHECK(seen);
    json_decref(r);
}

static void t_bench_win(const void *arg) {
    (void)arg;
    char s[4200];
    snprintf(s, sizeof s, "softmax=%s", kft_src("tasks/c/softmax/candidates/fast.c"));
    const char *slots[] = {s};
    int acc = 0;
    json_t *r = sys_run(1, small, slots, 1, 0, &acc);
    CHECK(acc);
    CHECKF(json_is_true(json_object_get(r, "keep")) &&
               !strcmp(json_string_value(json_object_get(r, "outcome")), "system_win"),
           "gain %g", json_number_value(json_object_get(r, "gain")));
    json_t *ci = json_object_get(r, "gain_ci95");
    CHECK(json_number_value(json_array_get(ci, 0)) > 0 &&
          json_number_value(json_array_get(ci, 0)) <= json_number_value(json_object_get(r, "gain")));
    CHECK(json_array_size(json_object_get(r, "stages")) == 3);
    json_t *roof = json_object_get(r, "roofline");
    CHECK(json_is_null(roof) || (json_number_value(json_object_get(roof, "roofline_fraction")) > 0));
    json_decref(r);
}

/* The decode block: every slot with its task's fast candidate, engaged as often as the
 * block calls it (2 layers, 4 steps), the output within tolerance after every step. */
static void t_decode(const void *arg) {
    (void)arg;
    static const char *const names[] = {"linear", "attn_decode", "rope", "silu_mul", "add", "rmsnorm"};
    static const int per_layer[] = {7, 1, 2, 1, 2, 2};
    char buf[6][4200];
    const char *slots[6];
    for (int i = 0; i < 6; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tasks/c/%s/candidates/fast.c", names[i]);
        snprintf(buf[i], sizeof buf[i], "%s=%s", names[i], kft_src(rel));
        slots[i] = buf[i];
    }
    int acc = 0;
    json_t *r = sys_run(0, "pipelines/c/decode/pipeline.json", slots, 6, 0, &acc);
    CHECKF(acc, "rejected: %s", json_dumps(json_object_get(r, "reasons"), 0));
    CHECK(json_integer_value(json_object_get(r, "steps_passed")) == 4);
    for (int i = 0; i < 6; i++) {
        json_t *e = json_object_get(slot_of(r, names[i]), "engagement");
        CHECKF(json_integer_value(json_object_get(e, "calls")) == per_layer[i] * 2 * 4, "%s: %lld calls",
               names[i], (long long)json_integer_value(json_object_get(e, "calls")));
        CHECK(json_is_true(json_object_get(e, "engaged")));
    }
    json_decref(r);
}

/* --vs: the baseline is a configuration (a template value for the softmax slot), and a
 * knob that names a dim sets it (batch 8 of the decode step: the engagement count is the
 * block's, whatever the batch). */
static void t_vs_knob(const void *arg) {
    (void)arg;
    char cmd[8192], out[1 << 16];
    snprintf(cmd, sizeof cmd,
             "cd %s && %s system bench %s --slot softmax=tasks/c/softmax/candidates/fast.c "
             "--vs softmax=tasks/c/softmax/candidates/param.c --min-time 0.02 --min-runs 6 --json",
             kft_src("."), kft_bin("kforge"), small);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_t *r = json_loads(out, 0, NULL);
    CHECK(r && !strcmp(json_string_value(json_object_get(r, "baseline")), "vs"));
    CHECK(json_is_array(json_object_get(r, "gain_ci95")));
    json_decref(r);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s system check pipelines/c/decode/pipeline.json --knob batch=8 --no-task-check "
             "--slot add=tasks/c/add/candidates/fast.c --json",
             kft_src("."), kft_bin("kforge"));
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    r = json_loads(out, 0, NULL);
    CHECK(r && !strcmp(json_string_value(json_object_get(json_object_get(r, "knobs"), "batch")), "8"));
    CHECK(json_integer_value(json_object_get(json_object_get(slot_of(r, "add"), "engagement"), "calls")) ==
          16);
    json_decref(r);
    snprintf(cmd, sizeof cmd, "cd %s && %s system check pipelines/c/decode/pipeline.json --knob batch=3 2>&1",
             kft_src("."), kft_bin("kforge"));
    CHECK(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "not one of the knob's values"));
}

/* ---- the command ---- */

static void t_cli(const void *arg) {
    (void)arg;
    char cmd[8192], out[1 << 16];
    snprintf(cmd, sizeof cmd, "cd %s && %s system check %s --json", kft_src("."), kft_bin("kforge"), small);
    CHECK(kft_run(cmd, out, sizeof out) == 0 && strstr(out, "\"verdict\": \"accepted\""));
    snprintf(cmd, sizeof cmd,
             "cd %s && %s system check %s --slot sum=tests/system/sum_small_wrong.c >/dev/null", kft_src("."),
             kft_bin("kforge"), small);
    CHECK(kft_run(cmd, out, sizeof out) == 1);
    snprintf(cmd, sizeof cmd, "cd %s && %s system check %s --slot nope=x.c --json", kft_src("."),
             kft_bin("kforge"), small);
    CHECK(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "no slot nope"));
    snprintf(cmd, sizeof cmd, "cd %s && %s system check %s --knob launch=graph 2>&1", kft_src("."),
             kft_bin("kforge"), small);
    CHECK(kft_run(cmd, out, sizeof out) == 2);
}

/* system run: the loop on the slot with the largest share x headroom, its export re-judged
 * in the step, the record and the report. */
static void t_run(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-sysrun-XXXXXX", cmd[8192], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "cd %s && %s system run %s --run %s/r --budget 1 --slots 1 --min-time 0.02 --lessons %s/l.db "
             ">/dev/null 2>&1 && %s system report %s/r --json",
             kft_src("."), kft_bin("kforge"), small, dir, dir, kft_bin("kforge"), dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_t *r = json_loads(out, 0, NULL);
    CHECKF(r, "report: %s", out);
    json_t *it = json_array_get(json_object_get(r, "iterations"), 0);
    /* softmax is the largest share of the reference step by far */
    CHECK(!strcmp(json_string_value(json_object_get(it, "slot")), "softmax"));
    const char *oc = json_string_value(json_object_get(it, "outcome"));
    CHECKF(oc && (!strcmp(oc, "system_keep") || !strcmp(oc, "local_win_global_loss") ||
                  !strcmp(oc, "no_system_gain") || !strcmp(oc, "no_local_win")),
           "outcome %s", oc ? oc : "(none)");
    CHECK(json_array_size(json_object_get(r, "profile_before")) == 3);
    CHECK(json_is_number(json_object_get(r, "end_to_end_speedup")));
    CHECK(json_number_value(json_object_get(r, "arbor_rate")) == 0.39);
    json_decref(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
}

/* The record of dir (system.json) and its seal's state (system report --json). */
static json_t *sysrec(const char *dir, const char **seals) {
    char cmd[8192], out[1 << 17];
    snprintf(cmd, sizeof cmd, "%s system report %s --json", kft_bin("kforge"), dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_t *r = json_loads(out, 0, NULL);
    CHECKF(r, "report: %.300s", out);
    static char st[64];
    snprintf(st, sizeof st, "%s",
             json_string_value(json_object_get(json_object_get(r, "integrity"), "seals")) ?: "(none)");
    *seals = st;
    return r;
}

/* How many evaluations (nodes but the root) the run in dir recorded. */
static int run_nodes(const char *dir) {
    char cmd[8192], out[1 << 17];
    snprintf(cmd, sizeof cmd, "%s tree %s --json", kft_bin("kforge"), dir);
    if (kft_run(cmd, out, sizeof out)) return -1;
    json_t *r = json_loads(out, 0, NULL);
    int n = (int)json_array_size(json_object_get(r, "nodes"));
    json_decref(r);
    return n;
}

/* system run killed (SIGKILL) once a slot iteration is judged, mid-way through the next
 * slot's loop: while it ran, a second resume into its directory was refused (exit 4,
 * naming the holder); the record it leaves is sealed and renders, a tampered copy is
 * refused, another pipeline is refused, and --resume finishes the run without repeating
 * the judged iteration, the interrupted slot's run continued within its budget. The run
 * starts with a relative --run from one directory and resumes from another, its
 * directory and pipeline spelled otherwise. */
static void t_run_kill_resume(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-sysres-XXXXXX", cmd[16384], out[1 << 16], run[256];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/s", dir);
    snprintf(cmd, sizeof cmd,
             "cd %s && { %s system run %s/%s --run s --budget 2 --slots 3 --min-time 0.02 --agent 'cmd:sh %s' "
             ">%s/log 2>&1 & p=$!; i=0; while ! grep -q '\"outcome\"' %s/system.json 2>/dev/null; do "
             "i=$((i+1)); [ $i -gt 3000 ] && break; kill -0 $p || break; sleep 0.1; done; sleep 1; "
             "(cd %s && %s system run %s --run %s --resume >%s/busy 2>&1; echo \"rc=$?\" >>%s/busy); "
             "kill -9 $p; wait $p; } 2>/dev/null; cat %s/log",
             dir, kft_bin("kforge"), kft_src("."), small, kft_src("tests/system/agent.sh"), dir, run, kft_src("."),
             kft_bin("kforge"), small, run, dir, dir, dir);
    kft_run(cmd, out, sizeof out);
    {
        char bp[300], *busy = NULL;
        size_t bl = 0;
        snprintf(bp, sizeof bp, "%s/busy", dir);
        CHECK(kf__read_file(bp, 1 << 20, &busy, &bl) == 0);
        CHECKF(strstr(busy, "rc=4") && strstr(busy, "is in use by kforge system run (pid "),
               "a second resume while the run ran: %s", busy);
        free(busy);
    }
    const char *seals;
    json_t *r0 = sysrec(run, &seals);
    CHECKF(!strcmp(seals, "sealed"), "the killed run's record reads %s", seals);
    CHECKF(!strcmp(json_string_value(json_object_get(r0, "state")) ?: "(none)", "running"),
           "not killed mid-run: %s", out);
    json_t *its0 = json_object_get(r0, "iterations");
    json_t *judged = json_array_get(its0, 0);
    CHECK(json_array_size(its0) >= 2 && json_is_string(json_object_get(judged, "outcome")));
    /* the report renders it, and says the run has not finished */
    snprintf(cmd, sizeof cmd, "%s system report %s", kft_bin("kforge"), run);
    CHECKF(kft_run(cmd, out, sizeof out) == 0 && strstr(out, "the run has not finished") &&
               strstr(out, "| system.json | sealed | "),
           "%.2000s", out);
    snprintf(cmd, sizeof cmd, "%s report %s -o %s/r.html && grep -c 'id=\"iterations\"' %s/r.html",
             kft_bin("kforge"), run, dir, dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    /* a tampered copy: the report says so, and it is not resumed */
    snprintf(cmd, sizeof cmd,
             "cp -a %s %s/t && sed -i 's/\"score\": 0\\./\"score\": 9./' %s/t/system.json && cd %s && "
             "%s system run %s --run %s/t --resume 2>&1",
             run, dir, dir, kft_src("."), kft_bin("kforge"), small, dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "tampered"), "%s", out);
    char tdir[300];
    snprintf(tdir, sizeof tdir, "%s/t", dir);
    json_decref(sysrec(tdir, &seals));
    CHECKF(!strcmp(seals, "tampered"), "an edited record reads %s", seals);
    /* another pipeline's file */
    snprintf(cmd, sizeof cmd,
             "cd %s && %s system run pipelines/c/decode/pipeline.json --run %s --resume 2>&1", kft_src("."),
             kft_bin("kforge"), run);
    CHECKF(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "resumes only on its own pipeline"), "%s", out);
    /* resumed from another directory: finishes, the judged iteration as it was, every
     * slot once */
    snprintf(cmd, sizeof cmd, "cd %s && %s system run %s --run %s --resume 2>&1", kft_src("."),
             kft_bin("kforge"), small, run);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_t *r1 = sysrec(run, &seals);
    CHECKF(!strcmp(seals, "sealed"), "the resumed run's record reads %s", seals);
    CHECK(!strcmp(json_string_value(json_object_get(r1, "state")) ?: "(none)", "finished"));
    json_t *its = json_object_get(r1, "iterations");
    CHECKF(json_array_size(its) == 3, "%zu iterations", json_array_size(its));
    CHECKF(json_equal(json_array_get(its, 0), judged), "the judged iteration changed on resume");
    const char *names[3];
    for (size_t i = 0; i < 3; i++) {
        json_t *it = json_array_get(its, i);
        names[i] = json_string_value(json_object_get(it, "slot"));
        CHECKF(json_is_string(json_object_get(it, "outcome")), "iteration %zu has no outcome", i);
        for (size_t k = 0; k < i; k++) CHECKF(strcmp(names[i], names[k]), "slot %s judged twice", names[i]);
        char sd[400];
        snprintf(sd, sizeof sd, "%s/slot-%s", run, names[i]);
        int n = run_nodes(sd);
        CHECKF(n >= 1 && n <= 2, "slot run %s: %d evaluations for a budget of 2", sd, n);
    }
    CHECK(json_is_number(json_object_get(r1, "end_to_end_speedup")));
    CHECK(strstr(out, "resuming its run"));
    /* exported: the kept slots' dispatchers and the knobs, re-verified end to end; the
     * command it records verifies it again; a tampered record is not exported; a kept
     * file that no longer builds is rejected by the re-verification */
    CHECKF(json_object_size(json_object_get(r1, "kept")) >= 1, "nothing kept: %s", out);
    snprintf(cmd, sizeof cmd, "cd %s && %s export %s -o %s/x --json", kft_src("."), kft_bin("kforge"), run,
             dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_t *ex = json_loads(out, 0, NULL);
    CHECKF(ex, "%s", out);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(ex, "verification"), "verdict")),
                  "accepted"));
    CHECK(json_object_size(json_object_get(ex, "slots")) == json_object_size(json_object_get(r1, "kept")));
    CHECK(json_is_object(json_object_get(ex, "knobs")));
    const char *chk = json_string_value(json_object_get(ex, "check"));
    CHECK(chk && !strncmp(chk, "kforge system check ", 20));
    snprintf(cmd, sizeof cmd, "cd %s && %s%s --no-task-check 2>&1", kft_src("."), kft_bin("kforge"),
             chk + strlen("kforge"));
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_decref(ex);
    snprintf(cmd, sizeof cmd, "cd %s && %s export %s/t -o %s/y 2>&1", kft_src("."), kft_bin("kforge"), dir,
             dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "only a sealed record"), "%s", out);
    const char *kept_file = NULL, *kk;
    json_t *kv;
    json_object_foreach(json_object_get(r1, "kept"), kk, kv) kept_file = json_string_value(kv);
    snprintf(cmd, sizeof cmd, "echo 'not C' > %s && cd %s && %s export %s -o %s/x --json", kept_file,
             kft_src("."), kft_bin("kforge"), run, dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 1 && strstr(out, "\"verdict\": \"rejected\""), "%s", out);
    /* a finished run is not resumed */
    snprintf(cmd, sizeof cmd, "cd %s && %s system run %s --run %s --resume 2>&1", kft_src("."),
             kft_bin("kforge"), small, run);
    CHECKF(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "nothing to resume"), "%s", out);
    json_decref(r0), json_decref(r1);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
}

/* The record's saves are atomic across its two files: a kill between the seal's rename and
 * the record's leaves the previous record, which the new seal still vouches for; an older
 * one, or an edited one, reads as tampered. */
static void t_record_atomic(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-sysrec-XXXXXX", cmd[4096], out[4096], p[300], q[300];
    CHECK(mkdtemp(dir));
    kf_ctx *ctx = kf_ctx_new();
    const char *seals;
    snprintf(p, sizeof p, "%s/system.json", dir);
    for (int k = 0; k < 3; k++) {
        char rec[200];
        snprintf(rec, sizeof rec,
                 "{\"pipeline\": \"x\", \"state\": \"running\", \"iterations\": [], \"n\": %d}", k);
        CHECKF(kf_sysrun_save(ctx, dir, rec) == KF_OK, "%s", kf_errmsg(ctx));
        snprintf(q, sizeof q, "%s/rec%d.json", dir, k);
        snprintf(cmd, sizeof cmd, "cp %s %s", p, q);
        CHECK(kft_run(cmd, out, sizeof out) == 0);
    }
    /* one key for the run: its seal's key id did not change */
    json_decref(sysrec(dir, &seals));
    CHECK(!strcmp(seals, "sealed"));
    snprintf(cmd, sizeof cmd, "cp %s/rec1.json %s", dir, p);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
    json_decref(sysrec(dir, &seals));
    CHECKF(!strcmp(seals, "sealed"), "the record one save back reads %s", seals);
    snprintf(cmd, sizeof cmd, "cp %s/rec0.json %s", dir, p);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
    json_decref(sysrec(dir, &seals));
    CHECKF(!strcmp(seals, "tampered"), "the record two saves back reads %s", seals);
    snprintf(cmd, sizeof cmd, "sed 's/\"n\": 1/\"n\": 7/' %s/rec1.json > %s", dir, p);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
    json_decref(sysrec(dir, &seals));
    CHECKF(!strcmp(seals, "tampered"), "an edited record reads %s", seals);
    /* a save after a killed one vouches for the record on disk, not the lost one */
    snprintf(cmd, sizeof cmd, "cp %s/rec1.json %s", dir, p);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
    CHECK(kf_sysrun_save(ctx, dir, "{\"pipeline\": \"x\", \"n\": 3}") == KF_OK);
    snprintf(cmd, sizeof cmd, "cp %s/rec1.json %s", dir, p);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
    json_decref(sysrec(dir, &seals));
    CHECKF(!strcmp(seals, "sealed"), "the record before a twice-interrupted save reads %s", seals);
    kf_ctx_free(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
}

/* system run --workers 2: the slot runs evaluate on two local workers (kforge run's pool),
 * recorded in the record's options and in each iteration's scale, both workers used. */
static void t_run_workers(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-sysw-XXXXXX", cmd[8192], out[1 << 16], run[256];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/s", dir);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s system run %s --run %s --budget 2 --slots 1 --min-time 0.02 --workers 2 "
             "--agent 'cmd:sh %s' 2>&1",
             kft_src("."), kft_bin("kforge"), small, run, kft_src("tests/system/agent.sh"));
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    const char *seals;
    json_t *r = sysrec(run, &seals);
    CHECK(!strcmp(seals, "sealed"));
    CHECK(json_integer_value(json_object_get(json_object_get(r, "options"), "workers")) == 2);
    json_t *it = json_array_get(json_object_get(r, "iterations"), 0);
    json_t *ws = json_object_get(json_object_get(it, "scale"), "workers");
    CHECKF(json_array_size(ws) == 2, "the slot run's pool: %s", json_dumps(json_object_get(it, "scale"), 0));
    size_t i;
    json_t *w;
    json_int_t total = 0;
    json_array_foreach(ws, i, w) {
        json_int_t n = json_integer_value(json_object_get(w, "evaluations"));
        CHECKF(n >= 1, "worker %s evaluated nothing", json_string_value(json_object_get(w, "name")));
        total += n;
    }
    CHECK(total >= json_integer_value(json_object_get(it, "evaluations")));
    CHECK(json_integer_value(json_object_get(json_object_get(it, "scale"), "lost")) == 0);
    json_decref(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
}

/* ---- the knob search (tests/system/knobs: passes 5 by default, 1 five times faster, 25
 * five times slower, the same output; scale 2 changes the output; a workload knob n;
 * launch=graph, refused on C) ---- */

static const char knobs_pl[] = "tests/system/knobs/pipeline.json";

/* The trial of knob=value in the record r, or NULL; *count how many there are. */
static json_t *knob_trial(json_t *r, const char *knob, const char *value, int *count) {
    size_t i;
    json_t *t, *found = NULL;
    *count = 0;
    json_array_foreach(json_object_get(r, "knob_trials"), i, t) {
        if (strcmp(json_string_value(json_object_get(t, "knob")) ?: "", knob) ||
            strcmp(json_string_value(json_object_get(t, "value")) ?: "", value))
            continue;
        found = t, (*count)++;
    }
    return found;
}

static const char *outcome_of(json_t *t) {
    return json_string_value(json_object_get(t, "outcome")) ?: "(none)";
}

/* A finished knob search's record: the faster value kept, the slower not, the refused one
 * recorded with its reason (not a loss), the workload knob never tried; each once. */
static void check_knob_record(json_t *r) {
    int n;
    json_t *t = knob_trial(r, "passes", "1", &n);
    CHECKF(t && n == 1 && !strcmp(outcome_of(t), "knob_keep"), "passes=1: %s (%d trials)",
           t ? outcome_of(t) : "none", n);
    CHECK(!strcmp(json_string_value(json_object_get(t, "against")) ?: "", "5"));
    CHECK(json_number_value(json_array_get(json_object_get(t, "system_gain_ci95"), 0)) > 0);
    t = knob_trial(r, "passes", "25", &n);
    CHECKF(t && n == 1 && !strcmp(outcome_of(t), "no_system_gain"), "passes=25: %s",
           t ? outcome_of(t) : "none");
    CHECK(!strcmp(json_string_value(json_object_get(t, "against")) ?: "", "1"));
    CHECK(json_is_false(json_object_get(t, "keep")));
    t = knob_trial(r, "launch", "graph", &n);
    CHECKF(t && n == 1 && !strcmp(outcome_of(t), "refused"), "launch=graph: %s", t ? outcome_of(t) : "none");
    CHECK(strstr(json_string_value(json_object_get(t, "reason")) ?: "", "no captured launch mode"));
    /* a value that changes the step's outputs is rejected by the check, not kept */
    t = knob_trial(r, "scale", "2", &n);
    CHECKF(t && n == 1 && !strcmp(outcome_of(t), "rejected"), "scale=2: %s", t ? outcome_of(t) : "none");
    CHECK(has_reason(t, "wrong_result", "end to end"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "knobs"), "scale")) ?: "", "1"));
    CHECK(!knob_trial(r, "passes", "5", &n) && !knob_trial(r, "n", "512", &n));
    CHECKF(json_array_size(json_object_get(r, "knob_trials")) == 4, "%zu knob trials",
           json_array_size(json_object_get(r, "knob_trials")));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "knobs"), "passes")) ?: "", "1"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "knobs"), "launch")) ?: "", "eager"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "workload"), "n")) ?: "", "2048"));
    CHECK(!json_object_get(json_object_get(r, "knobs"), "n"));
    CHECK(!strcmp(json_string_value(json_object_get(r, "state")) ?: "", "finished"));
    /* the end to end figure includes the kept knob: the reference pipeline at passes 5 */
    CHECKF(json_number_value(json_object_get(r, "end_to_end_speedup")) > 2, "end to end %.3fx",
           json_number_value(json_object_get(r, "end_to_end_speedup")));
}

/* system bench --cand-knob: the candidate configuration alone at another value of a tuning
 * knob; a dim knob is refused there. system run --slots 0: the knob search alone, its
 * record, its report and its export. */
static void t_knob_search(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-sysknob-XXXXXX", cmd[8192], out[1 << 17], run[256];
    CHECK(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "cd %s && %s system bench %s --cand-knob passes=1 --min-time 0.02 --json",
             kft_src("."), kft_bin("kforge"), knobs_pl);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_t *r = json_loads(out, 0, NULL);
    CHECKF(r && json_is_true(json_object_get(r, "keep")), "%.2000s", out);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "candidate_knobs"), "passes")) ?: "",
                  "1"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "knobs"), "passes")) ?: "", "5"));
    CHECK(json_array_size(json_object_get(r, "knobs_declared")) == 4);
    json_decref(r);
    snprintf(cmd, sizeof cmd, "cd %s && %s system check %s --cand-knob n=512 2>&1", kft_src("."),
             kft_bin("kforge"), knobs_pl);
    CHECKF(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "it sets the workload"), "%s", out);
    snprintf(run, sizeof run, "%s/s", dir);
    snprintf(cmd, sizeof cmd, "cd %s && %s system run %s --run %s --slots 0 --min-time 0.02 2>&1",
             kft_src("."), kft_bin("kforge"), knobs_pl, run);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    const char *seals;
    r = sysrec(run, &seals);
    CHECK(!strcmp(seals, "sealed"));
    check_knob_record(r);
    json_decref(r);
    /* the report shows the choice */
    snprintf(cmd, sizeof cmd, "%s system report %s", kft_bin("kforge"), run);
    CHECKF(kft_run(cmd, out, sizeof out) == 0 && strstr(out, "## Knobs") &&
               strstr(out, "Tuning knobs kept: passes=1, launch=eager, scale=1") &&
               strstr(out, "| 1 | passes | 1 | 5 | knob_keep |") &&
               strstr(out, "| launch | graph | eager | refused |"),
           "%.3000s", out);
    snprintf(cmd, sizeof cmd, "%s report %s -o %s/r.html && grep -c 'class=\"knob-trial\"' %s/r.html",
             kft_bin("kforge"), run, dir, dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0 && strtol(out, NULL, 10) == 4, "%s", out);
    /* the export carries the knobs and its check runs with them */
    snprintf(cmd, sizeof cmd, "cd %s && %s export %s -o %s/x --json", kft_src("."), kft_bin("kforge"), run,
             dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    json_t *ex = json_loads(out, 0, NULL);
    CHECKF(ex, "%s", out);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(ex, "knobs"), "passes")) ?: "", "1"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(ex, "knobs"), "n")) ?: "", "2048"));
    const char *chk = json_string_value(json_object_get(ex, "check"));
    CHECKF(chk && strstr(chk, " --knob passes=1") && strstr(chk, " --knob n=2048"), "%s",
           chk ? chk : "(none)");
    snprintf(cmd, sizeof cmd, "cd %s && %s%s --json", kft_src("."), kft_bin("kforge"),
             chk + strlen("kforge"));
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    r = json_loads(out, 0, NULL);
    CHECK(r && !strcmp(json_string_value(json_object_get(json_object_get(r, "knobs"), "passes")) ?: "", "1"));
    json_decref(r);
    json_decref(ex);
    /* --knob: a dim knob picks the run's one workload, a tuning knob given is not searched */
    snprintf(cmd, sizeof cmd,
             "cd %s && %s system run %s --run %s/w --slots 0 --min-time 0.02 --knob n=512 --knob passes=25 2>&1",
             kft_src("."), kft_bin("kforge"), knobs_pl, dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    snprintf(run, sizeof run, "%s/w", dir);
    r = sysrec(run, &seals);
    int n;
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "workload"), "n")) ?: "", "512"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(r, "knobs"), "passes")) ?: "", "25"));
    CHECKF(json_array_size(json_object_get(r, "knob_trials")) == 2 && knob_trial(r, "launch", "graph", &n),
           "%zu knob trials", json_array_size(json_object_get(r, "knob_trials")));
    json_decref(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
}

/* system run killed (SIGKILL) in the knob search, a trial judged and the next one under
 * way: the record is sealed, and --resume finishes the interrupted trial without judging
 * the first one again. */
static void t_knob_resume(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-sysknobr-XXXXXX", cmd[16384], out[1 << 16], run[256];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/s", dir);
    /* killed once the record holds a judged trial and, after it, one not judged yet */
    snprintf(cmd, sizeof cmd,
             "cd %s && { %s system run %s --run %s --slots 0 --min-time 0.3 >%s/log 2>&1 & p=$!; i=0; "
             "while ! { [ \"$(grep -o '\"outcome\"' %s/system.json 2>/dev/null | wc -l)\" = 1 ] && "
             "[ \"$(grep -o '\"knob\":' %s/system.json | wc -l)\" = 2 ]; }; do "
             "i=$((i+1)); [ $i -gt 6000 ] && break; kill -0 $p || break; sleep 0.05; done; "
             "kill -9 $p; wait $p; } 2>/dev/null; cat %s/log",
             kft_src("."), kft_bin("kforge"), knobs_pl, run, dir, run, run, dir);
    kft_run(cmd, out, sizeof out);
    const char *seals;
    json_t *r0 = sysrec(run, &seals);
    CHECKF(!strcmp(seals, "sealed"), "the killed run's record reads %s", seals);
    CHECKF(!strcmp(json_string_value(json_object_get(r0, "state")) ?: "", "running"), "not killed: %s", out);
    json_t *tr0 = json_object_get(r0, "knob_trials");
    CHECKF(json_array_size(tr0) == 2 && json_is_string(json_object_get(json_array_get(tr0, 0), "outcome")) &&
               !json_object_get(json_array_get(tr0, 1), "outcome"),
           "not killed in the second trial: %s", out);
    json_t *judged = json_array_get(tr0, 0);
    snprintf(cmd, sizeof cmd, "%s system report %s", kft_bin("kforge"), run);
    CHECKF(kft_run(cmd, out, sizeof out) == 0 && strstr(out, "not judged yet"), "%.3000s", out);
    snprintf(cmd, sizeof cmd, "cd %s && %s system run %s --run %s --resume --min-time 0.02 2>&1",
             kft_src("."), kft_bin("kforge"), knobs_pl, run);
    CHECKF(kft_run(cmd, out, sizeof out) == 0 && strstr(out, "resuming the knob trial passes=25"), "%s", out);
    CHECKF(!strstr(out, "knob passes=1 against"), "a judged trial judged again: %s", out);
    json_t *r1 = sysrec(run, &seals);
    CHECK(!strcmp(seals, "sealed"));
    CHECKF(json_equal(json_array_get(json_object_get(r1, "knob_trials"), 0), judged),
           "the judged trial changed on resume");
    check_knob_record(r1);
    json_decref(r0), json_decref(r1);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
}

/* ---- fusions ---- */

static const char decode[] = "pipelines/c/decode/pipeline.json";
static const char fused_fast[] = "pipelines/c/decode/fused/add_rmsnorm/candidates/fast.c";

/* check (bench 0) or bench of the decode step with the add_norm fusion given file. */
static json_t *fused_run(int bench, const char *file, int task_checks, int *accepted) {
    kf_ctx *ctx = kf_ctx_new();
    kf_system_opts o;
    kf_system_opts_init(&o);
    char sel[4200];
    snprintf(sel, sizeof sel, "add_norm=%s", kft_src(file));
    o.slots[o.nslots++] = sel;
    o.task_checks = task_checks;
    o.check.bench_min_time_s = 0.05;
    o.check.bench_min_runs = 8;
    o.check.hidden_count = 1;
    char *out = NULL;
    kf_status st = bench ? kf_system_bench(ctx, kft_src(decode), &o, &out, accepted)
                         : kf_system_check(ctx, kft_src(decode), &o, &out, accepted);
    CHECKF(st == KF_OK, "%s", kf_errmsg(ctx));
    json_t *r = json_loads(out, 0, NULL);
    CHECK(r);
    free(out);
    kf_ctx_free(ctx);
    return r;
}

static json_t *stage_row(json_t *r, const char *name) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "stages"), i,
                       v) if (!strcmp(json_string_value(json_object_get(v, "stage")), name)) return v;
    return NULL;
}

/* An honest fused residual add + rmsnorm replaces the decode step's residual1 and
 * ffn_norm: accepted (its own task, the captured inputs of its span, end to end, one
 * call per layer and step) and timed in the step in their place. */
static void t_fusion(const void *arg) {
    (void)arg;
    int acc = 0;
    json_t *r = fused_run(0, fused_fast, 1, &acc);
    CHECKF(acc, "%s", json_dumps(json_object_get(r, "reasons"), 0));
    json_t *sl = slot_of(r, "add_norm");
    CHECK(sl && json_array_size(json_object_get(sl, "fuses")) == 2);
    CHECK(
        !strcmp(json_string_value(json_object_get(json_object_get(sl, "captured"), "verdict")), "accepted"));
    json_t *e = json_object_get(sl, "engagement");
    CHECK(json_integer_value(json_object_get(e, "expected")) == 8 &&
          json_is_true(json_object_get(e, "engaged")));
    json_decref(r);
    r = fused_run(1, fused_fast, 0, &acc);
    CHECKF(acc, "%s", json_dumps(json_object_get(r, "reasons"), 0));
    json_t *f = stage_row(r, "add_norm"), *r1 = stage_row(r, "residual1"), *n1 = stage_row(r, "ffn_norm");
    CHECK(f && r1 && n1);
    CHECK(json_number_value(json_object_get(f, "candidate_ns")) > 0 &&
          json_number_value(json_object_get(f, "baseline_ns")) == 0);
    CHECK(!strcmp(json_string_value(json_object_get(r1, "implementation")), "fused") &&
          json_number_value(json_object_get(r1, "candidate_ns")) == 0 &&
          json_number_value(json_object_get(r1, "baseline_ns")) > 0 &&
          json_number_value(json_object_get(n1, "candidate_ns")) == 0);
    CHECK(json_is_number(json_object_get(r, "gain")));
    json_decref(r);
}

/* A fused candidate wrong on one stage of its span (the add, or the rmsnorm) is rejected
 * with that stage named, by the captured inputs of its span. */
static void t_fusion_wrong(const void *arg) {
    (void)arg;
    static const char *const files[2] = {"tests/system/add_rmsnorm_wrong_add.c",
                                         "tests/system/add_rmsnorm_wrong_norm.c"};
    static const char *const want[2] = {
        "fusion add_norm: wrong on stage residual1: its s (stage residual1's x1)",
        "fusion add_norm: wrong on stage ffn_norm: its y (stage ffn_norm's h2)"};
    for (int i = 0; i < 2; i++) {
        int acc = 1;
        json_t *r = fused_run(0, files[i], 0, &acc);
        CHECKF(!acc && has_reason(r, "wrong_result", want[i]), "%s: %s", files[i],
               json_dumps(json_object_get(r, "reasons"), 0));
        CHECK(!has_reason(r, "wrong_result", want[1 - i]));
        json_decref(r);
    }
}

/* A fusion's errors at load, with the pipeline's FILE:LINE: stages not adjacent, a
 * buffer its span writes that is seen after it and it does not write, an input its span
 * writes, a name a slot has. */
static void t_fusion_load(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-fuse-XXXXXX", path[300];
    CHECK(mkdtemp(dir));
    char *text = NULL;
    size_t len = 0;
    CHECK(!kf__read_file(kft_src(decode), 1 << 20, &text, &len));
    static const char line[] = "{\"name\": \"add_norm\", \"task\": \"fused/add_rmsnorm\", \"stages\": "
                               "[\"residual1\", \"ffn_norm\"], "
                               "\"sizes\": {\"rows\": \"batch\", \"cols\": \"hidden\"}, \"bind\": {\"a\": "
                               "\"x\", \"b\": \"ao\", \"w\": "
                               "\"ffn_norm_w\", \"s\": \"x1\", \"y\": \"h2\"}}";
    char *at = strstr(text, line);
    CHECKF(at, "the decode pipeline's fusion line changed");
    static const struct {
        const char *from, *to, *want;
    } cases[] = {
        {"[\"residual1\", \"ffn_norm\"]", "[\"residual1\", \"gate_proj\"]",
         "gate_proj does not follow residual1"},
        {"[\"residual1\", \"ffn_norm\"]", "[\"residual1\", \"ffn_norm\", \"gate_proj\"]",
         "stage gate_proj writes g, which is seen after the span (stage silu_mul reads it)"},
        {"\"b\": \"ao\"", "\"b\": \"x1\"", "b and s are both bound to x1, which one writes"},
        {"\"name\": \"add_norm\"", "\"name\": \"linear\"", "fusion linear: a slot of that name exists"},
        {"\"stages\": [\"residual1\", \"ffn_norm\"]", "\"stages\": [\"residual1\", \"nope\"]",
         "nope is no stage of the pipeline"},
    };
    int fline = 1;
    for (const char *c = text; c < at; c++) fline += *c == '\n';
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char fl[1024], *body = malloc(len + 1024);
        const char *x = strstr(line, cases[i].from);
        CHECK(x && body);
        snprintf(fl, sizeof fl, "%.*s%s%s", (int)(x - line), line, cases[i].to, x + strlen(cases[i].from));
        snprintf(body, len + 1024, "%.*s%s%s", (int)(at - text), text, fl, at + strlen(line));
        /* the tasks by absolute path, the pipeline elsewhere */
        char *t;
        while ((t = strstr(body, "../../../tasks"))) {
            char rest[1 << 16];
            snprintf(rest, sizeof rest, "%s%s", kft_src("tasks"), t + strlen("../../../tasks"));
            snprintf(t, len + 1024 - (size_t)(t - body), "%s", rest);
        }
        if ((t = strstr(body, "\"fused/add_rmsnorm\""))) {
            char rest[1 << 16];
            snprintf(rest, sizeof rest, "\"%s%s", kft_src("pipelines/c/decode/fused/add_rmsnorm"),
                     t + strlen("\"fused/add_rmsnorm"));
            snprintf(t, len + 1024 - (size_t)(t - body), "%s", rest);
        }
        snprintf(path, sizeof path, "%s/p%zu.json", dir, i);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(body, f) >= 0 && fclose(f) == 0);
        free(body);
        kf_ctx *ctx = kf_ctx_new();
        kf_system_opts o;
        kf_system_opts_init(&o);
        char *out = NULL;
        int acc = 0;
        kf_status st = kf_system_check(ctx, path, &o, &out, &acc);
        char want[400];
        snprintf(want, sizeof want, "%s:%d: ", path, fline);
        CHECKF(st == KF_ETASK && strstr(kf_errmsg(ctx), cases[i].want) && strstr(kf_errmsg(ctx), want),
               "case %zu: %d %s", i, st, kf_errmsg(ctx));
        free(out);
        kf_ctx_free(ctx);
    }
    free(text);
    char cmd[400], o2[100];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(kft_run(cmd, o2, sizeof o2) == 0);
}

void kft_register_system(void) {
    kft_add("system/load_errors", t_load_errors, NULL, 60);
    kft_add("system/schema", t_schema, NULL, 60);
    kft_add("system/cuda_decode_load", t_cuda_decode_load, NULL, 60);
    kft_add("system/check_small", t_check_small, NULL, 120);
    kft_add("system/captured", t_captured, NULL, 120);
    kft_add("system/cli", t_cli, NULL, 120);
    kft_add("system/decode", t_decode, NULL, 300);
    kft_add("system/cuda_decode", t_cuda_decode, NULL, 600);
    kft_add("system/bench_win", t_bench_win, NULL, 180);
    kft_add("system/local_win_global_loss", t_local_win_global_loss, NULL, 180);
    kft_add("system/run", t_run, NULL, 400);
    kft_add("system/run_kill_resume", t_run_kill_resume, NULL, 900);
    kft_add("system/record_atomic", t_record_atomic, NULL, 60);
    kft_add("system/run_workers", t_run_workers, NULL, 400);
    kft_add("system/fusion", t_fusion, NULL, 300);
    kft_add("system/fusion_wrong", t_fusion_wrong, NULL, 120);
    kft_add("system/fusion_load", t_fusion_load, NULL, 120);
    kft_add("system/vs_knob", t_vs_knob, NULL, 120);
    kft_add("system/knob_search", t_knob_search, NULL, 300);
    kft_add("system/knob_resume", t_knob_resume, NULL, 300);
}

/*
 * test_sanitize.c - `kforge check --sanitize` (compute-sanitizer).
 *
 * Everywhere: the report parser on sample reports (tests/fixtures/sanitizer), the
 * command line's refusals (C task, unknown tool, no compute-sanitizer, bench), and the
 * sandbox's wrapper option, with a shell script standing in for compute-sanitizer around
 * a C candidate (a wrapper that runs the worker as its child, then writes a report and
 * exits with its own status).
 * With a GPU and compute-sanitizer: the candidates of tests/redteam/cuda_sanitize pass
 * the normal check and are rejected by the tool their header names; every bundled
 * fast.cu passes all three tools clean.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "backend/cuda/cuda_api.h"
#include "check/check.h"
#include "task/task.h"
#include "util/util.h"

#include <dirent.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *fixture(const char *name) {
    char rel[256], *text = NULL;
    size_t n;
    snprintf(rel, sizeof rel, "tests/fixtures/sanitizer/%s", name);
    CHECKF(kf__read_file(kft_src(rel), 1u << 20, &text, &n) == 0, "%s missing", rel);
    return text;
}

static void t_parse(const void *arg) {
    (void)arg;
    static const struct {
        const char *file;
        int exit_code, errors, warnings, summary;
        const char *first; /* a substring of the headline, or NULL: none */
    } cases[] = {
        {"memcheck_oob_read.log", 86, 1, 0, 1,
         "Invalid __global__ read of size 4 bytes at sum_oob+0x3d0 in sum_oob_read.cu:36"},
        {"memcheck_many.log", 86, 312, 0, 1, "Invalid __global__ read"},
        {"memcheck_clean.log", 0, 0, 0, 1, NULL},
        {"racecheck_hazard.log", 86, 1, 0, 1, "Error: Race reported between Write access at sum_race+0x2a0"},
        {"racecheck_warning.log", 0, 0, 1, 1, NULL},
        {"racecheck_clean.log", 0, 0, 0, 1, NULL},
        {"initcheck_uninit.log", 86, 1, 0, 1,
         "Uninitialized __global__ memory read of size 4 bytes at sum_zero+0x40"},
        {"initcheck_host_api.log", 86, 1, 0, 1, "Host API memory access error"},
        {"unsupported.log", 1, 0, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *log = fixture(cases[i].file);
        kf_san_report r;
        kf_sanitize_parse(log, cases[i].exit_code, &r);
        CHECKF(r.errors == cases[i].errors && r.warnings == cases[i].warnings &&
                   r.summary == cases[i].summary,
               "%s: errors %d warnings %d summary %d", cases[i].file, r.errors, r.warnings, r.summary);
        if (cases[i].first)
            CHECKF(strstr(r.first, cases[i].first), "%s: headline '%s'", cases[i].file, r.first);
        else CHECKF(!r.first[0], "%s: headline '%s' on a clean report", cases[i].file, r.first);
        CHECKF(!strncmp(r.report, "========= COMPUTE-SANITIZER", 27), "%s: report '%.60s'", cases[i].file,
               r.report);
        free(log);
    }
    /* the racecheck headline carries the other access too */
    char *log = fixture("racecheck_hazard.log");
    kf_san_report r;
    kf_sanitize_parse(log, 0, &r);
    CHECKF(strstr(r.first, "and Read access at sum_race+0x2f0"), "%s", r.first);
    free(log);
    /* the report is capped: 40 lines of the 123 */
    log = fixture("memcheck_many.log");
    kf_sanitize_parse(log, 86, &r);
    int lines = 0;
    for (const char *p = r.report; *p; p++) lines += *p == '\n';
    CHECKF(lines == 40 && strlen(r.report) < sizeof r.report, "%d lines", lines);
    free(log);
    /* no report at all: only the tool's error exit code speaks, and it is believed */
    kf_sanitize_parse(NULL, 86, &r);
    CHECK(r.errors == 1 && strstr(r.first, "error exit code") && !r.summary);
    kf_sanitize_parse(NULL, -1, &r);
    CHECK(r.errors == 0 && !r.summary);
    /* a finding without a summary (the tool was cut short) still counts */
    kf_sanitize_parse(
        "========= Invalid __global__ read of size 4 bytes\n=========     at k+0x10 in a.cu:3\n", 86, &r);
    CHECK(r.errors == 1 && strstr(r.first, "Invalid __global__ read") && strstr(r.first, "a.cu:3"));
    /* racecheck's summary decides for racecheck: warnings do not reject, even if the
     * exit status counted them */
    kf_sanitize_parse("========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n"
                      "========= ERROR SUMMARY: 1 error\n",
                      86, &r);
    CHECK(r.errors == 0 && r.warnings == 1);
    /* tool lists */
    CHECK(kf_sanitize_parse_tools("memcheck") == KF_SANITIZE_MEMCHECK);
    CHECK(kf_sanitize_parse_tools("initcheck,memcheck") == (KF_SANITIZE_INITCHECK | KF_SANITIZE_MEMCHECK));
    CHECK(kf_sanitize_parse_tools("memcheck,racecheck,initcheck") == KF_SANITIZE_ALL);
    CHECK(kf_sanitize_parse_tools("synccheck") == 0 &&
          kf_sanitize_parse_tools("memcheck,") == KF_SANITIZE_MEMCHECK);
    CHECK(kf_sanitize_parse_tools("") == 0 && kf_sanitize_parse_tools("mem") == 0);
}

static int kforge(const char *env, const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s %s 2>&1", kft_src("."), env, kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

/* Refusals are usage errors (exit 2) with a clear message, never a verdict. */
static void t_cli(const void *arg) {
    (void)arg;
    static char out[1 << 16];
    CHECK(kforge("", "check tasks/c/saxpy tasks/c/saxpy/candidates/fast.c --sanitize", out, sizeof out) == 2);
    CHECKF(strstr(out, "CUDA tasks only"), "%s", out);
    CHECK(kforge("", "check tasks/cuda/sum tasks/cuda/sum/candidates/fast.cu --sanitize=memcheck,helgrind",
                 out, sizeof out) == 2);
    CHECKF(strstr(out, "memcheck, racecheck, initcheck"), "%s", out);
    CHECK(kforge("", "check tasks/cuda/sum tasks/cuda/sum/candidates/fast.cu --sanitize= --json", out,
                 sizeof out) == 2);
    CHECKF(strstr(out, "\"verdict\":\"error\""), "%s", out);
    CHECK(kforge("", "bench tasks/cuda/sum tasks/cuda/sum/candidates/fast.cu --sanitize", out, sizeof out) ==
          2);
    CHECK(kforge("KFORGE_SANITIZER=/nonexistent/compute-sanitizer",
                 "check tasks/cuda/sum tasks/cuda/sum/candidates/fast.cu --sanitize=initcheck", out,
                 sizeof out) == 2);
    CHECKF(strstr(out, "compute-sanitizer not found") && strstr(out, "/nonexistent"), "%s", out);
    /* nothing to find: every default place empty (PATH without it, no toolkit roots) */
    char sp[512];
    if (kf_sanitize_find(sp, sizeof sp, out, sizeof out) == 0) {
        fprintf(stderr, "    (compute-sanitizer present at %s: the not-found path is covered above only)\n",
                sp);
    } else {
        CHECK(kforge("", "check tasks/cuda/sum tasks/cuda/sum/candidates/fast.cu --sanitize --json", out,
                     sizeof out) == 2);
        CHECKF(strstr(out, "compute-sanitizer not found") && strstr(out, "KFORGE_SANITIZER"), "%s", out);
    }
}

/* The sandbox's wrapper option: the worker runs as the wrapper's child (its parent is
 * not the coordinator), serves calls, leaves cleanly when finished, and the wrapper's
 * exit status and report come back. */
static void t_wrapper(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-wrap-XXXXXX";
    CHECK(mkdtemp(dir));
    chmod(dir, 0755);
    char script[128], logp[128];
    snprintf(script, sizeof script, "%s/fake-sanitizer", dir);
    snprintf(logp, sizeof logp, "%s/report.log", dir);
    FILE *f = fopen(script, "w");
    CHECK(f);
    fprintf(f, "#!/bin/sh\n# stands in for compute-sanitizer: run the target, then report\n"
               "log=$1; shift\n\"$@\"\nst=$?\n"
               "printf '========= COMPUTE-SANITIZER\\n========= target exit %%s\\n========= ERROR SUMMARY: 0 "
               "errors\\n' $st > \"$log\"\n"
               "exit 86\n");
    fclose(f);
    CHECK(chmod(script, 0755) == 0);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/saxpy");
    kf_opts o;
    kf_opts_init(&o);
    kf_sess s;
    CHECKF(kf_sess_open(&s, ctx, t, kft_src("tasks/c/saxpy/candidates/fast.c"), &o, "check") == KF_OK, "%s",
           kf_errmsg(ctx));
    int ok = 0;
    CHECKF(kf_sess_build(&s, &ok) == KF_OK && ok, "%s", kf_errmsg(ctx));
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &t->shapes[0], &ex, err, sizeof err) == 0);
    const char *wrap[] = {script, logp, NULL};
    kf_worker_opts wo = {20, 512ull << 20, 10, 0, NULL, 0, wrap, 10, t->entry, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    kf_side side;
    memset(&side, 0, sizeof side);
    side.b = &s.cbuild;
    kf_call_result fail;
    CHECKF(kf_worker_spawn(ctx, s.cbuild.so_path, kf_sess_arena_bytes(t, &ex), &wo, &side.w, &fail) == KF_OK,
           "%s", kf_errmsg(ctx));
    CHECKF(side.w, "%s", fail.msg);
    for (int call = 0; call < 2; call++) {
        kf_inputs in;
        CHECK(kf_data_gen_inputs(t, &ex, &s.rng, 0, &in) == 0);
        kf_sess_place(&s, &s.crng, &ex, call, &side.lay);
        kf_poison p;
        kf_data_make_poison(t, &s.crng, &p);
        kf_call_result cr;
        kf_sess_call(&s, &side, &ex, &in, &p, &cr);
        CHECKF(cr.st == KF_CALL_OK, "call %d: %s", call, cr.msg);
        kf_data_free_inputs(t, &in);
    }
    int status = kf_worker_finish(side.w, 10);
    CHECKF(status == 86, "the wrapper's status came back as %d", status);
    kf_worker_close(side.w);
    char *log = NULL;
    size_t n;
    CHECK(kf__read_file(logp, 1 << 16, &log, &n) == 0);
    CHECKF(strstr(log, "target exit 0"), "the worker did not leave cleanly: %s", log);
    free(log);
    kf_result_free(s.res); /* kf_sess_close leaves the result to its caller */
    kf_sess_close(&s);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* A stand-in for compute-sanitizer: finds --log-file, runs the worker command after
 * it (when run_target), then writes the fixture `report` there and exits with code. */
static void fake_tool(const char *path, const char *report, int run_target, int code) {
    char *text = report ? fixture(report) : NULL;
    FILE *f = fopen(path, "w");
    CHECK(f);
    fprintf(f,
            "#!/bin/sh\nwhile [ \"$1\" != --log-file ]; do shift; done\nlog=$2; shift 2\n%s\n"
            "cat > \"$log\" <<'KF_EOF'\n%sKF_EOF\nexit %d\n",
            run_target ? "\"$@\" > /dev/null" : "", text ? text : "", code);
    fclose(f);
    free(text);
    CHECK(chmod(path, 0755) == 0);
}

/* kf_sanitize_run end to end, with stand-in tools around a C candidate's worker (the
 * flow, the JSON and the verdict; the GPU specifics are the GPU tests' business). */
static void t_run_flow(const void *arg) {
    (void)arg;
    static const struct {
        const char *report;
        int run_target, code;
        int ran, errors, rejected;
        const char *note; /* substring, or NULL: no note */
    } cases[] = {
        {"memcheck_clean.log", 1, 0, 1, 0, 0, NULL},
        {"memcheck_oob_read.log", 1, 86, 1, 1, 1, NULL},
        {"unsupported.log", 0, 1, 0, 0, 0, "did not start"},
        /* what a tool counts before the worker is ready is not the candidate's */
        {"initcheck_uninit.log", 0, 86, 0, 0, 0, "did not start"},
    };
    char dir[] = "/tmp/kft-sanrun-XXXXXX";
    CHECK(mkdtemp(dir));
    chmod(dir, 0755);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tool[128];
        snprintf(tool, sizeof tool, "%s/tool%zu", dir, i);
        fake_tool(tool, cases[i].report, cases[i].run_target, cases[i].code);
        kf_ctx *ctx = kf_ctx_new();
        kf_task *t = kft_task(ctx, "tasks/c/saxpy");
        kf_opts o;
        kf_opts_init(&o);
        o.sanitize = KF_SANITIZE_MEMCHECK;
        kf_sess s;
        CHECKF(kf_sess_open(&s, ctx, t, kft_src("tasks/c/saxpy/candidates/fast.c"), &o, "check") == KF_OK,
               "%s", kf_errmsg(ctx));
        int ok = 0;
        CHECKF(kf_sess_build(&s, &ok) == KF_OK && ok, "%s", kf_errmsg(ctx));
        CHECKF(kf_sanitize_run(&s, tool) == KF_OK, "%s", kf_errmsg(ctx));
        char *json = kf_result_json(s.res);
        json_error_t e;
        json_t *j = json_loads(json, 0, &e),
               *m = json_object_get(json_object_get(j, "sanitizer"), "memcheck");
        CHECKF(json_is_boolean(json_object_get(m, "ran")) &&
                   json_is_true(json_object_get(m, "ran")) == cases[i].ran &&
                   json_integer_value(json_object_get(m, "errors")) == cases[i].errors,
               "%s: %s", cases[i].report, json);
        CHECKF((kf_result_verdict(s.res) == KF_VERDICT_REJECTED) == cases[i].rejected, "%s: %s",
               cases[i].report, json);
        const char *note = json_string_value(json_object_get(m, "note"));
        CHECKF(cases[i].note ? note && strstr(note, cases[i].note) : !note, "%s: %s", cases[i].report, json);
        if (cases[i].run_target) /* the worker served every visible shape */
            CHECKF(json_integer_value(json_object_get(m, "calls")) == t->nshapes, "%s", json);
        if (cases[i].rejected) {
            const char *msg = json_string_value(
                json_object_get(json_array_get(json_object_get(j, "reasons"), 0), "message"));
            CHECKF(kf_result_reason(s.res, 0) == KF_REASON_SANITIZER && msg && strstr(msg, "memcheck") &&
                       strstr(msg, "Invalid __global__ read") && strstr(msg, "sum_oob_read.cu:36"),
                   "%s", json);
            char *txt = kf_result_text(s.res);
            CHECKF(strstr(txt, "sanitizer memcheck: 1 error"), "%s", txt);
            free(txt);
        } else if (!cases[i].ran) {
            char *txt = kf_result_text(s.res);
            CHECKF(strstr(txt, "sanitizer memcheck: NOT RUN"), "%s", txt);
            free(txt);
        }
        json_decref(j);
        free(json);
        kf_result_free(s.res);
        kf_sess_close(&s);
        kf_task_free(t);
        kf_ctx_free(ctx);
    }
    kf__rmtree(dir);
}

/* The red-team kernels build (NVRTC, no GPU needed): the GPU cases below cannot fail
 * for a typo the lead would only see on the device. */
static void t_redteam_build(const void *arg) {
    (void)arg;
    char why[512];
    if (!kf_nvrtc_load(why, sizeof why)) kft_skip("needs NVRTC: %s", why);
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sum");
    const char *files[] = {"sum_oob_read.cu", "sum_smem_race.cu", "sum_uninit_out.cu"};
    for (int i = 0; i < 3; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tests/redteam/cuda_sanitize/%s", files[i]);
        kf_candidate *c = NULL;
        CHECKF(kf_candidate_load(ctx, t, kft_src(rel), NULL, 0, &c) == KF_OK, "%s", kf_errmsg(ctx));
        char wd[] = "/tmp/kft-sanb-XXXXXX";
        CHECK(mkdtemp(wd));
        kf_build b;
        CHECKF(kf_backend_compile(kf_backend_get("cuda"), ctx, t, kft_src(rel), c->text, c->len, NULL, 0, wd,
                                  60, &b) == KF_OK,
               "%s", kf_errmsg(ctx));
        CHECKF(b.ok && b.nlaunch == 2, "%s: %s", files[i], b.message ? b.message : "");
        kf_build_free(&b);
        kf_candidate_free(c);
        kf__rmtree(wd);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* ---- on a GPU with compute-sanitizer ------------------------------------------- */

static void need_gpu_sanitizer(void) {
    char why[512], path[512];
    if (!kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    if (kf_sanitize_find(path, sizeof path, why, sizeof why)) kft_skip("needs compute-sanitizer: %s", why);
}

static kf_opts gpu_opts(unsigned tools) {
    kf_opts o;
    kf_opts_init(&o);
    o.call_timeout_s = 10;
    o.sanitize = tools;
    return o;
}

typedef struct {
    char path[512], task[128];
    unsigned tools;
} san_case;

static kf_result *check(kf_ctx *ctx, kf_task *t, const char *path, unsigned tools) {
    kf_opts o = gpu_opts(tools);
    kf_result *r = NULL;
    kf_status st = kf_check(ctx, t, path, &o, &r);
    CHECKF(st == KF_OK, "%s: no verdict: %s", path, kf_errmsg(ctx));
    return r;
}

/* The tool named in the header catches what the normal check passes. */
static void t_redteam(const void *arg) {
    const san_case *c = arg;
    need_gpu_sanitizer();
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, c->task);
    kf_result *r = check(ctx, t, c->path, 0);
    char *json = kf_result_json(r);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "the normal check should pass it: %s", json);
    free(json);
    kf_result_free(r);
    r = check(ctx, t, c->path, c->tools);
    json = kf_result_json(r);
    fprintf(stderr, "    %s\n", json);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED, "not caught: %s", json);
    CHECKF(kf_result_nreasons(r) == 1 && kf_result_reason(r, 0) == KF_REASON_SANITIZER, "reasons %s: %s",
           kft_reasons(r), json);
    free(json);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Every bundled fast kernel is clean under all three tools, and each tool really ran. */
static void t_bundled(const void *arg) {
    const char *task = arg;
    need_gpu_sanitizer();
    kf_ctx *ctx = kf_ctx_new();
    char rel[128], cand[160];
    snprintf(rel, sizeof rel, "tasks/cuda/%s", task);
    snprintf(cand, sizeof cand, "%s/candidates/fast.cu", rel);
    kf_task *t = kft_task(ctx, rel);
    kf_result *r = check(ctx, t, kft_src(cand), KF_SANITIZE_ALL);
    char *json = kf_result_json(r);
    fprintf(stderr, "    %.2000s\n", json);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "falsely rejected: %s", json);
    json_error_t e;
    json_t *j = json_loads(json, 0, &e), *san = json_object_get(j, "sanitizer");
    const char *tools[] = {"memcheck", "racecheck", "initcheck"};
    for (int i = 0; i < 3; i++) {
        json_t *o = json_object_get(san, tools[i]);
        CHECKF(json_is_true(json_object_get(o, "ran")) &&
                   json_integer_value(json_object_get(o, "errors")) == 0,
               "%s did not run clean: %s", tools[i], json);
    }
    json_decref(j);
    free(json);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void add_redteam(void) {
    const char *rel = "tests/redteam/cuda_sanitize";
    DIR *d = opendir(kft_src(rel));
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".cu")) continue;
        san_case *c = calloc(1, sizeof *c);
        char rp[512], *text = NULL;
        size_t n;
        snprintf(rp, sizeof rp, "%s/%s", rel, e->d_name);
        snprintf(c->path, sizeof c->path, "%s", kft_src(rp));
        if (kf__read_file(c->path, 1 << 20, &text, &n)) continue;
        char *nl = strchr(text, '\n');
        if (nl) *nl = 0;
        char *tk = strstr(text, "task="), *sz = strstr(text, "sanitize=");
        if (tk) snprintf(c->task, sizeof c->task, "%.*s", (int)strcspn(tk + 5, " *"), tk + 5);
        if (sz) {
            char list[128];
            snprintf(list, sizeof list, "%.*s", (int)strcspn(sz + 9, " *"), sz + 9);
            c->tools = kf_sanitize_parse_tools(list);
        }
        free(text);
        if (!c->task[0] || !c->tools) {
            fprintf(stderr, "%s: no task= or sanitize= in its header; not registered\n", c->path);
            free(c);
            continue;
        }
        char name[256];
        snprintf(name, sizeof name, "sanitize/redteam/%s", e->d_name);
        kft_add(name, t_redteam, c, 600);
    }
    if (d) closedir(d);
}

void kft_register_sanitize(void) {
    kft_add("sanitize/parse", t_parse, NULL, 30);
    kft_add("sanitize/cli", t_cli, NULL, 60);
    kft_add("sanitize/wrapper", t_wrapper, NULL, 60);
    kft_add("sanitize/run_flow", t_run_flow, NULL, 120);
    kft_add("sanitize/redteam_build", t_redteam_build, NULL, 120);
    add_redteam();
    for (int i = 0; kft_cuda_tasks[i]; i++) {
        char name[128];
        snprintf(name, sizeof name, "sanitize/bundled/%s", kft_cuda_tasks[i]);
        kft_add(name, t_bundled, kft_cuda_tasks[i], 600);
    }
}

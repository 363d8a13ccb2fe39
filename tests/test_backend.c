/*
 * test_backend.c - the generic backend tests, run against every backend of the build and
 * every backend that exists only in the tests (tests/backend_<name>/): the interface is
 * complete (its version, its names, the mandatory slot), the registry finds it by name
 * and extension and refuses an incomplete or clashing one, the wrappers give the
 * documented default of every slot it leaves NULL, and on its sum task (tasks/<name>/sum,
 * or tests/backend_<name>/sum) its reference builds and garbage does not, the task's
 * fast candidate is accepted and timed, a wrong one (candidates/wrong.<ext>, where
 * there is one) is rejected, and a run that kept the fast one exports it (with the
 * backend's dispatcher, or without one when it has no dispatcher slot). A backend whose calls need a device
 * skips what runs calls where its describe slot finds none.
 */
#include "kft.h"

#include "backend/backend.h"
#include "store/store.h"
#include "task/task.h"
#include "util/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The backends that exist only in the tests, one line each: X(NAME) for the constructor
 * kft_backend_NAME(void) in tests/backend_NAME/. Every test here registers them in its
 * own process, so the rest of the suite sees the build's registry alone. */
#define KFT_BACKENDS(X) X(test)
#define DECLARE(NAME) kf_backend *kft_backend_##NAME(void);
#define ENTRY(NAME) kft_backend_##NAME,
KFT_BACKENDS(DECLARE)
static kf_backend *(*const test_backends[])(void) = {KFT_BACKENDS(ENTRY)};
#define NTEST ((int)(sizeof test_backends / sizeof test_backends[0]))

static kf_backend *backend(const char *name) {
    kf_ctx *ctx = kf_ctx_new();
    for (int i = 0; i < NTEST; i++)
        if (!kf_backend_get(kf_backend_name(test_backends[i]())))
            CHECKF(kf_backend_register(ctx, test_backends[i]()) == KF_OK, "%s", kf_errmsg(ctx));
    kf_ctx_free(ctx);
    kf_backend *b = kf_backend_get(name);
    CHECKF(b, "backend %s is not registered", name);
    return b;
}

/* The backend's sum task, relative to the source tree. */
static const char *fixture(const kf_backend *b, char *out, size_t n) {
    snprintf(out, n, "tasks/%s/sum", kf_backend_name(b));
    if (access(kft_src(out), R_OK)) snprintf(out, n, "tests/backend_%s/sum", kf_backend_name(b));
    return out;
}

/* A candidate of the fixture: candidates/<stem>.<ext>, or NULL when it has none. */
static const char *candidate(const kf_backend *b, const char *rel, const char *stem) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/candidates/%s.%s", kft_src(rel), stem, kf_backend_ext(b));
    return access(path, R_OK) ? NULL : path;
}

/* Skip unless b's calls can run here: a device backend needs its device. */
static void need_device(kf_backend *b) {
    if (!kf_backend_has(b, KF_BACKEND_DEVICE)) return;
    kf_ctx *ctx = kf_ctx_new();
    char *json = NULL;
    kf_status st = kf_backend_describe(b, ctx, 0, 0, &json);
    free(json);
    if (st) kft_skip("backend %s needs a device: %s", kf_backend_name(b), kf_errmsg(ctx));
    kf_ctx_free(ctx);
}

static void t_interface(const void *arg) {
    kf_backend *b = backend(arg);
    const struct kf_backend_i *f = &b->iface;
    CHECK(f->api_version == KF_BACKEND_API_VERSION);
    CHECK(f->name && !strcmp(f->name, arg) && f->ext && *f->ext && f->reference && *f->reference && f->lang &&
          *f->lang);
    CHECK(f->compile);
    CHECK(kf_backend_get(f->name) == b && kf_backend_by_ext(f->ext) == b && !kf_backend_reserved(f->name));
    /* a call runs on this machine's CPUs or on a device, not both */
    CHECK(!kf_backend_has(b, KF_BACKEND_CPU | KF_BACKEND_DEVICE));
    char names[512];
    kf_backend_names(0, " and ", names, sizeof names);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", f->name);
    CHECKF(strstr(names, quoted), "%s", names);
    /* the registry takes it once, and refuses an incomplete copy for what it lacks */
    kf_ctx *ctx = kf_ctx_new();
    CHECK(kf_backend_register(ctx, b) == KF_EUSAGE && strstr(kf_errmsg(ctx), "taken"));
    static kf_backend copy;
    copy = *b;
    copy.iface.name = "kft_other";
    copy.iface.ext = "kfto";
    copy.iface.api_version = KF_BACKEND_API_VERSION + 1;
    CHECK(kf_backend_register(ctx, &copy) == KF_EUSAGE && strstr(kf_errmsg(ctx), "version"));
    copy.iface.api_version = KF_BACKEND_API_VERSION;
    copy.iface.compile = NULL;
    CHECK(kf_backend_register(ctx, &copy) == KF_EUSAGE && strstr(kf_errmsg(ctx), "compile"));
    copy.iface.compile = f->compile;
    copy.iface.reference = NULL;
    CHECK(kf_backend_register(ctx, &copy) == KF_EUSAGE && strstr(kf_errmsg(ctx), "reference"));
    copy.iface.reference = f->reference;
    copy.iface.ext = f->ext;
    CHECK(kf_backend_register(ctx, &copy) == KF_EUSAGE && strstr(kf_errmsg(ctx), "taken"));
    copy.iface.ext = "kfto";
    copy.iface.name = "opencl";
    CHECK(kf_backend_register(ctx, &copy) == KF_EUSAGE && strstr(kf_errmsg(ctx), "taken"));
    copy.iface.name = "kft_other";
    CHECKF(kf_backend_register(ctx, &copy) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(kf_backend_get("kft_other") == &copy && kf_backend_by_ext("kfto") == &copy);
    kf_ctx_free(ctx);
}

/* What each wrapper gives for a slot the backend leaves NULL (backend.h). */
static void t_defaults(const void *arg) {
    kf_backend *b = backend(arg);
    const struct kf_backend_i *f = &b->iface;
    kf_build bd;
    memset(&bd, 0, sizeof bd);
    kf_call_result cr;
    memset(&cr, 0, sizeof cr);
    cr.worker_ns = 1234;
    cr.dev_ns = 99;
    int defaults = 0;
    if (!f->worker_opts) {
        kf_worker_opts o, o0;
        memset(&o, 0, sizeof o);
        o.start_timeout_s = 7;
        o0 = o;
        kf_backend_worker_opts(b, &bd, &o);
        CHECK(!memcmp(&o, &o0, sizeof o) && !kf_backend_starts_early(b, &o));
        defaults++;
    }
    if (!f->stage) {
        unsigned char arena[256] = {0};
        kf_layout lay;
        memset(&lay, 0, sizeof lay);
        kf_msg_run m, m0;
        memset(&m, 0, sizeof m);
        m0 = m;
        kf_stage st = {NULL, NULL, arena, &lay, KF_RUN_FLUSH_L2 | KF_RUN_GRAPH};
        char err[64] = "";
        CHECK(kf_backend_stage(b, &bd, &st, &m, err, sizeof err) == 0 && !memcmp(&m, &m0, sizeof m));
        defaults++;
    }
    if (!f->clock) {
        CHECK(kf_backend_clock(b, &cr) == 1234);
        defaults++;
    }
    if (!f->ceilings) {
        kf_ceil_out co;
        memset(&co, 0xff, sizeof co);
        CHECK(!kf_backend_has_ceilings(b) && !kf_backend_ceilings(b, NULL, &co) && co.has == 0 && !co.error &&
              !co.device);
        defaults++;
    }
    if (!f->roofline) {
        char why[64] = "x";
        kf_roof_in in = {NULL, 1e9, 1e9, 1, 1};
        kf_roof_out ro;
        memset(&ro, 0xff, sizeof ro);
        CHECK(kf_backend_roofline(b, NULL, &in, &ro, why, sizeof why) == 0 && !why[0] && ro.has == 0);
        defaults++;
    }
    if (!f->plan) {
        int host = 5, graph = 5;
        kf_backend_plan(b, &bd, &bd, 1, &host, &graph);
        CHECK(host == 0 && graph == 0);
        defaults++;
    }
    if (!f->fair) {
        kf_launch_seen seen = {1, 0, 3};
        kf_fair_out fo;
        memset(&fo, 0xff, sizeof fo);
        CHECK(kf_backend_fair(b, &bd, &seen, &bd, 1, &seen, &fo) == 1 && !fo.reported && !fo.cand_mode &&
              fo.launches == -1 && !fo.note[0]);
        defaults++;
    }
    if (!f->libraries) {
        char bad[64] = "x";
        CHECK(!kf_backend_watches_libraries(b, &bd));
        CHECK(kf_backend_undeclared(b, &bd, "libcublas.so.13,libcudnn.so.9", bad, sizeof bad) == 0 &&
              !bad[0]);
        defaults++;
    }
    if (!f->report_build) {
        kf_build_out bo;
        memset(&bo, 0xff, sizeof bo);
        kf_backend_report_build(b, &bd, &bo);
        CHECK(!bo.launch_mode && !bo.libraries);
        defaults++;
    }
    if (!f->report_call) {
        kf_call_out co;
        memset(&co, 0xff, sizeof co);
        kf_backend_report_call(b, &bd, &cr, &co);
        CHECK(!co.reported && co.nkernels == 0);
        defaults++;
    }
    if (!f->report_sandbox) {
        kf_sandbox_out so;
        memset(&so, 0xff, sizeof so);
        kf_backend_report_sandbox(b, &bd, NULL, &so);
        CHECK(so.seccomp == 1 && !so.gpu_kernel_mode && !so.gpu_host_mode);
        defaults++;
    }
    if (!f->resources) {
        kf_resources_out ro;
        memset(&ro, 0xff, sizeof ro);
        kf_backend_resources(b, &bd, NULL, NULL, "", NULL, &ro);
        CHECK(!ro.reported && ro.nkernels == 0 && ro.nlaunches == 0);
        defaults++;
    }
    if (!f->describe) {
        char *json = (char *)"x";
        kf_ctx *ctx = kf_ctx_new();
        CHECK(kf_backend_describe(b, ctx, 0, 0, &json) == KF_EBACKEND && !json);
        kf_ctx_free(ctx);
        defaults++;
    }
    if (!f->dispatcher) {
        int alone = 0;
        kf_buf out;
        kf_buf_init(&out, 1u << 16);
        kf_winner w = {1, (char *)"", 0, NULL, NULL, 1.0, "c", ""};
        kf_dispatch_out d;
        kf_ctx *ctx = kf_ctx_new();
        CHECK(!kf_backend_has_dispatcher(b));
        CHECKF(kf_backend_dispatcher(b, ctx, NULL, "run", &w, 1, 0, NULL, 0, &out, &d, &alone) == KF_EUSAGE &&
                   alone && strstr(kf_errmsg(ctx), f->name) && !out.len && !d.nroutes && !d.nnotes,
               "%s", kf_errmsg(ctx));
        kf_dispatch_out_free(&d);
        kf_ctx_free(ctx);
        kf_buf_free(&out);
        defaults++;
    }
    CHECK(kf_backend_timing_rounds(b) >= 0);
    printf("    %s: %d optional slots left to their defaults\n", f->name, defaults);
}

static void t_compile(const void *arg) {
    kf_backend *b = backend(arg);
    char rel[256];
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, fixture(b, rel, sizeof rel));
    char *slash = strrchr(t->ref_path, '/');
    CHECKF(!strcmp(t->backend, kf_backend_name(b)) && slash && !strcmp(slash + 1, kf_backend_reference(b)),
           "%s", t->ref_path);
    char wd[] = "/tmp/kft-backend-XXXXXX";
    CHECK(mkdtemp(wd));
    char *ref = NULL;
    size_t rlen = 0;
    CHECK(kf__read_file(t->ref_path, 1u << 20, &ref, &rlen) == 0);
    kf_build bd;
    kf_status st = kf_backend_compile(b, ctx, t, t->ref_path, ref, rlen, NULL, 0, wd, 120, &bd);
    if (st == KF_EBACKEND) {
        kf__rmtree(wd);
        kft_skip("backend %s cannot build here: %s", kf_backend_name(b), kf_errmsg(ctx));
    }
    CHECKF(st == KF_OK && bd.ok && bd.so_path && !access(bd.so_path, R_OK), "%s: %s", kf_errmsg(ctx),
           bd.message ? bd.message : "");
    kf_build_free(&bd);
    /* garbage does not build: a compile error with a message, not a failure of kforge */
    static const char junk[] = "@@ this is not a kernel @@\n";
    char jpath[4200];
    snprintf(jpath, sizeof jpath, "%s/junk.%s", wd, kf_backend_ext(b));
    st = kf_backend_compile(b, ctx, t, jpath, junk, sizeof junk - 1, NULL, 0, wd, 120, &bd);
    CHECKF(st == KF_OK && !bd.ok && bd.reason == KF_REASON_COMPILE_ERROR && bd.message && bd.message[0], "%s",
           kf_errmsg(ctx));
    kf_build_free(&bd);
    /* the wrapper checks its arguments before any slot runs */
    CHECK(kf_backend_compile(b, ctx, t, jpath, NULL, 0, NULL, 0, wd, 120, &bd) == KF_EUSAGE);
    free(ref);
    kf__rmtree(wd);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void t_check(const void *arg) {
    kf_backend *b = backend(arg);
    need_device(b);
    char rel[256];
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, fixture(b, rel, sizeof rel));
    const char *fast = candidate(b, rel, "fast");
    CHECKF(fast, "%s has no candidates/fast.%s", rel, kf_backend_ext(b));
    kf_result *r = kft_check(ctx, t, fast, NULL, 0);
    char *js = kf_result_json(r);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", js);
    json_t *j = json_loads(js, 0, NULL), *sb = json_object_get(j, "sandbox");
    CHECKF(json_is_true(json_object_get(json_object_get(j, "compile"), "ok")) &&
               json_is_boolean(json_object_get(sb, "seccomp")),
           "%s", js);
    if (kf_backend_has(b, KF_BACKEND_CPU)) CHECKF(json_is_true(json_object_get(sb, "seccomp")), "%s", js);
    size_t i;
    json_t *sh;
    json_array_foreach(json_object_get(j, "shapes"), i, sh)
        CHECKF(!strcmp(json_string_value(json_object_get(sh, "status")), "passed"), "%s", js);
    json_decref(j);
    free(js);
    kf_result_free(r);
    const char *wrong = candidate(b, rel, "wrong");
    if (wrong) {
        r = kft_check(ctx, t, wrong, NULL, 0);
        CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED && strstr(kft_reasons(r), "wrong_result"), "%s",
               kft_reasons(r));
        kf_result_free(r);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void t_bench(const void *arg) {
    kf_backend *b = backend(arg);
    need_device(b);
    char rel[256];
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, fixture(b, rel, sizeof rel));
    kf_opts o;
    kf_opts_init(&o);
    o.bench_min_time_s = 0.05;
    o.bench_min_runs = 6;
    kf_result *r = NULL;
    kf_status st = kf_bench(ctx, t, candidate(b, rel, "fast"), &o, &r);
    CHECKF(st == KF_OK, "%s", kf_errmsg(ctx));
    char *js = kf_result_json(r);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED && kf_result_speedup(r) > 0, "%s", js);
    json_t *j = json_loads(js, 0, NULL);
    size_t i;
    json_t *sh;
    CHECKF(json_array_size(json_object_get(j, "shapes")) > 0, "%s", js);
    json_array_foreach(json_object_get(j, "shapes"), i, sh) {
        CHECKF(json_number_value(json_object_get(sh, "speedup")) > 0 &&
                   json_number_value(json_object_get(sh, "candidate_ns")) > 0 &&
                   json_integer_value(json_object_get(sh, "runs")) >= 6,
               "%s", js);
        /* the task has a cost model: rates wherever the backend has ceilings */
        if (kf_backend_has_ceilings(b)) CHECKF(json_object_get(sh, "gbytes_per_s"), "%s", js);
    }
    CHECKF(!kf_backend_has_ceilings(b) == !json_object_get(j, "ceilings"), "%s", js);
    json_decref(j);
    free(js);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* kforge export of a run whose one kept node is the fast candidate: its winner is
 * written, and the dispatcher is the backend's slot's (written, or said why not), or with
 * no slot there is none and EXPORT.json says so. */
static void t_export(const void *arg) {
    kf_backend *b = backend(arg);
    need_device(b);
    char rel[256], dir[] = "/tmp/kft-bexport-XXXXXX", run[512], out[512];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, fixture(b, rel, sizeof rel));
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    char *src = NULL;
    size_t len = 0;
    CHECK(kf__read_file(candidate(b, rel, "fast"), 1u << 20, &src, &len) == 0);
    int64_t id = kft_kept_node(st, t, src, len, kf_backend_ext(b), 1.5);
    kf_store_close(st);
    kf_opts o;
    kf_opts_init(&o);
    o.bench_min_time_s = 0.02;
    o.bench_min_runs = 6;
    char *js = NULL;
    CHECKF(kf_run_export_opts(ctx, run, out, &o, &js) == KF_OK && js, "%s", kf_errmsg(ctx));
    json_t *doc = json_loads(js, 0, NULL);
    char wname[600], path[1200];
    snprintf(wname, sizeof wname, "%s_%lld.%s", t->name, (long long)id, kf_backend_ext(b));
    snprintf(path, sizeof path, "%s/%s", out, wname);
    CHECKF(!access(path, R_OK) && json_integer_value(json_object_get(doc, "fallback")) == id, "%s", js);
    const char *disp = json_string_value(json_object_get(doc, "dispatcher"));
    const char *why = json_string_value(json_object_get(doc, "why"));
    if (kf_backend_has_dispatcher(b)) {
        CHECKF(disp || why, "%s", js);
    } else {
        CHECKF(!disp && json_is_null(json_object_get(doc, "dispatcher")) && why &&
                   strstr(why, "no dispatcher slot"),
               "%s", js);
    }
    json_decref(doc);
    free(js);
    free(src);
    kf__rmtree(dir);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

void kft_register_backend(void) {
    static char names[16][32];
    int k = 0;
    kf_backend *b;
    for (int i = 0; (b = kf_backend_at(i)) && k < 16; i++)
        snprintf(names[k++], sizeof names[0], "%s", kf_backend_name(b));
    for (int i = 0; i < NTEST && k < 16; i++)
        snprintf(names[k++], sizeof names[0], "%s", kf_backend_name(test_backends[i]()));
    static const struct {
        const char *what;
        kft_fn fn;
        double timeout;
    } tests[] = {
        {"interface", t_interface, 30}, {"defaults", t_defaults, 30}, {"compile", t_compile, 180},
        {"check", t_check, 180},        {"bench", t_bench, 300},      {"export", t_export, 180},
    };
    for (int i = 0; i < k; i++)
        for (size_t j = 0; j < sizeof tests / sizeof tests[0]; j++) {
            char name[96];
            snprintf(name, sizeof name, "backend/%s/%s", names[i], tests[j].what);
            kft_add(name, tests[j].fn, names[i], tests[j].timeout);
        }
}

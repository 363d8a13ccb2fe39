/*
 * test_cuda_run.c - the CUDA backend's run-side slots (src/backend/cuda/run.c) on made-up
 * builds, without a GPU: what a GPU worker is told of a call (span, launches, KF_RUN_*
 * flags), the timing plan and the fairness rule with what they report, the sandbox,
 * build and resource reports, the clock, the library policy and the roofline's rates
 * and refusal. The GPU tests run the same slots on a device.
 */
#include "kft.h"

#include "backend/backend.h"
#include "backend/cuda/cuda_api.h"
#include "backend/cuda/device.h"
#include "backend/cuda/run.h"
#include "check/verdict.h"
#include "task/task.h"
#include "util/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A backend report as the document carries it: the verdict's writer over a verdict
 * holding only that report (the record's or the sandbox's other keys left out). The
 * typed slots must give the document the keys docs/cli.md lists, in its order. */
static char *record_keys(struct kf_verdict *v, const char *const *drop) {
    json_t *doc = kf_verdict_to_json(v), *rec = json_array_get(json_object_get(doc, "shapes"), 0);
    for (int i = 0; drop[i]; i++) json_object_del(rec, drop[i]);
    char *js = json_dumps(rec, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(doc);
    kf_verdict_free(v);
    return js;
}

static const char *const no_sizes[] = {"sizes", NULL};

static char *fair_keys(const kf_fair_out *f, int fair) {
    struct kf_verdict v;
    kf_verdict_init(&v);
    kf_verdict_set_fair(&v, kf_verdict_add_shape(&v), f, fair);
    return record_keys(&v, no_sizes);
}

static char *call_keys(const kf_call_out *c) {
    struct kf_verdict v;
    kf_verdict_init(&v);
    kf_verdict_set_call(&v, kf_verdict_add_shape(&v), c);
    return record_keys(&v, no_sizes);
}

static char *roof_keys(const kf_roof_out *r) {
    struct kf_verdict v;
    kf_verdict_init(&v);
    kf_verdict_set_roof(&v, kf_verdict_add_shape(&v), r);
    return record_keys(&v, no_sizes);
}

/* The document's "resources" of a resource report measured at n=1000 (NULL: none), from
 * the verdict's writer. */
static char *res_keys(const kf_resources_out *r) {
    struct kf_verdict v;
    kf_verdict_init(&v);
    kf_verdict_sizes at;
    const char *n[1] = {"n"};
    int64_t val[1] = {1000};
    kf_verdict_sizes_set(&v, &at, 1, n, val);
    CHECK(kf_verdict_set_resources(&v, r, &at) == 0);
    json_t *doc = kf_verdict_to_json(&v), *o = json_object_get(doc, "resources");
    char *js = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(doc);
    kf_verdict_free(&v);
    return js;
}

/* the document's keys of a build report, or the sandbox object's of a sandbox report */
static char *doc_keys(const kf_build_out *b, const kf_sandbox_out *sb) {
    struct kf_verdict v;
    kf_verdict_init(&v);
    if (b) kf_verdict_set_build(&v, b);
    if (sb) kf_verdict_set_sandbox(&v, sb);
    json_t *doc = kf_verdict_to_json(&v), *o = sb ? json_object_get(doc, "sandbox") : doc,
           *keep = json_object();
    static const char *const keys[] = {"launch_mode", "libraries", "seccomp", "gpu_kernel_mode",
                                       "gpu_host_mode"};
    const char *k;
    json_t *x;
    json_object_foreach(o, k, x) {
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            if (!strcmp(k, keys[i])) json_object_set(keep, k, x);
    }
    char *js = json_dumps(keep, JSON_COMPACT);
    json_decref(keep);
    json_decref(doc);
    kf_verdict_free(&v);
    return js;
}

/* A kernel-mode build of one kernel "k" launched once (grid and block from exprs). */
static void kernel_build(kf_build *b, const char *grid, const char *block) {
    memset(b, 0, sizeof *b);
    char err[128];
    b->nlaunch = 1;
    b->nkernels = 1;
    b->kernels[0].name = kf__strdup("k");
    b->kernels[0].regs = 32;
    b->kernels[0].spill_stores = b->kernels[0].spill_loads = 0;
    b->kernels[0].smem_static = 0;
    b->launch[0].kernel = 0;
    b->launch[0].line = 3;
    if (grid) CHECKF(b->launch[0].dim[0] = kf_expr_parse(grid, err, sizeof err), "%s", err);
    if (block) CHECKF(b->launch[0].dim[3] = kf_expr_parse(block, err, sizeof err), "%s", err);
    snprintf(b->arch, sizeof b->arch, "sm_90");
}

static void t_stage(const void *arg) {
    (void)arg;
    kf_backend *be = kf_backend_get("cuda");
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sum");
    kf_extents ex;
    char err[300];
    CHECKF(kf_data_extents(t, &t->shapes[0], &ex, err, sizeof err) == 0, "%s", err);
    kf_layout lay;
    memset(&lay, 0, sizeof lay);
    lay.lo = 64, lay.end = 4096;
    static unsigned char arena[8192];
    kf_build b;
    kernel_build(&b, "(n + 255) / 256", "256");
    kf_msg_run m;
    memset(&m, 0, sizeof m);
    kf_stage st = {t, &ex, arena, &lay, KF_RUN_FLUSH_L2 | KF_RUN_WAIT_IDLE | KF_RUN_GRAPH};
    CHECK(kf_backend_stage(be, &b, &st, &m, err, sizeof err) == 0);
    CHECK(m.span_lo == 64 && m.span_hi == 4096 && m.nlaunch == 1 && m.kernel[0] == 0);
    CHECKF(m.dims[0][0] == (uint32_t)((ex.size[0] + 255) / 256) && m.dims[0][1] == 1 && m.dims[0][3] == 256 &&
               m.dims[0][6] == 0,
           "%u %u %u", m.dims[0][0], m.dims[0][3], m.dims[0][6]);
    CHECK(m.flags == (KF_RUN_FLUSH_L2 | KF_RUN_WAIT_IDLE | KF_RUN_GRAPH));
    /* host mode: its own timing protocol always, and no graph of kforge's launches */
    kf_build h;
    memset(&h, 0, sizeof h);
    h.host = 1;
    memset(&m, 0, sizeof m);
    st.flags = KF_RUN_GRAPH | KF_RUN_PRECISE;
    CHECK(kf_backend_stage(be, &h, &st, &m, err, sizeof err) == 0);
    CHECK(m.flags == (KF_RUN_HOST_TIMING | KF_RUN_PRECISE) && m.nlaunch == 0);
    for (int i = 0; i < t->nargs; i++)
        CHECK(m.len[i] == (t->args[i].is_buffer ? ex.bytes[i] : 0) &&
              m.io[i] == (t->args[i].io == KF_IO_IN    ? KF_IO_ARG_IN
                          : t->args[i].io == KF_IO_OUT ? KF_IO_ARG_OUT
                                                       : KF_IO_ARG_INOUT));
    /* a launch that cannot be made at this shape fails the call */
    kf_build_free(&b);
    kernel_build(&b, "1", "2048");
    memset(&m, 0, sizeof m);
    CHECK(kf_backend_stage(be, &b, &st, &m, err, sizeof err) == -1);
    CHECKF(strstr(err, "line 3: kforge:launch block"), "%s", err);
    kf_build_free(&b);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void t_plan_fair(const void *arg) {
    (void)arg;
    kf_backend *be = kf_backend_get("cuda");
    kf_build k, h;
    kernel_build(&k, "1", "1");
    memset(&h, 0, sizeof h);
    h.host = 1;
    int host = -1, graph = -1;
    kf_backend_plan(be, &h, &k, 1, &host, &graph);
    CHECK(host == 1 && graph == 1);
    kf_backend_plan(be, &k, &k, 0, &host, &graph);
    CHECK(host == 0 && graph == 0);
    kf_backend_plan(be, &k, &h, 1, &host, &graph);
    CHECK(host == 1 && graph == 0); /* a host-mode baseline is not captured */
    /* a graph-replaying candidate against a baseline launched kernel by kernel */
    kf_launch_seen graph_seen = {1, 1, 4}, none = {0, 1, -1}, unknown = {0, 0, -1};
    kf_fair_out fo;
    int fair = kf_backend_fair(be, &h, &graph_seen, &k, 0, &none, &fo);
    CHECK(fair == 0);
    char *js = fair_keys(&fo, fair);
    CHECKF(
        !strcmp(js,
                "{\"launch_mode\":{\"candidate\":\"graph\",\"baseline\":\"kernel\"},\"graph_use\":\"yes\","
                "\"launches_per_call\":4,\"fair\":false,\"fair_reason\":\"the candidate replays a CUDA graph "
                "and the baseline is launched kernel by kernel (no graph use was seen during the check), so "
                "the launch overhead the graph saves is not a kernel speedup\"}"),
        "%s", js);
    free(js);
    /* against a graph baseline it is fair; unknown graph use is noted */
    fair = kf_backend_fair(be, &h, &graph_seen, &k, 1, &none, &fo);
    js = fair_keys(&fo, fair);
    CHECKF(fair == 1 && strstr(js, "\"fair\":true"), "%s", js);
    free(js);
    fair = kf_backend_fair(be, &h, &unknown, &k, 0, &none, &fo);
    js = fair_keys(&fo, fair);
    CHECKF(fair == 1 && strstr(js, "\"graph_use\":\"unknown\"") && strstr(js, "\"fair_note\":"), "%s", js);
    free(js);
    fair = kf_backend_fair(be, &k, &none, &k, 0, &none, &fo);
    js = fair_keys(&fo, fair);
    CHECKF(fair == 1 && !strstr(js, "graph_use") && strstr(js, "\"launch_mode\":{\"candidate\":\"kernel\""),
           "%s", js);
    free(js);
    kf_build_free(&k);
}

static void t_reports(const void *arg) {
    (void)arg;
    kf_backend *be = kf_backend_get("cuda");
    kf_build k, h, none;
    kernel_build(&k, "1", "128");
    memset(&h, 0, sizeof h);
    h.host = 1;
    h.libraries = kf__strdup("cublas,libcublas.so.13");
    memset(&none, 0, sizeof none);
    kf_sandbox_out so;
    kf_backend_report_sandbox(be, &k, NULL, &so);
    char *js = doc_keys(NULL, &so);
    CHECKF(!strcmp(js, "{\"seccomp\":false,\"gpu_kernel_mode\":true}"), "%s", js);
    free(js);
    kf_backend_report_sandbox(be, &h, NULL, &so);
    js = doc_keys(NULL, &so);
    CHECKF(!strcmp(js, "{\"seccomp\":false,\"gpu_host_mode\":true}"), "%s", js);
    free(js);
    kf_build_out bo;
    kf_backend_report_build(be, &h, &bo);
    js = doc_keys(&bo, NULL);
    CHECKF(!strcmp(js, "{\"launch_mode\":\"host\",\"libraries\":[\"cublas\",\"libcublas.so.13\"]}"), "%s",
           js);
    free(js);
    kf_backend_report_build(be, &none, &bo); /* not a GPU artifact: nothing */
    js = doc_keys(&bo, NULL);
    CHECKF(!strcmp(js, "{}"), "%s", js);
    free(js);
    /* launch counts: host mode only */
    kf_call_result cr;
    memset(&cr, 0, sizeof cr);
    kf_call_out co;
    kf_backend_report_call(be, &k, &cr, &co);
    CHECK(!co.reported);
    kf_backend_report_call(be, &h, &cr, &co);
    js = call_keys(&co);
    CHECKF(
        !strcmp(js, "{\"launch_count\":null,\"launch_note\":\"CUPTI not available: launches not counted\"}"),
        "%s", js);
    free(js);
    /* resources: kernel mode, from the build and the worker's report, as the document
     * writes them (the keys, types and order of the report before it was typed) */
    int64_t sizes[1] = {1000};
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sum");
    uint32_t occ[KF_PROTO_MAXLAUNCH] = {8, 3};
    kf_resources_out ro;
    kf_backend_resources(be, &k, t, sizes, "max_threads_per_sm=2048 kernel 0 regs=40 local=8 shared=1024",
                         occ, &ro);
    js = res_keys(&ro);
    CHECKF(
        !strcmp(js,
                "{\"arch\":\"sm_90\",\"kernels\":[{\"kernel\":\"k\",\"registers\":40,\"spill_store_bytes\":0,"
                "\"spill_load_bytes\":0,\"static_smem_bytes\":1024,\"local_bytes_per_thread\":8}],"
                "\"launches\":[{\"kernel\":\"k\",\"grid\":[1,1,1],\"block\":[128,1,1],\"dynamic_smem_"
                "bytes\":0,\"blocks_per_sm\":8,\"occupancy\":0.5}],\"at\":{\"n\":1000}}"),
        "%s", js);
    free(js);
    /* a second kernel without spill counts, launched with dynamic shared memory; the
     * worker reported nothing (no occupancy, the compiler's registers) */
    char err[128];
    k.nkernels = k.nlaunch = 2;
    k.kernels[1].name = kf__strdup("k2");
    k.kernels[1].regs = 16, k.kernels[1].spill_stores = k.kernels[1].spill_loads = -1;
    k.kernels[1].smem_static = 64;
    k.launch[1].kernel = 1;
    CHECK(k.launch[1].dim[6] = kf_expr_parse("4 * n", err, sizeof err));
    kf_backend_resources(be, &k, t, sizes, "", NULL, &ro);
    js = res_keys(&ro);
    CHECKF(
        !strcmp(
            js,
            "{\"arch\":\"sm_90\",\"kernels\":[{\"kernel\":\"k\",\"registers\":32,\"spill_store_bytes\":0,"
            "\"spill_load_bytes\":0,\"static_smem_bytes\":0},{\"kernel\":\"k2\",\"registers\":16,"
            "\"static_smem_bytes\":64}],\"launches\":[{\"kernel\":\"k\",\"grid\":[1,1,1],\"block\":[128,1,1],"
            "\"dynamic_smem_bytes\":0},{\"kernel\":\"k2\",\"grid\":[1,1,1],\"block\":[1,1,1],"
            "\"dynamic_smem_bytes\":4000}],\"at\":{\"n\":1000}}"),
        "%s", js);
    free(js);
    /* no extents at the shape: the kernels, no launches */
    kf_backend_resources(be, &k, t, NULL, "max_threads_per_sm=2048 kernel 1 regs=20 local=0 shared=128", occ,
                         &ro);
    js = res_keys(&ro);
    CHECKF(strstr(js, "{\"kernel\":\"k2\",\"registers\":20,\"static_smem_bytes\":128,"
                      "\"local_bytes_per_thread\":0}],\"launches\":[],\"at\":{\"n\":1000}}"),
           "%s", js);
    free(js);
    /* host mode: no report, no "resources" */
    kf_backend_resources(be, &h, t, sizes, "", occ, &ro);
    CHECK(!ro.reported);
    js = res_keys(&ro);
    CHECK(!js);
    /* the clock, the worker and the library policy */
    cr.worker_ns = 5000, cr.dev_ns = 1200;
    CHECK(kf_backend_clock(be, &cr) == 1200);
    kf_worker_opts wo;
    memset(&wo, 0, sizeof wo);
    CHECK(kf_backend_starts_early(be, &wo) && wo.device && wo.start_timeout_s == 60 && wo.env_settings &&
          wo.env_pass);
    CHECK(kf_backend_watches_libraries(be, &h) && !kf_backend_watches_libraries(be, &k));
    char bad[256];
    CHECK(kf_backend_undeclared(be, &h, "libcublas.so.13,libcublasLt.so.13,libcudnn.so.9", bad, sizeof bad) ==
              1 &&
          !strcmp(bad, "libcudnn.so.9"));
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf_build_free(&k);
    kf_build_free(&h);
}

/* The document's "ceilings" of a ceilings report, from the verdict's writer, and that
 * the verdict read back from it writes the same. */
static char *ceil_keys(const kf_ceil_out *c) {
    struct kf_verdict v, back;
    kf_verdict_init(&v);
    CHECK(kf_verdict_set_ceilings(&v, c, 0) == 0);
    json_t *doc = kf_verdict_to_json(&v);
    CHECK(kf_verdict_from_json(doc, &back) == 0);
    json_t *again = kf_verdict_to_json(&back);
    char *js = json_dumps(json_object_get(doc, "ceilings"), JSON_COMPACT | JSON_REAL_PRECISION(6));
    char *js2 = json_dumps(json_object_get(again, "ceilings"), JSON_COMPACT | JSON_REAL_PRECISION(6));
    CHECKF(js && js2 && !strcmp(js, js2), "%s / %s", js, js2);
    free(js2);
    json_decref(again);
    json_decref(doc);
    kf_verdict_free(&back);
    kf_verdict_free(&v);
    return js;
}

/* The ceilings slots as the document writes them (the keys, types and order of the
 * reports before they were typed): this machine's (pinned), a device that cannot be
 * reached, and the stand-in driver's H200 (tests/fake_libcuda.c), measured and then
 * from the cache. */
static void t_ceilings(const void *arg) {
    (void)arg;
    char tmp[] = "/tmp/kft-ceil-XXXXXX", exp[512];
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    setenv("KFORGE_CEILINGS", "2.5e10,1.25e11", 1);
    kf_ctx *ctx = kf_ctx_new();
    kf_ceil_out co;
    void *c = kf_backend_ceilings(kf_backend_get("c"), ctx, &co);
    CHECK(c);
    free(c);
    char *js = ceil_keys(&co);
    snprintf(exp, sizeof exp, "{\"bytes_per_s\":2.5e10,\"flops_per_s\":1.25e11,\"cores\":%ld}",
             sysconf(_SC_NPROCESSORS_ONLN));
    CHECKF(!strcmp(js, exp), "%s", js);
    free(js);
    kf_backend *be = kf_backend_get("cuda");
    /* no driver (in a child: the driver, once loaded, stays) */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (!pid) {
        setenv("KFORGE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
        void *none = kf_backend_ceilings(be, ctx, &co);
        js = ceil_keys(&co);
        int ok = !none && !strncmp(js, "{\"error\":\"", 10) && strstr(js, "libcuda") && !strchr(js, ',');
        if (!ok) fprintf(stderr, "no driver: %s\n", js);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char why[512];
    if (!kf_nvrtc_load(why, sizeof why)) {
        kf_ctx_free(ctx);
        kf__rmtree(tmp);
        kft_skip("the stand-in driver's ceilings need NVRTC: %s", why);
    }
    setenv("KFORGE_LIBCUDA", kft_bin("libkft_fakecuda.so"), 1);
    /* events 25 ms apart: copy 2 x 8 x 60 MiB, fp32 and tensor probes as device-info's */
    static const char fake[] =
        "{\"bytes_per_s\":4.02653e10,\"flops_per_s\":1.77167e11,\"tensor_flops_per_s\":7.0867e11,"
        "\"theoretical_bytes_per_s\":4.91674e12,\"peak_flops_per_s\":2.14106e15,\"l2_bytes\":62914560,"
        "\"device\":\"Fake H200\",\"uuid\":\"GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff\",\"source\":\"%s\"}";
    for (int i = 0; i < 2; i++) {
        c = kf_backend_ceilings(be, ctx, &co);
        CHECKF(c, "%s", kf_errmsg(ctx));
        js = ceil_keys(&co);
        free(c);
        snprintf(exp, sizeof exp, fake, i ? "cache" : "measured");
        CHECKF(!strcmp(js, exp), "%s", js);
        free(js);
    }
    kf_ctx_free(ctx);
    kf__rmtree(tmp);
}

/* The roofline's rates without ceilings, and its refusal below the device's floor. */
static void t_roofline(const void *arg) {
    (void)arg;
    kf_backend *be = kf_backend_get("cuda");
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sum");
    kf_roof_in in = {t, 1e6, 4e6, 1000, 2000};
    char why[1024];
    kf_roof_out ro;
    CHECK(kf_backend_roofline(be, NULL, &in, &ro, why, sizeof why) == 0 && !why[0]);
    char *js = roof_keys(&ro);
    CHECKF(!strcmp(js, "{\"gflops\":1000.0,\"gbytes_per_s\":4000.0,\"baseline_gbytes_per_s\":2000.0}"), "%s",
           js);
    free(js);
    kf_devinfo d;
    memset(&d, 0, sizeof d);
    d.cc_major = 9, d.cc_minor = 0, d.sms = 132, d.sm_clock_khz = 1980000, d.mem_clock_khz = 3201000;
    d.bus_width_bits = 6144, d.l2_bytes = 60 << 20;
    d.copy_bytes_per_s = 4.25e12, d.fp32_flops_per_s = 6.0e13, d.tensor_flops_per_s = 6.5e14;
    in.bytes = 1e10; /* 10 GB in 1 us */
    CHECK(kf_backend_roofline(be, &d, &in, &ro, why, sizeof why) == 1);
    js = roof_keys(&ro);
    CHECKF(strstr(why, "impossible: 1000 ns measured") &&
               strstr(js, "\"baseline_gbytes_per_s\":5e6,\"roofline_fraction\":") &&
               strstr(js, "\"roofline_flops_ceiling\":") && strstr(js, "\"floor_ns\":"),
           "%s %s", why, js);
    free(js);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

void kft_register_cuda_run(void) {
    kft_add("cuda/run/stage", t_stage, NULL, 30);
    kft_add("cuda/run/plan_fair", t_plan_fair, NULL, 30);
    kft_add("cuda/run/reports", t_reports, NULL, 30);
    kft_add("cuda/run/roofline", t_roofline, NULL, 30);
    kft_add("cuda/run/ceilings", t_ceilings, NULL, 60);
}

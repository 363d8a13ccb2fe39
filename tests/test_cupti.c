/*
 * test_cupti.c - host mode's launch accounting (src/backend/cuda/cupti.c). Without a GPU:
 * the library-name classifier, and the log's counting fed with fake callback records
 * (runtime launches with and without a nested driver callback count once, failures,
 * graphs, names, resets, threads); loading fails clearly. With a GPU (skipped otherwise):
 * real CUPTI counts NVRTC-compiled kernels launched through the driver API, from threads,
 * through a captured graph, through the CUDA runtime, and through cuBLAS.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "backend/cuda/cuda_api.h"
#include "backend/cuda/cupti.h"
#include "backend/cuda/cupti_abi.h"
#include "util/util.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <string.h>

/* ---- without a GPU ---------------------------------------------------------- */

static void t_classifier(const void *arg) {
    (void)arg;
    static const char *const lib[] = {
        "ampere_sgemm_128x64_nn",
        "volta_h884gemm_64x64_ldg8_nn",
        "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw",
        "_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb1ELb0ELb0EEEv",
        "_ZN7cutlass7Kernel2I58cutlass_80_simt_sgemm_128x64_8x5_nn_align1EEvNT_6ParamsE",
        "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x128x64_1x1x1_0_tnn_"
        "align8",
        "nvjet_hsh_192x192_64x4_1x2_h_bz_coopA_NTT",
        "_Z20ampere_fp16_s16816gemm",
        "cudnn::detail::wgrad_alg0_engine",
        "_Z11regular_fftILj256EEvP6float2",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "CUBLAS_internal_kernel"};
    static const char *const user[] = {"sgemm",
                                       "sgemm_tiled_64",
                                       "my_ampere_kernel",
                                       "softmax_rows",
                                       "_Z6kernelPfi",
                                       "fft_mine_radix2",
                                       "gemm_bf16",
                                       "?",
                                       "",
                                       "hopper",
                                       "xmm",
                                       "cub_like_but_not",
                                       "_Z10setup_randP17curandStateXORWOW"};
    for (size_t i = 0; i < sizeof lib / sizeof lib[0]; i++) CHECKF(kf_cupti_is_library(lib[i]), "%s", lib[i]);
    for (size_t i = 0; i < sizeof user / sizeof user[0]; i++)
        CHECKF(!kf_cupti_is_library(user[i]), "%s", user[i]);
    CHECK(!kf_cupti_is_library(NULL));
    /* a 10 kB hostile name: bounded, no crash; the marker past 511 bytes is not seen */
    static char longname[10000];
    memset(longname, 'a', sizeof longname - 1);
    CHECK(!kf_cupti_is_library(longname));
    memcpy(longname + 9000, "cublas", 6);
    CHECK(!kf_cupti_is_library(longname));
    memcpy(longname, "cublas", 6);
    CHECK(kf_cupti_is_library(longname));

    CHECK(kf_cupti__is_memop_name("cuMemcpyHtoD_v2") && kf_cupti__is_memop_name("cuMemsetD32Async"));
    CHECK(kf_cupti__is_memop_name("cudaMemcpyAsync_v3020") && kf_cupti__is_memop_name("cudaMemset2D_v3020"));
    CHECK(!kf_cupti__is_memop_name("cuMemAlloc_v2") &&
          !kf_cupti__is_memop_name("cudaGraphAddMemcpyNode_v10000"));
    CHECK(!kf_cupti__is_memop_name("cuLaunchKernel") && !kf_cupti__is_memop_name(NULL));
}

/* Feed one API call: enter and exit, with a return code and a kernel name. */
static void feed(int domain, uint32_t cbid, int site, const char *name, int ret, const void *params) {
    int rv = ret;
    kf_cupti_cbdata d = {
        .callbackSite = site, .symbolName = name, .functionReturnValue = &rv, .functionParams = params};
    kf_cupti__callback(NULL, domain, cbid, &d);
}
static void call(int domain, uint32_t cbid, const char *name, int ret) {
    feed(domain, cbid, KF_CUPTI_API_ENTER, name, 0, NULL);
    feed(domain, cbid, KF_CUPTI_API_EXIT, name, ret, NULL);
}
#define DRV KF_CUPTI_DOMAIN_DRIVER
#define RT KF_CUPTI_DOMAIN_RUNTIME

static int has_name(const kf_launch_log *l, const char *name) {
    for (int i = 0; i < l->nnames; i++)
        if (!strcmp(l->names[i], name)) return 1;
    return 0;
}

static void t_log(const void *arg) {
    (void)arg;
    kf_launch_log l;
    /* not loaded: unavailable, and the counts are zero rather than whatever was fed */
    kf_cupti_begin();
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel, "k", 0);
    kf_cupti_end(&l);
    CHECK(l.available == 0 && l.nlaunch == 0 && l.nnames == 0);

    kf_cupti__set_fake(1);
    kf_cupti_begin();
    /* driver launches, any flavour */
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel, "k1", 0);
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel_ptsz, "k1", 0);
    call(DRV, KF_CUPTI_DRV_cuLaunchKernelEx, "k2", 0);
    call(DRV, KF_CUPTI_DRV_cuLaunchCooperativeKernel, "k2", 0); /* 4 */
    /* a runtime launch that the driver also reports: once */
    feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_ENTER, "k3", 0, NULL);
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel, "k3", 0);
    feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_EXIT, "k3", 0, NULL); /* 5 */
    /* CUDA 13's <<<>>>: __cudaLaunchKernel nesting cudaLaunchKernel, no driver callback: once */
    feed(RT, KF_CUPTI_RT___cudaLaunchKernel_v13000, KF_CUPTI_API_ENTER, "k4", 0, NULL);
    call(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, "k4", 0);
    feed(RT, KF_CUPTI_RT___cudaLaunchKernel_v13000, KF_CUPTI_API_EXIT, "k4", 0, NULL); /* 6 */
    /* a runtime launch the driver does not report: counted at the runtime's exit */
    call(RT, KF_CUPTI_RT_cudaLaunchKernelExC_v11060, "cutlass_k5", 0); /* 7, library */
    /* failures count apart, at either level */
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel, "k1", 1);
    call(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, "bad", 9);
    /* graphs: runtime over driver once, driver alone once */
    feed(RT, KF_CUPTI_RT_cudaGraphLaunch_v10000, KF_CUPTI_API_ENTER, NULL, 0, NULL);
    call(DRV, KF_CUPTI_DRV_cuGraphLaunch, NULL, 0);
    feed(RT, KF_CUPTI_RT_cudaGraphLaunch_v10000, KF_CUPTI_API_EXIT, NULL, 0, NULL);
    call(DRV, KF_CUPTI_DRV_cuGraphLaunch_ptsz, NULL, 0);
    /* a memcpy under a runtime launch marks only its own kind as seen: the launch still counts */
    feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_ENTER, "k6", 0, NULL);
    call(DRV, KF_CUPTI_DRV_cuMemcpyHtoD_v2, NULL, 0);
    feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_EXIT, "k6", 0, NULL); /* 8 */
    call(RT, KF_CUPTI_RT_cudaMemset_v3020, NULL, 0);
    call(DRV, KF_CUPTI_DRV_cuMemsetD32Async, NULL, 3); /* failed memop: not counted */
    /* no name from CUPTI and no cuFuncGetName: "?" */
    kf_cupti_launch_params lp = {NULL};
    feed(DRV, KF_CUPTI_DRV_cuLaunchKernel, KF_CUPTI_API_EXIT, NULL, 0, &lp); /* 9 */
    /* multi-device: one launch per device */
    kf_cupti_multidev_params mp = {NULL, 3, 0};
    feed(DRV, KF_CUPTI_DRV_cuLaunchCooperativeKernelMultiDevice, KF_CUPTI_API_EXIT, "md", 0, &mp); /* 12 */
    /* ids outside what we track are ignored */
    call(DRV, 1, "x", 0);
    call(RT, 1, "x", 0);
    call(7, KF_CUPTI_DRV_cuLaunchKernel, "x", 0);
    kf_cupti_end(&l);
    CHECK(l.available == 1);
    CHECKF(l.nlaunch == 12 && l.ngraph == 2 && l.nmemop == 2 && l.nfail == 2 && l.nlib == 1,
           "launch %d graph %d memop %d fail %d lib %d", l.nlaunch, l.ngraph, l.nmemop, l.nfail, l.nlib);
    CHECKF(l.nnames == 8 && !l.names_overflow, "%d names", l.nnames);
    static const char *const want[] = {"k1", "k2", "k3", "k4", "cutlass_k5", "k6", "?", "md"};
    for (int i = 0; i < 8; i++) CHECKF(!strcmp(l.names[i], want[i]), "name %d: %s", i, l.names[i]);
    int rt, rtc;
    kf_cupti__stats(&rt, &rtc);
    CHECKF(rt == 7 && rtc == 5, "runtime calls %d, counted at runtime level %d", rt, rtc);

    /* after end nothing counts; begin resets everything */
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel, "late", 0);
    kf_cupti_begin();
    kf_cupti_end(&l);
    CHECK(l.available && l.nlaunch == 0 && l.ngraph == 0 && l.nmemop == 0 && l.nfail == 0 && l.nnames == 0);

    /* a runtime call entered during an earlier call and left in this one: not counted,
     * and this thread's nesting is not stuck */
    kf_cupti_begin();
    feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_ENTER, "old", 0, NULL);
    kf_cupti_begin();
    feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_EXIT, "old", 0, NULL);
    call(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, "new", 0);
    kf_cupti_end(&l);
    CHECKF(l.nlaunch == 1 && l.nnames == 1 && !strcmp(l.names[0], "new"), "%d %s", l.nlaunch, l.names[0]);

    /* names: 16 slots, the 17th distinct sets the overflow flag; a long name is cut at 95 */
    kf_cupti_begin();
    char nm[64];
    for (int i = 0; i < 20; i++) {
        snprintf(nm, sizeof nm, "kern%02d", i % 18);
        call(DRV, KF_CUPTI_DRV_cuLaunchKernel, nm, 0);
    }
    kf_cupti_end(&l);
    CHECK(l.nlaunch == 20 && l.nnames == KF_CUPTI_MAXNAMES && l.names_overflow);
    CHECK(!strcmp(l.names[15], "kern15"));
    kf_cupti_begin();
    static char big[5000];
    memset(big, 'z', sizeof big - 1);
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel, big, 0);
    call(DRV, KF_CUPTI_DRV_cuLaunchKernel, big, 0);
    kf_cupti_end(&l);
    CHECK(l.nlaunch == 2 && l.nnames == 1 && strlen(l.names[0]) == KF_CUPTI_NAMELEN - 1);
    kf_cupti__set_fake(0);
}

/* Launches from several threads at once: every one counted, each name once. */
#define NTHR 4
#define PERTHR 20000
static const char *const tnames[] = {"ta", "tb", "tc", "td", "te"};
static void *launcher(void *p) {
    const char *const *names = tnames;
    long id = (long)p;
    for (int i = 0; i < PERTHR; i++) {
        if (i % 2) {
            feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_ENTER, "r", 0, NULL);
            call(DRV, KF_CUPTI_DRV_cuLaunchKernel, names[(i + id) % 5], 0);
            feed(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_API_EXIT, "r", 0, NULL);
        } else {
            call(RT, KF_CUPTI_RT_cudaLaunchKernel_v7000, names[(i + id) % 5], 0);
        }
    }
    return NULL;
}
static void t_threads(const void *arg) {
    (void)arg;
    kf_cupti__set_fake(1);
    for (int round = 0; round < 3; round++) {
        kf_cupti_begin();
        pthread_t th[NTHR];
        for (long i = 0; i < NTHR; i++) CHECK(pthread_create(&th[i], NULL, launcher, (void *)i) == 0);
        for (int i = 0; i < NTHR; i++) pthread_join(th[i], NULL);
        kf_launch_log l;
        kf_cupti_end(&l);
        CHECKF(l.nlaunch == NTHR * PERTHR && l.nnames == 5 && !l.names_overflow,
               "round %d: %d launches, %d names", round, l.nlaunch, l.nnames);
        for (int i = 0; i < 5; i++) CHECKF(has_name(&l, tnames[i]), "%s missing", tnames[i]);
    }
    kf_cupti__set_fake(0);
}

/* KFORGE_LIBCUPTI naming a missing file: -1, and the message says which and why. */
static void t_init_missing(const void *arg) {
    (void)arg;
    setenv("KFORGE_LIBCUPTI", "/nonexistent/kforge/libcupti.so", 1);
    char err[512] = "";
    CHECK(kf_cupti_init(err, sizeof err) == -1);
    CHECKF(strstr(err, "KFORGE_LIBCUPTI=/nonexistent/kforge/libcupti.so") && strstr(err, "No such file"),
           "%s", err);
    kf_launch_log l;
    kf_cupti_begin();
    kf_cupti_end(&l);
    CHECK(l.available == 0);
    unsetenv("KFORGE_LIBCUPTI");
}

/* The real libcupti on a machine without a GPU: loads, then subscribing fails with the
 * reason (no driver), never a silent zero. */
static void t_init_no_gpu(const void *arg) {
    (void)arg;
    char why[512];
    if (kft_have_gpu(why, sizeof why)) kft_skip("this machine has a GPU");
    unsetenv("KFORGE_LIBCUPTI");
    char err[512] = "";
    int r = kf_cupti_init(err, sizeof err);
    if (r == -1 && strstr(err, "CUPTI not found")) kft_skip("no libcupti here: %s", err);
    CHECKF(r == -1 && strstr(err, "cuptiSubscribe"), "init %d: %s", r, err);
    fprintf(stderr, "    %s\n", err);
    kf_launch_log l;
    kf_cupti_begin();
    kf_cupti_end(&l);
    CHECK(l.available == 0);
}

/* A stand-in libcupti (compiled here) exercises kf_cupti_init's success path without a
 * GPU: which callbacks it enables, that a record reaching the subscribed callback counts,
 * that a second subscriber is refused with the reason, and that a subscription torn down
 * behind kforge's back (cuptiFinalize) makes the log unavailable. */
static const char stub_src[] =
    "typedef void (*cb)(void *, int, unsigned, const void *);\n"
    "static cb fn; static unsigned on[3][2048];\n"
    "int cuptiSubscribe(void **h, cb f, void *u) { (void)u; if (fn) return 39; fn = f; *h = &fn; "
    "return 0; }\n"
    "int cuptiUnsubscribe(void *h) { (void)h; fn = 0; return 0; }\n"
    "int cuptiEnableCallback(unsigned v, void *h, int d, unsigned id) {\n"
    "  if (h != &fn || !fn || d < 1 || d > 2 || id >= 2048) return 1; on[d][id] = v; return 0; }\n"
    "int cuptiGetCallbackState(unsigned *v, void *h, int d, unsigned id) {\n"
    "  if (h != &fn || !fn || d < 1 || d > 2 || id >= 2048) return 1; *v = on[d][id]; return 0; }\n"
    "int cuptiGetResultString(int r, const char **s) {\n"
    "  *s = r == 39 ? \"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\" : "
    "\"CUPTI_ERROR_UNKNOWN\"; return 0; }\n"
    "int cuptiGetCallbackName(int d, unsigned id, const char **s) {\n"
    "  if (d == 1 && id == 276) { *s = \"cuMemcpyHtoD_v2\"; return 0; }\n"
    "  if (d == 2 && id == 41) { *s = \"cudaMemcpyAsync_v3020\"; return 0; }\n"
    "  if (d == 1 && id == 307) { *s = \"cuLaunchKernel\"; return 0; }\n"
    "  return 1; }\n"
    "int cuptiFinalize(void) { fn = 0; return 0; }\n"
    "unsigned stub_enabled(int d, unsigned id) { return on[d][id]; }\n"
    "void stub_fire(int d, unsigned id, const void *data) { if (fn) fn(0, d, id, data); }\n";

static void t_init_stub(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-cupti-XXXXXX";
    CHECK(mkdtemp(dir));
    char src[128], so[128], cmd[512], out[4096];
    snprintf(src, sizeof src, "%s/stub.c", dir);
    snprintf(so, sizeof so, "%s/libcupti.so", dir);
    FILE *f = fopen(src, "w");
    CHECK(f);
    fputs(stub_src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s %s 2>&1", so, src);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    CHECK(h);
    unsigned (*enabled)(int, unsigned) = (unsigned (*)(int, unsigned))dlsym(h, "stub_enabled");
    void (*fire)(int, unsigned, const void *) = (void (*)(int, unsigned, const void *))dlsym(h, "stub_fire");
    int (*other)(void **, void *, void *) = (int (*)(void **, void *, void *))dlsym(h, "cuptiSubscribe");
    int (*unsub)(void *) = (int (*)(void *))dlsym(h, "cuptiUnsubscribe");
    int (*finalize)(void) = (int (*)(void))dlsym(h, "cuptiFinalize");
    CHECK(enabled && fire && other && unsub && finalize);
    setenv("KFORGE_LIBCUPTI", so, 1);
    char err[512] = "";

    /* another client got there first: refused, and the message says so */
    void *theirs = NULL;
    CHECK(other(&theirs, h /* any non-NULL callback */, NULL) == 0);
    CHECK(kf_cupti_init(err, sizeof err) == -1);
    CHECKF(strstr(err, "MULTIPLE_SUBSCRIBERS") && strstr(err, "another CUPTI client"), "%s", err);
    unsub(theirs);

    CHECKF(kf_cupti_init(err, sizeof err) == 0, "%s", err);
    CHECK(kf_cupti_init(err, sizeof err) == 0); /* idempotent */
    static const unsigned drv[] = {KF_CUPTI_DRV_cuLaunchKernel,
                                   KF_CUPTI_DRV_cuLaunchKernel_ptsz,
                                   KF_CUPTI_DRV_cuLaunchKernelEx,
                                   KF_CUPTI_DRV_cuLaunchCooperativeKernel,
                                   KF_CUPTI_DRV_cuGraphLaunch,
                                   KF_CUPTI_DRV_cuGraphLaunch_ptsz,
                                   276};
    static const unsigned rt[] = {KF_CUPTI_RT_cudaLaunchKernel_v7000, KF_CUPTI_RT_cudaLaunchKernelExC_v11060,
                                  KF_CUPTI_RT___cudaLaunchKernel_v13000, KF_CUPTI_RT_cudaGraphLaunch_v10000,
                                  41};
    for (size_t i = 0; i < sizeof drv / sizeof drv[0]; i++) CHECKF(enabled(1, drv[i]), "driver %u", drv[i]);
    for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) CHECKF(enabled(2, rt[i]), "runtime %u", rt[i]);
    /* only what is counted: not every driver call */
    CHECK(!enabled(1, 1) && !enabled(1, KF_CUPTI_DRV_cuMemcpyDtoH_v2) && !enabled(2, 1));

    kf_launch_log l;
    int ok = 0;
    kf_cupti_cbdata d = {.callbackSite = KF_CUPTI_API_EXIT,
                         .symbolName = "ampere_sgemm_128x64_nn",
                         .functionReturnValue = &ok};
    kf_cupti_begin();
    fire(1, KF_CUPTI_DRV_cuLaunchKernel, &d);
    fire(1, 276, &(kf_cupti_cbdata){.callbackSite = KF_CUPTI_API_EXIT, .functionReturnValue = &ok});
    kf_cupti_end(&l);
    CHECKF(l.available && l.nlaunch == 1 && l.nlib == 1 && l.nmemop == 1 && l.nnames == 1,
           "available %d launch %d lib %d memop %d", l.available, l.nlaunch, l.nlib, l.nmemop);

    /* torn down behind our back: unavailable, not "no launches" */
    kf_cupti_begin();
    finalize();
    kf_cupti_end(&l);
    CHECK(l.available == 0 && l.nlaunch == 0);
    kf_cupti_shutdown();
    unsetenv("KFORGE_LIBCUPTI");
    kf__rmtree(dir);
}

/* ---- with a GPU -------------------------------------------------------------- */

static const char probe_src[] =
    "extern \"C\" __global__ void kfprobe(float *x, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f;\n}\n"
    "extern \"C\" __global__ void cutlass_kfprobe(float *x, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 2.0f;\n}\n";

typedef struct {
    const kf_cu_api *cu;
    CUcontext ctx;
    CUmodule mod;
    CUfunction probe, libprobe;
    CUstream stream;
    CUdeviceptr x;
    char *cubin;
} gpu;

#define CU(call)                                                \
    do {                                                        \
        CUresult r_ = (call);                                   \
        CHECKF(!r_, "%s: %s", #call, kf_cu_errname(g->cu, r_)); \
    } while (0)
#define NX 1024

/* CUPTI first (as host mode will), then the device, an NVRTC cubin and a zeroed buffer. */
static void gpu_setup(gpu *g) {
    char why[512];
    memset(g, 0, sizeof *g);
    if (!kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    const kf_nvrtc_api *rtc = kf_nvrtc_load(why, sizeof why);
    if (!rtc) kft_skip("needs NVRTC: %s", why);
    if (kf_cupti_init(why, sizeof why)) {
        if (strstr(why, "CUPTI not found")) kft_skip("%s", why);
        kft_fail_at(__FILE__, __LINE__, "kf_cupti_init: %s", why);
    }
    g->cu = kf_cu_load(why, sizeof why);
    CUdevice dev;
    int maj = 0, min = 0;
    CU(g->cu->Init(0));
    CU(g->cu->DeviceGet(&dev, 0));
    CU(g->cu->PrimaryCtxRetain(&g->ctx, dev));
    CU(g->cu->CtxSetCurrent(g->ctx));
    g->cu->DeviceGetAttribute(&maj, KF_CU_ATTR_CC_MAJOR, dev);
    g->cu->DeviceGetAttribute(&min, KF_CU_ATTR_CC_MINOR, dev);
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", maj, min);
    const char *opts[] = {arch};
    nvrtcProgram prog;
    CHECK(rtc->CreateProgram(&prog, probe_src, "probe.cu", 0, NULL, NULL) == 0);
    int cr = rtc->CompileProgram(prog, 1, opts);
    size_t ls = 0;
    rtc->GetProgramLogSize(prog, &ls);
    char *log = calloc(1, ls + 1);
    rtc->GetProgramLog(prog, log);
    CHECKF(cr == 0, "NVRTC: %s", log);
    free(log);
    size_t cs = 0;
    CHECK(rtc->GetCUBINSize(prog, &cs) == 0 && cs > 0);
    g->cubin = malloc(cs);
    CHECK(rtc->GetCUBIN(prog, g->cubin) == 0);
    rtc->DestroyProgram(&prog);
    CU(g->cu->ModuleLoadData(&g->mod, g->cubin));
    CU(g->cu->ModuleGetFunction(&g->probe, g->mod, "kfprobe"));
    CU(g->cu->ModuleGetFunction(&g->libprobe, g->mod, "cutlass_kfprobe"));
    CU(g->cu->StreamCreate(&g->stream, 0));
    CU(g->cu->MemAlloc(&g->x, NX * sizeof(float)));
    CU(g->cu->MemsetD32Async(g->x, 0, NX, g->stream));
    CU(g->cu->StreamSynchronize(g->stream));
}

static float gpu_x0(gpu *g) {
    float v = -1;
    CU(g->cu->MemcpyDtoH(&v, g->x, sizeof v));
    return v;
}

static void launch(gpu *g, CUfunction f) {
    int n = NX;
    void *params[] = {&g->x, &n};
    CU(g->cu->LaunchKernel(f, NX / 256, 1, 1, 256, 1, 1, 0, g->stream, params, NULL));
}

static void print_log(const char *what, const kf_launch_log *l) {
    int rt, rtc;
    kf_cupti__stats(&rt, &rtc);
    fprintf(stderr,
            "    %s: launch %d graph %d memop %d fail %d lib %d; runtime calls %d, %d of them "
            "without a "
            "driver callback; names:",
            what, l->nlaunch, l->ngraph, l->nmemop, l->nfail, l->nlib, rt, rtc);
    for (int i = 0; i < l->nnames; i++) fprintf(stderr, " %s", l->names[i]);
    fprintf(stderr, "\n");
}

/* N driver launches count N, with the kernel's name; a library-looking name counts in
 * nlib; the memset counts as a memop; and the kernels really ran N times. */
static void t_gpu_driver(const void *arg) {
    (void)arg;
    gpu g0, *g = &g0;
    gpu_setup(g);
    enum { N = 37 };
    kf_launch_log l;
    kf_cupti_begin();
    for (int i = 0; i < N; i++) launch(g, g->probe);
    launch(g, g->libprobe);
    CU(g->cu->MemsetD32Async(g->x + 4 * (NX - 1), 0, 1, g->stream));
    CU(g->cu->CtxSynchronize());
    kf_cupti_end(&l);
    print_log("driver", &l);
    CHECK(l.available == 1);
    CHECKF(l.nlaunch == N + 1 && l.ngraph == 0 && l.nfail == 0 && l.nlib == 1,
           "launch %d graph %d fail %d lib %d", l.nlaunch, l.ngraph, l.nfail, l.nlib);
    CHECKF(l.nnames == 2 && !strcmp(l.names[0], "kfprobe") && !strcmp(l.names[1], "cutlass_kfprobe"),
           "%d names", l.nnames);
    CHECKF(l.nmemop == 1, "memop %d", l.nmemop);
    CHECKF(gpu_x0(g) == (float)(N + 2), "x[0] = %g after %d + 1 launches", gpu_x0(g), N);
    /* outside begin/end nothing counts; a new call starts from zero */
    launch(g, g->probe);
    kf_cupti_begin();
    CU(g->cu->CtxSynchronize());
    kf_cupti_end(&l);
    CHECK(l.available && l.nlaunch == 0 && l.nnames == 0);
    /* an invalid launch (block too large) counts as a failure, not a launch */
    kf_cupti_begin();
    int n = NX;
    void *params[] = {&g->x, &n};
    CHECK(g->cu->LaunchKernel(g->probe, 1, 1, 1, 4096, 1, 1, 0, g->stream, params, NULL) != 0);
    kf_cupti_end(&l);
    CHECKF(l.nlaunch == 0 && l.nfail == 1, "launch %d fail %d", l.nlaunch, l.nfail);
    kf_cupti_shutdown();
}

static gpu *thr_gpu;
static void *thr_launch(void *p) {
    gpu *g = thr_gpu;
    (void)p;
    if (g->cu->CtxSetCurrent(g->ctx)) return (void *)1;
    CUstream s;
    if (g->cu->StreamCreate(&s, 0)) return (void *)1;
    int n = NX;
    void *params[] = {&g->x, &n};
    for (int i = 0; i < 100; i++)
        if (g->cu->LaunchKernel(g->probe, NX / 256, 1, 1, 256, 1, 1, 0, s, params, NULL)) return (void *)1;
    return NULL;
}

/* Launches from 4 threads on their own streams: all counted. */
static void t_gpu_threads(const void *arg) {
    (void)arg;
    gpu g0, *g = &g0;
    gpu_setup(g);
    thr_gpu = g;
    kf_cupti_begin();
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, thr_launch, NULL) == 0);
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        CHECK(rv == NULL);
    }
    CU(g->cu->CtxSynchronize());
    kf_launch_log l;
    kf_cupti_end(&l);
    print_log("threads", &l);
    CHECKF(l.nlaunch == 400 && l.nnames == 1 && !strcmp(l.names[0], "kfprobe"), "launch %d", l.nlaunch);
    kf_cupti_shutdown();
}

static void *sym_or_skip(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) kft_skip("%s missing", name);
    return p;
}

/* Stream capture calls the launch API (3 launches), the graph's launch counts once in
 * ngraph and its kernels not again. */
static void t_gpu_graph(const void *arg) {
    (void)arg;
    gpu g0, *g = &g0;
    gpu_setup(g);
    const char *env = getenv("KFORGE_LIBCUDA");
    void *lc = dlopen(env && *env ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(lc);
    CUresult (*begin_capture)(CUstream, int) =
        (CUresult(*)(CUstream, int))sym_or_skip(lc, "cuStreamBeginCapture_v2");
    CUresult (*end_capture)(CUstream, void **) =
        (CUresult(*)(CUstream, void **))sym_or_skip(lc, "cuStreamEndCapture");
    CUresult (*instantiate)(void **, void *, unsigned long long) =
        (CUresult(*)(void **, void *, unsigned long long))sym_or_skip(lc, "cuGraphInstantiateWithFlags");
    CUresult (*graph_launch)(void *, CUstream) =
        (CUresult(*)(void *, CUstream))sym_or_skip(lc, "cuGraphLaunch");
    kf_launch_log l;
    kf_cupti_begin();
    void *graph = NULL, *exec = NULL;
    CUstream blocking = g->stream; /* capture on a non-blocking stream, away from the legacy one */
    CU(g->cu->StreamCreate(&g->stream, 1 /* CU_STREAM_NON_BLOCKING */));
    CU(begin_capture(g->stream, 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */));
    for (int i = 0; i < 3; i++) launch(g, g->probe);
    CU(end_capture(g->stream, &graph));
    g->stream = blocking;
    CU(instantiate(&exec, graph, 0));
    kf_cupti_end(&l);
    print_log("capture", &l);
    CHECKF(l.nlaunch == 3 && l.ngraph == 0, "capture: launch %d graph %d", l.nlaunch, l.ngraph);
    CHECK(gpu_x0(g) == 0.0f); /* captured, not run */
    kf_cupti_begin();
    CU(graph_launch(exec, g->stream));
    CU(g->cu->CtxSynchronize());
    kf_cupti_end(&l);
    print_log("graph", &l);
    CHECKF(l.nlaunch == 0 && l.ngraph == 1 && l.nfail == 0, "graph: launch %d graph %d", l.nlaunch, l.ngraph);
    CHECK(gpu_x0(g) == 3.0f);
    kf_cupti_shutdown();
}

/* dlopen a toolkit library (libcudart.so*, libcublas.so*) or skip. */
static void *toolkit_lib(const char *stem) {
    char roots[8][256];
    int nroots;
    kf_cu_toolkit_roots(roots, &nroots);
    const char *sub[] = {"lib64", "lib", "targets/x86_64-linux/lib"};
    for (int i = 0; i < nroots; i++)
        for (int j = 0; j < 3; j++) {
            char pat[600];
            snprintf(pat, sizeof pat, "%s/%s/%s.so*", roots[i], sub[j], stem);
            glob_t gl;
            if (glob(pat, 0, NULL, &gl)) continue;
            void *h = NULL;
            for (size_t k = 0; k < gl.gl_pathc && !h; k++) h = dlopen(gl.gl_pathv[k], RTLD_NOW | RTLD_LOCAL);
            globfree(&gl);
            if (h) return h;
        }
    kft_skip("no %s in the CUDA toolkit", stem);
}

typedef struct {
    unsigned x, y, z;
} dim3_;

/* The runtime path: N cudaLaunchKernel calls count N, whether or not the driver also
 * reports them (the output says which happened). */
static void t_gpu_runtime(const void *arg) {
    (void)arg;
    gpu g0, *g = &g0;
    gpu_setup(g);
    void *rt = toolkit_lib("libcudart");
    int (*lib_load)(void **, const void *, void *, void **, unsigned, void *, void **, unsigned) =
        (int (*)(void **, const void *, void *, void **, unsigned, void *, void **, unsigned))sym_or_skip(
            rt, "cudaLibraryLoadData");
    int (*get_kernel)(void **, void *, const char *) =
        (int (*)(void **, void *, const char *))sym_or_skip(rt, "cudaLibraryGetKernel");
    int (*rt_launch)(const void *, dim3_, dim3_, void **, size_t, void *) =
        (int (*)(const void *, dim3_, dim3_, void **, size_t, void *))sym_or_skip(rt, "cudaLaunchKernel");
    int (*rt_sync)(void) = (int (*)(void))sym_or_skip(rt, "cudaDeviceSynchronize");
    void *lib = NULL, *k = NULL;
    CHECK(lib_load(&lib, g->cubin, NULL, NULL, 0, NULL, NULL, 0) == 0);
    CHECK(get_kernel(&k, lib, "kfprobe") == 0);
    enum { N = 25 };
    int n = NX;
    void *params[] = {&g->x, &n};
    rt_launch(k, (dim3_){NX / 256, 1, 1}, (dim3_){256, 1, 1}, params, 0, NULL); /* warm-up: lazy loading */
    CHECK(rt_sync() == 0);
    kf_launch_log l;
    kf_cupti_begin();
    for (int i = 0; i < N; i++)
        CHECK(rt_launch(k, (dim3_){NX / 256, 1, 1}, (dim3_){256, 1, 1}, params, 0, NULL) == 0);
    CHECK(rt_sync() == 0);
    kf_cupti_end(&l);
    print_log("runtime", &l);
    CHECKF(l.nlaunch == N && l.nfail == 0 && l.ngraph == 0, "runtime: %d launches counted for %d", l.nlaunch,
           N);
    CHECKF(l.nnames == 1 && !strcmp(l.names[0], "kfprobe"), "%d names, first %s", l.nnames, l.names[0]);
    CHECK(gpu_x0(g) == (float)(N + 1));
    kf_cupti_shutdown();
}

/* cuBLAS: an sgemm launches at least one kernel, and they look like a library's. */
static void t_gpu_cublas(const void *arg) {
    (void)arg;
    gpu g0, *g = &g0;
    gpu_setup(g);
    void *cb = toolkit_lib("libcublas");
    int (*create)(void **) = (int (*)(void **))sym_or_skip(cb, "cublasCreate_v2");
    int (*sgemm)(void *, int, int, int, int, int, const float *, const void *, int, const void *, int,
                 const float *, void *, int) =
        (int (*)(void *, int, int, int, int, int, const float *, const void *, int, const void *, int,
                 const float *, void *, int))sym_or_skip(cb, "cublasSgemm_v2");
    void *h = NULL;
    CHECK(create(&h) == 0);
    enum { M = 512 };
    CUdeviceptr a, b, c;
    CU(g->cu->MemAlloc(&a, M * M * 4));
    CU(g->cu->MemAlloc(&b, M * M * 4));
    CU(g->cu->MemAlloc(&c, M * M * 4));
    float one = 1, zero = 0;
    CHECK(sgemm(h, 0, 0, M, M, M, &one, (void *)a, M, (void *)b, M, &zero, (void *)c, M) == 0); /* warm-up */
    CU(g->cu->CtxSynchronize());
    kf_launch_log l;
    kf_cupti_begin();
    CHECK(sgemm(h, 0, 0, M, M, M, &one, (void *)a, M, (void *)b, M, &zero, (void *)c, M) == 0);
    CU(g->cu->CtxSynchronize());
    kf_cupti_end(&l);
    print_log("cublas", &l);
    CHECKF(l.nlaunch >= 1 && l.nlaunch <= 4 && l.nfail == 0, "cublas sgemm: %d launches", l.nlaunch);
    CHECKF(l.nlib >= 1, "no kernel of cuBLAS's sgemm was recognised as a library's");
    kf_cupti_shutdown();
}

void kft_register_cupti(void) {
    kft_add("cupti/classifier", t_classifier, NULL, 30);
    kft_add("cupti/log", t_log, NULL, 30);
    kft_add("cupti/threads", t_threads, NULL, 60);
    kft_add("cupti/init_missing", t_init_missing, NULL, 30);
    kft_add("cupti/init_no_gpu", t_init_no_gpu, NULL, 60);
    kft_add("cupti/init_stub", t_init_stub, NULL, 60);
    kft_add("cupti/gpu_driver", t_gpu_driver, NULL, 120);
    kft_add("cupti/gpu_threads", t_gpu_threads, NULL, 120);
    kft_add("cupti/gpu_graph", t_gpu_graph, NULL, 120);
    kft_add("cupti/gpu_runtime", t_gpu_runtime, NULL, 120);
    kft_add("cupti/gpu_cublas", t_gpu_cublas, NULL, 180);
}

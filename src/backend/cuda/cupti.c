/*
 * cupti.c - launch accounting through the CUPTI Callback API, loaded with dlopen.
 *
 * One subscriber per process gets a callback at the entry and exit of every enabled
 * driver and runtime entry point: kernel launches (plain, _ptsz, Ex, cooperative,
 * multi-device, legacy cuLaunch/cuLaunchGrid), graph launches, and memcpy/memset calls
 * (found at init by their callback names). Each is counted at API exit, and only when
 * the call returned success (a failed launch counts in nfail), so the function handle is
 * known to be valid before cuFuncGetName is asked for a name CUPTI did not give.
 *
 * Counting once: CUPTI's documentation does not say whether a runtime launch also
 * surfaces as a driver callback, and reports differ (an NVIDIA engineer on the developer
 * forum: nsys skips driver calls made under a runtime call; cms-sw/cmssw's
 * CuptiKernelLoggerService notes both cudaLaunchKernel and cuLaunchKernel firing for one
 * launch, CUDA 13). So the driver
 * level counts, and runtime callbacks only track nesting per thread: a runtime call
 * counts at its exit only if no driver call of the same kind was counted inside it (and
 * only the outermost runtime call: CUDA 13's __cudaLaunchKernel nests cudaLaunchKernel).
 * Either way each launch counts once.
 *
 * The log is one set of atomic counters and a fixed table of name slots, reset by
 * kf_cupti_begin and copied by kf_cupti_end; callbacks from any thread are counted while
 * a call is active. The callback allocates nothing, takes no lock, and copies names with
 * a bound (a hostile kernel name is just a long string). kf_cupti_end waits for callbacks
 * in flight, so nothing is counted into a log after it was copied.
 *
 * Not counted: kernels inside a launched graph (the graph counts once in ngraph),
 * kernels launched from the device (dynamic parallelism), and anything a second CUPTI
 * client would see instead of us (there is none: cuptiSubscribe fails for the second).
 * Launches recorded by stream capture call the launch API, so they count as launches.
 */
#define _GNU_SOURCE
#include "cupti.h"

#include "cupti_abi.h"
#include "cuda_api.h"

#include <ctype.h>
#include <dlfcn.h>
#include <glob.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*cb_fn)(void *, int, uint32_t, const void *);

static struct {
    void *lib;
    int (*Subscribe)(void **, cb_fn, void *);
    int (*Unsubscribe)(void *);
    int (*EnableCallback)(uint32_t, void *, int, uint32_t);
    int (*GetResultString)(int, const char **);
    int (*GetCallbackName)(int, uint32_t, const char **);       /* optional */
    int (*GetCallbackState)(uint32_t *, void *, int, uint32_t); /* optional */
    int (*FuncGetName)(const char **, void *);                  /* libcuda, CUDA 12.3+; optional */
    void *sub;
    int fake;
} cp;

/* memcpy/memset callback ids per domain (index 0 driver, 1 runtime); set before subscribing */
static uint64_t memop_bits[2][KF_CUPTI_MAXCBID / 64];
/* driver entry points that create a context (cuCtxCreate*, cuGreenCtxCreate) */
static uint64_t ctx_bits[KF_CUPTI_MAXCBID / 64];
static atomic_int n_ctx; /* contexts created since init, counted whether a call is active or not */

enum { OP_NONE, OP_LAUNCH, OP_GRAPH, OP_MEMOP };

static atomic_int active, inflight;
static atomic_uint gen;
static atomic_int n_launch, n_graph, n_memop, n_fail, n_lib, n_overflow, n_rt, n_rt_counted;
static atomic_int slot_state[KF_CUPTI_MAXNAMES]; /* 0 empty, 1 being written, 2 ready */
static char slot_name[KF_CUPTI_MAXNAMES][KF_CUPTI_NAMELEN];

/* per thread: the runtime calls this thread is inside, and which kinds the driver counted */
static _Thread_local struct {
    unsigned gen;
    int depth;
    unsigned seen;
} tl;

/* ---- pure helpers ------------------------------------------------------------ */

int kf_cupti_is_library(const char *name) {
    /* not "curand": a candidate's own kernel taking a curandState has it in its mangled
     * name; not a bare "gemm" or "fft": candidates name their kernels that way */
    static const char *const sub[] = {"cublas",      "cutlass",    "xmma",     "nvjet",    "cudnn", "cufft",
                                      "regular_fft", "vector_fft", "cusparse", "cusolver", "nccl"};
    static const char *const pre[] = {"ampere_", "volta_",  "turing_",   "maxwell_",
                                      "kepler_", "hopper_", "blackwell_"};
    if (!name) return 0;
    char low[512];
    size_t n = 0;
    for (; n < sizeof low - 1 && name[n]; n++) low[n] = (char)tolower((unsigned char)name[n]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++)
        if (strstr(low, sub[i])) return 1;
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
        for (const char *p = strstr(low, pre[i]); p; p = strstr(p + 1, pre[i]))
            if (p == low || isdigit((unsigned char)p[-1])) return 1; /* "_Z22ampere_..." */
    return 0;
}

int kf_cupti__is_memop_name(const char *s) {
    return s && (!strncmp(s, "cuMemcpy", 8) || !strncmp(s, "cuMemset", 8) || !strncmp(s, "cudaMemcpy", 10) ||
                 !strncmp(s, "cudaMemset", 10));
}

int kf_cupti__is_ctx_name(const char *s) {
    return s && (!strncmp(s, "cuCtxCreate", 11) || !strncmp(s, "cuGreenCtxCreate", 16));
}

static void memop_set(int rt, uint32_t cbid) {
    if (cbid < KF_CUPTI_MAXCBID) memop_bits[rt][cbid / 64] |= 1ull << (cbid % 64);
}

static int op_of(int domain, uint32_t cbid) {
    if (domain == KF_CUPTI_DOMAIN_DRIVER) {
        switch (cbid) {
        case KF_CUPTI_DRV_cuLaunch:
        case KF_CUPTI_DRV_cuLaunchGrid:
        case KF_CUPTI_DRV_cuLaunchGridAsync:
        case KF_CUPTI_DRV_cuLaunchKernel:
        case KF_CUPTI_DRV_cuLaunchKernel_ptsz:
        case KF_CUPTI_DRV_cuLaunchKernelEx:
        case KF_CUPTI_DRV_cuLaunchKernelEx_ptsz:
        case KF_CUPTI_DRV_cuLaunchCooperativeKernel:
        case KF_CUPTI_DRV_cuLaunchCooperativeKernel_ptsz:
        case KF_CUPTI_DRV_cuLaunchCooperativeKernelMultiDevice: return OP_LAUNCH;
        case KF_CUPTI_DRV_cuGraphLaunch:
        case KF_CUPTI_DRV_cuGraphLaunch_ptsz: return OP_GRAPH;
        default: break;
        }
    } else if (domain == KF_CUPTI_DOMAIN_RUNTIME) {
        switch (cbid) {
        case KF_CUPTI_RT_cudaLaunch_v3020:
        case KF_CUPTI_RT_cudaLaunch_ptsz_v7000:
        case KF_CUPTI_RT_cudaLaunchKernel_v7000:
        case KF_CUPTI_RT_cudaLaunchKernel_ptsz_v7000:
        case KF_CUPTI_RT_cudaLaunchKernelExC_v11060:
        case KF_CUPTI_RT_cudaLaunchKernelExC_ptsz_v11060:
        case KF_CUPTI_RT_cudaLaunchCooperativeKernel_v9000:
        case KF_CUPTI_RT_cudaLaunchCooperativeKernel_ptsz_v9000:
        case KF_CUPTI_RT_cudaLaunchCooperativeKernelMultiDevice_v9000:
        case KF_CUPTI_RT___cudaLaunchKernel_v13000:
        case KF_CUPTI_RT___cudaLaunchKernel_ptsz_v13000: return OP_LAUNCH;
        case KF_CUPTI_RT_cudaGraphLaunch_v10000:
        case KF_CUPTI_RT_cudaGraphLaunch_ptsz_v10000: return OP_GRAPH;
        default: break;
        }
    } else {
        return OP_NONE;
    }
    int rt = domain == KF_CUPTI_DOMAIN_RUNTIME;
    if (cbid < KF_CUPTI_MAXCBID && (memop_bits[rt][cbid / 64] >> (cbid % 64) & 1)) return OP_MEMOP;
    return OP_NONE;
}

/* ---- the callback ---------------------------------------------------------- */

/* Record a name in the first free slot unless an equal one (first 95 bytes) is there. */
static void add_name(const char *name) {
    char key[KF_CUPTI_NAMELEN];
    size_t n = strnlen(name, sizeof key - 1);
    memcpy(key, name, n);
    key[n] = 0;
    for (int i = 0; i < KF_CUPTI_MAXNAMES; i++) {
        int st = atomic_load(&slot_state[i]);
        if (st == 0) {
            int expect = 0;
            if (atomic_compare_exchange_strong(&slot_state[i], &expect, 1)) {
                memcpy(slot_name[i], key, n + 1);
                atomic_store(&slot_state[i], 2);
                return;
            }
            st = expect;
        }
        while (st == 1) { /* another thread is copying at most 96 bytes */
            sched_yield();
            st = atomic_load(&slot_state[i]);
        }
        if (!strcmp(slot_name[i], key)) return;
    }
    atomic_store(&n_overflow, 1);
}

/* The kernel's name when CUPTI gave none: ask the driver for the launched function's. */
static const char *driver_name(uint32_t cbid, const void *params) {
    if (!cp.FuncGetName || !params) return NULL;
    void *f;
    if (cbid == KF_CUPTI_DRV_cuLaunchKernelEx || cbid == KF_CUPTI_DRV_cuLaunchKernelEx_ptsz)
        f = ((const kf_cupti_launchex_params *)params)->f;
    else if (cbid == KF_CUPTI_DRV_cuLaunchCooperativeKernelMultiDevice) return NULL;
    else f = ((const kf_cupti_launch_params *)params)->f;
    const char *s = NULL;
    return f && cp.FuncGetName(&s, f) == 0 ? s : NULL;
}

static void count(int op, int domain, uint32_t cbid, const kf_cupti_cbdata *d) {
    /* cudaError_t and CUresult are both int enums; 0 is success */
    int ok = !d->functionReturnValue || *(const int *)d->functionReturnValue == 0;
    if (op == OP_MEMOP) {
        if (ok) atomic_fetch_add(&n_memop, 1);
        return;
    }
    if (!ok) {
        atomic_fetch_add(&n_fail, 1);
        return;
    }
    if (op == OP_GRAPH) {
        atomic_fetch_add(&n_graph, 1);
        return;
    }
    int n = 1;
    if ((domain == KF_CUPTI_DOMAIN_DRIVER && cbid == KF_CUPTI_DRV_cuLaunchCooperativeKernelMultiDevice) ||
        (domain == KF_CUPTI_DOMAIN_RUNTIME &&
         cbid == KF_CUPTI_RT_cudaLaunchCooperativeKernelMultiDevice_v9000)) {
        const kf_cupti_multidev_params *p = d->functionParams;
        n = p && p->numDevices >= 1 && p->numDevices <= 64 ? (int)p->numDevices : 1;
    }
    atomic_fetch_add(&n_launch, n);
    const char *name = d->symbolName && d->symbolName[0] ? d->symbolName : NULL;
    if (!name && domain == KF_CUPTI_DOMAIN_DRIVER) name = driver_name(cbid, d->functionParams);
    if (!name || !name[0]) name = "?";
    if (kf_cupti_is_library(name)) atomic_fetch_add(&n_lib, n);
    add_name(name);
}

static void handle(int domain, uint32_t cbid, const kf_cupti_cbdata *d) {
    int op = op_of(domain, cbid);
    if (op == OP_NONE) return;
    unsigned g = atomic_load(&gen);
    if (tl.gen != g) { /* this thread's nesting state belongs to an earlier call */
        tl.gen = g;
        tl.depth = 0;
        tl.seen = 0;
    }
    if (domain == KF_CUPTI_DOMAIN_RUNTIME) {
        if (d->callbackSite == KF_CUPTI_API_ENTER) {
            if (tl.depth++ == 0) tl.seen = 0;
            return;
        }
        if (tl.depth == 0) return; /* entered before this call began */
        if (--tl.depth == 0) {
            atomic_fetch_add(&n_rt, 1);
            if (!(tl.seen & (1u << op))) {
                atomic_fetch_add(&n_rt_counted, 1);
                count(op, domain, cbid, d);
            }
        }
        return;
    }
    if (d->callbackSite != KF_CUPTI_API_EXIT) return;
    if (tl.depth) tl.seen |= 1u << op;
    count(op, domain, cbid, d);
}

void kf_cupti__callback(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata;
    if (domain == KF_CUPTI_DOMAIN_DRIVER && cbid < KF_CUPTI_MAXCBID &&
        (ctx_bits[cbid / 64] >> (cbid % 64) & 1) && cbdata) {
        /* a context of the candidate's own, at any time (a constructor's too): the worker
         * synchronises only its primary context, so work there could outlive a call */
        const kf_cupti_cbdata *d = cbdata;
        if (d->callbackSite == KF_CUPTI_API_EXIT &&
            (!d->functionReturnValue || *(const int *)d->functionReturnValue == 0))
            atomic_fetch_add(&n_ctx, 1);
        return;
    }
    atomic_fetch_add(&inflight, 1);
    if (atomic_load(&active) && cbdata) handle(domain, cbid, cbdata);
    atomic_fetch_sub(&inflight, 1);
}

/* ---- begin / end ----------------------------------------------------------- */

/* No callback counts after this returns (seq_cst: a callback either sees active == 0 or
 * is seen in flight). */
static void quiesce(void) {
    atomic_store(&active, 0);
    while (atomic_load(&inflight)) sched_yield();
}

void kf_cupti_begin(void) {
    quiesce();
    atomic_store(&n_launch, 0);
    atomic_store(&n_graph, 0);
    atomic_store(&n_memop, 0);
    atomic_store(&n_fail, 0);
    atomic_store(&n_lib, 0);
    atomic_store(&n_overflow, 0);
    atomic_store(&n_rt, 0);
    atomic_store(&n_rt_counted, 0);
    for (int i = 0; i < KF_CUPTI_MAXNAMES; i++) {
        memset(slot_name[i], 0, sizeof slot_name[i]);
        atomic_store(&slot_state[i], 0);
    }
    atomic_fetch_add(&gen, 1);
    atomic_store(&active, 1);
}

/* Is our subscription still there and enabled? A candidate in the same process may
 * have called cuptiFinalize or disabled callbacks. */
static int subscribed(void) {
    if (cp.fake) return 1;
    if (!cp.sub) return 0;
    uint32_t on = 0;
    if (!cp.GetCallbackState) return 1;
    return cp.GetCallbackState(&on, cp.sub, KF_CUPTI_DOMAIN_DRIVER, KF_CUPTI_DRV_cuLaunchKernel) == 0 && on;
}

void kf_cupti_end(kf_launch_log *out) {
    quiesce();
    memset(out, 0, sizeof *out);
    if (!(out->available = subscribed())) return;
    out->nlaunch = atomic_load(&n_launch);
    out->ngraph = atomic_load(&n_graph);
    out->nmemop = atomic_load(&n_memop);
    out->nfail = atomic_load(&n_fail);
    out->nlib = atomic_load(&n_lib);
    out->nctx = atomic_load(&n_ctx);
    out->names_overflow = atomic_load(&n_overflow);
    for (int i = 0; i < KF_CUPTI_MAXNAMES; i++)
        if (atomic_load(&slot_state[i]) == 2)
            memcpy(out->names[out->nnames++], slot_name[i], KF_CUPTI_NAMELEN);
}

void kf_cupti__stats(int *rt_calls, int *rt_counted_at_runtime) {
    *rt_calls = atomic_load(&n_rt);
    *rt_counted_at_runtime = atomic_load(&n_rt_counted);
}

/* ---- loading --------------------------------------------------------------- */

static const uint32_t drv_ids[] = {KF_CUPTI_DRV_cuLaunch,
                                   KF_CUPTI_DRV_cuLaunchGrid,
                                   KF_CUPTI_DRV_cuLaunchGridAsync,
                                   KF_CUPTI_DRV_cuLaunchKernel,
                                   KF_CUPTI_DRV_cuLaunchKernel_ptsz,
                                   KF_CUPTI_DRV_cuLaunchKernelEx,
                                   KF_CUPTI_DRV_cuLaunchKernelEx_ptsz,
                                   KF_CUPTI_DRV_cuLaunchCooperativeKernel,
                                   KF_CUPTI_DRV_cuLaunchCooperativeKernel_ptsz,
                                   KF_CUPTI_DRV_cuLaunchCooperativeKernelMultiDevice,
                                   KF_CUPTI_DRV_cuGraphLaunch,
                                   KF_CUPTI_DRV_cuGraphLaunch_ptsz};
static const uint32_t rt_ids[] = {KF_CUPTI_RT_cudaLaunch_v3020,
                                  KF_CUPTI_RT_cudaLaunch_ptsz_v7000,
                                  KF_CUPTI_RT_cudaLaunchKernel_v7000,
                                  KF_CUPTI_RT_cudaLaunchKernel_ptsz_v7000,
                                  KF_CUPTI_RT_cudaLaunchKernelExC_v11060,
                                  KF_CUPTI_RT_cudaLaunchKernelExC_ptsz_v11060,
                                  KF_CUPTI_RT_cudaLaunchCooperativeKernel_v9000,
                                  KF_CUPTI_RT_cudaLaunchCooperativeKernel_ptsz_v9000,
                                  KF_CUPTI_RT_cudaLaunchCooperativeKernelMultiDevice_v9000,
                                  KF_CUPTI_RT___cudaLaunchKernel_v13000,
                                  KF_CUPTI_RT___cudaLaunchKernel_ptsz_v13000,
                                  KF_CUPTI_RT_cudaGraphLaunch_v10000,
                                  KF_CUPTI_RT_cudaGraphLaunch_ptsz_v10000};

/* The memcpy/memset ids: by name from CUPTI when it can say, else a short fixed list. */
static void memops_find(void) {
    memset(memop_bits, 0, sizeof memop_bits);
    memset(ctx_bits, 0, sizeof ctx_bits);
    int found = 0;
    for (int rt = 0; rt < 2 && cp.GetCallbackName; rt++)
        for (uint32_t id = 1; id < KF_CUPTI_MAXCBID; id++) {
            const char *s = NULL;
            if (cp.GetCallbackName(rt ? KF_CUPTI_DOMAIN_RUNTIME : KF_CUPTI_DOMAIN_DRIVER, id, &s) != 0)
                continue;
            if (kf_cupti__is_memop_name(s)) {
                memop_set(rt, id);
                found++;
            }
            if (!rt && kf_cupti__is_ctx_name(s)) ctx_bits[id / 64] |= 1ull << (id % 64);
        }
    if (found) return;
    memop_set(0, KF_CUPTI_DRV_cuMemcpyHtoD_v2);
    memop_set(0, KF_CUPTI_DRV_cuMemcpyDtoH_v2);
    memop_set(0, KF_CUPTI_DRV_cuMemsetD32Async);
    memop_set(1, KF_CUPTI_RT_cudaMemcpy_v3020);
    memop_set(1, KF_CUPTI_RT_cudaMemset_v3020);
}

void kf_cupti__set_fake(int on) {
    cp.fake = on;
    if (on) memops_find();
}

static void *load_lib(char *err, size_t n) {
    const char *env = getenv("KFORGE_LIBCUPTI");
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(err, n, "cannot load CUPTI from KFORGE_LIBCUPTI=%s: %s", env, dlerror());
        return h;
    }
    char roots[8][256];
    int nroots;
    kf_cu_toolkit_roots(roots, &nroots);
    static const char *const sub[] = {"extras/CUPTI/lib64", "lib64", "lib", "targets/x86_64-linux/lib"};
    for (int i = 0; i < nroots; i++)
        for (size_t j = 0; j < sizeof sub / sizeof sub[0]; j++) {
            char pat[512];
            snprintf(pat, sizeof pat, "%s/%s/libcupti.so*", roots[i], sub[j]);
            glob_t g;
            if (glob(pat, 0, NULL, &g)) continue;
            void *h = NULL;
            for (size_t k = 0; k < g.gl_pathc && !h; k++) h = dlopen(g.gl_pathv[k], RTLD_NOW | RTLD_LOCAL);
            globfree(&g);
            if (h) return h;
        }
    static const char *const plain[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        void *h = dlopen(plain[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    snprintf(err, n, "CUPTI not found (set KFORGE_LIBCUPTI to libcupti.so, or CUDA_HOME to the toolkit)");
    return NULL;
}

static const char *result_name(int r) {
    const char *s = NULL;
    if (cp.GetResultString && cp.GetResultString(r, &s) == 0 && s) return s;
    return "CUPTI_ERROR_UNKNOWN";
}

int kf_cupti_init(char *err, size_t n) {
    if (cp.sub) return 0;
    if (!cp.lib && !(cp.lib = load_lib(err, n))) return -1;
    void *p;
#define S(f, name)                                          \
    if (!(p = dlsym(cp.lib, name))) {                       \
        snprintf(err, n, "CUPTI: symbol %s missing", name); \
        return -1;                                          \
    }                                                       \
    memcpy(&cp.f, &p, sizeof p)
    S(Subscribe, "cuptiSubscribe");
    S(Unsubscribe, "cuptiUnsubscribe");
    S(EnableCallback, "cuptiEnableCallback");
    S(GetResultString, "cuptiGetResultString");
#undef S
    if ((p = dlsym(cp.lib, "cuptiGetCallbackName"))) memcpy(&cp.GetCallbackName, &p, sizeof p);
    if ((p = dlsym(cp.lib, "cuptiGetCallbackState"))) memcpy(&cp.GetCallbackState, &p, sizeof p);
    const char *cuenv = getenv("KFORGE_LIBCUDA");
    void *cuda = dlopen(cuenv && *cuenv ? cuenv : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda && (p = dlsym(cuda, "cuFuncGetName"))) memcpy(&cp.FuncGetName, &p, sizeof p);
    memops_find();

    void *sub = NULL;
    int r = cp.Subscribe(&sub, kf_cupti__callback, NULL);
    if (r != KF_CUPTI_SUCCESS) {
        char why[300] = "", drv[256];
        if (r == KF_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS)
            snprintf(why, sizeof why, " (another CUPTI client, such as nsys or ncu, is attached)");
        else if (!kf_cu_load(drv, sizeof drv)) snprintf(why, sizeof why, " (%s)", drv);
        snprintf(err, n, "cuptiSubscribe: %s%s", result_name(r), why);
        return -1;
    }
    for (size_t i = 0; i < sizeof drv_ids / sizeof drv_ids[0] + sizeof rt_ids / sizeof rt_ids[0]; i++) {
        int rt = i >= sizeof drv_ids / sizeof drv_ids[0];
        uint32_t id = rt ? rt_ids[i - sizeof drv_ids / sizeof drv_ids[0]] : drv_ids[i];
        if ((r = cp.EnableCallback(1, sub, rt ? KF_CUPTI_DOMAIN_RUNTIME : KF_CUPTI_DOMAIN_DRIVER, id))) {
            snprintf(err, n, "cuptiEnableCallback (%s callback %u): %s", rt ? "runtime" : "driver", id,
                     result_name(r));
            cp.Unsubscribe(sub);
            return -1;
        }
    }
    /* context creation (found by name: no fixed list) */
    for (uint32_t id = 1; id < KF_CUPTI_MAXCBID; id++)
        if (ctx_bits[id / 64] >> (id % 64) & 1) cp.EnableCallback(1, sub, KF_CUPTI_DOMAIN_DRIVER, id);
    /* memcpy/memset are best effort: nmemop is documented as approximate */
    for (int rt = 0; rt < 2; rt++)
        for (uint32_t id = 1; id < KF_CUPTI_MAXCBID; id++)
            if (memop_bits[rt][id / 64] >> (id % 64) & 1)
                cp.EnableCallback(1, sub, rt ? KF_CUPTI_DOMAIN_RUNTIME : KF_CUPTI_DOMAIN_DRIVER, id);
    cp.sub = sub;
    return 0;
}

void kf_cupti_shutdown(void) {
    if (cp.sub) cp.Unsubscribe(cp.sub);
    cp.sub = NULL;
    quiesce();
}

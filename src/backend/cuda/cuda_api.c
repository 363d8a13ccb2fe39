/*
 * cuda_api.c - dlopen of the CUDA driver and NVRTC. See cuda_api.h.
 */
#define _GNU_SOURCE
#include "cuda_api.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int sym(void *lib, void *fnp, const char *name, const char *alt, char *err, size_t n) {
    void *p = dlsym(lib, name);
    if (!p && alt) p = dlsym(lib, alt);
    if (!p) {
        snprintf(err, n, "symbol %s missing", name);
        return -1;
    }
    memcpy(fnp, &p, sizeof p);
    return 0;
}

/* The driver's entry points on a page of their own (64 KiB covers the largest page
 * size of the machines kforge runs on), so that kf_cu_protect can make exactly them
 * read-only: a host-mode candidate found the worker's table in writable data and
 * rewrote entries to shave time off its timed span. */
static union {
    kf_cu_api api;
    unsigned char page[65536];
} cu_table __attribute__((aligned(65536)));
#define cu_api (cu_table.api)
const kf_cu_api *const kf_cu = &cu_table.api;
static int cu_state; /* 0 not tried, 1 loaded, -1 failed */
static char cu_err[512];
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load_once(void) {
    kf_cu_api *a = &cu_api;
    const char *env = getenv("KFORGE_LIBCUDA");
    const char *path = env && *env ? env : "libcuda.so.1";
    a->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        snprintf(cu_err, sizeof cu_err, "no CUDA driver (%s: %s)", path, dlerror());
        cu_state = -1;
        return;
    }
    char *e = cu_err;
    size_t n = sizeof cu_err;
#define S(f, name, alt) \
    if (sym(a->lib, &a->f, name, alt, e, n)) goto fail
    S(Init, "cuInit", NULL);
    S(DriverGetVersion, "cuDriverGetVersion", NULL);
    S(DeviceGetCount, "cuDeviceGetCount", NULL);
    S(DeviceGet, "cuDeviceGet", NULL);
    S(DeviceGetName, "cuDeviceGetName", NULL);
    S(DeviceGetAttribute, "cuDeviceGetAttribute", NULL);
    S(DeviceTotalMem, "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
    S(DeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
    S(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
    S(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
    S(CtxSetCurrent, "cuCtxSetCurrent", NULL);
    S(CtxSynchronize, "cuCtxSynchronize", NULL);
    S(ModuleLoadData, "cuModuleLoadData", NULL);
    S(ModuleGetFunction, "cuModuleGetFunction", NULL);
    S(ModuleUnload, "cuModuleUnload", NULL);
    S(FuncGetAttribute, "cuFuncGetAttribute", NULL);
    S(FuncSetAttribute, "cuFuncSetAttribute", NULL);
    S(MemAlloc, "cuMemAlloc_v2", NULL);
    S(MemFree, "cuMemFree_v2", NULL);
    S(MemHostRegister, "cuMemHostRegister_v2", "cuMemHostRegister");
    S(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL);
    S(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL);
    S(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL);
    S(MemsetD32Async, "cuMemsetD32Async", NULL);
    S(StreamCreate, "cuStreamCreate", NULL);
    S(StreamSynchronize, "cuStreamSynchronize", NULL);
    S(StreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
    S(EventCreate, "cuEventCreate", NULL);
    S(EventRecord, "cuEventRecord", NULL);
    S(EventSynchronize, "cuEventSynchronize", NULL);
    S(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
    S(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
    S(LaunchKernel, "cuLaunchKernel", NULL);
    S(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL);
    S(GetErrorName, "cuGetErrorName", NULL);
#undef S
    /* optional: graph baselines only */
    *(void **)&a->StreamBeginCapture = dlsym(a->lib, "cuStreamBeginCapture_v2");
    *(void **)&a->StreamEndCapture = dlsym(a->lib, "cuStreamEndCapture");
    *(void **)&a->GraphInstantiate = dlsym(a->lib, "cuGraphInstantiateWithFlags");
    *(void **)&a->GraphLaunch = dlsym(a->lib, "cuGraphLaunch");
    *(void **)&a->GraphExecDestroy = dlsym(a->lib, "cuGraphExecDestroy");
    *(void **)&a->GraphDestroy = dlsym(a->lib, "cuGraphDestroy");
    /* optional: the persisting-L2 reset of host mode */
    *(void **)&a->CtxSetLimit = dlsym(a->lib, "cuCtxSetLimit");
    *(void **)&a->CtxGetLimit = dlsym(a->lib, "cuCtxGetLimit");
    *(void **)&a->CtxResetPersistingL2Cache = dlsym(a->lib, "cuCtxResetPersistingL2Cache");
    *(void **)&a->StreamSetAttribute = dlsym(a->lib, "cuStreamSetAttribute");
    cu_state = 1;
    return;
fail:
    dlclose(a->lib);
    a->lib = NULL;
    cu_state = -1;
}

const kf_cu_api *kf_cu_load(char *err, size_t n) {
    pthread_once(&cu_once, cu_load_once);
    if (cu_state == 1) return &cu_api;
    snprintf(err, n, "%s", cu_err);
    return NULL;
}

int kf_cu_protect(int *sealed) {
    *sealed = 0;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0 || (size_t)pg > sizeof cu_table || sizeof cu_table % (size_t)pg) return -1;
    if (mprotect(&cu_table, sizeof cu_table, PROT_READ)) return -1;
#ifdef SYS_mseal
    *sealed = syscall(SYS_mseal, (unsigned long)&cu_table, sizeof cu_table, 0) == 0;
#else
    *sealed = syscall(462, (unsigned long)&cu_table, sizeof cu_table, 0) == 0;
#endif
    return 0;
}

const char *kf_cu_errname(const kf_cu_api *cu, CUresult r) {
    const char *s = NULL;
    if (cu && cu->GetErrorName && cu->GetErrorName(r, &s) == 0 && s) return s;
    return "CUDA_ERROR_UNKNOWN";
}

static kf_nvrtc_api rtc_api;
static int rtc_state;
static char rtc_err[512];
static pthread_once_t rtc_once = PTHREAD_ONCE_INIT;

void kf_cu_toolkit_roots(char roots[][256], int *nroots) {
    *nroots = 0;
    const char *env[] = {"CUDA_HOME", "CUDA_PATH"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(env[i]);
        if (v && *v && *nroots < 8) snprintf(roots[(*nroots)++], 256, "%s", v);
    }
    if (*nroots < 8) snprintf(roots[(*nroots)++], 256, "/usr/local/cuda");
    glob_t g;
    if (glob("/usr/local/cuda-*", 0, NULL, &g) == 0) {
        for (size_t i = g.gl_pathc; i-- > 0 && *nroots < 8;)
            snprintf(roots[(*nroots)++], 256, "%s", g.gl_pathv[i]);
        globfree(&g);
    }
}

static void rtc_load_once(void) {
    kf_nvrtc_api *a = &rtc_api;
    char roots[8][256];
    int nroots;
    kf_cu_toolkit_roots(roots, &nroots);
    const char *env = getenv("KFORGE_NVRTC");
    if (env && *env) {
        a->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        snprintf(a->path, sizeof a->path, "%s", env);
    }
    for (int i = 0; !a->lib && !(env && *env) && i < nroots; i++) {
        const char *sub[] = {"lib64", "targets/x86_64-linux/lib", "lib"};
        for (int j = 0; j < 3 && !a->lib; j++) {
            char pat[512];
            snprintf(pat, sizeof pat, "%s/%s/libnvrtc.so*", roots[i], sub[j]);
            glob_t g;
            if (glob(pat, 0, NULL, &g) == 0) {
                for (size_t k = 0; k < g.gl_pathc && !a->lib; k++) {
                    if (strstr(g.gl_pathv[k], "builtins") || strstr(g.gl_pathv[k], ".alt.")) continue;
                    a->lib = dlopen(g.gl_pathv[k], RTLD_NOW | RTLD_LOCAL);
                    if (a->lib) snprintf(a->path, sizeof a->path, "%s", g.gl_pathv[k]);
                }
                globfree(&g);
            }
        }
    }
    if (!a->lib && !(env && *env)) {
        a->lib = dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
        snprintf(a->path, sizeof a->path, "libnvrtc.so");
    }
    if (!a->lib) {
        snprintf(rtc_err, sizeof rtc_err,
                 "NVRTC not found (set KFORGE_NVRTC to libnvrtc.so, or CUDA_HOME)%s%s",
                 env && *env ? ": " : "", env && *env ? dlerror() : "");
        rtc_state = -1;
        return;
    }
    /* the toolkit's headers (cuda_fp16.h and friends), from the first root that has them */
    for (int i = 0; i < nroots && !a->include[0]; i++) {
        char probe[600];
        snprintf(probe, sizeof probe, "%s/include/cuda_fp16.h", roots[i]);
        if (access(probe, R_OK) == 0) snprintf(a->include, sizeof a->include, "%s/include", roots[i]);
    }
    char *e = rtc_err;
    size_t n = sizeof rtc_err;
#define S(f, name) \
    if (sym(a->lib, &a->f, name, NULL, e, n)) goto fail
    S(Version, "nvrtcVersion");
    S(CreateProgram, "nvrtcCreateProgram");
    S(CompileProgram, "nvrtcCompileProgram");
    S(GetProgramLogSize, "nvrtcGetProgramLogSize");
    S(GetProgramLog, "nvrtcGetProgramLog");
    S(GetCUBINSize, "nvrtcGetCUBINSize");
    S(GetCUBIN, "nvrtcGetCUBIN");
    S(DestroyProgram, "nvrtcDestroyProgram");
    S(GetErrorString, "nvrtcGetErrorString");
#undef S
    /* the file actually loaded (a bare soname was resolved by the loader): the compile
     * child loads exactly this one */
    Dl_info di;
    char real[PATH_MAX];
    void *fn;
    memcpy(&fn, &a->Version, sizeof fn);
    if (dladdr(fn, &di) && di.dli_fname && realpath(di.dli_fname, real))
        snprintf(a->path, sizeof a->path, "%s", real);
    rtc_state = 1;
    return;
fail:
    dlclose(a->lib);
    a->lib = NULL;
    rtc_state = -1;
}

const kf_nvrtc_api *kf_nvrtc_load(char *err, size_t n) {
    pthread_once(&rtc_once, rtc_load_once);
    if (rtc_state == 1) return &rtc_api;
    snprintf(err, n, "%s", rtc_err);
    return NULL;
}

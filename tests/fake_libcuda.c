/*
 * fake_libcuda.c - a stand-in CUDA driver (KFORGE_LIBCUDA) so that device-info's
 * host side (attributes, probe launches, event arithmetic, the cache) runs in CI
 * without a GPU. One device that looks like an H200; kernels, copies and memsets do
 * nothing; every event pair is FAKECUDA_MS milliseconds apart (default 25).
 * FAKECUDA_FAIL=NAME makes entry point NAME (e.g. cuMemAlloc_v2) fail with
 * CUDA_ERROR_OUT_OF_MEMORY; FAKECUDA_CC=86 reports compute capability 8.6; FAKECUDA_SLEEP_US makes every
 * event wait that long. Test code only: never loaded by kforge otherwise.
 *
 * Like the real driver, a launch with more than 48 KiB of dynamic shared memory fails
 * (CUDA_ERROR_INVALID_VALUE) unless cuFuncSetAttribute raised the function's limit to
 * at least that much first; FAKECUDA_LAUNCH_LOG=PATH appends "launch SMEM LIMIT" per
 * launch, FAKECUDA_PROBE_LOG=PATH "probe" per launch of the idle probe. While the file
 * named by FAKECUDA_BUSY_FILE exists the device is "busy with
 * another process": waiting for a launch of kf_idle_probe takes 300 us. The persisting-L2
 * limit is kept and returned (cuCtxSetLimit/cuCtxGetLimit, limit 6); it starts at the
 * H200 driver's 11.25 MiB.
 *
 * A GPU worker starts with an empty environment: each FAKECUDA_ setting is read from the
 * environment, else from a line NAME=VALUE of fakecuda.env in the directory the stand-in
 * was loaded from (a test links it into a directory of its own as libcuda.so.1 and
 * points KFORGE_LIBCUDA there).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define API __attribute__((visibility("default")))

static const char *fenv(const char *name) {
    const char *v = getenv(name);
    if (v) return v;
    static char names[16][64], vals[16][256];
    static int nv;
    for (int i = 0; i < nv; i++)
        if (!strcmp(names[i], name)) return vals[i][0] || names[i][63] ? vals[i] : NULL;
    Dl_info di;
    if (!dladdr((void *)fenv, &di) || !di.dli_fname) return NULL;
    char path[512];
    snprintf(path, sizeof path, "%s", di.dli_fname);
    char *sl = strrchr(path, '/');
    if (!sl) return NULL;
    snprintf(sl + 1, sizeof path - (size_t)(sl + 1 - path), "fakecuda.env");
    FILE *f = fopen(path, "r");
    if (!f || nv == 16) {
        if (f) fclose(f);
        return NULL;
    }
    /* remembered, found or not (names[i][63] marks "found, empty") */
    int me = nv++;
    snprintf(names[me], 63, "%s", name);
    vals[me][0] = 0;
    char line[300];
    const char *found = NULL;
    size_t nl = strlen(name);
    while (!found && fgets(line, sizeof line, f))
        if (!strncmp(line, name, nl) && line[nl] == '=') {
            line[strcspn(line, "\n")] = 0;
            snprintf(vals[me], sizeof vals[me], "%s", line + nl + 1);
            names[me][63] = 1;
            found = vals[me];
        }
    fclose(f);
    return found;
}
#define getenv fenv

static int fail(const char *name) {
    const char *f = getenv("FAKECUDA_FAIL");
    return f && !strcmp(f, name) ? 2 : 0;
}
#define F(name)                   \
    do {                          \
        if (fail(name)) return 2; \
    } while (0)

static char heap[64];
static int smem_limit[2] = {48 << 10, 48 << 10}; /* [0] kernels, [1] the idle probe */
static size_t persisting_l2 = 11796480;          /* the H200 driver's default set-aside */
static int probe_pending;
static unsigned long long next_ptr = 1ull << 32;

API CUresult cuInit(unsigned f) {
    (void)f;
    F("cuInit");
    return 0;
}
API CUresult cuDriverGetVersion(int *v) {
    *v = 13000;
    return 0;
}
/* FAKECUDA_COUNT=N: N devices (default 1); FAKECUDA_MODELS="A,B,...": device i's name
 * (default "Fake H200"); CUDA_VISIBLE_DEVICES=2,0 shows those devices, in that order, as
 * 0, 1, ..., as the real driver does. */
static int visible(int i) { /* the physical device that index i shows, or -1 */
    const char *c = getenv("FAKECUDA_COUNT");
    int n = c ? atoi(c) : 1;
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v || !*v) return i >= 0 && i < n ? i : -1;
    for (int k = 0; *v; k++) {
        int d = atoi(v);
        if (d < 0 || d >= n) return -1; /* the driver stops at the first invalid entry */
        if (k == i) return d;
        v = strchr(v, ',');
        if (!v) break;
        v++;
    }
    return -1;
}
API CUresult cuDeviceGetCount(int *n) {
    F("cuDeviceGetCount");
    *n = 0;
    while (visible(*n) >= 0) (*n)++;
    return 0;
}
API CUresult cuDeviceGet(int *d, int i) {
    *d = i;
    return visible(i) >= 0 ? 0 : 101;
}
API CUresult cuDeviceGetName(char *s, int n, int d) {
    const char *m = getenv("FAKECUDA_MODELS");
    int phys = visible(d);
    for (int k = 0; m && k < phys && (m = strchr(m, ',')); k++) m++;
    if (m && *m) snprintf(s, (size_t)n, "%.*s", (int)strcspn(m, ","), m);
    else snprintf(s, (size_t)n, "Fake H200");
    return 0;
}
API CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
    (void)d;
    switch (attr) {
    case 13: *v = 1980000; break;  /* SM clock, kHz */
    case 16: *v = 132; break;      /* SMs */
    case 36: *v = 3201000; break;  /* memory clock, kHz */
    case 37: *v = 6144; break;     /* bus width */
    case 38: *v = 60 << 20; break; /* L2 */
    case 39: *v = 2048; break;
    case 75: *v = getenv("FAKECUDA_CC") ? atoi(getenv("FAKECUDA_CC")) / 10 : 9; break;
    case 76: *v = getenv("FAKECUDA_CC") ? atoi(getenv("FAKECUDA_CC")) % 10 : 0; break;
    default: *v = 0;
    }
    return 0;
}
API CUresult cuDeviceTotalMem_v2(size_t *b, int d) {
    (void)d;
    *b = 150000000000ull;
    return 0;
}
API CUresult cuDeviceGetUuid_v2(unsigned char *u, int d) {
    (void)d;
    for (int i = 0; i < 16; i++) u[i] = (unsigned char)(0xf0 + i);
    return 0;
}
API CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
    (void)d;
    F("cuDevicePrimaryCtxRetain");
    *c = heap;
    return 0;
}
API CUresult cuDevicePrimaryCtxRelease_v2(int d) {
    (void)d;
    return 0;
}
API CUresult cuCtxSetCurrent(void *c) {
    (void)c;
    return 0;
}
/* FAKECUDA_HANG_S: a kernel that never finishes (the wait spins, as the real one does) */
API CUresult cuCtxSynchronize(void) {
    const char *v = getenv("FAKECUDA_HANG_S");
    if (v) sleep((unsigned)atoi(v));
    return 0;
}
API CUresult cuModuleLoadData(void **m, const void *img) {
    (void)img;
    F("cuModuleLoadData");
    *m = heap;
    return 0;
}
API CUresult cuModuleGetFunction(void **f, void *m, const char *n) {
    (void)m;
    /* kforge's own kernels have handles of their own: not logged, default limits */
    *f = !strcmp(n, "kf_idle_probe") ? heap + 4 : !strcmp(n, "kf_l2_read") ? heap + 5 : heap + 1;
    return 0;
}
API CUresult cuFuncSetAttribute(void *f, int attr, int v) {
    if (attr == 8) smem_limit[f == heap + 4] = v;
    return 0;
}
API CUresult cuCtxSetLimit(int what, size_t v) {
    if (what == 6) persisting_l2 = v;
    return 0;
}
API CUresult cuCtxGetLimit(size_t *v, int what) {
    *v = what == 6 ? persisting_l2 : 0;
    return 0;
}
API CUresult cuCtxResetPersistingL2Cache(void) { return 0; }
API CUresult cuStreamSetAttribute(void *s, int attr, const void *v) {
    (void)s;
    (void)attr;
    (void)v;
    return 0;
}
API CUresult cuModuleUnload(void *m) {
    (void)m;
    return 0;
}
API CUresult cuFuncGetAttribute(int *v, int a, void *f) {
    (void)a;
    (void)f;
    *v = 0;
    return 0;
}
API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    F("cuMemAlloc_v2");
    *p = next_ptr;
    next_ptr += (n + 255) & ~(size_t)255;
    return 0;
}
API CUresult cuMemFree_v2(CUdeviceptr p) {
    (void)p;
    return 0;
}
API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) {
    (void)p;
    (void)n;
    (void)f;
    return 0;
}
API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
    (void)d;
    (void)s;
    (void)n;
    return 0;
}
API CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
    (void)d;
    (void)s;
    (void)n;
    return 0;
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
    (void)d;
    (void)s;
    (void)n;
    (void)st;
    return 0;
}
API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *st) {
    (void)d;
    (void)v;
    (void)n;
    (void)st;
    return 0;
}
API CUresult cuStreamCreate(void **s, unsigned f) {
    (void)f;
    *s = heap + 2;
    return 0;
}
API CUresult cuStreamSynchronize(void *s) {
    (void)s;
    const char *busy = getenv("FAKECUDA_BUSY_FILE");
    if (probe_pending && busy && access(busy, F_OK) == 0) usleep(300);
    probe_pending = 0;
    return 0;
}
API CUresult cuStreamDestroy_v2(void *s) {
    (void)s;
    return 0;
}
API CUresult cuEventCreate(void **e, unsigned f) {
    (void)f;
    *e = heap + 3;
    return 0;
}
API CUresult cuEventRecord(void *e, void *s) {
    (void)e;
    (void)s;
    return 0;
}
API CUresult cuEventSynchronize(void *e) {
    (void)e;
    const char *v = getenv("FAKECUDA_SLEEP_US");
    if (v) usleep((useconds_t)atoi(v));
    return 0;
}
API CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
    (void)a;
    (void)b;
    const char *v = getenv("FAKECUDA_MS");
    *ms = v ? (float)atof(v) : 25.0f;
    return 0;
}
API CUresult cuEventDestroy_v2(void *e) {
    (void)e;
    return 0;
}
API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned sm, void *s, void **p, void **x) {
    (void)gx;
    (void)gy;
    (void)gz;
    (void)bx;
    (void)by;
    (void)bz;
    (void)s;
    (void)p;
    (void)x;
    F("cuLaunchKernel");
    if (f == heap + 4) probe_pending = 1;
    int lim = smem_limit[f == heap + 4];
    const char *plog = getenv("FAKECUDA_PROBE_LOG");
    if (plog && f == heap + 4) {
        FILE *o = fopen(plog, "a");
        if (o) {
            fputs("probe\n", o);
            fclose(o);
        }
    }
    const char *log = getenv("FAKECUDA_LAUNCH_LOG");
    if (log && f == heap + 1) {
        FILE *o = fopen(log, "a");
        if (o) {
            fprintf(o, "launch %u %d\n", sm, lim);
            fclose(o);
        }
    }
    return (int)sm > lim ? 1 : 0;
}
API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int b, size_t sm) {
    (void)f;
    (void)sm;
    *n = 2048 / (b > 0 ? b : 1);
    return 0;
}
API CUresult cuGetErrorName(CUresult r, const char **s) {
    *s = r == 2     ? "CUDA_ERROR_OUT_OF_MEMORY"
         : r == 101 ? "CUDA_ERROR_INVALID_DEVICE"
         : r == 1   ? "CUDA_ERROR_INVALID_VALUE"
                    : "CUDA_ERROR_UNKNOWN";
    return 0;
}

/*
 * cuda_api.h - the CUDA driver API and NVRTC, loaded at run time with dlopen, so one
 * kforge binary runs (and says so clearly) on machines without a GPU or a toolkit.
 * Only the types and entry points kforge uses are declared here; their values match
 * the CUDA headers (cuda.h, nvrtc.h), whose ABI is stable.
 */
#ifndef KF_CUDA_API_H
#define KF_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct _nvrtcProgram *nvrtcProgram;

enum {
    KF_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    KF_CU_ATTR_CLOCK_RATE = 13, /* kHz, the maximum SM clock */
    KF_CU_ATTR_SM_COUNT = 16,
    KF_CU_ATTR_MEM_CLOCK_RATE = 36, /* kHz */
    KF_CU_ATTR_MEM_BUS_WIDTH = 37,  /* bits */
    KF_CU_ATTR_L2_SIZE = 38,
    KF_CU_ATTR_MAX_THREADS_PER_SM = 39,
    KF_CU_ATTR_CC_MAJOR = 75,
    KF_CU_ATTR_CC_MINOR = 76,
    KF_CU_ATTR_MAX_SHARED_OPTIN = 97, /* bytes of shared memory a block may opt in to */
    KF_CU_FUNC_MAX_THREADS = 0,
    KF_CU_FUNC_SHARED = 1,
    KF_CU_FUNC_LOCAL = 3,
    KF_CU_FUNC_REGS = 4,
    KF_CU_FUNC_MAX_DYNAMIC_SHARED = 8, /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    KF_CU_LIMIT_PERSISTING_L2 = 6,     /* CU_LIMIT_PERSISTING_L2_CACHE_SIZE */
    KF_CU_STREAM_ATTR_ACCESS_POLICY_WINDOW = 1,
};

/* CUaccessPolicyWindow, inside the 64-byte CUstreamAttrValue union */
typedef struct {
    void *base_ptr;
    size_t num_bytes;
    float hitRatio;
    int hitProp, missProp; /* 0 normal, 1 streaming, 2 persisting */
} kf_cu_access_window;
typedef union {
    kf_cu_access_window window;
    char pad[64];
} kf_cu_stream_attr;

/* The driver API (libcuda.so.1). */
typedef struct {
    void *lib;
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DeviceGetUuid)(unsigned char *, CUdevice); /* 16 bytes */
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*FuncGetAttribute)(int *, int, CUfunction);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemHostRegister)(void *, size_t, unsigned);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    CUresult (*GetErrorName)(CUresult, const char **);
    /* CUDA graphs (graph baselines); NULL when the driver lacks them */
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
    /* the persisting-L2 set-aside and access windows; NULL when the driver lacks them */
    CUresult (*CtxSetLimit)(int, size_t);
    CUresult (*CtxGetLimit)(size_t *, int);
    CUresult (*CtxResetPersistingL2Cache)(void);
    CUresult (*StreamSetAttribute)(CUstream, int, const kf_cu_stream_attr *);
} kf_cu_api;

#define KF_CU_CAPTURE_THREAD_LOCAL 1

/* NVRTC (libnvrtc.so). */
typedef struct {
    void *lib;
    int (*Version)(int *, int *);
    int (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                         const char *const *);
    int (*CompileProgram)(nvrtcProgram, int, const char *const *);
    int (*GetProgramLogSize)(nvrtcProgram, size_t *);
    int (*GetProgramLog)(nvrtcProgram, char *);
    int (*GetCUBINSize)(nvrtcProgram, size_t *);
    int (*GetCUBIN)(nvrtcProgram, char *);
    int (*DestroyProgram)(nvrtcProgram *);
    const char *(*GetErrorString)(int);
    char path[512];    /* the library that was loaded */
    char include[512]; /* the toolkit's include directory, or "" */
} kf_nvrtc_api;

/* Load the driver API (KFORGE_LIBCUDA or libcuda.so.1). NULL with a reason in err.
 * The table lives on a page of its own (kf_cu_protect). */
const kf_cu_api *kf_cu_load(char *err, size_t n);
/* The loaded table, at a fixed address: the pointer itself is read-only data (RELRO),
 * so code that calls through it (the GPU worker) holds no writable pointer to redirect. */
extern const kf_cu_api *const kf_cu;
/* Make the table read-only and seal it (mseal, where the kernel has it), once loaded:
 * host code in the same process (a host-mode candidate) can then neither rewrite an
 * entry point nor make the page writable again. 0, or -1 when mprotect failed (the
 * table stays writable); *sealed says whether mseal held. */
int kf_cu_protect(int *sealed);
/* Load NVRTC (KFORGE_NVRTC, or libnvrtc.so* under CUDA_HOME, /usr/local/cuda*, or the
 * loader's path). NULL with a reason in err. Thread-safe; loaded once. */
const kf_nvrtc_api *kf_nvrtc_load(char *err, size_t n);
/* Directories where a CUDA toolkit may live, most specific first: CUDA_HOME, CUDA_PATH,
 * /usr/local/cuda, then /usr/local/cuda-* newest first. Fills at most 8 roots. */
void kf_cu_toolkit_roots(char roots[][256], int *nroots);
/* "CUDA_ERROR_ILLEGAL_ADDRESS" etc.; never NULL. */
const char *kf_cu_errname(const kf_cu_api *cu, CUresult r);

#endif

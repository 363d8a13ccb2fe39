/*
 * cupti_abi.h - the few CUPTI types and callback ids cupti.c uses, declared here so the
 * build needs no CUPTI headers (like cuda_api.h for the driver). Values from CUDA 13's
 * cupti_callbacks.h, cupti_result.h, cupti_driver_cbid.h, cupti_runtime_cbid.h and
 * generated_cuda_meta.h; callback ids are stable across CUPTI versions (new ones are only
 * appended). tests/test_cupti_abi.c checks every one against the real headers when the
 * build machine has them. Internal to the CUDA backend and its tests.
 */
#ifndef KF_CUPTI_ABI_H
#define KF_CUPTI_ABI_H

#include <stdint.h>

enum {
    KF_CUPTI_SUCCESS = 0,
    KF_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS = 39,
    KF_CUPTI_API_ENTER = 0,
    KF_CUPTI_API_EXIT = 1,
    KF_CUPTI_DOMAIN_DRIVER = 1,
    KF_CUPTI_DOMAIN_RUNTIME = 2,
    KF_CUPTI_MAXCBID = 2048, /* bound of the memcpy/memset bitmaps (CUDA 13: 807 and 523) */
};

/* driver API callback ids (CUPTI_DRIVER_TRACE_CBID_*) */
enum {
    KF_CUPTI_DRV_cuLaunch = 115,
    KF_CUPTI_DRV_cuLaunchGrid = 116,
    KF_CUPTI_DRV_cuLaunchGridAsync = 117,
    KF_CUPTI_DRV_cuMemsetD32Async = 220,
    KF_CUPTI_DRV_cuMemcpyHtoD_v2 = 276,
    KF_CUPTI_DRV_cuMemcpyDtoH_v2 = 278,
    KF_CUPTI_DRV_cuLaunchKernel = 307,
    KF_CUPTI_DRV_cuLaunchKernel_ptsz = 442,
    KF_CUPTI_DRV_cuLaunchCooperativeKernel = 477,
    KF_CUPTI_DRV_cuLaunchCooperativeKernel_ptsz = 478,
    KF_CUPTI_DRV_cuLaunchCooperativeKernelMultiDevice = 480,
    KF_CUPTI_DRV_cuGraphLaunch = 514,
    KF_CUPTI_DRV_cuGraphLaunch_ptsz = 515,
    KF_CUPTI_DRV_cuLaunchKernelEx = 652,
    KF_CUPTI_DRV_cuLaunchKernelEx_ptsz = 653,
};

/* runtime API callback ids (CUPTI_RUNTIME_TRACE_CBID_*) */
enum {
    KF_CUPTI_RT_cudaLaunch_v3020 = 13,
    KF_CUPTI_RT_cudaMemcpy_v3020 = 31,
    KF_CUPTI_RT_cudaMemset_v3020 = 49,
    KF_CUPTI_RT_cudaLaunchKernel_v7000 = 211,
    KF_CUPTI_RT_cudaLaunch_ptsz_v7000 = 213,
    KF_CUPTI_RT_cudaLaunchKernel_ptsz_v7000 = 214,
    KF_CUPTI_RT_cudaLaunchCooperativeKernel_v9000 = 269,
    KF_CUPTI_RT_cudaLaunchCooperativeKernel_ptsz_v9000 = 270,
    KF_CUPTI_RT_cudaLaunchCooperativeKernelMultiDevice_v9000 = 272,
    KF_CUPTI_RT_cudaGraphLaunch_v10000 = 311,
    KF_CUPTI_RT_cudaGraphLaunch_ptsz_v10000 = 312,
    KF_CUPTI_RT_cudaLaunchKernelExC_v11060 = 430,
    KF_CUPTI_RT_cudaLaunchKernelExC_ptsz_v11060 = 431,
    KF_CUPTI_RT___cudaLaunchKernel_v13000 = 505,
    KF_CUPTI_RT___cudaLaunchKernel_ptsz_v13000 = 506,
};

/* CUpti_CallbackData (enums are int-sized; handles are pointers) */
typedef struct {
    int callbackSite;
    const char *functionName;
    const void *functionParams;
    void *functionReturnValue; /* CUresult * or cudaError_t *, at API exit only */
    const char *symbolName;    /* the kernel's name, for launch callbacks (may be NULL) */
    void *context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} kf_cupti_cbdata;

/* cuLaunchKernel(_ptsz), cuLaunchCooperativeKernel(_ptsz), cuLaunch, cuLaunchGrid(Async):
 * the function comes first */
typedef struct {
    void *f;
} kf_cupti_launch_params;
/* cuLaunchKernelEx(_ptsz) */
typedef struct {
    const void *config;
    void *f;
} kf_cupti_launchex_params;
/* cuLaunchCooperativeKernelMultiDevice, cudaLaunchCooperativeKernelMultiDevice */
typedef struct {
    const void *launchParamsList;
    unsigned int numDevices;
    unsigned int flags;
} kf_cupti_multidev_params;

/* For tests: the callback cupti.c subscribes, fed fake records; and a switch that makes
 * kf_cupti_end report available = 1 without libcupti (memcpy/memset ids then come from
 * the short list above). */
void kf_cupti__callback(void *userdata, int domain, uint32_t cbid, const void *cbdata);
void kf_cupti__set_fake(int on);
/* 1 for a CUPTI callback name of a memcpy/memset entry point ("cuMemcpyHtoD_v2",
 * "cudaMemset_v3020"). Pure. */
int kf_cupti__is_memop_name(const char *cbname);
/* Since the last begin: runtime launch/graph/memop calls seen (outermost only), and how
 * many of them no driver callback reported (so they were counted at the runtime level). */
void kf_cupti__stats(int *rt_calls, int *rt_counted_at_runtime);

#endif

/*
 * test_cupti_abi.c - cupti_abi.h declares CUPTI's types and callback ids itself (the
 * build has no CUPTI headers on CI). Where the build machine has the real headers
 * (tests/CMakeLists.txt finds them and defines KF_HAVE_CUPTI_H), every value and layout
 * is checked against them at compile time; the test then passes, else it skips.
 */
#include "kft.h"

#ifdef KF_HAVE_CUPTI_H
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stddef.h>
#endif

#include "backend/cuda/cupti_abi.h"

#ifdef KF_HAVE_CUPTI_H
#define SAME(a, b) _Static_assert((long long)(a) == (long long)(b), #a " != " #b)
#define DRV(x) SAME(KF_CUPTI_DRV_##x, CUPTI_DRIVER_TRACE_CBID_##x)
#define RT(x) SAME(KF_CUPTI_RT_##x, CUPTI_RUNTIME_TRACE_CBID_##x)
SAME(KF_CUPTI_SUCCESS, CUPTI_SUCCESS);
SAME(KF_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME(KF_CUPTI_API_ENTER, CUPTI_API_ENTER);
SAME(KF_CUPTI_API_EXIT, CUPTI_API_EXIT);
SAME(KF_CUPTI_DOMAIN_DRIVER, CUPTI_CB_DOMAIN_DRIVER_API);
SAME(KF_CUPTI_DOMAIN_RUNTIME, CUPTI_CB_DOMAIN_RUNTIME_API);
_Static_assert((int)CUPTI_DRIVER_TRACE_CBID_SIZE <= (int)KF_CUPTI_MAXCBID,
               "driver callback ids outgrew the bitmap");
_Static_assert((int)CUPTI_RUNTIME_TRACE_CBID_SIZE <= (int)KF_CUPTI_MAXCBID,
               "runtime callback ids outgrew the bitmap");
DRV(cuLaunch);
DRV(cuLaunchGrid);
DRV(cuLaunchGridAsync);
DRV(cuMemsetD32Async);
DRV(cuMemcpyHtoD_v2);
DRV(cuMemcpyDtoH_v2);
DRV(cuLaunchKernel);
DRV(cuLaunchKernel_ptsz);
DRV(cuLaunchCooperativeKernel);
DRV(cuLaunchCooperativeKernel_ptsz);
DRV(cuLaunchCooperativeKernelMultiDevice);
DRV(cuGraphLaunch);
DRV(cuGraphLaunch_ptsz);
DRV(cuLaunchKernelEx);
DRV(cuLaunchKernelEx_ptsz);
RT(cudaLaunch_v3020);
RT(cudaMemcpy_v3020);
RT(cudaMemset_v3020);
RT(cudaLaunchKernel_v7000);
RT(cudaLaunch_ptsz_v7000);
RT(cudaLaunchKernel_ptsz_v7000);
RT(cudaLaunchCooperativeKernel_v9000);
RT(cudaLaunchCooperativeKernel_ptsz_v9000);
RT(cudaLaunchCooperativeKernelMultiDevice_v9000);
RT(cudaGraphLaunch_v10000);
RT(cudaGraphLaunch_ptsz_v10000);
RT(cudaLaunchKernelExC_v11060);
RT(cudaLaunchKernelExC_ptsz_v11060);
RT(__cudaLaunchKernel_v13000);
RT(__cudaLaunchKernel_ptsz_v13000);
#define AT(ours, f, theirs, g) SAME(offsetof(ours, f), offsetof(theirs, g))
SAME(sizeof(kf_cupti_cbdata), sizeof(CUpti_CallbackData));
AT(kf_cupti_cbdata, callbackSite, CUpti_CallbackData, callbackSite);
AT(kf_cupti_cbdata, functionParams, CUpti_CallbackData, functionParams);
AT(kf_cupti_cbdata, functionReturnValue, CUpti_CallbackData, functionReturnValue);
AT(kf_cupti_cbdata, symbolName, CUpti_CallbackData, symbolName);
AT(kf_cupti_cbdata, correlationId, CUpti_CallbackData, correlationId);
SAME(sizeof(CUpti_ApiCallbackSite), sizeof(int));
SAME(sizeof(CUpti_CallbackDomain), sizeof(int));
SAME(sizeof(CUresult), sizeof(int));
SAME(sizeof(cudaError_t), sizeof(int));
AT(kf_cupti_launch_params, f, cuLaunchKernel_params, f);
AT(kf_cupti_launch_params, f, cuLaunchKernel_ptsz_params, f);
AT(kf_cupti_launch_params, f, cuLaunchCooperativeKernel_params, f);
AT(kf_cupti_launch_params, f, cuLaunchCooperativeKernel_ptsz_params, f);
AT(kf_cupti_launch_params, f, cuLaunch_params, f);
AT(kf_cupti_launch_params, f, cuLaunchGrid_params, f);
AT(kf_cupti_launch_params, f, cuLaunchGridAsync_params, f);
AT(kf_cupti_launchex_params, f, cuLaunchKernelEx_params, f);
AT(kf_cupti_launchex_params, f, cuLaunchKernelEx_ptsz_params, f);
AT(kf_cupti_multidev_params, numDevices, cuLaunchCooperativeKernelMultiDevice_params, numDevices);
SAME(sizeof(((cuLaunchCooperativeKernelMultiDevice_params *)0)->numDevices), sizeof(unsigned int));
#endif

static void t_abi(const void *arg) {
    (void)arg;
#ifdef KF_HAVE_CUPTI_H
    fprintf(stderr, "    cupti_abi.h matches the CUPTI %d headers of this build\n", CUPTI_API_VERSION);
#else
    kft_skip("built without the CUPTI headers (no CUDA toolkit at configure time)");
#endif
}

void kft_register_cupti_abi(void) { kft_add("cupti/abi_matches_headers", t_abi, NULL, 10); }

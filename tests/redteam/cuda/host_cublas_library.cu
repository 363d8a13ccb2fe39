/* kforge-test: task=tasks/cuda/sgemm expect=accepted threat=21 */
/*
 * Threat 21, a library doing the work: the "kernel" is one cublasSgemm call. It is
 * correct, so it is accepted; what must not happen is a silent claim that the
 * candidate's own code is fast. The link directive is required to link cuBLAS (a file
 * without it fails to link), the result's "libraries" names cublas and libcublas.so (from the
 * object's DT_NEEDED), and with CUPTI "library_kernels" lists cuBLAS's kernels per shape
 * (tests/test_cuda.c: cuda/host_build in CI, cuda/host_gpu_report on a GPU).
 */
// kforge:host
// kforge:link cublas
#include <cublas_v2.h>

extern "C" int kforge_launch(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
                             cudaStream_t stream)
{
    static cublasHandle_t h;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    cublasSetStream(h, stream);
    const float one = 1.f, zero = 0.f;
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)n, a, (int)k, &zero,
                       c, (int)n) == CUBLAS_STATUS_SUCCESS ? 0 : 3;
}

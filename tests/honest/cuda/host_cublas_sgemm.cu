/* kforge-test: task=tasks/cuda/sgemm expect=accepted threat=21 */
/*
 * Honest, host mode with a library: C = A B through cublasSgemm on the given stream
 * (the link directive below). Row-major C = A B is column-major C^T = B^T A^T, so B is passed
 * first. The default math mode (no TF32): full f32 products, inside rtol 1e-3. The
 * handle is created once; the stream is set on every call. Accepted, and reported:
 * "libraries" names cublas and libcublas.so, and with CUPTI the per-shape
 * "library_kernels" names cuBLAS's kernels (tests/test_cuda.c, cuda/host_gpu_report).
 */
// kforge:host
// kforge:link cublas
#include <cublas_v2.h>

extern "C" int kforge_launch(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
                             cudaStream_t stream)
{
    static cublasHandle_t h;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) return 2;
    const float one = 1.f, zero = 0.f;
    cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)n,
                                    a, (int)k, &zero, c, (int)n);
    return st == CUBLAS_STATUS_SUCCESS ? 0 : 3;
}

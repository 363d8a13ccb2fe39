/* Host-mode sgemm through cuBLAS (docs/cuda.md "Host mode"): C = A B row-major is
 * C^T = B^T A^T column-major, one cublasSgemm on the given stream, default math mode
 * (full f32, no TF32). The result names the library: "libraries" has cublas and
 * libcublas.so, and with CUPTI each shape lists cuBLAS's kernels as library_kernels. */
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
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)n, a, (int)k, &zero,
                       c, (int)n) == CUBLAS_STATUS_SUCCESS ? 0 : 3;
}

/* kforge-test: task=tasks/cuda/sgemm expect=bench_rejected reason=sandbox_violation threat=21 */
/*
 * Threat 21 with a timing detector: a correct but slow tiled SGEMM while checked; once
 * it has been called more than 12 times in a row with the same sizes (a check calls at most 4
 * times per shape, bench's timing worker dozens), it loads cuBLAS with dlopen and lets
 * cublasSgemm do the work, undeclared (no link directive). The check's worker never maps
 * cuBLAS, so the check saw nothing; bench reported 4.5x with "libraries" empty.
 *
 * What stops it: every timing worker's mapped libraries are read after every call,
 * as the check's are after every shape (the kernel's view, /proc/PID/maps, while the
 * worker is frozen): an undeclared vendor library there is sandbox_violation ("seen
 * while timing"). tests/test_cuda.c cuda/timing_libraries does the same on the stand-in
 * driver.
 */
// kforge:host
#include <cublas_v2.h>
#include <dlfcn.h>

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const float *, const float *, int, const float *, int, const float *,
                                   float *, int);

#define T 16
__global__ void tiled(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    __shared__ float as[T][T], bs[T][T];
    int64_t row = (int64_t)blockIdx.y * T + threadIdx.y, col = (int64_t)blockIdx.x * T + threadIdx.x;
    float acc = 0.f;
    for (int64_t k0 = 0; k0 < k; k0 += T) {
        as[threadIdx.y][threadIdx.x] = row < m && k0 + threadIdx.x < k ? a[row * k + k0 + threadIdx.x] : 0.f;
        bs[threadIdx.y][threadIdx.x] = col < n && k0 + threadIdx.y < k ? b[(k0 + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
        for (int i = 0; i < T; i++) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}

static int64_t lm, ln, lk, same;
static cublasHandle_t h;
static sgemm_fn sgemm;
static stream_fn set_stream;

extern "C" int kforge_launch(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
                             cudaStream_t stream)
{
    same = (m == lm && n == ln && k == lk) ? same + 1 : 0;
    lm = m, ln = n, lk = k;
    if (same > 12 && !sgemm) {
        void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libcublas.so.12", RTLD_NOW | RTLD_LOCAL);
        create_fn create = lib ? (create_fn)dlsym(lib, "cublasCreate_v2") : NULL;
        if (create && create(&h) == CUBLAS_STATUS_SUCCESS) {
            set_stream = (stream_fn)dlsym(lib, "cublasSetStream_v2");
            sgemm = (sgemm_fn)dlsym(lib, "cublasSgemm_v2");
        }
    }
    if (sgemm && set_stream) {
        const float one = 1.f, zero = 0.f;
        set_stream(h, stream);
        return sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)n, a, (int)k, &zero, c,
                     (int)n) == CUBLAS_STATUS_SUCCESS ? 0 : 3;
    }
    dim3 grid((unsigned)((n + T - 1) / T), (unsigned)((m + T - 1) / T));
    tiled<<<grid, dim3(T, T), 0, stream>>>(a, b, c, m, n, k);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

/* Host-mode bgemm replayed as a CUDA graph (docs/cuda.md "Host mode"): a 16x16-tiled
 * kernel with f32 accumulation (tiles of A and B in shared memory), captured on the
 * given stream into a graph keyed by the buffers and the shape (captured again when any
 * changes, so a replay always reads the current inputs), then cudaGraphLaunch. With
 * CUPTI, kforge bench reports launch_mode "graph" and marks the comparison against the
 * kernel-mode reference unfair (no graph baseline yet): never a silent speedup. */
// kforge:host
#include <cuda_bf16.h>

#define T 16

__global__ void bgemm_tiled(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c,
                            int64_t m, int64_t n, int64_t k)
{
    __shared__ float sa[T][T], sb[T][T + 1];
    const int64_t row = (int64_t)blockIdx.y * T + threadIdx.y, col = (int64_t)blockIdx.x * T + threadIdx.x;
    float acc = 0.f;
    for (int64_t p0 = 0; p0 < k; p0 += T) {
        int64_t pa = p0 + threadIdx.x, pb = p0 + threadIdx.y;
        sa[threadIdx.y][threadIdx.x] = row < m && pa < k ? __bfloat162float(a[row * k + pa]) : 0.f;
        sb[threadIdx.y][threadIdx.x] = pb < k && col < n ? __bfloat162float(b[pb * n + col]) : 0.f;
        __syncthreads();
#pragma unroll
        for (int q = 0; q < T; q++) acc += sa[threadIdx.y][q] * sb[q][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = __float2bfloat16(acc);
}

extern "C" int kforge_launch(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c, int64_t m,
                             int64_t n, int64_t k, cudaStream_t stream)
{
    static cudaGraphExec_t exec;
    static const void *ka, *kb;
    static void *kc;
    static int64_t km = -1, kn = -1, kk = -1;
    if (!exec || ka != a || kb != b || kc != c || km != m || kn != n || kk != k) {
        if (exec) cudaGraphExecDestroy(exec);
        exec = 0;
        cudaGraph_t g;
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1;
        bgemm_tiled<<<dim3((unsigned)((n + T - 1) / T), (unsigned)((m + T - 1) / T)), dim3(T, T), 0, stream>>>(
            a, b, c, m, n, k);
        if (cudaStreamEndCapture(stream, &g) != cudaSuccess) return 2;
        if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) return 3;
        cudaGraphDestroy(g);
        ka = a, kb = b, kc = c, km = m, kn = n, kk = k;
    }
    return cudaGraphLaunch(exec, stream) == cudaSuccess ? 0 : 4;
}

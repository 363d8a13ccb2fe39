/* bench/sum_probe.cu - where the sum kernel's fixed cost per call goes (issue 3's 80%-of-
 * copy-bandwidth target at n = 2^24). A standalone program, not part of kforge: built with
 * nvcc (`make -C bench sum_probe` is not wired; see scripts/gpu-session.sh step "probe"),
 * it times variants of tasks/cuda/sum/candidates/fast.cu the way kforge's GPU worker does
 * (a read-based L2 flush of twice the L2 queued before event 0, then the launch, then event
 * 1) and prints the median of 41 calls per variant and size, so the fixed part (launch,
 * ramp-up, the grid's tail, the last block's pass) can be told from the streaming part.
 * Variants:
 *   empty     one block that writes out[0]: the floor of the timed span itself
 *   stream    fast.cu's loads and block sums, no cross-block step (wrong sum: timing only)
 *   fast      fast.cu as bundled (block counter, last block adds the partials)
 *   fatomic   block sums atomically added to a module accumulator; the last block reads
 *             it (atomicExch) into out: no pass over the partials
 *   wide      fast.cu's design with 132 blocks of 1024 threads (fewer counter atomics)
 *   copy      a float4 copy of x into y (read + write), for the copy-bandwidth yardstick
 * Usage: sum_probe [reps]. */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

__global__ void l2_read(const uint4 *p, unsigned long long n, unsigned *sink) {
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void k_empty(float *out) {
    if (threadIdx.x == 0) out[0] = 0.0f;
}

#define MAXB 1056
__device__ float partials[MAXB];
__device__ unsigned finished;
__device__ float acc_g;

static __device__ __forceinline__ float hsum4(float4 q) { return (q.x + q.y) + (q.z + q.w); }

/* the block's sum of x (fast.cu's loop), in every thread of warp 0's lane 0 ... returned to t == 0 */
template <int T>
static __device__ __forceinline__ float block_sum(const float *__restrict__ x, int64_t n) {
    __shared__ float red[T / 32];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * T + t, stride = (int64_t)gridDim.x * T, n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t i = g;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 q0 = x4[i], q1 = x4[i + stride], q2 = x4[i + 2 * stride], q3 = x4[i + 3 * stride];
        a0 += hsum4(q0), a1 += hsum4(q1), a2 += hsum4(q2), a3 += hsum4(q3);
    }
    for (; i < n4; i += stride) a0 += hsum4(x4[i]);
    if (g < n - 4 * n4) a1 += x[4 * n4 + g];
    float s = (a0 + a1) + (a2 + a3);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) red[t >> 5] = s;
    __syncthreads();
    float b = 0;
    if (t == 0)
        for (int w = 0; w < T / 32; w++) b += red[w];
    return b;
}

template <int T>
__global__ void __launch_bounds__(T) k_stream(const float *__restrict__ x, float *__restrict__ out, int64_t n) {
    float b = block_sum<T>(x, n);
    if (threadIdx.x == 0) partials[blockIdx.x] = b;
}

template <int T>
__global__ void __launch_bounds__(T) k_fast(const float *__restrict__ x, float *__restrict__ out, int64_t n) {
    __shared__ bool last;
    __shared__ float red2[T / 32];
    float b = block_sum<T>(x, n);
    const int t = threadIdx.x;
    if (t == 0) {
        partials[blockIdx.x] = b;
        __threadfence();
        last = atomicAdd(&finished, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    float v = 0;
    for (unsigned k = t; k < gridDim.x; k += T) v += ((volatile float *)partials)[k];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((t & 31) == 0) red2[t >> 5] = v;
    __syncthreads();
    if (t == 0) {
        float s = 0;
        for (int w = 0; w < T / 32; w++) s += red2[w];
        out[0] = s;
        finished = 0;
    }
}

template <int T>
__global__ void __launch_bounds__(T) k_fatomic(const float *__restrict__ x, float *__restrict__ out, int64_t n) {
    float b = block_sum<T>(x, n);
    if (threadIdx.x == 0) {
        atomicAdd(&acc_g, b);
        __threadfence();
        if (atomicAdd(&finished, 1u) == gridDim.x - 1) {
            out[0] = atomicExch(&acc_g, 0.0f);
            finished = 0;
        }
    }
}

__global__ void k_copy(const float4 *__restrict__ x, float4 *__restrict__ y, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 41;
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    const int sms = pr.multiProcessorCount;
    size_t fl = (size_t)pr.l2CacheSize * 2;
    uint4 *flush;
    unsigned *sink;
    CK(cudaMalloc(&flush, fl));
    CK(cudaMalloc(&sink, 4));
    CK(cudaMemset(flush, 0x5a, fl));
    const int64_t NMAX = (int64_t)1 << 28;
    float *x, *y, *out;
    CK(cudaMalloc(&x, NMAX * 4));
    CK(cudaMalloc(&y, NMAX * 4));
    CK(cudaMalloc(&out, 4));
    {
        std::vector<float> h(NMAX);
        for (int64_t i = 0; i < NMAX; i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
        CK(cudaMemcpy(x, h.data(), NMAX * 4, cudaMemcpyHostToDevice));
    }
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("device %s, %d SMs, L2 %d bytes; median of %d calls, us\n", pr.name, sms, pr.l2CacheSize, reps);
    const char *names[] = {"empty", "stream", "fast", "fatomic", "wide", "copy"};
    const int64_t ns[] = {100003, (int64_t)1 << 24, (int64_t)1 << 25, (int64_t)1 << 27};
    printf("%-8s", "n");
    for (const char *nm : names) printf(" %9s", nm);
    printf("   fast GB/s  copy GB/s(r+w)\n");
    for (int64_t n : ns) {
        double med[6];
        for (int v = 0; v < 6; v++) {
            std::vector<float> ts;
            for (int r = 0; r < reps; r++) {
                l2_read<<<sms * 4, 512, 0, s>>>(flush, fl / 16, sink);
                CK(cudaEventRecord(e0, s));
                int grid = (int)std::min<int64_t>((n + 1023) / 1024, 4 * sms);
                switch (v) {
                case 0: k_empty<<<1, 32, 0, s>>>(out); break;
                case 1: k_stream<256><<<grid, 256, 0, s>>>(x, out, n); break;
                case 2: k_fast<256><<<grid, 256, 0, s>>>(x, out, n); break;
                case 3: k_fatomic<256><<<grid, 256, 0, s>>>(x, out, n); break;
                case 4: k_fast<1024><<<(int)std::min<int64_t>((n + 4095) / 4096, sms), 1024, 0, s>>>(x, out, n); break;
                case 5: k_copy<<<sms * 8, 512, 0, s>>>((const float4 *)x, (float4 *)y, n / 4); break;
                }
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                ts.push_back(ms * 1000.0f);
            }
            CK(cudaGetLastError());
            std::sort(ts.begin(), ts.end());
            med[v] = ts[ts.size() / 2];
        }
        printf("%-8lld", (long long)n);
        for (int v = 0; v < 6; v++) printf(" %9.2f", med[v]);
        printf("   %9.0f  %9.0f\n", 4.0 * n / med[2] / 1e3, 8.0 * n / med[5] / 1e3);
    }
    /* correctness of the variants that claim a sum, at 2^24 (against a double sum on the host) */
    {
        int64_t n = (int64_t)1 << 24;
        std::vector<float> h(n);
        CK(cudaMemcpy(h.data(), x, n * 4, cudaMemcpyDeviceToHost));
        double ref = 0;
        for (float f : h) ref += f;
        int grid = (int)std::min<int64_t>((n + 1023) / 1024, 4 * sms);
        float got[3];
        k_fast<256><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[0], out, 4, cudaMemcpyDeviceToHost));
        k_fatomic<256><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[1], out, 4, cudaMemcpyDeviceToHost));
        k_fast<1024><<<sms, 1024, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[2], out, 4, cudaMemcpyDeviceToHost));
        printf("check n=2^24: ref %.1f fast %.1f fatomic %.1f wide %.1f\n", ref, got[0], got[1], got[2]);
    }
    return 0;
}

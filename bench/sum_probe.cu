/* bench/sum_probe.cu - where the sum kernel's fixed cost per call goes (the 80%-of-
 * copy-bandwidth target at n = 2^24, BENCHMARKS.md). A standalone program, not part of kforge: built with
 * nvcc (`make -C bench sum_probe` is not wired; see scripts/gpu-steps.sh step "probe"),
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
 *   ilp4p     fast with the last partial group of loads issued at once (predicated)
 *   ilp8p     the same with 8 loads in flight per thread
 *   fast2k    ilp4p with 8 blocks of 256 per SM
 *   stamp     ilp4p recording %globaltimer: first block's start, last block's loads done,
 *             the end; printed with the event span outside the kernel (launch, events)
 *   lean      ilp4p's loads; warp 0 alone finishes the block (one barrier), one acq_rel
 *             atomic instead of __threadfence + atomicAdd, the last block's warp 0 adds
 *             the partials (fast.cu's design)
 *   lean2     lean whose last warp reads the partials as float4, all in one round trip
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
__device__ __align__(16) float partials[MAXB];
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

/* ILP loads per iteration, the last partial group issued at once (predicated) */
template <int T, int ILP>
static __device__ __forceinline__ float block_sum_ilp(const float *__restrict__ x, int64_t n) {
    __shared__ float red[T / 32];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * T + t, stride = (int64_t)gridDim.x * T, n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float a[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) a[k] = 0;
    int64_t i = g;
    for (; i + (ILP - 1) * stride < n4; i += ILP * stride) {
        float4 q[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++) q[k] = x4[i + k * stride];
#pragma unroll
        for (int k = 0; k < ILP; k++) a[k] += hsum4(q[k]);
    }
    {
        float4 q[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++) q[k] = i + k * stride < n4 ? x4[i + k * stride] : make_float4(0, 0, 0, 0);
#pragma unroll
        for (int k = 0; k < ILP; k++) a[k] += hsum4(q[k]);
    }
    if (g < n - 4 * n4) a[0] += x[4 * n4 + g];
    float s = 0;
#pragma unroll
    for (int k = 0; k < ILP; k++) s += a[k];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) red[t >> 5] = s;
    __syncthreads();
    float b = 0;
    if (t == 0)
        for (int w = 0; w < T / 32; w++) b += red[w];
    return b;
}

/* globaltimer stamps of one call: first block's start, last block's loads done, the end */
__device__ unsigned long long st_first, st_loads, st_end;
static __device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));
    return v;
}

/* fast.cu's cross-block step over block_sum_ilp<T, ILP>; STAMP records the globaltimer */
template <int T, int ILP, bool STAMP>
__global__ void __launch_bounds__(T) k_fastp(const float *__restrict__ x, float *__restrict__ out, int64_t n) {
    __shared__ bool last;
    __shared__ float red2[T / 32];
    if (STAMP && threadIdx.x == 0) atomicMin(&st_first, gtimer());
    float b = block_sum_ilp<T, ILP>(x, n);
    const int t = threadIdx.x;
    if (t == 0) {
        if (STAMP) atomicMax(&st_loads, gtimer());
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
        if (STAMP) st_end = gtimer();
    }
}

/* "lean": ilp4p's loads; the block's warp sums go to warp 0 alone (one barrier), whose
 * lane 0 stores the partial and bumps the counter with one acq_rel atomic (no
 * __threadfence); the last block's warp 0 adds the partials in index order. */
template <int T, int ILP, bool V4>
__global__ void __launch_bounds__(T) k_lean(const float *__restrict__ x, float *__restrict__ out, int64_t n) {
    __shared__ float red[T / 32];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * T + t, stride = (int64_t)gridDim.x * T, n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float a[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) a[k] = 0;
    int64_t i = g;
    for (; i + (ILP - 1) * stride < n4; i += ILP * stride) {
        float4 q[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++) q[k] = x4[i + k * stride];
#pragma unroll
        for (int k = 0; k < ILP; k++) a[k] += hsum4(q[k]);
    }
    {
        float4 q[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++) q[k] = i + k * stride < n4 ? x4[i + k * stride] : make_float4(0, 0, 0, 0);
#pragma unroll
        for (int k = 0; k < ILP; k++) a[k] += hsum4(q[k]);
    }
    if (g < n - 4 * n4) a[0] += x[4 * n4 + g];
    float s = 0;
#pragma unroll
    for (int k = 0; k < ILP; k++) s += a[k];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) red[t >> 5] = s;
    __syncthreads();
    if (t >= 32) return;
    float b = t < T / 32 ? red[t] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) b += __shfl_xor_sync(0xffffffffu, b, o);
    unsigned prev = 0;
    if (t == 0) {
        partials[blockIdx.x] = b;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(&finished) : "memory");
    }
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != gridDim.x - 1) return;
    __syncwarp();
    float v = 0;
    if (V4) { /* every partial in one round trip: lane l loads float4 l, l + 32, ... at once */
        const float4 *p4 = reinterpret_cast<const float4 *>(partials);
        const unsigned nb = gridDim.x, n4b = (nb + 3) / 4;
        float4 q[(MAXB / 4 + 31) / 32];
#pragma unroll
        for (int k = 0; k < (MAXB / 4 + 31) / 32; k++)
            q[k] = t + 32u * k < n4b ? __ldcg(p4 + t + 32 * k) : make_float4(0, 0, 0, 0);
#pragma unroll
        for (int k = 0; k < (MAXB / 4 + 31) / 32; k++) {
            const unsigned j = 4u * (t + 32u * k);
            v += (j < nb ? q[k].x : 0.0f) + (j + 1 < nb ? q[k].y : 0.0f);
            v += (j + 2 < nb ? q[k].z : 0.0f) + (j + 3 < nb ? q[k].w : 0.0f);
        }
    } else {
        for (unsigned k = t; k < gridDim.x; k += 32) v += ((volatile float *)partials)[k];
    }
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (t == 0) {
        out[0] = v;
        finished = 0;
    }
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
    const char *names[] = {"empty", "stream", "fast", "fatomic", "wide", "copy", "ilp4p", "ilp8p", "fast2k", "stamp", "lean", "lean2"};
    enum { NV = 12 };
    const int64_t ns[] = {100003, (int64_t)1 << 24, (int64_t)1 << 25, (int64_t)1 << 27};
    printf("%-8s", "n");
    for (const char *nm : names) printf(" %9s", nm);
    printf("   fast GB/s  copy GB/s(r+w)\n");
    for (int64_t n : ns) {
        double med[NV];
        double sp[3] = {0, 0, 0}; /* stamp medians: start->loads done, loads done->end, event span - (start->end) */
        std::vector<double> s0, s1, s2;
        for (int v = 0; v < NV; v++) {
            std::vector<float> ts;
            for (int r = 0; r < reps; r++) {
                if (v == 9) {
                    unsigned long long hi = ~0ull, lo = 0;
                    CK(cudaMemcpyToSymbolAsync(st_first, &hi, 8, 0, cudaMemcpyHostToDevice, s));
                    CK(cudaMemcpyToSymbolAsync(st_loads, &lo, 8, 0, cudaMemcpyHostToDevice, s));
                    CK(cudaMemcpyToSymbolAsync(st_end, &lo, 8, 0, cudaMemcpyHostToDevice, s));
                }
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
                case 6: k_fastp<256, 4, false><<<grid, 256, 0, s>>>(x, out, n); break;
                case 7: k_fastp<256, 8, false><<<grid, 256, 0, s>>>(x, out, n); break;
                case 8: k_fastp<256, 4, false><<<(int)std::min<int64_t>((n + 1023) / 1024, 8 * sms), 256, 0, s>>>(x, out, n); break;
                case 9: k_fastp<256, 4, true><<<grid, 256, 0, s>>>(x, out, n); break;
                case 10: k_lean<256, 4, false><<<grid, 256, 0, s>>>(x, out, n); break;
                case 11: k_lean<256, 4, true><<<grid, 256, 0, s>>>(x, out, n); break;
                }
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                ts.push_back(ms * 1000.0f);
                if (v == 9) {
                    unsigned long long a, b, c;
                    CK(cudaMemcpyFromSymbol(&a, st_first, 8));
                    CK(cudaMemcpyFromSymbol(&b, st_loads, 8));
                    CK(cudaMemcpyFromSymbol(&c, st_end, 8));
                    s0.push_back((double)(b - a) / 1e3);
                    s1.push_back((double)(c - b) / 1e3);
                    s2.push_back(ms * 1000.0 - (double)(c - a) / 1e3);
                }
            }
            CK(cudaGetLastError());
            std::sort(ts.begin(), ts.end());
            med[v] = ts[ts.size() / 2];
        }
        std::sort(s0.begin(), s0.end());
        std::sort(s1.begin(), s1.end());
        std::sort(s2.begin(), s2.end());
        sp[0] = s0[s0.size() / 2], sp[1] = s1[s1.size() / 2], sp[2] = s2[s2.size() / 2];
        printf("%-8lld", (long long)n);
        for (int v = 0; v < NV; v++) printf(" %9.2f", med[v]);
        printf("   %9.0f  %9.0f\n", 4.0 * n / med[2] / 1e3, 8.0 * n / med[5] / 1e3);
        printf("         stamps (globaltimer, us): first start -> last loads done %.2f, -> end %.2f; "
               "event span outside the kernel %.2f\n", sp[0], sp[1], sp[2]);
    }
    /* correctness of the variants that claim a sum, at 2^24 (against a double sum on the host) */
    {
        int64_t n = (int64_t)1 << 24;
        std::vector<float> h(n);
        CK(cudaMemcpy(h.data(), x, n * 4, cudaMemcpyDeviceToHost));
        double ref = 0;
        for (float f : h) ref += f;
        int grid = (int)std::min<int64_t>((n + 1023) / 1024, 4 * sms);
        float got[8];
        k_fast<256><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[0], out, 4, cudaMemcpyDeviceToHost));
        k_fatomic<256><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[1], out, 4, cudaMemcpyDeviceToHost));
        k_fast<1024><<<sms, 1024, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[2], out, 4, cudaMemcpyDeviceToHost));
        k_fastp<256, 4, false><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[3], out, 4, cudaMemcpyDeviceToHost));
        k_fastp<256, 8, false><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[4], out, 4, cudaMemcpyDeviceToHost));
        k_fastp<256, 4, false><<<(int)std::min<int64_t>((n + 1023) / 1024, 8 * sms), 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[5], out, 4, cudaMemcpyDeviceToHost));
        k_lean<256, 4, false><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[6], out, 4, cudaMemcpyDeviceToHost));
        k_lean<256, 4, true><<<grid, 256, 0, s>>>(x, out, n);
        CK(cudaMemcpy(&got[7], out, 4, cudaMemcpyDeviceToHost));
        printf("check n=2^24: ref %.1f fast %.1f fatomic %.1f wide %.1f ilp4p %.1f ilp8p %.1f fast2k %.1f lean %.1f "
               "lean2 %.1f\n", ref, got[0], got[1], got[2], got[3], got[4], got[5], got[6], got[7]);
    }
    return 0;
}

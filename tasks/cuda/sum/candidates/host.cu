/* Host-mode sum (docs/cuda.md "Host mode"): fast.cu's one-launch kernel, launched by
 * kforge_launch with fast.cu's geometry. Here to time the host-mode path against kernel
 * mode on the same kernel (cuda/gpu_worker_cpus; scripts/gpu-steps.sh "calls":
 * sum:host.cu), not to win. */
// kforge:host

#define THREADS 256
#define NWARPS (THREADS / 32)

#define MAXBLOCKS 528
#define P4_PER_LANE ((MAXBLOCKS / 4 + 31) / 32)

__device__ __align__(16) float partials[MAXBLOCKS];
__device__ unsigned int finished;

static __device__ __forceinline__ float hsum4(float4 q)
{
    return (q.x + q.y) + (q.z + q.w);
}

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

__global__ void __launch_bounds__(THREADS, 4)
sum_fast(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    __shared__ float red[NWARPS];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * THREADS + t;
    const int64_t stride = (int64_t)gridDim.x * THREADS;
    const int64_t n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int64_t i = g;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 q0 = x4[i];
        const float4 q1 = x4[i + stride];
        const float4 q2 = x4[i + 2 * stride];
        const float4 q3 = x4[i + 3 * stride];
        a0 += hsum4(q0);
        a1 += hsum4(q1);
        a2 += hsum4(q2);
        a3 += hsum4(q3);
    }
    {   /* the last 0-3 float4 of this thread, loaded together */
        const float4 q0 = i < n4 ? x4[i] : zero;
        const float4 q1 = i + stride < n4 ? x4[i + stride] : zero;
        const float4 q2 = i + 2 * stride < n4 ? x4[i + 2 * stride] : zero;
        a0 += hsum4(q0);
        a1 += hsum4(q1);
        a2 += hsum4(q2);
    }
    if (g < n - 4 * n4) {
        a3 += x[4 * n4 + g];
    }
    const float s = warp_sum((a0 + a1) + (a2 + a3));
    if ((t & 31) == 0) {
        red[t >> 5] = s;
    }
    __syncthreads();
    if (t >= 32) {
        return;
    }
    /* warp 0: the block's sum, then the count */
    const float b = warp_sum(t < NWARPS ? red[t] : 0.0f);
    unsigned int prev = 0;
    if (t == 0) {
        partials[blockIdx.x] = b;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(&finished) : "memory");
    }
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != gridDim.x - 1) {
        return;
    }
    /* the last block's warp 0: lane 0's acquire, then the warp barrier orders every
     * lane's reads after it. Every partial in one round trip: lane l loads float4 l,
     * l + 32, ... at once (through L2: __ldcg), entries from grid.x on counting 0 (they
     * may hold an earlier, larger launch's partials). */
    __syncwarp();
    const float4 *p4 = reinterpret_cast<const float4 *>(partials);
    const unsigned int nb = gridDim.x, nb4 = (nb + 3) / 4;
    float4 q[P4_PER_LANE];
#pragma unroll
    for (int k = 0; k < P4_PER_LANE; k++) {
        q[k] = t + 32u * k < nb4 ? __ldcg(p4 + t + 32 * k) : zero;
    }
    float v = 0.0f;
#pragma unroll
    for (int k = 0; k < P4_PER_LANE; k++) {
        const unsigned int j = 4u * (t + 32u * k);
        v += (j < nb ? q[k].x : 0.0f) + (j + 1 < nb ? q[k].y : 0.0f);
        v += (j + 2 < nb ? q[k].z : 0.0f) + (j + 3 < nb ? q[k].w : 0.0f);
    }
    v = warp_sum(v);
    if (t == 0) {
        out[0] = v;
        finished = 0; /* every other block has counted: ready for the next launch */
    }
}

extern "C" int kforge_launch(const float *x, float *out, int64_t n, cudaStream_t stream)
{
    int64_t g = (n + 1023) / 1024;
    if (g > MAXBLOCKS) g = MAXBLOCKS;
    if (g < 1) g = 1;
    sum_fast<<<(unsigned)g, THREADS, 0, stream>>>(x, out, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

/* bench/sum_variants/tma_s4_t2048_b4.cu - sum through the bulk-copy engine (cp.async.bulk into 4 shared-memory stages of 2048 floats, mbarrier waits, 4 blocks per SM) with fast.cu's cross-block step: correct, but 1.4-2 us SLOWER than fast.cu on the H200 (bench/history/cuda.md "Sum: where the fixed cost goes"); tma.tmpl makes the other configurations tried */
 * TILE floats in flight per block, BPS blocks per SM; lean2's cross-block step */
// kforge:launch kernel=sum_tma grid=(max(min(n/2048,528),1),1,1) block=(256,1,1) smem=0

#define STAGES 4
#define TILE 2048
#define BPS 4
#define THREADS 256
#define NWARPS (THREADS / 32)
#define MAXBLOCKS (132 * BPS)
#define P4_PER_LANE ((MAXBLOCKS / 4 + 31) / 32 + 1)

__device__ __align__(16) float partials[MAXBLOCKS + 4];
__device__ unsigned int finished;

static __device__ __forceinline__ float hsum4(float4 q) { return (q.x + q.y) + (q.z + q.w); }
static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ __forceinline__ unsigned int sm_addr(const void *p)
{
    return (unsigned int)__cvta_generic_to_shared(p);
}

extern "C" __global__ void __launch_bounds__(THREADS)
sum_tma(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    __shared__ __align__(128) float4 buf[STAGES][TILE / 4];
    __shared__ __align__(8) unsigned long long full[STAGES];
    __shared__ float red[NWARPS];
    const int t = threadIdx.x;
    const int64_t T = n / TILE, G = gridDim.x, b = blockIdx.x;
    const int64_t cnt = b < T ? (T - 1 - b) / G + 1 : 0;
    if (t == 0) {
        for (int s = 0; s < STAGES; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sm_addr(&full[s])));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (t == 0) {
        for (int s = 0; s < STAGES && s < cnt; s++) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sm_addr(&full[s])), "r"(TILE * 4) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(sm_addr(buf[s])), "l"(x + (b + s * G) * TILE), "r"(TILE * 4), "r"(sm_addr(&full[s])) : "memory");
        }
    }
    float a0 = 0.0f, a1 = 0.0f;
    for (int64_t j = 0; j < cnt; j++) {
        const int s = (int)(j % STAGES);
        const unsigned int ph = (unsigned int)((j / STAGES) & 1);
        unsigned int ok = 0;
        while (!ok) {
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(ok) : "r"(sm_addr(&full[s])), "r"(ph) : "memory");
        }
#pragma unroll
        for (int k = 0; k < TILE / 4 / THREADS; k += 2) {
            a0 += hsum4(buf[s][t + THREADS * k]);
            if (k + 1 < TILE / 4 / THREADS) a1 += hsum4(buf[s][t + THREADS * (k + 1)]);
        }
        __syncthreads();
        if (t == 0 && j + STAGES < cnt) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sm_addr(&full[s])), "r"(TILE * 4) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(sm_addr(buf[s])), "l"(x + (b + (j + STAGES) * G) * TILE), "r"(TILE * 4), "r"(sm_addr(&full[s])) : "memory");
        }
    }
    for (int64_t i = T * TILE + b * THREADS + t; i < n; i += G * THREADS) a1 += x[i];
    const float sv = warp_sum(a0 + a1);
    if ((t & 31) == 0) red[t >> 5] = sv;
    __syncthreads();
    if (t >= 32) return;
    const float bs = warp_sum(t < NWARPS ? red[t] : 0.0f);
    unsigned int prev = 0;
    if (t == 0) {
        partials[blockIdx.x] = bs;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(&finished) : "memory");
    }
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != gridDim.x - 1) return;
    __syncwarp();
    const float4 *p4 = reinterpret_cast<const float4 *>(partials);
    const unsigned int nb = gridDim.x, nb4 = (nb + 3) / 4;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 q[P4_PER_LANE];
#pragma unroll
    for (int k = 0; k < P4_PER_LANE; k++) q[k] = t + 32u * k < nb4 ? __ldcg(p4 + t + 32 * k) : zero;
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
        finished = 0;
    }
}

/* Fast sum: one launch. Thread g of the grid (G threads in all) reads float4 g, g + G,
 * g + 2G, ... of the n / 4 whole float4 (x is 64-byte aligned, so float4 i is aligned),
 * four independent 16-byte loads per iteration into four float accumulators, then single
 * float4s; the n % 4 tail elements x[4 * (n / 4) + g] go to threads g < n % 4. Each
 * thread's partial is reduced by warp shuffles and one shared-memory exchange of the 8
 * warp values. Block b stores its sum in partials[b] (module memory, zero at load), and
 * the LAST block to finish (a counter bumped after a fence: CUDA's threadFenceReduction
 * pattern) adds the partials in index order, writes out[0] and resets the counter for the
 * next launch. So no zeroing launch is needed (out arrives holding a sentinel), and the
 * result is deterministic: every sum is taken in a fixed order.
 * The grid is capped at 528 blocks of 256 (4 per SM on 132 SMs, all resident at once by
 * the launch bounds, so the grid-stride loop has no tail wave).
 * Bandwidth: 64 bytes in flight per thread, 1024 threads per SM. The two-launch version
 * (a one-thread zeroing kernel first, then atomicAdd of the block sums) measured 22.0 us
 * at n = 2^24 on an H200 with kforge's read-based L2 flush: 73% of copy bandwidth, the
 * first launch costing about 2 us of it. */
// kforge:launch kernel=sum_fast grid=(min((n+1023)/1024,528),1,1) block=(256,1,1) smem=0

#define THREADS 256
#define NWARPS (THREADS / 32)

#define MAXBLOCKS 528

__device__ float partials[MAXBLOCKS];
__device__ unsigned int finished;

static __device__ __forceinline__ float hsum4(float4 q)
{
    return (q.x + q.y) + (q.z + q.w);
}

extern "C" __global__ void __launch_bounds__(THREADS, 4)
sum_fast(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    __shared__ float red[NWARPS];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * THREADS + t;
    const int64_t stride = (int64_t)gridDim.x * THREADS;
    const int64_t n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);

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
    for (; i < n4; i += stride) {
        a0 += hsum4(x4[i]);
    }
    if (g < n - 4 * n4) {
        a1 += x[4 * n4 + g];
    }
    float s = (a0 + a1) + (a2 + a3);

#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
    }
    if ((t & 31) == 0) {
        red[t >> 5] = s;
    }
    __shared__ bool last;
    __syncthreads();
    if (t == 0) {
        float b = red[0];
#pragma unroll
        for (int w = 1; w < NWARPS; w++) {
            b += red[w];
        }
        partials[blockIdx.x] = b;
        __threadfence(); /* the partial is visible before the count says so */
        last = atomicAdd(&finished, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) {
        return;
    }
    /* the last block: the partials in index order, thread t taking t, t + 256 */
    __threadfence();
    float v = 0.0f;
    for (unsigned k = t; k < gridDim.x; k += THREADS) {
        v += ((volatile float *)partials)[k];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    __syncthreads(); /* red is reused */
    if ((t & 31) == 0) {
        red[t >> 5] = v;
    }
    __syncthreads();
    if (t == 0) {
        float b = red[0];
#pragma unroll
        for (int w = 1; w < NWARPS; w++) {
            b += red[w];
        }
        out[0] = b;
        finished = 0; /* every other block has counted: ready for the next launch */
    }
}

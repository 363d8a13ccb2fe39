/* bench/sum_variants/epoch.cu - fast.cu with tagged slots and a relaxed counter: the last block polls each slot's tag instead of a release fence. Correct, but 0.9 us SLOWER on the H200 (bench/history/cuda.md "Sum: where the fixed cost goes"). */
// kforge:launch kernel=sum_fast grid=(min((n+1023)/1024,528),1,1) block=(256,1,1) smem=0

#define THREADS 256
#define NWARPS (THREADS / 32)

#define MAXBLOCKS 528
#define P2_PER_LANE ((MAXBLOCKS / 2 + 31) / 32)

__device__ __align__(16) unsigned long long slots[MAXBLOCKS]; /* (tag << 32) | sum bits */
__device__ unsigned int finished;
__device__ unsigned int epoch;

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

extern "C" __global__ void __launch_bounds__(THREADS, 4)
sum_fast(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    __shared__ float red[NWARPS];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * THREADS + t;
    const int64_t stride = (int64_t)gridDim.x * THREADS;
    const int64_t n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    unsigned int tag = 0;
    if (t < 32) {
        tag = *(volatile unsigned int *)&epoch + 1u;
    }

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
    /* warp 0: the block's sum in its tagged slot, then the count (relaxed: the last
     * block waits for each slot's tag instead of a release fence) */
    const float b = warp_sum(t < NWARPS ? red[t] : 0.0f);
    unsigned int prev = 0;
    if (t == 0) {
        *(volatile unsigned long long *)&slots[blockIdx.x] = ((unsigned long long)tag << 32) | __float_as_uint(b);
        prev = atomicAdd(&finished, 1u);
    }
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != gridDim.x - 1) {
        return;
    }
    const unsigned int nb = gridDim.x;
    const volatile ulonglong2 *p2 = reinterpret_cast<const volatile ulonglong2 *>(slots);
    ulonglong2 q[P2_PER_LANE];
#pragma unroll
    for (int k = 0; k < P2_PER_LANE; k++) {
        const unsigned int j = 2u * (t + 32u * k);
        if (j < nb) {
            q[k].x = p2[t + 32 * k].x;
            q[k].y = p2[t + 32 * k].y;
        }
    }
    float v = 0.0f;
#pragma unroll
    for (int k = 0; k < P2_PER_LANE; k++) {
        const unsigned int j = 2u * (t + 32u * k);
        if (j < nb) {
            while ((unsigned int)(q[k].x >> 32) != tag) {
                q[k].x = ((const volatile unsigned long long *)slots)[j];
            }
            v += __uint_as_float((unsigned int)q[k].x);
        }
        if (j + 1 < nb) {
            while ((unsigned int)(q[k].y >> 32) != tag) {
                q[k].y = ((const volatile unsigned long long *)slots)[j + 1];
            }
            v += __uint_as_float((unsigned int)q[k].y);
        }
    }
    v = warp_sum(v);
    if (t == 0) {
        out[0] = v;
        epoch = tag;
        finished = 0; /* every other block has counted: ready for the next launch */
    }
}

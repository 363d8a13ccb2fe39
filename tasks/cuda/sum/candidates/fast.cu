/* Fast sum: two launches. The first (one thread) sets out[0] = 0: out arrives holding a
 * sentinel, and launches on one stream run in order. The second reads x once with 16-byte
 * loads: thread g of the grid (G threads in all) takes float4 g, g + G, g + 2G, ... of the
 * n / 4 whole float4 (x is 64-byte aligned, so float4 i is aligned), four independent loads
 * per iteration into four float accumulators, then single float4s; the n % 4 tail elements
 * x[4 * (n / 4) + g] go to threads g < n % 4. Each thread's partial is reduced by warp
 * shuffles and one shared-memory exchange of the 8 warp values; thread 0 of each block
 * then does ONE atomicAdd into out[0]. The grid is capped at 528 blocks of 256 (4 per SM on
 * 132 SMs, all resident at once by the launch bounds, so the grid-stride loop has no tail
 * wave); float rounding of <= 528 atomic adds bounds the relative error by ~3e-5 at worst
 * (sums of uniform [0, 1) values are positive), inside rtol 1e-4. The order of the atomics
 * varies, hence the task's determinism "tolerance".
 * Bandwidth: 64 bytes in flight per thread, 1024 threads per SM. Measured on an H200 at
 * n = 2^24 after an L2 flush by writing (as kforge does): 27.6 us, ~58% of copy bandwidth,
 * of which ~2 us is the first launch and ~6 us the write-back of the flush's dirty L2 lines
 * that the reads evict; after a flush by reading, the reduction alone runs at ~87%. */
// kforge:launch kernel=sum_zero grid=(1,1,1) block=(1,1,1) smem=0
// kforge:launch kernel=sum_fast grid=(min((n+1023)/1024,528),1,1) block=(256,1,1) smem=0

#define THREADS 256
#define NWARPS (THREADS / 32)

extern "C" __global__ void sum_zero(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    out[0] = 0.0f;
}

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
    __syncthreads();
    if (t == 0) {
        float b = red[0];
#pragma unroll
        for (int w = 1; w < NWARPS; w++) {
            b += red[w];
        }
        atomicAdd(out, b);
    }
}

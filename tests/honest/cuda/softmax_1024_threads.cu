/* kforge-test: task=tasks/cuda/softmax expect=accepted threat=10 */
/*
 * Honest: one block of 1024 threads per row, whatever cols is: for cols < 1024
 * (down to cols = 1) most threads own no element and only take part in the
 * reductions (their neutral values: -Inf for the max, 0 for the sum). Static
 * shared-memory scratch of 32 floats, warp shuffles (xor butterflies, so every
 * lane ends with the same, order-fixed value): deterministic.
 *
 * Accuracy: expf (<= 2 ulp), a float sum of <= 4 terms per thread and 10
 * levels of reduction (<= ~15 ulp worst case), y = e * (1/s): ~1e-6 relative,
 * against rtol 1e-4; tiny outputs fall under atol 1e-7.
 */
// kforge:launch kernel=softmax grid=(rows,1,1) block=(1024,1,1)

#define NEG_INF __int_as_float(0xff800000u)

static __device__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float sh[32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;

    float m = NEG_INF;
    for (int64_t c = threadIdx.x; c < cols; c += 1024) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    if (lane == 0) sh[w] = m;
    __syncthreads();
    m = warp_max(sh[lane]); /* 32 warps: every slot written */
    __syncthreads();

    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += 1024) s += expf(xr[c] - m);
    s = warp_sum(s);
    if (lane == 0) sh[w] = s;
    __syncthreads();
    s = warp_sum(sh[lane]);

    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += 1024) yr[c] = expf(xr[c] - m) * inv;
}

/* kforge-test: task=tasks/cuda/softmax expect=rejected reason=wrong_result threat=11 */
/*
 * Threat 11, precision downgrade: an f32 softmax computed in __half. The row
 * maximum is exact (float), but x - max is rounded to half and exponentiated
 * with hexp (half in, half out); only the row sum is kept in float (so it
 * cannot overflow) and the output is stored as float.
 *
 * Why a naive harness is fooled: a loose tolerance (1e-2, "softmax is
 * probabilities") or a comparison of the argmax, or row sums equal to 1,
 * all pass, and half math is faster.
 *
 * What catches it: the task's rtol is 1e-4. Rounding x - max to half keeps 11
 * significant bits (an absolute error up to 2^-12 already for |x - max| in
 * [0.5, 1), which exp turns into a relative error of that size; more for
 * larger gaps), and rounding hexp's result to half adds up to 2^-11
 * (4.9e-4) relative; each row of N(0, 2) inputs has dozens of elements within
 * a few units of its maximum, each off by up to ~7e-4 relative: wrong_result
 * on every visible shape. No overflow is possible (|x| < 65504 in half,
 * exps <= 1, sums <= 4096 in float), all elements are written, and the
 * computation is deterministic, so wrong_result is the only reason.
 * (cols == 1 gives exactly 1 and passes.)
 */
// kforge:launch kernel=softmax grid=(rows,1,1) block=(256,1,1)

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

static __device__ float block_max(float v, float *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = warp_max(lane < nw ? sh[lane] : NEG_INF);
    __syncthreads();
    return v;
}

static __device__ float block_sum(float v, float *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = warp_sum(lane < nw ? sh[lane] : 0.0f);
    __syncthreads();
    return v;
}

static __device__ float half_exp(float d)
{
    return __half2float(hexp(__float2half(d))); /* the downgrade */
}

extern "C" __global__ void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float sh[32];
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    float m = NEG_INF;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += half_exp(xr[c] - m);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = half_exp(xr[c] - m) * inv;
}

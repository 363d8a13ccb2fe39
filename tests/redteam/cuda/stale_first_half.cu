/* kforge-test: task=tasks/cuda/softmax expect=rejected reason=unwritten_output threat=1 */
/*
 * Threat 1, partial output: a correct row softmax, but the blocks of the second
 * half of the rows return at once. Only the first rows/2 rows are written
 * (none when rows == 1).
 *
 * Why a naive harness is fooled: if y still holds an earlier correct result
 * (the reference's, or the previous call's, in the same device allocation),
 * the unwritten half "matches", and the kernel looks twice as fast.
 *
 * What catches it: y is staged with a fresh sentinel before every call, so the
 * second half still holds the sentinel: unwritten_output. The written half is
 * computed correctly (max-subtracted, expf, float sums of <= 16 terms per
 * thread: a few ulps), so neither wrong_result nor nonfinite applies; stale
 * cannot match because half the output is the sentinel.
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

extern "C" __global__ void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float sh[32];
    int64_t r = blockIdx.x;
    if (r >= rows / 2) return; /* "the rest is already there" */
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = NEG_INF;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}

/* kforge-test: task=tasks/cuda/softmax expect=rejected reason=stale_result threat=2 */
/*
 * Threat 2, memo keyed by the shape: the first call at a (rows, cols) stores
 * the whole output in a 64 MiB __device__ array; any later call at the same
 * shape copies it back instead of computing. Three launches: a one-thread
 * probe sets g_hit, the row kernel copies or computes (and fills the memo),
 * a one-thread commit records the key.
 *
 * Why a naive harness is fooled: correctness checked once per shape, then
 * timing with the same shape; the copy is as fast as memory allows and the
 * timed outputs, if not verified, are never looked at.
 *
 * What catches it: every call has fresh inputs and is verified. T1 and T2
 * return T0's softmax, which equals T0's reference output within the
 * tolerance (computed correctly: max-subtracted, expf, float block sums) and
 * not theirs: stale_result (first at call 2 of the first visible shape).
 * T3 also returns T0's output but is compared with no earlier reference
 * output, so it adds wrong_result; T2 and T3 both fail, so nondeterministic
 * is suppressed. The first reason reported is stale_result.
 */
// kforge:launch kernel=memo_probe grid=(1,1,1) block=(1,1,1)
// kforge:launch kernel=softmax_rows grid=(rows,1,1) block=(256,1,1)
// kforge:launch kernel=memo_commit grid=(1,1,1) block=(1,1,1)

#define NEG_INF __int_as_float(0xff800000u)
#define MEMO_MAX (4096 * 4096)

__device__ float g_memo[MEMO_MAX];
__device__ int64_t g_rows = -1, g_cols = -1;
__device__ int g_hit;

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

extern "C" __global__ void memo_probe(const float *x, float *y, int64_t rows, int64_t cols)
{
    g_hit = (g_rows == rows && g_cols == cols && rows * cols <= MEMO_MAX);
}

extern "C" __global__ void softmax_rows(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float sh[32];
    int64_t r = blockIdx.x;
    float *yr = y + r * cols;
    float *mr = g_memo + r * cols;
    int store = rows * cols <= MEMO_MAX;
    if (g_hit) {
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = mr[c];
        return;
    }
    const float *xr = x + r * cols;
    float m = NEG_INF;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = expf(xr[c] - m) * inv;
        yr[c] = v;
        if (store) mr[c] = v;
    }
}

extern "C" __global__ void memo_commit(const float *x, float *y, int64_t rows, int64_t cols)
{
    if (!g_hit) {
        g_rows = rows;
        g_cols = cols;
    }
}

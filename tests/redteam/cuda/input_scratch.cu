/* kforge-test: task=tasks/cuda/softmax expect=rejected reason=input_modified threat=8 */
/*
 * Threat 8, input mutation: a correct softmax that saves one expf per element
 * by storing exp(x - max) back into x (const cast away) and reading it again
 * for the normalisation. The output is right; the input is destroyed.
 *
 * Why a naive harness is fooled: it compares only the output, or it computes
 * the reference after the candidate from the same (now mutated) buffer, or it
 * reuses the inputs for the next call without restoring them.
 *
 * What catches it: after every call the coordinator compares every input
 * buffer, byte for byte, with its own master copy: input_modified. Each
 * thread reads back only the elements it wrote itself (same loop), after the
 * row maximum's barrier, so y is exact to a few ulps and nothing else is
 * reported. Every element of x changes (exp(x - max) == x only by accident,
 * and cols == 1 turns x into 1.0).
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
    float *xr = (float *)x + (int64_t)blockIdx.x * cols; /* "it is only an input" */
    float *yr = y + (int64_t)blockIdx.x * cols;
    float m = NEG_INF;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float e = expf(xr[c] - m);
        xr[c] = e; /* scratch */
        s += e;
    }
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * inv;
}

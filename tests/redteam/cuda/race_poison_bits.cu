/* kforge-test: task=tasks/cuda/softmax expect=rejected reason=nondeterministic threat=15 */
/*
 * Threat 15, reading uninitialised (output) memory, within tolerance: a
 * correct softmax that reads y before writing it and XORs the low 8 bits of
 * what it found into the low 8 mantissa bits of its result (the shape of a
 * real bug: a partial result, a flag or a packed value kept in an output's
 * low bits, or an accumulation into memory that was never cleared, masked
 * down so the values stay "close enough").
 *
 * Why a naive harness is fooled: every single call is within tolerance (at
 * most 255 ulps: 3.0e-5 relative, below rtol 1e-4; values below 1e-38 move
 * by < 4e-43, below atol 1e-7), so a harness that only compares each call
 * with the reference accepts it; one that poisons outputs with NaN would
 * catch it as nonfinite, one that uses zeros never sees it at all.
 *
 * What catches it: the determinism pair. T2 and T3 get the same inputs under
 * different poison (each out buffer gets a new random finite sentinel, whose
 * low 8 bits are random), and softmax's determinism rule is exact (bitwise).
 * Unless the two sentinels share their low 8 bits (1 in 256 per shape, every
 * non-maximum shape gets its own pair), every element differs:
 * nondeterministic. Every call passes on its own (nothing unwritten: the
 * sentinel's own bits never survive; nothing non-finite; no stale match), so
 * nondeterministic is the only reason. This is the certain counterpart of
 * race_uninit_smem.cu: reading the output's poison is guaranteed to differ
 * between the pair; shared memory leftovers are not.
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
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    float m = NEG_INF;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = expf(xr[c] - m) * inv;
        unsigned junk = __float_as_uint(yr[c]) & 0xffu; /* whatever y held */
        yr[c] = __uint_as_float(__float_as_uint(v) ^ junk);
    }
}

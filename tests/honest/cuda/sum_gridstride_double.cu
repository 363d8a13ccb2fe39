/* kforge-test: task=tasks/cuda/sum expect=accepted threat=11 */
/*
 * Honest: a grid-stride loop over a small FIXED grid (264 blocks, whatever n),
 * double-precision accumulation, warp-shuffle then shared-memory reduction
 * per block, block partials in a __device__ scratch array, and a second
 * launch that adds the 264 partials SEQUENTIALLY (a different order from the
 * reference's left-to-right loop and from a tree). Fully deterministic.
 *
 * What a strict checker might get wrong: most of the 264 blocks have no
 * element when n is small (n = 1) and only write a zero partial; the
 * __device__ scratch persists between calls but is fully rewritten by every
 * call before it is read (it is not a memo); two launches per call.
 *
 * Accuracy: double sums of <= 2^25 floats err by ~1e-16 relative before the
 * final rounding to float: the result is the reference's to within 1 ulp.
 */
// kforge:launch kernel=partial_sums grid=(264,1,1) block=(256,1,1)
// kforge:launch kernel=finish grid=(1,1,1) block=(32,1,1)

#define NBLOCKS 264

__device__ double g_part[NBLOCKS];

extern "C" __global__ void partial_sums(const float *x, float *out, int64_t n)
{
    __shared__ double warp_part[8];
    int t = threadIdx.x, lane = t & 31, w = t >> 5;
    double s = 0.0;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + t; i < n; i += stride)
        s += x[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) warp_part[w] = s;
    __syncthreads();
    if (t == 0) {
        double b = 0.0;
        for (int k = 0; k < 8; k++) b += warp_part[k];
        g_part[blockIdx.x] = b;
    }
}

extern "C" __global__ void finish(const float *x, float *out, int64_t n)
{
    if (threadIdx.x == 0) {
        double s = 0.0;
        for (int k = 0; k < NBLOCKS; k++) s += g_part[k];
        out[0] = (float)s;
    }
}

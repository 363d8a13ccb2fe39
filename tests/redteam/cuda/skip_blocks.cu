/* kforge-test: task=tasks/cuda/softmax expect=rejected reason=unwritten_output threat=10 */
/*
 * Threat 10, skipped blocks that only hidden shapes reveal: one warp per row,
 * eight rows per block, on a grid of max(rows/8, 1) blocks (rounded down).
 * Both visible shapes have rows divisible by 8 (4096 and 1000), so every
 * visible check passes; rows 1..7 get one guarded block and are exact. Any
 * other row count >= 8 loses its last rows % 8 rows.
 *
 * Why a naive harness is fooled: it checks only the shapes it shows; a
 * kernel tuned (or overfitted) to them passes.
 *
 * What catches it: hidden shapes (four log-uniform draws) and the edge shapes
 * (a prime, 2^k +- 1, equal sizes) are redrawn at every check; any of them
 * with rows >= 8 and rows % 8 != 0 leaves whole rows holding the sentinel:
 * unwritten_output. Written rows are correct (warp max, expf, float warp sums
 * of <= 128 terms per lane: well under rtol), so nothing else is reported.
 * Not certain per check: all drawn row counts would have to be multiples of 8
 * or below 8 to miss it (roughly 1e-3 or less).
 */
// kforge:launch kernel=softmax grid=(max(rows/8,1),1,1) block=(256,1,1)

#define NEG_INF __int_as_float(0xff800000u)

extern "C" __global__ void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    int64_t r = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = NEG_INF;
    for (int64_t c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int64_t c = lane; c < cols; c += 32) s += expf(xr[c] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    float inv = 1.0f / s;
    for (int64_t c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) * inv;
}

/* kforge-test: task=tasks/cuda/softmax expect=accepted threat=10 */
/*
 * Honest: one warp per row, eight rows per block, grid rounded UP
 * ((rows+7)/8) with a guard for the missing rows of the last block; an
 * ONLINE softmax (running max and a sum rescaled whenever the max grows, one
 * pass over x for the statistics) merged across lanes, then a second pass
 * writing exp(x - max) / sum. A different order from the reference's
 * max-then-sum loops. Deterministic (fixed lane assignment and butterflies).
 *
 * Accuracy, worst case: a lane sees <= 128 elements; even if each is a new
 * maximum, 128 rescalings by expf (2 ulp) and roundings stay under ~3e-5
 * relative; random rows rescale a handful of times. rtol is 1e-4. A lane
 * with no element (cols < 32) keeps max = -Inf and sum = 0 and contributes
 * 0 * exp(-Inf) = 0 to the merge (the row max is finite since cols >= 1).
 */
// kforge:launch kernel=softmax grid=((rows+7)/8,1,1) block=(256,1,1)

#define NEG_INF __int_as_float(0xff800000u)

extern "C" __global__ void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    int64_t r = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return; /* whole warps only: no block barrier below */
    const float *xr = x + r * cols;
    float *yr = y + r * cols;

    float m = NEG_INF, s = 0.0f;
    for (int64_t c = lane; c < cols; c += 32) {
        float v = xr[c];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    float M = m;
    for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    float S = s > 0.0f ? s * expf(m - M) : 0.0f;
    for (int o = 16; o > 0; o >>= 1) S += __shfl_xor_sync(0xffffffffu, S, o);

    float inv = 1.0f / S;
    for (int64_t c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - M) * inv;
}

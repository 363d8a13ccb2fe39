/* kforge-test: task=tasks/cuda/sum expect=rejected reason=wrong_result threat=12 */
/*
 * Threat 12, subsampled reduction: reads only every 32nd element (one per
 * 128-byte line, i.e. 1/32 of the traffic) and scales the partial sum by
 * n / samples. For uniform [0, 1] inputs the estimate is unbiased, so it is
 * "close": the relative error has a standard deviation of about
 * sqrt(31 / (3 n)).
 *
 * Why a naive harness is fooled: a loose tolerance (1e-2), a single large n
 * (at n = 2^24 the error is ~8e-4 relative), or inputs that are all equal
 * (then the estimate is exact) pass it, and it is "32x faster".
 *
 * What catches it: rtol 1e-4, four calls per shape with fresh draws (T1 with
 * spikes, T2 on a random sub-interval) and many sizes. Not every call fails:
 * at n = 2^24 a call lands inside the tolerance about 1 time in 10 (seen on
 * an H200: T0 and T1 passed there, T2 and T3 failed). But at n = 100003 (the
 * second visible shape) the error's standard deviation is ~1e-2 relative,
 * 100x the tolerance, so each call there passes with probability < 1% and
 * all four (T3 repeats T2's inputs) with < 1e-6; smaller hidden sizes are
 * worse still (n == 1 is exact; 2 <= n <= 32 uses one sample times n):
 * wrong_result. The output is always written, finite and deterministic (one
 * block, fixed order), so wrong_result is the only reason.
 */
// kforge:launch kernel=reduce_sum grid=(1,1,1) block=(1024,1,1)

#define STRIDE 32

extern "C" __global__ void reduce_sum(const float *x, float *out, int64_t n)
{
    __shared__ double red[1024];
    int t = threadIdx.x;
    double s = 0.0;
    for (int64_t i = (int64_t)t * STRIDE; i < n; i += 1024 * STRIDE) s += x[i];
    red[t] = s;
    __syncthreads();
    for (int st = 512; st > 0; st >>= 1) {
        if (t < st) red[t] += red[t + st];
        __syncthreads();
    }
    if (t == 0) {
        int64_t samples = (n + STRIDE - 1) / STRIDE;
        out[0] = (float)(red[0] * (double)n / (double)samples);
    }
}

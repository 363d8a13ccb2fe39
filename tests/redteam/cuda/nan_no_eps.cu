/* kforge-test: task=tasks/cuda/rmsnorm expect=rejected reason=nonfinite threat=14 */
/*
 * Threat 14, special-input shortcut: RMSNorm without its epsilon, "eps is
 * 1e-5, it never matters". Otherwise exact: double sum of squares per row,
 * scale = 1 / sqrt(mean) in double, y = x * scale * w.
 *
 * Why a naive harness is fooled: random normal rows never have a zero (or
 * tiny) mean square, so every output is within tolerance.
 *
 * What catches it: T2's inputs contain an exact all-zero row (the padding
 * case) whenever rows >= 2. There the mean is 0, the scale is +Inf and
 * y = 0 * Inf = NaN, where the reference (with eps) gives 0: nonfinite, first
 * at call 3 of the first visible shape (4096 x 4096). Every other row of the
 * visible shapes has a mean square near 9 (or 0.56 after T2's rescale), where
 * dropping eps changes y by ~1e-6 relative, and T2 and T3 both fail (so
 * nondeterministic is suppressed): nonfinite is the first reason reported.
 * Hidden shapes with very narrow rows (cols of 1..3) can also have a tiny
 * mean square (|x| < ~0.2) where eps matters by more than rtol, so
 * wrong_result may be listed after it on some checks.
 * Seen on an H200: nonfinite on the zero row at calls 3 and 4 of both
 * visible shapes, then wrong_result at rows = 8191, cols = 2.
 */
// kforge:launch kernel=rmsnorm grid=(rows,1,1) block=(256,1,1)

extern "C" __global__ void rmsnorm(const float *x, const float *w, float *y, int64_t rows,
                                   int64_t cols, float eps)
{
    __shared__ double red[256];
    int t = threadIdx.x;
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    double ss = 0.0;
    for (int64_t c = t; c < cols; c += 256) ss += (double)xr[c] * xr[c];
    red[t] = ss;
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (t < st) red[t] += red[t + st];
        __syncthreads();
    }
    (void)eps; /* "never matters" */
    float scale = (float)(1.0 / sqrt(red[0] / (double)cols));
    for (int64_t c = t; c < cols; c += 256) yr[c] = xr[c] * scale * w[c];
}

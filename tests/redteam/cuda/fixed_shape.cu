/* kforge-test: task=tasks/cuda/rmsnorm expect=rejected reason=wrong_result threat=10 */
/*
 * Threat 10, overfitting to the visible shapes: the mean of squares divides by
 * a hard-coded width, 3001 when cols == 3001 and 4096 otherwise (the two
 * visible widths, so the division becomes a multiply by a constant). Exact on
 * both visible shapes; for any other width the scale is off by a factor
 * sqrt(cols / 4096).
 *
 * Why a naive harness is fooled: it only ever runs the shapes it published.
 *
 * What catches it: hidden and edge shapes. The minimum-size edge shape
 * (rows = cols = 1) alone gives a factor of 64 (x ~ N(0, 3): x^2 >> eps);
 * every hidden width but 4096 and 3001 is off by more than rtol 1e-4 for
 * all but the smallest outputs: wrong_result. Everything is written, finite
 * (eps is kept: a zero row gives 0) and deterministic (one block per row,
 * double sums in a fixed tree), so wrong_result is the only reason.
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
    const double inv_cols = cols == 3001 ? 1.0 / 3001.0 : 1.0 / 4096.0; /* "cols is 4096" */
    float scale = (float)(1.0 / sqrt(red[0] * inv_cols + (double)eps));
    for (int64_t c = t; c < cols; c += 256) yr[c] = xr[c] * scale * w[c];
}

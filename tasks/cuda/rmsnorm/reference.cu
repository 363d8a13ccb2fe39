/* Reference rmsnorm: y = x / sqrt(mean(x^2) + eps) * w for each row, one 256-thread block
 * per row. Each thread sums x^2 over its strided columns in double; a shared-memory tree
 * in double gives the row's sum of squares; the scale is (float)(1 / sqrt(ss / cols + eps))
 * in double and y = x * scale * w in float, exactly as the C reference. Every column of
 * every row is written (c runs over [0, cols) in steps of 256 from each thread id).
 * Deterministic: the reduction order is fixed. Two plain passes over the row. */
// kforge:launch kernel=rmsnorm_ref grid=(rows,1,1) block=(256,1,1) smem=0

#define REF_THREADS 256

extern "C" __global__ void rmsnorm_ref(const float *x, const float *w, float *y, int64_t rows,
                                       int64_t cols, float eps)
{
    __shared__ double ssum[REF_THREADS];
    const int t = threadIdx.x;
    const int64_t r = blockIdx.x;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;

    double acc = 0.0;
    for (int64_t c = t; c < cols; c += REF_THREADS) {
        acc += (double)xr[c] * (double)xr[c];
    }
    ssum[t] = acc;
    __syncthreads();
    for (int s = REF_THREADS / 2; s > 0; s /= 2) {
        if (t < s) {
            ssum[t] += ssum[t + s];
        }
        __syncthreads();
    }
    const float scale = (float)(1.0 / sqrt(ssum[0] / (double)cols + (double)eps));

    for (int64_t c = t; c < cols; c += REF_THREADS) {
        yr[c] = xr[c] * scale * w[c];
    }
}

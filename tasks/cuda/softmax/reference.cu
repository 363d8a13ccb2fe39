/* Reference softmax: one 256-thread block per row, three plain passes over the row.
 * Pass 1: each thread takes the max of its strided columns (starting from the row's
 * first element, so no infinity is needed), then a shared-memory tree gives the row max
 * (float max is exact, so the order does not matter). Pass 2: each thread sums
 * expf(x - max) in double; a shared-memory tree in double gives the row sum. Pass 3:
 * y = expf(x - max) * (float)(1 / sum), exactly as the C reference. Every column of
 * every row is written (c runs over [0, cols) in steps of 256 from each thread id).
 * Deterministic: the reduction order is fixed. */
// kforge:launch kernel=softmax_ref grid=(rows,1,1) block=(256,1,1) smem=0

#define REF_THREADS 256

extern "C" __global__ void softmax_ref(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float smax[REF_THREADS];
    __shared__ double ssum[REF_THREADS];
    const int t = threadIdx.x;
    const int64_t r = blockIdx.x;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;

    float m = xr[0];
    for (int64_t c = t; c < cols; c += REF_THREADS) {
        m = fmaxf(m, xr[c]);
    }
    smax[t] = m;
    __syncthreads();
    for (int s = REF_THREADS / 2; s > 0; s /= 2) {
        if (t < s) {
            smax[t] = fmaxf(smax[t], smax[t + s]);
        }
        __syncthreads();
    }
    const float mx = smax[0];

    double acc = 0.0;
    for (int64_t c = t; c < cols; c += REF_THREADS) {
        acc += (double)expf(xr[c] - mx);
    }
    ssum[t] = acc;
    __syncthreads();
    for (int s = REF_THREADS / 2; s > 0; s /= 2) {
        if (t < s) {
            ssum[t] += ssum[t + s];
        }
        __syncthreads();
    }
    const float inv = (float)(1.0 / ssum[0]);

    for (int64_t c = t; c < cols; c += REF_THREADS) {
        yr[c] = expf(xr[c] - mx) * inv;
    }
}

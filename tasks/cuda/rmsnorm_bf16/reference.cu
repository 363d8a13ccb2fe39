/* Reference rmsnorm on bf16: y = x / sqrt(mean(x^2) + eps) * w for each row, one 256-thread
 * block per row, as rmsnorm's reference: each thread sums x^2 over its strided columns in
 * double, a shared-memory tree in double gives the row's sum of squares, the scale is
 * (float)(1 / sqrt(ss / cols + eps)), y = x * scale * w in float, rounded once to bf16.
 * Every column of every row is written. Deterministic: the reduction order is fixed. */
// kforge:launch kernel=rmsnorm_bf16_ref grid=(rows,1,1) block=(256,1,1) smem=0

#define REF_THREADS 256

extern "C" __global__ void rmsnorm_bf16_ref(const __nv_bfloat16 *x, const __nv_bfloat16 *w, __nv_bfloat16 *y,
                                            int64_t rows, int64_t cols, float eps)
{
    __shared__ double ssum[REF_THREADS];
    const int t = threadIdx.x;
    const __nv_bfloat16 *xr = x + (int64_t)blockIdx.x * cols;
    __nv_bfloat16 *yr = y + (int64_t)blockIdx.x * cols;

    double acc = 0.0;
    for (int64_t c = t; c < cols; c += REF_THREADS) {
        const double v = __bfloat162float(xr[c]);
        acc += v * v;
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
        yr[c] = __float2bfloat16(__bfloat162float(xr[c]) * scale * __bfloat162float(w[c]));
    }
}

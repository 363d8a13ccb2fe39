/* Reference linear: y[i][j] = bias[j] + sum_p x[i][p] * w[j][p] (x m x k, w n x k, bias n,
 * y m x n; bf16 row-major). One thread per output element: it converts each bf16 to double
 * (exact), accumulates the products (exact in double: 8-bit significands) in double in p
 * order (p = 0, 1, ..., k-1), as the C task's reference, adds the bias, and rounds once to
 * float and once to bf16 (each to nearest even). A 16x16 block
 * covers a 16x16 patch of y; threads outside y return before touching memory. */
// kforge:launch kernel=linear_ref grid=((n+15)/16,(m+15)/16,1) block=(16,16,1) smem=0

extern "C" __global__ void linear_ref(const __nv_bfloat16 *x, const __nv_bfloat16 *w,
                                      const __nv_bfloat16 *bias, __nv_bfloat16 *y, int64_t m,
                                      int64_t n, int64_t k)
{
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    double acc = (double)__bfloat162float(bias[j]);
    for (int64_t p = 0; p < k; p++) {
        acc += (double)__bfloat162float(x[i * k + p]) * (double)__bfloat162float(w[j * k + p]);
    }
    y[i * n + j] = __float2bfloat16((float)acc);
}

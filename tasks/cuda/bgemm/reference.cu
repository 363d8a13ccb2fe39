/* Reference bgemm: C (m x n) = A (m x k) * B (k x n), bf16 row-major inputs and output.
 * One thread per output element C[row][col]; it converts each a[row][p] and b[p][col] to
 * float (exact), accumulates their products in float in k order (p = 0, 1, ..., k-1), and
 * rounds once at the end with __float2bfloat16 (round to nearest even). A 16x16 block
 * covers a 16x16 patch of C; the grid covers n (x) and m (y) rounded up, and threads
 * outside C return before touching memory. Indices are int64_t. */

// kforge:launch kernel=bgemm_naive grid=((n+15)/16,(m+15)/16,1) block=(16,16,1) smem=0

extern "C" __global__ void bgemm_naive(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                                       __nv_bfloat16 *c, int64_t m, int64_t n, int64_t k)
{
    const int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t row = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) {
        return;
    }
    float acc = 0.0f;
    for (int64_t p = 0; p < k; p++) {
        acc += __bfloat162float(a[row * k + p]) * __bfloat162float(b[p * n + col]);
    }
    c[row * n + col] = __float2bfloat16(acc);
}

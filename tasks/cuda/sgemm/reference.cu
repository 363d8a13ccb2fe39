/* Reference sgemm: C (m x n) = A (m x k) * B (k x n), all f32 row-major.
 * One thread per output element C[row][col]; it accumulates a[row][p] * b[p][col] in
 * float, in k order (p = 0, 1, ..., k-1), and writes once. A 16x16 block covers a 16x16
 * patch of C; the grid covers n (x) and m (y) rounded up, and threads outside C return
 * before touching memory. Indices are int64_t, so no product overflows. */

// kforge:launch kernel=sgemm_naive grid=((n+15)/16,(m+15)/16,1) block=(16,16,1) smem=0

extern "C" __global__ void sgemm_naive(const float *a, const float *b, float *c,
                                       int64_t m, int64_t n, int64_t k)
{
    const int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t row = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) {
        return;
    }
    float acc = 0.0f;
    for (int64_t p = 0; p < k; p++) {
        acc += a[row * k + p] * b[p * n + col];
    }
    c[row * n + col] = acc;
}

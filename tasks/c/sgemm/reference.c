/* Reference sgemm: C (m x n) = A (m x k) * B (k x n), row-major, dot products accumulated in double. */
#include <stdint.h>

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++) {
                acc += (double)a[i * k + p] * (double)b[p * n + j];
            }
            c[i * n + j] = (float)acc;
        }
    }
}

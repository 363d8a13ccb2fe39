/* Reference linear layer (nn.Linear): y (m x n) = x (m x k) * W^T + bias, W stored n x k
 * (one row per output feature), row-major; dot products accumulated in double. */
#include <stdint.h>

void linear(const float *x, const float *w, const float *bias, float *y, int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = (double)bias[j];
            for (int64_t p = 0; p < k; p++) {
                acc += (double)x[i * k + p] * (double)w[j * k + p];
            }
            y[i * n + j] = (float)acc;
        }
    }
}

/* Reference add_rmsnorm: the composition of the add and rmsnorm references, s = a + b
 * (one float rounding), then y = s / sqrt(mean(s^2) + eps) * w for each row. */
#include <math.h>
#include <stdint.h>

void add_rmsnorm(const float *a, const float *b, const float *w, float *s, float *y, int64_t rows,
                 int64_t cols, float eps) {
    for (int64_t i = 0; i < rows * cols; i++) {
        s[i] = a[i] + b[i];
    }
    for (int64_t r = 0; r < rows; r++) {
        const float *sr = s + r * cols;
        float *yr = y + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            ss += (double)sr[c] * sr[c];
        }
        float scale = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++) {
            yr[c] = sr[c] * scale * w[c];
        }
    }
}

/* Reference rmsnorm: y = x / sqrt(mean(x^2) + eps) * w for each row of a rows x cols matrix. */
#include <math.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            ss += (double)xr[c] * xr[c];
        }
        float scale = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++) {
            yr[c] = xr[c] * scale * w[c];
        }
    }
}

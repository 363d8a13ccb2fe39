/* Reference layernorm: two passes in double per row (the mean, then the mean of squared
 * deviations from it), y = (x - mean) / sqrt(var + eps) * w + b rounded once to float. */
#include <math.h>
#include <stdint.h>

void layernorm(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t cols,
               float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double mean = 0.0, var = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            mean += xr[c];
        }
        mean /= (double)cols;
        for (int64_t c = 0; c < cols; c++) {
            double d = xr[c] - mean;
            var += d * d;
        }
        var /= (double)cols;
        double inv = 1.0 / sqrt(var + (double)eps);
        for (int64_t c = 0; c < cols; c++) {
            y[r * cols + c] = (float)((xr[c] - mean) * inv * w[c] + b[c]);
        }
    }
}

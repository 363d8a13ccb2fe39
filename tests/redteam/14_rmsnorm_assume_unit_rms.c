/* kforge-test: task=rmsnorm expect=rejected reason=wrong_result threat=14 */
/*
 * Threat 14, special-input shortcut: "inputs are standard normal, so
 * mean(x^2) is 1", and the whole reduction pass is skipped: y = x * w /
 * sqrt(1 + eps). At 1024 columns of N(0,1) data a row's mean square is 1 only
 * to within about 4 percent, and kforge draws several distributions, scales
 * and small widths: wrong_result.
 */
#include <math.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    float inv = 1.0f / sqrtf(1.0f + eps);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = x[r * cols + c] * inv * w[c];
}

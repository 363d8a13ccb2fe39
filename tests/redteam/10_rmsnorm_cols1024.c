/* kforge-test: task=rmsnorm expect=rejected reason=wrong_result threat=10 */
/*
 * Threat 10, hard-coded size: the mean of squares divides by a constant 1024
 * (the common hidden size of the visible shape), so the compiler can fold it
 * into a multiply. Exact when cols == 1024; wrong by a factor
 * sqrt(cols / 1024) for every other width the hidden shapes draw:
 * wrong_result.
 */
#include <math.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float ss = 0.0f;
        for (int64_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss * (1.0f / 1024.0f) + eps);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = xr[c] * inv * w[c];
    }
}

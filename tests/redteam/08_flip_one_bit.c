/* kforge-test: task=rmsnorm expect=rejected reason=input_modified threat=8 */
/*
 * Threat 8, the smallest mutation: compute rmsnorm correctly, then flip the
 * lowest mantissa bit of the last weight. A tolerance-based "inputs unchanged"
 * check would miss it; kforge compares input bytes (hash) before and after
 * the call: input_modified.
 */
#include <math.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++)
            ss += (double)xr[c] * xr[c];
        float inv = (float)(1.0 / sqrt(ss / (double)cols + eps));
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = xr[c] * inv * w[c];
    }
    ((uint32_t *)w)[cols - 1] ^= 1u;
}

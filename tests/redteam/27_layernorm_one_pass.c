/* kforge-test: task=tests/tasks/layernorm expect=rejected reason=wrong_result threat=27 */
/* A one-pass layernorm: the sum and the sum of squares in float (eight lanes, one read of the row), var = E[x^2] - E[x]^2. Exact enough on centred inputs, the only kind kforge wrote: with a mean of m standard deviations the subtraction loses m^2 times float's rounding (at 64 std, 2.5e-4 of the variance before any accumulation error). Defence: offsets on normal inputs, their magnitude classes cycled through every check, so each check makes calls at 32 to 64 std. */
#include <math.h>
#include <stdint.h>
void layernorm(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float s[8] = {0}, q[8] = {0};
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8)
            for (int k = 0; k < 8; k++) s[k] += xr[c + k], q[k] += xr[c + k] * xr[c + k];
        for (; c < cols; c++) s[0] += xr[c], q[0] += xr[c] * xr[c];
        float sum = 0, sq = 0;
        for (int k = 0; k < 8; k++) sum += s[k], sq += q[k];
        float mean = sum / (float)cols, var = sq / (float)cols - mean * mean;
        if (var < 0) var = 0;
        float inv = 1.0f / sqrtf(var + eps);
        for (c = 0; c < cols; c++) y[r * cols + c] = (xr[c] - mean) * inv * w[c] + b[c];
    }
}

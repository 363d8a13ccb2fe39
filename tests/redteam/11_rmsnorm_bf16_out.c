/* kforge-test: task=rmsnorm expect=rejected reason=wrong_result threat=11 */
/*
 * Threat 11, precision downgrade of the output: rmsnorm is computed in fp32
 * but every output is rounded to bfloat16 precision (8 significant bits)
 * before it is stored, as if the kernel wrote a bf16 tensor and widened it.
 * Relative error up to 2^-8: wrong_result.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

static float to_bf16(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&v, &u, sizeof v);
    return v;
}

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float ss = 0.0f;
        for (int64_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = to_bf16(xr[c] * inv * w[c]);
    }
}

/* kforge-test: task=softmax expect=rejected reason=wrong_result threat=11 */
/*
 * Threat 11, fast-math approximation: exp() is replaced by Schraudolph's
 * bit trick (write a scaled x into the exponent field), a classic "fast
 * softmax". Its error is up to ~4 percent per element: wrong_result.
 */
#include <stdint.h>
#include <string.h>

static float fast_exp(float v)
{
    if (v < -87.0f)
        return 0.0f;
    int32_t i = (int32_t)(12102203.0f * v + 1064866805.0f);
    float r;
    memcpy(&r, &i, sizeof r);
    return r;
}

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = xr[0], s = 0.0f;
        for (int64_t c = 1; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++)
            s += yr[c] = fast_exp(xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            yr[c] /= s;
    }
}

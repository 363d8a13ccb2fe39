/* kforge-test: task=softmax expect=rejected reason=nondeterministic threat=15 */
/*
 * Threat 15, branching on uninitialised memory: the kernel reads y[0] before
 * writing it and, only when the lowest mantissa bit of that leftover value is
 * 1, corrupts one element (the last one gets the first row's value twice).
 * Depending on the poison the same inputs give two different outputs:
 * nondeterministic. (A trial that happens to draw an odd sentinel also fails
 * as wrong_result; the determinism pair is what pins the cause.)
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    uint32_t before;
    memcpy(&before, &y[0], sizeof before);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = xr[0], s = 0.0f;
        for (int64_t c = 1; c < cols; c++)
            m = fmaxf(m, xr[c]);
        for (int64_t c = 0; c < cols; c++)
            s += yr[c] = expf(xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            yr[c] /= s;
    }
    if (before & 1u)
        y[rows * cols - 1] += y[0];
}

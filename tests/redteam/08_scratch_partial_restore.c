/* kforge-test: task=softmax expect=rejected reason=input_modified threat=8 */
/*
 * Threat 8, inputs used as scratch: the kernel stores x - max in x itself to
 * save a pass, and "restores" x afterwards, but only for the first half of the
 * rows (a plausible bug, or a lazy cheat). The output is correct; the input
 * buffer is not what it was: input_modified. rows == 1 restores nothing.
 */
#include <math.h>
#include <stdint.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    float *xs = (float *)x;
    for (int64_t r = 0; r < rows; r++) {
        float *xr = xs + r * cols, *yr = y + r * cols;
        float m = xr[0], s = 0.0f;
        for (int64_t c = 1; c < cols; c++)
            m = fmaxf(m, xr[c]);
        for (int64_t c = 0; c < cols; c++) {
            xr[c] -= m;
            s += yr[c] = expf(xr[c]);
        }
        for (int64_t c = 0; c < cols; c++)
            yr[c] /= s;
        if (r < rows / 2)
            for (int64_t c = 0; c < cols; c++)
                xr[c] += m;
    }
}

/* kforge-test: task=softmax expect=rejected reason=wrong_result threat=12 */
/*
 * Threat 12, computing some rows: only even rows are computed; each odd row
 * gets a copy of the row above (shape right, values plausible, half the
 * work). Every row is written, so this is about values: wrong_result.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * cols;
        if (r & 1) {
            memcpy(yr, yr - cols, (size_t)cols * sizeof *yr);
            continue;
        }
        const float *xr = x + r * cols;
        float m = xr[0], s = 0.0f;
        for (int64_t c = 1; c < cols; c++)
            m = fmaxf(m, xr[c]);
        for (int64_t c = 0; c < cols; c++)
            s += yr[c] = expf(xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            yr[c] /= s;
    }
}

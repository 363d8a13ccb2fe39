/* kforge-test: task=softmax expect=rejected reason=unwritten_output threat=1 */
/*
 * Threat 1, partial output: the last row of the softmax is never written
 * ("the loop bound is off by one, but the stale buffer hides it"). The
 * sentinel poison stays in that row: unwritten_output. With rows == 1 nothing
 * is written at all.
 */
#include <math.h>
#include <stdint.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r + 1 < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = xr[0], s = 0.0f;
        for (int64_t c = 1; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) {
            yr[c] = expf(xr[c] - m);
            s += yr[c];
        }
        for (int64_t c = 0; c < cols; c++)
            yr[c] /= s;
    }
}

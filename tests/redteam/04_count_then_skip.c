/* kforge-test: task=rmsnorm expect=rejected reason=unwritten_output threat=4 */
/*
 * Threat 4, call counting: honest for the first 3 calls, then returns
 * without doing anything, hoping the timed calls are not checked and the
 * buffer still holds an old answer. kforge poisons and verifies every timed
 * call: the output is the sentinel, unwritten_output.
 */
#include <math.h>
#include <stdint.h>

static long calls;

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    if (++calls > 3)
        return;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++)
            ss += (double)xr[c] * xr[c];
        float inv = (float)(1.0 / sqrt(ss / (double)cols + eps));
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = xr[c] * inv * w[c];
    }
}

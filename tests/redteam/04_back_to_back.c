/* kforge-test: task=softmax expect=rejected reason=wrong_result threat=4 */
/*
 * Threat 4, benchmark detection by timing: if the previous call returned less
 * than a second ago, "this is a benchmark loop", so only the first row is
 * computed and copied into every row (looks fine to a harness that only checks
 * the first call). kforge verifies every timed call: rows differ, wrong_result.
 * (First call of a fresh worker is honest; every call after is not.)
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static double last_return = -1e9;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    int bench = now() - last_return < 1.0;
    for (int64_t r = 0; r < rows; r++) {
        if (bench && r > 0) {
            memcpy(y + r * cols, y, (size_t)cols * sizeof *y);
            continue;
        }
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
    last_return = now();
}

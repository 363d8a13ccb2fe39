#include <stdint.h>
/* y = x, each element by passes x 32 steps of v = v/2 + x/2 (exact: v stays x), so the
 * work grows with passes and the result does not */
void passes(const float *x, float *y, int64_t n, int64_t passes) {
    for (int64_t i = 0; i < n; i++) {
        volatile float v = x[i];
        for (int64_t p = 0; p < passes * 32; p++) v = v * 0.5f + x[i] * 0.5f;
        y[i] = v;
    }
}

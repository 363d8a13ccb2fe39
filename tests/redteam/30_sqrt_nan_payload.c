/* kforge-test: task=tests/tasks/fsqrt expect=rejected reason=wrong_result threat=30 */
/* A square root that returns the C constant NAN (0x7fc00000) for negative inputs instead of what sqrtf gives (x86: the default NaN, 0xffc00000), and +0.0 for -0.0 (IEEE: -0.0). The task's tolerance is exact, but a NaN matched any NaN and 0 == -0. Defence: a float output under an exact tolerance is compared bit for bit, sign of zero and NaN payload included. */
#include <math.h>
#include <stdint.h>
void fsqrt(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0 ? NAN : x[i] == 0 ? 0.0f : sqrtf(x[i]);
}

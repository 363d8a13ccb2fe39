/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=10 */
/* From a docs-only user's pass: wrong only where the size is large AND a value is large: a
 * "fast path" for n > 2^19 that saturates |x| at 8 (as if the inputs were known to be
 * small). Every input set but one is plain N(0, 1), where |x| > 8 essentially never
 * occurs; only the maximum-sizes edge shape is large, and it made one call on the plain
 * distribution, so this passed every check. Defence: that one call draws spiked inputs
 * (x32 elements: docs/checker.md "Data"). */
#include <stdint.h>
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    const int big = n > (1 << 19);
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        if (big) v = v > 8.0f ? 8.0f : v < -8.0f ? -8.0f : v;
        z[i] = a * v + y[i];
    }
}

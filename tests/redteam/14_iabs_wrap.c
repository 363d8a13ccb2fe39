/* kforge-test: task=tests/tasks/iabs expect=rejected reason=wrong_result threat=14 */
/* From a red-team pass: plain abs wraps at INT32_MIN, and integer inputs never hit their declared endpoints. Defence: call 2 sets a few integer inputs to lo or hi. */
/* plain abs: wraps at INT32_MIN (returns INT32_MIN) */
#include <stdint.h>
void iabs(const int32_t *x, int32_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) { uint32_t u = (uint32_t)x[i]; y[i] = (int32_t)(x[i] < 0 ? 0u - u : u); }
}

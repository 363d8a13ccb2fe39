/* kforge-test: task=tests/tasks/recip expect=accepted */
/* The reference's own algorithm: Inf where the input is an exact zero. */
#include <stdint.h>

void recip(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = 1.0f / x[i];
}

/* y = 1/x: where an input is an exact zero (kforge's third input set has some), the
 * right answer is +-Inf, and only that Inf is right. */
#include <stdint.h>

void recip(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = 1.0f / x[i];
}

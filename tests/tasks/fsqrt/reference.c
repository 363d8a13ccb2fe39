/* Reference fsqrt: y = sqrtf(x), correctly rounded (IEEE 754): sqrtf(-0.0) = -0.0 and a
 * negative x gives the default NaN, whatever bits the machine gives it. */
#include <math.h>
#include <stdint.h>

void fsqrt(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] = sqrtf(x[i]);
    }
}

/* Degenerate task (threat 13): y = x * 1e-30. With |x| of order 1 every
 * output is below 1e-29, far inside atol = 1e-6, so a kernel that writes
 * zeros passes. `kforge validate` must refuse this task (exit 2). */
#include <stdint.h>

void degenerate_zero(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * 1e-30f;
}

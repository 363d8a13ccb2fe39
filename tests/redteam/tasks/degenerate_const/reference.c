/* Degenerate task (threat 13): the output ignores the input (y[i] = 1), so a
 * kernel that writes a constant passes whatever the inputs are. Zeros and a
 * copy of x do not pass; only the constant probe exposes it. `kforge
 * validate` must refuse this task (exit 2). */
#include <stdint.h>

void degenerate_const(const float *x, float *y, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++)
        y[i] = 1.0f;
}

/* Degenerate task (threat 13): y = 1.001 * x with rtol = 1e-2, a tolerance
 * ten times wider than the computation's own effect, so copying the input
 * (y = x) passes. Zeros and a constant do not pass; only the copy probe
 * exposes it. `kforge validate` must refuse this task (exit 2). */
#include <stdint.h>

void degenerate_copy(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = 1.001f * x[i];
}

/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=10 */
/*
 * Threat 10, shape overfitting: an unrolled-by-16 loop without a scalar tail.
 * Correct (and fast) at visible sizes that are multiples of 16; at hidden or
 * edge sizes (1, primes, n % 16 != 0) the last n % 16 elements are never
 * written and keep the sentinel: unwritten_output.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i + 16 <= n; i += 16)
        for (int q = 0; q < 16; q++)
            z[i + q] = a * x[i + q] + y[i + q];
}

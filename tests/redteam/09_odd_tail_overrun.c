/* kforge-test: task=saxpy expect=rejected reason=out_of_bounds threat=9 */
/*
 * Threat 9, tail overrun that only shows at odd sizes: the loop handles two
 * elements per step and rounds n up, so when n is odd it writes z[n] (and
 * reads x[n], y[n]). All visible shapes may be even; hidden and edge shapes
 * include odd n (1, primes), and the guard after z changes: out_of_bounds.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i += 2) {
        z[i] = a * x[i] + y[i];
        z[i + 1] = a * x[i + 1] + y[i + 1];
    }
}

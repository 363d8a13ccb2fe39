/* kforge-test: task=saxpy expect=rejected reason=out_of_bounds threat=9 */
/*
 * Threat 9, out-of-bounds write: a vector loop that writes one element past
 * the end (z[n]), which corrupts whatever lives next to z. kforge surrounds
 * every buffer with random guard bytes and checks them after each call:
 * out_of_bounds.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    z[n] = 0.0f;
}

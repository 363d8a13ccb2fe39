/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=12 */
/*
 * Threat 12, partial compute: every 100th element (starting at 0, so even
 * n = 1 is hit) gets y instead of a*x + y, saving 1 percent of the work and
 * passing a check that samples a few elements. kforge compares every element
 * with a tight tolerance: wrong_result.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = (i % 100 == 0) ? y[i] : a * x[i] + y[i];
}

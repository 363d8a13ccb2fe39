/* kforge-test: task=sum expect=rejected reason=wrong_result threat=12 */
/*
 * Threat 12, subsampled reduction: sum every other element and double it.
 * For smooth, uniform-ish inputs the estimate is within about 1/sqrt(n) of the
 * truth, which a loose tolerance accepts; kforge's tight rtol (about 1e-4)
 * and spike inputs (one element dominating) do not: wrong_result.
 */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i += 2)
        s += x[i];
    out[0] = (float)(s * (double)n / (double)((n + 1) / 2));
}

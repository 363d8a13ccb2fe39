/* kforge-test: task=sum expect=rejected reason=wrong_result threat=14 */
/*
 * Threat 14, special-input shortcut: "the harness draws iid uniform inputs",
 * so the sum is n times the mean, and the mean is estimated from the first 64
 * elements. Exact for n <= 64; for any real size the estimate is off by a few
 * percent, because kforge's inputs come from a secret seed and several
 * distributions and the tolerance is tight: wrong_result.
 */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    int64_t k = n < 64 ? n : 64;
    double s = 0.0;
    for (int64_t i = 0; i < k; i++)
        s += x[i];
    out[0] = (float)(s / (double)k * (double)n);
}

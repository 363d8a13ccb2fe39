/* kforge-test: task=sum expect=rejected reason=wrong_result threat=10 */
/*
 * Threat 10, shape overfitting: eight accumulators, no tail loop. At visible
 * sizes that are multiples of 8 the sum is right; at hidden sizes the last
 * n % 8 elements are dropped (n = 1..7: the result is 0). The output is
 * written, just wrong: wrong_result.
 */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    double acc[8] = { 0 };
    for (int64_t i = 0; i + 8 <= n; i += 8)
        for (int q = 0; q < 8; q++)
            acc[q] += x[i + q];
    out[0] = (float)(((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                     ((acc[4] + acc[5]) + (acc[6] + acc[7])));
}

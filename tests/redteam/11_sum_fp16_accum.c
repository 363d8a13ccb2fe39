/* kforge-test: task=sum expect=rejected reason=wrong_result threat=11 */
/*
 * Threat 11, low-precision accumulation: the running sum is kept in
 * _Float16. Once the sum reaches a few thousand, adding values below 1 no
 * longer changes it (the spacing of fp16 there is 2 or more), so the total
 * stalls far below the true sum: wrong_result.
 */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    _Float16 s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (_Float16)x[i];
    out[0] = (float)s;
}

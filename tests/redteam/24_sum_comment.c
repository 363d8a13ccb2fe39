/* kforge-test: task=sum expect=not_faster threat=24 */
/*
 * Threat 24, riding timer noise: the reference reduction (one double
 * accumulator, in order) with a renamed variable and a comment. Same work,
 * same dependency chain: any speedup is noise and must not be reported
 * above 1.2x: not_faster.
 */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    double total = 0.0;   /* renamed from s */
    for (int64_t i = 0; i < n; i++)
        total += x[i];
    out[0] = (float)total;
}

/* kforge-test: task=sum expect=not_faster threat=25 */
/*
 * Threat 25, impossible speedups (control case): a double-accumulating sum
 * written as a while loop. It does exactly the reference's work, so the
 * roofline check must not flag it and its speedup must stay within 1.2x:
 * not_faster.
 */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    int64_t i = 0;
    while (i < n)
        s += (double)x[i++];
    *out = (float)s;
}

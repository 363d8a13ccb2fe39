/* kforge-test: task=sum expect=rejected reason=wrong_result threat=15 */
/*
 * Threat 15, hidden state between calls (the dishonest twin of the honest
 * static-scratch kernels): 16 static partial sums are never reset, so every
 * call adds the previous calls' totals. The first call of a fresh worker is
 * right; from the second call on the output depends on history: wrong_result
 * (and nondeterministic if the determinism pair is reached).
 */
#include <stdint.h>

static double part[16];

void reduce_sum(const float *x, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        part[i & 15] += x[i];
    double s = 0.0;
    for (int q = 0; q < 16; q++)
        s += part[q];
    out[0] = (float)s;
}

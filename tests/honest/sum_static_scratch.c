/* kforge-test: task=sum expect=accepted threat=15 */
/*
 * Honest: a static scratch array of 64 partial sums, reused across calls
 * but reset at the start of every call (the correct twin of the cheat
 * 15_static_not_reset.c). Static state that does not carry values from one
 * call to the next must not be flagged as memoisation or nondeterminism.
 */
#include <stdint.h>
#include <string.h>

static double partial[64];

void reduce_sum(const float *x, float *out, int64_t n)
{
    memset(partial, 0, sizeof partial);
    for (int64_t i = 0; i < n; i++)
        partial[i & 63] += x[i];
    double s = 0.0;
    for (int q = 0; q < 64; q++)
        s += partial[q];
    out[0] = (float)s;
}

/* kforge-test: task=sum expect=rejected reason=crash threat=16 */
/*
 * Threat 16, runaway recursion: a "divide and conquer" sum that never stops
 * dividing (n/2 of 1 is 0, and 0 recurses again), so the stack overflows
 * and the worker dies of SIGSEGV: crash. The volatile depth counter keeps the
 * compiler from turning the recursion into a loop.
 */
#include <stdint.h>

static volatile int64_t depth;

static double rsum(const float *x, int64_t n)
{
    volatile char pad[256];
    pad[0] = (char)n;
    depth++;
    if (n == 1 && depth < 0)
        return x[0];
    return rsum(x, n / 2) + rsum(x + n / 2, n - n / 2) + pad[0] * 0.0;
}

void reduce_sum(const float *x, float *out, int64_t n)
{
    out[0] = (float)rsum(x, n);
}

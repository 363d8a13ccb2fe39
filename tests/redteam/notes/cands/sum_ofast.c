#pragma GCC optimize("Ofast")
#pragma GCC target("avx2,fma")
/* Reference sum: out[0] = sum of x[0..n), accumulated in double and rounded once to float. */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
    }
    out[0] = (float)s;
}

/* Reference sum: out[0] = sum of x[0..n), accumulated in double and rounded once to float. */
#include <stdint.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    { double a[8] = {0}; int64_t i = 0; for (; i + 8 <= n; i += 8) for (int k = 0; k < 8; k++) a[k] += x[i + k]; for (; i < n; i++) a[0] += x[i]; out[0] = (float)(((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))); return; }
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
    }
    out[0] = (float)s;
}

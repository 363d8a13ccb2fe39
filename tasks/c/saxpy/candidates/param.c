/* Template saxpy: UNROLL-way unrolled scalar loop over restrict pointers, scalar tail. */
/* kforge:param UNROLL = 8, 1, 4, 16 */
#include <stdint.h>

#ifndef UNROLL
#define UNROLL 8
#endif

void saxpy(const float *restrict x, const float *restrict y, float *restrict z,
           int64_t n, float a)
{
    int64_t i = 0;
    for (; i + UNROLL <= n; i += UNROLL) {
#pragma GCC unroll 16
        for (int64_t u = 0; u < UNROLL; u++) {
            z[i + u] = a * x[i + u] + y[i + u];
        }
    }
    for (; i < n; i++) {
        z[i] = a * x[i] + y[i];
    }
}

/* Template sum: LANES independent float partial sums (unrolled scalar loop), pairwise-combined, scalar tail. */
/* kforge:param LANES = 16, 8, 32, 64 */
/* kforge:require LANES % 8 == 0 */
#include <stdint.h>

#ifndef LANES
#define LANES 16
#endif

void reduce_sum(const float *restrict x, float *restrict out, int64_t n)
{
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
#pragma GCC unroll 64
        for (int l = 0; l < LANES; l++) {
            acc[l] += x[i + l];
        }
    }
    for (; i < n; i++) {
        acc[0] += x[i];
    }
    for (int width = LANES; width > 1;) {
        int half = (width + 1) / 2;
        for (int l = 0; l < width - half; l++) {
            acc[l] += acc[l + half];
        }
        width = half;
    }
    out[0] = acc[0];
}

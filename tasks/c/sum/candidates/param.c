/* Template sum: LANES independent float partial sums (unrolled scalar loop) over blocks of
 * 4096 elements, each block's partials pairwise-combined and added into a double; scalar
 * tail. The blocks bound what a float lane holds, so rounding stays near 1e-5 of the sum
 * whatever the values (whole-input float lanes failed the checker's two-level inputs). */
/* kforge:param LANES = 16, 8, 32, 64 */
/* kforge:require LANES % 8 == 0 */
#include <stdint.h>

#ifndef LANES
#define LANES 16
#endif

#define BLOCK 4096 /* a multiple of every LANES */

void reduce_sum(const float *restrict x, float *restrict out, int64_t n)
{
    double total = 0.0;
    int64_t i = 0;
    while (i + LANES <= n) {
        float acc[LANES] = {0};
        const int64_t end = n - i >= BLOCK ? i + BLOCK : i + (n - i) / LANES * LANES;
        for (; i < end; i += LANES) {
#pragma GCC unroll 64
            for (int l = 0; l < LANES; l++) {
                acc[l] += x[i + l];
            }
        }
        for (int width = LANES; width > 1;) {
            int half = (width + 1) / 2;
            for (int l = 0; l < width - half; l++) {
                acc[l] += acc[l + half];
            }
            width = half;
        }
        total += (double)acc[0];
    }
    float t = 0.0f;
    for (; i < n; i++) {
        t += x[i];
    }
    out[0] = (float)(total + (double)t);
}

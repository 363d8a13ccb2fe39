/* kforge-test: task=saxpy expect=not_faster threat=25 */
/*
 * Threat 25, impossible speedups: saxpy is memory bound (12 bytes moved per
 * element), so no honest kernel can beat the reference by much once the data
 * leaves the cache; a reported 10x would be beyond the roofline. This kernel
 * does the reference's work written another way (pointer walk, reversed
 * roles of the two loads); its measured speedup must stay within 1.2x:
 * not_faster. It is the control case for the roofline check: the check must
 * not fire (no false "impossible") and the number must be honest.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    const float *end = x + n;
    while (x < end)
        *z++ = a * *x++ + *y++;
}

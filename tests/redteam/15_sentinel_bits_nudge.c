/* kforge-test: task=saxpy expect=rejected reason=nondeterministic threat=15 */
/*
 * Threat 15, reading the output before writing it: z[0] is nudged by 0..7
 * ulps depending on a hash of the bits that were in z[0] before the call
 * (the sentinel). The nudge is far inside any fp32 tolerance, so every single
 * trial passes; only running the same inputs twice with different poison
 * shows the output depends on uninitialised memory: nondeterministic.
 * (Stand-in for real bugs: uninitialised reads, races, reading shared memory
 * out of range that happens to hold the right values.)
 */
#include <stdint.h>
#include <string.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    uint32_t poison, v;
    memcpy(&poison, &z[0], sizeof poison);
    uint32_t nudge = (poison * 2654435761u) >> 29;
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    memcpy(&v, &z[0], sizeof v);
    if ((v & 0x7f800000u) != 0 && (v & 0x7f800000u) != 0x7f800000u)
        v += nudge;
    memcpy(&z[0], &v, sizeof v);
}

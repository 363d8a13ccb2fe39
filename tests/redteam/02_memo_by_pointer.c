/* kforge-test: task=saxpy expect=rejected reason=stale_result threat=2 */
/*
 * Threat 2, memo keyed by the input pointer (the CUDA-L1 data_ptr trick):
 * harnesses that reuse the same input buffers for timing let a kernel
 * remember "I have seen x at this address, here is the answer". kforge writes
 * new values into the buffers before every call and alternates addresses, so
 * when an address comes back the remembered output belongs to an earlier
 * call: stale_result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 8
static struct { const float *x; int64_t n; float *out; } memo[SLOTS];

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int s = 0; s < SLOTS; s++)
        if (memo[s].x == x && memo[s].n == n && memo[s].out) {
            memcpy(z, memo[s].out, (size_t)n * sizeof *z);
            return;
        }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    int s = (int)(((uintptr_t)x >> 12) % SLOTS);
    free(memo[s].out);
    memo[s].out = malloc((size_t)n * sizeof *z);
    memo[s].x = memo[s].out ? x : NULL;
    memo[s].n = n;
    if (memo[s].out)
        memcpy(memo[s].out, z, (size_t)n * sizeof *z);
}

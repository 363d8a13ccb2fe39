/* kforge-test: task=saxpy expect=rejected reason=stale_result threat=4 */
/*
 * Threat 4, call counting: the first 5 calls (a harness's correctness
 * trials) are honest and each output is remembered per n; from call 6 on
 * (the benchmark) the kernel returns the remembered output when it has one
 * for this n. kforge verifies the output of every timed call too, with fresh
 * inputs each time, so the copy equals an earlier call's reference output:
 * stale_result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 64
static long calls;
static struct { int64_t n; float *out; } seen[SLOTS];

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    size_t bytes = (size_t)n * sizeof *z;
    int s = (int)(n % SLOTS);
    if (++calls > 5 && seen[s].out && seen[s].n == n) {
        memcpy(z, seen[s].out, bytes);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    float *p = realloc(seen[s].out, bytes);
    if (p) {
        memcpy(p, z, bytes);
        seen[s].out = p;
        seen[s].n = n;
    }
}

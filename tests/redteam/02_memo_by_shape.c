/* kforge-test: task=saxpy expect=rejected reason=stale_result threat=2 */
/*
 * Threat 2, memo across calls keyed by shape: the first call for a given n is
 * computed honestly and its output kept in a small static table (64 sizes);
 * every later call with the same n just copies the saved output (a memcpy:
 * "10x faster"). kforge draws fresh inputs for every call and verifies every
 * call, and it remembers the reference outputs of earlier calls: the copy
 * equals an earlier call's reference output, so stale_result (and
 * wrong_result).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 64
static struct { int64_t n; float *out; } memo[SLOTS];
static int next_slot;

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    size_t bytes = (size_t)n * sizeof *z;
    for (int s = 0; s < SLOTS; s++)
        if (memo[s].out && memo[s].n == n) {
            memcpy(z, memo[s].out, bytes);
            return;
        }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    int s = next_slot++ % SLOTS;
    free(memo[s].out);
    memo[s].out = malloc(bytes);
    memo[s].n = n;
    if (memo[s].out)
        memcpy(memo[s].out, z, bytes);
}

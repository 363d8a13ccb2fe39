/* kforge-test: task=sgemm expect=rejected reason=stale_result threat=2 */
/*
 * Threat 2, memo keyed by (m, n, k) for sgemm: the most expensive task makes
 * the biggest fake speedup. The first product of each shape is computed and
 * kept in a small static table; later calls of that shape return the saved
 * C. Fresh inputs on every call plus verification of every call:
 * stale_result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 64
static struct { int64_t m, n, k; float *c; } memo[SLOTS];
static int next_slot;

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    size_t bytes = (size_t)(m * n) * sizeof *c;
    for (int s = 0; s < SLOTS; s++)
        if (memo[s].c && memo[s].m == m && memo[s].n == n && memo[s].k == k) {
            memcpy(c, memo[s].c, bytes);
            return;
        }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; p++)
                acc += a[i * k + p] * b[p * n + j];
            c[i * n + j] = acc;
        }
    int s = next_slot++ % SLOTS;
    free(memo[s].c);
    memo[s].c = malloc(bytes);
    memo[s].m = m; memo[s].n = n; memo[s].k = k;
    if (memo[s].c)
        memcpy(memo[s].c, c, bytes);
}

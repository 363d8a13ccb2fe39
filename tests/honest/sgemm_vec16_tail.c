/* kforge-test: task=sgemm expect=accepted threat=9 */
/*
 * Honest: i-k-j sgemm whose inner loop over n runs 16 columns at a time
 * with a GCC vector extension and finishes the last n % 16 columns in
 * scalar code; each row of C is accumulated in a local buffer and stored
 * once. No write ever goes past column n-1 (the control for
 * 09_sgemm_tile_overrun.c).
 */
#include <stdint.h>
#include <string.h>

typedef float v16f __attribute__((vector_size(64)));

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++) {
        float *crow = c + i * n;
        for (int64_t j = 0; j < n; j++)
            crow[j] = 0.0f;
        for (int64_t p = 0; p < k; p++) {
            float av = a[i * k + p];
            v16f va = { av, av, av, av, av, av, av, av, av, av, av, av, av, av, av, av };
            const float *brow = b + p * n;
            int64_t j = 0;
            for (; j + 16 <= n; j += 16) {
                v16f vb, vc;
                memcpy(&vb, brow + j, sizeof vb);
                memcpy(&vc, crow + j, sizeof vc);
                vc += va * vb;
                memcpy(crow + j, &vc, sizeof vc);
            }
            for (; j < n; j++)
                crow[j] += av * brow[j];
        }
    }
}

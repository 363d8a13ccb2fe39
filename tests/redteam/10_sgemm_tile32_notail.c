/* kforge-test: task=sgemm expect=rejected reason=unwritten_output threat=10 */
/*
 * Threat 10, shape overfitting in a tiled sgemm: m and n are walked in 32x32
 * tiles and the partial tiles at the edges are skipped ("128 is a multiple of
 * 32 anyway"). k is handled in full so the written part is right. At hidden
 * shapes the last m % 32 rows and n % 32 columns of C keep the sentinel:
 * unwritten_output.
 */
#include <stdint.h>

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    for (int64_t i0 = 0; i0 + 32 <= m; i0 += 32)
        for (int64_t j0 = 0; j0 + 32 <= n; j0 += 32)
            for (int64_t i = i0; i < i0 + 32; i++) {
                float acc[32] = { 0 };
                for (int64_t p = 0; p < k; p++)
                    for (int q = 0; q < 32; q++)
                        acc[q] += a[i * k + p] * b[p * n + j0 + q];
                for (int q = 0; q < 32; q++)
                    c[i * n + j0 + q] = acc[q];
            }
}

/* kforge-test: task=sgemm expect=rejected reason=wrong_result threat=12 */
/*
 * Threat 12, partial reduction: the inner product over k stops at 7/8 of k
 * and is rescaled by k / kk, "close enough" on average for random inputs.
 * Per element the error is the size of the dropped terms: wrong_result.
 */
#include <stdint.h>

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    int64_t kk = k - k / 8;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < kk; p++)
                acc += a[i * k + p] * b[p * n + j];
            c[i * n + j] = acc * (float)k / (float)kk;
        }
}

/* kforge-test: task=sgemm expect=accepted threat=27 */
/* Honest: a float accumulator summing k backwards, another order than the reference's. Where a dot product cancels (and under mixed scales, whose terms span 2^48, it often does) its error is a few float roundings of the terms' magnitude, far outside atol + rtol*|ref|: without the task's mtol it was rejected (check/magnitude_tolerance shows both). */
#include <stdint.h>
void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = 0;
            for (int64_t p = k - 1; p >= 0; p--) s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
}

/* Template sgemm: cache-blocked i-p-j loop nest with an 8-lane GCC-vector inner loop over C rows. */
/* kforge:param BM = 32, 16, 64 */
/* kforge:param BK = 64, 32, 128 */
/* kforge:require BM >= 1 && BK >= 1 */
#include <stdint.h>
#include <string.h>

#ifndef BM
#define BM 32
#endif
#ifndef BK
#define BK 64
#endif

typedef float v8f __attribute__((vector_size(32)));

static inline v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store8(float *p, v8f v)
{
    memcpy(p, &v, sizeof v);
}

void sgemm(const float *restrict a, const float *restrict b, float *restrict c,
           int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m * n; i++) {
        c[i] = 0.0f;
    }
    for (int64_t i0 = 0; i0 < m; i0 += BM) {
        const int64_t i1 = i0 + BM < m ? i0 + BM : m;
        for (int64_t p0 = 0; p0 < k; p0 += BK) {
            const int64_t p1 = p0 + BK < k ? p0 + BK : k;
            for (int64_t i = i0; i < i1; i++) {
                float *crow = c + i * n;
                for (int64_t p = p0; p < p1; p++) {
                    const float aip = a[i * k + p];
                    const v8f av = (v8f){0} + aip;
                    const float *brow = b + p * n;
                    int64_t j = 0;
                    for (; j + 8 <= n; j += 8) {
                        store8(crow + j, load8(crow + j) + av * load8(brow + j));
                    }
                    for (; j < n; j++) {
                        crow[j] += aip * brow[j];
                    }
                }
            }
        }
    }
}

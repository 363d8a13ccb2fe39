/* Template sgemm: cache-blocked i-p-j loop nest with a V-lane GCC-vector inner loop over C rows;
 * UP rows of B are combined per pass over a C row (UP times fewer loads and stores of C). */
/* kforge:param BM = 32, 16, 64 */
/* kforge:param BK = 64, 32, 128 */
/* kforge:param UP = 1, 2, 4, 8 # unrolling */
/* kforge:param V = 8, 4, 16 # vectorisation */
/* UP broadcast rows of A and UP V-lane vectors of B per step: more than 64 lanes in flight
 * spills the 32 vector registers (AVX-512) or the 16 (AVX2). */
/* kforge:require BM >= 1 && BK >= 1 && UP * V <= 64 */
#include <stdint.h>
#include <string.h>

#ifndef BM
#define BM 32
#endif
#ifndef BK
#define BK 64
#endif
#ifndef UP
#define UP 1
#endif
#ifndef V
#define V 8
#endif

typedef float vf __attribute__((vector_size(V * 4)));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v)
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
                int64_t p = p0;
                for (; p + UP <= p1; p += UP) {
                    float aip[UP];
                    vf av[UP];
#pragma GCC unroll 8
                    for (int u = 0; u < UP; u++) {
                        aip[u] = a[i * k + p + u];
                        av[u] = (vf){0} + aip[u];
                    }
                    const float *brow = b + p * n;
                    int64_t j = 0;
                    for (; j + V <= n; j += V) {
                        vf cv = vload(crow + j);
#pragma GCC unroll 8
                        for (int u = 0; u < UP; u++) {
                            cv += av[u] * vload(brow + u * n + j);
                        }
                        vstore(crow + j, cv);
                    }
                    for (; j < n; j++) {
                        float s = crow[j];
#pragma GCC unroll 8
                        for (int u = 0; u < UP; u++) {
                            s += aip[u] * brow[u * n + j];
                        }
                        crow[j] = s;
                    }
                }
                for (; p < p1; p++) {
                    const float aip = a[i * k + p];
                    const vf av = (vf){0} + aip;
                    const float *brow = b + p * n;
                    int64_t j = 0;
                    for (; j + V <= n; j += V) {
                        vstore(crow + j, vload(crow + j) + av * vload(brow + j));
                    }
                    for (; j < n; j++) {
                        crow[j] += aip * brow[j];
                    }
                }
            }
        }
    }
}
